#!/usr/bin/env bash
# No existence oracle: the host checks the paths a user names with root's
# powers, so a path leaving the user's own tree gets one answer (400 naming
# the field) whether or not its target exists: model.json's kernel_path,
# weight_path and ffi.library in a deployed model directory, and an exec's
# --model-main. Only a path inside the tree is looked up (a missing one
# there is 404 / "no such file").
LOOM=$1
. "$(dirname "$0")/../lib.sh"

start_host
"$LOOM" user add dave -p dave-password >/dev/null
TOKEN=$(curl -s -X POST -u dave:dave-password "$URL/auth/v1/logon" |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("token",""))')
mkdir -p "$WORK/m"
printf 'loom.register_kernel{name = "k", execute = function(r) return r end}\n' > "$WORK/m/k.lua"

# deploy_with FIELD REL: "STATUS BODY" for a model whose FIELD names REL,
# with REL itself left out of the answer.
deploy_with() {
    case $1 in
        kernel_path) json="{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":\"$2\"}" ;;
        weight_path) json="{\"name\":\"m\",\"runtime\":\"native\",\"weight_path\":\"$2\"}" ;;
        ffi.library) json="{\"name\":\"m\",\"runtime\":\"ffi\",\"ffi\":{\"library\":\"$2\",\"symbol\":\"f\",\"signature\":\"int32(ptr f32 in x)\"}}" ;;
    esac
    printf '%s' "$json" > "$WORK/m/model.json"
    tar -C "$WORK/m" -cf "$WORK/m.tar" .
    local r
    r=$(http POST /dlim/v1/model -F "file=@$WORK/m.tar")
    printf '%s' "${r//"$2"/REL}"
}
up=../../../../../../../..
for field in kernel_path weight_path ffi.library; do
    a=$(deploy_with $field "$up/etc/passwd")
    b=$(deploy_with $field "$up/etc/no-such-file")
    expect_contains "$field: a path out of the model directory is 400" "$a" "400 "
    expect_contains "$field: the field is named" "$a" "$field"
    expect_eq "$field: an existing and a missing target outside: one answer" "$a" "$b"
    a=$(deploy_with $field /root/.bashrc)
    b=$(deploy_with $field /root/no-such-file)
    expect_contains "$field: an absolute path is 400" "$a" "400 "
    expect_eq "$field: absolute, existing or missing: one answer" "$a" "$b"
done
expect_contains "a missing file inside the directory is looked up" \
    "$(deploy_with kernel_path no-such.lua)" "404 "

# --model-main
tar -C "$WORK/m" -cf "$WORK/m.tar" .
main_answer() {
    local r
    r=$(http POST /platform/rest/deeplearning/v1/execs -F "file=@$WORK/m.tar" \
        -F "args=--exec-start command --model-dir m --model-main $1")
    printf '%s' "${r//"$1"/REL}"
}
a=$(main_answer "$up/etc/passwd")
expect_contains "--model-main out of the directory is 400" "$a" "400 "
expect_eq "--model-main: existing or missing outside: one answer" "$a" "$(main_answer "$up/etc/no-such-file")"
expect_eq "--model-main: absolute, existing or missing: one answer" \
    "$(main_answer /etc/passwd)" "$(main_answer /etc/no-such-file)"
stop_host
finish
