#!/usr/bin/env python3
"""One measurement of bench/python.sh, in a process of its own: a zero_to_fp32 function,
DeepSpeed's or checkpoint_studio.deepspeed's, on CHECKPOINT. Prints one JSON line: the call's
wall seconds (imports excluded, reported apart) and two memory figures, both after the imports
and at their peak:
- RSS (VmHWM, MiB): every page the process maps, including pages of files it maps (DeepSpeed's
  torch.load(mmap=True), our zero-copy views), which count once touched;
- private memory (RssAnon + RssShmem, MiB): the memory the call takes from the machine. File
  pages are the page cache's own pages, shared and reclaimable, so they are not in it. A sampler
  process reads /proc/PID/status every 2 ms (no in-process thread competing for the GIL).
For the eager state dict it hashes, per tensor name, dtype and sha256 after the call (so hashing
costs no time in the figures), and the peaks cover that reading too.

Modes: sd (get_fp32_state_dict_from_zero_checkpoint, eager), lazy (lazy_mode=True, every value
read once with .contiguous() and dropped, as a streaming consumer does), convert
(convert_zero_checkpoint_to_fp32_state_dict to OUT, safetensors, 5GB shards), floor (no
checkpoint read: torch.empty for every tensor of the state dict and one write of its bytes,
fill_, on torch's threads: what any eager dict in fresh torch-owned memory costs at least).

    python_bench.py deepspeed|ours sd|lazy|convert|floor CHECKPOINT [OUT]
"""
import hashlib
import json
import os
import subprocess
import sys
import time

SAMPLER = r"""
import select, sys
pid, peak = sys.argv[1], 0
def private():
    kb = 0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(("RssAnon:", "RssShmem:")):
            kb += int(line.split()[1])
    return kb
while not select.select([sys.stdin], [], [], 0.002)[0]:
    peak = max(peak, private())
print(max(peak, private()), flush=True)
"""


class PrivatePeak:
    """The peak of a process's private memory from now until stop(), sampled from outside."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", SAMPLER, str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        time.sleep(0.05)  # sampling before the call starts

    def stop(self):
        out, _ = self.proc.communicate("stop\n")
        return int(out.strip()) / 1024


def status_mib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def private_mib():
    return status_mib("RssAnon") + status_mib("RssShmem")


def digest(t):
    import torch
    flat = t.contiguous().reshape(-1)
    return hashlib.sha256(flat.view(torch.uint8).numpy() if flat.numel() else b"").hexdigest()


def floor(ck):
    """torch.empty + fill_ for every tensor of the state dict (shapes read lazily, untimed)."""
    import torch
    from checkpoint_studio import deepspeed as ours
    lazy = ours.get_fp32_state_dict_from_zero_checkpoint(ck, lazy_mode=True)
    shapes = [(tuple(v.shape), v.dtype) for v in {id(v): v for v in lazy.values()}.values()]
    del lazy
    t = time.perf_counter()
    kept = []
    for shape, dtype in shapes:
        x = torch.empty(shape, dtype=dtype)
        x.fill_(0)
        kept.append(x)
    return time.perf_counter() - t, kept


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
    rss_imported, private_imported = status_mib("VmHWM"), private_mib()
    sampler = PrivatePeak()
    hashes = []
    t1 = time.perf_counter()
    if mode == "sd":
        sd = z.get_fp32_state_dict_from_zero_checkpoint(ck)
        wall = time.perf_counter() - t1
        rss_at_return = status_mib("VmHWM")
        hashes = [(k, str(v.dtype), digest(v)) for k, v in sd.items()]
    elif mode == "lazy":
        sd = z.get_fp32_state_dict_from_zero_checkpoint(ck, lazy_mode=True)
        for k, v in sd.items():
            t = v.contiguous()
            del t
        wall = time.perf_counter() - t1
        rss_at_return = status_mib("VmHWM")
    elif mode == "floor":
        wall, kept = floor(ck)
        rss_at_return = status_mib("VmHWM")
    else:
        z.convert_zero_checkpoint_to_fp32_state_dict(ck, out, safe_serialization=True)
        wall = time.perf_counter() - t1
        rss_at_return = status_mib("VmHWM")
    print(json.dumps({"tool": tool, "mode": mode, "import_s": round(imported - t0, 2), "wall_s": round(wall, 3),
                      "rss_after_import_mib": round(rss_imported), "peak_rss_at_return_mib": round(rss_at_return),
                      "peak_rss_mib": round(status_mib("VmHWM")),
                      "private_after_import_mib": round(private_imported),
                      "peak_private_mib": round(sampler.stop()),
                      "hashes": hashes}))


if __name__ == "__main__":
    main()
