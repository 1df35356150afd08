#!/usr/bin/env bash
# Slim benchmark (issue 11): DeepSpeed's recipe against checkpoint bloat against `ckpt slim`, on
# the same DeepSpeed #3303 checkpoint: a bf16 model whose parameters are views into one flat
# buffer per parameter group (ZeRO-1/2), `engine.module.state_dict()` saved with torch.save in
# N .bin shards, every shard holding the whole flat buffers (bench/make_bloated_checkpoint.py).
#   clone_tensors: for each shard torch.load, deepspeed.checkpoint.utils.clone_tensors_for_torch_save,
#                  torch.save (what DeepSpeed documents since #3348); other files copied
#   ckpt:          ckpt slim -q CK OUT
#   copy:          the bound: read each shard's used bytes once and write them once (dd)
# With the shards in the page cache, each under /usr/bin/time -v: wall time, GB/s of output,
# peak RSS; output on disk (fsync'd by the copy bound and ckpt, not by torch.save) and on tmpfs.
# The two outputs are compared tensor for tensor. Appends its table to bench/RESULTS.md when the
# ckpt half ran (RESULTS=/dev/null to skip).
#
# Needs the fixtures venv (torch 2.x + deepspeed): tools/fixtures/make_bloat_fixtures.sh makes it.
# Disk: ~ (N + 3) x 2 bytes per parameter under BENCH_DIR (default /tmp/ckpt-bench-slim): 1.1e9
# parameters, N = 3: 6.6 GB of shards + 2.2 GB per output. Everything is removed at the end
# (KEEP=1 keeps the generated checkpoint for the next run).
# Usage: bench/slim.sh [PARAMS]   (default 1.1e9; 5e7 is a quick smoke test)
#        SHARDS=3 CKPT=path/to/ckpt BENCH_DIR=/big/disk KEEP=1 bench/slim.sh 2.2e9
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv-fixtures/bin/python
params=${1:-1.1e9}
shards=${SHARDS:-3}
work=${BENCH_DIR:-/tmp/ckpt-bench-slim}
results=${RESULTS:-bench/RESULTS.md}
[ -x $py ] || { echo "needs the fixtures venv: run tools/fixtures/make_bloat_fixtures.sh first" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }
if [ -n "${CKPT:-}" ]; then ckpt=$CKPT; else
  ckpt=build/release/cli/ckpt
  if [ ! -x "$ckpt" ]; then
    cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
    cmake --build build/release --target ckpt >/dev/null
  fi
