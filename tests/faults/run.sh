#!/usr/bin/env bash
# Fault-injection harness for ckpt: proves that no failure, misuse, signal or kill -9 damages the
# input or leaves partial output behind. Usage: tests/faults/run.sh CKPT_BINARY
#
# Every case prints "ok   NAME", "FAIL NAME: WHY" or "skip NAME: WHY"; the last line is
# "faults: N passed, M failed, K skipped", and the exit status is 1 when M > 0.
# Environment: FAULTS_PYTHON (default /usr/bin/python3, needs torch), FAULTS_KEEP=1 keeps the
# scratch folder, FAULTS_ONLY=REGEX runs only the sections whose name matches.
#
# No `set -e`: a case that fails must report and let the next one run.
set -u

die() { echo "run.sh: $*" >&2; exit 2; }
[[ $# -ge 1 && -x $1 ]] || die "usage: $0 CKPT_BINARY (an executable)"
CKPT=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${FAULTS_PYTHON:-/usr/bin/python3}
LIB=("$PY" "$HERE/faultlib.py")
DATA=$ROOT/tests/data
SMALL_DS=$DATA/deepspeed/zero2_bf16_w2          # tags global_step2, global_step4, `latest`
SMALL_PT=$DATA/torch/torch-1.13/state_dict.pt
T_START=$SECONDS

# ---------------------------------------------------------------------------------------------
# The writing operations. One line each: name | input | arguments | output name | validator
#   input:      pt (a ~300 MB torch.save file) or ds (a ~600 MB DeepSpeed ZeRO-2 checkpoint)
#   arguments:  ckpt's arguments; the words IN and OUT are replaced by the paths
#   output:     the name OUT gets inside a fresh, otherwise empty case folder; every file that
#               appears in that folder and is not a *.ckpt-partial-* is a "final output"
#   validator:  how to tell the final output is complete: st_file (one safetensors file),
#               hf_folder (model.safetensors, or shards + index), inspect (`ckpt inspect OUT`)
# Every case below (reference, kill -9 at three points, signals, disk full) runs for each line.
WRITE_OPS=(
  "export-file    | pt | export IN OUT -q                        | model.safetensors | st_file"
  "export-folder  | ds | export IN OUT -q                        | exported          | hf_folder"
  "export-sharded | ds | export IN OUT --max-shard-size 100MB -q | exported          | hf_folder"
  "slim-file      | pt | slim IN OUT -q                          | slim.pt           | inspect"
  "slim-folder    | ds | slim IN OUT -q                          | slimmed           | inspect"
  "universal      | ds | universal IN OUT --inject-missing-state -q | universal   | inspect"
)
# Pairs of the above started at the same moment into the same folder (same input, different
# outputs, so a mix of the two would be visible).
RACE_PAIRS=("export-folder export-sharded")

# ---------------------------------------------------------------------------------------------
# Bookkeeping and cleanup.
PASS=0 FAILED=0 SKIPPED=0
ok()   { echo "ok   $1"; PASS=$((PASS + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }
skip() { echo "skip $1: $2"; SKIPPED=$((SKIPPED + 1)); }
info() { echo "# $*"; }

SCRATCH=$(mktemp -d /tmp/ckpt-faults.XXXXXX) || die "mktemp failed"
chmod 755 "$SCRATCH" # the read-only case runs ckpt as nobody in here
BG_PIDS=()
cleanup() {
    # background ckpt processes (race) and the ones faultlib.py runs (their pid files)
    local p
    for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "$SCRATCH"/*.pid "$SCRATCH"/*/*.pid; do
        [[ -f $p ]] && kill -9 "$(cat "$p")" 2>/dev/null
    done
    wait 2>/dev/null
    chmod -R u+w "$SCRATCH" 2>/dev/null # the read-only copies
    if [[ ${FAULTS_KEEP:-0} == 1 ]]; then echo "# kept $SCRATCH" >&2; else rm -rf "$SCRATCH"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---------------------------------------------------------------------------------------------
# Helpers.
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

# op_load NAME: sets OP_INPUT OP_ARGS OP_OUTNAME OP_VALIDATOR from the table
op_load() {
    local row n i a o v
    for row in "${WRITE_OPS[@]}"; do
        IFS='|' read -r n i a o v <<<"$row"
        if [[ $(trim "$n") == "$1" ]]; then
            OP_INPUT=$(trim "$i") OP_ARGS=$(trim "$a") OP_OUTNAME=$(trim "$o") OP_VALIDATOR=$(trim "$v")
            return 0
        fi
    done
    die "no writing operation named $1"
}
op_names() { local row; for row in "${WRITE_OPS[@]}"; do trim "${row%%|*}"; echo; done; }

# op_cmd IN OUT: sets CMD=(ckpt args...) for the loaded operation
op_cmd() {
    local w
    CMD=("$CKPT")
    for w in $OP_ARGS; do
        case $w in IN) CMD+=("$1") ;; OUT) CMD+=("$2") ;; *) CMD+=("$w") ;; esac
    done
}

input_path() { case $1 in pt) echo "$BIG_PT" ;; ds) echo "$BIG_DS" ;; *) die "unknown input $1" ;; esac; }

manifest() { "${LIB[@]}" manifest "$@"; }

# input_unchanged KIND: sha256 of every input file (and the tree's shape) as recorded at the start
input_unchanged() {
    manifest "$(input_path "$1")" >"$SCRATCH/now.manifest"
    cmp -s "$SCRATCH/now.manifest" "$SCRATCH/input-$1.manifest"
}

