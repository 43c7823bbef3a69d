#!/usr/bin/env bash
# What a PyTorch job is told and shows: the driver logger callback hears the
# job's means over every worker at the global iteration; TRAINING_ID (the
# exec id) and, in a tuning task, SUBID (the experiment id) for edtPyTorch
# and launch-style jobs; a torchvision dataset whose file is missing ends
# the job at once naming the file; `loom exec view` names the Python a
# python, distPyTorch or edtPyTorch job ran; `exec logs -f` says the
# workers are starting while Python loads, and never counts past the end.
LOOM=$1
HERE=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 has no torch or torchvision"; exit 77
fi
if [ ! -f "$(dirname "$LOOM")/../lib/loom/plugins/edtPyTorch.so" ]; then
    echo "SKIP: the edtPyTorch adapter was not built (no libpython3-dev)"; exit 77
fi
. "$HERE/../lib.sh"
. "$HERE/../train_lib.sh"

mkdir -p "$WORK/model" "$WORK/data/empty"
start_host --cpu-slots 4 --data-root "$WORK/data"
started() { sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'; }
cp "$HERE/job_env.py" "$WORK/model/"
cat > "$WORK/model/launch.py" <<'PY'
import json, os, sys
print("executable", sys.executable)
env = {k: os.environ.get(k) for k in ("TRAINING_ID", "SUBID")}
print("env", json.dumps(env, sort_keys=True))
with open(os.path.join(os.environ["RESULT_DIR"], "val_dict_list.json"), "w") as f:
    json.dump([{"step": 1, "loss": 0.5}], f)
PY
cat > "$WORK/model/vision.py" <<'PY'
import os, sys
from torchvision import datasets
sys.path.insert(0, os.path.join(os.getenv("FABRIC_HOME"), "libs", "fabric.zip"))
from fabric_model import FabricModel
import torch
def get_dataset():
    root = os.environ["DATA_DIR"]
    if os.environ.get("DATASET") == "cifar":
        return (datasets.CIFAR10(root, train=True, download=True),
                datasets.CIFAR10(root, train=False, download=True))
    return datasets.FashionMNIST(root, train=True), datasets.FashionMNIST(root, train=False)
model = torch.nn.Linear(784, 10)
FabricModel(model, get_dataset, torch.nn.CrossEntropyLoss(),
            torch.optim.SGD(model.parameters(), lr=0.1)).train(1, 32)
PY

# ---- the driver callback hears the means over both workers
id=$("$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/model" --model-main job_env.py \
     --numWorker 2 | started)
timeout 300 "$LOOM" exec logs "$id" -f >/dev/null 2>"$WORK/progress.out" &
follow=$!
vision_get=$("$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/model" \
     --model-main vision.py --data-dir "$WORK/data/empty" --msd-env DATASET=cifar | started)
vision_nodl=$("$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/model" \
     --model-main vision.py --data-dir "$WORK/data/empty" | started)
expect_ok "the 2-worker job finishes" "$LOOM" exec wait "$id" --timeout 300
R="$LOOM_HOME/execs/$id"
wait "$follow"
grep '^\[progress\]' "$WORK/progress.out" >"$WORK/lines"
cat "$WORK/lines"
expect_ok "progress: the workers are said to be starting while Python loads" \
    grep -Eq '^\[progress\] starting (the workers|2 workers) \(edtPyTorch\)' "$WORK/lines"
expect_eq "progress: no count of an unknown total" "$(grep -c 'of 0 samples' "$WORK/lines")" 0
expect_eq "progress: no epoch past the last" "$(grep -Ec 'epoch ([2-9]|[1-9][0-9]+)/1' "$WORK/lines")" 0
expect_contains "progress: the view says it finished" "$(field "$id" 'v["training"]["progress"]')" \
    "finished: "
expect_eq "the driver callback heard the mean of both workers at the global iteration" \
    "$(/usr/bin/python3 "$HERE/check_driver.py" "$R/log" "$(view "$id")")" "ok"
expect_eq "TRAINING_ID is the exec id in every worker" \
    "$(cat "$R"/env-*.json | /usr/bin/python3 -c "
import json, sys
envs = [json.loads(l) for l in sys.stdin.read().replace('}{', '}\n{').splitlines()]
print(len(envs) >= 2 and all(e['TRAINING_ID'] == '$id' and e['SUBID'] is None for e in envs))")" "True"
expect_contains "exec view names the embedded Python" "$("$LOOM" exec view "$id")" "python      /usr/bin/python3"
expect_contains "and says it is embedded" "$(field "$id" 'v["python"]')" "(embedded libpython3"

# ---- a torchvision file that is not there: the job ends at once, naming it
for vid in "$vision_get" "$vision_nodl"; do
    "$LOOM" exec wait "$vid" --timeout 120 >/dev/null 2>&1
    expect_eq "a missing torchvision file ends the job ERROR" "$(field "$vid" 'v["state"]')" "ERROR"
done
expect_contains "download=True: the file it looked for is named, nothing fetched" \
    "$(field "$vision_get" 'v["message"]')" \
    "torchvision looked for $WORK/data/empty/cifar-10-python.tar.gz and did not find it"
expect_contains "MNIST's kin: the files it expects are named" \
    "$(field "$vision_nodl" 'v["message"]')" \
    "FashionMNIST: no $WORK/data/empty/FashionMNIST/raw/train-images-idx3-ubyte"

# ---- launch-style jobs: TRAINING_ID, and the Python on the job's PATH shown
for fw in python distPyTorch; do
    lid=$("$LOOM" exec start --exec-start $fw --model-dir "$WORK/model" --model-main launch.py \
          --data-dir "$WORK/data" | started)
    expect_ok "$fw job finishes" "$LOOM" exec wait "$lid" --timeout 120
    expect_contains "$fw: TRAINING_ID is the exec id" "$(cat "$LOOM_HOME/execs/$lid"/log/worker-0/stdout)" \
        "env {\"SUBID\": null, \"TRAINING_ID\": \"$lid\"}"
    # the first python3 on the jobs' fixed PATH, whatever the host's is
    on_path=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v python3)
    expect_contains "$fw: exec view names python3 on PATH and where it is" \
        "$("$LOOM" exec view "$lid")" "python      python3 on PATH ($on_path)"
    lid=$("$LOOM" exec start --exec-start $fw --model-dir "$WORK/model" --model-main launch.py \
          --data-dir "$WORK/data" --msd-env PYTHON=/usr/bin/python3 | started)
    expect_ok "$fw job with its own Python finishes" "$LOOM" exec wait "$lid" --timeout 120
    expect_eq "$fw: exec view names the job's Python" "$(field "$lid" 'v["python"]')" "/usr/bin/python3"
