#!/usr/bin/env bash
# Plugins end to end: `loom plugin check` on good and bad plugins, the
# registration commands (framework/algorithm/logger add|list|show|remove),
# a Lua framework running a job, persistence across restarts, and a host
# SIGKILLed while plugins are being registered coming back whole.
LOOM=$1
TP=$2   # the test plugins
. "$(dirname "$0")/../lib.sh"
FIX="$(dirname "$0")/fixtures"

# ---- plugin check, no host needed
out=$("$LOOM" plugin check "$TP/good_thirdparty.so")
expect_contains "check a third-party plugin" "$out" "ok: logger good_thirdparty"
expect_contains "check prints the ABI" "$out" "ABI 1.7"
out=$(cd "$TP" && "$LOOM" plugin check good_thirdparty.so 2>&1)
expect_contains "check takes a bare relative path" "$out" "ok: logger good_thirdparty"
check_refused() { # check_refused FILE EXPECTED-TEXT
    expect_fails "check refuses $1" "$LOOM" plugin check "$TP/$1"
    expect_contains "check $1 says why" "$(cat "$WORK/out")" "$2"
}
check_refused no_entry.so "no loom_module_entry function"
check_refused abi_major.so "abi_major is 2; this host supports ABI major 1"
check_refused abi_minor.so "abi_minor is 8, newer than this host's ABI 1.7"
check_refused abi_tag.so "abi_tag is"
check_refused small_struct.so "loom_module.struct_size is"
check_refused missing_entry.so "missing required entry 'observe'"
check_refused no_factory.so "provides no factory"
check_refused init_fails.so "init failed"
check_refused bad_name.so "is not a valid name"
check_refused reserved_set.so "loom_logger_factory.reserved is 1; it must be zero"
expect_fails "check a missing file" "$LOOM" plugin check "$WORK/nothing.so"
expect_contains "missing file named" "$(cat "$WORK/out")" "$WORK/nothing.so"
expect_fails "check a broken Lua script" "$LOOM" plugin check "$FIX/broken.lua"
expect_contains "Lua syntax error names file and line" "$(cat "$WORK/out")" "broken.lua:3"
# A pattern that backtracks in C at load time, where Lua's count hook never
# fires: check stops it at the host's probe deadline (10 s), not never.
cat > "$WORK/pattern_at_load.lua" <<'LUA'
local s = string.rep("a", 60000)
string.find(s, string.rep("a-", 40) .. "b")
loom.register_logger{name = "never_registered", log_train_metrics = function() end}
LUA
began=$(date +%s)
expect_fails "check stops a script that never returns" timeout 60 "$LOOM" plugin check "$WORK/pattern_at_load.lua"
took=$(( $(date +%s) - began ))
expect_contains "at the host's deadline, saying so" "$(cat "$WORK/out")" "loading it took over 10000 ms"
[ "$took" -lt 30 ] && pass || fail "plugin check took $took s on a script that never returns"

start_host

# ---- registration through the CLI
expect_ok "logger add" "$LOOM" logger add "$TP/good_thirdparty.so"
expect_contains "add reports the plugin" "$(cat "$WORK/out")" "registered logger good_thirdparty"
expect_fails "same name twice" "$LOOM" logger add "$TP/good_thirdparty.so"
expect_contains "same name twice says so" "$(cat "$WORK/out")" 'a logger named "good_thirdparty" is already registered'
expect_ok "add under another name" "$LOOM" logger add "$TP/good_thirdparty.so" --name second_logger
expect_fails "wrong kind" "$LOOM" framework add "$TP/good_thirdparty.so"
expect_contains "wrong kind says so" "$(cat "$WORK/out")" "provides no framework"
expect_fails "bad ABI over REST" "$LOOM" algorithm add "$TP/abi_major.so"
expect_contains "bad ABI names the field and the user's file" "$(cat "$WORK/out")" "abi_major.so: abi_major is 2"
expect_fails "missing entry over REST" "$LOOM" algorithm add "$TP/missing_entry.so"
expect_contains "missing entry named" "$(cat "$WORK/out")" "missing required entry 'observe'"
expect_fails "Lua syntax error over REST" "$LOOM" framework add "$FIX/broken.lua"
expect_contains "Lua error names the line" "$(cat "$WORK/out")" ":3"
printf 'not a plugin' > "$WORK/readme.txt"
expect_fails "not a plugin file" "$LOOM" framework add "$WORK/readme.txt"
expect_contains "not a plugin file says so" "$(cat "$WORK/out")" "neither a .so nor a .lua"
r=$(http GET /loom/v1/health); expect_contains "host still up after bad plugins" "$r" '"status":"ok"'
list=$("$LOOM" logger list)
expect_contains "list shows the logger" "$list" "good_thirdparty"
expect_contains "list shows the renamed one" "$list" "second_logger"
expect_not_contains "refused plugins are not listed" "$("$LOOM" plugin list)" "abi_major"
show=$("$LOOM" logger show good_thirdparty)
expect_contains "show origin" "$show" "origin       user"
expect_fails "remove a built-in" "$LOOM" framework remove command
expect_contains "built-in stays" "$(cat "$WORK/out")" "built in and cannot be removed"