fi
have_slim=1
"$ckpt" slim --help >/dev/null 2>&1 || { have_slim=0; echo "!! $ckpt has no 'slim': timing DeepSpeed's recipe and the copy bound only"; }
mkdir -p "$work"
ck="$work/ck3303-$params-$shards"
cleanup() { rm -rf "$work"/out-* /dev/shm/ckpt-bench-slim; [ "${KEEP:-0}" = 1 ] || rm -rf "$ck" "$work"/time-*.txt "$work"/*.py "$work"/used.txt; }
trap cleanup EXIT

if [ ! -f "$ck/pytorch_model.bin.index.json" ]; then
  echo "== generating the #3303 checkpoint ($params parameters, $shards shards) in $ck"
  rm -rf "$ck"
  $py bench/make_bloated_checkpoint.py "$ck" --params "$params" --shards "$shards" 2>/dev/null
fi
# per shard: the bytes its tensors hold (= what a slim file must keep); mmap: reads no data
$py - "$ck" > "$work/used.txt" <<'PY' 2>/dev/null
import os, sys, torch
ck = sys.argv[1]
for name in sorted(os.listdir(ck)):
    if name.endswith(".bin"):
        sd = torch.load(os.path.join(ck, name), mmap=True, weights_only=True)
        print(name, sum(t.numel() * t.element_size() for t in sd.values()))
PY
used=$(awk '{s += $2} END {printf "%.0f", s}' "$work/used.txt")
echo "== $(ls "$ck"/*.bin | wc -l) shards, $(du -sb "$ck" | cut -f1) bytes on disk, $used bytes used; warming the page cache"
cat "$ck"/* > /dev/null

cat > "$work/clone_tensors.py" <<'PY'
import os, shutil, sys, torch
from deepspeed.checkpoint.utils import clone_tensors_for_torch_save
src, dst = sys.argv[1:3]
os.makedirs(dst, exist_ok=True)
for name in sorted(os.listdir(src)):
    if name.endswith(".bin"):
        sd = torch.load(os.path.join(src, name), map_location="cpu", weights_only=True)
        torch.save(clone_tensors_for_torch_save(sd), os.path.join(dst, name))
        del sd
    else:
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
PY
cat > "$work/compare.py" <<'PY'
import os, sys, torch
a, b = sys.argv[1:3]
n = 0
assert sorted(os.listdir(a)) == sorted(os.listdir(b)), (os.listdir(a), os.listdir(b))
for name in sorted(os.listdir(a)):
    if not name.endswith(".bin"):
        assert open(os.path.join(a, name), "rb").read() == open(os.path.join(b, name), "rb").read(), name
        continue
    x = torch.load(os.path.join(a, name), mmap=True, weights_only=True)
    y = torch.load(os.path.join(b, name), mmap=True, weights_only=True)
    assert list(x) == list(y), name
    for k in x:
        s, t = x[k], y[k]
        assert (s.dtype, s.shape, s.stride()) == (t.dtype, t.shape, t.stride()), k
        assert torch.equal(s.view(torch.int16), t.view(torch.int16)), k
        n += 1
print(f"{n} tensors equal bit for bit, both load with weights_only=True")
PY
t0=$(date +%s.%N); $py -c "import deepspeed.checkpoint.utils" 2>/dev/null; t1=$(date +%s.%N)
echo "   (importing deepspeed alone takes $(awk -v a=$t0 -v b=$t1 'BEGIN {printf "%.1f", b-a}') s of the clone_tensors time)"

rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }

rows=()
tools="clone_tensors copy"; [ $have_slim = 1 ] && tools="clone_tensors ckpt copy"
for target in disk tmpfs; do
  base=$work; [ $target = tmpfs ] && base=/dev/shm/ckpt-bench-slim && mkdir -p $base
  for tool in $tools; do
    out="$base/out-$tool"
    rm -rf "$out"
    log="$work/time-$target-$tool.txt"
    cat "$ck"/* > /dev/null  # warm again: tmpfs outputs compete with the page cache
    case $tool in
      clone_tensors) /usr/bin/time -v $py "$work/clone_tensors.py" "$ck" "$out" >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
      ckpt) /usr/bin/time -v "$ckpt" slim -q "$ck" "$out" >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
      copy) mkdir -p "$out"
        sync_flag=conv=fsync; [ $target = tmpfs ] && sync_flag=""
        /usr/bin/time -v bash -c "while read f n; do dd if=$ck/\$f of=$out/\$f bs=16M count=\$n iflag=count_bytes $sync_flag status=none; done < $work/used.txt" 2>"$log" ;;
    esac
    bytes=$(du -sb "$out" | cut -f1)
    echo "   $target $tool: $(wall "$log") s, peak RSS $(rss "$log") MB, output $bytes bytes"
    rows+=("$target $tool $(wall "$log") $(rss "$log") $bytes")
    if [ $tool = ckpt ]; then
      echo "== comparing ckpt slim's output with clone_tensors' ($target)"
      $py "$work/compare.py" "$base/out-clone_tensors" "$base/out-ckpt" 2>/dev/null | sed 's/^/   /'
    fi
    [ $tool = clone_tensors ] && [ $have_slim = 1 ] || rm -rf "$base"/out-*
  done
  rm -rf "$base"/out-*
done

table() {
  echo
  echo "### $(date -u +%Y-%m-%d) — slim: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, params=$params, $shards shards of $(du -sb "$ck" | cut -f1) bytes in all, $used bytes used, bf16"
  echo
  echo "| output | tool | wall s | GB/s (output) | peak RSS MB | output bytes | time vs clone_tensors | time vs copy bound |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for target in disk tmpfs; do
    base_t=""; copy_t=""
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$target" ] || continue
      [ "$2" = clone_tensors ] && base_t=$3; [ "$2" = copy ] && copy_t=$3; done
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$target" ] || continue
      awk -v s="$1" -v t="$2" -v w="$3" -v m="$4" -v b="$5" -v bt="$base_t" -v ct="$copy_t" \
        'BEGIN {printf "| %s | %s | %.2f | %.2f | %d | %.0f | %.2fx | %.2fx |\n", s, t, w, b/w/1e9, m, b, bt/w, w/ct}'
    done
  done
  echo
  echo "Rerun: \`bench/slim.sh $params\` (SHARDS=$shards, BENCH_DIR=$work)."
}
if [ $have_slim = 1 ]; then table | tee -a "$results"; else table; fi
