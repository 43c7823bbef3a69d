#!/usr/bin/env bash
# `loom demo --cluster`: the seeds' scenario across the machines of a
# 2-node Slurm lab (2 CPU slots each), the host on node1. What the demo
# tells happens, read back from its own output:
#  - alice's elastic MLP alone holds all 4 slots, 2 on each node, each
#    worker a Slurm job owned by her account on the nodes;
#  - bob's 2-worker job arrives: he gets one whole node, alice's shrinks in
#    place to the other (no restart);
#  - bob's ends and alice's grows back to 4, onto bob's node;
#  - alice's finishes, every sample once per epoch;
#  - the lab is down afterwards: no namespace, no Slurm job, no folder.
# Bad options are refused before any lab is made. Skipped (77) where the lab
# cannot run.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
LAB_PREFIX=ld
. "$(dirname "$0")/lab_lib.sh"
lab_require_loom "$LOOM"
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    { echo "SKIP: Fashion-MNIST is missing (dataset-fashion-mnist)"; exit 77; }

expect_fails "--epochs 1 is refused, naming the option" "$LOOM" demo --cluster --epochs 1
expect_contains "naming it" "$(cat "$WORK/out")" "--epochs: expected a whole number of at least 2"
expect_fails "an unknown option is refused" "$LOOM" demo --cluster --nodes 3
expect_contains "naming it" "$(cat "$WORK/out")" 'unexpected "--nodes"'
expect_eq "no lab was made for them" "$(ip netns list | grep -c "^$LOOM_LAB_NAME-" || true)" 0

# The demo makes the lab itself, in its own folder (unset: the demo's own
# mktemp), with this test's name and /24 so that it runs beside other labs.
unset LOOM_LAB_DIR
mkdir -p "$WORK/tmp"
TMPDIR=$WORK/tmp "$LOOM" demo --cluster --epochs 3 >"$WORK/demo.out" 2>&1
rc=$?
out=$(grep -v '^profile' "$WORK/demo.out")
echo "$out" | grep -E "generations|trains on|FINISHED|as told|demo --cluster"
expect_eq "the demo finishes" "$rc" 0
expect_contains "alice's exec holds 2 + 2 slots" "$out" "trains on 4 workers, started on: node1 node1 node2 node2"
expect_contains "her workers reach the host on node1 over TLS" "$out" \
    "its workers reach the coordinator over TLS (TLS 1.3 keyed by the exec's secret) at $LOOM_LAB_NET.11:"
expect_ok "each worker a Slurm job owned by her account on the nodes" \
    grep -qE '^ +[0-9]+ loom:alice-[0-9]+-1:[0-3] +loom-u2000[0-9]+ +R node[12]$' "$WORK/demo.out"
bob_nodes=$(sed -n "s/^bob's exec .* trains on 2 workers, on: \(node[12] node[12]\); alice's now: 2 workers$/\1/p" "$WORK/demo.out")
case "$bob_nodes" in
"node1 node1" | "node2 node2") pass ;;
*) fail "bob's exec on one whole node while alice's shrank to 2: '$bob_nodes'" ;;
esac
expect_ok "alice's shrank to 2 and grew back to 4 (generations 4 2 ... 4)" \
    grep -qE "^alice's generations: 4 2( [0-9])* 4 \(first step with the new workers [0-9]+ ms" "$WORK/demo.out"
expect_contains "alice's finishes" "$out" "state       FINISHED"
expect_eq "every sample once in each of her 3 epochs" "$(grep -c 'samples (each once)' "$WORK/demo.out")" 3
expect_contains "the demo checked its story" "$out" "== as told"
expect_eq "the lab is down: no namespace left" "$(ip netns list | grep -c "^$LOOM_LAB_NAME-" || true)" 0
expect_eq "and no bridge" "$(ip link show "${LOOM_LAB_NAME}br" 2>/dev/null | wc -l)" 0
expect_eq "and no folder" "$(ls "$WORK/tmp" | wc -l)" 0
finish
