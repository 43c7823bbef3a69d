#!/usr/bin/env bash
# Serving's faults: a kernel that crashes mid-batch (the batch fails naming
# the signal; the instance restarts and answers), one that hangs past
# task_execution_timeout (a deadline error; restarted), one that answers
# invalid output, a kernel that cannot load (start fails with its reason),
# and a libffi symbol that does not exist.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"

start_host --cpu-slots 4
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
         -H 'Content-Type: application/json' --data-binary "$2" "$URL/dlim/v1/inference/$1"; }

cp -r "$BUILD/tests/integration/infer/fault" "$WORK/fault"
cat > "$WORK/profile.json" <<'P'
{"policy": {"task_execution_timeout": 1, "kernel_min": 1, "kernel_max": 1}}
P
expect_ok "deploy fault" "$LOOM" model deploy -p "$WORK/fault" --profile "$WORK/profile.json"
expect_ok "start fault" "$LOOM" model start fault --wait 90
expect_eq "echo first" "$(post fault '{"ok":1}')" 200
post fault '{"crash":1}' >/dev/null
expect_contains "crash fails its batch" "$(cat "$WORK/body")" "killed by signal 6"
expect_eq "answers after the crash" "$(post fault '{"ok":2}')" 200
post fault '{"hang":1}' >/dev/null
expect_contains "hang: deadline" "$(cat "$WORK/body")" "task_execution_timeout"
expect_eq "answers after the hang" "$(post fault '{"ok":3}')" 200
post fault '{"garbage":1}' >/dev/null
expect_contains "invalid output named" "$(cat "$WORK/body")" "invalid output"
out=$("$LOOM" model view fault -s 2>&1)
expect_contains "restarts counted" "$out" "2 restarts"

# A kernel that cannot load: start fails with the kernel's reason.
mkdir -p "$WORK/badlua"
printf 'loom.register_kernel{name = "x", execute = function(r) return r end}\nerror("boom at load")\n' \
    > "$WORK/badlua/k.lua"
printf '{"name":"badlua","runtime":"lua","kernel_path":"k.lua"}' > "$WORK/badlua/model.json"
expect_fails "model check refuses it" "$LOOM" model check "$WORK/badlua"
expect_contains "check: why" "$(cat "$WORK/out")" "boom at load"
expect_ok "deploy badlua" "$LOOM" model deploy -p "$WORK/badlua"
expect_fails "start badlua" "$LOOM" model start badlua --wait 90
expect_contains "start: the kernel's reason" "$(cat "$WORK/out")" "boom at load"

# libffi: a missing symbol is refused by check and at start.
mkdir -p "$WORK/ffimiss"
cp "$BUILD/examples/serving/echo-ffi/libecho.so" "$WORK/ffimiss/"
sed 's/"symbol": "echo"/"symbol": "no_such_symbol"/; s/"name": "echo-ffi"/"name": "ffimiss"/' \
    "$BUILD/examples/serving/echo-ffi/model.json" > "$WORK/ffimiss/model.json"
expect_fails "check: missing symbol" "$LOOM" model check "$WORK/ffimiss"
expect_contains "missing symbol named" "$(cat "$WORK/out")" "no_such_symbol"
sed -i 's/"symbol": "no_such_symbol"/"symbol": "echo"/; s/ptr f64 in x/ptr f99 in x/' "$WORK/ffimiss/model.json"
expect_fails "deploy: bad signature" "$LOOM" model deploy -p "$WORK/ffimiss"
expect_contains "bad signature named" "$(cat "$WORK/out")" "ffi.signature"

# model.json missing, malformed, with a kernel outside the directory; an
# unknown runtime.
mkdir -p "$WORK/outside"
expect_fails "model.json missing" "$LOOM" model deploy -p "$WORK/outside"
expect_contains "missing named" "$(cat "$WORK/out")" "model.json"
printf '{"name": "o", ' > "$WORK/outside/model.json"
expect_fails "model.json malformed" "$LOOM" model deploy -p "$WORK/outside"
expect_contains "malformed named" "$(cat "$WORK/out")" "not a JSON object"
printf '{"name":"o","runtime":"so","kernel_path":"../fault/fault_kernel.so"}' > "$WORK/outside/model.json"
expect_fails "kernel outside the dir" "$LOOM" model deploy -p "$WORK/outside"
expect_contains "outside named" "$(cat "$WORK/out")" "outside the model directory"
printf '{"name":"o","runtime":"onnx"}' > "$WORK/outside/model.json"
expect_fails "unknown runtime" "$LOOM" model deploy -p "$WORK/outside"
expect_contains "runtime named" "$(cat "$WORK/out")" "runtime"
expect_ok "stop -f" "$LOOM" model stop fault -f
stop_host
finish
