#!/usr/bin/env bash
# Megatron-Core benchmark: megatron-core's own path to Hugging Face against `ckpt export` on the same
# multi-GB torch_dist checkpoint (Llama-shaped GPTModel saved by megatron-core itself at TP2 PP2 from 4 gloo
# processes on CPU, laid out as Megatron-LM's run folder), page cache warm.
#
# Reference (bench/make_megatron_checkpoint.py reference), one process: import torch + megatron-core, a TP1
# PP1 GPTModel, dist_checkpointing.load of the iteration into it (megatron-core reshards on load), the Megatron
# -> HF mapping of tools/fixtures/make_megatron_fixtures.py, safetensors save_file. Ours: `ckpt export -q`.
# Megatron-Bridge (bench/make_megatron_checkpoint.py bridge, in .venv-bridge): Megatron-Bridge 0.3.1's export,
# AutoBridge.export_ckpt's steps (from_hf_pretrained, to_megatron_provider, temporary_distributed_context
# gloo, build_and_load_model, save_hf_weights) with an adapter for what export_ckpt cannot do with this run
# folder (its Megatron-LM args; no HF source folder): see cmd_bridge's docstring for which part is which.
# All under /usr/bin/time -v (wall, peak RSS); every output compared with megatron-core's tensor by tensor
# (sha256).
#
# Needs .venv-megatron (tools/fixtures/make_megatron_fixtures.sh makes it; made here when missing) and, for
# the bridge rows, .venv-bridge (tools/fixtures/make_bridge_fixtures.sh --venv-only; made here when missing:
# several minutes and about 8 GB).
# Disk: the checkpoint (~2.3 GB) plus one output per tool under BENCH_DIR (default /tmp/ckpt-bench/megatron); the
# outputs are removed at the end, the checkpoint kept for reruns unless CLEAN=1.
# Usage: bench/megatron.sh [LAYERS]   (default 10: 2.33 GB of fp32 weights)
#   CKPT=path/to/ckpt (default build/release/cli/ckpt, built when missing), RESULTS=/dev/null to skip the append,
#   TARGETS="disk disk+fsync tmpfs" (the outputs), TOOLS="megatron-core ckpt bridge" (the rows; megatron-core
#   always runs: the others are compared with it).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
layers=${1:-10}
work=${BENCH_DIR:-/tmp/ckpt-bench/megatron}
ckpt=${CKPT:-build/release/cli/ckpt}
results=${RESULTS:-bench/RESULTS.md}
py=.venv-megatron/bin/python
bpy=.venv-bridge/bin/python
tools="megatron-core $(echo "${TOOLS:-ckpt bridge}" | tr ' ' '\n' | grep -vx megatron-core | tr '\n' ' ')"
nice="nice -n 15"
mkdir -p "$work"

if [ ! -x $py ]; then
  python3 -m venv .venv-megatron
  echo '*' > .venv-megatron/.gitignore
fi
if ! $py -c "import torch, megatron.core, transformers, safetensors, psutil" 2>/dev/null; then
  $nice .venv-megatron/bin/pip install -q "torch==2.10.0" "megatron-core==0.16.1" "numpy==2.4.6" \
    "safetensors==0.8.0" "transformers==5.24.0" "psutil==7.2.2"
fi
case " $tools " in *" bridge "*)
  [ -x $bpy ] && $bpy -c "import importlib.metadata as m, megatron.core, transformers; assert m.version('megatron-bridge') == '0.3.1'" 2>/dev/null \
    || tools/fixtures/make_bridge_fixtures.sh --venv-only ;;