# ---- a Lua framework runs a job
expect_ok "framework add Lua" "$LOOM" framework add "$FIX/hello.lua"
expect_contains "Lua framework registered" "$(cat "$WORK/out")" "registered framework hello 0.1.0"
mkdir -p "$WORK/model"
printf 'echo "hello from rank $HELLO_RANK"\n' > "$WORK/model/main.sh"
out=$("$LOOM" exec start --exec-start hello --model-dir "$WORK/model" --model-main main.sh --numWorker 2)
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "Lua-planned job finishes" "$LOOM" exec wait "$id" --timeout 30
expect_contains "Lua-planned workers ran" "$("$LOOM" exec logs "$id")" "hello from rank 1"
expect_ok "remove the Lua framework" "$LOOM" framework remove hello

# ---- a trainer adapter that hands CPU workers device memory: the worker
# refuses it by name, the job ends ERROR and the host goes on
expect_ok "framework add a trainer adapter" "$LOOM" framework add "$TP/device_buffers.so"
mkdir -p "$WORK/devmodel"
echo '{"training": {"epochs": 1, "batch_size": 2}}' > "$WORK/devmodel/edt.json"
out=$("$LOOM" exec start --exec-start device_buffers --model-dir "$WORK/devmodel" --numWorker 1)
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_fails "the job fails" "$LOOM" exec wait "$id" --timeout 60
expect_contains "it says why" "$("$LOOM" exec view "$id")" "the adapter gave device memory (weight) to a CPU worker"
expect_ok "the host goes on" "$LOOM" plugin list
expect_ok "remove it" "$LOOM" framework remove device_buffers

# ---- plugins built against the ABI 1.0 headers (tests/abi-1.0) with poison
# past every declared struct end: a two-worker trainer job with the same
# file as framework and logger (driver and workers) runs what each declared
# and nothing past it; old_full's state_loaded runs when the joining worker
# takes the weights, old_min's is never touched
for name in old_full old_min; do
    expect_ok "$name: framework add" "$LOOM" framework add "$TP/$name.so"
    expect_ok "$name: logger add" "$LOOM" logger add "$TP/$name.so"
    mkdir -p "$WORK/$name"
    echo '{"training": {"epochs": 2, "batch_size": 2, "loggers": [{"name": "'$name'", "role": "both"}]}}' \
        > "$WORK/$name/edt.json"
    out=$("$LOOM" exec start --exec-start $name --model-dir "$WORK/$name" --numWorker 2)
    id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
    expect_ok "$name: the job finishes" "$LOOM" exec wait "$id" --timeout 60
    expect_not_contains "$name: no call past struct_size" "$("$LOOM" exec logs "$id" 2>&1)" "ABI POISON"
    ran="$LOOM_HOME/execs/$id"
    for role in driver worker-0 worker-1; do
        calls=$(tr '\n' ' ' < "$ran/log/$role/old_abi_calls.txt")
        if [ $name = old_full ]; then
            [ $role = driver ] && expect_contains "$name: driver logger ran every callback" "$calls" \
                "create on_train_begin log_train_metrics"
            expect_contains "$name: $role logger ended" "$calls" "on_train_end destroy"
        else
            expect_eq "$name: $role logger ran only what it declared" "$calls" "create destroy "
        fi
    done
    expect_eq "$name: the logger got a folder of its own" "$(ls -d "$ran/plugins/$name")" "$ran/plugins/$name"
    if [ $name = old_full ]; then
        expect_contains "$name: state_loaded ran" "$(cat "$ran/_submitted_code/old_abi_calls.txt")" "state_loaded"
    else
        expect_eq "$name: state_loaded never touched" "$(ls "$ran/_submitted_code")" "edt.json"
    fi
    expect_ok "$name: remove the framework" "$LOOM" framework remove $name
    expect_ok "$name: remove the logger" "$LOOM" logger remove $name
