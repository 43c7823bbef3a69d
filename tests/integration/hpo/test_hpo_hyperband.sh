#!/bin/bash
# Hyperband over an elastic (edt) model: the budget goes through config.json
# into edt.json's epochs, and a promoted configuration continues from its
# earlier experiment's newest checkpoint, training only the extra epochs.
# Usage: test_hpo_hyperband.sh LOOM SOURCE_DIR
LOOM=$1
. "$2/tests/integration/lib.sh"
. "$2/tests/integration/train_lib.sh"

start_host
model_dir "$WORK/m" 300 1 ', "checkpoint_freq": 1'
# the budget and the two hyperparameters are the tuner's
sed -i 's/"epochs": 1/"epochs": "$epochs"/; s/"units": 32/"units": "$hidden"/; s/"lr": 0.1/"lr": "$learning_rate"/' "$WORK/m/edt.json"
cat > "$WORK/hb.json" <<'JSON'
{"hpoName": "hb", "modelSpec": {"args": "--exec-start edt --model-dir m --numWorker 1"},
 "algoDef": {"algorithm": "Hyperband", "maxJobNum": 13, "maxParalleJobNum": 2,
             "objectiveMetric": "accuracy", "objective": "maximize",
             "algoParams": [{"name": "RandomSeed", "value": "3"}, {"name": "eta", "value": "3"},
                            {"name": "ResourceName", "value": "epochs"}, {"name": "ResourceValue", "value": "9"}]},
 "hyperParams": [{"name": "learning_rate", "type": "Discrete", "dataType": "DOUBLE", "discreteDbVal": [0.01, 0.1]},
                 {"name": "hidden", "type": "Discrete", "dataType": "INT", "discreteIntVal": [8, 32]}]}
JSON
expect_ok "submit" "$LOOM" hpo submit "$WORK/hb.json" --model-dir "$WORK/m"
state=
for _ in $(seq 1 1200); do
    state=$("$LOOM" --json hpo view hb | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = FINISHED ] || [ "$state" = FAILED ] && break
    sleep 0.1
done
expect_eq "the first bracket (9 at 1 epoch, 3 at 3, 1 at 9) finishes" "$state" FINISHED
"$LOOM" --json hpo view hb > "$WORK/view.json"
# Each experiment: its epochs (edt.json), whether it resumed and from which
# epoch (the trainer says so in the host's log), and its values.
python3 - "$WORK/view.json" "$LOOM_HOME" > "$WORK/check.txt" <<'PY'
import json, re, sys
view = json.load(open(sys.argv[1]))
log = open(sys.argv[2] + "/loom.log", errors="replace").read()
for x in view["experiments"]:
    d = f"{sys.argv[2]}/execs/{x['appId']}"
    epochs = json.load(open(f"{d}/_submitted_code/edt.json"))["training"]["epochs"]
    m = re.search(re.escape(x["appId"]) + r": resuming from .*\(epoch (\d+) done\)", log)
    vals = ",".join(h["fixedVal"] for h in x["hyperParams"])
    steps = [e.get("step") for e in json.load(open(f"{d}/val_dict_list.json"))]
    print(x["id"], x["state"], epochs, m.group(1) if m else "-", vals, len(steps))
PY
cat "$WORK/check.txt"
expect_eq "13 experiments" "$(wc -l < "$WORK/check.txt")" 13
expect_eq "all finished" "$(awk '$2 != "FINISHED"' "$WORK/check.txt" | wc -l)" 0
expect_eq "the 9 starters train 1 epoch from scratch" \
    "$(awk '$3 == 1 && $4 == "-"' "$WORK/check.txt" | wc -l)" 9
expect_eq "the 3 promoted to 3 epochs continue from epoch 1" \
    "$(awk '$3 == 3 && $4 == 1' "$WORK/check.txt" | wc -l)" 3
expect_eq "the last, at 9 epochs, continues from epoch 3" \
    "$(awk '$3 == 9 && $4 == 3' "$WORK/check.txt" | wc -l)" 1
expect_eq "a promoted experiment's val_dict_list holds every epoch, its earlier ones too" \
    "$(awk '$3 != $6' "$WORK/check.txt" | wc -l)" 0
stop_host
finish
