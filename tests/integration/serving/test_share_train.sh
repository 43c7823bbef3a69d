#!/usr/bin/env bash
# A model service and elastic training share 2 CPU slots by the same rules
# (plans /alice and /bob, equal shares): bob's 2-worker training shrinks to
# make room for alice's model's first instance; with requests queued the
# model wants both slots and training wants both, and each holds one; once
# the load stops the model (kernel_min 0) lets its slot go and training
# grows back to 2 workers.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 2 --hysteresis 1
logon() { curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))'; }
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
alice=$(logon alice alice-password)
bob=$(logon bob bob-password)
held_by() { "$LOOM" --json slots | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['owner'] == '$1'))"; }
kernels() { curl -s -H "Authorization: Bearer $alice" "$URL/dlim/v1/model/slow" |
            python3 -c "import json,sys; print(json.load(sys.stdin)['kernels']['$1'])"; }
workers() { field "$1" 'v["training"]["workers"]' 2>/dev/null; }
model_state() { LOOM_TOKEN=$alice "$LOOM" --json model view slow | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }

# ---- bob's training alone takes both slots
model_dir "$WORK/t" 12000 400
t=$(LOOM_TOKEN=$bob submit --model-dir "$WORK/t" --numWorker 2)
expect_ok "training runs on 2" wait_until 60 output_is 2 workers "$t"

# ---- alice's model starts: training shrinks for its minimum
cp -r "$BUILD/tests/integration/infer/fault" "$WORK/slow"
sed -i 's/"name": "fault"/"name": "slow"/' "$WORK/slow/model.json"
cat > "$WORK/profile.json" <<'P'
{"policy": {"kernel_min": 0, "kernel_max": 2, "schedule_interval": 0.3,
            "kernel_delay_release_time": 3, "task_execution_timeout": 30, "task_batch_size": 1}}
P
expect_ok "alice deploys slow" env LOOM_TOKEN="$alice" "$LOOM" model deploy -p "$WORK/slow" --profile "$WORK/profile.json"
expect_ok "alice starts slow" env LOOM_TOKEN="$alice" "$LOOM" model start slow
expect_ok "the model serves" wait_until 30 output_is started model_state
expect_eq "the model holds one slot" "$(held_by model/slow)" 1
# (The model lets its slot go again 3 s after it is idle: the training's
# hand-back is read from the log, not from a count that may have moved on.)
handed_to_model() { grep -q "handed back by $t after [0-9]* ms, now model/slow" "$LOOM_HOME/loom.log"; }
expect_ok "training shrank for it: its worker handed the slot to the model" wait_until 30 handed_to_model

# ---- both want more: each keeps one
: > "$WORK/codes"
( end=$((SECONDS + 120))
  while [ ! -e "$WORK/stop" ] && [ $SECONDS -lt $end ]; do
      for _ in 1 2 3 4; do
          ( curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $alice" \
                 -H 'Content-Type: application/json' --data-binary '{"sleep":1}' \
                 "$URL/dlim/v1/inference/slow" ) >> "$WORK/codes" &
      done
      wait
  done ) &
load=$!
expect_ok "the model wants both slots" wait_until 30 output_is 2 kernels target
# Past the hysteresis (1 s) and many scheduling rounds (60 requests at one
# instance's 20 a second): still one each.
answered() { [ "$(wc -l < "$WORK/codes")" -ge "$1" ]; }
expect_ok "the load runs on" wait_until 60 answered 60
expect_eq "the model holds one slot under load" "$(held_by model/slow)" 1
expect_eq "training keeps one" "$(held_by "$t")" 1
expect_eq "on 1 worker" "$(workers "$t")" 1
touch "$WORK/stop"
wait $load
t0=$(date +%s%N)

# ---- the load stops: the model lets its slot go, training grows back
expect_ok "training regrows to 2" wait_until 30 output_is 2 workers "$t"
echo "load stop -> training on 2 workers: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
expect_eq "the model holds no slot" "$(held_by model/slow)" 0
expect_eq "no request failed (codes other than 200)" "$(grep -v '^200$' "$WORK/codes" | sort | uniq -c | tr -s ' \n' ' ')" ""
expect_ok "stop slow" env LOOM_TOKEN="$alice" "$LOOM" model stop slow
expect_ok "stop the training" env LOOM_TOKEN="$bob" "$LOOM" exec stop "$t"
stop_host
finish