done

# ---- tuning: SUBID is the experiment id, TRAINING_ID its exec's
tune() { # tune NAME ARGS
    cat > "$WORK/$1.json" <<JSON
{"hpoName": "$1", "modelSpec": {"args": "$2"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 2, "maxParalleJobNum": 2, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "lr", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0.01, "maxDbVal": 0.05}]}
JSON
    "$LOOM" hpo submit "$WORK/$1.json" --model-dir "$WORK/model" >/dev/null
}
experiments() { # experiments NAME: "ID APPID" lines once the task ended
    local s
    for _ in $(seq 1 600); do
        s=$("$LOOM" --json hpo view "$1" 2>/dev/null)
        [ "$(printf '%s' "$s" | /usr/bin/python3 -c "import json, sys; print(json.load(sys.stdin)['state'])" 2>/dev/null)" \
          = FINISHED ] && break
        sleep 0.2
    done
    printf '%s' "$s" | /usr/bin/python3 -c "
import json, sys
for x in json.load(sys.stdin)['experiments']:
    print(x['id'], x['appId'])"
}
tune tune_edt "--exec-start edtPyTorch --model-dir model --model-main job_env.py --numWorker 1"
tune tune_py "--exec-start python --model-dir model --model-main launch.py"
n=0
while read -r sub app; do
    n=$((n + 1))
    expect_eq "edtPyTorch experiment $sub: SUBID and TRAINING_ID" \
        "$(cat "$LOOM_HOME/execs/$app"/env-*.json | /usr/bin/python3 -c "import json,sys; e=json.load(sys.stdin); print(e['SUBID'], e['TRAINING_ID'])")" \
        "$sub $app"
done < <(experiments tune_edt)
expect_eq "both edtPyTorch experiments ran" "$n" "2"
n=0
while read -r sub app; do
    n=$((n + 1))
    expect_contains "python experiment $sub: SUBID and TRAINING_ID" \
        "$(cat "$LOOM_HOME/execs/$app"/log/worker-0/stdout)" \
        "env {\"SUBID\": \"$sub\", \"TRAINING_ID\": \"$app\"}"
done < <(experiments tune_py)
expect_eq "both python experiments ran" "$n" "2"

finish
