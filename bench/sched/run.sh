#!/bin/sh
# bench/sched/run.sh - the scheduler's figures from one invocation:
#   1. checks that bench/sched/synthetic.json is what gen_trace makes;
#   2. the simulator's comparison on it (1,200 jobs, 64 devices): elastic
#      fair share and elastic priority beside static FIFO, with utilisation
#      while jobs wait and the average-JCT reduction;
#   3. the decision micro-benchmark (1,000 jobs on 1,000 devices).
#
# usage: bench/sched/run.sh [BUILD_DIR]   (default: build-sched, then build)
# The build needs the targets loom_sched_gen_trace, loom_sched_sim and
# loom_sched_bench, e.g.:
#   cmake -S . -B build-sched && make -C build-sched -j2 loom_sched_gen_trace \
#     loom_sched_sim loom_sched_bench
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-}
if [ -z "$build" ]; then
    for candidate in "$root/build-sched" "$root/build"; do
        if [ -x "$candidate/bin/loom_sched_sim" ]; then
            build=$candidate
            break
        fi
    done
fi
bin=${build:-$root/build-sched}/bin
for tool in loom_sched_gen_trace loom_sched_sim loom_sched_bench; do
    if [ ! -x "$bin/$tool" ]; then
        echo "run.sh: $bin/$tool not found; build it first:" >&2
        echo "  cmake -S $root -B $root/build-sched && make -C $root/build-sched -j2 loom_sched_gen_trace loom_sched_sim loom_sched_bench" >&2
        exit 1
    fi
done

trace=$here/synthetic.json
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$bin/loom_sched_gen_trace" > "$generated"
if cmp -s "$generated" "$trace"; then
    echo "== synthetic trace: matches gen_trace output"
else
    echo "== synthetic trace: differs from gen_trace output (regenerate with: $bin/loom_sched_gen_trace > $trace)"
fi
echo
echo "== simulator (loom sim): same scheduler code, simulated clock"
"$bin/loom_sched_sim" "$trace"
echo
echo "== decision micro-benchmark"
"$bin/loom_sched_bench" --rounds 2000