esac
if [ -z "${CKPT:-}" ] && [ ! -x "$ckpt" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  $nice cmake --build build/release --target ckpt >/dev/null
fi

run="$work/gpt-tp2pp2-L$layers"
if [ ! -f "$run/latest_checkpointed_iteration.txt" ]; then
  echo "== generating $run with megatron-core (TP2 PP2, 4 gloo processes on CPU)"
  rm -rf "$run"
  $nice $py bench/make_megatron_checkpoint.py make "$run" --layers "$layers" 2>&1 | grep -v -i warn | tail -n 3
fi
it=$(cat "$run/latest_checkpointed_iteration.txt")
itdir="$run/$(printf 'iter_%07d' "$it")"
ckbytes=$(cat "$itdir"/*.distcp | wc -c)
echo "== $(du -sh "$run" | cut -f1) on disk ($ckbytes bytes in $(ls "$itdir"/*.distcp | wc -l) .distcp files); warming the page cache"
cat "$itdir"/* >/dev/null
$py -c "import torch, megatron.core, safetensors" 2>/dev/null   # the reference's imports warm too

# Let the load of the generation (4 processes) settle, up to 3 minutes.
for _ in $(seq 36); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 5; done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== uptime before: $(uptime)"
rows=()
same=yes
# Output on disk (ckpt fsyncs its files, save_file does not), on disk with the reference's output fsynced
# too (disk+fsync: the same durable result from both), and on tmpfs (no disk in the way: the tools' own work).
for target in ${TARGETS:-disk disk+fsync tmpfs}; do
  base=$work; [ $target = tmpfs ] && base=/dev/shm/ckpt-bench-megatron && mkdir -p $base
  durable=""; [ $target = disk+fsync ] && durable=--fsync
  for tool in $tools; do
    out="$base/out-$tool"
    rm -rf "$out"
    log="$work/time-$target-$tool.txt"
    case $tool in
      megatron-core) $nice /usr/bin/time -v $py bench/make_megatron_checkpoint.py reference $durable "$run" "$out" >/dev/null 2>"$log" || { tail -5 "$log"; exit 1; }
                     grep 'reference phases' "$log" | sed 's/^/   /' ;;
      ckpt) $nice /usr/bin/time -v "$ckpt" export -q "$run" "$out" >/dev/null 2>"$log" || { tail -5 "$log"; exit 1; } ;;
      bridge) $nice /usr/bin/time -v $bpy bench/make_megatron_checkpoint.py bridge $durable "$run" "$out" >/dev/null 2>"$log" || { tail -5 "$log"; exit 1; }
              grep 'bridge phases' "$log" | sed 's/^/   /' ;;
    esac
    echo "   $target $tool: $(wall "$log") s, peak RSS $(rss "$log") MB"
    rows+=("$target $tool $(wall "$log") $(rss "$log")")
    [ $tool = megatron-core ] && continue
    # Compared, then removed before the next tool runs: each tool runs beside megatron-core's output only
    # (on tmpfs, Bridge's load was seen 3x slower with ckpt's 2.33 GB output still there: RESULTS.md).
    echo "== checking $tool's output holds megatron-core's tensors"
    check=$($nice $py bench/make_megatron_checkpoint.py compare "$base/out-megatron-core" "$out" 2>/dev/null | tail -n 1)
    echo "   $check"
    case $check in *"same names"*) ;; *) same=no ;; esac
    bytes=$(echo "$check" | awk '{print $3}')
    if cmp -s "$base/out-megatron-core/model.safetensors" "$out/model.safetensors" 2>/dev/null; then
      echo "   model.safetensors: identical bytes"
    else
      ls -l "$base/out-megatron-core" "$out" | sed 's/^/   /'
    fi
    rm -rf "$out"
  done
  rm -rf "$base"/out-*
done
rm -rf /dev/shm/ckpt-bench-megatron
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== uptime after: $(uptime)"
[ "${CLEAN:-0}" = 1 ] && rm -rf "$run"

gb=$(awk -v b="$bytes" 'BEGIN {printf "%.2f", b/1e9}')
{
  echo
  with=""; case " $tools " in *" bridge "*) with=", with Megatron-Bridge 0.3.1" ;; esac
  echo "### $(date -u +%Y-%m-%d) — Megatron-Core torch_dist export (TP2 PP2, $gb GB$with)"
  echo
  echo "| output | tool | wall s | GB/s | peak RSS MB | time vs megatron-core | RSS vs megatron-core |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  rw=""; rm_=""
  for r in "${rows[@]}"; do
    set -- $r
    [ "$2" = megatron-core ] && { rw=$3; rm_=$4; }
    awk -v o="$1" -v t="$2" -v w="$3" -v m="$4" -v b="$bytes" -v rw="$rw" -v rm="$rm_" \
      'BEGIN {printf "| %s | %s | %.2f | %.2f | %s | %.2fx | %.2fx |\n", o, t, w, b/w/1e9, m, w/rw, m/rm}'
  done
  echo
  echo "$(machine | sed 's/, load .*//'); load average (1, 5, 15 min) $load_before before, $load_after after; $bytes bytes of fp32 weights (${layers} layers), checkpoint $ckbytes bytes of .distcp; tensors identical: $same. Rerun: \`CKPT=$ckpt bench/megatron.sh $layers\` (BENCH_DIR=$work)."
} | tee -a "$results"
[ "$same" = yes ] || exit 1
