/*
 * bench/sched/bench_decision.c - how long one scheduling decision takes:
 * 1,000 running elastic jobs on 1,000 devices in 10 plans (half fair, half
 * priority, weights 1..10). Each round one job ends and a new one arrives,
 * then sched_plan() is timed; also timed: a round with nothing to change,
 * and 250 jobs on 1,000 devices (every job growing, so the water-fill
 * really divides); and 1,000 fixed jobs of 1 to 8 devices with expected run
 * times, most of them queued, so every round dates a reservation and tries
 * the queue against it (backfilling). Prints the median and p99 of each, in wall-clock time
 * and in the thread's CPU time: on a shared machine the wall-clock tail is
 * mostly the process being descheduled, which CPU time leaves out.
 *
 * usage: loom_sched_bench [--rounds N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/host_api.h"
#include "sched/sched.h"

static uint64_t rng = 42;

static uint32_t next_rand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng >> 33);
}

static double clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct timing {
    double *wall, *cpu;
    double wall0, cpu0;
} timing;

static void timing_start(timing *t)
{
    t->wall0 = clock_ns(CLOCK_MONOTONIC);
    t->cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void timing_stop(timing *t, int round)
{
    t->cpu[round] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t->cpu0;
    t->wall[round] = clock_ns(CLOCK_MONOTONIC) - t->wall0;
}

static timing timing_new(int rounds)
{
    timing t = {malloc((size_t)rounds * sizeof(double)),
                malloc((size_t)rounds * sizeof(double)), 0, 0};
    if (!t.wall || !t.cpu) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    return t;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void submit_job(sched *s, long id, double t)
{
    char name[32], plan[16];
    snprintf(name, sizeof name, "job-%ld", id);
    snprintf(plan, sizeof plan, "/p%ld", id % 10);
    sched_job_spec spec = {.id = name, .plan = plan, .elastic = true, .min_devices = 1,
                           .max_devices = 1 + (int32_t)(next_rand() % 8),
                           .priority = (int32_t)(next_rand() % 3)};
    loom_error *err = sched_submit(s, &spec, t);
    if (err) {
        fprintf(stderr, "bench: %s\n", loom_err_message(err));
        exit(1);
    }
}

static void submit_fixed(sched *s, long id, double t)
{
    char name[32], plan[16];
    snprintf(name, sizeof name, "fixed-%ld", id);
    snprintf(plan, sizeof plan, "/p%ld", id % 10);
    sched_job_spec spec = {.id = name, .plan = plan,
                           .max_devices = 1 + (int32_t)(next_rand() % 8),
                           .priority = (int32_t)(next_rand() % 3),
                           .expected_seconds = 100 + next_rand() % 1000};
    loom_error *err = sched_submit(s, &spec, t);
    if (err) {
        fprintf(stderr, "bench: %s\n", loom_err_message(err));
        exit(1);
    }
}

static sched *make(int32_t devices, long jobs)
{
    sched *s = sched_create(NULL);
    for (int32_t d = 0; d < devices; d++)
        sched_add_device(s, LOOM_DEVICE_CPU, d, NULL);
    for (int p = 0; p < 10; p++) {
        char path[16];
        snprintf(path, sizeof path, "/p%d", p);
        sched_plan_spec spec = {.path = path, .weight = p + 1,
                                .policy = p % 2 ? SCHED_POLICY_PRIORITY : SCHED_POLICY_FAIR};
        loom_error *err = sched_add_plan(s, &spec);
        if (err) {
            fprintf(stderr, "bench: %s\n", loom_err_message(err));
            exit(1);
        }
    }
    for (long j = 0; j < jobs; j++)
        submit_job(s, j, 0);
    const sched_decision *d;
    sched_plan(s, 0, &d);
    return s;
}

static void report(const char *what, timing *t, int n, size_t decisions)
{
    qsort(t->wall, (size_t)n, sizeof *t->wall, dbl_cmp);
    qsort(t->cpu, (size_t)n, sizeof *t->cpu, dbl_cmp);
    printf("%-48s %9.1f %9.1f %9.1f %9.1f   %.1f\n", what, t->wall[n / 2] / 1e3,
           t->wall[(n * 99) / 100] / 1e3, t->cpu[n / 2] / 1e3,
           t->cpu[(n * 99) / 100] / 1e3, (double)decisions / n);
    free(t->wall);
    free(t->cpu);
}

/* One job ends, one arrives, one decision: the common case. */
static void churn(sched *s, long jobs, int rounds, const char *what)
{
    timing tm = timing_new(rounds);
    size_t decisions = 0;
    const sched_decision *d;
    for (int r = 0; r < rounds; r++) {
        char name[32];
        snprintf(name, sizeof name, "job-%ld", (long)r);
        loom_error *err = sched_end(s, name);
        if (err) {
            fprintf(stderr, "bench: %s\n", loom_err_message(err));
            exit(1);
        }
        submit_job(s, jobs + r, r + 1);
        timing_start(&tm);
        decisions += sched_plan(s, r + 1, &d);
        timing_stop(&tm, r);
    }
    report(what, &tm, rounds, decisions);
}

