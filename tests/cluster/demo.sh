#!/usr/bin/env bash
# tests/cluster/demo.sh - `loom demo --cluster`: the seeds' scenario across
# machines, on a Slurm cluster of 2 nodes made on this machine by lab.sh
# (each node a network namespace with 2 CPU slots; root, Debian's slurmd
# slurmctld slurm-client munge iproute2).
#
#   demo.sh LOOM [--epochs N] [--keep]
#
# The host runs on node1 as a site runs it on a login node (`loom serve
# --slurm debug --shared-dir ... --worker-link tls:ADDR`), and the demo
# drives it with the CLI from this machine, printing each command:
#  1. alice's elastic job (the MLP 784-512-512-10 on Fashion-MNIST, at most
#     4 workers) alone holds all 4 slots, 2 on each node, each worker a
#     Slurm job under her account, each reaching the host over TLS;
#  2. bob's job of 2 workers arrives: each gets one whole node (2 + 2),
#     alice's shrinking in place, with no restart;
#  3. bob's ends and alice's grows back to 4 over both nodes;
#  4. alice's finishes: its test accuracy, every sample used once per epoch.
# It exits 1 when any of this did not happen as told. The lab is taken down
# at the end, whatever happened (--keep keeps its folder: the host's log and
# the execs' folders). Settings: LOOM_LAB_NAME, LOOM_LAB_NET, LOOM_LAB_DIR
# (lab.sh's; defaults of its own here, so that it runs beside a lab of the
# tests), FMNIST (default /usr/share/datasets/fashion-mnist).
set -euo pipefail

say() { printf '%s\n' "$*"; }
die() { say "loom demo --cluster: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ -x "$1" ] || die "usage: demo.sh LOOM [--epochs N] [--keep]"
loom_bin=$(readlink -f "$1")
shift
epochs=3 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
    --epochs) [ $# -ge 2 ] && [ "$2" -ge 2 ] 2>/dev/null || die "--epochs: expected a whole number of at least 2"
              epochs=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) die "unexpected \"$1\" (expected --epochs N or --keep)" ;;
    esac
done
here=$(cd "$(dirname "$0")" && pwd)
lab=$here/lab.sh
data=${FMNIST:-/usr/share/datasets/fashion-mnist}
plugins=$(cd "$(dirname "$loom_bin")/.." && pwd)/lib/loom/plugins

why=$("$lab" check) || die "the Slurm lab cannot run here: $why"
case "$("$loom_bin" serve --help)" in *"--slurm PARTITION"*) ;;
*) die "this loom was built without libslurm (apt-get install libslurm-dev, then build again)" ;;
esac
[ -f "$data/train-images-idx3-ubyte.gz" ] ||
    die "Fashion-MNIST is missing in $data (apt-get install dataset-fashion-mnist)"
[ -d "$plugins" ] || die "no plugins at $plugins (the folder beside the loom binary's)"

export LOOM_LAB_NAME=${LOOM_LAB_NAME:-loomdemo}
export LOOM_LAB_NET=${LOOM_LAB_NET:-10.231.8}
export LOOM_LAB_CPUS=2
made_dir=0
if [ -z "${LOOM_LAB_DIR:-}" ]; then
    LOOM_LAB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/loom-demo-cluster.XXXXXX")
    made_dir=1
fi
export LOOM_LAB_DIR
host_pid=
cleanup() {
    local rc=$?
    if [ -n "$host_pid" ]; then kill "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null; fi
    "$lab" down >/dev/null 2>&1 || true
    if [ "$keep" = 1 ]; then
        say "the lab's folder is kept: $LOOM_LAB_DIR (the host's log: $LOOM_LAB_DIR/home/loom.log)"
    elif [ "$made_dir" = 1 ]; then
        rm -rf "$LOOM_LAB_DIR"
    fi
    say ""
    say "== demo --cluster $([ "$rc" = 0 ] && echo finished || echo FAILED)"
    exit "$rc"
}
trap cleanup EXIT

# poll SECONDS WHAT COMMAND...: waits until COMMAND succeeds, or fails the demo.
poll() {
    local end=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || die "$what: not within $1 s"
        sleep 0.2
    done
}
show() { printf '$'; printf ' %q' "$@"; printf '\n'; "$@"; }
# squeue as an administrator on a node sees it (the nodes have the job
# accounts; this machine has not)
squeue_on_node() {
    say "\$ squeue -o '%.6i %32j %.13u %.2t %N'   (on node1)"
    "$lab" exec node1 squeue -o '%.6i %32j %.13u %.2t %N'
}

