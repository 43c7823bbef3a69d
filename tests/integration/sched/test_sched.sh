#!/usr/bin/env bash
# The scheduler in the host, end to end on 4 CPU slots: an elastic job
# alone takes every device; a second arrives and they share 2 + 2 without
# the first stopping; the second ends and the first grows back; every
# sample is used once per epoch throughout. Plans and their bad input,
# fixed jobs that wait in the queue, a job too large for the host, and a
# host restarted with jobs running.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4 --hysteresis 1
slots_owned() { "$LOOM" --json slots | python3 -c "import json,sys; s=json.load(sys.stdin); print(sum(1 for d in s if d['owner'] == '$1'))"; }
# The device indices the scheduler says a job holds, as a sorted list.
slot_indices() { "$LOOM" --json slots | python3 -c "import json,sys; s=json.load(sys.stdin); print(sorted(d['index'] for d in s if d['owner'] == '$1'))"; }
# The trainer's workers run on exactly the devices the scheduler granted.
on_granted_devices() { wait_for "$1" "sorted(v['training']['workerDevices']) == $(slot_indices "$1")" 10; }
slots_free() { "$LOOM" --json slots | python3 -c "import json,sys; s=json.load(sys.stdin); print(sum(1 for d in s if d['owner'] is None))"; }

expect_eq "four CPU slots" "$("$LOOM" --json slots | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "4"

# ---- A alone on 4; B arrives: 2 + 2; B ends: A back on 4
model_dir "$WORK/a" 12000 400
model_dir "$WORK/b" 12000 400
a=$(submit --model-dir "$WORK/a" --numWorker 4)
expect_ok "A runs on 4" wait_for "$a" 'v["training"]["workers"] == 4' 60
expect_eq "A holds 4 slots" "$(slots_owned "$a")" "4"
expect_ok "A's workers are on the devices A holds" on_granted_devices "$a"
t0=$(date +%s.%N)
b=$(submit --model-dir "$WORK/b" --numWorker 4)
expect_ok "A shrinks to 2" wait_for "$a" 'v["training"]["workers"] == 2' 30
t1=$(date +%s.%N)
echo "arrival of B -> A stepping on 2 workers: $(echo "$t1 - $t0" | bc) s"
expect_ok "B runs on 2" wait_for "$b" 'v["state"] == "RUNNING" and v["training"]["workers"] == 2 and v["training"]["iteration"] > 10' 30
expect_eq "A holds 2 slots" "$(slots_owned "$a")" "2"
expect_eq "B holds 2 slots" "$(slots_owned "$b")" "2"
# What the user is shown: 2 of its 4 workers, not the 4 it asked for.
expect_eq "exec list says A runs on 2 of 4" \
    "$("$LOOM" exec list | awk -v id="$a" '$1 == id {print $4}')" "2/4"
expect_contains "exec view says so too" "$("$LOOM" exec view "$a")" "workers     2/4"
expect_eq "and the JSON" "$("$LOOM" --json exec view "$a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["workersNow"])')" "2"
expect_ok "A's workers are on the devices A holds" on_granted_devices "$a"
expect_ok "B's workers are on the devices B holds" on_granted_devices "$b"
expect_eq "A and B share no device" "$(python3 -c "print(set($(slot_indices "$a")) & set($(slot_indices "$b")))")" "set()"
expect_ok "B stops" "$LOOM" exec stop "$b"
"$LOOM" exec wait "$b" --timeout 60 >/dev/null 2>&1
expect_eq "B used every sample once in every epoch" "$(field "$b" "$every_epoch_once")" "True"
expect_ok "A grows back to 4" wait_for "$a" 'v["training"]["workers"] == 4' 30
expect_ok "A's workers are on all four devices" on_granted_devices "$a"
expect_contains "loom exec view names them" "$("$LOOM" exec view "$a")" "on cpu device(s) "
expect_eq "A's training never stopped" "$(field "$a" 'v["state"]')" "RUNNING"
expect_eq "A used every sample once in every epoch" "$(field "$a" "$every_epoch_once")" "True"

