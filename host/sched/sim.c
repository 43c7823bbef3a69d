/*
 * sched/sim.c - the trace simulator: an event-driven clock (arrivals,
 * completions, hysteresis reviews; no sleeping) driving the real scheduler,
 * and `loom sim`, which prints the three policies side by side.
 */
#include "sched/sim.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

const char *sim_policy_name(int32_t policy)
{
    switch (policy) {
    case SIM_POLICY_FAIR: return "elastic fair share";
    case SIM_POLICY_PRIORITY: return "elastic priority";
    case SIM_POLICY_FIFO: return "static FIFO";
    case SIM_POLICY_BACKFILL: return "FIFO + backfill";
    default: return "unknown";
    }
}

/* One job's progress in the simulation. */
typedef struct sim_state {
    double remaining;     /* work left */
    double rate;          /* work per second at the current size */
    double stall_until;   /* no progress before this (resize cost) */
    double finish_at;     /* if nothing changes */
    double start, end;
    int32_t count;
} sim_state;

typedef struct sim_run_ctx {
    const sim_trace *trace;
    int32_t policy;
    sched *s;
    sim_state *st;
    size_t *order;        /* jobs by arrival */
    size_t *running;
    size_t n_running;
} sim_run_ctx;

typedef struct arrival_key {
    double arrival;
    size_t index;
} arrival_key;

/* By arrival, then by position in the trace. */
static int arrival_cmp(const void *a, const void *b)
{
    const arrival_key *x = a, *y = b;
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Static FIFO gives a job its maximum, trimmed to what the inventory and the
 * caps of its plans allow (an elastic maximum may exceed both). */
static int32_t fifo_size(const sim_run_ctx *c, const sim_job *j)
{
    int32_t n = j->max_devices < c->trace->devices ? j->max_devices : c->trace->devices;
    sched_plan_spec p;
    const char *path = j->plan ? j->plan : "/";
    while (path && sched_get_plan(c->s, path, &p)) {
        if (p.cap_devices > 0 && p.cap_devices < n)
            n = p.cap_devices;
        path = p.parent;
    }
    return n;
}

static bool is_static(int32_t policy)
{
    return policy == SIM_POLICY_FIFO || policy == SIM_POLICY_BACKFILL;
}

static loom_error *setup(sim_run_ctx *c)
{
    const sim_trace *t = c->trace;
    sched_options opt = {
        .hysteresis = is_static(c->policy) ? 0 : t->hysteresis,
        .admission = c->policy == SIM_POLICY_FIFO       ? SCHED_ADMIT_FIFO
                     : c->policy == SIM_POLICY_BACKFILL ? SCHED_ADMIT_FIFO_BACKFILL
                                                        : SCHED_ADMIT_FAIR,
    };
    if (!(c->s = sched_create(&opt)))
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (int32_t d = 0; d < t->devices; d++)
        if (sched_add_device(c->s, LOOM_DEVICE_CPU, d, NULL) < 0)
            return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");

    /* The policy under test applies to every plan, the root included. */
    int32_t policy = c->policy == SIM_POLICY_PRIORITY ? SCHED_POLICY_PRIORITY
                                                      : SCHED_POLICY_FAIR;
    sched_plan_spec *plans = calloc(t->n_plans + 1, sizeof *plans);
    if (!plans)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < t->n_plans; i++) {
        plans[i] = t->plans[i];
        plans[i].policy = policy;
    }
    loom_error *err = sched_load_plans(c->s, plans, t->n_plans);
    free(plans);
    sched_plan_spec root;
    if (!err && sched_get_plan(c->s, "/", &root)) {
        root.policy = policy;
        err = sched_update_plan(c->s, &root);
    }
    if (err)
        return loom_err_wrap(err, "plans");

    c->st = calloc(t->n_jobs, sizeof *c->st);
    c->order = calloc(t->n_jobs, sizeof *c->order);
    c->running = calloc(t->n_jobs, sizeof *c->running);
    if (!c->st || !c->order || !c->running)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    arrival_key *keys = malloc(t->n_jobs * sizeof *keys);
    if (!keys)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < t->n_jobs; i++) {
        keys[i] = (arrival_key){t->jobs[i].arrival, i};
        c->st[i].remaining = t->jobs[i].work;
    }
    qsort(keys, t->n_jobs, sizeof *keys, arrival_cmp);
    for (size_t i = 0; i < t->n_jobs; i++)
        c->order[i] = keys[i].index;
    free(keys);
    return NULL;
}

