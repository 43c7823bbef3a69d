#!/usr/bin/env bash
# A job's processes end with it, however detached. Each job starts a
# `setsid sleep` (its own session and process group, out of reach of the
# exec's process group) and then exits, or runs until stopped. After the
# job ends, `exec stop`, `exec delete`, a clean host shutdown and a host
# killed and started again, no process of it is left. Without cgroups
# (not root, or no cgroupfs) the host says at start that detached
# processes can outlive their job.
LOOM=$1
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" != 0 ] || [ ! -w /sys/fs/cgroup/unified ] && [ ! -w /sys/fs/cgroup/pids ]; then
    echo "NOT TESTED: needs root and a writable cgroupfs" >&2
    exit 77
fi

MODEL="$WORK/model"
mkdir -p "$MODEL"
# A sleep whose length is unique to this run and job, so pgrep finds only it.
NONCE=$$$RANDOM
cat > "$MODEL/detach_exit.sh" <<'SH'
#!/bin/sh
setsid sleep "1000.$1" </dev/null >/dev/null 2>&1 &
echo detached
SH
cat > "$MODEL/detach_stay.sh" <<'SH'
#!/bin/sh
setsid sleep "1000.$1" </dev/null >/dev/null 2>&1 &
echo detached
exec sleep 1000
SH
chmod +x "$MODEL"/*.sh

submit() { # submit SCRIPT N: prints the exec id
    "$LOOM" exec start --exec-start command --model-dir "$MODEL" --model-main "$1" -- "$NONCE$2" |
        sed -n 's/^exec \([^ ]*\) submitted.*/\1/p'
}
alive() { pgrep -f "sleep 1000\.$NONCE$1\$" | wc -l; }
# gone WHAT N: passes when job N's detached sleep is gone within 10 s.
gone() {
    wait_until 10 output_is 0 alive "$2"
    expect_eq "$1: its detached process is gone" "$(alive "$2")" "0"
}
running_detached() { [ "$(alive "$1")" -ge 1 ]; }
# started N: waits until job N's detached sleep runs (a tuning task's
# optimizer starts a Python first: a minute, for a busy machine)
started() {
    wait_until 60 running_detached "$1" || fail "job $1's detached sleep never started within 60 s"
}
state() { "$LOOM" --json exec view "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

start_host
expect_contains "the host names its containment" "$(cat "$WORK/serve.out")" "processes: a cgroup per exec"

# ---- a job that exits and leaves a detached child
id=$(submit detach_exit.sh 1)
expect_ok "the job ends" "$LOOM" exec wait "$id" --timeout 60
expect_eq "it finished" "$(state "$id")" FINISHED
gone "a job that exited" 1

# ---- a job stopped, then deleted
id=$(submit detach_stay.sh 2)
started 2
expect_ok "exec stop" "$LOOM" exec stop "$id"
"$LOOM" exec wait "$id" --timeout 60 >/dev/null 2>&1
expect_eq "the stopped job ends" "$(state "$id")" KILLED
gone "exec stop" 2
expect_ok "exec delete" "$LOOM" exec delete "$id"
gone "exec delete" 2

# ---- a clean host shutdown while a job runs
id=$(submit detach_stay.sh 3)
started 3
stop_host
gone "a clean shutdown" 3

# ---- a host killed, then started again on the same home
start_host
id=$(submit detach_stay.sh 4)
started 4
stop_host KILL
expect_eq "a killed host's job lives on until the host is back" "$(alive 4)" "1"
start_host
gone "a restart after a crash" 4
expect_contains "the restarted host says so" "$(cat "$LOOM_HOME/loom.log")" "process group(s) a previous run of this home left"
stop_host

# ---- a tuning task's optimizer that detaches a child: it ends with the task
OPT="$WORK/detaching_optimizer"
mkdir -p "$OPT"
cat > "$OPT/optimizer.py" <<PY
import subprocess
from plugins.core.base_plugin_opt import BasePluginOptimizer


class PluginOptimizer(BasePluginOptimizer):
    def __init__(self, name, hyper_parameters, **kwargs):
        super(PluginOptimizer, self).__init__(name, hyper_parameters, **kwargs)
        subprocess.Popen(["sleep", "1000.${NONCE}6"], start_new_session=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def search(self, number_samples, last_exp_results):
        return [{"x": 0.5} for _ in range(number_samples)]
PY
# The experiment holds the task open until the test has seen the optimizer's
# child (a task of one quick experiment ends, and its child with it, sooner
# than a poll can look).
cat > "$MODEL/train.sh" <<SH
#!/bin/sh
i=0
while [ ! -e "$WORK/go6" ] && [ \$i -lt 1200 ]; do sleep 0.05; i=\$((i + 1)); done
echo '[{"step": 1, "loss": 1.0}]' > "\$RESULT_DIR/val_dict_list.json"
SH
chmod +x "$MODEL/train.sh"
start_host
expect_ok "algorithm add" "$LOOM" algorithm add "$OPT"
cat > "$WORK/task.json" <<JSON
{"hpoName": "detach", "modelSpec": {"args": "--exec-start command --model-dir model --model-main train.sh"},
 "algoDef": {"algorithm": "detaching_optimizer", "maxJobNum": 1, "maxParalleJobNum": 1,
             "objectiveMetric": "loss", "objective": "minimize"},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
tar -C "$WORK" -czf "$WORK/model.tgz" model
http POST /platform/rest/deeplearning/v1/hypersearch -F "data=<$WORK/task.json" -F "file=@$WORK/model.tgz" >/dev/null
started 6
touch "$WORK/go6"
for _ in $(seq 1 300); do
    st=$(http GET /platform/rest/deeplearning/v1/hypersearch/detach | sed -n 's/.*"state":"\([A-Z]*\)","message".*/\1/p')
    case "$st" in FINISHED|FAILED) break ;; esac
    sleep 0.1
done
expect_eq "the tuning task ends" "$st" FINISHED
[ "$st" = FINISHED ] || http GET /platform/rest/deeplearning/v1/hypersearch/detach >&2
gone "a tuning task's optimizer" 6
stop_host

# ---- without cgroups the host says what it lacks
LOOM_CGROUP_ROOT="$WORK/no-cgroupfs" start_host
expect_contains "no cgroups: said at start" "$(cat "$WORK/serve.out")" "processes: no cgroups"
id=$(submit detach_exit.sh 5)
expect_ok "a job still runs without cgroups" "$LOOM" exec wait "$id" --timeout 60
expect_eq "and finishes" "$(state "$id")" FINISHED
left=$(pgrep -f "sleep 1000\.${NONCE}5\$")
[ -n "$left" ] && kill -KILL $left
stop_host
finish