/* Fixed jobs: a running one ends (the holder of a pseudo-random device),
 * one arrives, one decision. */
static void churn_fixed(sched *s, long jobs, int rounds, const char *what)
{
    timing tm = timing_new(rounds);
    size_t decisions = 0;
    const sched_decision *d;
    size_t n = sched_device_count(s);
    for (int r = 0; r < rounds; r++) {
        char name[32] = "";
        for (size_t k = 0; k < n && !name[0]; k++) {
            sched_device_info dev;
            if (sched_device(s, (int32_t)((next_rand() + k) % n), &dev) && dev.owner)
                snprintf(name, sizeof name, "%s", dev.owner);
        }
        loom_error *err = sched_end(s, name);
        if (err) {
            fprintf(stderr, "bench: %s\n", loom_err_message(err));
            exit(1);
        }
        submit_fixed(s, jobs + r, r + 1);
        timing_start(&tm);
        decisions += sched_plan(s, r + 1, &d);
        timing_stop(&tm, r);
    }
    report(what, &tm, rounds, decisions);
}

static void steady(sched *s, int rounds, const char *what)
{
    timing tm = timing_new(rounds);
    size_t decisions = 0;
    const sched_decision *d;
    for (int r = 0; r < rounds; r++) {
        timing_start(&tm);
        decisions += sched_plan(s, 1e6 + r, &d);
        timing_stop(&tm, r);
    }
    report(what, &tm, rounds, decisions);
}

int main(int argc, char **argv)
{
    int rounds = 1000;
    if (argc == 3 && strcmp(argv[1], "--rounds") == 0)
        rounds = atoi(argv[2]);
    if (rounds < 1 || rounds > 100000) {
        fprintf(stderr, "usage: loom_sched_bench [--rounds N (1..100000)]\n");
        return 2;
    }

    sched *s = make(1000, 1000);
    printf("scheduler decision, 1000 devices, 10 plans (5 fair, 5 priority)\n");
    printf("  after set-up: %zu jobs, %zu running, %zu free devices\n",
           sched_job_count(s), sched_job_count(s) - sched_queued_count(s),
           sched_free_device_count(s));
    printf("%-48s %9s %9s %9s %9s   %s\n", "microseconds per sched_plan()", "wall p50",
           "wall p99", "cpu p50", "cpu p99", "decisions/round");
    churn(s, 1000, rounds, "1000 jobs: one ends, one arrives");
    steady(s, rounds, "1000 jobs: nothing changed");
    sched_free(s);

    s = make(1000, 250);
    churn(s, 250, rounds, "250 jobs on 1000 devices: one ends, one arrives");
    sched_free(s);

    s = make(1000, 0);
    for (long j = 0; j < 1000; j++)
        submit_fixed(s, j, 0);
    const sched_decision *d;
    sched_plan(s, 0, &d);
    printf("  1000 fixed jobs: %zu running, %zu queued\n",
           sched_job_count(s) - sched_queued_count(s), sched_queued_count(s));
    churn_fixed(s, 1000, rounds, "1000 fixed jobs, backfilling: one ends, one in");
    sched_free(s);
    return 0;
}
