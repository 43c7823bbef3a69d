#!/usr/bin/env bash
# Losing workers never loses progress: the only worker SIGKILLed mid-run
# (with and without checkpoints) and both workers of a 2-worker job at once
# are replaced from the coordinator's copy of the state, the samples since
# are trained again and counted once, and the model ends as good as an
# uninterrupted run's; a worker killed by a logger plugin at every step
# ends the job ERROR naming the plugin after EDT_MAX_WORKER_FAILURES tries;
# every worker lost after an epoch's validation does not validate or
# checkpoint that epoch again;
# the host killed while every worker is being replaced resumes the job.
LOOM=$1
PLUGINS=$2
. "$(dirname "$0")/../lib.sh"

. "$(dirname "$0")/../train_lib.sh"

accuracy() { field "$1" 'v["training"]["testMetrics"]["accuracy"]'; }
driver_log() { cat "$LOOM_HOME/execs/$1/log/driver/stdout"; }
# workers_running ID COUNT: true once COUNT workers of the exec run (one
# being replaced is missing for a moment); their pids are in $WORK/pids.
workers_running() {
    pgrep -f "worker .*--exec-id $1 " > "$WORK/pids"
    [ "$(grep -c . "$WORK/pids")" -ge "$2" ]
}
kill_workers() { # kill_workers WHAT ID COUNT: SIGKILLs the exec's COUNT workers once they run
    if wait_until 60 workers_running "$2" "$3"; then
        pass
        kill -9 $(cat "$WORK/pids")
    else
        fail "$1: $3 worker(s) of exec $2 never ran at once (found: $(tr '\n' ' ' < "$WORK/pids"))"
    fi
}
# in_log ID TEXT: the exec's driver log says TEXT. The kills below wait for
# an epoch's end there (a cheap poll), not through the CLI and Python: on a
# loaded machine a job once finished between a slow poll and the kill.
in_log() { grep -qF "$2" "$LOOM_HOME/execs/$1/log/driver/stdout" 2>/dev/null; }

start_host --cpu-slots 8

wide_model "$WORK/m" 12000 3
# The reference: the same job, never interrupted.
ref=$(submit --model-dir "$WORK/m" --numWorker 1 -- --checkpoint-freq 0)
expect_ok "reference job finishes" "$LOOM" exec wait "$ref" --timeout 300
ref_acc=$(accuracy "$ref")
echo "reference accuracy: $ref_acc"

# ---- the only worker killed mid-epoch, without and with checkpoints
for ck in 0 1; do
    id=$(submit --model-dir "$WORK/m" --numWorker 1 --msd-env EDT_RECOVERY_INTERVAL_MS=300 \
         -- --checkpoint-freq $ck)
    expect_ok "checkpoints $ck: epoch 1 done" wait_until 120 in_log "$id" "epoch 1/3"
    kill_workers "checkpoints $ck: found the worker" "$id" 1
    expect_ok "checkpoints $ck: finishes" "$LOOM" exec wait "$id" --timeout 300
    expect_eq "checkpoints $ck: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
    expect_eq "checkpoints $ck: accuracy within 0.5 point of the uninterrupted run ($ref_acc)" \
        "$(python3 -c "print(abs($(accuracy "$id") - $ref_acc) <= 0.005)")" "True"
    log=$(driver_log "$id")
    expect_contains "checkpoints $ck: the rewind is reported" "$log" "every worker holding the state was lost: rewound"
    expect_contains "checkpoints $ck: the epoch line says so" "$log" "after losing every worker"
    echo "$log" | grep -E "rewound|killed"
    expect_eq "checkpoints $ck: the copies are removed" "$(ls -A "$LOOM_HOME/execs/$id/checkpoint" | grep -c recovery)" "0"
done

# ---- every worker of a 2-worker job killed at once
id=$(submit --model-dir "$WORK/m" --numWorker 2 --msd-env EDT_RECOVERY_INTERVAL_MS=300)
expect_ok "2 workers: epoch 1 done" wait_until 120 in_log "$id" "epoch 1/3"
kill_workers "2 workers: found both" "$id" 2
expect_ok "2 workers: finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "2 workers: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_eq "2 workers: learns as well (accuracy within 1 point of the 1-worker run)" \
    "$(python3 -c "print(abs($(accuracy "$id") - $ref_acc) <= 0.01)")" "True"
expect_contains "2 workers: the rewind is reported" "$(driver_log "$id")" "after losing every worker"

# ---- every worker lost after an epoch's validation and checkpoint: the
# rewind goes back to the copy made at the epoch's end, and that epoch is
# validated and checkpointed once, not again
id=$(submit --model-dir "$WORK/m" --numWorker 2 --msd-env EDT_RECOVERY_INTERVAL_MS=600000 \
     -- --checkpoint-freq 1)
