#!/usr/bin/env bash
# `loom model start` returns at once: on a 1-slot host whose slot a running
# job holds, the model is "starting" with the scheduler's reason (the words
# of a pending exec's, naming the holder); `--wait` bounds the wait (exit 3
# when the time passes); once the job ends the model serves. A kernel that
# fails to load shows as "failed" in model view and list, with its reason.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 1 --hysteresis 1
state() { "$LOOM" --json model view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }
exec_state() { "$LOOM" --json exec view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }

# A job that holds the only slot until the test lets it go.
mkdir -p "$WORK/hold"
printf '#!/bin/sh\nwhile [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done\n' > "$WORK/hold/run.sh"
chmod +x "$WORK/hold/run.sh"
out=$("$LOOM" exec start --exec-start command --model-dir "$WORK/hold" --model-main run.sh --numWorker 1)
job=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "the job runs on the only slot" wait_until 60 output_is RUNNING exec_state "$job"

expect_ok "deploy echo-so" "$LOOM" model deploy -p "$EX/echo-so"
t0=$SECONDS
out=$(timeout 20 "$LOOM" model start echo-so 2>&1)
rc=$?
expect_eq "start returns at once, successfully" "$rc" 0
expect_eq "within a few seconds" "$(( SECONDS - t0 <= 5 ))" 1
expect_contains "start says starting" "$out" "model echo-so: starting"
expect_contains "and why, naming the holder" "$out" "waiting for 1 device, 0 free (held by $job)"
view=$("$LOOM" --json model view echo-so)
expect_contains "view: starting" "$view" '"state":"starting"'
expect_contains "view: the scheduler's reason" "$view" "\"pendingReason\":\"waiting for 1 device, 0 free (held by $job)\""
expect_contains "list: starting" "$("$LOOM" model list)" "starting"
expect_eq "a request meanwhile is refused, not queued" "$(post echo-so '{"a":1}')" 503
expect_contains "naming why" "$(cat "$WORK/body")" "is starting"

# --wait with a bound on a blocked model: exit 3 when the time passes.
expect_ok "deploy echo-lua" "$LOOM" model deploy -p "$EX/echo-lua"
timeout 20 "$LOOM" model start echo-lua --wait 1 > "$WORK/out" 2>&1
expect_eq "--wait 1 on a blocked model exits 3" "$?" 3
expect_contains "--wait says what it waits for" "$(cat "$WORK/out")" "did not serve within 1 s"
expect_ok "stop echo-lua" "$LOOM" model stop echo-lua -f
expect_eq "stopped" "$(state echo-lua)" stopped

# The job ends: the model gets the slot and serves; --wait returns 0.
touch "$LOOM_HOME/execs/$job/go"
expect_ok "the job ends" wait_until 60 output_is FINISHED exec_state "$job"
expect_ok "the model serves" wait_until 60 output_is started state echo-so
expect_eq "and answers" "$(post echo-so '{"a":2}')" 200
expect_eq "its answer" "$(cat "$WORK/body")" '{"a":2}'
expect_not_contains "no reason once it serves" "$("$LOOM" --json model view echo-so)" pendingReason
expect_ok "stop echo-so" "$LOOM" model stop echo-so
expect_ok "--wait on a free slot serves" timeout 60 "$LOOM" model start echo-so --wait 60
expect_contains "--wait: started" "$(cat "$WORK/out")" "model echo-so: started"
expect_ok "stop echo-so again" "$LOOM" model stop echo-so

# A kernel that fails to load: the model's state shows it; --wait exits 1.
mkdir -p "$WORK/badlua"
printf 'error("boom at load")\n' > "$WORK/badlua/k.lua"
printf '{"name":"badlua","runtime":"lua","kernel_path":"k.lua"}' > "$WORK/badlua/model.json"
expect_ok "deploy badlua" "$LOOM" model deploy -p "$WORK/badlua"
timeout 60 "$LOOM" model start badlua --wait > "$WORK/out" 2>&1
expect_eq "--wait on a kernel that fails to load exits 1" "$?" 1
expect_contains "--wait: failed, the kernel's reason" "$(cat "$WORK/out")" "boom at load"
expect_eq "view: failed" "$(state badlua)" failed
expect_contains "view: the reason" "$("$LOOM" model view badlua)" "boom at load"
expect_contains "list: failed" "$("$LOOM" model list)" "failed"
expect_eq "the slot is free again" "$("$LOOM" --json slots | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['held']))")" 0
expect_ok "stop badlua" "$LOOM" model stop badlua

stop_host
finish
