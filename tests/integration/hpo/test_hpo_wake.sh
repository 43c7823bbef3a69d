#!/bin/bash
# A tuning task's next experiment starts as soon as the last one's process
# exits: the exec service watches its workers (pidfds) instead of waiting
# for its next look. The host's fallback look is set to 60 s here, so a
# task of 4 one-at-a-time experiments that finishes in under 20 s had each
# exit noticed by the wake-up, not the interval.
# Usage: test_hpo_wake.sh LOOM SOURCE_DIR
LOOM=$1
. "$2/tests/integration/lib.sh"

export LOOM_EXEC_SUPERVISE_MS=60000
start_host
mkdir -p "$WORK/model"
cat > "$WORK/model/run.sh" <<'SH'
#!/bin/sh
sleep 0.3 # alive past the look the host takes when it starts the exec
echo '[{"step": 1, "loss": 0.5}]' > "$RESULT_DIR/val_dict_list.json"
SH
chmod +x "$WORK/model/run.sh"
cat > "$WORK/task.json" <<'JSON'
{"hpoName": "wake", "modelSpec": {"args": "--exec-start command --model-dir model --model-main run.sh"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 4, "maxParalleJobNum": 1, "objectiveMetric": "loss"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
expect_ok "submit" "$LOOM" hpo submit "$WORK/task.json" --model-dir "$WORK/model"
state=
for _ in $(seq 1 200); do
    state=$("$LOOM" --json hpo view wake | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = FINISHED ] || [ "$state" = FAILED ] && break
    sleep 0.1
done
expect_eq "4 experiments one after another finish within 20 s with a 60 s fallback look" \
    "$state" FINISHED
expect_contains "all 4 ran" "$("$LOOM" --json hpo view wake)" '"complete":4'
stop_host
finish