static loom_error *submit(sim_run_ctx *c, size_t i, double now)
{
    const sim_job *j = &c->trace->jobs[i];
    bool fifo = is_static(c->policy);
    sched_job_spec spec = {
        .id = j->id,
        .plan = j->plan,
        .elastic = j->elastic && !fifo,
        .min_devices = j->min_devices,
        .max_devices = fifo && j->elastic ? fifo_size(c, j) : j->max_devices,
        .priority = j->priority,
        .tag = i,
        .user = j->user,
    };
    /* The run time at the size it starts with (refined as it resizes). */
    int32_t need = spec.elastic ? spec.min_devices : spec.max_devices;
    spec.expected_seconds = j->work / sim_speedup(j, need > 0 ? need : 1);
    loom_error *err = sched_submit(c->s, &spec, now);
    return err ? loom_err_wrap(err, "jobs[%zu]", i) : NULL;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Device-seconds integrated over the run. */
typedef struct sim_usage {
    double busy;              /* busy devices x time */
    double wait_time;         /* time some job waited */
    double wait_busy;         /* busy devices x time while some job waited */
    double wait_usable;       /* devices not held for a reservation x time,
                                 while some job waited */
    double wait_reserved;     /* devices held for a reservation x time */
} sim_usage;

static double nearest_rank(const double *sorted, size_t n, double q)
{
    size_t rank = (size_t)ceil(q * (double)n);
    return sorted[rank > 0 ? rank - 1 : 0];
}

static loom_error *summarise(const sim_run_ctx *c, double t0, const sim_usage *u,
                             uint64_t resizes, sim_result *out)
{
    const sim_trace *t = c->trace;
    size_t n = t->n_jobs;
    double *jct = malloc(2 * n * sizeof *jct);
    if (!jct)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    double *queueing = jct + n;
    double sum_jct = 0, sum_queue = 0, last_end = t0, sum_top = 0;
    size_t n_top = 0;
    int32_t top = t->jobs[0].priority;
    for (size_t i = 1; i < n; i++)
        if (t->jobs[i].priority > top)
            top = t->jobs[i].priority;
    for (size_t i = 0; i < n; i++) {
        jct[i] = c->st[i].end - t->jobs[i].arrival;
        sum_jct += jct[i];
        if (t->jobs[i].priority == top) {
            sum_top += jct[i];
            n_top++;
        }
        queueing[i] = c->st[i].start - t->jobs[i].arrival;
        sum_queue += queueing[i];
        if (c->st[i].end > last_end)
            last_end = c->st[i].end;
    }
    qsort(jct, n, sizeof *jct, dbl_cmp);
    qsort(queueing, n, sizeof *queueing, dbl_cmp);
    out->jobs = n;
    out->avg_jct = sum_jct / (double)n;
    out->avg_jct_top = sum_top / (double)n_top;
    out->p95_jct = nearest_rank(jct, n, 0.95);
    out->avg_queueing = sum_queue / (double)n;
    out->p99_queueing = nearest_rank(queueing, n, 0.99);
    out->max_wait = queueing[n - 1];
    out->makespan = last_end - t0;
    out->utilisation = out->makespan > 0
                           ? u->busy / ((double)t->devices * out->makespan) : 1;
    out->utilisation_waiting = u->wait_usable > 0 ? u->wait_busy / u->wait_usable : NAN;
    out->reserved_waiting = u->wait_time > 0
                                ? u->wait_reserved / ((double)t->devices * u->wait_time)
                                : 0;
    out->resizes = resizes;
    free(jct);
    return NULL;
}

static loom_error *simulate(sim_run_ctx *c, sim_result *out)
{
    const sim_trace *t = c->trace;
    size_t n = t->n_jobs, next = 0, done = 0;
    double t0 = t->jobs[c->order[0]].arrival, now = t0;
    sim_usage u = {0};
    int64_t busy = 0, reserved = 0;
    size_t wanting = 0;       /* jobs waiting for devices (not for a cap) */
    uint64_t resizes = 0;

    while (done < n) {
        /* The next event: an arrival, a completion or a review. */
        double t_next = next < n ? t->jobs[c->order[next]].arrival : INFINITY;
        for (size_t k = 0; k < c->n_running; k++) {
            sim_state *st = &c->st[c->running[k]];
            double from = st->stall_until > now ? st->stall_until : now;
            st->finish_at = st->rate > 0 ? from + st->remaining / st->rate : INFINITY;
            if (st->finish_at < t_next)
                t_next = st->finish_at;
        }
        double review = sched_next_review(c->s);
        if (review > now && review < t_next)
            t_next = review;
        if (t_next == INFINITY)
            return loom_err(LOOM_ERR_INTERNAL,
                            "simulation stalled at t=%g with %zu job(s) unfinished", now,
                            n - done);

        double dt = t_next - now;
        u.busy += (double)busy * dt;
        if (wanting > 0) {
            u.wait_time += dt;
            u.wait_busy += (double)busy * dt;
            u.wait_usable += (double)(t->devices - reserved) * dt;
            u.wait_reserved += (double)reserved * dt;
        }
        for (size_t k = 0; k < c->n_running; k++) {
            sim_state *st = &c->st[c->running[k]];
            double from = st->stall_until > now ? st->stall_until : now;
            if (t_next > from)
                st->remaining -= st->rate * (t_next - from);
        }
        now = t_next;

        for (size_t k = c->n_running; k-- > 0;) {
            size_t i = c->running[k];
            sim_state *st = &c->st[i];
            if (st->finish_at > now)
                continue;
            loom_error *err = sched_end(c->s, t->jobs[i].id);
            if (err)
                return err;
            st->remaining = 0;
            st->end = now;
            busy -= st->count;
            st->count = 0;
            c->running[k] = c->running[--c->n_running];
            done++;
        }
        for (; next < n && t->jobs[c->order[next]].arrival <= now; next++) {
            loom_error *err = submit(c, c->order[next], now);
            if (err)
                return err;
        }

        const sched_decision *d;
        size_t nd = sched_plan(c->s, now, &d);
        for (size_t k = 0; k < nd; k++) {
            size_t i = (size_t)d[k].tag;
            sim_state *st = &c->st[i];
            if (d[k].old_count == 0) {
                st->start = now;
                c->running[c->n_running++] = i;
            } else {
                resizes++;
                st->stall_until = now + t->resize_cost;
            }
            busy += d[k].new_count - d[k].old_count;
            st->count = d[k].new_count;
            st->rate = sim_speedup(&t->jobs[i], st->count);
            double from = st->stall_until > now ? st->stall_until : now;
            loom_err_free(sched_set_job_end_estimate(c->s, d[k].job_id,
                                                     from + st->remaining / st->rate));
        }
        reserved = (int64_t)sched_reserved_count(c->s);
        wanting = sched_waiting_for_devices(c->s);
    }
    return summarise(c, t0, &u, resizes, out);
}

loom_error *sim_run(const sim_trace *t, int32_t policy, sim_result *out)
{
    *out = (sim_result){0};
    if (policy < SIM_POLICY_FAIR || policy >= SIM_POLICY_COUNT)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "sim: unknown policy %d", policy);
    sim_run_ctx c = {.trace = t, .policy = policy};
    loom_error *err = setup(&c);
    if (!err)
        err = simulate(&c, out);
    sched_free(c.s);
    free(c.st);
    free(c.order);
    free(c.running);
    return err ? loom_err_wrap(err, "%s", sim_policy_name(policy)) : NULL;
}

