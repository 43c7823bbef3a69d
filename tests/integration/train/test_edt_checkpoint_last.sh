#!/usr/bin/env bash
# checkpoint_freq N checkpoints every N-th epoch, the last one included (as
# WMLA does): a one-epoch job with checkpoint_freq 1 leaves epoch-1. With
# EDT_CHECKPOINT_LAST=0 the last epoch leaves no checkpoint (its model is in
# model/). The setting lives in the exec's arguments, so a job the host
# resumes after being killed still checkpoints its last epoch.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4
model_dir "$WORK/m" 300 2 ', "checkpoint_freq": 1'

model_dir "$WORK/one" 300 1 ', "checkpoint_freq": 1'

one=$(submit --model-dir "$WORK/one" --numWorker 1)
plain=$(submit --model-dir "$WORK/m" --numWorker 1)
skip=$(submit --model-dir "$WORK/m" --numWorker 1 --msd-env EDT_CHECKPOINT_LAST=0)
last=$(submit --model-dir "$WORK/m" --numWorker 1 --msd-env EDT_CHECKPOINT_LAST=1)
for id in "$one" "$plain" "$skip" "$last"; do
    expect_ok "$id finishes" "$LOOM" exec wait "$id" --timeout 120
done
expect_eq "one epoch, checkpoint_freq 1: epoch 1's checkpoint" \
    "$(ls "$LOOM_HOME/execs/$one/checkpoint" | grep -c '^epoch-1\.safetensors$')" 1
expect_eq "two epochs: both checkpoints" \
    "$(ls "$LOOM_HOME/execs/$plain/checkpoint" | grep -c '^epoch-[12]\.safetensors$')" 2
expect_eq "EDT_CHECKPOINT_LAST=0: epoch 1's checkpoint only" \
    "$(ls "$LOOM_HOME/execs/$skip/checkpoint" | grep -c '^epoch-')" 1
expect_eq "EDT_CHECKPOINT_LAST=1: epoch 2's checkpoint too" \
    "$(ls "$LOOM_HOME/execs/$last/checkpoint" | grep -c '^epoch-2\.')" 1
expect_fails "a value other than 0 or 1 is refused, naming it" \
    "$LOOM" exec start --exec-start edt --model-dir "$WORK/m" --msd-env EDT_CHECKPOINT_LAST=2
expect_contains "the refusal names the setting" "$(cat "$WORK/out")" EDT_CHECKPOINT_LAST

# A longer job (a wider layer, more epochs), the host killed once its
# first checkpoint is written.
model_dir "$WORK/long" 40000 12 ', "checkpoint_freq": 1'
sed -i 's/"units": 32/"units": 256/' "$WORK/long/edt.json"
id=$(submit --model-dir "$WORK/long" --numWorker 1 --msd-env EDT_CHECKPOINT_LAST=1)
for _ in $(seq 1 600); do
    ls "$LOOM_HOME/execs/$id/checkpoint" 2>/dev/null | grep -q '^epoch-1\.' && break
    sleep 0.1
done
expect_eq "restart: epoch 1 checkpointed before the kill" \
    "$(ls "$LOOM_HOME/execs/$id/checkpoint" | grep -c '^epoch-1\.')" 1
stop_host KILL
start_host --cpu-slots 4
expect_ok "restart: the job finishes" "$LOOM" exec wait "$id" --timeout 300
expect_contains "restart: the job was resumed, not finished before the kill" \
    "$(cat "$LOOM_HOME/loom.log")" "$id: resuming from"
expect_eq "restart: the resumed job checkpointed its last epoch" \
    "$(ls "$LOOM_HOME/execs/$id/checkpoint" | grep -c '^epoch-12\.')" 1
stop_host
finish
