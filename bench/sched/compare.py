#!/usr/bin/env python3
"""bench/sched/compare.py - aggregates `loom_sched_sim --json` results of the
generated traces (one file per load and seed) into the side-by-side table of
run.sh: elastic fair share against FIFO with EASY backfilling (and static
FIFO), averaged over the seeds of each offered load, with the targets."""
import json
import sys
from collections import defaultdict


def main(paths):
    by_load = defaultdict(list)
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        load = path.rsplit("load", 1)[1].split("-")[0]
        by_load[load].append({r["policy"]: r for r in doc["results"]})
    head = ("load", "seeds", "fair JCT", "bf JCT", "fifo JCT", "vs bf", "util/wait",
            "reserved", "p99q fair/bf", "max wait fair/bf")
    print("%-5s %5s %9s %9s %9s %7s %9s %8s %12s %16s" % head)
    failed = []
    for load in sorted(by_load, key=float):
        runs = by_load[load]
        mean = lambda p, k: sum(r[p][k] for r in runs) / len(runs)
        fair, bf, fifo = (mean(p, "avg_jct") for p in ("fair", "backfill", "fifo"))
        cut = 1 - fair / bf
        util = min(r["fair"]["utilisation_while_waiting"] or 1 for r in runs)
        reserved = mean("fair", "reserved_while_waiting")
        p99 = max(r["fair"]["p99_queueing_delay"] / max(r["backfill"]["p99_queueing_delay"], 1)
                  for r in runs)
        longest = max(r["fair"]["max_wait"] / max(r["backfill"]["max_wait"], 1) for r in runs)
        print("%-5s %5d %8.0fs %8.0fs %8.0fs %6.1f%% %8.1f%% %7.1f%% %11.2fx %15.2fx"
              % (load, len(runs), fair, bf, fifo, 100 * cut, 100 * util, 100 * reserved,
                 p99, longest))
        need = 0.30 if float(load) >= 0.85 else 0.0
        if cut < need:
            failed.append("load %s: average JCT %.1f%% lower than FIFO + backfill, "
                          "target %.0f%%" % (load, 100 * cut, 100 * need))
        if util < 0.90:
            failed.append("load %s: devices busy %.1f%% while jobs waited, target 90%%"
                          % (load, 100 * util))
        if p99 > 2 or longest > 2:
            failed.append("load %s: p99 queueing %.2fx, longest wait %.2fx FIFO + "
                          "backfill's, target <= 2x" % (load, p99, longest))
    print("(JCT: average over the seeds; util/wait: the lowest seed; ratios: the worst "
          "seed)")
    for f in failed:
        print("target missed: " + f)
    if not failed:
        print("all targets met")


if __name__ == "__main__":
    main(sys.argv[1:])
