#!/usr/bin/env bash
# `loom slots` names every holder as the caller may see it: the exec, the
# tuning task's experiment or the model's kernel instance on each slot,
# what it is and its user. An
# administrator's own model is theirs, not "another user's"; a user sees
# their own exec and another user's model only as "another user's"; a held
# slot's owner is never null.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 2
slot_of() { # slot_of TOKEN PYTHON-CONDITION FIELD: FIELD of the first slot where d matches
    LOOM_TOKEN=$1 "$LOOM" --json slots | python3 -c "import json,sys
s=[d for d in json.load(sys.stdin) if $2]
print(s[0].get('$3') if s else 'none')"
}
state() { "$LOOM" --json model view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }
exec_state() { "$LOOM" --json exec view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }

"$LOOM" user add alice -p alice-password >/dev/null
alice=$(curl -s -X POST -u alice:alice-password "$URL/auth/v1/logon" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))')

# The administrator's model holds one slot.
expect_ok "deploy echo-so" "$LOOM" model deploy -p "$EX/echo-so"
expect_ok "start echo-so" "$LOOM" model start echo-so --wait 60
expect_eq "the admin's model: a model" "$(slot_of "$TOKEN" "d['held']" holder)" model
expect_eq "the admin's model: the admin's" "$(slot_of "$TOKEN" "d['held']" user)" admin
expect_contains "the admin's model: its kernel instance" "$(slot_of "$TOKEN" "d['held']" owner)" "echo-so"
table=$("$LOOM" slots)
expect_contains "the table names the model" "$table" "model"
expect_not_contains "not another user's to the admin" "$table" "another user's"

# Alice's exec holds the other.
mkdir -p "$WORK/hold"
printf '#!/bin/sh\nwhile [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done\n' > "$WORK/hold/run.sh"
chmod +x "$WORK/hold/run.sh"
job=$(LOOM_TOKEN=$alice "$LOOM" exec start --exec-start command --model-dir "$WORK/hold" \
      --model-main run.sh --numWorker 1 | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "alice's exec runs" wait_until 60 output_is RUNNING exec_state "$job"
expect_eq "alice sees her exec" "$(slot_of "$alice" "d['owner'] == '$job'" holder)" exec
expect_eq "as hers" "$(slot_of "$alice" "d['owner'] == '$job'" user)" alice
expect_eq "alice sees the admin's model as another user's" \
    "$(slot_of "$alice" "d['held'] and d['owner'] != '$job'" owner)" "another user's"
expect_eq "without its user" "$(slot_of "$alice" "d['held'] and d['owner'] != '$job'" user)" None
expect_eq "the admin sees alice's exec as alice's" "$(slot_of "$TOKEN" "d['owner'] == '$job'" user)" alice
expect_eq "no held slot has a null owner" "$(LOOM_TOKEN=$alice "$LOOM" --json slots | python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['held'] and d['owner'] is None))")" 0
expect_contains "alice's table" "$(LOOM_TOKEN=$alice "$LOOM" slots)" "another user's"

touch "$LOOM_HOME/execs/$job/go"
expect_ok "alice's exec ends" wait_until 60 output_is FINISHED exec_state "$job"

# A tuning task's experiment holds the freed slot: named with its task.
mkdir -p "$WORK/tune"
printf '#!/bin/sh\nwhile [ ! -e "$RESULT_DIR/go" ]; do sleep 0.05; done\necho "[{\\"loss\\": 1}]" > "$RESULT_DIR/val_dict_list.json"\n' > "$WORK/tune/train.sh"
chmod +x "$WORK/tune/train.sh"
cat > "$WORK/task.json" <<'JSON'
{"hpoName": "tune1", "modelSpec": {"args": "--exec-start command --model-dir tune --model-main train.sh"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 1, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
expect_ok "a tuning task" "$LOOM" hpo submit "$WORK/task.json" --model-dir "$WORK/tune"
expect_ok "its experiment holds a slot" wait_until 60 output_is tuning slot_of "$TOKEN" "d['held'] and d.get('holder') == 'tuning'" holder
expect_eq "named with its task" "$(slot_of "$TOKEN" "d.get('holder') == 'tuning'" hpoName)" tune1
expect_contains "the table names the task" "$("$LOOM" slots)" "tuning tune1"
experiment=$(slot_of "$TOKEN" "d.get('holder') == 'tuning'" owner)
touch "$LOOM_HOME/execs/$experiment/go"
"$LOOM" hpo wait tune1 --timeout 60 >/dev/null 2>&1
expect_ok "stop echo-so" "$LOOM" model stop echo-so
stop_host
finish
