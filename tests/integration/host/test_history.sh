#!/usr/bin/env bash
# The host's history over REST: who held each device and when (an exec's
# two workers, then free), a training exec's metrics per iteration and per
# epoch, a served model's request rate and instances, the same visibility as the live routes (another user's exec 404,
# another user's holder hidden), the time range checked, the flags' bounds.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

expect_fails "--history-points below its bound" "$LOOM" serve --history-points 5
expect_contains "it names the flag" "$(cat "$WORK/out")" "--history-points"
expect_fails "--history-hours 0" "$LOOM" serve --history-hours 0

start_host --cpu-slots 4 --history-hours 1 --history-points 500
expect_ok "add alice" "$LOOM" user add alice -p alice-password
expect_ok "add bob" "$LOOM" user add bob -p bob-password
token_of() {
    curl -s -X POST -u "$1:$2" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
ALICE=$(token_of alice alice-password)
BOB=$(token_of bob bob-password)
as() { # as TOKEN PATH: "STATUS BODY"
    curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $1" "$URL$2" > "$WORK/status"
    printf '%s %s' "$(cat "$WORK/status")" "$(cat "$WORK/body")"
}

wide_model "$WORK/m" 3000 3 512
START=$(($(date +%s%3N) - 1))
ID=$(curl -s -H "Authorization: Bearer $ALICE" -F "args=--exec-start edt --model-dir m --numWorker 2" \
       -F "file=@-;filename=m.tar" "$URL/platform/rest/deeplearning/v1/execs" < <(tar -C "$WORK" -cf - m) |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
expect_contains "alice's exec" "$ID" "alice"
wait_for "$ID" 'v["state"] == "FINISHED"' 180 || fail "the exec did not finish: $(view "$ID" | head -c 400)"

# The finished exec keeps its last iterations' running losses, so a history
# that looked last before the end (once a second) misses none of them.
recent=$(view "$ID" | python3 -c 'import json,sys; t=json.load(sys.stdin)["training"]; r=t.get("recentLosses",[]); print(len(r) > 0 and r[-1]["iteration"] == t["iteration"])')
expect_eq "the finished exec's last iterations' losses" "$recent" "True"
epochs_written() {
    as "$ALICE" "/loom/v1/history/execs/$ID/metrics" | sed 's/^[0-9]* //' |
        python3 -c 'import json,sys; print(sum(p["name"] == "epoch_train_loss" for p in json.load(sys.stdin)["points"]))'
}
wait_until 10 output_is 3 epochs_written || fail "epochs in the history: $(epochs_written)"
R=$(as "$ALICE" "/loom/v1/history/execs/$ID/metrics")
expect_eq "the metrics route" "${R%% *}" "200"
printf '%s' "${R#* }" > "$WORK/metrics.json"
python3 - "$WORK/metrics.json" > "$WORK/check.out" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
pts = m["points"]
loss = [p for p in pts if p["name"] == "epoch_train_loss"]
print("epochs", [p["epoch"] for p in loss])
print("iterations", int(any("iteration" in p and p["name"] == "train_loss" for p in pts)))
print("falls", int(loss[-1]["value"] < loss[0]["value"]))
print("accuracy", int(any(p["name"] == "epoch_train_accuracy" for p in pts)))
print("test", int(any(p["name"] == "epoch_test_loss" and p["epoch"] >= 1 for p in pts)))
PY
expect_contains "one loss per epoch, in order" "$(cat "$WORK/check.out")" "epochs [1, 2, 3]"
expect_contains "the running loss by iteration" "$(cat "$WORK/check.out")" "iterations 1"
expect_contains "the loss falls" "$(cat "$WORK/check.out")" "falls 1"
expect_contains "accuracy per epoch" "$(cat "$WORK/check.out")" "accuracy 1"
expect_contains "the test set's loss" "$(cat "$WORK/check.out")" "test 1"
expect_eq "bob asks for alice's exec" "$(as "$BOB" "/loom/v1/history/execs/$ID/metrics" | cut -c1-3)" "404"
expect_eq "the administrator may" "$(as "$TOKEN" "/loom/v1/history/execs/$ID/metrics" | cut -c1-3)" "200"
expect_eq "no such exec" "$(as "$ALICE" "/loom/v1/history/execs/nope/metrics" | cut -c1-3)" "404"

# ---- the devices: held by alice's exec, then free again
holders_of() { # holders_of TOKEN: each change as slot:holder
    as "$1" "/loom/v1/history/devices?from=$START" | sed 's/^[0-9]* //' |
        python3 -c 'import json,sys; print(" ".join("%d:%s" % (c["slot"], c["holder"]) for c in json.load(sys.stdin)["changes"]))'
}
freed_both() { [ "$(holders_of "$ALICE" | grep -o ':None' | wc -l)" -ge 2 ]; }
wait_until 10 freed_both || fail "the devices' release: $(holders_of "$ALICE")"
H=$(holders_of "$ALICE")
expect_contains "a device held by the exec" "$H" ":$ID"
expect_eq "two devices held by it" "$(echo "$H" | grep -o ":$ID" | wc -l)" "2"
expect_contains "free again" "$H" ":None"
HB=$(holders_of "$BOB")
expect_not_contains "bob does not see alice's exec" "$HB" "$ID"
expect_contains "he sees it held" "$HB" "another user's"

# ---- the range
expect_eq "from not a number" "$(as "$ALICE" "/loom/v1/history/devices?from=yesterday" | cut -c1-3)" "400"
expect_contains "it names the field" "$(cat "$WORK/body")" "from"
expect_eq "from after to" "$(as "$ALICE" "/loom/v1/history/devices?from=2000&to=1000" | cut -c1-3)" "400"
expect_eq "a range before anything" "$(as "$ALICE" "/loom/v1/history/devices?from=0&to=1000")" '200 {"from":0,"to":1000,"changes":[]}'
expect_eq "no such model" "$(as "$ALICE" "/loom/v1/history/models/nope" | cut -c1-3)" "404"

# ---- a served model: its request rate and instances
expect_ok "deploy echo-so" "$LOOM" model deploy -p "$BUILD/examples/serving/echo-so"
expect_ok "it serves" timeout 90 "$LOOM" model start echo-so --wait 60
post() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary '{"a":1}' "$URL/dlim/v1/inference/echo-so"; }
busy_rate() { # requests until the history has a rate above 0 with an instance
    for _ in 1 2 3 4 5; do post > /dev/null; done
    as "$TOKEN" "/loom/v1/history/models/echo-so" | sed 's/^[0-9]* //' |
        python3 -c 'import json,sys; p=json.load(sys.stdin)["points"]; sys.exit(0 if any(x["requestsPerSecond"] > 0 and x["instances"] >= 1 for x in p) else 1)'
}
expect_ok "the model's rate and instances in the history" wait_until 40 busy_rate
expect_eq "bob asks for the administrator's model" "$(as "$BOB" "/loom/v1/history/models/echo-so" | cut -c1-3)" "404"
expect_ok "stop echo-so" "$LOOM" model stop echo-so

stop_host
finish
