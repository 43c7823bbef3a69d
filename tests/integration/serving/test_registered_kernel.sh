#!/usr/bin/env bash
# A kernel registered once (`loom kernel add`) serves two models whose
# model.json name it as their runtime and carry no kernel file: one the
# administrator's, one another user's, each kernel running as its
# deployer's account and reading the registered file from the home's
# plugins/ folder. An unknown name is refused at deploy (and by `model
# check`), naming model.json's runtime and what is registered; a kernel
# that serves cannot be removed.
LOOM=$1
BUILD=$4
. "$(dirname "$0")/../lib.sh"
EX="$BUILD/examples/serving"

start_host --cpu-slots 4
post() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $2" -X POST \
         -H 'Content-Type: application/json' --data-binary "$3" "$URL/v2/models/$1/infer"; }
state() { "$LOOM" --json model view "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['state'])"; }

expect_ok "register the echo kernel once" "$LOOM" kernel add "$EX/echo-so/echo_kernel.so" --name shared-echo
expect_eq "the home's plugins/ folder: reachable, not listable" "$(stat -c %a "$LOOM_HOME/plugins")" 711
file=$("$LOOM" --json kernel show shared-echo | python3 -c "import json,sys; print(json.load(sys.stdin)['path'])")
expect_eq "the registered file: readable by the kernels' accounts" "$(stat -c %a "$file")" 644

model_dir() { # model_dir NAME RUNTIME [EXTRA JSON FIELDS]: a directory with no kernel of its own
    mkdir -p "$WORK/$1"
    printf 'weights of %s\n' "$1" > "$WORK/$1/weights.bin"
    printf '{"name":"%s","runtime":"%s","weight_path":"weights.bin"%s}' "$1" "$2" "${3:-}" > "$WORK/$1/model.json"
}
model_dir reg-a shared-echo
model_dir reg-b shared-echo ',"mk_environments":[{"name":"ECHO_GREETING","value":"bob"}]'

expect_ok "model check asks the host for the registered kernel" "$LOOM" model check "$WORK/reg-a"
expect_contains "and says so" "$(cat "$WORK/out")" "runtime shared-echo, a kernel registered with the host"

expect_ok "add user bob" "$LOOM" user add bob -p bob-password-1
BOB=$(curl -s -u bob:bob-password-1 -X POST "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
expect_ok "deploy reg-a (admin)" "$LOOM" model deploy -p "$WORK/reg-a"
expect_ok "deploy reg-b (bob)" env LOOM_TOKEN="$BOB" "$LOOM" model deploy -p "$WORK/reg-b"
expect_contains "view: the runtime is the kernel's name" "$(LOOM_TOKEN=$BOB "$LOOM" model view reg-b)" "shared-echo"
expect_contains "v2 metadata: the platform names the registered kernel" \
    "$(curl -s -H "Authorization: Bearer $BOB" "$URL/v2/models/reg-b")" '"platform":"loom-kernel:shared-echo"'
expect_ok "start reg-a" "$LOOM" model start reg-a --wait 90
expect_ok "start reg-b" env LOOM_TOKEN="$BOB" "$LOOM" model start reg-b --wait 90
expect_eq "reg-a answers" "$(post reg-a "$TOKEN" '{"m":"a"}')" 200
expect_eq "reg-a: the kernel's answer" "$(cat "$WORK/body")" '{"m":"a"}'
expect_eq "reg-b answers" "$(post reg-b "$BOB" '{"m":"b"}')" 200
expect_eq "reg-b: the kernel's answer" "$(cat "$WORK/body")" '{"m":"b"}'
expect_eq "one registration for both" "$("$LOOM" --json kernel list | python3 -c "import json,sys; print(sum(1 for k in json.load(sys.stdin) if k['name'] == 'shared-echo'))")" 1

# A Lua kernel registers and serves the same way.
expect_ok "register a Lua kernel" "$LOOM" kernel add "$EX/echo-lua/echo.lua" --name shared-lua
model_dir reg-lua shared-lua
expect_ok "deploy reg-lua" "$LOOM" model deploy -p "$WORK/reg-lua"
expect_ok "start reg-lua" "$LOOM" model start reg-lua --wait 90
expect_eq "reg-lua answers" "$(post reg-lua "$TOKEN" '{"m":"lua"}')" 200
expect_eq "reg-lua: the Lua kernel's answer" "$(cat "$WORK/body")" '{"m":"lua"}'
expect_ok "stop reg-lua" "$LOOM" model stop reg-lua

# Each kernel runs as its deployer's account, not as root.
kernel_uid() { # the uid of the kernel process serving model $1
    local pid
    pid=$(pgrep -f "kernel run --dir $LOOM_HOME/models/$1/model" | head -n1)
    [ -n "$pid" ] && awk '/^Uid:/ {print $2}' "/proc/$pid/status"
}
uid_a=$(kernel_uid reg-a)
uid_b=$(kernel_uid reg-b)
expect_ok "reg-a's kernel found" test -n "$uid_a"
expect_ok "reg-b's kernel found" test -n "$uid_b"
if [ "$(id -u)" = 0 ]; then
    expect_ok "reg-b's kernel is not root" test "$uid_b" != 0
    expect_ok "each model's kernel runs as its own deployer's account" test "$uid_a" != "$uid_b"
fi

# A kernel that serves is pinned.
expect_fails "a registered kernel in use cannot be removed" "$LOOM" kernel remove shared-echo
expect_contains "saying why" "$(cat "$WORK/out")" "in use"

# A host restarted starts them again: the registered kernels are loaded
# before the started models are resolved.
stop_host
start_host --cpu-slots 4
expect_ok "reg-a serves again after a host restart" wait_until 90 output_is 200 post reg-a "$TOKEN" '{"m":"again"}'
expect_ok "reg-b too" wait_until 90 output_is 200 post reg-b "$BOB" '{"m":"again"}'

# Unknown names and a kernel_path beside a registered name are refused.
model_dir reg-x no-such-kernel
expect_fails "an unknown registered kernel at deploy" "$LOOM" model deploy -p "$WORK/reg-x"
expect_contains "names model.json's runtime" "$(cat "$WORK/out")" 'model.json: runtime: "no-such-kernel"'
expect_contains "and what is registered" "$(cat "$WORK/out")" "registered kernels: shared-echo, shared-lua"
expect_fails "model check of an unknown registered kernel" "$LOOM" model check "$WORK/reg-x"
expect_contains "names it" "$(cat "$WORK/out")" 'runtime "no-such-kernel" names a kernel registered with a host'
model_dir reg-y shared-echo ',"kernel_path":"weights.bin"'
expect_fails "a registered kernel with a kernel_path" "$LOOM" model deploy -p "$WORK/reg-y"
expect_contains "names kernel_path" "$(cat "$WORK/out")" 'kernel_path: runtime "shared-echo" names a registered kernel'

# Stopped, the kernel is free to go; a model naming it then fails to start, saying why.
expect_ok "stop reg-a" "$LOOM" model stop reg-a
expect_ok "stop reg-b" env LOOM_TOKEN="$BOB" "$LOOM" model stop reg-b
expect_ok "remove the kernel once nothing serves it" "$LOOM" kernel remove shared-echo
expect_fails "reg-a cannot start without it" "$LOOM" model start reg-a
expect_contains "naming the runtime" "$(cat "$WORK/out")" 'runtime: "shared-echo"'

stop_host
finish
