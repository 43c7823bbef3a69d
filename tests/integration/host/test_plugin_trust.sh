#!/usr/bin/env bash
# Plugin code never runs in the host: driver loggers that segfault, spin
# forever, or escape the Lua deadline (an xpcall handler that loops, a
# pathological pattern) run in `loom plugin-host` children. The host keeps
# answering /health within 100 ms, the job finishes with the logger
# disabled and named in the driver log, and a host restart while such a
# job runs does not loop.
LOOM=$1
TP=$2
SRC=$3
. "$(dirname "$0")/../lib.sh"
LUA="$SRC/tests/plugins/lua"

# Polls /health every 20 ms into $WORK/health.times until stopped.
start_health_probe() {
    : > "$WORK/health.times"
    (
        while :; do
            curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $TOKEN" "$URL/loom/v1/health" \
                >> "$WORK/health.times" 2>/dev/null
            sleep 0.02
        done
    ) &
    PROBE=$!
}
# Every probe must be answered (200); on a loaded shared machine (or in a
# sanitizer build) a probe can wait for a core, so at most one in ten may
# take over 100 ms and none over a second (a host pinned by a plugin fails
# every probe).
stop_health_probe() { # stop_health_probe WHAT
    kill "$PROBE" 2>/dev/null
    wait "$PROBE" 2>/dev/null
    # A call over before the first probe ran: one probe now.
    [ -s "$WORK/health.times" ] ||
        curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $TOKEN" \
            "$URL/loom/v1/health" >> "$WORK/health.times"
    local n failed slow stuck
    n=$(wc -l < "$WORK/health.times")
    failed=$(awk '$1 != 200' "$WORK/health.times" | wc -l)
    slow=$(awk '$2 > 0.1' "$WORK/health.times" | wc -l)
    stuck=$(awk '$2 > 1' "$WORK/health.times" | wc -l)
    expect_eq "$1: /health answered every time ($n probes)" "$failed" "0"
    expect_eq "$1: no /health answer took a second" "$stuck" "0"
    # (counted against at least 20 probes: over a short call, one probe
    # that waited for a core is not a pinned host)
    [ "$n" -gt 0 ] && [ $((slow * 10)) -le $((n < 20 ? 20 : n)) ] && pass ||
        fail "$1: $slow of $n /health answers took over 100 ms"
}

submit() { # submit LOGGER-NAME EPOCHS [DEADLINE_MS]: prints the exec id
    local dir="$WORK/model-$1"
    mkdir -p "$dir"
    local extra=
    [ -n "${3:-}" ] && extra=", \"deadline_ms\": $3"
    echo '{"training": {"epochs": '"$2"', "batch_size": 2, "loggers": [{"name": "'"$1"'", "role": "driver"'"$extra"'}]}}' \
        > "$dir/edt.json"
    "$LOOM" exec start --exec-start old_full --model-dir "$dir" --numWorker 1 |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}

export LOOM_PLUGIN_WRITE_LIMIT=2M
start_host
expect_ok "trainer framework" "$LOOM" framework add "$TP/old_full.so"
for so in crash_logger loop_logger; do
    expect_ok "logger add $so" "$LOOM" logger add "$TP/$so.so"
done
for lua in bad_xpcall_loop bad_pattern_loop; do
    expect_ok "logger add $lua" "$LOOM" logger add "$LUA/$lua.lua"
done

# ---- each misbehaving driver logger: the host stays up, the job finishes
for logger in crash_logger loop_logger bad_xpcall_loop bad_pattern_loop; do
    start_health_probe
    id=$(submit "$logger" 5 300)
    expect_ok "$logger: the job finishes" "$LOOM" exec wait "$id" --timeout 120
    stop_health_probe "$logger"
    driver=$(cat "$LOOM_HOME/execs/$id/log/driver/stdout")
    expect_contains "$logger: the driver log names it and says why" "$driver" "logger $logger: log_train_metrics failed: logger '$logger' log_train_metrics:"
    expect_contains "$logger: disabled after three in a row" "$driver" "logger $logger disabled for this exec after 3 failures in a row"
    case $logger in
        crash_logger)
            # signal 11, or (a sanitizer build) a report in its own log
            plugin_log=$(cat "$LOOM_HOME/execs/$id/log/driver/plugin-crash_logger.log" 2>/dev/null)
            case "$driver$plugin_log" in
                *"killed by signal 11"*|*SEGV*|*"null pointer"*) pass ;;
                *) fail "crash: the segfault is named nowhere: $driver" ;;
            esac
            expect_eq "crash: started once and restarted twice" \
                "$(wc -l < "$LOOM_HOME/execs/$id/plugins/crash_logger/creates.txt")" "3" ;;
        *) expect_contains "$logger: the deadline is named" "$driver" "no answer within 300 ms" ;;
    esac
    expect_eq "$logger: never called once disabled" "$(grep -c "log_train_metrics failed" <<<"$driver")" "3"
    view=$("$LOOM" --json exec view "$id")
    expect_contains "$logger: exec view shows the failure" "$view" "\"plugin\":\"$logger\""
    expect_contains "$logger: and its text names it" "$("$LOOM" exec view "$id")" \
        "plugin      logger $logger failed 3 time(s), disabled for this exec: logger '$logger' log_train_metrics:"
