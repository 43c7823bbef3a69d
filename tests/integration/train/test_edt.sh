#!/usr/bin/env bash
# Elastic training end to end: a job trains to a good accuracy with every
# sample used once per epoch; it grows and shrinks while it runs; a worker
# SIGKILLed mid-epoch is replaced and no sample is lost or repeated; the
# host SIGKILLed mid-training resumes the job from its newest whole
# checkpoint (a truncated one is refused); bad submissions are refused by
# name.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 8

# ---- a job trains, each sample once per epoch, WMLA's files written
model_dir "$WORK/m1" 3000 3
id=$(submit --model-dir "$WORK/m1" --numWorker 2)
expect_ok "basic job finishes" "$LOOM" exec wait "$id" --timeout 120
R="$LOOM_HOME/execs/$id"
expect_eq "three epochs recorded" "$(field "$id" 'len(v["training"]["epochsDone"])')" "3"
expect_eq "every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_eq "learns the task (test accuracy > 0.9)" "$(field "$id" 'v["training"]["testMetrics"]["accuracy"] > 0.9')" "True"
expect_eq "val_dict_list.json has one entry per epoch" \
    "$(python3 -c "import json; l=json.load(open('$R/val_dict_list.json')); print([e['step'] for e in l], all('loss' in e and 'accuracy' in e for e in l))")" "[1, 2, 3] True"
expect_ok "final model written" test -s "$R/model/model.safetensors"
expect_ok "checkpoints written" test -s "$R/checkpoint/epoch-1.safetensors"
expect_contains "driver metrics (jsonl logger)" "$(cat "$R/log/driver/evaluation-metrics.txt")" '"type":"test"'
expect_contains "worker metrics (jsonl logger)" "$(cat "$R/log/worker-1/evaluation-metrics.txt")" '"type":"train"'
expect_contains "driver log" "$(cat "$R/log/driver/stdout")" "each once: yes"

# ---- the effective batch stays constant whatever the worker count
id=$(submit --model-dir "$WORK/m1" --numWorker 4 -- --epochs 1 --effective-batch-size 32)
expect_ok "ebs job finishes" "$LOOM" exec wait "$id" --timeout 120
expect_eq "engines follow the larger count (4 workers x 16 > 32)" "$(field "$id" 'v["training"]["effectiveBatchSize"]')" "64"

# ---- grow and shrink while it runs (epochs enough that it cannot finish
# before it is stopped, however fast the machine)
model_dir "$WORK/m2" 12000 1000
id=$(submit --model-dir "$WORK/m2" --numWorker 3)
expect_ok "elastic job runs" wait_for "$id" 'v["training"]["iteration"] > 20' 60
expect_ok "shrink to 1" "$LOOM" exec resize "$id" --workers 1
expect_ok "shrunk to 1 worker" wait_for "$id" 'v["training"]["workers"] == 1' 30
expect_ok "grow to 3" "$LOOM" exec resize "$id" --workers 3
expect_ok "grew to 3 workers" wait_for "$id" 'v["training"]["workers"] == 3 and "lastResizeMs" in v["training"]' 30
# The latency itself is a benchmark figure (bench/train), not a test.
echo "resize latency: $(field "$id" 'v["training"]["lastResizeMs"]') ms"
expect_fails "resize above the job's engines" "$LOOM" exec resize "$id" --workers 9
expect_contains "resize error names the range" "$(cat "$WORK/out")" "expected 1 to 3"
# ---- a worker SIGKILLed mid-epoch
pid=$(pgrep -f "worker .*--exec-id $id .*--slot 1 " | head -n1)
expect_ok "found worker 1" test -n "$pid"
kill -9 "$pid"
expect_ok "killed worker replaced" wait_for "$id" 'v["training"]["workers"] == 3 and v["training"]["generation"] >= 4' 30
expect_ok "stop the elastic job" "$LOOM" exec stop "$id"
expect_fails "stopped job does not finish" "$LOOM" exec wait "$id" --timeout 60
expect_contains "stopped job is KILLED" "$(cat "$WORK/out")" "KILLED"
expect_eq "every epoch so far used each sample once" "$(field "$id" "$every_epoch_once")" "True"
expect_contains "the kill was noticed" "$(cat "$LOOM_HOME/execs/$id/log/driver/stdout")" "killed by signal 9"

# ---- a joining worker that cannot pull the weights in time is stopped: PULL_FAILED
model_dir "$WORK/m5" 6000 1000
id=$(submit --model-dir "$WORK/m5" --numWorker 2 --msd-env EDT_PULL_WEIGHT_TIME_OUT=1 \
     --msd-env EDT_PULL_FAILED_LIMITS=2 --msd-env LOOM_FAULT_JOIN_DELAY_MS=2500)
expect_ok "pull job runs" wait_for "$id" 'v["training"]["iteration"] > 20' 60
expect_ok "shrink to 1" "$LOOM" exec resize "$id" --workers 1
expect_ok "shrunk" wait_for "$id" 'v["training"]["workers"] == 1' 30
expect_ok "grow to 2" "$LOOM" exec resize "$id" --workers 2
pull_failed() { grep -qs PULL_FAILED "$LOOM_HOME/execs/$1"/log/worker-*/stdout; }
wait_until 30 pull_failed "$id"
expect_contains "the late joiner was stopped with PULL_FAILED" \
    "$(cat "$LOOM_HOME/execs/$id"/log/worker-*/stdout)" "PULL_FAILED: could not pull the weights within 1 s, 2 time(s)"