# ---- a fixed (launch-style) job waits in the queue until devices free
mkdir -p "$WORK/fixed"
# (it runs until the test has looked at it: a fixed time ran out first on a
# loaded machine)
printf '#!/bin/sh\necho ran on $WORLD_SIZE\nwhile [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done\n' > "$WORK/fixed/run.sh"
chmod +x "$WORK/fixed/run.sh"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/fixed" --model-main run.sh --numWorker 2)
f=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
# A is elastic: it shrinks to make room for the fixed job, never to zero.
expect_ok "the fixed job is admitted and runs" wait_for "$f" 'v["state"] == "RUNNING"' 60
expect_eq "exec view shows the hand-over and from whom" "$(field "$f" 'v["handover"]["from"] == "'"$a"'" and v["handover"]["ms"] >= 0')" "True"
touch "$LOOM_HOME/execs/$f/go"
expect_ok "the fixed job ends" "$LOOM" exec wait "$f" --timeout 60
# A's two leaving workers give their devices back only at a step boundary:
# the fixed job starts after they have left, never beside them.
handback=$(grep -n "handed back by $a after [0-9]* ms, now $f" "$LOOM_HOME/loom.log" | tail -n1 | cut -d: -f1)
running=$(grep -n "exec $f: RUNNING" "$LOOM_HOME/loom.log" | head -n1 | cut -d: -f1)
expect_ok "the scheduler logs both hand-backs to the fixed job" test "$(grep -c "handed back by $a after [0-9]* ms, now $f" "$LOOM_HOME/loom.log")" = 2
expect_ok "the fixed job started only after A's workers left (log lines $handback < $running)" test "${handback:-999999}" -lt "${running:-0}"
expect_contains "on its 2 workers" "$("$LOOM" exec logs "$f")" "ran on 2"
expect_eq "A was never stopped" "$(field "$a" 'v["state"]')" "RUNNING"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/fixed" --model-main run.sh --numWorker 4)
w=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
sleep 1
expect_eq "a fixed job needing every device waits while A holds its minimum" "$(field "$w" 'v["state"]')" "PENDING"
expect_ok "stop the waiting job" "$LOOM" exec stop "$w"
expect_fails "a fixed job larger than the host" "$LOOM" exec start --exec-start command --model-dir "$WORK/fixed" --model-main run.sh --numWorker 5
expect_contains "too large is explained" "$(cat "$WORK/out")" "needs 5 device(s) and the host has 4"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/fixed" --model-main run.sh --numWorker 5 --queue-if-too-large true)
q=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_contains "queued when asked to wait" "$out" "PENDING"
expect_ok "a queued exec can be stopped" "$LOOM" exec stop "$q"
expect_contains "stopped before it started" "$(field "$q" 'v["message"]')" "before it started"

# ---- plans and their bad input
expect_ok "plan add" "$LOOM" plan add /proj --share 3
expect_ok "child plan" "$LOOM" plan add /proj/training --share 1 --cap 2 --policy priority
expect_fails "unknown parent" "$LOOM" plan add /nope/child
expect_contains "unknown parent named" "$(cat "$WORK/out")" "nope"
expect_fails "zero share" "$LOOM" plan add /zero --share 0
expect_contains "zero share named" "$(cat "$WORK/out")" "weight"
expect_fails "negative share" "$LOOM" plan update /proj --share -1
expect_fails "bad policy" "$LOOM" plan add /bad --policy random
expect_contains "bad policy named" "$(cat "$WORK/out")" "policy"
expect_fails "duplicate plan" "$LOOM" plan add /proj
list=$("$LOOM" plan list)
expect_contains "plans listed" "$list" "/proj/training"
expect_fails "a plan with children cannot go" "$LOOM" plan remove /proj

# ---- a job whose workers all die fails cleanly and its devices go back
expect_ok "stop A for room" "$LOOM" exec stop "$a"
"$LOOM" exec wait "$a" --timeout 60 >/dev/null 2>&1
model_dir "$WORK/d" 3000 400
dd=$(submit --model-dir "$WORK/d" --numWorker 2)
expect_ok "D runs" wait_for "$dd" 'v["state"] == "RUNNING" and v["training"]["iteration"] > 5' 60
rm "$LOOM_HOME/execs/$dd/_submitted_code/train.csv"   # replacements cannot start
pkill -9 -f "worker .*--exec-id $dd "
expect_fails "D fails" "$LOOM" exec wait "$dd" --timeout 120
expect_contains "D says why" "$(cat "$WORK/out")" "ERROR"
wait_until 10 output_is 0 slots_owned "$dd"
expect_eq "D's devices went back" "$(slots_owned "$dd")" "0"
a=$(submit --model-dir "$WORK/a" --numWorker 4)
expect_ok "A again" wait_for "$a" 'v["state"] == "RUNNING"' 60

# ---- the host restarted with a job running: no device handed out twice
c=$(submit --model-dir "$WORK/b" --numWorker 4 --consumer /proj/training)
expect_ok "C runs" wait_for "$c" 'v["state"] == "RUNNING" and v["training"]["iteration"] > 5' 60
wait_until 10 output_is 2 slots_owned "$c"
expect_eq "C's plan caps it at 2" "$(slots_owned "$c")" "2"
sleep 1.5   # past the hysteresis: the cap still holds
expect_eq "and keeps it at 2" "$(slots_owned "$c")" "2"
stop_host KILL
start_host --cpu-slots 4 --hysteresis 1
expect_ok "A resumes" wait_for "$a" 'v["state"] == "RUNNING" and v["training"]["workers"] >= 1' 60
expect_ok "C resumes" wait_for "$c" 'v["state"] == "RUNNING" and v["training"]["workers"] >= 1' 60
owners=$("$LOOM" --json slots | python3 -c "import json,sys; s=json.load(sys.stdin); print(sorted(d['owner'] for d in s if d['owner']))")
expect_eq "plans survived the restart" "$("$LOOM" --json plan show /proj/training | python3 -c 'import json,sys; print(json.load(sys.stdin)["cap"])')" "2"
expect_eq "every slot has one owner at most" "$(echo "$owners" | python3 -c 'import ast,sys; l=ast.literal_eval(sys.stdin.read()); print(len(l) <= 4)')" "True"
expect_ok "stop A" "$LOOM" exec stop "$a"
expect_ok "stop C" "$LOOM" exec stop "$c"
"$LOOM" exec wait "$a" --timeout 60 >/dev/null 2>&1
"$LOOM" exec wait "$c" --timeout 60 >/dev/null 2>&1
wait_until 10 output_is 4 slots_free
expect_eq "devices go back when jobs end" "$(slots_free)" "4"

stop_host TERM
finish
