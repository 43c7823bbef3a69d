#!/usr/bin/env bash
# The exec service asks the one GPU inventory whether the host has a GPU:
# a GPU job is refused by name on a host whose driver reports none, and
# accepted where the (stand-in) driver reports one.
LOOM=$1 FAKE_DRIVER_DIR=$2
. "$(dirname "$0")/../../integration/lib.sh"
mkdir -p "$WORK/model"
printf 'echo "rank $RANK"\n' > "$WORK/model/main.sh"
submit_gpu() {
    "$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main main.sh \
        --workerDeviceType gpu 2>&1
}

export LD_LIBRARY_PATH=$FAKE_DRIVER_DIR LOOM_FAKE_CUDA_DEVICES=0
start_host
out=$(submit_gpu)
expect_contains "no GPU: refused by name" "$out" "--workerDeviceType gpu: this host has no GPU"
stop_host TERM

export LOOM_FAKE_CUDA_DEVICES=1
start_host
out=$(submit_gpu)
expect_not_contains "one GPU: not refused" "$out" "has no GPU"
expect_contains "one GPU: submitted" "$out" "submitted"
stop_host TERM
finish