/* ---- loom sim ----------------------------------------------------------- */

static double reduction(double ours, double baseline)
{
    return baseline > 0 ? 1.0 - ours / baseline : 0;
}

static void print_table(const char *path, const sim_trace *t, const sim_result *r)
{
    printf("trace %s: %zu jobs, %d devices, hysteresis %g s, resize cost %g s\n\n", path,
           t->n_jobs, t->devices, t->hysteresis, t->resize_cost);
    printf("%-19s %6s %9s %9s %11s %11s %11s %11s %11s %11s %8s\n", "policy", "util",
           "util/wait", "reserved", "avg JCT", "p95 JCT", "top-prio", "avg queue",
           "p99 queue", "max wait", "resizes");
    for (int p = 0; p < SIM_POLICY_COUNT; p++) {
        char waiting[32];
        if (isnan(r[p].utilisation_waiting))
            snprintf(waiting, sizeof waiting, "-");
        else
            snprintf(waiting, sizeof waiting, "%.1f%%", 100 * r[p].utilisation_waiting);
        printf("%-19s %5.1f%% %9s %8.1f%% %9.0f s %9.0f s %9.0f s %9.0f s %9.0f s "
               "%9.0f s %8llu\n",
               sim_policy_name(p), 100 * r[p].utilisation, waiting,
               100 * r[p].reserved_waiting, r[p].avg_jct, r[p].p95_jct, r[p].avg_jct_top,
               r[p].avg_queueing, r[p].p99_queueing, r[p].max_wait,
               (unsigned long long)r[p].resizes);
    }
    printf("(util/wait: devices busy while a job waited, devices held for a reservation "
           "left out;\n reserved: the share held for one; top-prio: average JCT of the "
           "jobs with the\n trace's highest priority)\n\n");
    for (int p = 0; p < 2; p++)
        for (int base = SIM_POLICY_FIFO; base < SIM_POLICY_COUNT; base++)
            printf("%s vs %s: average JCT %.0f s vs %.0f s (%.1f%% lower), p95 JCT "
                   "%.1f%% lower, p99 queueing %.1f%% lower\n",
                   sim_policy_name(p), sim_policy_name(base), r[p].avg_jct,
                   r[base].avg_jct, 100 * reduction(r[p].avg_jct, r[base].avg_jct),
                   100 * reduction(r[p].p95_jct, r[base].p95_jct),
                   100 * reduction(r[p].p99_queueing, r[base].p99_queueing));
}

