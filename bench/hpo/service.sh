#!/bin/bash
# bench/hpo/service.sh - the tuning service's overhead per experiment, with
# the real host: a Random task of N one-line experiments (a shell script that
# writes val_dict_list.json at once), one at a time, and from the host's own
# records:
#   submit -> running   the task's creation to its first experiment's exec
#                       running (parse, model unpack, plugin-host start,
#                       suggest, exec submission and launch), split into the
#                       tuner's part (to the exec's creation) and the exec
#                       service's launch;
#   result -> next      an experiment's process exiting (the time it notes
#                       last) to the next experiment's exec being created:
#                       the exit noticed (the exec service watches its
#                       workers' pidfds), metric read, observe, state saved,
#                       suggest, config.json, exec submission; and split at
#                       the exec's endTime (the exit noticed).
# Target: both under 50 ms. Medians over the experiments, and the run is
# repeated REPEATS times (the median of the medians is printed).
# Usage: bench/hpo/service.sh [BUILD_DIR] [EXPERIMENTS] [REPEATS]
set -eu
BUILD=${1:-build}
N=${2:-20}
REPEATS=${3:-5}
LOOM=$(cd "$BUILD" && pwd)/bin/loom
WORK=$(mktemp -d "${TMPDIR:-/tmp}/loom-hpo-bench-XXXXXX")
HOST_PID=
trap '[ -n "$HOST_PID" ] && kill "$HOST_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
. "$(dirname "$0")/../host.sh"
bench_start_host "$LOOM" "$WORK"
mkdir -p "$WORK/model"
# The experiment notes the wall-clock millisecond it ends at: the host's
# endTime is when it noticed the exit, which is part of the overhead.
cat > "$WORK/model/run.sh" <<'SH'
#!/bin/sh
echo '[{"step": 1, "loss": 0.5}]' > "$RESULT_DIR/val_dict_list.json"
date +%s%3N > "$RESULT_DIR/exit_ms"
SH
chmod +x "$WORK/model/run.sh"

for r in $(seq 1 "$REPEATS"); do
    cat > "$WORK/task.json" <<JSON
{"hpoName": "bench$r", "modelSpec": {"args": "--exec-start command --model-dir model --model-main run.sh"},
 "algoDef": {"algorithm": "Random", "maxJobNum": $N, "maxParalleJobNum": 1, "objectiveMetric": "loss",
             "algoParams": [{"name": "RandomSeed", "value": "$r"}]},
 "hyperParams": [{"name": "x", "type": "Range", "dataType": "DOUBLE", "minDbVal": 0, "maxDbVal": 1}]}
JSON
    "$LOOM" hpo submit "$WORK/task.json" --model-dir "$WORK/model" > /dev/null
    for _ in $(seq 1 600); do
        s=$("$LOOM" --json hpo view "bench$r" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
        [ "$s" = FINISHED ] || [ "$s" = FAILED ] && break
        sleep 0.2
    done
    "$LOOM" --json hpo view "bench$r" > "$WORK/view$r.json"
    for id in $(/usr/bin/python3 -c 'import json,sys; print(" ".join(x["appId"] for x in json.load(open(sys.argv[1]))["experiments"]))' "$WORK/view$r.json"); do
        "$LOOM" --json exec view "$id"
    done > "$WORK/execs$r.json"
done

/usr/bin/python3 - "$WORK" "$REPEATS" <<'PY'
import json, statistics, sys
work, repeats = sys.argv[1], int(sys.argv[2])
first, tuner, launch, nexts, reap = [], [], [], [], []
for r in range(1, repeats + 1):
    view = json.load(open(f"{work}/view{r}.json"))
    dec = json.JSONDecoder()
    text, execs, i = open(f"{work}/execs{r}.json").read(), {}, 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = dec.raw_decode(text, i)
        execs[obj["id"]] = obj
    xs = view["experiments"]
    assert view["state"] == "FINISHED", view["state"]
    e0 = execs[xs[0]["appId"]]
    first.append(e0["startTime"] - view["createTime"])
    tuner.append(e0["createTime"] - view["createTime"])
    launch.append(e0["startTime"] - e0["createTime"])
    exits = [int(open(f"{work}/home/execs/{x['appId']}/exit_ms").read()) for x in xs]
    gaps = [execs[b["appId"]]["createTime"] - e for (a, b), e in zip(zip(xs, xs[1:]), exits)]
    nexts.append(statistics.median(gaps))
    reap.append(statistics.median(execs[x["appId"]]["endTime"] - e for x, e in zip(xs, exits)))
print(f"loom tuning overhead per experiment ({len(xs)} experiments x {repeats} runs, medians; target < 50 ms each)")
print(f"  submit -> experiment running : {statistics.median(first):7.1f} ms   (runs: {', '.join('%.0f' % v for v in first)})")
print(f"    of which the tuner (-> exec submitted) : {statistics.median(tuner):7.1f} ms   (runs: {', '.join('%.0f' % v for v in tuner)})")
print(f"    and the exec's own launch             : {statistics.median(launch):7.1f} ms   (runs: {', '.join('%.0f' % v for v in launch)})")
print(f"  result -> next suggestion     : {statistics.median(nexts):7.1f} ms   (runs: {', '.join('%.0f' % v for v in nexts)})")
print(f"    of which the exit noticed             : {statistics.median(reap):7.1f} ms   (runs: {', '.join('%.0f' % v for v in reap)})")
PY
