#!/usr/bin/env python3
"""One measurement of bench/python.sh, in a process of its own: a zero_to_fp32 function,
DeepSpeed's or checkpoint_studio.deepspeed's, on CHECKPOINT. Prints one JSON line: the call's
wall seconds (imports excluded, reported apart), the process's peak RSS (VmHWM, MiB) after the
imports and after the call, and for the eager state dict, per tensor name, dtype and sha256
(hashed after the call's peak is read, so hashing costs no time in the figures) with the peak
after every value was read (zero-copy values are file pages that count once touched).

Modes: sd (get_fp32_state_dict_from_zero_checkpoint, eager), lazy (lazy_mode=True, every value
read once with .contiguous() and dropped, as a streaming consumer does), convert
(convert_zero_checkpoint_to_fp32_state_dict to OUT, safetensors, 5GB shards).

    python_bench.py deepspeed|ours sd|lazy|convert CHECKPOINT [OUT]
"""
import hashlib
import json
import sys
import time


def hwm_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return 0.0


def digest(t):
    import torch
    flat = t.contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy() if flat.numel() else b"").hexdigest()


def main():
    tool, mode, ck = sys.argv[1:4]
    out = sys.argv[4] if len(sys.argv) > 4 else None
    t0 = time.perf_counter()
    import torch  # noqa: F401  (both sides pay for it)
    if tool == "deepspeed":
        from deepspeed.utils import zero_to_fp32 as z
    else:
        from checkpoint_studio import deepspeed as z
    imported = time.perf_counter()
    rss_imported = hwm_mib()
    hashes = []
    read = None
    t1 = time.perf_counter()
    if mode == "sd":
        sd = z.get_fp32_state_dict_from_zero_checkpoint(ck)
        wall = time.perf_counter() - t1
        peak = hwm_mib()
        hashes = [(k, str(v.dtype), digest(v)) for k, v in sd.items()]
        read = hwm_mib()  # mapped (zero-copy) values count once their pages are read
    elif mode == "lazy":
        sd = z.get_fp32_state_dict_from_zero_checkpoint(ck, lazy_mode=True)
        numel = 0
        for k, v in sd.items():
            t = v.contiguous()
            numel += t.numel()
            del t
        wall = time.perf_counter() - t1
        peak = hwm_mib()
    else:
        z.convert_zero_checkpoint_to_fp32_state_dict(ck, out, safe_serialization=True)
        wall = time.perf_counter() - t1
        peak = hwm_mib()
    print(json.dumps({"tool": tool, "mode": mode, "import_s": round(imported - t0, 2), "wall_s": round(wall, 3),
                      "rss_after_import_mib": round(rss_imported), "peak_rss_mib": round(peak),
                      "peak_after_reading_mib": round(read if read is not None else peak),
                      "hashes": hashes}))


if __name__ == "__main__":
    main()
