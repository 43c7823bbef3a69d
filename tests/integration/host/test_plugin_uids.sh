#!/bin/bash
# Plugin code never runs as root (README "Security"): a user's Python
# optimizer starts under the user's own uid, the one their jobs get, and
# cannot touch the host; driver-role loggers (the Lua template and a C one)
# write their exec's folder under the exec owner's uid, and a killed
# logger child is started again and goes on writing; what an optimizer
# prints is bounded by --log-max-bytes like a job's log.
# Needs root (it runs the host as root) and Landlock.
# Usage: test_plugin_uids.sh LOOM TEST_PLUGIN_DIR SOURCE_DIR BUILD_DIR
LOOM=$1
TP=$2
SRC=$3
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/train_lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "SKIPPED: the host must run as root to give plugins accounts of their own" >&2
    exit 77
fi
chmod 0711 "$WORK" # other uids pass it to reach the home
start_host --cpu-slots 4 --log-max-bytes 256K
if ! grep -q "a uid per user" "$WORK/serve.out"; then
    echo "SKIPPED: no accounts per user here: $(grep 'jobs:' "$WORK/serve.out")" >&2
    exit 77
fi

# uid_of PID: the real uid of a process.
uid_of() { awk '/^Uid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# host_child NEEDLE: the pid of the host's child whose command line has NEEDLE.
host_child() {
    local p
    for p in $(ps -o pid= --ppid "$HOST_PID"); do
        tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q -- "$1" && { echo "$p"; return; }
    done
}
wait_file_has() { # wait_file_has FILE TEXT SECONDS
    for _ in $(seq 1 $(( $3 * 10 ))); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# ---- a user's Python optimizer: its own uid, and the host out of reach --
mkdir -p "$WORK/model" "$WORK/rogue"
cat > "$WORK/model/train.sh" <<'SH'
#!/bin/sh
echo '[{"loss": 0.5}]' > "$RESULT_DIR/val_dict_list.json"
SH
chmod +x "$WORK/model/train.sh"
cat > "$WORK/rogue/optimizer.py" <<PY
# Records its uid and tries to lower the host's file size limit.
import os, resource, sys
from plugins.core.base_plugin_opt import BasePluginOptimizer

class PluginOptimizer(BasePluginOptimizer):
    def __init__(self, name, hyper_parameters, **kwargs):
        super(PluginOptimizer, self).__init__(name, hyper_parameters, **kwargs)
        sys.stderr.write("rogue: euid=%d\n" % os.geteuid())
        try:
            resource.prlimit($HOST_PID, resource.RLIMIT_FSIZE, (0, 0))
            sys.stderr.write("rogue: prlimit on the host: done\n")
        except OSError as e:
            sys.stderr.write("rogue: prlimit on the host: %s\n" % e.strerror)
        sys.stderr.flush()

    def search(self, number_samples, last_exp_results):
        return [{"x": 0.5} for _ in range(number_samples)]
PY
expect_ok "algorithm add the optimizer" "$LOOM" algorithm add "$WORK/rogue"
cat > "$WORK/rogue.json" <<JSON
{"hpoName": "rogue1", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "rogue", "maxJobNum": 2, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
expect_ok "submit the task" "$LOOM" hpo submit "$WORK/rogue.json" --model-dir "$WORK/model"
"$LOOM" hpo wait rogue1 --timeout 90 > "$WORK/wait.out" 2>&1
expect_contains "the task finishes" "$(cat "$WORK/wait.out")" "tuning task rogue1 FINISHED"
log="$LOOM_HOME/hpo/rogue1/search.log"
euid=$(sed -n 's/^rogue: euid=\([0-9]*\)$/\1/p' "$log" | head -n1)
expect_ok "the optimizer said its uid" test -n "$euid"
expect_ok "not root" test "${euid:-0}" != 0
exec_uid=$(stat -c %u "$(ls -d "$LOOM_HOME"/execs/* | head -n1)")
expect_eq "the uid its owner's jobs get" "$euid" "$exec_uid"
expect_contains "its prlimit on the host was refused" "$(grep 'prlimit on the host' "$log")" \
    "Operation not permitted"
expect_contains "the host's file size limit is intact" \
    "$(grep 'Max file size' "/proc/$HOST_PID/limits")" "unlimited"
expect_contains "the host still answers" "$(http GET /loom/v1/health)" '"status":"ok"'
expect_ok "and is alive" kill -0 "$HOST_PID"

# ---- an optimizer's output is bounded like a job's log: 2 MB printed,
# under 256 KiB kept, the cut said, the newest part kept
mkdir -p "$WORK/chatty"
cat > "$WORK/chatty/optimizer.py" <<'PY'
# Prints 2 MB (2,048 lines of 1,024 bytes), then a last line.
import sys
from plugins.core.base_plugin_opt import BasePluginOptimizer

class PluginOptimizer(BasePluginOptimizer):
    def __init__(self, name, hyper_parameters, **kwargs):
        super(PluginOptimizer, self).__init__(name, hyper_parameters, **kwargs)
        for i in range(2048):
            sys.stderr.write("chatty %06d %s\n" % (i, "x" * 1009))
        sys.stderr.write("chatty: done\n")
        sys.stderr.flush()

    def search(self, number_samples, last_exp_results):
        return [{"x": 0.5} for _ in range(number_samples)]
PY
expect_ok "algorithm add the chatty optimizer" "$LOOM" algorithm add "$WORK/chatty"
sed 's/"rogue1"/"chatty1"/; s/"rogue"/"chatty"/' "$WORK/rogue.json" > "$WORK/chatty.json"
expect_ok "submit its task" "$LOOM" hpo submit "$WORK/chatty.json" --model-dir "$WORK/model"
"$LOOM" hpo wait chatty1 --timeout 90 > "$WORK/wait.out" 2>&1
expect_contains "its task finishes" "$(cat "$WORK/wait.out")" "tuning task chatty1 FINISHED"
log="$LOOM_HOME/hpo/chatty1/search.log"
expect_ok "its last line reached the log" wait_file_has "$log" "chatty: done" 30
size=$(stat -c %s "$log")
expect_ok "the search log stays under 256 KiB ($size bytes)" test "$size" -le 262144
expect_contains "and says it was cut" "$(head -n 1 "$log" | cut -c 1-200)" "this log passed its limit of 262144 bytes"

# ---- driver-role loggers write their exec's folder under its owner's uid;
# a killed logger child is started again and goes on writing
expect_ok "logger add the Lua template" "$LOOM" logger add "$SRC/sdk/template/template_logger.lua"
expect_ok "logger add a C logger" "$LOOM" logger add "$TP/call_log_logger.so"
model_dir "$WORK/m" 20000 60 ', "loggers": [{"name": "lua_template_logger", "role": "driver"}, {"name": "call_log_logger", "role": "driver"}]'
id=$(submit --model-dir "$WORK/m" --numWorker 1)
run="$LOOM_HOME/execs/$id"
calls="$run/plugins/call_log_logger/calls-driver.txt"
expect_ok "the C logger heard on_train_begin" wait_file_has "$calls" begin 60
child=$(host_child "plugin-host --kind logger --name call_log_logger")
expect_ok "its plugin-host child is found" test -n "$child"
child_uid=$(uid_of "$child")
expect_ok "the logger's child is not root" test "${child_uid:-0}" != 0
expect_eq "it runs as the exec's owner" "$child_uid" "$(stat -c %u "$run")"
kill -9 "$child"
expect_ok "the job finishes" "$LOOM" exec wait "$id" --timeout 240
expect_eq "a new child was started and set up again" "$(grep -c '^create' "$calls")" 2
expect_contains "and heard the end" "$(tail -n 2 "$calls")" "end status=0"
driver=$(cat "$run/log/driver/stdout")
expect_not_contains "no logger was disabled" "$driver" "disabled"
expect_not_contains "nothing was refused" "$driver" "Permission denied"
lua="$run/plugins/lua_template_logger/lua_template.log"
expect_contains "the Lua template wrote every call" "$(cat "$lua" 2>/dev/null)" "driver/0 end"
expect_eq "its file is the exec owner's" "$(stat -c %u "$lua" 2>/dev/null)" "$child_uid"

finish
