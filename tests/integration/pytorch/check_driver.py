"""check_driver.py LOG_DIR VIEW_JSON: the driver callback heard the job's
means over every worker (not one worker's metrics) at the global
iteration. Prints one line per finding that fails, then "ok" or "FAILED"."""
import glob
import json
import os
import sys

log_dir, view = sys.argv[1], json.loads(sys.argv[2])


def records(pattern):
    out = {}
    for path in glob.glob(os.path.join(log_dir, pattern)):
        out[path] = [json.loads(line) for line in open(path)]
    return out


workers = records("worker-[0-9]*.jsonl")
drivers = records("driver-[0-9]*.jsonl")
bad = []
if len(workers) != 2:
    bad.append("expected 2 workers' records, got %d" % len(workers))
if len(drivers) != 1:
    bad.append("expected one process's driver records, got %d" % len(drivers))
if not bad:
    pids = sorted(int(os.path.basename(p).split("-")[1].split(".")[0]) for p in workers)
    mean_pid = sum(pids) / 2.0
    driver = next(iter(drivers.values()))
    train = [r for r in driver if r["kind"] == "train"]
    test = [r for r in driver if r["kind"] == "test"]
    if not train:
        bad.append("the driver heard no training metrics")
    for r in train:
        if abs(r["worker_pid"] - mean_pid) > 1e-6:
            bad.append("driver train at %d: worker_pid %s, expected the mean %s of %s"
                       % (r["iteration"], r["worker_pid"], mean_pid, pids))
            break
        if r["workers"] != 2:
            bad.append("driver train at %d: workers %s, expected 2" % (r["iteration"], r["workers"]))
            break
    its = [r["iteration"] for r in train]
    if its != sorted(its) or (its and its[-1] != view["training"]["iteration"]):
        bad.append("driver iterations %s do not rise to the job's %s" % (its, view["training"]["iteration"]))
    tm = view["training"]["testMetrics"]
    if len(test) != 2:
        bad.append("expected 2 validations heard by the driver, got %d" % len(test))
    elif any(abs(test[-1][k] - tm[k]) > 1e-9 for k in ("loss", "accuracy")):
        bad.append("driver's last test metrics %s, the job's %s" % (test[-1], tm))
for b in bad:
    print(b)
print("FAILED" if bad else "ok")
