#!/usr/bin/env python3
"""Helpers for tests/faults/run.sh that bash cannot do well (standard library only, except
make-torch, which needs torch).

  manifest PATH...          one sorted line per entry under each PATH: type, relative path, size,
                            sha256 (files) or link target (symlinks). Two equal manifests mean
                            nothing was written, removed, renamed or changed.
  run [options] -- CMD...   runs CMD, and at a trigger point sends it a signal; prints one line
                            "sent rc finished elapsed_ms progress hung" (see cmd_run).
  check-output PATH         structural check of a safetensors file or of an exported folder
                            (index and shards agree, no extra or partial files); exit 1 + reason.
  make-torch OUT MB SEED    a torch.save file of about MB megabytes: a dict of float32 tensors.
  socket PATH               leaves a UNIX socket file at PATH.
"""
import argparse
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

PARTIAL = ".ckpt-partial-"


def sha256(path):
    h = hashlib.sha256()  # OpenSSL's, with SHA-NI: ~4x faster than coreutils sha256sum here
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return h.hexdigest()
            h.update(b)


def cmd_manifest(paths):
    lines = []
    for root in paths:
        def entry(p, rel):
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                lines.append(f"l {rel} -> {os.readlink(p)}")
            elif stat.S_ISDIR(st.st_mode):
                lines.append(f"d {rel}")
            elif stat.S_ISREG(st.st_mode):
                lines.append(f"f {rel} {st.st_size} {sha256(p)}")
            else:
                lines.append(f"o {rel} {stat.S_IFMT(st.st_mode):o}")
        if not os.path.lexists(root):
            lines.append(f"missing {root}")
            continue
        entry(root, ".")
        if os.path.isdir(root) and not os.path.islink(root):
            for d, dirs, files in os.walk(root):
                for n in dirs + files:
                    p = os.path.join(d, n)
                    entry(p, os.path.relpath(p, root))
    sys.stdout.write("".join(l + "\n" for l in sorted(lines)))
    return 0


def written_bytes(watch):
    """Bytes the job has really written under `watch` (a case folder that holds nothing but the
    job's output): every file counts, temporary or not, so a writer that writes straight to the
    final name is interrupted mid-write too, and caught. A file's bytes are the smaller of size and
    allocated blocks, so a file made full-size up front (ftruncate) does not count as written.
    Returns (bytes, number of files)."""
    total, count = 0, 0
    for d, dirs, files in os.walk(watch):
        for n in files:
            try:
                st = os.lstat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            count += 1
            total += min(st.st_size, st.st_blocks * 512)
    return total, count


def cmd_run(a):
    """Starts CMD and sends --signal at --at:
         time:S     S seconds after start
         bytes:N    once the files under --watch hold N bytes (0: once one exists); polled
                    every 5 ms
       Then waits up to --wait seconds for the process to end (SIGKILL after that: hung=1).
       Prints: sent(0/1) rc(shell style, 128+n when killed) finished(1: it ended on its own before
       the signal could be sent) elapsed_ms(signal -> exit) progress(bytes at the trigger) hung."""
    sig = getattr(signal, "SIG" + a.signal)
    kind, _, val = a.at.partition(":")

    def child_setup():
        # A user's Ctrl-C reaches ckpt with default dispositions, even when this harness itself
        # runs in the background (where bash makes SIGINT ignored, and exec keeps "ignored").
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL)

    with open(a.stdout, "wb") as out, open(a.stderr, "wb") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(a.cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=child_setup)
    if a.pidfile:
        with open(a.pidfile, "w") as f:
            f.write(str(p.pid))

    def forward(signum, frame):  # the harness is being stopped: take the child with us
        p.kill()
        p.wait()
        sys.exit(128 + signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)

    progress, fire = 0, False
    while p.poll() is None:
        if kind == "time":
            fire = time.monotonic() - t0 >= float(val)
        else:
            progress, count = written_bytes(a.watch)
            fire = count > 0 and progress >= int(val)
        if fire:
            break
        time.sleep(0.005)
    sent, finished, hung, elapsed = 0, 0, 0, 0
    if fire and p.poll() is None:
        ts = time.monotonic()
        os.kill(p.pid, sig)  # still our unreaped child, so the pid cannot have been reused
        sent = 1
        try:
            p.wait(timeout=a.wait)
        except subprocess.TimeoutExpired:
            hung = 1
            p.kill()
            p.wait()
        elapsed = int((time.monotonic() - ts) * 1000)
    else:
        p.wait()
        finished = 1
    rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
    print(sent, rc, finished, elapsed, progress, hung)
    return 0


