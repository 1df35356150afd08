#!/usr/bin/env bash
# Takes every scene of tools/screenshots in light and dark, English and Chinese, into
# docs/screenshots (offscreen, no display needed). Usage: tools/screenshots/take.sh [BUILD_DIR]
# CKPT_SCENES="openUrlS3,longNames" takes only those scenes (screenshots.cpp names them).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/ci}
# The Chinese screenshots need a CJK font (Qt draws boxes without one).
if ! fc-list 2>/dev/null | grep -qi 'wqy\|noto sans cjk'; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends fonts-wqy-microhei >/dev/null
fi
cmake --build "$build" --target screenshots >/dev/null

# The window open on an s3:// checkpoint: a DeepSpeed run in a bucket of moto's S3 server on
# 127.0.0.1, signatures checked (tools/servers/, as tst_remote runs it), stopped when done.
start_s3() {
  local venv port keys
  venv=$(bash tools/servers/venv.sh) || return 1
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  s3tmp=$(mktemp -d) # global, like moto: the EXIT trap needs them
  INITIAL_NO_AUTH_ACTION_COUNT=3 "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$s3tmp/moto.log" 2>&1 &
  moto=$!
  trap 'kill $moto 2>/dev/null; rm -rf "$s3tmp"' EXIT
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
  ln -s "$PWD/tests/data/deepspeed/zero2_bf16_w2" "$s3tmp/zero2-bf16"
  mapfile -t files < <(cd "$s3tmp" && find -L zero2-bf16 -type f | sort)
  keys=$("$venv/bin/python" tools/servers/moto_setup.py "http://127.0.0.1:$port" ckpts "$s3tmp" "${files[@]}") || return 1
  export AWS_ACCESS_KEY_ID=${keys% *} AWS_SECRET_ACCESS_KEY=${keys#* } AWS_REGION=us-east-1
  export AWS_ENDPOINT_URL=http://127.0.0.1:$port NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
  export AWS_SHARED_CREDENTIALS_FILE=$s3tmp/none AWS_CONFIG_FILE=$s3tmp/none
  unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
  export CKPT_SCREENSHOT_S3=s3://ckpts/zero2-bf16
}
if [ -z "${CKPT_SCENES:-}" ] || [[ ",$CKPT_SCENES," == *,openUrlS3,* ]]; then
  start_s3 || echo "take.sh: no S3 server (tools/servers/venv.sh failed): the open-url scenes are left out" >&2
fi

for palette in light dark; do
  for lang in en zh_CN; do
    suffix="-$palette"; [ "$lang" = en ] || suffix+="-$lang"
    CKPT_LANG=$lang QT_QPA_PLATFORM=offscreen "$build/tools/screenshots/screenshots" docs/screenshots "$palette" "$suffix" \
      2> >(grep -v propagateSizeHints >&2)
  done
done
