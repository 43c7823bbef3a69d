/*
 * sched/sim.h - the trace simulator behind `loom sim TRACE.json`: replays a
 * trace of jobs (arrival, devices, work, scaling curve) through the real
 * scheduler (sched.h) on an event-driven simulated clock, with no processes
 * and no sleeping, once per policy: elastic fair share, elastic priority and
 * a static FIFO baseline (each job gets its maximum or waits).
 *
 * Trace format (JSON):
 *   {"devices": 64,                   required, >= 1
 *    "hysteresis": 30,                optional seconds (default 0)
 *    "resize_cost": 1,                optional seconds without progress after
 *                                     each resize of a running job (default 0)
 *    "plans": [{"path": "/a", "weight": 1, "min_devices": 0, "cap_devices": 0,
 *               "policy": "fair" | "priority", "parent": "/..."}],  optional
 *    "jobs": [{"id": "j1",            optional (default "job-<index>")
 *              "arrival": 0,          seconds, >= 0
 *              "max_devices": 4,      >= 1
 *              "min_devices": 1,      optional, 1..max (default 1)
 *              "work": 3600,          device-seconds at perfect scaling, > 0
 *              "scaling": "linear"    optional (default linear), or
 *                  {"type": "amdahl", "serial_fraction": 0.05}, or
 *                  {"type": "table", "speedup": [1, 1.9, 2.7]} (speedup on
 *                  1, 2, 3... devices; the last value holds beyond), or the
 *                  bare array [1, 1.9, 2.7],
 *              "priority": 0, "plan": "/a", "elastic": true,
              "user": "alice"}]}   optional
 * A job on n devices does speedup(n) units of work per second. Unknown keys
 * and text after the trace are refused. The scheduler is told each job's
 * run time at its size (as a batch user states a time limit), so every
 * policy can date its reservations the same way.
 */
#ifndef LOOM_SCHED_SIM_H
#define LOOM_SCHED_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/sched.h"

typedef enum sim_scaling_kind {
    SIM_SCALING_LINEAR = 0,
    SIM_SCALING_AMDAHL = 1,
    SIM_SCALING_TABLE = 2
} sim_scaling_kind;

typedef struct sim_job {
    char *id;
    char *plan;               /* NULL: "/" */
    char *user;               /* NULL: anonymous */
    double arrival, work;
    int32_t min_devices, max_devices, priority;
    bool elastic;
    int32_t scaling;          /* sim_scaling_kind */
    double serial_fraction;   /* amdahl */
    double *speedup;          /* table */
    size_t n_speedup;
} sim_job;

typedef struct sim_trace {
    int32_t devices;
    double hysteresis, resize_cost;
    sched_plan_spec *plans;   /* strings owned by the trace */
    size_t n_plans;
    sim_job *jobs;
    size_t n_jobs;
} sim_trace;

/* Parses a trace; `name` (the file name) prefixes error messages, which name
 * the entry and field: "t.json: jobs[3].work: expected a number > 0". */
loom_error *sim_trace_parse(const char *json, const char *name, sim_trace **out);
loom_error *sim_trace_load(const char *path, sim_trace **out);
void sim_trace_free(sim_trace *t);

/* Work per second of `job` on `n` devices. */
double sim_speedup(const sim_job *job, int32_t n);

typedef enum sim_policy {
    SIM_POLICY_FAIR = 0,      /* elastic, every plan fair share */
    SIM_POLICY_PRIORITY = 1,  /* elastic, every plan by priority */
    SIM_POLICY_FIFO = 2,      /* static: max_devices or wait, arrival order */
    SIM_POLICY_BACKFILL = 3   /* static, arrival order, EASY backfilling */
} sim_policy;

#define SIM_POLICY_COUNT 4

const char *sim_policy_name(int32_t policy);

typedef struct sim_result {
    double utilisation;         /* busy device-seconds / (devices x makespan) */
    double utilisation_waiting; /* the same over the time some job waited,
                                   devices held for a reservation left out;
                                   NAN when no job ever waited */
    double reserved_waiting;    /* share of the devices held idle for a
                                   reservation over that time */
    double avg_jct, p95_jct;    /* completion time: end - arrival */
    double avg_jct_top;         /* avg JCT of the jobs with the trace's
                                   highest priority (what priority is for) */
    double makespan;            /* last end - first arrival */
    double avg_queueing;        /* start - arrival */
    double p99_queueing;
    double max_wait;            /* the longest start - arrival */
    uint64_t resizes;           /* decisions that resized a running job */
    size_t jobs;
} sim_result;

/* Runs the whole trace under `policy`. Errors name the job. */
loom_error *sim_run(const sim_trace *t, int32_t policy, sim_result *out);

/* `loom sim [--json] TRACE.json`: the policies side by side and the
 * relative JCT improvement over each baseline. Returns the exit status. */
int sim_main(int argc, char **argv);
/* The same for the CLI, whose global --json is already taken off argv. */
int sim_cli(int argc, char **argv, bool json);

#endif
