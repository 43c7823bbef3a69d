#!/usr/bin/env bash
# The host's home on a full disk (a small tmpfs): a job that ends keeps its
# real end (the store's reserve, then memory until the disk has room), a
# stop settles, a delete works even when SQLite's WAL cannot grow, and once
# space returns every state is written and survives a SIGKILL of the host.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" = 0 ] || { echo "skipped: mounting a tmpfs needs root"; exit 77; }
mkdir -p "$LOOM_HOME"
if ! mount -t tmpfs -o size=48m,mode=0700 loom-full-disk "$LOOM_HOME" 2>/dev/null; then
    echo "skipped: cannot mount a tmpfs here"; exit 77
fi
cleanup_mount() {
    if [ -n "$HOST_PID" ]; then kill -9 "$HOST_PID" 2>/dev/null; wait "$HOST_PID" 2>/dev/null; fi
    HOST_PID=
    umount -l "$LOOM_HOME" 2>/dev/null
    cleanup
}
trap cleanup_mount EXIT

# Each job says it is ready, then waits for the test's word; B leaves a
# result of 2 MiB, the room a user frees by deleting it.
mkdir -p "$WORK/model"
cat > "$WORK/model/wait.sh" <<'SH'
#!/bin/sh
[ "$1" = big ] && head -c 2097152 /dev/zero > "$RESULT_DIR/result.bin"
touch "$RESULT_DIR/ready"
while [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done
echo done
SH
chmod +x "$WORK/model/wait.sh"

start_host --cpu-slots 4
submit() {
    "$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main wait.sh "$@" |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
A=$(submit); B=$(submit -- big); C=$(submit)
ready_file() { find "$LOOM_HOME/execs/$1" -name ready 2>/dev/null | head -n1; }
for _ in $(seq 1 600); do
    [ -n "$(ready_file "$A")" ] && [ -n "$(ready_file "$B")" ] && [ -n "$(ready_file "$C")" ] && break
    sleep 0.05
done
expect_ok "three jobs run" test -n "$(ready_file "$A")" -a -n "$(ready_file "$B")" -a -n "$(ready_file "$C")"
go() { touch "$(dirname "$(ready_file "$1")")/go"; }
fill() { # every byte of the tmpfs, whatever the block size
    dd if=/dev/zero of="$LOOM_HOME/fill-$1-big" bs=1M 2>/dev/null
    dd if=/dev/zero of="$LOOM_HOME/fill-$1-small" bs=4k 2>/dev/null
    :
}
state_of() { "$LOOM" --json exec view "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null; }
wait_state() { # wait_state ID STATE
    for _ in $(seq 1 600); do [ "$(state_of "$1")" = "$2" ] && return 0; sleep 0.05; done
    return 1
}

fill 1
expect_eq "the disk is full" "$(df --output=avail -B1 "$LOOM_HOME" | tail -n1 | tr -d ' ')" "0"
go "$A"
expect_ok "a job that ends on a full disk is FINISHED (the reserve)" wait_state "$A" FINISHED
expect_ok "the reserve was given up for it" test ! -e "$LOOM_HOME/loom.db-reserve"

fill 2 # the reserve's room too
go "$C"
expect_ok "a job that ends when even the reserve is used is FINISHED (kept in memory)" wait_state "$C" FINISHED
expect_fails "stopping it says it already ended" "$LOOM" exec stop "$C"
expect_contains "  as FINISHED" "$(cat "$WORK/out")" "already FINISHED"
r=$("$LOOM" --json exec list)
expect_contains "the list shows it FINISHED too" "$r" "\"id\":\"$C\""
expect_eq "  with its state" "$(echo "$r" | python3 -c "import json,sys; print([e['state'] for e in json.load(sys.stdin) if e['id']=='$C'][0])")" "FINISHED"

go "$B"
expect_ok "B ends" wait_state "$B" FINISHED
expect_ok "deleting an exec works on a full disk" "$LOOM" exec delete "$B"
expect_fails "  and it is gone" "$LOOM" exec view "$B"
expect_ok "  with its folder" test ! -e "$LOOM_HOME/execs/$B"

# Space returns: what waited is written, and the reserve is made again.
rm -f "$LOOM_HOME"/fill-*
# (the store makes the reserve again only once nothing waits to be written)
wait_until 10 test -e "$LOOM_HOME/loom.db-reserve"
expect_ok "the reserve is back, after the waiting state was written" test -e "$LOOM_HOME/loom.db-reserve"
stop_host KILL
start_host --cpu-slots 4
expect_eq "after a SIGKILL and a restart, A is FINISHED" "$(state_of "$A")" "FINISHED"
expect_eq "  and C" "$(state_of "$C")" "FINISHED"
expect_fails "  and B stays deleted" "$LOOM" exec view "$B"
stop_host TERM
finish
