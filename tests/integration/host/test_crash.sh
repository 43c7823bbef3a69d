#!/usr/bin/env bash
# A host SIGKILLed at random points of a burst of submissions, twenty
# times: it starts again on the same home, every acknowledged exec and
# plan is there exactly once, and nothing is left unfinished without a
# reason (launch-style execs a crash interrupted end as ERROR, saying why).
LOOM=$1
. "$(dirname "$0")/../lib.sh"

mkdir -p "$WORK/model"
printf '#!/bin/sh\necho hello\n' > "$WORK/model/run.sh"; chmod +x "$WORK/model/run.sh"
: > "$WORK/acked_execs"
: > "$WORK/acked_plans"
start_host --cpu-slots 64
for round in $(seq 1 20); do
    (
        for i in $(seq 1 30); do
            out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main run.sh 2>/dev/null) &&
                echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p' >> "$WORK/acked_execs"
            "$LOOM" plan add "/r$round-$i" --share 1 >/dev/null 2>&1 && echo "/r$round-$i" >> "$WORK/acked_plans"
        done
    ) &
    burst=$!
    sleep "0.$((RANDOM % 8 + 1))"
    stop_host KILL
    wait "$burst" 2>/dev/null
    start_host --cpu-slots 64
done

list=$("$LOOM" --json exec list)
missing=0
while read -r id; do
    n=$(echo "$list" | grep -o "\"id\":\"$id\"" | wc -l)
    [ "$n" = 1 ] || { missing=$((missing + 1)); echo "exec $id appears $n times" >&2; }
done < "$WORK/acked_execs"
expect_eq "every acknowledged exec is there exactly once ($(wc -l < "$WORK/acked_execs") acked)" "$missing" "0"
plans=$("$LOOM" --json plan list)
expect_eq "every acknowledged plan is there ($(wc -l < "$WORK/acked_plans") acked)" \
    "$(missing_from "$plans" path "$WORK/acked_plans")" "0"
unexplained=$(echo "$list" | python3 -c '
import json, sys, time
execs = json.load(sys.stdin)
final = {"FINISHED", "KILLED", "ERROR"}
print(sum(1 for e in execs if e["state"] not in final and e["state"] not in ("PENDING", "RUNNING", "LAUNCHING")
          or e["state"] == "ERROR" and not e["message"]))')
expect_eq "every exec has a state, with a reason when it failed" "$unexplained" "0"
for _ in $(seq 1 100); do
    left=$("$LOOM" --json exec list | python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin) if e["state"] not in ("FINISHED","KILLED","ERROR")))')
    [ "$left" = 0 ] && break
    sleep 0.1
done
expect_eq "and every exec ends" "$left" "0"
stop_host TERM
finish
