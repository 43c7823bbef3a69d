#!/bin/sh
# bench/native/run.sh - single-process training throughput of loom's native
# adapter beside PyTorch, from the same invocation: the MLP 784-512-512-10
# (MODEL=mlp) or bench/train's 2-conv CNN (MODEL=cnn) on Fashion-MNIST at
# batch 64, SGD with momentum, one thread each (a loom worker pins BLAS to
# one thread per core). Runs are interleaved and the median of RUNS runs is
# reported, because timings here swing between runs.
#
# BEFORE=path/to/native.so also runs that build of the adapter (another
# tree's, e.g. before a change) interleaved with the others, and prints its
# median and the ratio beside loom's.
#
#   bench/native/run.sh [BUILD_DIR]          (default: build)
#   env: MODEL=mlp RUNS=3 SECONDS_PER_RUN=5 THREADS=1 BATCH=64 BEFORE=
#        DATA=/usr/share/datasets/fashion-mnist PYTHON=/usr/bin/python3
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${RUNS:-3}
seconds=${SECONDS_PER_RUN:-5}
threads=${THREADS:-1}
batch=${BATCH:-64}
model=${MODEL:-mlp}
case $model in
    mlp) spec= name="MLP 784-512-512-10" ;;
    cnn) spec=$here/../train/models/cnn/edt.json name="CNN conv16-pool-conv32-pool-128" ;;
    *) echo "run.sh: MODEL: expected mlp or cnn, got $model" >&2; exit 2 ;;
esac
data=${DATA:-/usr/share/datasets/fashion-mnist}
python=${PYTHON:-/usr/bin/python3}
bench="$build/bin/bench_native"
before=${BEFORE:-}
if [ -n "$before" ] && [ ! -r "$before" ]; then
    echo "run.sh: BEFORE: $before is not a readable native.so" >&2
    exit 2
fi

if [ ! -x "$bench" ]; then
    echo "run.sh: $bench not found; build it first: make -C $build bench_native" >&2
    exit 1
fi
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "run.sh: Fashion-MNIST not found in $data" >&2
    exit 1
fi
if ! "$python" -c 'import torch' 2>/dev/null; then
    echo "run.sh: PyTorch missing for $python; installing python3-torch" >&2
    apt-get install -y python3-torch >/dev/null
fi

# Prints the median of the numbers on stdin.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

loom_runs=""
torch_runs=""
before_runs=""
i=1
while [ "$i" -le "$runs" ]; do
    # shellcheck disable=SC2046
    l=$(OPENBLAS_NUM_THREADS=$threads "$bench" --seconds "$seconds" --batch "$batch" \
        --data "$data" $([ -n "$spec" ] && echo --spec "$spec") 2>/dev/null)
    echo "run $i: $l"
    if [ -n "$before" ]; then
        # shellcheck disable=SC2046
        b=$(OPENBLAS_NUM_THREADS=$threads "$bench" --seconds "$seconds" --batch "$batch" \
            --data "$data" --plugin "$before" $([ -n "$spec" ] && echo --spec "$spec") 2>/dev/null)
        echo "run $i: before: $b"
        before_runs="$before_runs $(echo "$b" | awk '{ print $3 }')"
    fi
    t=$(OMP_NUM_THREADS=$threads "$python" "$here/torch_peer.py" --seconds "$seconds" \
        --batch "$batch" --threads "$threads" --data "$data" --model "$model")
    echo "run $i: $t"
    loom_runs="$loom_runs $(echo "$l" | awk '{ print $3 }')"
    torch_runs="$torch_runs $(echo "$t" | awk '{ for (i = 1; i <= NF; i++) if ($(i + 1) == "samples/s") print $i }')"
    i=$((i + 1))
done

loom_median=$(echo "$loom_runs" | tr ' ' '\n' | grep . | median)
torch_median=$(echo "$torch_runs" | tr ' ' '\n' | grep . | median)
echo "$name, batch $batch, $threads thread(s), median of $runs runs of ${seconds}s:"
echo "  loom native: $loom_median samples/s"
echo "  pytorch:     $torch_median samples/s"
awk -v l="$loom_median" -v t="$torch_median" 'BEGIN { if (t > 0) printf "  ratio:       %.2fx\n", l / t }'
if [ -n "$before" ]; then
    before_median=$(echo "$before_runs" | tr ' ' '\n' | grep . | median)
    echo "  before:      $before_median samples/s ($before)"
    awk -v l="$loom_median" -v b="$before_median" 'BEGIN { if (b > 0) printf "  loom/before: %.2fx\n", l / b }'
fi
