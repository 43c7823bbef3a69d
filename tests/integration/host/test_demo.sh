#!/usr/bin/env bash
# The README's first command ends in `loom demo`: it must run end to end on
# a machine with nothing set up. One epoch of the training part keeps this
# short (the elastic trainer has its own tests); without Fashion-MNIST the
# demo says it skips that part.
LOOM=$1
. "$(dirname "$0")/../lib.sh"
unset LOOM_HOME LOOM_TOKEN   # no state, no credentials: a new user

export TMPDIR=$WORK
out=$(timeout 280 "$LOOM" demo --epochs 1 2>&1)
rc=$?
expect_eq "loom demo exits 0" "$rc" "0"
expect_contains "it says it finished" "$out" "== demo finished"
expect_contains "it prints the web console's address" "$out" "== web console: http://127.0.0.1:"
expect_contains "it lists the built-in plugins" "$out" "native"
expect_contains "the launch-style job wrote WMLA's results" "$out" 'worker 1: [{"step": 1, "loss":'
if [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    expect_contains "the elastic job was resized while it trained" "$out" "== loom exec resize"
    expect_contains "and used every sample once" "$out" "every sample used once per epoch through both resizes: yes"
    expect_contains "the tuning task finished its 4 experiments" "$out" "FINISHED, maximize accuracy, progress 4/4"
    expect_contains "and printed the best combination" "$out" "== loom hpo best demo-fmnist-tuning
accuracy 0."
    expect_contains "the trained MLP is served" "$out" "through the REST endpoint"
    expect_contains "test images are classified" "$out" "test image 7: predicted"
else
    expect_contains "the training part is skipped by name" "$out" "skipping the training demo"
fi
expect_not_contains "no sanitizer report" "$out" "ERROR: "
expect_eq "its temporary state directory is gone" "$(ls -d "$WORK"/loom-demo-* 2>/dev/null | wc -l)" "0"
[ "$FAILED" -eq 0 ] || echo "$out" | tail -n 40 >&2
finish
