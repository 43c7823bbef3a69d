#!/usr/bin/env bash
# The native kernel: a model in the native trainer's files (edt.json and
# model.safetensors, written here by hand: a 4 -> 3 dense layer with known
# weights) served with KServe v2 JSON; rows batched; bad shapes and bodies
# refused by name; missing weights refused at start.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

start_host --cpu-slots 2
M=$WORK/tiny
mkdir -p "$M"
cat > "$M/edt.json" <<'J'
{"model": {"input": [4], "layers": [{"type": "dense", "units": 3}]},
 "loss": "softmax_cross_entropy", "optimizer": {"type": "sgd", "lr": 0.1},
 "dataset": {"format": "csv"}}
J
/usr/bin/python3 - "$M/model.safetensors" <<'PY'
import json, struct, sys
w = [1, 0, 0, 0,  0, 1, 0, 0,  0, 0, 1, 0]   # logits = the first three inputs
b = [0, 0, 0.5]
header = json.dumps({"layers.0.weight": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
                     "layers.0.bias": {"dtype": "F32", "shape": [3], "data_offsets": [48, 60]}}).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack("<15f", *(w + b)))
PY
cat > "$M/model.json" <<'J'
{"name": "tiny", "runtime": "native", "weight_path": "model.safetensors",
 "attributes": [{"key": "model_spec", "value": "edt.json"}]}
J
expect_ok "model check tiny" "$LOOM" model check "$M"
expect_ok "deploy tiny" "$LOOM" model deploy -p "$M"
expect_ok "start tiny" "$LOOM" model start tiny --wait 90
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$1" "$URL/dlim/v1/inference/tiny"; }

expect_eq "one row" "$(post '{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}')" 200
expect_contains "its logits" "$(cat "$WORK/body")" '"data":[1,2,3.5]'
expect_contains "its label" "$(cat "$WORK/body")" '"name":"label","shape":[1],"datatype":"INT64","data":[2]'
expect_eq "two rows, nested" "$(post '{"inputs":[{"name":"x","shape":[2,4],"datatype":"FP32","data":[[9,1,1,1],[0,7,0,0]]}]}')" 200
expect_contains "two labels" "$(cat "$WORK/body")" '"data":[0,1]'
expect_eq "wrong shape" "$(post '{"inputs":[{"name":"x","shape":[1,5],"datatype":"FP32","data":[1,2,3,4,5]}]}')" 400
expect_contains "shape named" "$(cat "$WORK/body")" "inputs[0].shape"
expect_eq "too few numbers" "$(post '{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2]}]}')" 400
expect_contains "data named" "$(cat "$WORK/body")" "inputs[0].data"
expect_eq "not JSON" "$(post 'nope')" 400
expect_eq "not KServe's shape" "$(post '{"id":1,"data":"aGVsbG8="}')" 400
expect_contains "the expected shape named" "$(cat "$WORK/body")" "KServe v2"
expect_eq "a string datatype" "$(post '{"inputs":[{"name":"x","shape":[1,4],"datatype":"BYTES","data":[1,2,3,4]}]}')" 400

# Concurrent requests batched together (task_batch_size 8) all answered right.
expect_ok "stop" "$LOOM" model stop tiny
printf '{"policy": {"task_batch_size": 8}}' > "$WORK/p.json"
expect_ok "batch 8" "$LOOM" model updateprofile tiny -f "$WORK/p.json"
expect_ok "start again" "$LOOM" model start tiny --wait 90
pids=
for i in $(seq 0 15); do
    curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
         --data-binary "{\"inputs\":[{\"name\":\"x\",\"shape\":[1,4],\"datatype\":\"FP32\",\"data\":[0,0,$i,0]}]}" \
         "$URL/dlim/v1/inference/tiny" > "$WORK/r.$i" &
    pids="$pids $!"
done
wait $pids # not the host's
right=0
for i in $(seq 0 15); do
    case "$(cat "$WORK/r.$i")" in *"\"data\":[0,0,$i.5]"*) right=$((right + 1)) ;; esac
done
expect_eq "16 concurrent rows, each its own answer" "$right" 16

# Weights that do not fit the spec: start fails naming the tensor.
mkdir -p "$WORK/bad"
cp "$M/edt.json" "$M/model.json" "$WORK/bad/"
sed -i 's/"tiny"/"badw"/; s/"units": 3/"units": 5/' "$WORK/bad/model.json" "$WORK/bad/edt.json"
cp "$M/model.safetensors" "$WORK/bad/"
expect_fails "check: weights of another shape" "$LOOM" model check "$WORK/bad"
expect_contains "tensor named" "$(cat "$WORK/out")" "layers.0.weight"
stop_host
finish