expect_ok "after epoch 1: epoch 1 checkpointed" wait_until 120 in_log "$id" "epoch-1.safetensors"
kill_workers "after epoch 1: found both workers" "$id" 2
expect_ok "after epoch 1: finishes" "$LOOM" exec wait "$id" --timeout 300
expect_contains "after epoch 1: rewound to the epoch's end" "$(driver_log "$id")" "to epoch 2, step"
tests_per_epoch=$(python3 -c "
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(sorted(collections.Counter(l['epoch'] for l in lines if l.get('type') == 'test').items()))
" "$LOOM_HOME/execs/$id/log/driver/evaluation-metrics.txt")
expect_eq "after epoch 1: one validation per epoch in evaluation-metrics.txt" "$tests_per_epoch" \
    "[(1, 1), (2, 1), (3, 1)]"
expect_eq "after epoch 1: epoch 1 checkpointed once" \
    "$(driver_log "$id" | grep -c '^checkpoint .*/epoch-1\.safetensors')" 1
expect_eq "after epoch 1: one validation line per epoch in val_dict_list.json" \
    "$(python3 -c "import json; print([e['step'] for e in json.load(open('$LOOM_HOME/execs/$id/val_dict_list.json'))])")" \
    "[1, 2, 3]"

# ---- a worker logger that kills its worker at every step
model_dir "$WORK/crash" 600 2 ", \"loggers\": [{\"name\": \"worker_crash_logger\", \"role\": \"worker\", \"path\": \"$PLUGINS/worker_crash_logger.so\"}]"
id=$(submit --model-dir "$WORK/crash" --numWorker 1 -- --log-every 1)
expect_fails "crashing plugin: the job does not finish" "$LOOM" exec wait "$id" --timeout 120
expect_contains "crashing plugin: the job is ERROR" "$(cat "$WORK/out")" "ERROR"
expect_contains "crashing plugin: the cause is named" "$(field "$id" 'v.get("message", v)')" \
    "worker 0 died 3 time(s) in a row: killed by signal 6 (Aborted) in worker logger plugin worker_crash_logger"
expect_eq "crashing plugin: replaced twice, not forever" \
    "$(driver_log "$id" | grep -c "^worker 0 killed by signal 6")" "3"
id=$(submit --model-dir "$WORK/crash" --numWorker 1 --msd-env EDT_MAX_WORKER_FAILURES=5 -- --log-every 1)
"$LOOM" exec wait "$id" --timeout 120 >/dev/null 2>&1
expect_contains "EDT_MAX_WORKER_FAILURES is the number of tries" "$(driver_log "$id")" "died 5 time(s) in a row"

expect_fails "EDT_MAX_WORKER_FAILURES=0 refused" "$LOOM" exec start --exec-start edt \
    --model-dir "$WORK/crash" --msd-env EDT_MAX_WORKER_FAILURES=0
expect_contains "the refusal names the setting" "$(cat "$WORK/out")" \
    "EDT_MAX_WORKER_FAILURES: expected a whole number from 1 to 1000"
expect_fails "EDT_RECOVERY_INTERVAL_MS=-1 refused" "$LOOM" exec start --exec-start edt \
    --model-dir "$WORK/crash" --msd-env EDT_RECOVERY_INTERVAL_MS=-1
expect_contains "the refusal names the setting" "$(cat "$WORK/out")" "EDT_RECOVERY_INTERVAL_MS: expected"

# ---- the host killed while every worker is being replaced
wide_model "$WORK/h" 6000 4
id=$(submit --model-dir "$WORK/h" --numWorker 2)
expect_ok "restart: training" wait_for "$id" 'v["training"]["epoch"] >= 2 and v["training"]["workers"] == 2' 120
kill_workers "restart: found both workers" "$id" 2
# the host killed once the driver saw the loss, while it replaces them
wait_until 10 grep -q "killed by signal 9" "$LOOM_HOME/execs/$id/log/driver/stdout"
stop_host KILL
pkill -9 -f "worker .*--exec-id $id " 2>/dev/null
start_host --cpu-slots 8
expect_ok "restart: the job finishes" "$LOOM" exec wait "$id" --timeout 300
expect_eq "restart: every sample once per epoch" "$(field "$id" "$every_epoch_once")" "True"
expect_eq "restart: validated through the last epoch" \
    "$(python3 -c "import json; l=json.load(open('$LOOM_HOME/execs/$id/val_dict_list.json')); print(l[-1]['step'])")" "4"

finish
