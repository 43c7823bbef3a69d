#!/bin/bash
# Tuning tasks end to end: WMLA's task JSON over REST and `loom hpo`, each
# experiment an exec of a command-style model that reads config.json and
# writes val_dict_list.json; bad input; an objective nobody reports; all
# experiments failing; search plugins that crash, hang or leave the space;
# the host killed mid-task.
# Usage: test_hpo.sh LOOM TEST_PLUGIN_DIR SOURCE_DIR BUILD_DIR
LOOM=$1
TP=$2
. "$3/tests/integration/lib.sh"

start_host
MODEL="$WORK/model"
mkdir -p "$MODEL"
# loss = (x - 0.3)^2 + (y - 2)^2, from config.json; SLEEP seconds first.
cat > "$MODEL/train.sh" <<'SH'
#!/bin/sh
x=$(sed -n 's/.*"x":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
y=$(sed -n 's/.*"y":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' config.json)
[ -f sleep ] && sleep "$(cat sleep)"
[ -f fail ] && { echo "failing on purpose" >&2; exit 3; }
metric=loss; [ -f metric ] && metric=$(cat metric)
awk -v x="$x" -v y="$y" -v m="$metric" -v out="$RESULT_DIR/val_dict_list.json" \
    'BEGIN { printf "[{\"step\": 1, \"%s\": %.6f, \"accuracy\": 0.5}]\n", m, (x-0.3)^2 + (y-2)^2 > out }'
SH
chmod +x "$MODEL/train.sh"

task() { # task NAME ALGORITHM MAXJOBS PARALLEL [extra algoDef fields]
    cat <<JSON
{"hpoName": "$1", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "$2", "maxJobNum": $3, "maxParalleJobNum": $4, "objectiveMetric": "loss",
             "objective": "minimize", "algoParams": [{"name": "RandomSeed", "value": "5"}]${5:-}},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1},
                 {"name": "y", "type": "Discrete", "dataType": "INT", "discreteIntVal": [1, 2, 3]}]}
JSON
}

wait_state() { # wait_state NAME STATE...: polls until the task reaches one
    local name=$1 s; shift
    for _ in $(seq 1 300); do
        s=$(http GET "/platform/rest/deeplearning/v1/hypersearch/$name" | sed -n 's/.*"state":"\([A-Z]*\)","message".*/\1/p')
        for want in "$@"; do [ "$s" = "$want" ] && { echo "$s"; return; }; done
        sleep 0.1
    done
    echo "$s"
}
view() { http GET "/platform/rest/deeplearning/v1/hypersearch/$1" | cut -d' ' -f2-; }

# ---- a task over REST in WMLA's shapes -----------------------------------
tar -C "$WORK" -czf "$WORK/model.tgz" model
task rest1 Random 6 2 > "$WORK/rest1.json"
r=$(http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/rest1.json" -F "file=@$WORK/model.tgz")
expect_eq "POST /hypersearch replies the name as a JSON string" "$r" '200 "rest1"'
expect_eq "rest1 finishes" "$(wait_state rest1 FINISHED FAILED)" FINISHED
v=$(view rest1)
expect_contains "progress" "$v" '"progress":"6/6"'
expect_contains "complete" "$v" '"complete":6'
expect_contains "hyperParams as fixedVal" "$v" '{"name":"y","dataType":"INT","fixedVal":"'
expect_contains "best" "$v" '"best":{"id":'
app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
expect_contains "experiments[].appId is an exec" "$(http GET "/platform/rest/deeplearning/v1/execs/$app")" '"state":"FINISHED"'
cfg=$(cat "$LOOM_HOME/execs/$app/_submitted_code/config.json")
expect_contains "config.json holds the values" "$cfg" '"x":'
best=$(printf '%s' "$v" | sed -n 's/.*"best":{[^}]*"metricVal":\([-0-9.e]*\).*/\1/p')
min=$(printf '%s' "$v" | grep -o '"metricVal":[-0-9.e]*' | cut -d: -f2 | sort -g | head -1)
expect_eq "best is the smallest loss" "$best" "$min"
expect_contains "list items" "$(http GET /platform/rest/deeplearning/v1/hypersearch)" '{"hpoName":"rest1","state":"FINISHED"'
expect_contains "algorithm list" "$(http GET '/platform/rest/deeplearning/v1/hypersearch/algorithm?type=BUILD_IN')" '{"name":"Random","type":"BUILD_IN"'
expect_eq "a name in use" "$(http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/rest1.json" -F "file=@$WORK/model.tgz" | cut -c1-3)" 409