static const char *const policy_keys[SIM_POLICY_COUNT] = {"fair", "priority", "fifo",
                                                          "backfill"};

static cJSON *result_json(int p, const sim_result *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "policy", policy_keys[p]);
    cJSON_AddStringToObject(o, "name", sim_policy_name(p));
    cJSON_AddNumberToObject(o, "utilisation", r->utilisation);
    if (isnan(r->utilisation_waiting))
        cJSON_AddNullToObject(o, "utilisation_while_waiting");
    else
        cJSON_AddNumberToObject(o, "utilisation_while_waiting", r->utilisation_waiting);
    cJSON_AddNumberToObject(o, "reserved_while_waiting", r->reserved_waiting);
    cJSON_AddNumberToObject(o, "avg_jct", r->avg_jct);
    cJSON_AddNumberToObject(o, "p95_jct", r->p95_jct);
    cJSON_AddNumberToObject(o, "avg_jct_top_priority", r->avg_jct_top);
    cJSON_AddNumberToObject(o, "makespan", r->makespan);
    cJSON_AddNumberToObject(o, "avg_queueing_delay", r->avg_queueing);
    cJSON_AddNumberToObject(o, "p99_queueing_delay", r->p99_queueing);
    cJSON_AddNumberToObject(o, "max_wait", r->max_wait);
    cJSON_AddNumberToObject(o, "resizes", (double)r->resizes);
    return o;
}

static int print_json(const char *path, const sim_trace *t, const sim_result *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "trace", path);
    cJSON_AddNumberToObject(root, "jobs", (double)t->n_jobs);
    cJSON_AddNumberToObject(root, "devices", t->devices);
    cJSON_AddNumberToObject(root, "hysteresis", t->hysteresis);
    cJSON_AddNumberToObject(root, "resize_cost", t->resize_cost);
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    for (int p = 0; p < SIM_POLICY_COUNT; p++)
        cJSON_AddItemToArray(results, result_json(p, &r[p]));
    static const char *const names[] = {"avg_jct_reduction_vs_fifo",
                                        "avg_jct_reduction_vs_backfill"};
    for (int base = SIM_POLICY_FIFO; base < SIM_POLICY_COUNT; base++) {
        cJSON *improve = cJSON_AddObjectToObject(root, names[base - SIM_POLICY_FIFO]);
        for (int p = 0; p < 2; p++)
            cJSON_AddNumberToObject(improve, policy_keys[p],
                                    reduction(r[p].avg_jct, r[base].avg_jct));
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "loom sim: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

static const char sim_usage_text[] = "usage: loom sim [--json] TRACE.json\n";

int sim_cli(int argc, char **argv, bool json)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("%sReplays a job trace through the scheduler on a simulated clock and "
                   "compares\nelastic fair share and elastic priority with static FIFO "
                   "and FIFO with\nEASY backfilling.\n", sim_usage_text);
            return 0;
        } else if (argv[i][0] == '-' || path) {
            fprintf(stderr, "loom sim: unexpected argument '%s'\n%s", argv[i],
                    sim_usage_text);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fputs(sim_usage_text, stderr);
        return 2;
    }
    sim_trace *t;
    loom_error *err = sim_trace_load(path, &t);
    sim_result r[SIM_POLICY_COUNT];
    for (int p = 0; !err && p < SIM_POLICY_COUNT; p++)
        err = sim_run(t, p, &r[p]);
    if (err) {
        fprintf(stderr, "loom sim: %s\n", loom_err_message(err));
        loom_err_free(err);
        sim_trace_free(t);
        return 1;
    }
    int rc = 0;
    if (json)
        rc = print_json(path, t, r);
    else
        print_table(path, t, r);
    sim_trace_free(t);
    return rc;
}

int sim_main(int argc, char **argv) { return sim_cli(argc, argv, false); }