say "== a Slurm cluster of 2 nodes on this machine (lab.sh: each node a network namespace"
say "   with 2 CPU slots, its own /tmp, /dev/shm and accounts; slurmctld beside them)"
"$lab" up 2 >"$LOOM_LAB_DIR/lab-up.out" 2>&1 || die "lab.sh up 2: $(cat "$LOOM_LAB_DIR/lab-up.out")"
eval "$("$lab" env)"
show sinfo -N -o '%N %t %c'

# loom as a site installs it where every node sees it, and the jobs' shared folder
shared=$LOOM_LAB_SHARED
chmod 0711 "$LOOM_LAB_DIR" "$shared"
mkdir -p "$shared/loom/bin" "$shared/loom/lib/loom" "$shared/files" "$shared/mlp"
cp "$loom_bin" "$shared/loom/bin/loom"
cp -r "$plugins" "$shared/loom/lib/loom/plugins"
cat >"$shared/mlp/edt.json" <<EOF
{
  "model": {"input": [1, 28, 28], "layers": [
    {"type": "flatten"},
    {"type": "dense", "units": 512}, {"type": "relu"},
    {"type": "dense", "units": 512}, {"type": "relu"},
    {"type": "dense", "units": 10}]},
  "loss": "softmax_cross_entropy",
  "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
  "dataset": {"format": "idx",
    "train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"},
  "init_seed": 1,
  "training": {"epochs": $epochs, "batch_size": 64, "checkpoint_freq": 0, "seed": 1}
}
EOF
chmod -R a+rX "$shared/mlp"
node1=$LOOM_LAB_NET.11
export LOOM_HOME=$LOOM_LAB_DIR/home
head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$LOOM_LAB_DIR/admin.pw"

say ""
say "== the host on node1, as on a login node"
say "\$ loom serve --slurm debug --shared-dir $shared/files --worker-link tls:$node1 --data-root $data"
"$lab" exec node1 env LOOM_HOME="$LOOM_HOME" "$shared/loom/bin/loom" serve \
    --listen "$node1:0" --admin-password-file "$LOOM_LAB_DIR/admin.pw" --slurm debug \
    --allow-basic-over-http --shared-dir "$shared/files" --worker-link "tls:$node1" \
    --data-root "$data" >"$LOOM_LAB_DIR/serve.out" 2>&1 &
host_pid=$!
host_up() { [ -s "$LOOM_HOME/host" ] || ! kill -0 "$host_pid" 2>/dev/null; }
poll 60 "the host on node1" host_up
[ -s "$LOOM_HOME/host" ] || die "the host did not start: $(cat "$LOOM_LAB_DIR/serve.out")"
"$loom_bin" login -u admin --password-stdin <"$LOOM_LAB_DIR/admin.pw" >/dev/null
for u in alice bob; do
    "$loom_bin" user add "$u" -p "$u-demo-password" >/dev/null
    mkdir -p "$LOOM_LAB_DIR/cli-$u"
    cp "$LOOM_HOME/host" "$LOOM_LAB_DIR/cli-$u/host"
    echo "$u-demo-password" | LOOM_HOME="$LOOM_LAB_DIR/cli-$u" "$loom_bin" login -u "$u" --password-stdin >/dev/null
done
loom() { "$loom_bin" "$@"; }
as() { local u=$1; shift; LOOM_HOME="$LOOM_LAB_DIR/cli-$u" "$loom_bin" "$@"; }
show loom slots