# ---- every built-in algorithm, and a Lua one registered by a user ---------
for a in Tpe Bayesian; do
    task "algo-$a" "$a" 4 2 > "$WORK/a.json"
    http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/a.json" -F "file=@$WORK/model.tgz" >/dev/null
    expect_eq "$a finishes" "$(wait_state "algo-$a" FINISHED FAILED)" FINISHED
    expect_contains "$a: 4 experiments" "$(view "algo-$a")" '"progress":"4/4"'
done
task algo-hb Hyperband 0 2 ', "algoParams": [{"name": "ResourceName", "value": "epochs"}, {"name": "ResourceValue", "value": "3"}, {"name": "eta", "value": "3"}]' \
    | sed 's/"algoParams": \[{"name": "RandomSeed", "value": "5"}\], //; s/"maxJobNum": 0, //' > "$WORK/hb.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/hb.json" -F "file=@$WORK/model.tgz" >/dev/null
expect_eq "Hyperband finishes" "$(wait_state algo-hb FINISHED FAILED)" FINISHED
v=$(view algo-hb)
expect_contains "Hyperband: budgets" "$v" '"budget":'
app=$(printf '%s' "$v" | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
expect_contains "the budget in config.json under ResourceName" "$(cat "$LOOM_HOME/execs/$app/_submitted_code/config.json")" '"epochs":'
cat > "$WORK/grid.json" <<'JSON'
{"hpoName": "grid1", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "ExperimentGridSearch", "maxParalleJobNum": 2, "objectiveMetric": "loss", "objective": "minimize"},
 "experiments": [
   {"id": 1, "hyperParams": [{"name": "x", "dataType": "DOUBLE", "fixedVal": "0.3"}, {"name": "y", "dataType": "INT", "fixedVal": "2"}]},
   {"id": 2, "hyperParams": [{"name": "x", "dataType": "DOUBLE", "fixedVal": "0.5"}, {"name": "y", "dataType": "INT", "fixedVal": "2"}]},
   {"id": 3, "hyperParams": [{"name": "x", "dataType": "DOUBLE", "fixedVal": "0.3"}, {"name": "y", "dataType": "INT", "fixedVal": "3"}]}]}
JSON
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/grid.json" -F "file=@$WORK/model.tgz" >/dev/null
expect_eq "grid finishes" "$(wait_state grid1 FINISHED FAILED)" FINISHED
v=$(view grid1)
expect_contains "grid: the 3 experiments" "$v" '"progress":"3/3"'
expect_contains "grid: the best is x=0.3 y=2" "$v" '"best":{"id":1,'
expect_ok "algorithm add (Lua)" "$LOOM" algorithm add "$3/algorithms/examples/lua_search/coordinate_search.lua"
task lua1 example_coordinate 3 1 > "$WORK/lua.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/lua.json" -F "file=@$WORK/model.tgz" >/dev/null
expect_eq "a user's Lua algorithm by name" "$(wait_state lua1 FINISHED FAILED)" FINISHED
expect_contains "listed as PLUGIN" "$(http GET '/platform/rest/deeplearning/v1/hypersearch/algorithm?type=PLUGIN')" '{"name":"example_coordinate","type":"PLUGIN"}'
expect_contains "DELETE a registered Lua algorithm" "$(http DELETE /platform/rest/deeplearning/v1/hypersearch/algorithm/example_coordinate)" '200 {"removed":"example_coordinate"}'
expect_contains "gone" "$(http GET /platform/rest/deeplearning/v1/hypersearch/algorithm/example_coordinate)" "404 "

