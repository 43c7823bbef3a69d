#!/usr/bin/env bash
# `loom demo` keeps its state in --home or LOOM_HOME when one is given, and
# refuses, naming the home and the host, a home that a running host holds
# (the host keeps an flock on HOME/loom.lock), before it touches anything
# there; `loom serve` refuses such a home the same way. The full demo runs
# once here (one epoch), on a home a stopped host left behind.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
export TMPDIR=$WORK

start_host
HOST_HOME=$LOOM_HOME
log_lines() { wc -l <"$HOST_HOME/loom.log"; }
before=$(log_lines)

expect_fails "demo on a held LOOM_HOME" timeout 20 "$LOOM" demo --epochs 1
out=$(cat "$WORK/out")
expect_contains "names the home and the host" "$out" \
    "$HOST_HOME: another loom host is using this home directory (pid $HOST_PID at $URL)"
expect_contains "and says what to do" "$out" "give it another --home or LOOM_HOME"
expect_not_contains "no embedded host was started" "$out" "== loom demo"
expect_fails "demo on a held --home" env -u LOOM_HOME "$LOOM" --home "$HOST_HOME" demo
expect_contains "names the host" "$(cat "$WORK/out")" "(pid $HOST_PID at $URL)"
expect_fails "a second serve on a held home" "$LOOM" serve --listen 127.0.0.1:0
expect_contains "names the host" "$(cat "$WORK/out")" "(pid $HOST_PID at $URL)"
expect_eq "nothing was written to the running host's log" "$(log_lines)" "$before"
expect_eq "no temporary home was made instead" "$(ls -d "$WORK"/loom-demo-* 2>/dev/null | wc -l)" "0"
r=$(http GET /loom/v1/health)
expect_contains "the running host is unharmed" "$r" '"status":"ok"'
stop_host

# The host is gone: its home is free, with an admin whose password the
# demo does not know.
out=$(timeout 250 "$LOOM" demo --epochs 1 2>&1)
rc=$?
expect_eq "demo in LOOM_HOME exits 0" "$rc" "0"
expect_contains "it says where its state is" "$out" "state in $HOST_HOME"
expect_contains "and that it kept it" "$out" "state kept in $HOST_HOME"
expect_contains "it finished" "$out" "== demo finished"
expect_eq "no temporary home was made" "$(ls -d "$WORK"/loom-demo-* 2>/dev/null | wc -l)" "0"
expect_ok "its model directory is in the home" test -x "$HOST_HOME/demo-model/fit.sh"
expect_not_contains "no sanitizer report" "$out" "ERROR: "

# The host, started again on that home, lists the demo's execs.
start_host
expect_ok "exec list" "$LOOM" --json exec list
expect_contains "the demo's command job is there" "$(cat "$WORK/out")" '"framework":"command"'
stop_host
[ "$FAILED" -eq 0 ] || echo "$out" | tail -n 30 >&2
finish
