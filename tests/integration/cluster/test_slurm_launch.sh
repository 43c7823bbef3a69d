#!/usr/bin/env bash
# Launch-style execs on a 2-node Slurm lab (2 CPU slots each). The host
# runs on node1 (a login node: srun --uid needs the accounts where it runs;
# the lab's bridge is private, so passwords over plain HTTP are allowed).
# Without --shared-dir an exec on the nodes is refused, saying why. With it:
# an exec of 3 workers runs 2 on one node and 1 on the other, each worker
# one Slurm job as the user's account, inside `loom confine` (it cannot
# write /var/tmp, which is open to every account), with RANK, LOCAL_RANK,
# LOCAL_WORLD_SIZE and NODE_RANK as torchrun sets them, and leaves no Slurm
# job; examples/distpytorch (DDP) trains across the nodes unchanged (when
# the jobs' python3 has PyTorch); a node that cannot reach the shared
# folder is named and kept out; a host killed while an exec runs leaves
# Slurm jobs, which the next host cancels. Skipped (77) where namespaces
# cannot be made.
LOOM=$1
BUILD=$2
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lab_lib.sh"
lab_require_loom "$LOOM"
lab_up 2
lab_install_loom "$LOOM" "$BUILD"
mkdir -p "$WORK/model"
cat > "$WORK/model/run.sh" <<'SH'
#!/bin/sh
# /var/tmp is open to every account: only loom's Landlock rules keep a job
# from making a file there (a new name each run)
f=/var/tmp/loom-escape-$$-$RANK
if (: >"$f") 2>/dev/null; then rm -f "$f"; box=escaped; else box=confined; fi
echo "$(hostname) rank=$RANK local=$LOCAL_RANK of $LOCAL_WORLD_SIZE node=$NODE_RANK world=$WORLD_SIZE uid=$(id -u) $box"
if [ -n "${HOLD:-}" ]; then exec sleep 600; fi
SH
chmod +x "$WORK/model/run.sh"
state_of() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
submit() { "$LOOM" exec start --exec-start command --model-dir "$WORK/model" --model-main run.sh "$@" 2>&1 |
           grep -o 'admin-[0-9]*-[0-9]*' | head -n1; }

# ---- without a shared folder: refused, saying why
start_on_node1
id=$(submit)
wait_until 60 output_is ERROR state_of "$id"
expect_contains "without --shared-dir an exec on nodes is refused, saying why" \
    "$("$LOOM" exec view "$id")" "loom serve --shared-dir DIR"
stop_host

# ---- with it: 3 workers, 2 + 1 over the nodes
start_on_node1 --shared-dir "$SHARED/files"
id=$(submit --numWorker 3)
expect_contains "an exec of 3 workers" "$id" "admin-"
wait_until 90 output_is FINISHED state_of "$id"
expect_eq "it finished" "$(state_of "$id")" "FINISHED"
dir=$SHARED/files/execs/$id/log
got=$(for w in 0 1 2; do cat "$dir/worker-$w/stdout" 2>/dev/null; done)
nodes=$(echo "$got" | awk '{print $1}' | tr '\n' ' ')
case "$nodes" in
"node1 node1 node2 " | "node2 node2 node1 ") pass ;;
*) fail "workers 2 + 1 over the nodes, ranks consecutive per node: '$nodes' ($got, $(cat "$WORK/serve.out" | tail -5))" ;;
esac
expect_contains "rank 0: the first of 2 on its node" "$got" "rank=0 local=0 of 2 node=0 world=3 uid=200001"
expect_contains "rank 1: the second there" "$got" "rank=1 local=1 of 2 node=0 world=3 uid=200001"
expect_contains "rank 2: alone on the other node" "$got" "rank=2 local=0 of 1 node=1 world=3 uid=200001"
expect_eq "each confined there by loom's rules (writes only its exec folder)" \
    "$(echo "$got" | grep -c ' confined$')" "3"
expect_eq "no Slurm job left" "$(squeue -h -o %j | grep -c "^loom:$id:")" "0"

# ---- a DDP script across the nodes, unchanged (distPyTorch: torch's gloo
# over the lab's bridge, MASTER_ADDR rank 0's node)
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then # the jobs' python3 (their PATH)
    ddp=$("$LOOM" exec start --exec-start distPyTorch --model-dir "$SRC/examples/distpytorch" \
          --model-main train.py --numWorker 3 -- --epochs 1 --limit 600 2>&1 |
          grep -o 'admin-[0-9]*-[0-9]*' | head -n1)
    ended() { case "$(state_of "$1")" in FINISHED | ERROR | KILLED) return 0 ;; esac; return 1; }
    wait_until 240 ended "$ddp"
    expect_eq "a DDP script trains across the nodes" "$(state_of "$ddp")" "FINISHED"
    expect_ok "and writes its results there" test -s "$SHARED/files/execs/$ddp/val_dict_list.json"
else
    skip_part "DDP across the nodes: no PyTorch"
fi

# ---- a node that cannot reach the shared folder (unmounted there): the
# exec says which, and the node is kept out for a while
lab exec node2 mount -t tmpfs loomhide "$SHARED/files"
bad=$(submit --numWorker 3)
wait_until 60 output_is ERROR state_of "$bad"
expect_contains "the exec names the node that cannot reach the folder" \
    "$("$LOOM" exec view "$bad")" "node node2 cannot reach the exec's folder"
node2_slots() { "$LOOM" --json slots | grep -c '"node2"'; }
expect_eq "node2 is kept out of the inventory" "$(node2_slots)" "0"
expect_contains "the log says why" "$(cat "$LOOM_HOME/loom.log")" \
    "node node2 is kept out of the inventory for 30 s: it cannot reach the shared folder"
lab exec node2 umount "$SHARED/files"

# ---- the host killed while an exec runs on the nodes, and a Slurm job
# named after that exec left behind: the next host cancels it
jobs_of() { squeue -h -o %j | grep -c "^loom:$1:"; }
held=$(submit --numWorker 2 --msd-env HOLD=1)
wait_until 60 output_is 2 jobs_of "$held"
expect_eq "its 2 workers run as Slurm jobs" "$(jobs_of "$held")" "2"
kill -9 "$HOST_PID"
wait "$HOST_PID" 2>/dev/null
HOST_PID=
sbatch -Q -J "loom:$held:9" -w node2 --wrap "sleep 600" >/dev/null
wait_until 20 output_is 3 jobs_of "$held"
expect_eq "and one more named after it" "$(jobs_of "$held")" "3"
start_on_node1 --shared-dir "$SHARED/files"
wait_until 60 output_is 0 jobs_of "$held"
expect_eq "the next host leaves none of them" "$(jobs_of "$held")" "0"
expect_contains "it says which it cancelled" "$(cat "$LOOM_HOME/loom.log")" "cancelled Slurm job"
expect_eq "the exec ended" "$(state_of "$held")" "ERROR"
expect_contains "saying why" "$("$LOOM" exec view "$held")" "the host restarted"
stop_host
finish
