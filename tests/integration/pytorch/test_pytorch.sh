#!/usr/bin/env bash
# edtPyTorch end to end: the Fashion-MNIST example trains on 2 workers and
# writes its model (safetensors and PyTorch's state_dict file), callbacks
# of both generations are called, a job resized 2 -> 1 -> 2 with a worker
# killed finishes with every sample once per epoch, and every bad input ends
# its job ERROR (or is refused at submission) with the reason in the log
# while the host and the other jobs go on.
LOOM=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 has no torch (Debian's python3-torch)"; exit 77
fi
if [ ! -f "$(dirname "$LOOM")/../lib/loom/plugins/edtPyTorch.so" ]; then
    echo "SKIP: the edtPyTorch adapter was not built (no libpython3-dev)"; exit 77
fi
. "$HERE/../lib.sh"
. "$HERE/../train_lib.sh"
FMNIST=/usr/share/datasets/fashion-mnist

mkdir -p "$WORK/images" # the ImageFolder job's data, a data root of its own
start_host --cpu-slots 8 --data-root "$WORK/images"
pt_submit() { # pt_submit MODEL_DIR SCRIPT ARGS... ; prints the exec id
    local dir=$1 main=$2; shift 2
    "$LOOM" exec start --exec-start edtPyTorch --model-dir "$dir" --model-main "$main" "$@" |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
mkdir -p "$WORK/faults"
cp "$HERE/faults.py" "$WORK/faults/"

# ---- the example, and beside it every fault (the host and the good jobs
# must not mind them)
ex=$(pt_submit "$ROOT/examples/pytorch-fmnist" fmnist.py --numWorker 2 --data-dir $FMNIST \
     -- --epochs 1 --train-samples 24000 --test-samples 1000)
declare -A fault_id
for f in get_dataset forward metric callback oom one_dataset frozen foreign_optimizer exit; do
    fault_id[$f]=$(pt_submit "$WORK/faults" faults.py --numWorker 1 --msd-env FAULT=$f \
                   --msd-env EDT_MAX_WORKER_FAILURES=2)
done
good=$(pt_submit "$WORK/faults" faults.py --numWorker 2)
# torchvision's ImageFolder layout: DATA_DIR/{train,test}/CLASS/*.png
/usr/bin/python3 - "$WORK/images" <<'PY'
import os, sys
from PIL import Image
for split, n in (("train", 40), ("test", 10)):
    for c in range(3):
        os.makedirs(os.path.join(sys.argv[1], split, "class%d" % c))
        for i in range(n):
            img = Image.new("L", (8, 8), 20 + i)
            for row in range(8):
                img.putpixel((c, row), 230)
            img.save(os.path.join(sys.argv[1], split, "class%d" % c, "%d.png" % i))
PY
folders=$(pt_submit "$WORK/faults" faults.py --data-dir "$WORK/images" --msd-env FAULT=imagefolder)

expect_ok "the example finishes" "$LOOM" exec wait "$ex" --timeout 400
R="$LOOM_HOME/execs/$ex"
expect_eq "every sample once" "$(field "$ex" "$every_epoch_once")" "True"
expect_eq "the CNN learns (test accuracy > 0.6)" \
    "$(field "$ex" 'v["training"]["testMetrics"]["accuracy"] > 0.6')" "True"
expect_eq "a user metric is averaged like loom's own" \
    "$(field "$ex" 'abs(v["training"]["testMetrics"]["error_rate"] + v["training"]["testMetrics"]["accuracy"] - 1) < 1e-6')" "True"
expect_contains "the script's own output is in the worker log" "$(cat "$R/log/worker-0/stdout")" "fmnist: training done"
expect_contains "the worker says which Python it embeds" "$(cat "$R/log/worker-0/stderr")" "embedded libpython3"
# PyTorch's .grad tensors are views of the host's gradient memory: the
# workers reduce them in place, no staging copy.
for w in 0 1; do
    expect_contains "worker $w reduces PyTorch's gradients in place" \
        "$(cat "$R/log/worker-$w/stdout")" "all-reduce in place in the shared segment"
done
expect_ok "worker callbacks were called" grep -q '"event": "test"' "$R"/log/worker-callback-*.jsonl
expect_eq "one process runs the driver callback" "$(ls "$R"/log/driver-callback-*.jsonl | wc -l)" "1"
expect_ok "the driver callback saw the end" grep -q '"event": "end"' "$R"/log/driver-callback-*.jsonl
expect_ok "val_dict_list.json written" test -s "$R/val_dict_list.json"
expect_eq "the final model: safetensors and PyTorch's state_dict agree" "$(/usr/bin/python3 - "$R/model" <<'PY'
import json, struct, sys, torch
folder = sys.argv[1]
sd = torch.load(folder + "/model.pt")
raw = open(folder + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
ok = True
for name, t in sd.items():
    h = header[name]
    a, b = h["data_offsets"]
    st = torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=torch.float32).reshape(h["shape"])
    ok &= torch.equal(st, t)
print(ok and len(sd) == 8)
PY
)" "True"

expect_ok "the good job beside the faults finishes" "$LOOM" exec wait "$good" --timeout 300
G="$LOOM_HOME/execs/$good"
expect_contains "old-style worker logger (loss, acc %, batch, worker)" "$(cat "$G"/log/worker-*/stdout)" "old-style train: loss"
expect_contains "old-style test metrics in percent" "$(cat "$G/old_style_test.txt")" "100.000"
expect_contains "new-style driver callback" "$(cat "$G"/log/worker-*/stdout)" "new-style test: ['accuracy', 'accuracy_pct', 'loss']"
expect_contains "old-style on_train_end" "$(cat "$G"/log/worker-*/stdout)" "old-style end"
expect_contains "the callback's own val_dict_list.json wins over the trainer's" \
    "$(cat "$G/val_dict_list.json")" '"written_by": "callback"'

expect_ok "an ImageFolder job finishes" "$LOOM" exec wait "$folders" --timeout 300
expect_eq "it learns the image classes" \
    "$(field "$folders" 'v["training"]["testMetrics"]["accuracy"] >= 0.9 and v["training"]["epochsDone"][0]["samples"] == 120')" "True"

fault_log() { cat "$LOOM_HOME/execs/$1"/log/worker-*/stderr "$LOOM_HOME/execs/$1"/log/driver/stdout 2>/dev/null; }
check_fault() { # check_fault FAULT TEXT-IN-LOG
    local id=${fault_id[$1]}
    "$LOOM" exec wait "$id" --timeout 300 >/dev/null 2>&1
    expect_eq "FAULT=$1 ends the job ERROR" "$(field "$id" 'v["state"]')" "ERROR"
    expect_contains "FAULT=$1: the reason is in the log" "$(fault_log "$id")" "$2"
}
check_fault get_dataset 'in get_dataset
    raise ValueError("no data here (FAULT=get_dataset)")'
check_fault forward 'RuntimeError: broken forward (FAULT=forward)'
check_fault metric 'ZeroDivisionError: broken metric (FAULT=metric)'
check_fault callback "KeyError: 'broken callback (FAULT=callback)'"
# (a sanitizer build refuses the allocation itself, before PyTorch can)
if nm -D "$LOOM" 2>/dev/null | grep -q __asan_init; then
    check_fault oom "allocation-size-too-big"
else
    check_fault oom "DefaultCPUAllocator: can't allocate memory"
fi
check_fault one_dataset "get_dataset() returned TensorDataset; expected two datasets (train, test)"
check_fault frozen "the model has no parameters that require a gradient"
check_fault foreign_optimizer "the optimizer does not hold the model's parameters (fc1.weight"
check_fault exit "the script exited with status 3 before calling FabricModel.train()"
expect_contains "a failed forward says why the worker stopped" "$(fault_log "${fault_id[forward]}")" \
    "the job's Python code failed; this worker stops"

# ---- refused at submission, naming the line
printf 'import os\nx = (\n' > "$WORK/faults/syntax.py"
expect_fails "a script with a syntax error is refused" \
    "$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/faults" --model-main syntax.py
expect_contains "the refusal names the line" "$(cat "$WORK/out")" "syntax.py line 2: syntax error"
sed 's/^edt.train(EPOCHS, BATCH)/edt.train(int(os.environ["E"]), BATCH)/' "$HERE/faults.py" > "$WORK/faults/dyn.py"
expect_fails "epochs that cannot be told before the job runs are refused" \
    "$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/faults" --model-main dyn.py
expect_contains "the refusal names the argument" "$(cat "$WORK/out")" "cannot tell train()'s epoch_number"
expect_fails "ASYNC is refused (its parameter server would run the script in the host)" \
    "$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/faults" --model-main faults.py \
    --syncMode ASYNC
expect_contains "the refusal says why" "$(cat "$WORK/out")" "--syncMode ASYNC runs a copy of the model in the host"
id=$(pt_submit "$WORK/faults" faults.py --msd-env PYTHON=/usr/bin/env)
"$LOOM" exec wait "$id" --timeout 120 >/dev/null 2>&1
expect_eq "a job asking for another Python ends ERROR" "$(field "$id" 'v["state"]')" "ERROR"
expect_contains "the refusal names the embedded libpython" "$(field "$id" 'v["message"]')" \
    "edtPyTorch embeds libpython3"

# ---- elastic: 2 -> 1 -> 2 and a killed worker, every sample once per epoch
# (enough samples that the job is still early in its second epoch when the
# worker is killed: a replacement Python worker takes about a second to start)
id=$(pt_submit "$ROOT/examples/pytorch-fmnist" fmnist.py --numWorker 2 --data-dir $FMNIST \
     -- --epochs 3 --train-samples 24000 --test-samples 1000 --batch-size 32)
expect_ok "elastic job runs" wait_for "$id" 'v["training"]["iteration"] > 10' 120
expect_ok "shrink to 1" "$LOOM" exec resize "$id" --workers 1
expect_ok "shrunk to 1 worker" wait_for "$id" 'v["training"]["workers"] == 1' 60
expect_ok "grow to 2" "$LOOM" exec resize "$id" --workers 2
expect_ok "grew to 2 workers" wait_for "$id" 'v["training"]["workers"] == 2' 60
gen=$(field "$id" 'v["training"]["generation"]')
pid=$(pgrep -f "worker .*--exec-id $id .*--slot 1 " | head -n1)
expect_ok "found worker 1" test -n "$pid"
kill -9 "$pid"
expect_ok "the killed worker is replaced" wait_for "$id" "v['training']['workers'] == 2 and v['training']['generation'] > $gen" 90
expect_ok "the elastic job finishes" "$LOOM" exec wait "$id" --timeout 400
expect_eq "three epochs, every sample once in each" \
    "$(field "$id" "len(v['training']['epochsDone']) == 3 and $every_epoch_once")" "True"
expect_eq "it still learns (test accuracy > 0.7)" \
    "$(field "$id" 'v["training"]["testMetrics"]["accuracy"] > 0.7')" "True"

# ---- no torch for the settings reader: a clear refusal at exec start
kill "$HOST_PID"; wait "$HOST_PID" 2>/dev/null
# (in a data folder: jobs may run only what the system, loom or their data hold)
mkdir -p "$WORK/data"
printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' > "$WORK/data/python-without-torch"
chmod +x "$WORK/data/python-without-torch"
start_host --cpu-slots 2 --python "$WORK/data/python-without-torch" --data-root "$WORK/data"
expect_fails "no torch: refused at exec start" \
    "$LOOM" exec start --exec-start edtPyTorch --model-dir "$WORK/faults" --model-main faults.py
expect_contains "the refusal says torch is missing" "$(cat "$WORK/out")" "has no module named 'torch'"

# ---- which Python launch-style jobs run: the host's default (--python, here
# one without torch), or the job's own (--msd-env PYTHON=...)
mkdir -p "$WORK/ddp"
printf 'import sys\nprint("executable", sys.executable)\nimport torch.distributed\nprint("torch ok")\n' \
    > "$WORK/ddp/which.py"
launch_log() { cat "$LOOM_HOME/execs/$1"/log/worker-0/* 2>/dev/null; }
for fw in python distPyTorch; do
    id=$("$LOOM" exec start --exec-start $fw --model-dir "$WORK/ddp" --model-main which.py --data-dir "$WORK/data" |
         sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    "$LOOM" exec wait "$id" --timeout 120 >/dev/null 2>&1
    expect_contains "$fw: the host's default Python runs" "$(launch_log "$id")" \
        "loom: python is $WORK/data/python-without-torch"
    expect_contains "$fw: which has no torch" "$(launch_log "$id")" "No module named 'torch'"
    id=$("$LOOM" exec start --exec-start $fw --model-dir "$WORK/ddp" --model-main which.py \
         --data-dir "$WORK/data" --msd-env PYTHON=/usr/bin/python3 | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    expect_ok "$fw: the job's own Python runs" "$LOOM" exec wait "$id" --timeout 120
    expect_contains "$fw: the log names it" "$(launch_log "$id")" "loom: python is /usr/bin/python3"
    expect_contains "$fw: and it has torch" "$(launch_log "$id")" "torch ok"
done

finish
