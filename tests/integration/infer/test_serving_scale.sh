#!/usr/bin/env bash
# Serving's autoscaler: with requests queued it adds instances up to
# kernel_max, one per schedule_interval; with the load gone it returns to
# kernel_min after kernel_delay_release_time; no request fails meanwhile.
# The bounds are generous (a loaded machine); the behaviour is what counts.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"

start_host --cpu-slots 6
cp -r "$BUILD/tests/integration/infer/fault" "$WORK/slow"
sed -i 's/"name": "fault"/"name": "slow"/' "$WORK/slow/model.json"
cat > "$WORK/profile.json" <<'P'
{"policy": {"kernel_min": 1, "kernel_max": 3, "schedule_interval": 0.5,
            "kernel_delay_release_time": 1, "task_execution_timeout": 30, "task_batch_size": 1}}
P
expect_ok "deploy slow" "$LOOM" model deploy -p "$WORK/slow" --profile "$WORK/profile.json"
expect_ok "start slow" "$LOOM" model start slow --wait 90
view() { curl -s -H "Authorization: Bearer $TOKEN" "$URL/dlim/v1/model/slow" |
         /usr/bin/python3 -c "import json,sys; v=json.load(sys.stdin); print($1)"; }
expect_eq "one instance at rest" "$(view 'v["kernels"]["running"]')" 1

# Load: 6 clients, each sending 50 ms requests back to back.
: > "$WORK/codes"
pids=
for c in $(seq 1 6); do
    ( for _ in $(seq 1 60); do
          curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" \
               -H 'Content-Type: application/json' --data-binary '{"sleep":1}' \
               "$URL/dlim/v1/inference/slow" >> "$WORK/codes"
      done ) &
    pids="$pids $!"
done
peak=1
for _ in $(seq 1 100); do
    n=$(view 'v["kernels"]["running"]')
    [ "$n" -gt "$peak" ] && peak=$n
    [ "$peak" -ge 3 ] && break
    sleep 0.1
done
expect_eq "grows to kernel_max while requests queue" "$peak" 3
wait $pids # not the host's
total=$(wc -l < "$WORK/codes")
ok=$(grep -c '^200$' "$WORK/codes")
expect_eq "every request of the step answered 200" "$ok" "$total"
expect_eq "360 requests sent" "$total" 360
low=3
for _ in $(seq 1 150); do
    low=$(view 'v["kernels"]["running"]')
    [ "$low" -le 1 ] && break
    sleep 0.1
done
expect_eq "back to kernel_min once the load is gone" "$low" 1
expect_eq "none failed" "$(view 'int(v["requests"]["failed"])')" 0
expect_eq "all served" "$(view 'int(v["requests"]["served"])')" 360
stop_host
finish
