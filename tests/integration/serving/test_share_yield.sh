#!/usr/bin/env bash
# Model services share the scheduler's devices (2 CPU slots, plans of equal
# share): alice's two models start on both slots; the one allowed no
# instance (kernel_min 0) lets its slot go when idle and comes back on a
# request (a cold start); the other (min 1, max 2) grows onto both slots
# under load; bob's 1-worker job then starts within a bounded wait while
# the models still run (it used to wait until they were stopped), the
# instance taken back for it answering the request it was running first.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 2 --hysteresis 1
logon() { curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'; }
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
held_by() { "$LOOM" --json slots | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['owner'] == '$1'))"; }
kernels() { # kernels MODEL FIELD: running, busy or target
    curl -s -H "Authorization: Bearer $alice" "$URL/dlim/v1/model/$1" |
        python3 -c "import json,sys; print(json.load(sys.stdin)['kernels']['$2'])"; }
post() { # post MODEL BODY: the HTTP code, the answer in $WORK/answer.MODEL
    curl -s -o "$WORK/answer.$1" -w '%{http_code}' -H "Authorization: Bearer $alice" \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }
exec_state() { LOOM_TOKEN=$bob "$LOOM" --json exec view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }

cp -r "$BUILD/tests/integration/infer/fault" "$WORK/slow"
sed -i 's/"name": "fault"/"name": "slow"/' "$WORK/slow/model.json"
cat > "$WORK/slow.json" <<'P'
{"policy": {"kernel_min": 1, "kernel_max": 2, "schedule_interval": 0.3,
            "kernel_delay_release_time": 60, "task_execution_timeout": 30, "task_batch_size": 1}}
P
cat > "$WORK/echo.json" <<'P'
{"policy": {"kernel_min": 0, "kernel_max": 1, "schedule_interval": 0.3,
            "kernel_delay_release_time": 1, "task_execution_timeout": 30}}
P
expect_ok "alice deploys slow" env LOOM_TOKEN="$alice" "$LOOM" model deploy -p "$WORK/slow" --profile "$WORK/slow.json"
expect_ok "alice deploys echo-so, kernel_min 0" env LOOM_TOKEN="$alice" "$LOOM" model deploy -p "$EX/echo-so" --profile "$WORK/echo.json"
expect_ok "slow starts" env LOOM_TOKEN="$alice" "$LOOM" model start slow --wait 60
expect_ok "echo-so starts" env LOOM_TOKEN="$alice" "$LOOM" model start echo-so --wait 60
expect_eq "one model job per model: slow holds a slot" "$(held_by model/slow)" 1

# ---- kernel_min 0: no device while idle; a request brings an instance back
expect_ok "echo-so lets its slot go when idle" wait_until 30 output_is 0 held_by model/echo-so
expect_eq "no instance left" "$(kernels echo-so running)" 0
t0=$(date +%s%N)
expect_eq "a request to the model scaled to zero is answered" "$(post echo-so '{"cold":1}')" 200
echo "cold start from zero instances: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
expect_eq "by the kernel" "$(cat "$WORK/answer.echo-so")" '{"cold":1}'
expect_ok "and the slot goes again" wait_until 30 output_is 0 held_by model/echo-so

# ---- slow under load grows onto both slots
load() { # load STOPFILE CODES: 4 clients of 50 ms requests until STOPFILE exists (60 s at most)
    local end=$((SECONDS + 60))
    while [ ! -e "$1" ] && [ $SECONDS -lt $end ]; do
        for _ in 1 2 3 4; do ( code=$(post slow '{"sleep":1}'); echo "$code" >> "$2" ) & done
        wait
    done
}
: > "$WORK/codes"
load "$WORK/stop" "$WORK/codes" &
loader=$!
expect_ok "slow grows to both slots under load" wait_until 30 output_is 2 held_by model/slow
touch "$WORK/stop"
wait $loader

# ---- two requests running on both instances; bob's job takes one slot back
expect_ok "both instances ready" wait_until 30 output_is 2 kernels slow running
( post slow '{"linger":1}' > "$WORK/linger1" ) &
l1=$!
( post slow '{"linger":2}' > "$WORK/linger2" ) &
l2=$!
expect_ok "both instances busy" wait_until 10 output_is 2 kernels slow busy
# Requests queued behind them while an instance is taken back: the other serves them.
: > "$WORK/codes2"
load "$WORK/stop2" "$WORK/codes2" &
loader=$!
mkdir -p "$WORK/hold"
printf '#!/bin/sh\nwhile [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done\n' > "$WORK/hold/run.sh"
chmod +x "$WORK/hold/run.sh"
t0=$SECONDS
job=$(LOOM_TOKEN=$bob "$LOOM" exec start --exec-start command --model-dir "$WORK/hold" \
      --model-main run.sh --numWorker 1 | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
# Within the hysteresis, the request the instance holds (2 s) and margin for a busy machine.
expect_ok "bob's job starts while the models run" wait_until 15 output_is RUNNING exec_state "$job"
echo "bob's job started after $(( SECONDS - t0 )) s"
wait $l1 $l2
expect_eq "the request on the instance taken back is answered" "$(cat "$WORK/linger1") $(cat "$WORK/linger2")" "200 200"
touch "$WORK/stop2"
wait $loader
expect_eq "requests queued across the take-back: none failed or lost (codes other than 200)" \
    "$(grep -v '^200$' "$WORK/codes2" | sort | uniq -c | tr -s ' \n' ' ')" ""
expect_eq "and some were sent" "$(( $(wc -l < "$WORK/codes2") > 0 ))" 1
expect_eq "slow keeps its minimum" "$(held_by model/slow)" 1
expect_eq "bob's job holds the other" "$(held_by "$job")" 1
expect_eq "slow still serves" "$(post slow '{"after":1}')" 200
expect_contains "the hand-back is logged" "$(cat "$LOOM_HOME/loom.log")" "handed back by model/slow"
expect_eq "no request of the load failed (codes other than 200)" "$(grep -v '^200$' "$WORK/codes" | sort | uniq -c | tr -s ' \n' ' ')" ""

touch "$LOOM_HOME/execs/$job/go"
expect_ok "bob's job ends" wait_until 60 output_is FINISHED exec_state "$job"
expect_ok "stop slow" env LOOM_TOKEN="$alice" "$LOOM" model stop slow
expect_ok "stop echo-so" env LOOM_TOKEN="$alice" "$LOOM" model stop echo-so
expect_ok "every slot free" wait_until 10 output_is 0 held_by model/slow
stop_host
finish