def read_safetensors_header(path):
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: shorter than a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} beyond the file's {size} bytes")
        meta = json.loads(f.read(n))
    end = 0
    spans = []
    for k, v in meta.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        spans.append((b, e, k))
        end = max(end, e)
    spans.sort()
    pos = 0
    for b, e, k in spans:
        if b != pos:
            raise ValueError(f"{path}: tensor {k} starts at {b}, expected {pos}")
        pos = e
    if 8 + n + end != size:
        raise ValueError(f"{path}: data ends at {8 + n + end}, file has {size} bytes (truncated or padded)")
    return [k for k in meta if k != "__metadata__"]


def cmd_check_output(path):
    try:
        if os.path.isfile(path):
            read_safetensors_header(path)
            return 0
        if not os.path.isdir(path):
            raise ValueError(f"{path}: missing")
        names = sorted(os.listdir(path))
        bad = [n for n in names if PARTIAL in n or n.startswith(".")]
        if bad:
            raise ValueError(f"{path}: leftover temporary files {bad}")
        st = [n for n in names if n.endswith(".safetensors")]
        if "model.safetensors.index.json" in names:
            with open(os.path.join(path, "model.safetensors.index.json")) as f:
                wm = json.load(f)["weight_map"]
            files = sorted(set(wm.values()))
            missing = [f for f in files if f not in names]
            if missing:
                raise ValueError(f"{path}: index lists missing shards {missing}")
            extra = [f for f in st if f not in files]
            if extra:
                raise ValueError(f"{path}: shards not in the index (a mix of two exports?) {extra}")
            have = {}
            for f in files:
                for k in read_safetensors_header(os.path.join(path, f)):
                    have[k] = f
            wrong = [k for k, f in wm.items() if have.get(k) != f]
            if wrong or len(have) != len(wm):
                raise ValueError(f"{path}: index and shard contents disagree ({wrong[:3]}...)")
        else:
            if st != ["model.safetensors"]:
                raise ValueError(f"{path}: no index, so expected exactly model.safetensors, found {st}")
            read_safetensors_header(os.path.join(path, "model.safetensors"))
        return 0
    except (ValueError, KeyError, json.JSONDecodeError, OSError) as e:
        print(e)
        return 1


def cmd_make_torch(out, mb, seed):
    import torch
    torch.manual_seed(seed)
    n = int(mb * 1e6 / 4)
    parts = 6
    sd = {f"layers.{i}.weight": torch.randn(n // parts // 1024, 1024) for i in range(parts)}
    sd["bias"] = torch.randn(1000)
    sd["step"] = torch.tensor(seed, dtype=torch.int64)
    torch.save(sd, out)
    return 0


def cmd_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)  # the file stays after close: a socket nobody listens on
    s.close()
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "manifest":
        return cmd_manifest(rest)
    if cmd == "check-output":
        return cmd_check_output(rest[0])
    if cmd == "make-torch":
        return cmd_make_torch(rest[0], float(rest[1]), int(rest[2]))
    if cmd == "socket":
        return cmd_socket(rest[0])
    if cmd == "run":
        ap = argparse.ArgumentParser(prog="faultlib.py run")
        ap.add_argument("--at", required=True)
        ap.add_argument("--signal", default="KILL")
        ap.add_argument("--watch", default=".")
        ap.add_argument("--wait", type=float, default=10)
        ap.add_argument("--stdout", default="/dev/null")
        ap.add_argument("--stderr", default="/dev/null")
        ap.add_argument("--pidfile")
        ap.add_argument("cmd", nargs=argparse.REMAINDER)
        a = ap.parse_args(rest)
        if a.cmd[:1] == ["--"]:
            a.cmd = a.cmd[1:]
        return cmd_run(a)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
