#!/bin/bash
# bench/hpo/hyperband.sh - Hyperband against the grid it searches, through
# the real host: the native Fashion-MNIST MLP (edt), learning rate x hidden
# width, accuracy maximised.
#   grid       ExperimentGridSearch, every combination trained for R epochs;
#   hyperband  Hyperband (eta 3, ResourceValue R, ResourceName epochs) over
#              the same lists, maxJobNum BRACKET_JOBS (its first, most
#              aggressive bracket: R starters at 1 epoch, the best third at
#              3, ... one at R); a promoted configuration continues from
#              its earlier experiment's checkpoint when the host has one.
# Printed for each: the best accuracy, the experiments, and the epochs
# actually trained (each experiment's epochs minus those it resumed from,
# as its trainer says in the host's log). Target: Hyperband's best within 0.5 point of the
# grid's with fewer epochs.
# Usage: bench/hpo/hyperband.sh [BUILD_DIR] [R] [PARALLEL]   (build, 9, 2)
set -eu
BUILD=${1:-build}
R=${2:-9}
PAR=${3:-2}
DATA=/usr/share/datasets/fashion-mnist
[ -f "$DATA/train-images-idx3-ubyte.gz" ] || { echo "Fashion-MNIST is not in $DATA" >&2; exit 1; }
LOOM=$(cd "$BUILD" && pwd)/bin/loom
WORK=$(mktemp -d "${TMPDIR:-/tmp}/loom-hb-bench-XXXXXX")
HOST_PID=
trap '[ -n "$HOST_PID" ] && kill "$HOST_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
. "$(dirname "$0")/../host.sh"
bench_start_host "$LOOM" "$WORK"

model() { # model DIR EPOCHS: the MLP with "$hidden" and "$learning_rate" left to the tuner
    mkdir -p "$1"
    cat > "$1/edt.json" <<JSON
{"model": {"input": [1, 28, 28], "layers": [{"type": "flatten"},
   {"type": "dense", "units": "\$hidden"}, {"type": "relu"}, {"type": "dense", "units": 10}]},
 "loss": "softmax_cross_entropy",
 "optimizer": {"type": "sgd", "lr": "\$learning_rate", "momentum": 0.9},
 "dataset": {"format": "idx",
   "train_images": "$DATA/train-images-idx3-ubyte.gz", "train_labels": "$DATA/train-labels-idx1-ubyte.gz",
   "test_images": "$DATA/t10k-images-idx3-ubyte.gz", "test_labels": "$DATA/t10k-labels-idx1-ubyte.gz"},
 "training": {"epochs": $2, "batch_size": 64, "checkpoint_freq": 1}}
JSON
}
model "$WORK/grid-model" "$R"
model "$WORK/hb-model" '"$epochs"'

SPACE='"hyperParams": [
   {"name": "learning_rate", "type": "Discrete", "dataType": "DOUBLE", "discreteDbVal": [0.001, 0.01, 0.1]},
   {"name": "hidden", "type": "Discrete", "dataType": "INT", "discreteIntVal": [16, 64, 256]}]'
BRACKET_JOBS=0 # the first bracket: R + R/3 + ... + 1 experiments
for ((n = R; n >= 1; n /= 3)); do BRACKET_JOBS=$((BRACKET_JOBS + n)); done
cat > "$WORK/grid.json" <<JSON
{"hpoName": "grid", "modelSpec": {"args": "--exec-start edt --model-dir grid-model --numWorker 1"},
 "algoDef": {"algorithm": "ExperimentGridSearch", "maxParalleJobNum": $PAR,
             "objectiveMetric": "accuracy", "objective": "maximize"}, $SPACE}
JSON
cat > "$WORK/hyperband.json" <<JSON
{"hpoName": "hyperband", "modelSpec": {"args": "--exec-start edt --model-dir hb-model --numWorker 1"},
 "algoDef": {"algorithm": "Hyperband", "maxParalleJobNum": $PAR, "maxJobNum": $BRACKET_JOBS,
             "objectiveMetric": "accuracy", "objective": "maximize",
             "algoParams": [{"name": "RandomSeed", "value": "1"}, {"name": "eta", "value": "3"},
                            {"name": "ResourceName", "value": "epochs"}, {"name": "ResourceValue", "value": "$R"}]},
 $SPACE}
JSON

run() { # run NAME MODEL_DIR
    local t0 t1 s
    t0=$(date +%s.%N)
    "$LOOM" hpo submit "$WORK/$1.json" --model-dir "$WORK/$2" > /dev/null
    for _ in $(seq 1 36000); do
        s=$("$LOOM" --json hpo view "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
        [ "$s" = FINISHED ] || [ "$s" = FAILED ] && break
        sleep 0.5
    done
    t1=$(date +%s.%N)
    "$LOOM" --json hpo view "$1" > "$WORK/$1.view"
    echo "$t0 $t1" > "$WORK/$1.time"
}
run grid grid-model
run hyperband hb-model

/usr/bin/python3 - "$WORK" <<'PY'
import json, re, sys
work = sys.argv[1]
log = open(f"{work}/home/loom.log", errors="replace").read()
def report(name):
    view = json.load(open(f"{work}/{name}.view"))
    t0, t1 = map(float, open(f"{work}/{name}.time").read().split())
    epochs = 0
    for x in view["experiments"]:
        d = f"{work}/home/execs/{x['appId']}"
        cfg = json.load(open(f"{d}/_submitted_code/edt.json"))
        total = int(cfg["training"]["epochs"])
        m = re.search(re.escape(x["appId"]) + r": resuming from .*\(epoch (\d+) done\)", log)
        epochs += total - (int(m.group(1)) if m else 0)
    best = view.get("best") or {}
    acc = best.get("metricVal")
    hp = {h["name"]: h["fixedVal"] for h in best.get("hyperParams", [])}
    print(f"  {name:10s} {view['state']:8s} best accuracy {100 * acc:6.2f} %  ({hp})  "
          f"experiments {len(view['experiments']):3d}  epochs trained {epochs:4d}  wall {t1 - t0:6.1f} s")
    return acc, epochs
print("Hyperband vs the grid, Fashion-MNIST MLP (learning rate x hidden width), through loom's host")
g = report("grid")
h = report("hyperband")
ok = h[0] >= g[0] - 0.005 and h[1] < g[1]
print(f"  target: Hyperband within 0.5 point of the grid's best with fewer epochs: "
      f"{'met' if ok else 'missed'} ({100 * (h[0] - g[0]):+.2f} points, {h[1]} vs {g[1]} epochs)")
PY
