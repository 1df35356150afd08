#!/usr/bin/env bash
# Creates (once) build/python-venv: Debian's python3 (its torch and numpy, through
# --system-site-packages) with what the Python package builds and tests with from PyPI: nanobind
# and scikit-build-core (the ci and asan presets build the module with this interpreter; test.sh
# builds the wheel with it, without build isolation) and transformers (test_trainer_export.py's
# from_pretrained; 4.44.2 is the newest that runs on Debian's torch 1.13). Prints the venv's path.
# Idempotent: a venv that has them is kept as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CKPT_PYTHON_VENV:-$root/build/python-venv}
want=("nanobind==3.1.0" "scikit-build-core==1.1.2" "transformers==4.44.2")
if ! "$venv/bin/python" -c 'import nanobind, scikit_build_core, transformers, pytest, torch' 2>/dev/null; then
  # Debian's interpreter: a pyenv shim on PATH may point at another Python.
  py=/usr/bin/python3; [ -x "$py" ] || py=python3
  "$py" -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "${want[@]}" >&2
fi
echo "$venv"
