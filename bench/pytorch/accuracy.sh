#!/usr/bin/env bash
# bench/pytorch/accuracy.sh [LOOM] - the edtPyTorch example's test accuracy
# on 2 loom workers beside a single-process plain PyTorch loop with the same
# global batch, epochs and seed, over several seeds (SEEDS), so that seed
# noise is not taken for a difference: prints each seed's pair and the
# medians (target: loom within 1 point of plain). The seed sets the initial
# weights (torch.manual_seed before the script runs, as the plain loop
# does) and the shuffling (loom's sampler; PyTorch's RandomSampler).
# EPOCHS, TRAIN, TEST (samples; 0 = all), BATCH (per worker) and SEEDS may be set.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOOM=${1:-$ROOT/build/bin/loom}
PY=/usr/bin/python3
EPOCHS=${EPOCHS:-2} TRAIN=${TRAIN:-20000} TEST=${TEST:-5000} BATCH=${BATCH:-64}
SEEDS=${SEEDS:-1 2 3 4 5}
GLOBAL=$((BATCH * 2))
DATA=/usr/share/datasets/fashion-mnist
common="--epochs $EPOCHS --train-samples $TRAIN --test-samples $TEST"

export LOOM_HOME=$(mktemp -d)
trap 'kill $HOST 2>/dev/null; rm -rf "$LOOM_HOME"' EXIT
echo admin-password-for-bench > "$LOOM_HOME.pw"
"$LOOM" serve --listen 127.0.0.1:0 --cpu-slots 2 --admin-password-file "$LOOM_HOME.pw" \
    > "$LOOM_HOME.serve" 2>&1 &
HOST=$!
for _ in $(seq 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.1; done
rm -f "$LOOM_HOME.pw"
echo admin-password-for-bench | "$LOOM" login -u admin --password-stdin > /dev/null

echo "Fashion-MNIST CNN, $EPOCHS epoch(s), $TRAIN training / $TEST test samples, global batch $GLOBAL"
rows=""
for seed in $SEEDS; do
    plain=$($PY "$HERE/peers.py" plain $common --global-batch $GLOBAL --seed "$seed" |
            $PY -c 'import json,sys; print(json.load(sys.stdin)["accuracy"])')
    id=$("$LOOM" exec start --exec-start edtPyTorch --model-dir "$ROOT/examples/pytorch-fmnist" \
         --model-main fmnist.py --numWorker 2 --data-dir $DATA --msd-env EDT_SEED="$seed" \
         -- $common --batch-size $BATCH | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    "$LOOM" exec wait "$id" --timeout 3600 > /dev/null
    loom=$("$LOOM" --json exec view "$id" |
           $PY -c 'import json,sys; print(json.load(sys.stdin)["training"]["testMetrics"]["accuracy"])')
    printf 'seed %-4s plain %.4f  loom %.4f  (%+.2f points)\n' "$seed" "$plain" "$loom" \
        "$($PY -c "print(($loom - $plain) * 100)")"
    rows="$rows $plain:$loom"
done
$PY - $rows <<'PYEOF'
import statistics, sys
pairs = [tuple(map(float, a.split(":"))) for a in sys.argv[1:]]
plain = statistics.median(p for p, _ in pairs)
loom = statistics.median(l for _, l in pairs)
diffs = [l - p for p, l in pairs]
print("median over %d seeds: plain %.4f, loom %.4f: %+.2f points (target: within 1); "
      "per-seed differences median %+.2f, from %+.2f to %+.2f"
      % (len(pairs), plain, loom, (loom - plain) * 100, statistics.median(diffs) * 100,
         min(diffs) * 100, max(diffs) * 100))
PYEOF
