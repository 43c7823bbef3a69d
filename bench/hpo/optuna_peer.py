#!/usr/bin/python3
"""bench/hpo/optuna_peer.py - Optuna's TPESampler on the same budgets as
hpo_bench, for bench/hpo/run.sh.

  optuna_peer.py overhead TRIALS
      ask+tell on Hartmann-6's space, objective excluded from the timing;
      prints the median microseconds of the last 100 rounds
  optuna_peer.py quality branin|hartmann6 TRIALS SEED
      prints the best value after 50 and after TRIALS trials
"""
import math
import statistics
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)


def branin(x):
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s


ALPHA = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
     [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
     [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
     [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
     [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6(x):
    return -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6)))
                for i in range(4))


def space(name):
    if name == "branin":
        return branin, {"x1": optuna.distributions.FloatDistribution(-5, 10),
                        "x2": optuna.distributions.FloatDistribution(0, 15)}
    return hartmann6, {"x%d" % (i + 1): optuna.distributions.FloatDistribution(0, 1)
                       for i in range(6)}


def overhead(trials):
    fn, dists = space("hartmann6")
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1))
    spent = []
    for t in range(trials):
        t0 = time.perf_counter()
        trial = study.ask(dists)
        t1 = time.perf_counter()
        y = fn([trial.params[k] for k in dists])
        t2 = time.perf_counter()
        study.tell(trial, y)
        t3 = time.perf_counter()
        if t + 100 >= trials:
            spent.append((t1 - t0) + (t3 - t2))
    print("ask+tell at %d trials: %.1f us (median of the last %d)"
          % (trials, statistics.median(spent) * 1e6, len(spent)))


def quality(name, trials, seed):
    fn, dists = space(name)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    best, at50 = math.inf, math.inf
    for t in range(trials):
        trial = study.ask(dists)
        y = fn([trial.params[k] for k in dists])
        study.tell(trial, y)
        best = min(best, y)
        if t == 49:
            at50 = best
    print("%s seed %d: best after 50: %.4f, after %d: %.4f" % (name, seed, at50, trials, best))


if __name__ == "__main__":
    if sys.argv[1] == "overhead":
        overhead(int(sys.argv[2]))
    else:
        quality(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
