#!/usr/bin/env bash
# Fails, listing the files, when any C++/CUDA source differs from what clang-format (the
# committed .clang-format) makes of it. `tools/check-format.sh --fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "check-format: clang-format not found (tools/install-deps.sh installs it)" >&2
  exit 1
fi
bad=()
while IFS= read -r f; do
  if [ "${1:-}" = "--fix" ]; then
    "$fmt" -i "$f"
  elif ! "$fmt" "$f" | cmp -s - "$f"; then
    bad+=("$f")
  fi
done < <(git ls-files '*.cpp' '*.h' '*.cu')
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) differ from clang-format; run tools/check-format.sh --fix:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: every source file is formatted"
