#!/bin/sh
# bench/hpo/run.sh - loom's search plugins beside Optuna's TPESampler
# (Debian's python3-optuna, run with /usr/bin/python3), same budgets:
#  (1) suggestion overhead: ask+tell with the objective excluded, at 100
#      and 1,000 finished trials, through each plugin's real entry points,
#      and the cost of one save_state at that size;
#  (2) quality: the best value after 50 and 100 trials, median over SEEDS
#      seeds, on Branin (2-D) and Hartmann-6 (minimisation).
# The TPE rows are at loom's defaults (WMLA's: WarmUp 20, GoodRatio 0.25)
# and at Optuna's start (WarmUp 10, Optuna's n_startup_trials).
#
# usage: bench/hpo/run.sh [BUILD_DIR] [SEEDS]   (default: build, 21)
# Without optuna the peer's rows are skipped with a message.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
seeds=${2:-21}
bench=$build/bin/hpo_bench
plugins=$build/lib/loom/plugins
python=/usr/bin/python3
for f in "$bench" "$plugins/tpe.so" "$plugins/bayesian.so" "$plugins/random.so"; do
    [ -e "$f" ] || { echo "missing $f: build the tree first (cmake --build $build)" >&2; exit 1; }
done
peer=1
if ! $python -c 'import optuna' 2>/dev/null; then
    echo "optuna is not installed for $python (apt-get install python3-optuna): peer rows skipped"
    peer=0
fi

echo "== suggestion overhead (Hartmann-6 space, objective excluded) =="
for n in 100 1000; do
    for a in tpe random bayesian; do
        [ "$a" = bayesian ] && [ "$n" = 1000 ] && continue # O(n^3) per fit: not a 1,000-trial method
        printf '  loom %-9s ' "$a"; "$bench" overhead "$plugins/$a.so" "$n" | head -1
    done
    if [ $peer = 1 ]; then
        printf '  optuna TPE     '; $python "$here/optuna_peer.py" overhead "$n"
    fi
done

# median of field $1 over lines on stdin
median() {
    $python -c '
import statistics, sys
values = [float(l.replace(",", "").split()[int(sys.argv[1])]) for l in sys.stdin if l.strip()]
print("%.4f" % statistics.median(values))' "$1"
}

quality_row() { # label fn command...
    label=$1 fn=$2
    shift 2
    out=$(for s in $(seq 1 "$seeds"); do "$@" "$s"; done)
    printf '  %-34s %-9s after 50: %8s   after 100: %8s\n' "$label" "$fn" \
        "$(echo "$out" | grep after | median 6)" "$(echo "$out" | grep after | median 9)"
}

run_loom() { # plugin fn options... seed
    plugin=$1 fn=$2
    shift 2
    eval "seed=\${$#}"
    args=""
    while [ $# -gt 1 ]; do args="$args $1"; shift; done
    # shellcheck disable=SC2086
    "$bench" quality "$plugins/$plugin.so" "$fn" 100 "$seed" $args | head -1
}

echo "== quality: best value, median of $seeds seeds (minimum: Branin 0.3979, Hartmann-6 -3.3224) =="
for fn in branin hartmann6; do
    quality_row "loom random" $fn run_loom random $fn
    quality_row "loom TPE (defaults, WarmUp 20)" $fn run_loom tpe $fn
    quality_row "loom TPE (WarmUp 10)" $fn run_loom tpe $fn WarmUp=10
    quality_row "loom Bayesian (InitPoints 10)" $fn run_loom bayesian $fn
    if [ $peer = 1 ]; then
        quality_row "optuna TPE (defaults)" $fn $python "$here/optuna_peer.py" quality $fn 100
    fi
done
