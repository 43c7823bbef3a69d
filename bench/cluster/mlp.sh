#!/usr/bin/env bash
# bench/cluster/mlp.sh - elastic training across the Slurm lab's 2 nodes
# (tests/cluster/lab.sh: each node a network namespace with 1 CPU slot):
# the MLP 784-512-512-10 on Fashion-MNIST (bench/train/models/mlp), batch
# 64 per worker, one worker on each node, in interleaved turns, medians of
# RUNS runs:
#   loom     `loom serve --slurm` on node1 (--shared-dir, --worker-link
#            tcp:ADDR), an edt exec of 2 workers: each a Slurm job on its
#            node, all-reducing over TCP; samples/s of its last epoch
#   torchrun PyTorch DDP over gloo, one process per node with torchrun's
#            variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR on node1:
#            env:// rendezvous), the same model, data, batch and optimizer
#            (bench/train/torch_train.py --torchrun); samples/s of its last
#            epoch. The variables are set here as `torchrun --nnodes 2
#            --nproc_per_node 1` sets them: Debian's torch 1.13 torchrun
#            stops before starting any process (its elastic agent's
#            `redirects` is None: AttributeError)
#
#   bench/cluster/mlp.sh [BUILD_DIR]     (default: build in this tree)
#   RUNS=3 EPOCHS=2 bench/cluster/mlp.sh
#   MSD_ENV="EDT_OVERLAP_REDUCE=1" bench/cluster/mlp.sh   (loom's exec with
#            these --msd-env settings, space-separated)
#
# Needs root, namespaces (lab.sh check: says so and skips otherwise),
# Debian's python3-torch and dataset-fashion-mnist, and a loom built with
# libslurm. The lab is its own (LOOM_LAB_NAME, _DIR, _NET below).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
runs=${RUNS:-3}
epochs=${EPOCHS:-2}
python=${PYTHON:-/usr/bin/python3}
data=${DATA:-/usr/share/datasets/fashion-mnist}
export LOOM_LAB_NAME=${LOOM_LAB_NAME:-loommlp}
export LOOM_LAB_DIR=${LOOM_LAB_DIR:-${TMPDIR:-/tmp}/loom-mlp-lab}
export LOOM_LAB_NET=${LOOM_LAB_NET:-10.231.11}
export LOOM_LAB_CPUS=1 # a CPU slot per node: a 2-worker job spans both

loom=$build/bin/loom
[ -x "$loom" ] || { echo "mlp.sh: $loom not found; build loom first" >&2; exit 1; }
"$python" -c 'import torch.distributed' 2>/dev/null ||
    { echo "mlp.sh: PyTorch is missing: apt-get install -y python3-torch" >&2; exit 1; }
bench=mlp.sh
. "$here/lab_host.sh"
python3 - "$root/bench/train/models/mlp/edt.json" "$shared/model/edt.json" "$epochs" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec.setdefault("training", {})["epochs"] = int(sys.argv[3])
spec["training"]["checkpoint_freq"] = 0
json.dump(spec, open(sys.argv[2], "w"))
PY
chmod -R a+rX "$shared/model"

results=$(mktemp)
trap 'rm -f "$results"; lab_host_down' EXIT
port=29700
for run in $(seq "$runs"); do
    msd=()
    for setting in ${MSD_ENV:-}; do msd+=(--msd-env "$setting"); done
    id=$("$loom" exec start --exec-start native --model-dir "$shared/model" --data-dir "$data" \
         --numWorker 2 "${msd[@]}" |
         sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    "$loom" exec wait "$id" --timeout 1800 >/dev/null ||
        { echo "mlp.sh: loom's exec failed: $("$loom" exec view "$id" 2>&1 | head -n 8)" >&2; exit 1; }
    rate=$(driver_log "$id" | sed -n "s|^epoch $epochs/$epochs: .* \([0-9]*\) samples/s.*|\1|p")
    nodes=$(driver_log "$id" | sed -n 's/^worker [0-9]* starts on node //p' | sort -u | tr '\n' ' ')
    echo "RESULT loom $rate $nodes" >>"$results"
    port=$((port + 1)) # a fresh rendezvous port each turn
    pids=()
    for r in 1 0; do
        "$lab" exec "node$((r + 1))" env OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=eth0 \
            RANK="$r" WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 GROUP_RANK="$r" \
            MASTER_ADDR="$node1" MASTER_PORT="$port" "$python" \
            "$root/bench/train/torch_train.py" --torchrun --mode ddp --epochs "$epochs" \
            --spec "$shared/model/edt.json" --data "$data" >"$LOOM_LAB_DIR/torch.$r" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || true; done
    grep '^RESULT' "$LOOM_LAB_DIR/torch.0" | awk '{print "RESULT torchrun", $5}' >>"$results" ||
        { echo "mlp.sh: torchrun failed: $(tail -n 5 "$LOOM_LAB_DIR/torch.0" "$LOOM_LAB_DIR/torch.1")" >&2; exit 1; }
    echo "run $run of $runs: $(tail -n 2 "$results" | awk '{print $2, $3}' | tr '\n' ' ')" >&2
done

"$python" - "$results" "$runs" "$epochs" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.startswith("RESULT")]
loom = [float(r[2]) for r in rows if r[1] == "loom"]
torch = [float(r[2]) for r in rows if r[1] == "torchrun"]
nodes = {" ".join(r[3:]) for r in rows if r[1] == "loom"}
print(f"MLP 784-512-512-10, Fashion-MNIST, batch 64 per worker, 2 nodes x 1 worker "
      f"(loom's on {', '.join(sorted(nodes))}), samples/s of epoch {sys.argv[3]}, "
      f"median of {sys.argv[2]} interleaved runs:")
print(f"  loom (Slurm jobs, TCP ring)      {statistics.median(loom):8.0f}   runs: {' '.join(f'{v:.0f}' for v in loom)}")
print(f"  PyTorch DDP/gloo under torchrun  {statistics.median(torch):8.0f}   runs: {' '.join(f'{v:.0f}' for v in torch)}")
print(f"  loom / PyTorch                   {statistics.median(loom) / statistics.median(torch):8.2f}x"
      f"   per run: {' '.join(f'{a / b:.2f}' for a, b in zip(loom, torch))}")
PY
