#!/usr/bin/env bash
# The queue survives the host: execs waiting when the host stops (cleanly
# or killed) are queued again in the order they had, so the same head job
# starts first and the others keep waiting behind it. Plans the queue
# depends on cannot be pulled from under it: a plan with a waiting job
# cannot be removed, and a cap cannot go below what its running jobs hold.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

job() { # job NAME SECONDS: a model directory whose workers sleep that long
    mkdir -p "$WORK/$1"
    printf '#!/bin/sh\nsleep %s\n' "$2" > "$WORK/$1/run.sh"; chmod +x "$WORK/$1/run.sh"
}
start() { # start MODEL WORKERS [ARGS...]: prints the exec id
    local model=$1 workers=$2; shift 2
    "$LOOM" exec start --exec-start command --model-dir "$WORK/$model" --model-main run.sh \
        --numWorker "$workers" "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
state() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
reason() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("pendingReason",""))'; }
wait_state() { # wait_state ID STATE SECONDS
    for _ in $(seq 1 $(($3 * 10))); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.1; done
    return 1
}

start_host --cpu-slots 2
job long 60
job short 3

for how in TERM KILL; do
    run=$(start long 2)
    expect_ok "($how) the running job holds both slots" wait_state "$run" RUNNING 20
    head=$(start short 2)   # the head of the queue: needs both slots
    second=$(start short 1)
    third=$(start short 1)
    for id in "$head" "$second" "$third"; do
        expect_eq "($how) $id waits" "$(state "$id")" "PENDING"
    done
    stop_host "$how"
    start_host --cpu-slots 2
    expect_contains "($how) the head is queued again" "$("$LOOM" exec view "$head")" "queued again after the host restarted"
    # The running job cannot be re-attached to: it ends, and its slots go to
    # the queue in its old order.
    expect_ok "($how) the head job runs" wait_state "$head" RUNNING 20
    # While it runs, the others wait behind it and say why.
    view=$("$LOOM" --json exec view "$second")
    case "$view" in
        *'"state":"PENDING"'*) expect_contains "($how) the second says why it waits" "$view" "waiting for" ;;
    esac
    expect_ok "($how) the second runs" wait_state "$second" FINISHED 40
    expect_ok "($how) and the third" wait_state "$third" FINISHED 40
    # The order, from the records: the head (both slots) ran first.
    times() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["startTime"], v["endTime"])'; }
    read -r head_start head_end <<< "$(times "$head")"
    for id in "$second" "$third"; do
        read -r start _ <<< "$(times "$id")"
        expect_ok "($how) $id started after the head ended ($start >= $head_end)" test "$start" -ge "$head_end"
    done
    expect_eq "($how) the head finished" "$(state "$head")" "FINISHED"
    # A clean stop stops it (KILLED); after a crash the new host stops what
    # is left of it (ERROR).
    expected="KILLED shut down"; [ "$how" = KILL ] && expected="ERROR restarted"
    expect_eq "($how) the job that was running says what happened to it" \
        "$("$LOOM" --json exec view "$run" | W="${expected#* }" python3 -c 'import json,os,sys; v=json.load(sys.stdin); w=os.environ["W"]; print(v["state"], w if w in v["message"] else v["message"])')" "$expected"
done

# ---- plans under a queue
expect_ok "a capped plan" "$LOOM" plan add /c --cap 2
run=$(start long 2 --consumer /c)
expect_ok "its job runs" wait_state "$run" RUNNING 20
expect_fails "the cap cannot go below what runs in it" "$LOOM" plan update /c --cap 1
expect_contains "the refusal names the cap" "$(cat "$WORK/out")" "cap"
expect_eq "the plan keeps its cap" "$("$LOOM" --json plan show /c | python3 -c 'import json,sys; print(json.load(sys.stdin)["cap"])')" "2"
waiting=$(start short 1 --consumer /c)
expect_eq "a job waits at the cap" "$(state "$waiting")" "PENDING"
expect_fails "a plan with a waiting job cannot be removed" "$LOOM" plan remove /c
expect_contains "the refusal says why" "$(cat "$WORK/out")" "/c"
expect_eq "the waiting job still waits" "$(state "$waiting")" "PENDING"
expect_ok "stop the running one" "$LOOM" exec stop "$run"
expect_ok "the waiting job runs once there is room" wait_state "$waiting" FINISHED 30
remove_c() { "$LOOM" plan remove /c >/dev/null 2>&1; }
wait_until 5 remove_c
expect_fails "an emptied plan can be removed" "$LOOM" --json plan show /c

stop_host TERM
finish
