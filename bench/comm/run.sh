#!/bin/sh
# bench/comm/run.sh - loom's shm all-reduce beside PyTorch's gloo, same
# sizes, same invocation, runs interleaved so both see the same machine;
# prints medians of RUNS runs and loom as a fraction of single-core memcpy.
# loom's two paths: "in place" (the buffers in the segment's gradient
# regions: what the trainer does with the native adapter on CPU) and
# "staged" (the buffers in each process's own memory, copied through the
# segment: other adapters, EDT_IN_PLACE_REDUCE=0).
#
#   bench/comm/run.sh [BUILD_DIR]     (default: build-comm next to this tree)
#   RUNS=7 PYTHON=/usr/bin/python3 bench/comm/run.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build-comm}
bench=$build/bench/comm/comm_bench
[ -x "$bench" ] || bench=$build/bin/comm_bench
runs=${RUNS:-5}
# Debian's python3-torch lives in the system interpreter, not in a pyenv one.
python=${PYTHON:-/usr/bin/python3}
sizes="2700000 67108864"
processes=2

if [ ! -x "$bench" ]; then
    echo "run.sh: $bench not found; build it: make -C $build comm_bench" >&2
    exit 1
fi
if ! "$python" -c 'import torch.distributed' 2>/dev/null; then
    echo "run.sh: PyTorch is missing: apt-get install -y python3-torch" >&2
    exit 1
fi

iterations_for() { # keep each run around a second
    if [ "$1" -le 4000000 ]; then echo 200; else echo 10; fi
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for run in $(seq "$runs"); do
    "$bench" memcpy 268435456 5 >>"$results"
    for size in $sizes; do
        n=$(iterations_for "$size")
        "$bench" inplace "$size" "$n" "$processes" >>"$results"
        "$bench" allreduce "$size" "$n" "$processes" >>"$results"
        "$python" "$here/gloo_allreduce.py" "$size" "$n" "$processes" >>"$results"
    done
    echo "run $run of $runs done" >&2
done

"$python" - "$results" "$processes" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.startswith("RESULT")]
def median(what, size):
    return statistics.median(float(r[3]) for r in rows if r[1] == what and int(r[2]) == size)
memcpy = statistics.median(float(r[3]) for r in rows if r[1] == "memcpy")
print(f"single-core memcpy (256 MB): {memcpy:.2f} GB/s")
print(f"all-reduce (average), {sys.argv[2]} processes, bus bandwidth, median of "
      f"{sum(1 for r in rows if r[1] == 'memcpy')} runs:")
print(f"{'size':>10} {'in place GB/s':>14} {'staged GB/s':>12} {'gloo GB/s':>10} "
      f"{'in place/gloo':>14} {'in place/memcpy':>16} {'staged/gloo':>12} {'staged/memcpy':>14}")
for size in sorted({int(r[2]) for r in rows if r[1] == "allreduce"}):
    inplace, staged, gloo = median("inplace", size), median("allreduce", size), median("gloo", size)
    print(f"{size / 1e6:>8.1f}MB {inplace:>14.2f} {staged:>12.2f} {gloo:>10.2f} "
          f"{inplace / gloo:>13.1f}x {inplace / memcpy:>16.2f} {staged / gloo:>11.1f}x "
          f"{staged / memcpy:>14.2f}")
PY
