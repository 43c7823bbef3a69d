#!/bin/sh
# A launch-style job for the `command` framework adapter: each of the
# --numWorker workers trains a logistic regression on its share (by RANK) of
# a synthetic two-class data set and writes its per-epoch metrics to
# RESULT_DIR/val_dict_list-workerRANK.json in WMLA's val_dict_list format.
# Arguments after "--": --epochs N (default 3). Environment: SEED (default 1).
set -eu
epochs=3
while [ $# -gt 0 ]; do
    case "$1" in
        --epochs) epochs=$2; shift 2 ;;
        --epochs=*) epochs=${1#--epochs=}; shift ;;
        *) echo "train.sh: unknown argument $1 (expected --epochs N)" >&2; exit 2 ;;
    esac
done
: "${RANK:?RANK is set by the adapter}" "${WORLD_SIZE:?}" "${RESULT_DIR:?}"
out="$RESULT_DIR/val_dict_list-worker$RANK.json"
echo "worker $RANK of $WORLD_SIZE: $epochs epoch(s), seed ${SEED:-1}, metrics to $out"
awk -v epochs="$epochs" -v rank="$RANK" -v world="$WORLD_SIZE" -v seed="${SEED:-1}" \
    -v out="$out" 'BEGIN {
    # Two Gaussian-ish blobs around (-1, -1) and (1, 1); this worker keeps
    # every WORLD_SIZE-th point, starting at its RANK.
    srand(seed); n = 0
    for (i = 0; i < 2000; i++) {
        c = rand() < 0.5; centre = c ? 1 : -1
        x1 = centre + (rand() + rand() + rand() - 1.5) * 3
        x2 = centre + (rand() + rand() + rand() - 1.5) * 3
        if (i % world == rank) { a[n] = x1; b[n] = x2; y[n] = c; n++ }
    }
    w1 = 0; w2 = 0; w0 = 0; lr = 0.5
    printf "[" > out
    for (e = 1; e <= epochs; e++) {
        for (s = 0; s < 4; s++) {
            g1 = 0; g2 = 0; g0 = 0
            for (i = 0; i < n; i++) {
                p = 1 / (1 + exp(-(w1 * a[i] + w2 * b[i] + w0)))
                g1 += (p - y[i]) * a[i]; g2 += (p - y[i]) * b[i]; g0 += p - y[i]
            }
            w1 -= lr * g1 / n; w2 -= lr * g2 / n; w0 -= lr * g0 / n
        }
        loss = 0; hits = 0
        for (i = 0; i < n; i++) {
            p = 1 / (1 + exp(-(w1 * a[i] + w2 * b[i] + w0)))
            loss -= y[i] ? log(p + 1e-12) : log(1 - p + 1e-12)
            hits += (p >= 0.5) == y[i]
        }
        printf "epoch %d: loss %.4f accuracy %.4f\n", e, loss / n, hits / n
        printf "%s{\"step\": %d, \"loss\": %.6f, \"accuracy\": %.4f}", (e > 1 ? ", " : ""), e,
               loss / n, hits / n >> out
    }
    printf "]\n" >> out
}'
