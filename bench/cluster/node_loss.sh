#!/usr/bin/env bash
# bench/cluster/node_loss.sh - a node lost mid-epoch, on the Slurm lab's 2
# nodes (tests/cluster/lab.sh: 1 CPU slot each): the MLP 784-512-512-10 on
# Fashion-MNIST, 3 epochs, seed 1, one worker on each node. Each run trains
# it twice, in turns: undisturbed, then with node2's link cut (`ip link set
# ... down`, as a switch port dying) a second into the second epoch. Prints
# per run and as medians:
#   dropped    the cut to the lost worker dropped (its heartbeat's silence)
#   stepping   the cut to the survivor's next step (its iteration moving on)
#   accuracy   the final test accuracy, undisturbed and disturbed, and the
#              difference (target: within 1 point)
# and checks every sample once per epoch in both.
#
#   bench/cluster/node_loss.sh [BUILD_DIR]     (default: build in this tree)
#   RUNS=3 bench/cluster/node_loss.sh
#
# Needs root, namespaces (lab.sh check: says so and skips otherwise),
# Debian's dataset-fashion-mnist, and a loom built with libslurm. The lab is
# its own (LOOM_LAB_NAME, _DIR, _NET below).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
runs=${RUNS:-3}
epochs=3
data=${DATA:-/usr/share/datasets/fashion-mnist}
export LOOM_LAB_NAME=${LOOM_LAB_NAME:-loomloss}
export LOOM_LAB_DIR=${LOOM_LAB_DIR:-${TMPDIR:-/tmp}/loom-loss-lab}
export LOOM_LAB_NET=${LOOM_LAB_NET:-10.231.12}
export LOOM_LAB_CPUS=1 # a CPU slot per node: a 2-worker job spans both

loom=$build/bin/loom
[ -x "$loom" ] || { echo "node_loss.sh: $loom not found; build loom first" >&2; exit 1; }
bench=node_loss.sh
. "$here/lab_host.sh"
python3 - "$root/bench/train/models/mlp/edt.json" "$shared/model/edt.json" "$epochs" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["training"]["epochs"] = int(sys.argv[3])
spec["training"]["checkpoint_freq"] = 0
json.dump(spec, open(sys.argv[2], "w"))
PY
chmod -R a+rX "$shared/model"
link=${LOOM_LAB_NAME}v2
results=$(mktemp)
trap 'rm -f "$results"; ip link set "$link" up 2>/dev/null; lab_host_down' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# waits up to $1 s for a command; fails the bench after
poll() {
    local end=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || { echo "node_loss.sh: $what: not within $1 s" >&2; exit 1; }
        sleep 0.02
    done
}
in_log() { driver_log "$1" | grep -qF "$2"; }
iteration() { "$loom" exec view "$1" | sed -n 's/.*iteration \([0-9]*\),.*/\1/p'; }
accuracy() { "$loom" exec view "$1" | sed -n 's/^test .*accuracy \([0-9.]*\).*/\1/p'; }
once() { "$loom" exec view "$1" | grep -c "samples (each once)" || true; }
both_nodes() { [ "$("$loom" slots | grep -c ' node[12] ')" = 2 ] && [ "$(sinfo -h -n node2 -o %t)" = idle ]; }
train() { # train: the exec's id, once it has 2 workers
    local id
    id=$("$loom" exec start --exec-start native --model-dir "$shared/model" --data-dir "$data" \
         --numWorker 2 | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    poll 120 "exec $id on 2 workers" in_log "$id" "generation 1: 2 worker(s)"
    echo "$id"
}
finish_run() { # finish_run ID: waits for it; prints its accuracy
    "$loom" exec wait "$1" --timeout 1800 >/dev/null ||
        { echo "node_loss.sh: exec $1 failed: $("$loom" exec view "$1" | head -n 8)" >&2; exit 1; }
    [ "$(once "$1")" = "$epochs" ] ||
        { echo "node_loss.sh: exec $1 used every sample once in only $(once "$1") of $epochs epochs" >&2; exit 1; }
    accuracy "$1"
}

for run in $(seq "$runs"); do
    poll 180 "both nodes back in the inventory and idle" both_nodes
    u=$(train)
    acc_u=$(finish_run "$u")
    poll 180 "both nodes idle" both_nodes
    d=$(train)
    poll 300 "exec $d's first epoch" in_log "$d" "epoch 1/$epochs"
    sleep 1 # a second into the second epoch
    before=$(iteration "$d")
    t0=$(now_ms)
    ip link set "$link" down
    poll 60 "node2's worker dropped" in_log "$d" "no heartbeat for"
    t_drop=$(now_ms)
    moved() { [ "$(iteration "$d")" -gt "$before" ] 2>/dev/null && in_log "$d" "generation" &&
              [ "$(driver_log "$d" | sed -n 's/^generation [0-9]*: \([0-9]*\) worker.*/\1/p' | tail -n1)" = 1 ]; }
    poll 60 "the survivor stepping" moved
    t_step=$(now_ms)
    ip link set "$link" up
    acc_d=$(finish_run "$d")
    echo "RESULT $((t_drop - t0)) $((t_step - t0)) $acc_u $acc_d" >>"$results"
    echo "run $run of $runs: dropped after $((t_drop - t0)) ms, stepping again after $((t_step - t0)) ms; accuracy $acc_u undisturbed, $acc_d disturbed" >&2
done

python3 - "$results" "$runs" <<'PY'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1]) if l.startswith("RESULT")]
drop, step, au, ad = (list(c) for c in zip(*rows))
diff = [100 * (u - d) for u, d in zip(au, ad)]
print(f"MLP 784-512-512-10, Fashion-MNIST, 3 epochs, seed 1, 2 nodes x 1 worker; node2's link "
      f"cut a second into epoch 2; medians of {sys.argv[2]} runs:")
print(f"  lost worker dropped after        {statistics.median(drop):6.0f} ms   runs: {' '.join(f'{v:.0f}' for v in drop)}")
print(f"  survivor stepping again after    {statistics.median(step):6.0f} ms   runs: {' '.join(f'{v:.0f}' for v in step)}   (target 5000)")
print(f"  test accuracy undisturbed        {statistics.median(au):6.4f}      runs: {' '.join(f'{v:.4f}' for v in au)}")
print(f"  test accuracy, node lost         {statistics.median(ad):6.4f}      runs: {' '.join(f'{v:.4f}' for v in ad)}")
print(f"  difference (points)              {statistics.median(diff):6.2f}      runs: {' '.join(f'{v:.2f}' for v in diff)}   (target within 1)")
PY
