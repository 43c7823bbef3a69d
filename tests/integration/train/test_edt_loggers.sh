#!/usr/bin/env bash
# Logger callbacks have WMLA's semantics in both roles (sdk/include/loom/
# logger.h): every instance hears on_train_begin first and on_train_end
# last; the driver one log_train_metrics per epoch and log_test_metrics per
# validation; each worker log_train_metrics as it trains and
# log_test_metrics with its own share of each validation; epochs are
# numbered from 1 in both roles, as the progress lines and
# val_dict_list.json number them; the driver's instance runs in a process
# of its own, not in the host.
LOOM=$1
PLUGINS=$2
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../train_lib.sh"

start_host --cpu-slots 4
expect_ok "logger add call_log_logger" "$LOOM" logger add "$PLUGINS/call_log_logger.so"
model_dir "$WORK/m" 600 2 ', "log_every": 4, "loggers": [{"name": "call_log_logger", "role": "both"}]'
id=$(submit --model-dir "$WORK/m" --numWorker 2)
expect_ok "the job finishes" "$LOOM" exec wait "$id" --timeout 180
calls="$LOOM_HOME/execs/$id/plugins/call_log_logger"
ls "$calls"

# check_calls FILE ROLE: "ok" or what is wrong with the file's calls.
check_calls() {
    python3 - "$1" "$2" "$HOST_PID" <<'PY'
import sys
path, role, host_pid = sys.argv[1], sys.argv[2], sys.argv[3]
calls = [l.split() for l in open(path) if l.strip()]
names = [c[0] for c in calls]
args = [dict(kv.split("=") for kv in c[1:]) for c in calls]
problems = []
if names[:2] != ["create", "begin"]:
    problems.append("starts with %s, not create, begin" % names[:2])
if names[-2:] != ["end", "destroy"]:
    problems.append("ends with %s, not end, destroy" % names[-2:])
if names.count("begin") != 1 or names.count("end") != 1:
    problems.append("begin %d times, end %d times" % (names.count("begin"), names.count("end")))
if args[0].get("pid") == host_pid:
    problems.append("runs in the host process")
begin = args[names.index("begin")] if "begin" in names else {}
if begin.get("epochs") != "2" or begin.get("workers") not in ("1", "2") \
        or begin.get("batch") != "16" or begin.get("effective") != "32":
    problems.append("on_train_begin told %s" % begin)
end = args[names.index("end")] if "end" in names else {}
if end.get("status") != "0":
    problems.append("on_train_end told %s, not status 0 (finished)" % end)
trains = [int(a["epoch"]) for n, a in zip(names, args) if n == "train"]
tests = [int(a["epoch"]) for n, a in zip(names, args) if n == "test"]
if tests != [1, 2]:
    problems.append("log_test_metrics for epochs %s, not [1, 2]" % tests)
if not trains or min(trains) != 1 or max(trains) != 2 or trains != sorted(trains):
    problems.append("log_train_metrics for epochs %s, not 1 then 2" % trains)
if role == "driver" and trains != [1, 2]:
    problems.append("the driver heard train metrics for epochs %s, not once per epoch" % trains)
# each validation comes after its epoch's training and before the next's
order = [(n, int(a["epoch"])) for n, a in zip(names, args) if n in ("train", "test")]
for i, (n, e) in enumerate(order):
    if n == "test" and any(m == "train" and f <= e for m, f in order[i + 1:]):
        problems.append("epoch %d's validation before some of its training" % e)
print("ok" if not problems else "; ".join(problems))
PY
}
expect_eq "driver: WMLA's calls, in order, epochs from 1" "$(check_calls "$calls/calls-driver.txt" driver)" ok
for w in 0 1; do
    expect_eq "worker $w: WMLA's calls, in order, epochs from 1" \
        "$(check_calls "$calls/calls-worker-$w.txt" worker)" ok
done
stop_host
finish