expect_eq "training went on" "$(field "$id" 'v["state"]')" "RUNNING"
expect_ok "stop the pull job" "$LOOM" exec stop "$id"
"$LOOM" exec wait "$id" --timeout 60 >/dev/null 2>&1
expect_eq "pull job: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"

# ---- ASYNC: a parameter server; workers come and go without waiting for each other
model_dir "$WORK/m4" 6000 1000
id=$(submit --model-dir "$WORK/m4" --numWorker 3 --syncMode ASYNC --msd-env EDT_MAX_STALENESS=8)
expect_ok "async job runs" wait_for "$id" 'v["training"]["iteration"] > 50' 60
expect_ok "async shrink to 1" "$LOOM" exec resize "$id" --workers 1
expect_ok "async shrunk" wait_for "$id" 'v["training"]["workers"] == 1' 30
expect_ok "async grow to 3" "$LOOM" exec resize "$id" --workers 3
expect_ok "async grew" wait_for "$id" 'v["training"]["workers"] == 3' 30
pid=$(pgrep -f "worker .*--exec-id $id .*--slot 2 " | head -n1)
expect_ok "found an async worker" test -n "$pid"
kill -9 "$pid"
expect_ok "the dead async worker is replaced" wait_for "$id" 'v["training"]["workers"] == 3' 30
e0=$(field "$id" 'len(v["training"]["epochsDone"])')
expect_ok "async training goes on" wait_for "$id" "len(v[\"training\"][\"epochsDone\"]) > $e0 + 2" 60
expect_ok "stop the async job" "$LOOM" exec stop "$id"
"$LOOM" exec wait "$id" --timeout 60 >/dev/null 2>&1
expect_eq "async: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_eq "async learns (test accuracy > 0.9)" "$(field "$id" 'v["training"]["testMetrics"]["accuracy"] > 0.9')" "True"
expect_contains "async ran a parameter server" "$(cat "$LOOM_HOME/execs/$id/log/driver/stdout")" "parameter server"

# ---- the host SIGKILLed mid-training: the job resumes from a whole checkpoint
# (200 epochs: it must still be training when the host is killed)
model_dir "$WORK/m3" 12000 200
id=$(submit --model-dir "$WORK/m3" --numWorker 2)
expect_ok "job reaches epoch 3" wait_for "$id" 'v["training"]["epoch"] >= 3' 60
killed_pid=$HOST_PID
stop_host KILL
ck="$LOOM_HOME/execs/$id/checkpoint"
newest=$(ls "$ck" | sed -n 's/epoch-\([0-9]*\).safetensors/\1/p' | sort -n | tail -n1)
truncate -s 100 "$ck/epoch-$newest.safetensors"
start_host --cpu-slots 8
expect_eq "the killed host's shared memory was swept" "$(ls /dev/shm | grep -c "^loom-$killed_pid-")" "0"
expect_ok "recovers and finishes" "$LOOM" exec wait "$id" --timeout 240
drv=$(cat "$LOOM_HOME/execs/$id/log/driver/stdout")
expect_contains "truncated checkpoint refused" "$drv" "epoch-$newest.safetensors: truncated"
expect_contains "resumed from the previous one" "$drv" "resuming from $ck/epoch-$((newest - 1)).safetensors"
expect_eq "resumed epochs each used every sample once" "$(field "$id" "$every_epoch_once")" "True"
expect_eq "val_dict_list.json is whole" \
    "$(python3 -c "import json; l=json.load(open('$LOOM_HOME/execs/$id/val_dict_list.json')); print(l[-1]['step'])")" "200"

# ---- bad submissions
model_dir "$WORK/bad" 300 1
expect_fails "batch size 0" "$LOOM" exec start --exec-start native --model-dir "$WORK/bad" -- --batch-size 0
expect_contains "batch size 0 named" "$(cat "$WORK/out")" "--batch-size: expected a whole number from 1"
expect_fails "effective batch not a multiple" "$LOOM" exec start --exec-start native --model-dir "$WORK/bad" -- --effective-batch-size 20
expect_contains "multiple rule named" "$(cat "$WORK/out")" "effective batch size 20 is not a multiple of the batch size 16"
expect_fails "unknown training argument" "$LOOM" exec start --exec-start native --model-dir "$WORK/bad" -- --epochz 3
expect_contains "unknown argument named" "$(cat "$WORK/out")" 'unknown training argument "--epochz"'
id=$(submit --model-dir "$WORK/bad" -- --batch-size 5000)
expect_fails "batch larger than the data set" "$LOOM" exec wait "$id" --timeout 60
expect_contains "batch larger named" "$(cat "$WORK/out")" "batch size 5000 is larger than the data set (300 samples)"
sed -i 's/"dense", "units": 32/"densse", "units": 32/' "$WORK/bad/edt.json"
id=$(submit --model-dir "$WORK/bad")
expect_fails "unknown layer" "$LOOM" exec wait "$id" --timeout 60
expect_contains "unknown layer named" "$(cat "$WORK/out")" "densse"
model_dir "$WORK/bad2" 300 1
sed -i 's/"train": "train.csv"/"train": "nothere.csv"/' "$WORK/bad2/edt.json"
id=$(submit --model-dir "$WORK/bad2")
expect_fails "missing data set" "$LOOM" exec wait "$id" --timeout 60
expect_contains "missing data set named" "$(cat "$WORK/out")" "nothere.csv"
mkdir -p "$WORK/bad3"
printf '{"model": ' > "$WORK/bad3/edt.json"
expect_fails "malformed spec" "$LOOM" exec start --exec-start native --model-dir "$WORK/bad3"
expect_contains "malformed spec named" "$(cat "$WORK/out")" "edt.json: malformed JSON"

stop_host TERM
finish
