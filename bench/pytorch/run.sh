#!/usr/bin/env bash
# bench/pytorch/run.sh [LOOM] - loom's edtPyTorch beside PyTorch's own, from
# the same run, on the Fashion-MNIST example (examples/pytorch-fmnist):
#  - test accuracy: 2 loom workers vs a single-process plain loop with the
#    same global batch and epochs (target: within 1 point);
#  - training throughput: 2 loom workers vs DistributedDataParallel/gloo
#    under torchrun with 2 processes (target: >= 1.2x);
#  - per-step overhead of the trainer over the bare PyTorch step.
# EPOCHS, TRAIN, TEST (samples; 0 = all) and BATCH (per worker) may be set;
# LOOM_ENV="KEY=VALUE ..." adds --msd-env pairs to loom's job (e.g.
# EDT_ROUND_MS=20 for one step per coordinator round); REPEAT (default 3)
# is how many times DDP and loom each run, taking turns.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOOM=${1:-$ROOT/build/bin/loom}
PY=/usr/bin/python3
EPOCHS=${EPOCHS:-2} TRAIN=${TRAIN:-20000} TEST=${TEST:-5000} BATCH=${BATCH:-64}
GLOBAL=$((BATCH * 2))
DATA=/usr/share/datasets/fashion-mnist
common="--epochs $EPOCHS --train-samples $TRAIN --test-samples $TEST"

echo "Fashion-MNIST CNN, $EPOCHS epoch(s), $TRAIN training / $TEST test samples, global batch $GLOBAL"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
plain=$($PY "$HERE/peers.py" plain $common --global-batch $GLOBAL)
# Debian 12's torchrun (torch 1.13 on Python 3.11) fails on its default
# --redirects 0 (an IntFlag of 0 is no member under 3.11); teeing rank 0's
# stdout works and prefixes its lines with "[default0]:".
run_ddp() {
    OMP_NUM_THREADS=1 torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
        "$HERE/peers.py" ddp $common --global-batch $GLOBAL 2>/dev/null |
        sed -n 's/^\[default0\]://p' | grep '^{'
}
step=$($PY "$HERE/peers.py" step --batch $BATCH)

# loom: a host of its own, 2 CPU workers.
export LOOM_HOME=$(mktemp -d)
trap 'kill $HOST 2>/dev/null; rm -rf "$LOOM_HOME"' EXIT
echo admin-password-for-bench > "$LOOM_HOME.pw"
"$LOOM" serve --listen 127.0.0.1:0 --cpu-slots 2 --admin-password-file "$LOOM_HOME.pw" \
    > "$LOOM_HOME.serve" 2>&1 &
HOST=$!
for _ in $(seq 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.1; done
rm -f "$LOOM_HOME.pw"
echo admin-password-for-bench | "$LOOM" login -u admin --password-stdin > /dev/null
extra=""
for kv in ${LOOM_ENV:-}; do extra="$extra --msd-env $kv"; done
# DDP and loom take turns, REPEAT times, so that a change in the machine's
# load (other work on it) falls on both; the medians are compared.
ddp="" loom="" profile=""
for _ in $(seq "${REPEAT:-3}"); do
    ddp="$ddp$(run_ddp)
"
    id=$("$LOOM" exec start --exec-start edtPyTorch --model-dir "$ROOT/examples/pytorch-fmnist" \
         --model-main fmnist.py --numWorker 2 --data-dir $DATA $extra -- $common --batch-size $BATCH |
         sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    "$LOOM" exec wait "$id" --timeout 3600 > /dev/null
    loom="$loom$("$LOOM" --json exec view "$id" | tr -d '\n')
"
    # The workers' own account of a step's time, last epoch (worker.c's profile).
    profile=$(cat "$LOOM_HOME/execs/$id"/log/worker-*/stdout | grep "^profile epoch $EPOCHS:" || true)
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY - "$plain" "$ddp" "$step" "$loom" "$BATCH" "$profile" <<'PYEOF'
import json, re, statistics, sys
plain, step = json.loads(sys.argv[1]), json.loads(sys.argv[3])
ddps = [json.loads(line) for line in sys.argv[2].splitlines() if line.strip()]
looms = [json.loads(line) for line in sys.argv[4].splitlines() if line.strip()]
batch = int(sys.argv[5])
rates, steps = [], []
for v in looms:
    epochs = v["training"]["epochsDone"]
    secs = sum(e["seconds"] for e in epochs)
    samples = sum(e["samples"] for e in epochs)
    rates.append(samples / secs)
    steps.append(secs / (samples / (2 * batch)))
acc = looms[-1]["training"]["testMetrics"]["accuracy"]
ddp_rates = [d["samples_per_s"] for d in ddps]
rate, ddp_rate, loom_step = statistics.median(rates), statistics.median(ddp_rates), statistics.median(steps)
print("%-34s %10s %12s" % ("", "accuracy", "samples/s"))
print("%-34s %10.4f %12.0f" % ("plain PyTorch, 1 process", plain["accuracy"], plain["samples_per_s"]))
print("%-34s %10.4f %12.0f  (median of %s)" % ("DDP/gloo, torchrun, 2 processes", ddps[-1]["accuracy"],
                                               ddp_rate, ", ".join("%.0f" % r for r in ddp_rates)))
print("%-34s %10.4f %12.0f  (median of %s)" % ("loom edtPyTorch, 2 workers", acc, rate,
                                               ", ".join("%.0f" % r for r in rates)))
print("accuracy, loom - plain: %+.2f points (one seed; bench/pytorch/accuracy.sh for several)"
      % ((acc - plain["accuracy"]) * 100))
print("throughput, loom / DDP: %.2fx (target: >= 1.2x); turn by turn: %s"
      % (rate / ddp_rate, ", ".join("%.2fx" % (l / d) for l, d in zip(rates, ddp_rates))))
print("step (batch %d per worker): bare PyTorch %.2f ms, loom %.2f ms, trainer overhead %.2f ms (%.0f%%)"
      % (batch, step["step_s"] * 1e3, loom_step * 1e3, (loom_step - step["step_s"]) * 1e3,
         (loom_step / step["step_s"] - 1) * 100))
# Each worker's last-epoch profile: forward/backward (with the batch's
# collate and the metrics), all-reduce (most of it waiting for the other
# worker), the optimizer step, and the coordinator's round trip.
for line in sys.argv[6].splitlines():
    f = dict(re.findall(r"(compute|all-reduce|peers|apply|rounds) ([0-9.]+)", line))
    w = re.search(r"\(worker (\d+)\)", line)
    steps = re.search(r"(\d+) steps in (\d+) rounds", line)
    if f and w and steps:
        print("worker %s, ms a step: compute %s, all-reduce %s (waiting for the peer %s), apply %s, "
              "between rounds %s; %s steps in %s rounds"
              % (w.group(1), f["compute"], f["all-reduce"], f["peers"], f["apply"], f["rounds"],
                 steps.group(1), steps.group(2)))
PYEOF
