#!/usr/bin/env bash
# The Open Inference Protocol v2's routes over loom's model services: the
# health checks (public), a model's metadata from model.json's declarations,
# ready (503 naming the state before start, 200 once an instance serves),
# inference answering as dlim's route does; another user's model is 404;
# an inference-scoped API key calls the v2 infer route and nothing else.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 2
# v2 METHOD PATH [TOKEN] [BODY]: prints the status; the body in $WORK/body.
v2() {
    curl -s -o "$WORK/body" -w '%{http_code}' -X "$1" ${3:+-H "Authorization: Bearer $3"} \
         -H 'Content-Type: application/json' ${4:+--data-binary "$4"} "$URL$2"
}
# pick EXPR: EXPR of the last body (d), as sorted JSON.
pick() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2]), sort_keys=True))' "$WORK/body" "$1"; }

# Health: no token needed, as KServe's probes send none.
expect_eq "live without a token" "$(v2 GET /v2/health/live)" 200
expect_eq "live says so" "$(cat "$WORK/body")" '{"live":true}'
expect_eq "ready without a token" "$(v2 GET /v2/health/ready)" 200
expect_eq "ready says so" "$(cat "$WORK/body")" '{"ready":true}'
expect_eq "a model's route still wants a token" "$(v2 GET /v2/models/echo-v2)" 401

# A model whose model.json declares its tensors (the echo .so kernel).
cp -r "$EX/echo-so" "$WORK/echo-v2"
python3 - "$WORK/echo-v2/model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "echo-v2"
m["inputs"] = [{"name": "x", "datatype": "FP32", "shape": [-1, 3], "note": "not metadata"}]
m["outputs"] = [{"name": "y", "datatype": "FP32", "shape": [-1, 3]}]
json.dump(m, open(sys.argv[1], "w"))
PY
expect_ok "deploy echo-v2" "$LOOM" model deploy -p "$WORK/echo-v2"
expect_eq "metadata" "$(v2 GET /v2/models/echo-v2 "$TOKEN")" 200
expect_eq "metadata: name, versions, platform" "$(pick '[d["name"], d["versions"], d["platform"]]')" \
    '["echo-v2", [], "loom-so"]'
expect_eq "metadata: the declared inputs, their three fields" "$(pick 'd["inputs"]')" \
    '[{"datatype": "FP32", "name": "x", "shape": [-1, 3]}]'
expect_eq "metadata: the declared outputs" "$(pick 'd["outputs"]')" \
    '[{"datatype": "FP32", "name": "y", "shape": [-1, 3]}]'
# A raw model declares no tensors to the protocol.
cp -r "$EX/echo-lua" "$WORK/echo-raw"
python3 - "$WORK/echo-raw/model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "echo-raw"
m["protocol"] = "raw"
json.dump(m, open(sys.argv[1], "w"))
PY
expect_ok "deploy echo-raw" "$LOOM" model deploy -p "$WORK/echo-raw"
expect_eq "raw model's metadata" "$(v2 GET /v2/models/echo-raw "$TOKEN")" 200
expect_eq "raw: no inputs, no outputs, platform loom-lua" \
    "$(pick '[d["inputs"], d["outputs"], d["platform"]]')" '[[], [], "loom-lua"]'
expect_eq "an unknown model's metadata is 404" "$(v2 GET /v2/models/nope "$TOKEN")" 404
expect_contains "in loom's error shape, whose error is v2's" "$(cat "$WORK/body")" '"error":"no model named \"nope\""'

# Ready: 503 naming the state until an instance serves, then 200.
expect_eq "ready before start" "$(v2 GET /v2/models/echo-v2/ready "$TOKEN")" 503
expect_contains "names the state" "$(cat "$WORK/body")" 'is not ready: state stopped'
expect_eq "infer before start" "$(v2 POST /v2/models/echo-v2/infer "$TOKEN" '{"a":1}')" 503
expect_ok "start echo-v2" "$LOOM" model start echo-v2
expect_ok "ready once it serves" wait_until 90 output_is 200 v2 GET /v2/models/echo-v2/ready "$TOKEN"
expect_eq "ready says so" "$(cat "$WORK/body")" '{"name":"echo-v2","ready":true}'

# Inference through v2 answers as through dlim.
body='{"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}'
expect_eq "v2 infer" "$(v2 POST /v2/models/echo-v2/infer "$TOKEN" "$body")" 200
v2_answer=$(cat "$WORK/body")
expect_eq "dlim inference" "$(v2 POST /dlim/v1/inference/echo-v2 "$TOKEN" "$body")" 200
expect_eq "the same answer both ways" "$v2_answer" "$(cat "$WORK/body")"
# The host decodes the declared input and the echo kernel answers it as its
# output.
echo_answer='{"model_name":"echo-v2","outputs":[{"name":"y","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}'
expect_eq "and the kernel's (an echo)" "$v2_answer" "$echo_answer"
expect_eq "a bad body is refused as on dlim" "$(v2 POST /v2/models/echo-v2/infer "$TOKEN" 'not json')" 400
expect_eq "an unknown model's infer is 404" "$(v2 POST /v2/models/nope/infer "$TOKEN" '{}')" 404

# Another user sees none of it.
expect_ok "add user bob" "$LOOM" user add bob -p bob-password-1
BOB=$(curl -s -u bob:bob-password-1 -X POST "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
expect_eq "bob: metadata 404" "$(v2 GET /v2/models/echo-v2 "$BOB")" 404
expect_eq "bob: ready 404" "$(v2 GET /v2/models/echo-v2/ready "$BOB")" 404
expect_eq "bob: infer 404" "$(v2 POST /v2/models/echo-v2/infer "$BOB" '{}')" 404

# An inference-scoped key: v2 infer (and dlim's) on its user's models only.
key=$("$LOOM" apikey create v2client --scope inference | sed -n 's/.*(shown once): //p')
INF=$(curl -s -X POST -d "{\"apikey\": \"$key\"}" "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
expect_eq "inference key: v2 infer" "$(v2 POST /v2/models/echo-v2/infer "$INF" "$body")" 200
expect_eq "inference key: the answer" "$(cat "$WORK/body")" "$echo_answer"
expect_eq "inference key: dlim inference still" "$(v2 POST /dlim/v1/inference/echo-v2 "$INF" "$body")" 200
expect_eq "inference key: no metadata" "$(v2 GET /v2/models/echo-v2 "$INF")" 403
expect_contains "the refusal names the routes it may call" "$(cat "$WORK/body")" '/v2/models/{name}/infer'
expect_eq "inference key: no ready" "$(v2 GET /v2/models/echo-v2/ready "$INF")" 403
expect_eq "inference key: no model stop" "$(v2 POST /dlim/v1/model/echo-v2/operation/stop "$INF")" 403
expect_eq "inference key: no model listing" "$(v2 GET /dlim/v1/model "$INF")" 403

# Stopped again: not ready, naming the state.
expect_ok "stop echo-v2" "$LOOM" model stop echo-v2
expect_eq "ready after stop" "$(v2 GET /v2/models/echo-v2/ready "$TOKEN")" 503
expect_contains "names the state" "$(cat "$WORK/body")" 'state stopped'

stop_host
finish
