#!/bin/sh
# bench/sched/run.sh - the scheduler's figures from one invocation:
#   1. checks that bench/sched/synthetic.json is what gen_trace makes;
#   2. the simulator's comparison on it (1,200 jobs, 64 devices): elastic
#      fair share and elastic priority beside static FIFO and FIFO with EASY
#      backfilling, with utilisation while jobs wait and the JCT reductions;
#   3. the same on generated traces (gen_trace --profile mixed: 16 devices,
#      offered load 0.7, 0.85, 1.0 and 1.1, SEEDS seeds each, default 5,
#      JOBS jobs each, default 1000), summed up by compare.py against the
#      targets;
#   4. the decision micro-benchmark (1,000 jobs on 1,000 devices).
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
work=$(mktemp -d)
trap 'rm -f "$generated"; rm -rf "$work"' EXIT
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
seeds=${SEEDS:-5}
jobs=${JOBS:-1000}
echo "== generated traces: 16 devices, $jobs jobs, $seeds seeds per offered load"
for load in 0.7 0.85 1.0 1.1; do
    seed=1
    while [ "$seed" -le "$seeds" ]; do
        t="$work/load$load-seed$seed.json"
        "$bin/loom_sched_gen_trace" --profile mixed --devices 16 --jobs "$jobs" \
            --load "$load" --seed "$seed" > "$t"
        "$bin/loom_sched_sim" --json "$t" > "$t.result"
        seed=$((seed + 1))
    done
done
python3 "$here/compare.py" "$work"/*.result
echo
echo "== decision micro-benchmark"
"$bin/loom_sched_bench" --rounds 2000
