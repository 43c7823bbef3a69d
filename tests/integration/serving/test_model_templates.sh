#!/usr/bin/env bash
# The SDK's template model directories, one per kind of kernel (so, lua,
# ffi, registered), as a third party gets them: installed with the SDK
# beside the serving reference, built out of tree by the template's CMake
# project, each passing `loom model check`, deployed with its profile.json,
# started and answering, so they cannot rot.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"

PREFIX="$WORK/prefix"
expect_ok "cmake --install" cmake --install "$BUILD" --prefix "$PREFIX"
expect_ok "the serving reference is installed" test -s "$PREFIX/share/loom/doc/serving.md"
for kind in so lua ffi registered; do
    expect_ok "template model $kind installed" test -f "$PREFIX/share/loom/template/models/$kind/model.json"
    expect_ok "with its profile" test -f "$PREFIX/share/loom/template/models/$kind/profile.json"
done

cp -r "$PREFIX/share/loom/template" "$WORK/template"
expect_ok "the template configures against the installed SDK" \
    cmake -S "$WORK/template" -B "$WORK/template/build" -DCMAKE_PREFIX_PATH="$PREFIX"
expect_ok "and builds, models included" cmake --build "$WORK/template/build"
M="$WORK/template/build/models"
for kind in so lua ffi; do
    expect_ok "model check: the $kind template" "$LOOM" model check "$M/$kind"
    expect_contains "its kernel loaded" "$(cat "$WORK/out")" "kernel loaded and an instance created: ok"
done

start_host --cpu-slots 4
expect_fails "the registered template before its kernel is registered" "$LOOM" model check "$M/registered"
expect_contains "names the runtime" "$(cat "$WORK/out")" 'runtime "template_kernel"'
expect_ok "register the template's kernel" "$LOOM" kernel add "$WORK/template/build/template_kernel.so"
expect_ok "model check: the registered template" "$LOOM" model check "$M/registered"
for kind in so lua ffi registered; do
    expect_ok "deploy template-$kind with its profile" \
        "$LOOM" model deploy -p "$M/$kind" --profile "$M/$kind/profile.json"
    expect_ok "start template-$kind" "$LOOM" model start "template-$kind" --wait 90
done
infer() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" -X POST \
          -H 'Content-Type: application/json' --data-binary "$2" "$URL/v2/models/$1/infer"; }
pick() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2]), sort_keys=True))' "$WORK/body" "$1"; }
expect_eq "template-so answers" "$(infer template-so '{"x":1}')" 200
expect_eq "with its weights' greeting and model.json's suffix" "$(pick 'd')" '{"bytes": 7, "greeting": "hello from template-so!"}'
expect_eq "template-lua answers" "$(infer template-lua '{"x":1}')" 200
expect_eq "with its attribute's greeting and the body" "$(pick 'd')" '{"echo": "{\"x\":1}", "greeting": "hello from template-lua"}'
expect_eq "template-ffi answers" "$(infer template-ffi '{"inputs":[1,2.5]}')" 200
expect_eq "the inputs doubled, answered in the v2 shape" "$(pick 'd["outputs"][0]["data"]')" '[2, 5]'
expect_eq "template-registered answers" "$(infer template-registered '{"x":1}')" 200
expect_eq "the body, echoed" "$(cat "$WORK/body")" '{"x":1}'
"$LOOM" --json model viewprofile template-so -j > "$WORK/body"
expect_eq "the profile deployed is the template's" "$(pick '[d["policy"]["task_batch_size"], d["policy"]["kernel_max"]]')" '[8, 2]'

stop_host
finish
