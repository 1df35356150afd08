#!/usr/bin/env bash
# Comparison benchmark (issue 12): `ckpt diff` of two tags of a large ZeRO-3 checkpoint against
# the Python way users take today: DeepSpeed's zero_to_fp32 on each tag, then the same per-tensor
# metrics computed with torch (bench/compare_python.py). Warm page cache, one run. Reports wall
# time, GB/s (the fp32 bytes of both sides), peak RSS (/usr/bin/time -v), the speed-up, and
# ckpt diff's GB/s as a share of the machine's memory-read bandwidth measured in the same run
# (bench_compute --read-bandwidth) and of the honest ceiling for reading these inputs: the same
# `ckpt diff` pipeline (opening, chunking, in-place reads of the mapped files, page faults, page
# release) with the kernel replaced by a trivial sum of the words (bench_compute --read-tags);
# checks that both ways agree on every tensor. Appends the table to bench/RESULTS.md.
# CKPT=path/to/ckpt and BENCH_COMPUTE=path/to/bench_compute skip building them.
#
# Needs the fixtures venv (torch, deepspeed, safetensors). Disk: ~6 GB per tag per 5e8
# parameters, plus 2 consolidated copies, under BENCH_DIR (default /tmp/ckpt-bench-compare).
# Usage: bench/compare.sh [PARAMS]   (default 5e8)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
py=.venv-fixtures/bin/python
params=${1:-5e8}
work=${BENCH_DIR:-/tmp/ckpt-bench-compare}
ck="$work/zero3"
ckpt=${CKPT:-build/release/cli/ckpt}
mkdir -p "$work"
if [ -z "${CKPT:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt -j2 >/dev/null
fi
bc=${BENCH_COMPUTE:-build/bench/bench/compute/bench_compute}
if [ -z "${BENCH_COMPUTE:-}" ]; then
  cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_TESTS=OFF -DCKPT_BUILD_GUI=OFF -G Ninja >/dev/null
  cmake --build build/bench --target bench_compute -j2 >/dev/null
fi

if [ ! -f "$ck/global_step8/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt" ] || [ "$(cat "$ck/latest" 2>/dev/null)" != global_step8 ]; then
  echo "== generating two tags of a ZeRO-3 checkpoint ($params parameters) in $ck"
  rm -rf "$ck"
  $py bench/make_large_checkpoint.py --stage 3 --params "$params" "$ck" 2>/dev/null | tail -n 1
  $py bench/make_large_checkpoint.py --stage 3 --params "$params" --tag global_step8 --seed 1 "$ck" 2>/dev/null | tail -n 1
fi
cp "$($py -c 'import deepspeed.utils.zero_to_fp32 as z; print(z.__file__)' 2>/dev/null | tail -n 1)" "$work/zero_to_fp32.py"

# Warm: both tags' optimizer files (masters and moments; the model files are small at ZeRO-3).
cat "$ck"/global_step4/* "$ck"/global_step8/* >/dev/null

# The Python way: consolidate both tags, then compare; its wall is the sum, its peak the largest.
rm -rf "$work"/py-a "$work"/py-b
/usr/bin/time -v $py "$work/zero_to_fp32.py" "$ck" "$work/py-a" --tag global_step4 --safe_serialization >/dev/null 2>"$work/time-z2f-a.txt"
/usr/bin/time -v $py "$work/zero_to_fp32.py" "$ck" "$work/py-b" --tag global_step8 --safe_serialization >/dev/null 2>"$work/time-z2f-b.txt"
/usr/bin/time -v $py bench/compare_python.py "$work/py-a" "$work/py-b" >"$work/python.json" 2>"$work/time-metrics.txt"
pywall=$(awk -v a="$(wall "$work/time-z2f-a.txt")" -v b="$(wall "$work/time-z2f-b.txt")" -v c="$(wall "$work/time-metrics.txt")" 'BEGIN {printf "%.2f", a+b+c}')
pyrss=$(printf '%s\n' "$(rss "$work/time-z2f-a.txt")" "$(rss "$work/time-z2f-b.txt")" "$(rss "$work/time-metrics.txt")" | sort -n | tail -n 1)
echo "   python: $pywall s (zero_to_fp32 $(wall "$work/time-z2f-a.txt") + $(wall "$work/time-z2f-b.txt") s, metrics $(wall "$work/time-metrics.txt") s), peak RSS $pyrss MB"

# The Python way's consolidated copies and its 5 GB evict part of the tags from the page cache:
# drop the copies (python.json holds its answers) and warm the tags again, so that the trivial
# read and ckpt diff run on a warm cache as the Python way did.
rm -rf "$work"/py-a "$work"/py-b
cat "$ck"/global_step4/* "$ck"/global_step8/* >/dev/null
bw=$($bc --read-bandwidth 1024)
echo "== memory read with all cores: $bw GB/s"
read -r mr open < <($bc --read-tags "$ck/global_step4" "$ck/global_step8")
echo "== ckpt diff's pipeline with a trivial kernel (a sum of the words): $mr GB/s; opening both tags $open s"
/usr/bin/time -v $ckpt diff -q --json "$ck/global_step4" "$ck/global_step8" >"$work/ckpt.json" 2>"$work/time-ckpt.txt" || { tail -3 "$work/time-ckpt.txt"; exit 1; }
echo "   ckpt diff: $(wall "$work/time-ckpt.txt") s, peak RSS $(rss "$work/time-ckpt.txt") MB"

echo "== checking both ways agree on every tensor"
bytes=$($py - "$work/python.json" "$work/ckpt.json" <<'PY'
import json, math, sys
py = json.load(open(sys.argv[1]))
ck = {t["name"]: t for t in json.load(open(sys.argv[2]))["tensors"]}
assert py.keys() == ck.keys(), (len(py), len(ck))
bad = 0
for name, p in py.items():
    c = ck[name]
    # Both in float64 (torch on whole tensors, ckpt per block with Chan's merge).
    for k, tol in (("max_abs_diff", 1e-12), ("rel_l2", 1e-9), ("cosine", 1e-12)):
        if not math.isclose(p[k], c[k], rel_tol=tol, abs_tol=1e-9):
            bad += 1
            print(f"   {name} {k}: python {p[k]} ckpt {c[k]}", file=sys.stderr)
    if p["bitwise_equal"] != c["bitwise_equal"]:
        bad += 1
        print(f"   {name} bitwise_equal: python {p['bitwise_equal']} ckpt {c['bitwise_equal']}", file=sys.stderr)
assert bad == 0, f"{bad} differences"
print(2 * 4 * sum(t["count"] for t in ck.values()))
print(f"   {len(py)} tensors agree", file=sys.stderr)
PY
)
rm -rf "$work"/py-a "$work"/py-b

{
  echo
  echo "### $(date -u +%Y-%m-%d) — compare two tags: $(machine), ZeRO-3 W=4, $params parameters, $bytes fp32 bytes compared (both sides), warm cache; memory read $bw GB/s, the same pipeline with a trivial kernel $mr GB/s"
  echo
  echo "| tool | wall s | GB/s | peak RSS MB | speed-up | of memory read | of trivial read |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -v w="$pywall" -v m="$pyrss" -v b="$bytes" -v bw="$bw" -v mr="$mr" 'BEGIN {g=b/w/1e9; printf "| zero_to_fp32 x2 + torch metrics | %.2f | %.2f | %s | 1.00x | %.0f%% | %.0f%% |\n", w, g, m, 100*g/bw, 100*g/mr}'
  awk -v w="$(wall "$work/time-ckpt.txt")" -v m="$(rss "$work/time-ckpt.txt")" -v r="$pywall" -v b="$bytes" -v bw="$bw" -v mr="$mr" 'BEGIN {g=b/w/1e9; printf "| ckpt diff | %.2f | %.2f | %s | %.2fx | %.0f%% | %.0f%% |\n", w, g, m, r/w, 100*g/bw, 100*g/mr}'
  echo
  echo "ckpt diff CPU: user $(awk -F': ' '/User time/ {print $2}' "$work/time-ckpt.txt") s, system $(awk -F': ' '/System time/ {print $2}' "$work/time-ckpt.txt") s; ckpt: $ckpt."
  echo
  echo "Rerun: \`bench/compare.sh $params\` (BENCH_DIR=$work)."
} | tee -a bench/RESULTS.md
