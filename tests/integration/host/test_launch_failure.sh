#!/usr/bin/env bash
# A launch-style exec whose one worker fails ends, as torchrun and WMLA end
# such a job: the other workers are stopped at once (a DDP rank otherwise
# waits for the failed one until its own timeout, half an hour) and the exec
# is ERROR, naming the worker that failed and its status.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

MODEL="$WORK/model"
mkdir -p "$MODEL"
NONCE=$$$RANDOM # so pgrep finds only this run's sleep
# Rank 1 waits (as a DDP rank waits at its rendezvous); rank 0 fails once
# rank 1 is up.
cat > "$MODEL/rank0_fails.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 0 ]; then
    while [ ! -e "$RESULT_DIR/rank1-up" ]; do sleep 0.05; done
    echo "rank 0 gives up" >&2
    exit 3
fi
touch "$RESULT_DIR/rank1-up"
exec sleep "1000.$1"
SH
chmod +x "$MODEL/rank0_fails.sh"
waiting() { pgrep -f "sleep 1000\.$NONCE\$" | wc -l; }
state() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["state"])'; }

start_host
id=$("$LOOM" exec start --exec-start command --model-dir "$MODEL" --model-main rank0_fails.sh \
         --numWorker 2 -- "$NONCE" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
[ -n "$id" ] || fail "the exec was not submitted"
# The sleep is SIGTERMed at once: well within the 60 s (it would wait 1000 s).
"$LOOM" exec wait "$id" --timeout 60 >/dev/null 2>&1
expect_eq "the exec ends in ERROR, its other worker stopped" "$(state "$id")" ERROR
view=$("$LOOM" exec view "$id")
expect_contains "it names the worker that failed and its status" "$view" "worker 0 exited with status 3"
expect_contains "and says the others were stopped" "$view" "the other workers were stopped"
expect_eq "no process of the waiting worker is left" "$(waiting)" 0
expect_contains "the failed worker's output is kept" "$("$LOOM" exec logs "$id" --worker 0 --stderr)" "rank 0 gives up"
expect_contains "the host's log says why it stopped them" "$(cat "$LOOM_HOME/loom.log")" "exec $id: worker 0 exited with status 3"

# A worker that fails after the others finished well changes nothing of the
# above: the exec is ERROR with its own status.
cat > "$MODEL/last_fails.sh" <<'SH'
#!/bin/sh
[ "$RANK" = 1 ] || exit 0
while [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done
exit 5
SH
chmod +x "$MODEL/last_fails.sh"
id2=$("$LOOM" exec start --exec-start command --model-dir "$MODEL" --model-main last_fails.sh \
          --numWorker 2 | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
wait_until 60 output_is RUNNING state "$id2" || fail "exec $id2 never started"
touch "$LOOM_HOME/execs/$id2/go"
"$LOOM" exec wait "$id2" --timeout 60 >/dev/null 2>&1
expect_eq "a last worker's failure is ERROR too" "$(state "$id2")" ERROR
view=$("$LOOM" exec view "$id2")
expect_contains "naming it" "$view" "worker 1 exited with status 5"
expect_not_contains "with nothing to stop" "$view" "the other workers were stopped"
finish
