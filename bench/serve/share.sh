#!/usr/bin/env bash
# bench/serve/share.sh - a model service sharing a 2-slot host with
# elastic training by the scheduler's rules, each figure beside its target
# from the same run. Plans /alice and /bob, equal shares: alice's model
# (a kernel taking 50 ms a request; kernel_min 0, kernel_max 2) under a
# bounded open-loop rate of requests (RATE a second from a Python loop,
# each in its own thread: wrk has no fixed rate here), and bob's 2-worker
# elastic training:
#   1. the model's p99 alone (both slots) vs while sharing (one slot),
#      target: sharing <= 2x alone;
#   2. the wait of bob's training, within its plan's share, for a slot
#      held by the model's extra instance: target <= hysteresis + 2 s;
#   3. from the load's stop to training back on 2 workers: target <=
#      kernel_delay_release_time + hysteresis + 1 s;
#   4. the cold start (echo .so kernel, kernel_min 0): the first request's
#      latency from zero instances, on a free slot and on slots training
#      holds (taken back from it).
#
# usage: bench/serve/share.sh [BUILD_DIR] [SECONDS]   (default: build, 10)
#        RATE (default 12 requests a second), HYSTERESIS (default 2 s),
#        RELEASE (kernel_delay_release_time, default 2 s)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
secs=${2:-10}
RATE=${RATE:-12}
HYSTERESIS=${HYSTERESIS:-2}
RELEASE=${RELEASE:-2}
LOOM=$build/bin/loom
EX=$build/examples/serving
FAULT=$build/tests/integration/infer/fault
[ -x "$LOOM" ] && [ -d "$EX/echo-so" ] && [ -d "$FAULT" ] || { echo "build the tree first (cmake --build $build)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-share-XXXXXX")
chmod 0711 "$WORK"
export LOOM_HOME=$WORK/home
unset LOOM_HOST
HOST_PID=
cleanup() {
    [ -n "$HOST_PID" ] && kill "$HOST_PID" 2>/dev/null && wait "$HOST_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

echo "bench-admin-password" > "$WORK/pw"
"$LOOM" serve --listen 127.0.0.1:0 --admin-password-file "$WORK/pw" --cpu-slots 2 \
    --hysteresis "$HYSTERESIS" > "$WORK/serve.out" 2>&1 &
HOST_PID=$!
for _ in $(seq 1 100); do [ -s "$LOOM_HOME/host" ] && break; sleep 0.1; done
URL=$(head -n1 "$LOOM_HOME/host")
echo bench-admin-password | "$LOOM" login -u admin --password-stdin >/dev/null
logon() { curl -s -X POST -u "$1:$1-password" "$URL/auth/v1/logon" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'; }
for u in alice bob; do "$LOOM" user add $u -p $u-password >/dev/null; done
ALICE=$(logon alice)
BOB=$(logon bob)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
held_by() { "$LOOM" --json slots | /usr/bin/python3 -c "import json,sys; print(sum(1 for d in json.load(sys.stdin) if d['owner'] == '$1'))"; }
workers() { "$LOOM" --json exec view "$1" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin).get('training', {}).get('workers', 0))" 2>/dev/null || echo 0; }
poll() { # poll SECONDS VALUE COMMAND...: until COMMAND prints VALUE; 1 when the time passes
    local end=$(( $(now_ms) + $1 * 1000 )) want=$2; shift 2
    while [ "$("$@")" != "$want" ]; do
        [ "$(now_ms)" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# rate URL BODY RATE WARM SECONDS: an open-loop load for WARM + SECONDS;
# prints "p50_ms p99_ms measured errors" of the requests sent after WARM
cat > "$WORK/rate.py" <<'PY'
import sys, threading, time, urllib.request
url, body, rate, warm, secs, token = (sys.argv[1], sys.argv[2].encode(), float(sys.argv[3]),
                                      float(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
lat, errors, lock = [], [0], threading.Lock()
def one(measured):
    t = time.monotonic()
    try:
        req = urllib.request.Request(url, data=body, headers={"Authorization": "Bearer " + token,
                                                              "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()
        if measured:
            with lock: lat.append(time.monotonic() - t)
    except Exception:
        with lock: errors[0] += 1
threads, start, n = [], time.monotonic(), 0
for i in range(int(rate * (warm + secs))):
    delay = start + i / rate - time.monotonic()
    if delay > 0: time.sleep(delay)
    th = threading.Thread(target=one, args=(i >= rate * warm,)); th.start(); threads.append(th)
    n += i >= rate * warm
for th in threads: th.join()
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
print("%.1f %.1f %d %d" % (pct(0.5), pct(0.99), n, errors[0]))
PY
rate() { # rate MODEL BODY RATE WARM SECONDS
    /usr/bin/python3 "$WORK/rate.py" "$URL/dlim/v1/inference/$1" "$2" "$3" "$4" "$5" "$ALICE"; }

cp -r "$FAULT" "$WORK/slow"
sed -i 's/"name": "fault"/"name": "slow"/' "$WORK/slow/model.json"
printf '{"policy": {"kernel_min": 0, "kernel_max": 2, "schedule_interval": 0.5, "kernel_delay_release_time": %s, "task_execution_timeout": 60, "task_batch_size": 1}}' \
    "$RELEASE" > "$WORK/profile.json"
LOOM_TOKEN=$ALICE "$LOOM" model deploy -p "$WORK/slow" --profile "$WORK/profile.json" >/dev/null
LOOM_TOKEN=$ALICE "$LOOM" model deploy -p "$EX/echo-so" --profile "$WORK/profile.json" >/dev/null
LOOM_TOKEN=$ALICE "$LOOM" model start slow --wait 60 >/dev/null
echo "== 2 CPU slots, --hysteresis $HYSTERESIS s; plans /alice (the model) and /bob (training), equal shares"
echo "   model: 50 ms a request, kernel_min 0, kernel_max 2, kernel_delay_release_time $RELEASE s;"
echo "   load: $RATE requests a second, open loop, ${secs} s a phase (load average $(cut -d' ' -f1 /proc/loadavg))"

# ---- 1. alone: 5 s to settle, then measured
read -r a50 a99 asent aerr < <(rate slow '{"sleep":1}' "$RATE" 5 "$secs")
echo "model alone ($(held_by model/slow) slot(s) at the end): p50 $a50 ms, p99 $a99 ms ($asent requests, $aerr errors)"

# ---- 2. bob's training arrives while the model holds both slots (a burst
# of 40 requests a second brings it to 2), the load running on
. "$root/tests/integration/train_lib.sh"
model_dir "$WORK/t" 12000 400
rate slow '{"sleep":1}' 40 2 0 > /dev/null &
burst=$!
poll 30 2 held_by model/slow || echo "(the model did not reach 2 slots)"
echo "the model holds $(held_by model/slow) slots when the training arrives"
t0=$(now_ms)
job=$(LOOM_TOKEN=$BOB "$LOOM" exec start --exec-start edt --model-dir "$WORK/t" --numWorker 2 |
      sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
poll 60 1 workers "$job" || true
wait_ms=$(( $(now_ms) - t0 ))
wait $burst
queued() { curl -s -H "Authorization: Bearer $ALICE" "$URL/dlim/v1/model/slow" |
           /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"]["queued"])'; }
poll 60 0 queued || true
read -r s50 s99 ssent serr < <(rate slow '{"sleep":1}' "$RATE" 3 "$secs")
load_end=$(now_ms)
echo "model while sharing ($(held_by model/slow) slot(s); training on $(workers "$job")): p50 $s50 ms, p99 $s99 ms ($ssent requests, $serr errors)"
/usr/bin/python3 -c "print('  p99 sharing / alone: %.2fx (target <= 2x)' % ($s99 / $a99))"
handover=$("$LOOM" --json exec view "$job" | /usr/bin/python3 -c "import json,sys; v=json.load(sys.stdin); print(v.get('handover'))")
echo "training's wait for the model's extra slot: $wait_ms ms to its first worker running (target <= hysteresis + 2 s = $(( HYSTERESIS * 1000 + 2000 )) ms);"
echo "  the slot's hand-back: $handover"

# ---- 3. the load stops: the model goes to zero, training back to 2
poll 60 2 workers "$job" || true
echo "load stop -> training on 2 workers: $(( $(now_ms) - load_end )) ms (target <= release + hysteresis + 1 s = $(( RELEASE * 1000 + HYSTERESIS * 1000 + 1000 )) ms)"

# ---- 4. cold starts of the echo kernel from zero instances
LOOM_TOKEN=$ALICE "$LOOM" model start echo-so --wait 60 >/dev/null
poll 60 0 held_by model/echo-so || true
poll 60 2 workers "$job" || true
cold() { curl -s -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $ALICE" \
         -H 'Content-Type: application/json' --data-binary '{"cold":1}' "$URL/dlim/v1/inference/echo-so"; }
c_held=$(cold)
echo "cold start, both slots held by training (one taken back): $(/usr/bin/python3 -c "print(round($c_held * 1000))") ms"
"$LOOM" exec stop "$job" >/dev/null
poll 60 0 held_by model/echo-so || true
poll 60 0 held_by "$job" || true
c_free=$(cold)
echo "cold start, a free slot: $(/usr/bin/python3 -c "print(round($c_free * 1000))") ms"
LOOM_TOKEN=$ALICE "$LOOM" model stop slow >/dev/null
LOOM_TOKEN=$ALICE "$LOOM" model stop echo-so >/dev/null