done
# ---- the host never loads a user's plugin: a probe child describes it
expect_fails "a plugin whose init crashes is refused" "$LOOM" logger add "$TP/crash_init.so"
# (signal 11; a sanitizer build reports and aborts, or exits)
expect_contains "and the crash is named" "$(cat "$WORK/out")" "its probe process"
r=$(http GET /loom/v1/health); expect_contains "the host is up after it" "$r" '"status":"ok"'
expect_eq "no user plugin is mapped into the host" \
    "$(grep -cE "(crash|loop|snoop)_logger|_launch\.so|crash_init|bad_.*\.lua" /proc/$HOST_PID/maps)" "0"

# ---- a C driver logger that tries the host's own files: its plugin-host
# child is confined once the plugin is loaded, so every attempt fails
expect_ok "logger add snoop_logger" "$LOOM" logger add "$TP/snoop_logger.so"
id=$(submit snoop_logger 1)
expect_ok "snoop: the job finishes" "$LOOM" exec wait "$id" --timeout 120
snooped=$(cat "$LOOM_HOME/execs/$id/plugins/snoop_logger/snoop.txt" 2>/dev/null)
expect_eq "snoop: it tried eight ways" "$(echo "$snooped" | grep -c .)" "8"
expect_not_contains "snoop: the host's database, log, credentials and plugins stay out of reach" "$snooped" "allowed"

# ---- loom.append: a 1 GiB flood stops at the exec's limit; the host's
# files (training.json, the driver's stdout) are out of reach
expect_ok "logger add flooder" "$LOOM" logger add "$LUA/bad_append_flood.lua"
expect_ok "logger add targeter" "$LOOM" logger add "$LUA/bad_append_targets.lua"
for logger in flooder targeter; do
    id=$(submit "$logger" 2)
    expect_ok "$logger: the job finishes" "$LOOM" exec wait "$id" --timeout 120
    ran="$LOOM_HOME/execs/$id"
    driver=$(cat "$ran/log/driver/stdout")
    if [ $logger = flooder ]; then
        expect_contains "flood: stopped at the limit, named" "$driver" "plugin write limit (2 MiB) is reached"
        expect_eq "flood: 2 MiB written, no more" "$(stat -c %s "$ran/plugins/flooder/flood.txt")" "2097152"
    else
        expect_not_contains "targets: no forged line in the driver log" "$driver" "forged line"
        expect_contains "targets: the escape is refused by name" "$driver" "is not a plain file name"
        expect_not_contains "targets: the exec's training.json untouched" "$(cat "$ran"/training.json 2>/dev/null)" "forged"
        expect_eq "targets: its own training.json" "$(cat "$ran/plugins/targeter/training.json")" '{"forged": true}'
    fi
done

# ---- launch-style frameworks whose plan_launch crashes or never returns:
# it runs in a plugin-host child, so the submission fails naming the
# framework and what happened, and the host keeps answering
mkdir -p "$WORK/launch-model"
echo 'echo hi' > "$WORK/launch-model/run.sh"
for fw in crash_launch loop_launch; do
    expect_ok "framework add $fw" "$LOOM" framework add "$TP/$fw.so"
    start_health_probe
    expect_fails "$fw: the submission fails" "$LOOM" exec start --exec-start "$fw" \
        --model-dir "$WORK/launch-model" --model-main run.sh --numWorker 1
    why=$(cat "$WORK/out")
    stop_health_probe "$fw"
    expect_contains "$fw: the error names the framework's plan_launch" "$why" "framework '$fw' plan_launch:"
    case $fw in
        crash_launch) expect_contains "crash: its process failed" "$why" "its process failed" ;;
        loop_launch) expect_contains "loop: killed at the deadline" "$why" "no answer within" ;;
    esac
done

expect_eq "no plugin-host child left behind" "$(pgrep -f "plugin-host --kind" -P "$HOST_PID" | wc -l)" "0"

# ---- a host SIGKILLed while the crashing logger's job runs: on restart
# the exec recovers (or fails clearly) and the host does not crash-loop
id=$(submit crash_logger 40 300)
for _ in $(seq 1 100); do
    grep -q "failed" "$LOOM_HOME/execs/$id/log/driver/stdout" 2>/dev/null && break
    sleep 0.1
done
stop_host KILL
start_host
start_health_probe
"$LOOM" exec wait "$id" --timeout 120 >/dev/null 2>&1
state=$("$LOOM" --json exec view "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
case "$state" in FINISHED|ERROR|KILLED) pass ;; *) fail "after a restart the exec ended: $state" ;; esac
stop_health_probe "restart"
r=$(http GET /loom/v1/health); expect_contains "the host is still up after the restart" "$r" '"status":"ok"'
stop_host TERM
finish
