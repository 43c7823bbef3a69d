#!/usr/bin/env bash
# `loom exec logs -f` on a training exec: its [progress] lines say what is
# happening and never count past the end (no "0 of 0 samples", no "epoch
# 2/1"), give the running epoch's rate (not the last epoch's, 0 during the
# first), and the job's view ends with "finished: N samples in 1 epoch";
# the profile lines number epochs from 1 as the epoch lines do.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4
# One epoch that lasts several seconds.
wide_model "$WORK/m" 24000 1
id=$(submit --model-dir "$WORK/m" --numWorker 2)
timeout 300 "$LOOM" exec logs "$id" -f >"$WORK/logs.out" 2>"$WORK/progress.out"
expect_eq "logs -f follows the job to its end" "$?" 0
grep '^\[progress\]' "$WORK/progress.out" | tee "$WORK/lines"
expect_ok "progress lines were printed" test -s "$WORK/lines"
expect_eq "no count of an unknown total" "$(grep -c 'of 0 samples' "$WORK/lines")" 0
expect_eq "no epoch past the last" "$(grep -Ec 'epoch ([2-9]|[1-9][0-9]+)/1' "$WORK/lines")" 0
expect_eq "no 'last epoch' rate in the first epoch" "$(grep -c 'last epoch' "$WORK/lines")" 0
expect_eq "every epoch line with samples done has the epoch's rate, above 0" \
    "$(grep -E 'epoch 1/1: [1-9]' "$WORK/lines" | grep -Evc ' [1-9][0-9,]* samples/s')" 0
expect_ok "an epoch line with samples done was seen" \
    grep -Eq 'epoch 1/1: [1-9][0-9,]* of 24,000 samples, [12] workers?, [1-9][0-9,]* samples/s' "$WORK/lines"
expect_contains "the view's last progress says it finished" \
    "$(field "$id" 'v["training"]["progress"]')" "finished: 24,000 samples in 1 epoch"
driver="$LOOM_HOME/execs/$id/log/driver/stdout"
expect_contains "the driver's profile numbers the epoch from 1" "$(cat "$driver")" "profile epoch 1:"
expect_eq "no profile of an epoch 0" "$(cat "$driver" "$LOOM_HOME/execs/$id"/log/worker-*/stdout | grep -c 'profile epoch 0')" 0
stop_host
finish
