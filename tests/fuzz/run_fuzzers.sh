#!/usr/bin/env bash
# Runs each libFuzzer target of the asan tree (clang, ASan + UBSan; CMakePresets.json builds them
# with the engine's sanitizer tests, one configure) for SECONDS (default 60), seeded with the
# committed fixtures, two targets at a time (CKPT_FUZZ_JOBS). Inputs that once crashed a target
# (tests/fuzz/regressions/TARGET/) are always replayed first. A crash leaves its input in
# build/asan/fuzz-crashes/ and fails that target. One line per target, then
# "fuzzers: N passed, M failed". Usage: tests/fuzz/run_fuzzers.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
tree=build/asan
targets=(${CKPT_FUZZ_TARGETS:-zip pickle torch safetensors deepspeed remote_headers s3_xml aws_config \
  dcp_metadata hf_index composer_archive universal trainer deepspeed_layouts hub_json google_credentials megatron verl
  dcp_safetensors lightning accelerate})
[ -f $tree/CMakeCache.txt ] || cmake --preset asan >/dev/null || { echo "fuzzers: 0 passed, 1 failed"; exit 1; }
cmake --build $tree --target "${targets[@]/#/fuzz_}" >/dev/null || { echo "fuzzers: 0 passed, 1 failed"; exit 1; }
work=$tree/fuzz-corpus
crashes=$tree/fuzz-crashes
logs=$tree/fuzz-logs
rm -rf "$logs"
mkdir -p "$work" "$crashes" "$logs"

# seed TARGET: the target's corpus folder, from the committed fixtures
seed() {
  local t=$1
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
    # What servers and AWS files look like (tests/tst_remote.cpp holds more of each).
    remote_headers)
      printf 'HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/1000\r\nETag: "6b06-30"\r\nRetry-After: 2\r\n' \
        > "$work/$t/seed-1"
      printf 'bytes 999-999/1000\nW/"x"\nbytes 5-5/*\n' > "$work/$t/seed-2" ;;
    s3_xml)
      printf '%s' '<?xml version="1.0"?><ListBucketResult><Contents><Key>t/a.pt</Key><Size>12</Size><ETag>"e"</ETag></Contents><CommonPrefixes><Prefix>t/</Prefix></CommonPrefixes><IsTruncated>true</IsTruncated><NextContinuationToken>x</NextContinuationToken></ListBucketResult>' \
        > "$work/$t/seed-1"
      printf '%s' '<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>' > "$work/$t/seed-2" ;;
    hub_json)
      printf '%s' '[{"type":"directory","oid":"0","path":"ds"},{"type":"file","oid":"ab","size":134,"path":"w.safetensors","lfs":{"oid":"sha256:0","size":5000,"pointerSize":134}}]' \
        > "$work/$t/seed-1"
      printf '%s' '<https://huggingface.co/api/models/o/r/tree/main?cursor=abc>; rel="next"' > "$work/$t/seed-2"
      printf '%s' 'org/repo@refs%2Fpr%2F1/sub/w.safetensors' > "$work/$t/seed-3" ;;
    aws_config)
      printf '[default]\naws_access_key_id = A\naws_secret_access_key = S\nregion=eu-west-1\n[profile p]\nendpoint_url = http://h:1/\ns3 =\n  endpoint_url = x\n' \
        > "$work/$t/seed-1"
      printf '%s' '{"Version": 1, "AccessKeyId": "A", "SecretAccessKey": "S", "SessionToken": "T", "Expiration": "2030-01-02T03:04:05.123+01:00"}' \
        > "$work/$t/seed-2"
      printf "[profile p]\ncredential_process = /bin/helper 'a b' \"c \\\" d\" e\\ f\n" > "$work/$t/seed-3" ;;
    google_credentials)
      printf '%s' '{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","token_uri":"https://t/token"}' \
        > "$work/$t/seed-1"
      printf '%s' '{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n"}' \
        > "$work/$t/seed-2"
      printf '%s' '{"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"}' > "$work/$t/seed-3" ;;
    pickle)
      # the data.pkl members of the fixtures are the natural pickle seeds
      for f in tests/data/torch/torch-2.x/*.pt; do
        python3 -c 'import sys,zipfile
try:
  z=zipfile.ZipFile(sys.argv[1]); n=[m for m in z.namelist() if m.endswith("data.pkl")][0]
  open(sys.argv[2],"wb").write(z.read(n))
except Exception: pass' "$f" "$work/pickle/$(basename "$f").pkl"
      done ;;
    # The checkpoint-folder readers: each target writes its seeds itself, from the fixtures it
    # copies, with the first byte that selects fixture and file (tests/fuzz/fuzz_folder.h).
    dcp_metadata|hf_index|composer_archive|universal|trainer|deepspeed_layouts|megatron|verl|dcp_safetensors|lightning|accelerate)
      CKPT_FUZZ_SEEDS="$work/$t" ./$tree/tests/fuzz/fuzz_$t >/dev/null 2>&1 ;;
  esac
}

# fuzz TARGET: replays its regressions, then runs it; prints its verdict and leaves it in
# $logs/TARGET.verdict (ok or FAIL)
fuzz() {
  local t=$1 bin=./$tree/tests/fuzz/fuzz_$1 log=$logs/$1.log
  echo FAIL > "$logs/$t.verdict"
  seed "$t"
  # Inputs that once crashed a target are kept in tests/fuzz/regressions/TARGET/ and replayed first.
  local replayed=0
  if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then
    "$bin" tests/fuzz/regressions/$t/* >"$log" 2>&1 \
      || { echo "fuzz_$t: FAIL: a kept regression input crashes again ($log)"; return 1; }
    replayed=$(ls tests/fuzz/regressions/$t | wc -l)
  fi
  "$bin" "$work/$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix=$crashes/$t- -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  if ls $crashes/$t-* >/dev/null 2>&1 || [ $rc -ne 0 ]; then
    echo "fuzz_$t: FAIL: exit $rc, $(ls $crashes/$t-* 2>/dev/null || echo 'no input kept')"
    grep -E "ERROR|SUMMARY" "$log" | head -n 5
    return 1
  fi
  echo ok > "$logs/$t.verdict"
  echo "fuzz_$t: ok, $replayed regression inputs replayed, $(sed -n 's/^stat::number_of_executed_units: *//p' "$log") inputs run in ${secs} s"
}
export -f seed fuzz
export tree work crashes logs secs

rm -f $crashes/*
# Two at a time (2 cores); each prints its line when it ends.
printf '%s\n' "${targets[@]}" | xargs -P "${CKPT_FUZZ_JOBS:-2}" -I{} bash -c 'fuzz {}'
good=$(cat $logs/*.verdict 2>/dev/null | grep -cx ok)
echo "fuzzers: $good passed, $((${#targets[@]} - good)) failed"
[ "$good" -eq ${#targets[@]} ]