done
# ---- an adapter using ABI 1.5's growable arrays: 20 metrics a call (more
# than the 16 of loom_metrics.items) and 300 state tensors handed one at a
# time (more than the trainer's old array of 256); a two-worker job runs,
# checkpoints them all, and the job's metrics reach the adapter whole
expect_ok "grown_arrays: framework add" "$LOOM" framework add "$TP/grown_arrays.so"
mkdir -p "$WORK/grown"
echo '{"training": {"epochs": 2, "batch_size": 2}}' > "$WORK/grown/edt.json"
out=$("$LOOM" exec start --exec-start grown_arrays --model-dir "$WORK/grown" --numWorker 2)
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "grown_arrays: the job finishes" "$LOOM" exec wait "$id" --timeout 60
ran="$LOOM_HOME/execs/$id"
expect_contains "grown_arrays: the job's metrics reached it whole" \
    "$(cat "$ran/_submitted_code/grown_arrays_calls.txt")" "job_metrics 20 last m19"
expect_ok "grown_arrays: remove" "$LOOM" framework remove grown_arrays
expect_ok "old_launch: framework add" "$LOOM" framework add "$TP/old_launch.so"
mkdir -p "$WORK/oldlaunch"
printf 'echo "old rank $OLD_RANK"\n' > "$WORK/oldlaunch/main.sh"
out=$("$LOOM" exec start --exec-start old_launch --model-dir "$WORK/oldlaunch" --model-main main.sh --numWorker 2)
id=$(echo "$out" | sed -n 's/^exec \([^ ]*\) submitted.*/\1/p')
expect_ok "old_launch: the job finishes" "$LOOM" exec wait "$id" --timeout 30
expect_contains "old_launch: its workers ran" "$("$LOOM" exec logs "$id")" "old rank 1"
expect_ok "old_launch: remove" "$LOOM" framework remove old_launch

# ---- REST registration works the same
r=$(http POST /loom/v1/plugins -F kind=framework -F "file=@$FIX/hello.lua")
expect_contains "REST add is 201" "$r" "201 "
r=$(http POST /loom/v1/plugins -F kind=framework -F "file=@$FIX/hello.lua")
expect_contains "REST duplicate is 409" "$r" "409 "
r=$(http POST /loom/v1/plugins -F kind=nonsense -F "file=@$FIX/hello.lua")
expect_contains "REST bad kind is 400" "$r" "kind: expected framework"

# ---- registrations survive a restart; removals too
expect_ok "remove second_logger" "$LOOM" logger remove second_logger
stop_host TERM
start_host
list=$("$LOOM" --json plugin list)
expect_contains "logger kept across restart" "$list" '"name":"good_thirdparty"'
expect_contains "Lua framework kept across restart" "$list" '"name":"hello"'
expect_not_contains "removed logger stays removed" "$list" "second_logger"
expect_not_contains "nothing failed to load" "$list" '"state":"failed"'

# ---- SIGKILL while registering: the state is whole after a restart
for round in 1 2 3; do
    : > "$WORK/acked"
    (
        for i in $(seq 1 40); do
            if "$LOOM" logger add "$TP/good_thirdparty.so" --name "r${round}_$i" >/dev/null 2>&1; then
                echo "r${round}_$i" >> "$WORK/acked"
            fi
        done
    ) &
    adder=$!
    sleep "0.$((RANDOM % 6 + 2))"
    stop_host KILL
    wait "$adder" 2>/dev/null
    start_host
    list=$("$LOOM" --json logger list)
    expect_eq "round $round: every acknowledged registration is there ($(wc -l < "$WORK/acked") acked)" \
        "$(missing_from "$list" name "$WORK/acked")" "0"
    expect_not_contains "round $round: nothing half-registered" "$list" '"state":"failed"'
    users=$(echo "$list" | grep -o '"origin":"user"' | wc -l)
    files=$(ls "$LOOM_HOME/plugins" | wc -l)
    expect_eq "round $round: one plugin file per registration" "$files" "$((users + 1))"
done

stop_host TERM
finish
