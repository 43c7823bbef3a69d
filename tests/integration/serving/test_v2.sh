#!/usr/bin/env bash
# One inference protocol for every kernel kind: the same Open Inference
# Protocol v2 request to the .so, Lua and ffi echo kernels is decoded by the
# host and answered the same way (but for the model's name), the shorthand
# too; a bad request is refused by the host, naming the input and what was
# expected; a kernel answering the wrong number of outputs fails that
# request alone, naming the model and the counts; a raw model still gets the
# body as it is; model check says which protocol a model speaks.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 8 # one for each model
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }
# the answer without its model_name, keys sorted
norm() { python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a.pop("model_name"); print(json.dumps(a, sort_keys=True))' "$WORK/body"; }
error() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$WORK/body"; }

out=$("$LOOM" model check "$EX/echo-so-v2" 2>&1)
expect_contains "check: a v2 model's protocol and tensors" "$out" \
    "requests: Open Inference Protocol v2, decoded by the host; inputs x FP64 [-1]; outputs y FP64 [-1]"
out=$("$LOOM" model check "$EX/echo-ffi" 2>&1)
expect_contains "check: an ffi model's tensors are its signature's" "$out" "inputs x FP64 [-1]; outputs y FP64 [-1]"
out=$("$LOOM" model check "$EX/echo-so" 2>&1)
expect_contains "check: a raw model" "$out" "requests: raw"

# A Lua kernel declaring two outputs that answers one.
mkdir -p "$WORK/twoout"
cp "$EX/echo-lua/echo.lua" "$WORK/twoout/"
cat > "$WORK/twoout/model.json" <<'JSON'
{"name": "twoout", "runtime": "lua", "kernel_path": "echo.lua",
 "inputs": [{"name": "x", "datatype": "FP64", "shape": [-1]}],
 "outputs": [{"name": "y", "datatype": "FP64", "shape": [-1]},
             {"name": "z", "datatype": "FP64", "shape": [-1]}]}
JSON
for m in "$EX/echo-so-v2" "$EX/echo-lua-v2" "$EX/echo-ffi" "$EX/echo-so" "$WORK/twoout"; do
    expect_ok "deploy $(basename "$m")" "$LOOM" model deploy -p "$m"
    expect_ok "start $(basename "$m")" "$LOOM" model start "$(basename "$m")" --wait 90
done

REQ='{"id":"q1","inputs":[{"name":"x","shape":[4],"datatype":"FP64","data":[[1,2],[3.5,-4e-1]]}],"parameters":{"p":1}}'
WANT='{"id": "q1", "outputs": [{"data": [1, 2, 3.5, -0.4], "datatype": "FP64", "name": "y", "shape": [4]}]}'
SHORT_WANT='{"outputs": [{"data": [5, 6], "datatype": "FP64", "name": "y", "shape": [2]}]}'
for m in echo-so-v2 echo-lua-v2 echo-ffi; do
    expect_eq "$m: a v2 request" "$(post $m "$REQ")" 200
    expect_eq "$m: the v2 answer" "$(norm)" "$WANT"
    expect_contains "$m: named in its answer" "$(cat "$WORK/body")" "\"model_name\":\"$m\""
    expect_eq "$m: the shorthand" "$(post $m '{"inputs":[5,6]}')" 200
    expect_eq "$m: the shorthand's answer" "$(norm)" "$SHORT_WANT"
done

# Refused by the host, before any kernel: each names the input and what it expected.
refused() { # refused MODEL BODY EXPECTED-TEXT
    expect_eq "$1 refuses $3" "$(post "$1" "$2")" 400
    expect_contains "$1: $3" "$(error)" "$3"
}
for m in echo-so-v2 echo-lua-v2 echo-ffi; do
    refused $m '{"inputs":[{"name":"w","shape":[1],"datatype":"FP64","data":[1]}]}' \
        "model \"$m\": inputs[0]: no input is named \"w\" (the model declares \"x\")"
    refused $m '{"inputs":[{"name":"x","shape":[1],"datatype":"INT32","data":[1]}]}' \
        'inputs[0] ("x"): datatype: expected FP64 (declared), got INT32'
    refused $m '{"inputs":[{"name":"x","shape":[2,2],"datatype":"FP64","data":[1,2,3,4]}]}' \
        'inputs[0] ("x"): shape: 2 dimensions, expected 1 (declared)'
    refused $m '{"inputs":[{"name":"x","shape":[4],"datatype":"FP64","data":[1,2,3]}]}' \
        'inputs[0] ("x"): data: 3 elements, the shape holds 4'
    refused $m '{"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":["a"]}]}' \
        'inputs[0] ("x"): data[0]: expected numbers of FP64'
done
expect_contains "no kernel saw the refused requests" "$("$LOOM" model view echo-lua-v2 -s 2>&1)" \
    "Requests: 2 served, 0 failed"

# The wrong number of outputs fails that request, with a server error; the host serves on.
code=$(post twoout '{"inputs":[1]}')
expect_eq "wrong number of outputs: a server error" "$code" 500
expect_contains "wrong number of outputs: named" "$(error)" \
    'model "twoout": the kernel answered 1 output, the model declares 2'
expect_eq "the host serves on" "$(post echo-so-v2 '{"inputs":[3]}')" 200

# Raw: the body as it is, a v2 one included.
expect_eq "raw echo-so" "$(post echo-so "$REQ")" 200
expect_eq "raw echo-so: the body as is" "$(cat "$WORK/body")" "$REQ"
stop_host
finish
