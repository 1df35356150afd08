#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for SECONDS (default 60),
# seeded with the committed fixtures. A crash leaves its input in build/fuzz/crashes/ and
# makes this script fail. Usage: tests/fuzz/run_fuzzers.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
cmake --preset fuzz >/dev/null
cmake --build build/fuzz --target fuzz_zip fuzz_pickle fuzz_torch fuzz_safetensors fuzz_deepspeed >/dev/null
work=build/fuzz/corpus
mkdir -p "$work" build/fuzz/crashes
for t in ${CKPT_FUZZ_TARGETS:-zip pickle torch safetensors deepspeed}; do
  mkdir -p "$work/$t"
  case $t in
    zip|torch) for f in tests/data/torch/*/*.pt tests/data/corrupt/*.pt; do
                 cp "$f" "$work/$t/$(basename "$(dirname "$f")")-$(basename "$f")"; done ;;
    safetensors) cp tests/data/corrupt/*.safetensors "$work/$t/" ;;
    deepspeed)
      # first byte: fixture (0 ZeRO-2, 1 ZeRO-3) + 2 x file (0 model states, 1 optimizer states)
      b=0
      for f in tests/data/deepspeed/zero2_fp32_w1/global_step2/mp_rank_00_model_states.pt \
               tests/data/deepspeed/zero3_fp32_w1/global_step2/zero_pp_rank_0_mp_rank_00_model_states.pt \
               tests/data/deepspeed/zero2_fp32_w1/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt \
               tests/data/deepspeed/zero3_fp32_w1/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt; do
        { printf "\\$(printf %03o $b)"; cat "$f"; } > "$work/$t/seed-$b"; b=$((b + 1))
      done ;;
    pickle)
      # the data.pkl members of the fixtures are the natural pickle seeds
      for f in tests/data/torch/torch-2.x/*.pt; do
        python3 -c 'import sys,zipfile
try:
  z=zipfile.ZipFile(sys.argv[1]); n=[m for m in z.namelist() if m.endswith("data.pkl")][0]
  open(sys.argv[2],"wb").write(z.read(n))
except Exception: pass' "$f" "$work/pickle/$(basename "$f").pkl"
      done ;;
  esac
  # Inputs that once crashed a target are kept in tests/fuzz/regressions/TARGET/ and replayed first.
  if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then
    ./build/fuzz/tests/fuzz/fuzz_$t tests/fuzz/regressions/$t/* >/dev/null 2>&1 \
      || { echo "fuzz_$t: a kept regression input crashes again"; exit 1; }
    echo "fuzz_$t: $(ls tests/fuzz/regressions/$t | wc -l) regression inputs replayed"
  fi
  echo "fuzz_$t: ${secs}s"
  ./build/fuzz/tests/fuzz/fuzz_$t "$work/$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
      -timeout=10 -artifact_prefix=build/fuzz/crashes/$t- -print_final_stats=1 2>&1 \
    | grep -E "^stat::number_of_executed_runs|^stat::peak_rss|ERROR|SUMMARY|Done" || true
  if ls build/fuzz/crashes/$t-* >/dev/null 2>&1; then echo "fuzz_$t found a crash: $(ls build/fuzz/crashes/$t-*)"; exit 1; fi
done
echo "fuzzers: no crashes"
