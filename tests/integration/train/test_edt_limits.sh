#!/usr/bin/env bash
# An elastic trainer exec runs under the same limits as a launch-style one
# (README "What a job may take"): `exec view` shows them while it trains,
# each worker's cgroup holds its part of --job-max-memory, and an exec
# whose RESULT_DIR goes over --job-max-disk is stopped with ERROR naming
# the flag. Needs root and a writable cgroupfs: skipped otherwise.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

if [ "$(id -u)" != 0 ] || { [ ! -w /sys/fs/cgroup/pids ] && [ ! -w /sys/fs/cgroup/unified ]; }; then
    echo "SKIPPED: needs root and a writable cgroupfs" >&2
    exit 77
fi

# ---- the limits shown and applied while it trains
start_host --cpu-slots 2 --job-max-memory 512M
wide_model "$WORK/m" 24000 1
id=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "it trains" wait_for "$id" 'v["state"] == "RUNNING" and "limits" in v' 60
expect_eq "exec view shows its memory limit" "$(field "$id" 'v["limits"]["memoryBytes"]')" $((512 << 20))
expect_eq "its process limit" "$(field "$id" 'v["limits"]["processes"]')" 4096
expect_eq "its disk limit" "$(field "$id" 'v["limits"]["diskBytes"]')" $((20 << 30))
expect_contains "in the text view too" "$("$LOOM" exec view "$id")" "limits      4096 processes and threads"
if [ -d /sys/fs/cgroup/memory ]; then
    group=
    for _ in $(seq 1 100); do
        group=$(find /sys/fs/cgroup/memory -maxdepth 8 -type d -name "worker-${id}-*" 2>/dev/null | head -n1)
        [ -n "$group" ] && break
        sleep 0.1
    done
    expect_eq "a worker's memory cgroup holds half of it (two workers at most)" \
        "$(cat "$group/memory.limit_in_bytes" 2>&1)" $((256 << 20))
else
    echo "NOT TESTED: no v1 memory controller for the workers' memory limit" >&2
fi
expect_ok "it ends" "$LOOM" exec wait "$id" --timeout 240
expect_eq "within its limits it finishes" "$(field "$id" 'v["state"]')" FINISHED
stop_host

# ---- over the disk limit: its data alone (40,000 rows, about 2.3 MiB, each
# file under the limit) takes RESULT_DIR past 2 MiB
start_host --cpu-slots 2 --job-max-disk 2M
model_dir "$WORK/big" 40000 50
id=$(submit --model-dir "$WORK/big" --numWorker 2)
expect_fails "it ends, not FINISHED" "$LOOM" exec wait "$id" --timeout 240
expect_eq "stopped with ERROR" "$(field "$id" 'v["state"]')" ERROR
expect_contains "the message names the disk limit" "$(field "$id" 'v["message"]')" \
    "over the disk limit of 2 MiB (loom serve --job-max-disk)"
expect_eq "before its 50 epochs" "$(field "$id" 'len(v.get("training", {}).get("epochsDone", [])) < 50')" True
stop_host
finish