driver_log() { cat "$shared/files/execs/$1/log/driver/stdout" 2>/dev/null || true; }
in_log() { driver_log "$1" | grep -qF "$2"; }
# the sizes of its generations in order ("4 2 4")
generations() { driver_log "$1" | sed -n 's/^generation [0-9]*: \([0-9]*\) worker.*/\1/p' | tr '\n' ' ' | sed 's/ $//'; }
started_on() { driver_log "$1" | sed -n 's/^worker [0-9]* starts on node //p' | tr '\n' ' ' | sed 's/ $//'; }
submit() { # submit USER ARGS...: the exec's id
    as "$@" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
state() { as alice exec view "$1" | sed -n 's/^state *//p' | cut -d' ' -f1; }

say ""
say "== alice: the MLP on Fashion-MNIST, elastic, at most 4 workers, $epochs epochs"
say "\$ loom exec start --exec-start edt --model-dir $shared/mlp --data-dir $data --numWorker 4"
A=$(submit alice exec start --exec-start edt --model-dir "$shared/mlp" --data-dir "$data" --numWorker 4)
[ -n "$A" ] || die "alice's exec was not submitted"
poll 180 "alice's exec on 4 workers" in_log "$A" "generation 1: 4 worker(s)"
say "alice's exec $A trains on 4 workers, started on: $(started_on "$A")"
say "its $(driver_log "$A" | grep -m1 -o "workers reach the coordinator over .*" || true)"
squeue_on_node

say ""
say "== bob: a job of 2 workers arrives (1 epoch of the same MLP)"
B=$(submit bob exec start --exec-start edt --model-dir "$shared/mlp" --data-dir "$data" --numWorker 2 -- --epochs 1)
[ -n "$B" ] || die "bob's exec was not submitted"
poll 180 "bob's exec on 2 workers" in_log "$B" "generation 1: 2 worker(s)"
say "bob's exec $B trains on 2 workers, on: $(started_on "$B"); alice's now: $(generations "$A" | awk '{print $NF}') workers"
handed=$(grep -o "handed back by $A after [0-9]* ms" "$LOOM_HOME/loom.log" | sed 's/.* after //' | tr '\n' ' ' || true)
say "alice's shrink: her devices on bob's node handed back ${handed:-?}after the decision (her workers there gone)"
show loom slots
squeue_on_node
as bob exec wait "$B" --timeout 900 >/dev/null || die "bob's exec did not finish: $(as bob exec view "$B" | head -n 6)"
say "bob's exec FINISHED"

say ""
say "== alice's grows back to 4 over both nodes"
# (or it finished first: the check below says so)
grown() { [ "$(generations "$A" | awk '{print $NF}')" = 4 ] || in_log "$A" "epoch $epochs/$epochs"; }
poll 120 "alice's exec back on 4 workers" grown
grow=$(driver_log "$A" | sed -n 's/^resize applied: first step with the new workers \([0-9]*\) ms.*/\1/p' | tail -n1)
say "alice's generations: $(generations "$A") (first step with the new workers ${grow:-?} ms after the decision, Slurm's launch included)"
as alice exec wait "$A" --timeout 900 >/dev/null || die "alice's exec did not finish: $(as alice exec view "$A" | head -n 6)"
say "\$ loom exec view $A   (as alice)"
as alice exec view "$A"

say ""
# The story told above, checked: 4, then 2 while bob's ran, then 4 again; bob
# on one whole node and alice's regrown workers on that same node; never a
# restart; no Slurm job left.
gens=$(generations "$A")
b_nodes=$(started_on "$B")
regrown=$(started_on "$A" | cut -d' ' -f5-)
case "$gens" in "4 2 "*"4") ;; *) die "alice's generations were '$gens', not 4, 2 while bob's ran, then 4" ;; esac
case "$b_nodes/$regrown" in
"node1 node1/node1 node1" | "node2 node2/node2 node2") ;;
*) die "bob's workers on '$b_nodes' and alice's regrown ones on '$regrown': not one whole node each" ;;
esac
! in_log "$A" "resuming from" || die "alice's exec was restarted"
in_log "$A" "workers reach the coordinator over TLS" || die "alice's workers reached the host in clear"
[ "$(state "$A")" = FINISHED ] || die "alice's exec is $(state "$A")"
once=$(as alice exec view "$A" | grep -c "samples (each once)" || true)
[ "$once" = "$epochs" ] || die "alice's exec used every sample once in $once of its $epochs epochs"
left() { [ -z "$(squeue -h -o %j | grep '^loom:' || true)" ]; }
poll 30 "the Slurm jobs of both execs gone" left
say "== as told: alice's on 4 workers (2 + 2), then 2 on one node while bob's had the other,"
say "   then 4 again over both, every worker's link to the host in TLS; no restart; every"
say "   sample once per epoch; every Slurm job gone when done"