# A folder output is staged in a folder beside it named like a temporary: that folder is one
# partial (what is inside it is not listed), and nothing in it is a final output.
partials() { find "$1" -name '*.ckpt-partial-*' -prune 2>/dev/null; }
finals() { find "$1" -type f ! -path '*.ckpt-partial-*' 2>/dev/null; }
lines() { grep -c '' "$1"; } # counts a last line without newline too
first_line() { head -n 1 "$1" | cut -c 1-300; }

# validate VALIDATOR OUT: 0 when OUT is a complete output; else WHY says what is wrong
validate() {
    local v=$1 out=$2 f
    WHY=""
    case $v in
    st_file | hf_folder)
        WHY=$("${LIB[@]}" check-output "$out") || return 1
        local files=()
        if [[ -d $out ]]; then files=("$out"/*.safetensors); else files=("$out"); fi
        for f in "${files[@]}"; do
            "$CKPT" inspect "$f" >/dev/null 2>"$SCRATCH/v.err" || { WHY="ckpt inspect $f failed: $(first_line "$SCRATCH/v.err")"; return 1; }
            "$CKPT" stats -q "$f" >/dev/null 2>"$SCRATCH/v.err" || { WHY="ckpt stats -q $f failed: $(first_line "$SCRATCH/v.err")"; return 1; }
        done ;;
    inspect)
        "$CKPT" inspect "$out" >/dev/null 2>"$SCRATCH/v.err" || { WHY="ckpt inspect $out failed: $(first_line "$SCRATCH/v.err")"; return 1; } ;;
    *) die "unknown validator $v" ;;
    esac
}

# names PATH LINE: LINE mentions PATH as given, without trailing slash, or resolved
names() {
    local p=$1 line=$2 form
    for form in "$p" "${p%/}" "$(realpath -ms -- "$p")" "$(realpath -m -- "$p")"; do
        [[ -n $form && $line == *"$form"* ]] && return 0
    done
    return 1
}

# one_error_line ERRFILE: exactly one line, beginning "ckpt: error:"; else WHY
one_error_line() {
    local n
    n=$(lines "$1")
    if [[ $n != 1 ]]; then WHY="expected one stderr line, got $n: $(head -c 300 "$1" | tr '\n' '|')"; return 1; fi
    if [[ $(head -n 1 "$1") != "ckpt: error:"* ]]; then WHY="stderr does not begin with 'ckpt: error:': $(first_line "$1")"; return 1; fi
}

section() { [[ -z ${FAULTS_ONLY:-} || $1 =~ $FAULTS_ONLY ]]; }

# unshare -m works (root or user namespaces), and mounts inside it work?
HAVE_MOUNT_NS=0
if unshare -m -- sh -c "mount -t tmpfs -o size=1m tmpfs '$SCRATCH' && umount '$SCRATCH'" 2>/dev/null; then
    HAVE_MOUNT_NS=1
fi
# ns SETUP: sets NS=(command prefix) that runs the rest of a command line in a private mount
# namespace after the shell SETUP; exit 99 when SETUP failed. Mounts vanish with the namespace.
ns() { NS=(unshare -m -- bash -c "$1"' || exit 99; exec "$@"' ns); }

# ---------------------------------------------------------------------------------------------
# 4. Overlap: an output that is, contains or lies inside an input is refused, nothing written.

# fresh_small DIR: a writable copy of the small fixtures (d = DeepSpeed folder, m.pt = a file)
fresh_small() {
    rm -rf "$1"; mkdir -p "$1"
    cp -r "$SMALL_DS" "$1/d" && cp "$SMALL_PT" "$1/m.pt"
}

# expect_refusal NAME W INPUT OUTPUT -- CMD...: exit 1, one "ckpt: error:" line naming both
# paths, and the case folder W (which holds the inputs) byte for byte as before
expect_refusal() {
    local name=$1 w=$2 in=$3 out=$4 rc; shift 4; [[ $1 == -- ]] && shift
    manifest "$w" >"$w.before"
    timeout -k 2 30 "$@" >/dev/null 2>"$w.err"; rc=$?
    manifest "$w" >"$w.after"
    if [[ $rc == 99 ]]; then skip "$name" "the mount namespace setup failed"; return; fi
    if ! cmp -s "$w.before" "$w.after"; then
        fail "$name" "the case folder changed (exit $rc): $(diff "$w.before" "$w.after" | grep '^[<>]' | head -3 | tr '\n' ' ')"; return
    fi
    [[ $rc == 1 ]] || { fail "$name" "exit $rc, expected 1: $(first_line "$w.err")"; return; }
    one_error_line "$w.err" || { fail "$name" "$WHY"; return; }
    local line; line=$(head -n 1 "$w.err")
    names "$out" "$line" || { fail "$name" "the message does not name the output $out: $line"; return; }
    names "$in" "$line" || { fail "$name" "the message does not name the input $in: $line"; return; }
    ok "$name"
}

run_overlap() {
    local W=$SCRATCH/ov i=0 w
    mkdir -p "$W"
    next() { i=$((i + 1)); w=$W/$i; fresh_small "$w"; }
    next; expect_refusal "overlap: export m.pt m.pt" "$w" "$w/m.pt" "$w/m.pt" -- "$CKPT" export "$w/m.pt" "$w/m.pt" -q
    next; ln -s m.pt "$w/link.safetensors"
    expect_refusal "overlap: output is a symlink to the input" "$w" "$w/m.pt" "$w/link.safetensors" -- "$CKPT" export "$w/m.pt" "$w/link.safetensors" -q
    next; ln "$w/m.pt" "$w/hard.safetensors"
    expect_refusal "overlap: output is a hard link to the input" "$w" "$w/m.pt" "$w/hard.safetensors" -- "$CKPT" export "$w/m.pt" "$w/hard.safetensors" -q
    next; ln "$w/d/global_step4/mp_rank_00_model_states.pt" "$w/hard.safetensors"
    expect_refusal "overlap: output is a hard link to a file of the input folder" "$w" "$w/d" "$w/hard.safetensors" -- "$CKPT" export "$w/d" "$w/hard.safetensors" -q
    next; expect_refusal "overlap: export m.pt d/../m.pt" "$w" "$w/m.pt" "$w/d/../m.pt" -- "$CKPT" export "$w/m.pt" "$w/d/../m.pt" -q
    next; expect_refusal "overlap: export d d/global_step4 (inside)" "$w" "$w/d" "$w/d/global_step4" -- "$CKPT" export "$w/d" "$w/d/global_step4" -q
    next; expect_refusal "overlap: export d d/newfolder (inside, new)" "$w" "$w/d" "$w/d/newfolder" -- "$CKPT" export "$w/d" "$w/d/newfolder" -q
    next; expect_refusal "overlap: export d d (same)" "$w" "$w/d" "$w/d" -- "$CKPT" export "$w/d" "$w/d" -q
    next; expect_refusal "overlap: export d/global_step4 d (contains)" "$w" "$w/d/global_step4" "$w/d" -- "$CKPT" export "$w/d/global_step4" "$w/d" -q
    next; expect_refusal "overlap: export d d/global_step4/../ (dot-dot is)" "$w" "$w/d" "$w/d/global_step4/../" -- "$CKPT" export "$w/d" "$w/d/global_step4/../" -q
    next; expect_refusal "overlap: export d d/global_step2/../new (dot-dot inside)" "$w" "$w/d" "$w/d/global_step2/../new" -- "$CKPT" export "$w/d" "$w/d/global_step2/../new" -q
    next; expect_refusal "overlap: export d/global_step4 d/global_step4/../.. (dot-dot contains)" "$w" "$w/d/global_step4" "$w/d/global_step4/../.." -- "$CKPT" export "$w/d/global_step4" "$w/d/global_step4/../.." -q
    next; ln -s d "$w/dlink"
    expect_refusal "overlap: export d dlink/out (inside, through a symlink)" "$w" "$w/d" "$w/dlink/out" -- "$CKPT" export "$w/d" "$w/dlink/out" -q
    if [[ $HAVE_MOUNT_NS == 0 ]]; then
        skip "overlap: bind mounts of the input" "unshare -m / mount not permitted here"
        return
    fi
    # a bind mount is the same folder under an unrelated path: only device/inode can tell
    next; mkdir "$w/bind"; ns "mount --bind '$w/d' '$w/bind'"
    expect_refusal "overlap: output is a bind mount of the input folder" "$w" "$w/d" "$w/bind" -- \
        "${NS[@]}" "$CKPT" export "$w/d" "$w/bind" -q
    next; mkdir "$w/bind"; ns "mount --bind '$w/d' '$w/bind'"
    expect_refusal "overlap: output inside a bind mount of the input folder" "$w" "$w/d" "$w/bind/out" -- \
        "${NS[@]}" "$CKPT" export "$w/d" "$w/bind/out" -q
    next; mkdir "$w/bind"; ns "mount --bind '$w/d' '$w/bind'"
    expect_refusal "overlap: output is a bind mount of the folder holding the input" "$w" "$w/d/global_step4" "$w/bind" -- \
        "${NS[@]}" "$CKPT" export "$w/d/global_step4" "$w/bind" -q
}

# ---------------------------------------------------------------------------------------------
# 5. Non-regular inputs: refused quickly (a FIFO would block a plain open() forever).

# expect_not_regular NAME PATH W -- CMD...
expect_not_regular() {
    local name=$1 path=$2 w=$3 rc; shift 3; [[ $1 == -- ]] && shift
    manifest "$w" >"$w.before"
    timeout -k 2 10 "$@" >/dev/null 2>"$w.err" </dev/null; rc=$?
    manifest "$w" >"$w.after"
    if [[ $rc == 124 || $rc == 137 ]]; then fail "$name" "still running after 10 s (blocked on the file?)"; return; fi
    [[ $rc == 1 ]] || { fail "$name" "exit $rc, expected 1: $(first_line "$w.err")"; return; }
    cmp -s "$w.before" "$w.after" || { fail "$name" "something was written: $(diff "$w.before" "$w.after" | grep '^[<>]' | head -3 | tr '\n' ' ')"; return; }
    one_error_line "$w.err" || { fail "$name" "$WHY"; return; }
    local line; line=$(head -n 1 "$w.err")
    names "$path" "$line" || { fail "$name" "the message does not name $path: $line"; return; }
    [[ ${line,,} == *"not a regular file"* ]] || { fail "$name" "the message does not say 'not a regular file': $line"; return; }
    ok "$name"
}

run_not_regular() {
    local w=$SCRATCH/nonreg
    mkdir -p "$w"
    mkfifo "$w/fifo" || { fail "non-regular: setup" "mkfifo failed"; return; }
    "${LIB[@]}" socket "$w/sock" || { fail "non-regular: setup" "cannot make a socket"; return; }
    expect_not_regular "non-regular: inspect FIFO" "$w/fifo" "$w" -- "$CKPT" inspect "$w/fifo"
    expect_not_regular "non-regular: scan FIFO" "$w/fifo" "$w" -- "$CKPT" scan "$w/fifo"
    expect_not_regular "non-regular: stats FIFO" "$w/fifo" "$w" -- "$CKPT" stats -q "$w/fifo"
    expect_not_regular "non-regular: export FIFO out.safetensors" "$w/fifo" "$w" -- "$CKPT" export "$w/fifo" "$w/out.safetensors" -q
    expect_not_regular "non-regular: export FIFO into a new folder" "$w/fifo" "$w" -- "$CKPT" export "$w/fifo" "$w/newdir/out.safetensors" -q
    expect_not_regular "non-regular: inspect /dev/zero" /dev/zero "$w" -- "$CKPT" inspect /dev/zero
    expect_not_regular "non-regular: export /dev/zero" /dev/zero "$w" -- "$CKPT" export /dev/zero "$w/z.safetensors" -q
    expect_not_regular "non-regular: inspect UNIX socket" "$w/sock" "$w" -- "$CKPT" inspect "$w/sock"
    expect_not_regular "non-regular: scan UNIX socket" "$w/sock" "$w" -- "$CKPT" scan "$w/sock"
}

# ---------------------------------------------------------------------------------------------
# 6. A folder without a checkpoint: one line saying so, not the OS's "Is a directory".

run_no_checkpoint() {
    local w=$SCRATCH/nockpt rc name line
    mkdir -p "$w/readme" "$w/empty"
    echo "not a checkpoint" >"$w/readme/README.txt"
    for name in readme empty; do
        for op in inspect export; do
            local case="no checkpoint: $op folder-with-$name"
            [[ $name == empty ]] && case="no checkpoint: $op empty folder"
            manifest "$w" >"$w.before"
            if [[ $op == inspect ]]; then
                timeout -k 2 20 "$CKPT" inspect "$w/$name" >/dev/null 2>"$w.err"; rc=$?
            else
                timeout -k 2 20 "$CKPT" export "$w/$name" "$w/out-$name" -q >/dev/null 2>"$w.err"; rc=$?
            fi
            manifest "$w" >"$w.after"
            line=$(head -n 1 "$w.err")
            if [[ $rc != 1 ]]; then fail "$case" "exit $rc, expected 1: $line"
            elif ! one_error_line "$w.err"; then fail "$case" "$WHY"
            elif [[ ${line,,} != *"no checkpoint"* ]]; then fail "$case" "does not say 'no checkpoint': $line"
            elif [[ ${line,,} == *"is a directory"* ]]; then fail "$case" "says 'is a directory': $line"
            elif ! names "$w/$name" "$line"; then fail "$case" "does not name the folder: $line"
            elif ! cmp -s "$w.before" "$w.after"; then fail "$case" "something was written (output folder left?): $(diff "$w.before" "$w.after" | grep '^[<>]' | head -3 | tr '\n' ' ')"
            else ok "$case"; fi
        done
    done
}

# ---------------------------------------------------------------------------------------------
# An unreadable tag (issue 36): the latest tag lost a rank file. Every write path refuses it with
# exit 1 and one error line saying what is missing, and writes nothing at all.
run_unreadable_tag() {
    local w=$SCRATCH/unreadable rc case line op
    fresh_small "$w"
    rm "$w/d/global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"
    for op in "export d OUT" "export d OUT --max-shard-size 100KB" "export d OUT.safetensors" \
              "universal d OUT --inject-missing-state" "slim d OUT" "stats d" "diff d --tag-b global_step2 d"; do
        case="unreadable tag: ckpt ${op//OUT/out}"
        manifest "$w" >"$w.before"
        # shellcheck disable=SC2086 # the words of $op are the arguments
        (cd "$w" && timeout -k 2 30 "$CKPT" ${op//OUT/out} -q >/dev/null 2>"$w.err"); rc=$?
        manifest "$w" >"$w.after"
        line=$(head -n 1 "$w.err")
        if [[ $rc != 1 ]]; then fail "$case" "exit $rc, expected 1: $line"
        elif ! one_error_line "$w.err"; then fail "$case" "$WHY"
        elif [[ $line != *"rank 1"* ]]; then fail "$case" "does not say what is missing: $line"
        elif ! cmp -s "$w.before" "$w.after"; then fail "$case" "something was written: $(diff "$w.before" "$w.after" | grep '^[<>]' | head -3 | tr '\n' ' ')"
        else ok "$case"; fi
    done
}

# ---------------------------------------------------------------------------------------------
# 8. Read-only inputs: permission bits (as an unprivileged user: root ignores them) and a
# read-only bind mount (binds root too). Every read-only operation behaves as on a writable
# copy, and nothing in the input changes.

# ro_ops DS PT OUTDIR: one line per operation: "name<TAB>args..." (DS/PT/OUT substituted)
ro_ops() {
    local ds=$1 pt=$2 o=$3
    printf '%s\n' \
        "inspect-ds	inspect $ds" \
        "inspect-ds-json	inspect $ds --json" \
        "inspect-tag	inspect $ds/global_step4" \
        "inspect-pt	inspect $pt" \
        "stats-ds	stats $ds -q" \
        "stats-pt	stats $pt -q" \
        "diff-tags	diff $ds/global_step2 $ds/global_step4 -q" \
        "diff-files	diff $pt $pt -q" \
        "scan-pt	scan $pt" \
        "scan-ds	scan $ds/global_step4/mp_rank_00_model_states.pt" \
        "export-ds	export $ds $o/ds-export -q" \
        "export-pt	export $pt $o/pt.safetensors -q"
}

# run_ro_ops LABEL DS PT OUTDIR [runner...]: runs every op, writes "name rc" lines to LABEL.rc
run_ro_ops() {
    local label=$1 ds=$2 pt=$3 o=$4 name args; shift 4
    : >"$SCRATCH/ro/$label.rc"
    while IFS=$'\t' read -r name args; do
        # shellcheck disable=SC2086  # args are space-separated, paths have no spaces
        timeout -k 2 60 "$@" "$CKPT" $args >/dev/null 2>"$SCRATCH/ro/$label.$name.err"
        echo "$name $?" >>"$SCRATCH/ro/$label.rc"
    done < <(ro_ops "$ds" "$pt" "$o")
}

# compare_ro LABEL: each op's exit status equals the writable baseline, and no "error:" line
compare_ro() {
    local label=$1 name rc brc bad=""
    while read -r name rc; do
        brc=$(awk -v n="$name" '$1 == n { print $2 }' "$SCRATCH/ro/base.rc")
        if [[ $rc != "$brc" ]] || grep -qi 'error:' "$SCRATCH/ro/$label.$name.err"; then
            bad+="$name: exit $rc (writable copy: $brc) $(first_line "$SCRATCH/ro/$label.$name.err"); "
        fi
    done <"$SCRATCH/ro/$label.rc"
    WHY=$bad
    [[ -z $bad ]]
}

run_read_only() {
    local R=$SCRATCH/ro
    mkdir -p "$R/base-out"
    fresh_small "$R/base"
    # baseline on a writable copy: what each operation returns when nothing is read-only
    run_ro_ops base "$R/base/d" "$R/base/m.pt" "$R/base-out"
    local name rc
    while read -r name rc; do
        [[ $rc == 0 ]] || fail "read-only: baseline $name" "exit $rc on a writable copy: $(first_line "$R/base.$name.err")"
    done <"$R/base.rc"

    # chmod -R a-w copy
    fresh_small "$R/perm"
    chmod -R a-w "$R/perm"
    manifest "$R/perm" >"$R/perm.before"
    local runner=() who="root (permission bits do not bind root)"
    if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$CKPT" 2>/dev/null; then
        runner=(setpriv --reuid=65534 --regid=65534 --clear-groups)
        who="user nobody"
    fi
    mkdir -p "$R/perm-out"; chmod 777 "$R/perm-out"
    run_ro_ops perm "$R/perm/d" "$R/perm/m.pt" "$R/perm-out" "${runner[@]}"
    manifest "$R/perm" >"$R/perm.after"
    if ! compare_ro perm; then fail "read-only: chmod -R a-w input, as $who" "$WHY"
    elif ! cmp -s "$R/perm.before" "$R/perm.after"; then fail "read-only: chmod -R a-w input, as $who" "the input changed"
    else ok "read-only: chmod -R a-w input, as $who ($(lines "$R/perm.rc") operations)"; fi

    # read-only bind mount
    if [[ $HAVE_MOUNT_NS == 0 ]]; then
        skip "read-only: bind mount" "unshare -m / mount not permitted here"
        return
    fi
    fresh_small "$R/rbsrc"; mkdir -p "$R/rb" "$R/rb-out"
    manifest "$R/rbsrc" >"$R/rb.before"
    ns "mount --bind '$R/rbsrc' '$R/rb' && mount -o remount,ro,bind '$R/rb' && ! touch '$R/rb/probe' 2>/dev/null"
    run_ro_ops rb "$R/rb/d" "$R/rb/m.pt" "$R/rb-out" "${NS[@]}"
    manifest "$R/rbsrc" >"$R/rb.after"
    if grep -q ' 99$' "$R/rb.rc"; then skip "read-only: bind mount" "mount --bind / remount,ro failed"
    elif ! compare_ro rb; then fail "read-only: read-only bind mount input" "$WHY"
    elif ! cmp -s "$R/rb.before" "$R/rb.after"; then fail "read-only: read-only bind mount input" "the input changed"
    else ok "read-only: read-only bind mount input ($(lines "$R/rb.rc") operations)"; fi
}

# ---------------------------------------------------------------------------------------------
# Large inputs, made at test time.

make_inputs() {
    local B=$SCRATCH/big t=$SECONDS
    mkdir -p "$B"
    BIG_PT=$B/model.pt
    BIG_DS=$B/ds
    "${LIB[@]}" make-torch "$BIG_PT" 300 1234 >"$B/pt.log" 2>&1 || { cat "$B/pt.log" | tail -5; return 1; }
    # bench/make_large_checkpoint.py needs DeepSpeed's classes to load its templates; the
    # wrapper provides stand-ins. hidden 1024 + the smallest layer count: ~45M params, ~600 MB.
    "$PY" "$HERE/make_large_ds.py" --stage 2 --params 4e7 --hidden 1024 "$BIG_DS" >"$B/ds.log" 2>&1 || { tail -5 "$B/ds.log"; return 1; }
    manifest "$BIG_PT" >"$SCRATCH/input-pt.manifest"
    manifest "$BIG_DS" >"$SCRATCH/input-ds.manifest"
    info "inputs: $(du -sh "$BIG_PT" | cut -f1) torch.save file, $(du -sh "$BIG_DS" | cut -f1) DeepSpeed ZeRO-2 checkpoint, made in $((SECONDS - t)) s"
}

# ---------------------------------------------------------------------------------------------
# Reference runs: each operation once, undisturbed. Gives the expected output (manifest, bytes)
# the kill points and the race compare with.

run_reference() {
    local name dir out rc t
    for name in $(op_names); do
        op_load "$name"
        dir=$SCRATCH/ref-$name; mkdir -p "$dir"; out=$dir/$OP_OUTNAME
        op_cmd "$(input_path "$OP_INPUT")" "$out"
        t=$(date +%s%N)
        "${CMD[@]}" >/dev/null 2>"$dir.err"; rc=$?
        t=$((($(date +%s%N) - t) / 1000000))
        REF_OK[$name]=0
        if [[ $rc != 0 ]]; then fail "reference $name" "exit $rc: $(first_line "$dir.err")"; continue; fi
        if [[ -n $(partials "$dir") ]]; then fail "reference $name" "partial files left: $(partials "$dir" | head -3 | tr '\n' ' ')"; continue; fi
        validate "$OP_VALIDATOR" "$out" || { fail "reference $name" "$WHY"; continue; }
        manifest "$out" >"$SCRATCH/ref-$name.manifest"
        REF_BYTES[$name]=$(find "$out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
        REF_OK[$name]=1
        ok "reference $name ($((REF_BYTES[$name] / 1000000)) MB in ${t} ms)"
    done
}

# ---------------------------------------------------------------------------------------------
# 10. kill -9 at several points. After each: input unchanged, no final output (or, if the job
# had already finished, a complete one), and a rerun cleans the stale partials and succeeds.

# kill_case NAME LABEL TRIGGER
kill_case() {
    local name=$1 label=$2 trigger=$3 case="kill -9 $1 at $2"
    local dir=$SCRATCH/kill-$name-$label out sent rc finished elapsed progress hung
    mkdir -p "$dir"; out=$dir/$OP_OUTNAME
    op_cmd "$(input_path "$OP_INPUT")" "$out"
    read -r sent rc finished elapsed progress hung < <("${LIB[@]}" run --at "$trigger" --signal KILL \
        --watch "$dir" --pidfile "$dir.pid" --stderr "$dir.err1" -- "${CMD[@]}")
    rm -f "$dir.pid"
    [[ -n ${rc:-} ]] || { fail "$case" "faultlib.py run failed"; return; }
    input_unchanged "$OP_INPUT" || { fail "$case" "THE INPUT CHANGED (sha256)"; return; }
    local note left
    left=$(partials "$dir")
    if [[ $finished == 1 || $rc == 0 ]]; then
        # it won the race with the kill: then it must have finished properly
        note="finished before the kill (exit $rc)"
        [[ $rc == 0 ]] || { fail "$case" "ended before the kill with exit $rc: $(first_line "$dir.err1")"; return; }
        [[ -z $left ]] || { fail "$case" "finished, but left partial files: $left"; return; }
        validate "$OP_VALIDATOR" "$out" || { fail "$case" "finished, but: $WHY"; return; }
    else
        note="killed at $((progress / 1000000)) MB written, $(echo "$left" | grep -c .) partial(s) left"
        local fin; fin=$(finals "$dir")
        [[ -z $fin ]] || { fail "$case" "a file under a final name exists after kill -9: $(echo "$fin" | head -3 | tr '\n' ' ')"; return; }
    fi
    # rerun into the same folder
    "${CMD[@]}" >/dev/null 2>"$dir.err2"; rc=$?
    [[ $rc == 0 ]] || { fail "$case" "rerun: exit $rc: $(first_line "$dir.err2")"; return; }
    local p
    for p in $left; do
        if ! grep -qi 'removed stale partial output' "$dir.err2" || ! grep -qF "$(basename "$p")" "$dir.err2"; then
            fail "$case" "rerun did not report removing $p (stderr: $(head -c 200 "$dir.err2" | tr '\n' '|'))"; return
        fi
    done
    [[ -z $(partials "$dir") ]] || { fail "$case" "rerun left partial files: $(partials "$dir" | tr '\n' ' ')"; return; }
    validate "$OP_VALIDATOR" "$out" || { fail "$case" "rerun output: $WHY"; return; }
    manifest "$out" >"$dir.manifest"
    cmp -s "$dir.manifest" "$SCRATCH/ref-$name.manifest" || { fail "$case" "rerun output differs from the reference run's"; return; }
    input_unchanged "$OP_INPUT" || { fail "$case" "THE INPUT CHANGED (sha256) after the rerun"; return; }
    ok "$case ($note; rerun clean)"
    rm -rf "$dir"
}

run_kills() {
    local name exp
    for name in $(op_names); do
        op_load "$name"
        [[ ${REF_OK[$name]} == 1 ]] || { skip "kill -9 $name" "no reference run"; continue; }
        exp=${REF_BYTES[$name]}
        kill_case "$name" "50ms" "time:0.05"
        kill_case "$name" "30%" "bytes:$((exp * 30 / 100))"
        kill_case "$name" "full-size" "bytes:$((exp * 999 / 1000))" # all bytes written: verifying/committing
    done
}

# ---------------------------------------------------------------------------------------------
# 10b. kill -9 of an export that replaces an earlier one (--overwrite): at every point the folder
# holds the old complete set (the sharded export) or the new complete set (one model.safetensors),
# never a mix; a rerun removes the staging folder and leaves the new set.

replace_kill_case() {
    local label=$1 trigger=$2 case="kill -9 replacing export at $1"
    local dir=$SCRATCH/replace-$label out sent rc finished elapsed progress hung state
    mkdir -p "$dir"; out=$dir/exported
    cp -al "$SCRATCH/ref-export-sharded/exported" "$out" || { fail "$case" "cannot copy the old set"; return; }
    op_load export-folder; op_cmd "$(input_path "$OP_INPUT")" "$out"; CMD+=(--overwrite)
    read -r sent rc finished elapsed progress hung < <("${LIB[@]}" run --at "$trigger" --signal KILL \
        --watch "$dir" --pidfile "$dir.pid" --stderr "$dir.err1" -- "${CMD[@]}")
    rm -f "$dir.pid"
    [[ -n ${rc:-} ]] || { fail "$case" "faultlib.py run failed"; return; }
    input_unchanged ds || { fail "$case" "THE INPUT CHANGED (sha256)"; return; }
    manifest "$out" >"$dir.manifest"
    if cmp -s "$dir.manifest" "$SCRATCH/ref-export-sharded.manifest"; then state="old set"
    elif cmp -s "$dir.manifest" "$SCRATCH/ref-export-folder.manifest"; then state="new set"
    else fail "$case" "the folder holds neither the old nor the new export (exit $rc): $(ls "$out" | head -5 | tr '\n' ' ')"; return; fi
    [[ $rc == 0 && $state == "old set" ]] && { fail "$case" "finished, but the folder holds the old set"; return; }
    local left; left=$(partials "$dir")
    "${CMD[@]}" >/dev/null 2>"$dir.err2"; rc=$?
    [[ $rc == 0 ]] || { fail "$case" "rerun: exit $rc: $(first_line "$dir.err2")"; return; }
    local p
    for p in $left; do
        grep -qF "removed stale partial output $p" "$dir.err2" || { fail "$case" "rerun did not report removing $p"; return; }
    done
    [[ -z $(partials "$dir") ]] || { fail "$case" "rerun left partials: $(partials "$dir" | tr '\n' ' ')"; return; }
    manifest "$out" >"$dir.manifest"
    cmp -s "$dir.manifest" "$SCRATCH/ref-export-folder.manifest" || { fail "$case" "rerun output differs from the reference export"; return; }
    ok "$case (killed with the $state in place, $(echo "$left" | grep -c .) partial(s) left; rerun clean)"
    rm -rf "$dir"
}

run_replace_kills() {
    if [[ ${REF_OK[export-folder]} != 1 || ${REF_OK[export-sharded]} != 1 ]]; then
        skip "kill -9 replacing export" "no reference runs"; return
    fi
    # the old set is hard-linked in, so the watched bytes start at its size
    local old=${REF_BYTES[export-sharded]} new=${REF_BYTES[export-folder]}
    replace_kill_case "50ms" "time:0.05"
    replace_kill_case "30%" "bytes:$((old + new * 30 / 100))"
    replace_kill_case "full-size" "bytes:$((old + new * 999 / 1000))" # verifying, or swapping
}

# ---------------------------------------------------------------------------------------------
# 3. SIGINT / SIGTERM / SIGHUP: exit within 1 s with 128+n, and nothing left at all (the folder
# the job created included).

signal_case() {
    local name=$1 sig=$2 trigger=$3 label=$4 case="signal $2 $1 at $4"
    local dir=$SCRATCH/sig-$name-$sig-$label out sent rc finished elapsed progress hung want
    mkdir -p "$dir"; out=$dir/$OP_OUTNAME
    op_cmd "$(input_path "$OP_INPUT")" "$out"
    read -r sent rc finished elapsed progress hung < <("${LIB[@]}" run --at "$trigger" --signal "$sig" --wait 10 \
        --watch "$dir" --pidfile "$dir.pid" --stderr "$dir.err" -- "${CMD[@]}")
    rm -f "$dir.pid"
    [[ -n ${rc:-} ]] || { fail "$case" "faultlib.py run failed"; return; }
    case $sig in INT) want=130 ;; TERM) want=143 ;; HUP) want=129 ;; esac
    input_unchanged "$OP_INPUT" || { fail "$case" "THE INPUT CHANGED (sha256)"; return; }
    if [[ $sent == 0 || ($rc == 0 && $hung == 0) ]]; then
        skip "$case" "the job finished (exit $rc) before the signal could be sent; input too small?"
        rm -rf "$dir"; return
    fi
    [[ $hung == 0 ]] || { fail "$case" "still running 10 s after the signal"; return; }
    [[ $rc == "$want" ]] || { fail "$case" "exit $rc, expected $want ($(first_line "$dir.err"))"; return; }
    ((elapsed <= 1000)) || { fail "$case" "took $elapsed ms to exit (limit 1000)"; return; }
    local left; left=$(find "$dir" -mindepth 1)
    [[ -z $left ]] || { fail "$case" "left behind: $(echo "$left" | head -3 | tr '\n' ' ')"; return; }
    ok "$case (exit $rc after $elapsed ms, nothing left)"
    rm -rf "$dir"
}

run_signals() {
    local name exp sig
    for name in $(op_names); do
        op_load "$name"
        [[ ${REF_OK[$name]} == 1 ]] || { skip "signals $name" "no reference run"; continue; }
        exp=${REF_BYTES[$name]}
        signal_case "$name" INT "time:0.05" "50ms"   # still reading: no output file yet, maybe
        for sig in INT TERM HUP; do
            signal_case "$name" "$sig" "bytes:$((exp * 10 / 100))" "10%"
        done
    done
}

# ---------------------------------------------------------------------------------------------
# 7. Disk full: a 20 MB tmpfs as the output folder. One line with "No space left on device",
# nothing left in the tmpfs.

run_disk_full() {
    local name
    if [[ $HAVE_MOUNT_NS == 0 ]]; then skip "disk full" "unshare -m / mount not permitted here"; return; fi
    for name in $(op_names); do
        op_load "$name"
        local case="disk full $name" d=$SCRATCH/full-$name rc
        mkdir -p "$d"
        op_cmd "$(input_path "$OP_INPUT")" "$d/$OP_OUTNAME"
        # stderr and the leftover listing are taken inside the namespace: the tmpfs dies with it
        ns "mount -t tmpfs -o size=20m tmpfs '$d'"
        "${NS[@]}" bash -c '"$@" >/dev/null 2>"$0.err"; rc=$?; find "$0" -mindepth 1 >"$0.left"; exit $rc' "$d" "${CMD[@]}"
        rc=$?
        if [[ $rc == 99 ]]; then skip "$case" "mounting a tmpfs failed"; continue; fi
        input_unchanged "$OP_INPUT" || { fail "$case" "THE INPUT CHANGED (sha256)"; continue; }
        if [[ $rc != 1 ]]; then fail "$case" "exit $rc, expected 1: $(first_line "$d.err")"
        elif ! one_error_line "$d.err"; then fail "$case" "$WHY"
        elif ! grep -qi 'no space' "$d.err"; then fail "$case" "does not say 'No space left on device': $(first_line "$d.err")"
        elif [[ -s $d.left ]]; then fail "$case" "left in the full file system: $(head -3 "$d.left" | tr '\n' ' ')"
        else ok "$case"; fi
    done
}

# ---------------------------------------------------------------------------------------------
# 9. Race: two exports of the same checkpoint with different layouts, same output folder, same
# moment, both allowed to replace what they find (--overwrite). One wins and the other says
# another ckpt is writing there, or both succeed in turn (the second replacing the first); the
# folder always holds exactly one of the two exports, never a mix.

race_case() {
    local a=$1 b=$2 round=$3 case="race $1 vs $2 #$3"
    local dir=$SCRATCH/race-$round out in rca rcb
    mkdir -p "$dir"; out=$dir/exported
    op_load "$a"; op_cmd "$(input_path "$OP_INPUT")" "$out"; local cmda=("${CMD[@]}" --overwrite)
    op_load "$b"; op_cmd "$(input_path "$OP_INPUT")" "$out"; local cmdb=("${CMD[@]}" --overwrite)
    if ((round % 2)); then
        "${cmda[@]}" >/dev/null 2>"$dir.a.err" & local pa=$!
        "${cmdb[@]}" >/dev/null 2>"$dir.b.err" & local pb=$!
    else
        "${cmdb[@]}" >/dev/null 2>"$dir.b.err" & local pb=$!
        "${cmda[@]}" >/dev/null 2>"$dir.a.err" & local pa=$!
    fi
    BG_PIDS=("$pa" "$pb")
    wait "$pa"; rca=$?
    wait "$pb"; rcb=$?
    BG_PIDS=()
    input_unchanged "$OP_INPUT" || { fail "$case" "THE INPUT CHANGED (sha256)"; return; }
    local want outcome
    loser_ok() { one_error_line "$1" && grep -qi 'another ckpt' "$1" || { WHY="loser's message: $(head -c 300 "$1" | tr '\n' '|')"; return 1; }; }
    if [[ $rca == 0 && $rcb == 0 ]]; then want="$a $b"; outcome="both succeeded in turn"
    elif [[ $rca == 0 && $rcb == 1 ]]; then loser_ok "$dir.b.err" || { fail "$case" "$WHY"; return; }; want=$a; outcome="$a won, $b refused"
    elif [[ $rca == 1 && $rcb == 0 ]]; then loser_ok "$dir.a.err" || { fail "$case" "$WHY"; return; }; want=$b; outcome="$b won, $a refused"
    else fail "$case" "exits $rca and $rcb: $(first_line "$dir.a.err") / $(first_line "$dir.b.err")"; return; fi
    [[ -z $(partials "$dir") ]] || { fail "$case" "partial files left: $(partials "$dir" | tr '\n' ' ')"; return; }
    validate hf_folder "$out" || { fail "$case" "$outcome, but the folder is not one consistent export: $WHY"; return; }
    manifest "$out" >"$dir.manifest"
    local w match=""
    for w in $want; do cmp -s "$dir.manifest" "$SCRATCH/ref-$w.manifest" && match=$w; done
    [[ -n $match ]] || { fail "$case" "$outcome, but the folder equals neither reference export ($want)"; return; }
    ok "$case ($outcome; folder = $match's export)"
    rm -rf "$dir"
}

run_races() {
    local pair a b r
    for pair in "${RACE_PAIRS[@]}"; do
        read -r a b <<<"$pair"
        if [[ ${REF_OK[$a]} != 1 || ${REF_OK[$b]} != 1 ]]; then skip "race $a vs $b" "no reference run"; continue; fi
        for r in 1 2 3 4; do race_case "$a" "$b" "$r"; done
    done
}

# ---------------------------------------------------------------------------------------------
info "ckpt: $CKPT; scratch: $SCRATCH; mount namespace: $([[ $HAVE_MOUNT_NS == 1 ]] && echo yes || echo no)"
declare -A REF_OK=() REF_BYTES=()
section overlap && run_overlap
section not_regular && run_not_regular
section no_checkpoint && run_no_checkpoint
section unreadable_tag && run_unreadable_tag
section read_only && run_read_only
if section 'reference|kill|signal|disk_full|race'; then
    if make_inputs; then
        run_reference
        section kill && { run_kills; run_replace_kills; }
        section signal && run_signals
        section disk_full && run_disk_full
        section race && run_races
    else
        fail "large inputs" "could not make them (see above)"
    fi
fi
info "took $((SECONDS - T_START)) s"
echo "faults: $PASS passed, $FAILED failed, $SKIPPED skipped"
((FAILED == 0))
