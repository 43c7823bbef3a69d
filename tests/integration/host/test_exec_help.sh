#!/usr/bin/env bash
# `loom exec start --help` lists every flag the dlicmd parser accepts (each
# `strcmp(flag, "--X")` in host/exec/dlicmd.c), and the parser accepts every
# flag the help lists, with a value of the form the help gives.
LOOM=$1
SRC=$3
. "$(dirname "$0")/../lib.sh"

help=$("$LOOM" exec start --help 2>&1)
expect_eq "exec start --help exits 0" "$?" "0"
expect_contains "it is the start command's help" "$help" "usage: loom exec start"

parser_flags=$(grep -oE 'strcmp\(flag, "--[A-Za-z-]+"\)' "$SRC/host/exec/dlicmd.c" |
               sed -E 's/.*"(--[^"]+)".*/\1/' | sort -u)
expect_ok "the parser's flags are found in its source" test -n "$parser_flags"
for f in $parser_flags; do
    if printf '%s\n' "$help" | grep -qE -- "^  $f( |\$)"; then pass; else fail "the help does not list $f"; fi
done

# Every listed flag, with a value of its listed form, gets past the parser:
# the command then fails only because no host listens on port 1.
mkdir -p "$WORK/model" && echo 'echo hi' >"$WORK/model/m.sh"
listed=0
while read -r flag form _; do
    listed=$((listed + 1))
    case "$form" in
        *"|"*) value=${form%%|*} ;;
        KEY=VALUE) value=A=B ;;
        N|K|P) value=1 ;;
        DIR) value=$WORK/model ;;
        FRAMEWORK) value=command ;;
        'type=fs[,data_path=P]') value=type=fs,data_path=p ;;
        maxWorkers=N) value=maxWorkers=2 ;;
        X.Y) value=3.11 ;;
        LEVEL) value=info ;;
        *) value=x ;;
    esac
    base=(--exec-start command --model-main m.sh)
    case "$flag" in
        --exec-start) base=(--model-main m.sh) ;;
        --model-main) base=(--exec-start command); value=m.sh ;;
    esac
    "$LOOM" --host http://127.0.0.1:1 exec start "${base[@]}" "$flag" "$value" >"$WORK/out" 2>&1
    expect_contains "the parser accepts $flag $value" "$(cat "$WORK/out")" "cannot reach the loom host"
done < <(printf '%s\n' "$help" | grep -E '^  --[A-Za-z]')
expect_eq "as many flags listed as the parser has" "$listed" "$(printf '%s\n' $parser_flags | wc -l)"

finish