# ---- WMLA's Python plugin optimizers, unchanged --------------------------
expect_ok "algorithm add DIR" "$LOOM" algorithm add "$3/tests/integration/hpo/fixtures/wmla_optimizer"
task py1 wmla_optimizer 3 1 > "$WORK/py.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/py.json" -F "file=@$WORK/model.tgz" >/dev/null
expect_eq "the Python optimizer's task finishes" "$(wait_state py1 FINISHED FAILED)" FINISHED
v=$(view py1)
expect_contains "last_exp_results reached search(): x of the 3rd" "$v" '{"name":"x","dataType":"DOUBLE","fixedVal":"0.2"}'
expect_contains "listed as PLUGIN" "$(http GET '/platform/rest/deeplearning/v1/hypersearch/algorithm?type=PLUGIN')" '{"name":"wmla_optimizer","type":"PLUGIN"'
printf '{"name": "opt2", "path": "%s"}' "$3/tests/integration/hpo/fixtures/wmla_optimizer" > "$WORK/inst.json"
expect_eq "install from a host path" "$(http POST /platform/rest/deeplearning/v1/hypersearch/algorithm/install -F "data=<$WORK/inst.json")" '200 "opt2"'
printf '{"name": "opt3", "path": "/nonexistent", "condaHome": "/nowhere"}' > "$WORK/inst.json"
expect_contains "a missing interpreter is named" "$(http POST /platform/rest/deeplearning/v1/hypersearch/algorithm/install -F "data=<$WORK/inst.json")" "no Python interpreter at /nowhere/bin/python"
expect_eq "DELETE an optimizer" "$(http DELETE /platform/rest/deeplearning/v1/hypersearch/algorithm/opt2)" '200 "opt2"'
cat > "$WORK/broken.py" <<'PY'
from plugins.core.base_plugin_opt import BasePluginOptimizer
class PluginOptimizer(BasePluginOptimizer):
    def search(self, number_samples, last_exp_results):
        raise ValueError("no idea")
PY
mkdir -p "$WORK/broken" && cp "$WORK/broken.py" "$WORK/broken/optimizer.py"
expect_ok "algorithm add a broken one" "$LOOM" algorithm add "$WORK/broken"
task py2 broken 3 1 > "$WORK/py2.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/py2.json" -F "file=@$WORK/model.tgz" >/dev/null
expect_eq "a failing optimizer fails the task" "$(wait_state py2 FAILED FINISHED)" FAILED
expect_contains "naming it and its error" "$(view py2)" "python optimizer 'broken': ValueError: no idea"

# ---- the CLI -------------------------------------------------------------
task cli1 Random 3 3 > "$WORK/cli1.json"
expect_ok "loom hpo submit" "$LOOM" hpo submit "$WORK/cli1.json" --model-dir "$MODEL"
expect_eq "cli1 finishes" "$(wait_state cli1 FINISHED FAILED)" FINISHED
expect_ok "loom hpo best" "$LOOM" hpo best cli1
expect_contains "best names the values" "$(cat "$WORK/out")" "x="
expect_ok "loom hpo view" "$LOOM" hpo view cli1
expect_ok "loom hpo delete" "$LOOM" hpo delete cli1
expect_contains "deleted" "$(http GET /platform/rest/deeplearning/v1/hypersearch/cli1)" "404"

