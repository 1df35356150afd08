#!/bin/sh
# What help2man runs to write ckpt.1: `ckpt --help`, then each subcommand's --help laid out as a
# subsection (its usage, what it does, its arguments and options), so the manual documents every
# option in the program's own words. CKPT is the ckpt binary; it runs by name so that usage lines
# say "ckpt", and --version keeps only the first line (the second names this machine's compute
# device, which does not belong in a manual).
set -eu
PATH="$(dirname "$CKPT"):$PATH"
case "${1:-}" in
  --version) ckpt --version | head -n 1 ;;
  --help)
    ckpt --help
    for sub in $(ckpt --help | sed -n '/^[Ss][Uu][Bb][Cc][Oo][Mm][Mm][Aa][Nn][Dd][Ss]:/,$s/^  \([a-z][a-z-]*\)  .*/\1/p'); do
      ckpt "$sub" --help | awk -v cmd="$sub" '
        NR == 1 { desc = $0; next }
        NR == 2 { sub(/^Usage: /, ""); printf "\n%s:\n  %s.\n\n", $0, desc; next }
        /^[A-Za-z].*:$/ || /^ *-h,--help/ || /^$/ { next }
        { print }'
    done ;;
  *) echo "usage: CKPT=path/to/ckpt $0 --help|--version" >&2; exit 2 ;;
esac
