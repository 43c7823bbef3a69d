#!/bin/bash
# What a user of tuning tasks meets at the command line: `loom hpo stop`
# and `restart` say what happened and the task shows STOPPING at once;
# experiments stopped with their task end STOPPED; `loom hpo wait` (its
# exit status says how the task ended) and `loom hpo logs` (the search
# plugin's log: its owner's only, bounded, never through a link); execs
# name their task; a failed experiment names its exec and the command that
# shows its output; numbers print as their shortest exact text.
# Usage: test_hpo_cli.sh LOOM SOURCE_DIR
LOOM=$1
. "$2/tests/integration/lib.sh"

start_host
MODEL="$WORK/model"
mkdir -p "$MODEL"
# loss = (x - 0.3)^2 + (y - 2)^2 from config.json; SLEEP seconds first.
cat > "$MODEL/train.sh" <<'SH'
#!/bin/sh
x=$(sed -n 's/.*"x":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
y=$(sed -n 's/.*"y":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
[ -f sleep ] && sleep "$(cat sleep)"
[ -f fail ] && { echo "Traceback: failing on purpose" >&2; exit 3; }
awk -v x="$x" -v y="$y" -v out="$RESULT_DIR/val_dict_list.json" \
    'BEGIN { printf "[{\"loss\": %.6f}]\n", (x-0.3)^2 + (y-2)^2 > out }'
SH
chmod +x "$MODEL/train.sh"
# A search plugin that proposes x = 0.1 and says so through host->log.
cat > "$WORK/logging_search.lua" <<'LUA'
local config, n = nil, 0
loom.register_search{
    name = "logging_search", version = "1.0.0", description = "test: logs what it proposes",
    init = function(c) config = c end,
    suggest = function(max, sink)
        for _ = 1, max do
            if n >= config.max_experiments then sink.finish() return end
            local id = sink.propose({x = 0.1, y = 2})
            if not id then return end
            n = n + 1
            loom.log("info", "proposed experiment " .. id .. " with x=0.1")
        end
    end,
    observe = function(obs) loom.log("info", "observed experiment " .. obs.id) end,
    save_state = function() return tostring(n) end,
    load_state = function(text) n = tonumber(text) end,
}
LUA
expect_ok "algorithm add (Lua)" "$LOOM" algorithm add "$WORK/logging_search.lua"

task() { # task NAME ALGORITHM MAXJOBS PARALLEL
    cat <<JSON
{"hpoName": "$1", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "$2", "maxJobNum": $3, "maxParalleJobNum": $4, "objectiveMetric": "loss",
             "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1},
                 {"name": "y", "type": "Discrete", "dataType": "INT", "discreteIntVal": [1, 2, 3]}]}
JSON
}
state_of() { "$LOOM" --json hpo view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

# ---- wait, logs, the task of an exec, numbers ------------------------------
task logs1 logging_search 2 1 > "$WORK/logs1.json"
expect_ok "submit" "$LOOM" hpo submit "$WORK/logs1.json" --model-dir "$MODEL"
"$LOOM" hpo wait logs1 --timeout 60 > "$WORK/wait.out" 2>&1
expect_eq "hpo wait: exit 0 for FINISHED" "$?" 0
expect_contains "hpo wait says how it ended" "$(cat "$WORK/wait.out")" "tuning task logs1 FINISHED"
expect_ok "hpo logs" "$LOOM" hpo logs logs1
expect_contains "the plugin's host->log lines" "$(cat "$WORK/out")" "proposed experiment 1 with x=0.1"
expect_contains "and its observations" "$(cat "$WORK/out")" "observed experiment 2"
expect_ok "hpo logs -f on an ended task" timeout 30 "$LOOM" hpo logs logs1 -f
expect_contains "prints it and says how the task ended" "$(cat "$WORK/out")" "observed experiment 2
tuning task logs1 FINISHED"
r=$(http GET /platform/rest/deeplearning/v1/hypersearch/logs1/log)
expect_contains "GET .../log" "$r" '200 {"hpoName":"logs1","state":"FINISHED","offset":0,'
expect_contains "its text" "$r" "proposed experiment 2 with x=0.1"
expect_contains "?offset= pages" "$(http GET '/platform/rest/deeplearning/v1/hypersearch/logs1/log?offset=3')" '"offset":3,'
expect_contains "a bad offset" "$(http GET '/platform/rest/deeplearning/v1/hypersearch/logs1/log?offset=-1')" "400 "
v=$(http GET /platform/rest/deeplearning/v1/hypersearch/logs1)
expect_contains "fixedVal is the shortest text of 0.1" "$v" '{"name":"x","dataType":"DOUBLE","fixedVal":"0.1"}'
app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
expect_contains "config.json holds 0.1" "$(cat "$LOOM_HOME/execs/$app/_submitted_code/config.json")" '"x":	0.1,'
expect_ok "hpo view" "$LOOM" hpo view logs1
expect_contains "hpo view prints x=0.1" "$(cat "$WORK/out")" "x=0.1 y=2"
expect_ok "exec list" "$LOOM" exec list
expect_contains "exec list names the task" "$(grep "^$app" "$WORK/out")" " logs1#1 "
expect_contains "exec list --json" "$("$LOOM" --json exec list)" '"hpoName":"logs1","experimentId":1'
expect_contains "exec view names it" "$("$LOOM" exec view "$app")" "experiment 1 of task logs1"

# Another user sees nothing of it.
expect_ok "add alice" "$LOOM" user add alice -p alice-password
alice=$(curl -s -X POST -u alice:alice-password "$URL/auth/v1/logon" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $alice" "$URL/platform/rest/deeplearning/v1/hypersearch/logs1/log")
expect_eq "another user's task log: 404" "$r" 404
expect_contains "no such task: 404" "$(http GET /platform/rest/deeplearning/v1/hypersearch/nothing/log)" "404 "

# A long log: the reply holds its last 64 KiB and says so.
LOG="$LOOM_HOME/hpo/logs1/search.log"
head -c 200000 /dev/zero | tr '\0' 'a' >> "$LOG"
echo "the last line" >> "$LOG"
r=$(http GET /platform/rest/deeplearning/v1/hypersearch/logs1/log)
expect_contains "a long log is cut" "$r" '"truncated":true,"note":"bytes '
expect_contains "to its end" "$r" 'the last line'
expect_eq "at most 64 KiB" "$(printf '%s' "$r" | python3 -c 'import json,sys; print(len(json.loads(sys.stdin.read()[4:])["text"]))')" 65536
"$LOOM" hpo logs logs1 > "$WORK/logs.out" 2> "$WORK/logs.err"
expect_contains "hpo logs says it shows the end" "$(cat "$WORK/logs.err")" "the search log's last 65536 of"
# A link in its place is not followed.
echo "secret" > "$WORK/secret"
rm "$LOG" && ln -s "$WORK/secret" "$LOG"
r=$(http GET /platform/rest/deeplearning/v1/hypersearch/logs1/log)
expect_not_contains "a link is not followed" "$r" "secret"
expect_not_contains "nor answered as a log" "$r" "200 "
rm "$LOG"
expect_contains "no log yet: empty" "$(http GET /platform/rest/deeplearning/v1/hypersearch/logs1/log)" '"size":0,"truncated":false,"text":""'
expect_fails "hpo wait on no task" "$LOOM" hpo wait nothing --timeout 1

# ---- stop, restart, wait's exit status ------------------------------------
echo 30 > "$MODEL/sleep"
task stopme Random 3 1 > "$WORK/stopme.json"
expect_ok "submit a slow task" "$LOOM" hpo submit "$WORK/stopme.json" --model-dir "$MODEL"
for _ in $(seq 1 200); do
    "$LOOM" --json hpo view stopme | grep -q '"state":"RUNNING","metricVal"' && break
    sleep 0.05
done
"$LOOM" hpo stop stopme > "$WORK/stop.out" 2>&1
expect_eq "hpo stop: exit 0" "$?" 0
expect_contains "hpo stop says what happened" "$(cat "$WORK/stop.out")" "tuning task stopme stop"
s=$(state_of stopme)
case "$s" in STOPPING|STOPPED) pass ;; *) fail "right after a stop the task is $s, expected STOPPING or STOPPED" ;; esac
"$LOOM" hpo wait stopme --timeout 30 > "$WORK/wait.out" 2>&1
expect_eq "hpo wait: exit 3 for STOPPED" "$?" 3
v=$("$LOOM" --json hpo view stopme)
expect_contains "its running experiment ended STOPPED" "$v" '{"id":1,"appId":'
app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
expect_contains "experiment 1 STOPPED" "$v" "{\"id\":1,\"appId\":\"$app\",\"state\":\"STOPPED\""
expect_contains "its exec KILLED, stopped by request" "$("$LOOM" --json exec view "$app")" '"state":"KILLED","message":"stopped by request"'
expect_ok "hpo view" "$LOOM" hpo view stopme
expect_contains "the status text closes its parenthesis" "$(head -n1 "$WORK/out")" "stopme: STOPPED (stopped by request), minimize loss, progress"
"$LOOM" hpo restart stopme > "$WORK/restart.out" 2>&1
expect_eq "hpo restart: exit 0" "$?" 0
expect_contains "hpo restart says what happened" "$(cat "$WORK/restart.out")" "tuning task stopme restarted: RUNNING"
"$LOOM" hpo wait stopme --timeout 0.5 > "$WORK/wait.out" 2>&1
expect_eq "hpo wait: exit 4 past its timeout" "$?" 4
expect_ok "stop it again" "$LOOM" hpo stop stopme
"$LOOM" hpo wait stopme --timeout 30 >/dev/null 2>&1
expect_eq "stopped again" "$?" 3
rm "$MODEL/sleep"

# ---- an elastic experiment stopped while its workers start: its trainer's
# wait for them ends in an error, but the stop is why
F=/usr/share/datasets/fashion-mnist
if [ -r "$F/train-images-idx3-ubyte.gz" ]; then
    mkdir -p "$WORK/fm"
    cat > "$WORK/fm/edt.json" <<JSON
{"model": {"input": [1, 28, 28], "layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]},
 "loss": "softmax_cross_entropy", "optimizer": {"type": "sgd", "lr": "\$lr"},
 "dataset": {"format": "idx", "train_images": "$F/train-images-idx3-ubyte.gz",
   "train_labels": "$F/train-labels-idx1-ubyte.gz", "test_images": "$F/t10k-images-idx3-ubyte.gz",
   "test_labels": "$F/t10k-labels-idx1-ubyte.gz"},
 "training": {"batch_size": 64}}
JSON
    cat > "$WORK/edt.json" <<'JSON'
{"hpoName": "edtstop", "modelSpec": {"args": "--exec-start edt --model-dir fm --numWorker 2 -- --epochs 3"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 2, "maxParalleJobNum": 1, "objectiveMetric": "accuracy", "objective": "maximize"},
 "hyperParams": [{"name": "lr", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0.01, "maxDbVal": 0.1}]}
JSON
    expect_ok "submit an elastic task" "$LOOM" hpo submit "$WORK/edt.json" --model-dir "$WORK/fm"
    for _ in $(seq 1 200); do
        "$LOOM" --json hpo view edtstop | grep -q '"appId":"admin' && break
        sleep 0.02
    done
    expect_ok "stop it as its first experiment starts" "$LOOM" hpo stop edtstop
    "$LOOM" hpo wait edtstop --timeout 60 >/dev/null 2>&1
    expect_eq "the elastic task STOPPED" "$?" 3
    v=$("$LOOM" --json hpo view edtstop)
    app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
    expect_contains "its experiment STOPPED" "$v" "{\"id\":1,\"appId\":\"$app\",\"state\":\"STOPPED\""
    expect_contains "its exec KILLED, stopped by request" "$("$LOOM" --json exec view "$app")" '"state":"KILLED","message":"stopped by request"'
fi

# ---- a failed experiment names its exec and how to read its output --------
touch "$MODEL/fail"
task failing Random 1 1 > "$WORK/failing.json"
expect_ok "submit a failing task" "$LOOM" hpo submit "$WORK/failing.json" --model-dir "$MODEL"
"$LOOM" hpo wait failing --timeout 60 > "$WORK/wait.out" 2>&1
expect_eq "hpo wait: exit 1 for FAILED" "$?" 1
v=$("$LOOM" --json hpo view failing)
app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
expect_contains "the task's message names the exec" "$v" "the last: exec $app ERROR: worker 0 exited with status 3"
expect_contains "and the command" "$v" "loom exec logs $app --worker 0 --stderr"
expect_not_contains "not a file path" "$v" "see log/worker-0/stderr"
[ -n "$app" ] || { fail "the failing task has no exec"; stop_host; finish; exit 1; }
expect_ok "exec logs" "$LOOM" exec logs "$app"
expect_contains "exec logs shows stderr when stdout is empty" "$(cat "$WORK/out")" "Traceback: failing on purpose"
expect_contains "saying so" "$(cat "$WORK/out")" "==> worker-0/stderr (its stdout is empty) <=="
expect_ok "exec logs -f" "$LOOM" exec logs "$app" -f
expect_contains "and with -f" "$(cat "$WORK/out")" "Traceback: failing on purpose"
rm "$MODEL/fail"

stop_host
finish