# ---- bad input -----------------------------------------------------------
bad() { # bad WHAT JSON EXPECTED-TEXT
    printf '%s' "$2" > "$WORK/bad.json"
    local r
    r=$(http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/bad.json" -F "file=@$WORK/model.tgz")
    expect_contains "$1: 400" "$r" "400 "
    expect_contains "$1: names it" "$r" "$3"
}
bad "unknown algorithm" "$(task b1 Simulated 2 1)" 'no search algorithm named \"Simulated\"'
bad "minDbVal > maxDbVal" "$(task b2 Random 2 1 | sed 's/"maxDbVal": 1/"maxDbVal": -1/')" "minDbVal 0 > maxDbVal -1"
bad "empty discrete" "$(task b3 Random 2 1 | sed 's/\[1, 2, 3\]/[]/')" "non-empty array discreteIntVal"
bad "non-string algoParams" "$(task b4 Random 2 1 | sed 's/"value": "5"/"value": 5/')" "must be a string"
bad "power <= 1" "$(task b5 Random 2 1 | sed 's/"maxDbVal": 1}/"maxDbVal": 1, "power": "0.5"}/')" "hyperParams[0] (x): power: expected a number > 1"
bad "a Range of STR" "$(task b6 Random 2 1 | sed 's/"dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1/"dataType": "STR"/')" "a Range cannot be STR"
bad "duplicate names" "$(task b7 Random 2 1 | sed 's/{"name": "y"/{"name": "x"/')" "the name 'x' is given twice"

# ---- an objective nobody reports; experiments that all fail ---------------
echo val_loss > "$MODEL/metric"
tar -C "$WORK" -czf "$WORK/model-metric.tgz" model
rm "$MODEL/metric"
task nometric Random 2 2 > "$WORK/nm.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/nm.json" -F "file=@$WORK/model-metric.tgz" >/dev/null
expect_eq "no objective: FAILED" "$(wait_state nometric FAILED FINISHED)" FAILED
expect_contains "the reason" "$(view nometric)" "no experiment reported the objective metric 'loss'"
touch "$MODEL/fail"
tar -C "$WORK" -czf "$WORK/model-fail.tgz" model
rm "$MODEL/fail"
task allfail Random 3 1 > "$WORK/af.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/af.json" -F "file=@$WORK/model-fail.tgz" >/dev/null
expect_eq "all fail: FAILED" "$(wait_state allfail FAILED FINISHED)" FAILED
expect_contains "the reason" "$(view allfail)" "all 3 experiment(s) failed"

# ---- search plugins that misbehave ----------------------------------------
for m in crash hang outside refused; do
    expect_ok "algorithm add ${m}_search" "$LOOM" algorithm add "$TP/${m}_search.so"
    task "bad-$m" "${m}_search" 3 1 > "$WORK/$m.json"
    http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/$m.json" -F "file=@$WORK/model.tgz" >/dev/null
    expect_eq "$m: FAILED" "$(wait_state "bad-$m" FAILED FINISHED)" FAILED
    expect_contains "$m: names the plugin" "$(view "bad-$m")" "search '${m}_search'"
done
expect_contains "hang: the deadline" "$(view bad-hang)" "no answer within"
expect_contains "outside: the value" "$(view bad-outside)" "outside"
expect_contains "refused: propose_experiment said why, with a code" "$(view bad-refused)" \
    "code 1: propose: "
expect_contains "the host stays up" "$(http GET /loom/v1/health)" "200"

# ---- maxRunTime; stop (PUT) and restart ------------------------------------
echo 0.4 > "$MODEL/sleep"
tar -C "$WORK" -czf "$WORK/model-short.tgz" model
rm "$MODEL/sleep"
task timed Random 0 1 ', "maxRunTime": 1' > "$WORK/timed.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/timed.json" -F "file=@$WORK/model-short.tgz" >/dev/null
expect_eq "maxRunTime ends an open-ended task" "$(wait_state timed FINISHED FAILED)" FINISHED
expect_contains "saying why" "$(view timed)" '"message":"maxRunTime 1s reached"'
task stopme Random 3 1 > "$WORK/stopme.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/stopme.json" -F "file=@$WORK/model-short.tgz" >/dev/null
experiment_running() { view "$1" | grep -q '"state":"RUNNING","metricVal"'; }
wait_until 10 experiment_running stopme
expect_eq "PUT stops" "$(http PUT /platform/rest/deeplearning/v1/hypersearch/stopme)" '200 "stopme"'
expect_eq "STOPPED" "$(wait_state stopme STOPPED)" STOPPED
expect_contains "its running experiment STOPPED" "$(view stopme)" '"state":"STOPPED"'
expect_contains "stopping a stopped task: 409" "$(http PUT /platform/rest/deeplearning/v1/hypersearch/stopme)" "409"
expect_eq "PUT /restart" "$(http PUT /platform/rest/deeplearning/v1/hypersearch/stopme/restart)" '200 "stopme"'
expect_eq "the restarted task finishes" "$(wait_state stopme FINISHED FAILED)" FINISHED
expect_contains "DELETE the caller's ended ones" "$(http DELETE /platform/rest/deeplearning/v1/hypersearch)" '"deleted":'
expect_eq "none left" "$(http GET /platform/rest/deeplearning/v1/hypersearch)" '200 []'

# ---- the host killed mid-task ---------------------------------------------
echo 1 > "$MODEL/sleep"
tar -C "$WORK" -czf "$WORK/model-slow.tgz" model
rm "$MODEL/sleep"
task slow Random 4 1 > "$WORK/slow.json"
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/slow.json" -F "file=@$WORK/model-slow.tgz" >/dev/null
for _ in $(seq 1 100); do
    view slow | grep -q '"id":2,"appId":"[^"]*","state":"RUNNING"' && break
    sleep 0.1
done
first=$(view slow | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)","state":"FINISHED".*/\1/p')
expect_contains "experiment 1 finished before the kill" "$first" "admin-"
stop_host KILL
start_host
expect_eq "slow resumes and finishes" "$(wait_state slow FINISHED FAILED)" FINISHED
v=$(view slow)
expect_contains "experiment 1 not re-run" "$v" "{\"id\":1,\"appId\":\"$first\",\"state\":\"FINISHED\""
expect_contains "the interrupted one ran again" "$v" "interrupted by a host restart"
expect_eq "4 experiments, each once" "$(printf '%s' "$v" | grep -o '"id":[0-9]*,"appId"' | sort -u | wc -l)" 4
expect_contains "progress" "$v" '"progress":"4/4"'

# ---- an elastic experiment resumes from its checkpoint after a kill ------
F=/usr/share/datasets/fashion-mnist
if [ -r "$F/train-images-idx3-ubyte.gz" ]; then
    mkdir -p "$WORK/fm"
    cat > "$WORK/fm/edt.json" <<JSON
{"model": {"input": [1, 28, 28], "layers": [{"type": "flatten"},
   {"type": "dense", "units": "\$hidden"}, {"type": "relu"}, {"type": "dense", "units": 10}]},
 "loss": "softmax_cross_entropy",
 "optimizer": {"type": "sgd", "lr": "\$learning_rate", "momentum": 0.9},
 "dataset": {"format": "idx", "train_images": "$F/train-images-idx3-ubyte.gz",
   "train_labels": "$F/train-labels-idx1-ubyte.gz", "test_images": "$F/t10k-images-idx3-ubyte.gz",
   "test_labels": "$F/t10k-labels-idx1-ubyte.gz"},
 "training": {"batch_size": 64, "checkpoint_freq": 1}}
JSON
    cat > "$WORK/edt.json" <<'JSON'
{"hpoName": "edt1", "modelSpec": {"args": "--exec-start edt --model-dir fm --numWorker 1 -- --epochs 12"},
 "algoDef": {"algorithm": "Random", "maxJobNum": 1, "objectiveMetric": "accuracy", "objective": "maximize"},
 "hyperParams": [{"name": "learning_rate", "type": "Range", "dataType": "DOUBLE", "minDbVal": -2, "maxDbVal": -1, "power": "10"},
                 {"name": "hidden", "type": "Discrete", "dataType": "INT", "discreteIntVal": [32]}]}
JSON
    expect_ok "submit an elastic experiment" "$LOOM" hpo submit "$WORK/edt.json" --model-dir "$WORK/fm"
    for _ in $(seq 1 300); do
        ls "$LOOM_HOME"/execs/*/checkpoint/epoch-2.safetensors >/dev/null 2>&1 && break
        sleep 0.1
    done
    app=$(view edt1 | sed -n 's/.*"experiments":\[{"id":1,"appId":"\([^"]*\)".*/\1/p')
    expect_contains "its lr went into edt.json" "$(cat "$LOOM_HOME/execs/$app/_submitted_code/edt.json")" '"lr":	0.0'
    stop_host KILL
    start_host
    expect_eq "edt1 resumes and finishes" "$(wait_state edt1 FINISHED FAILED)" FINISHED
    v=$(view edt1)
    expect_contains "the same exec went on" "$v" "{\"id\":1,\"appId\":\"$app\",\"state\":\"FINISHED\""
    expect_not_contains "not run again" "$v" "interrupted by a host restart"
    expect_contains "from its checkpoint" "$(cat "$LOOM_HOME/loom.log")" "$app: resuming from"
fi

stop_host
finish
