#!/usr/bin/env bash
# Elastic training on a 2-node Slurm lab (2 CPU slots each), the host on
# node1. Each worker is one Slurm job on its device's node, as the user's
# account, and the members all-reduce over TCP (a ring per generation).
#  - Without --worker-link tcp:ADDR the exec is refused, saying why.
#  - (The seeds' scenario across machines: test_demo_cluster.sh.)
#  - An administrator's scancel of one worker's Slurm job: that worker is
#    lost and started again, its node stays in the inventory.
#  - A node cut off mid-epoch (its link down): its workers are dropped for
#    their silence within seconds, the exec goes on and finishes on the
#    other node with every sample once per epoch, and the node is kept out.
#  - The host killed while an exec trains on the nodes: the next one
#    resumes it from its last checkpoint; no Slurm job is left behind.
# Skipped (77) where namespaces cannot be made.
LOOM=$1
BUILD=$2
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"
. "$(dirname "$0")/lab_lib.sh"
lab_require_loom "$LOOM"
lab_up 2
lab_install_loom "$LOOM" "$BUILD"
state_of() { field "$1" 'v["state"]'; }
driver_log() { cat "$SHARED/files/execs/$1/log/driver/stdout" 2>/dev/null; }
# in_log ID TEXT: the exec's driver log says TEXT (a cheap poll: no CLI)
in_log() { grep -qF "$2" "$SHARED/files/execs/$1/log/driver/stdout" 2>/dev/null; }
jobs_of() { squeue -h -o %j | grep -c "^loom:$1:"; }
wide_model "$SHARED/b" 6000 4 1024
wide_model "$SHARED/c" 12000 4 1024
chmod -R a+rX "$SHARED/b" "$SHARED/c"

# ---- workers on nodes must reach the host over TCP at an address of its own
start_on_node1 --shared-dir "$SHARED/files"
id=$(submit --model-dir "$SHARED/b" --numWorker 2)
wait_until 60 output_is ERROR state_of "$id"
expect_contains "without --worker-link tcp:ADDR an exec on nodes is refused, saying why" \
    "$("$LOOM" exec view "$id")" "--worker-link tcp:ADDR"
stop_host

# ---- (the seeds' scenario across machines is `loom demo --cluster`'s:
# integration_cluster_demo)
start_on_node1 --shared-dir "$SHARED/files" --worker-link "tcp:$NODE1"

# ---- an administrator's scancel of one worker's Slurm job costs that
# worker only: the job goes on (the worker started again, as any lost
# worker), and its node, which answered, stays in the inventory
C=$(submit --model-dir "$SHARED/c" --numWorker 4)
expect_ok "4 workers over both nodes" wait_until 120 in_log "$C" "generation 1: 4 worker(s)"
victim=$(driver_log "$C" | sed -n 's/^worker \([0-9]*\) starts on node node2$/\1/p' | head -n1)
expect_ok "scancel -n loom:$C:$victim" scancel -n "loom:$C:$victim"
expect_ok "the worker is lost, saying how it ended" wait_until 60 in_log "$C" "worker $victim exited with status"
expect_ok "and started again" wait_until 60 output_is 2 \
    eval "driver_log $C | grep -c '^worker $victim starts on node'"
expect_not_contains "its node is not kept out" "$(cat "$LOOM_HOME/loom.log")" "node node2 is kept out"
expect_eq "neither is its other worker dropped" \
    "$(driver_log "$C" | grep -c "^worker [0-9]* .*dropped\|left the inventory")" 0

# ---- a node cut off mid-epoch
expect_ok "an epoch done" wait_until 120 in_log "$C" "epoch 1/4"
t0=$(date +%s%N)
ip link set "${LOOM_LAB_NAME}v2" down
if wait_until 30 in_log "$C" "no heartbeat for"; then
    echo "node2 cut off: its workers dropped after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    pass
else
    fail "node2's workers were not dropped for their silence: $(driver_log "$C" | tail -n 5)"
fi
expect_ok "it goes on, on node1" wait_until 60 in_log "$C" "2 worker(s)"
expect_ok "and finishes" "$LOOM" exec wait "$C" --timeout 600
expect_eq "every sample once per epoch" "$(field "$C" "$every_epoch_once")" "True"
expect_contains "node2 is kept out, saying why" "$(cat "$LOOM_HOME/loom.log")" \
    "node node2 is kept out of the inventory"
ip link set "${LOOM_LAB_NAME}v2" up
# node2 back in Slurm's eyes, its cancelled jobs cleaned up there
expect_ok "node2 is back, idle" wait_until 120 node_idle node2
expect_ok "the cut node's Slurm jobs are gone" wait_until 60 output_is 0 jobs_of "$C"

# ---- the host killed while an exec trains on the nodes: the next host
# resumes it from its last checkpoint, and no Slurm job is left behind
D=$(submit --model-dir "$SHARED/c" --numWorker 2)
expect_ok "an exec trains on the nodes, its first checkpoint written" \
    wait_until 120 in_log "$D" "checkpoint/epoch-1"
kill -9 "$HOST_PID"
wait "$HOST_PID" 2>/dev/null
HOST_PID=
start_on_node1 --shared-dir "$SHARED/files" --worker-link "tcp:$NODE1"
expect_ok "the next host resumes it" wait_until 120 in_log "$D" "resuming from"
if ! "$LOOM" exec wait "$D" --timeout 600 >/dev/null; then
    fail "it finishes: $(driver_log "$D" | grep -v '^profile' | tail -n 8); host: $(grep -i 'slurm' "$LOOM_HOME/loom.log" | tail -n 8)"
fi
expect_eq "FINISHED" "$(state_of "$D")" "FINISHED"
expect_eq "every sample once per epoch" "$(field "$D" "$every_epoch_once")" "True"
wait_until 30 output_is 0 jobs_of "$D"
expect_eq "no Slurm job left" "$(jobs_of "$D")" "0"
stop_host
finish
