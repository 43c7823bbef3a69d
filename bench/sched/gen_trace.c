/*
 * bench/sched/gen_trace.c - writes a scheduler trace to stdout.
 *
 * --profile synthetic (the default) makes bench/sched/synthetic.json:
 * Poisson arrivals, sizes 1..32, log-uniform run times, Amdahl or linear
 * scaling, a tenth of the jobs fixed-size (launch-style), a fifth high
 * priority, two plans.
 *
 * --profile mixed makes the comparison traces of run.sh: 16 devices by
 * default; Poisson arrivals at the offered load; run times lognormal with
 * median 20 min and sigma 1.3; sizes 1, 2, 4, 8, 16 with weights 0.30,
 * 0.25, 0.25, 0.15, 0.05; 30 % fixed-size; half of the elastic jobs with a
 * minimum of half their maximum; three plans with shares 3:2:1 taking a
 * third of the jobs each, /c capped at half the devices.
 *
 * Deterministic (splitmix64 from --seed), so run.sh can check that the
 * committed trace is what this program makes.
 *
 * usage: loom_sched_gen_trace [--profile synthetic|mixed] [--jobs N]
 *                             [--devices D] [--load L] [--seed S]
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t splitmix64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(void) { return (double)(splitmix64() >> 11) * 0x1.0p-53; }

/* Standard normal, Box-Muller. */
static double normal(void)
{
    double u = 1.0 - uniform(), v = uniform();
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static void print_scaling(void)
{
    if (uniform() < 0.3)
        printf(", \"scaling\": \"linear\"");
    else
        printf(", \"scaling\": {\"type\": \"amdahl\", \"serial_fraction\": %.3f}",
               0.002 + 0.028 * uniform());
}

static int mixed(long jobs, long devices, double load)
{
    static const int sizes[] = {1, 2, 4, 8, 16};
    static const double weights[] = {0.30, 0.25, 0.25, 0.15, 0.05};
    const double median = 1200, sigma = 1.3;
    double mean_size = 0;
    for (size_t i = 0; i < 5; i++)
        mean_size += weights[i] * (sizes[i] < devices ? sizes[i] : devices);
    const double mean_time = median * exp(sigma * sigma / 2);
    const double rate = load * (double)devices / (mean_size * mean_time);
    long cap = devices / 2 > 0 ? devices / 2 : 1;

    printf("{\n  \"devices\": %ld,\n  \"hysteresis\": 30,\n  \"resize_cost\": 2,\n",
           devices);
    printf("  \"plans\": [\n"
           "    {\"path\": \"/a\", \"weight\": 3},\n"
           "    {\"path\": \"/b\", \"weight\": 2},\n"
           "    {\"path\": \"/c\", \"weight\": 1, \"cap_devices\": %ld}\n  ],\n", cap);
    printf("  \"jobs\": [\n");
    double t = 0;
    for (long i = 0; i < jobs; i++) {
        t += -log(1.0 - uniform()) / rate;
        double u = uniform(), acc = 0;
        int size = sizes[4];
        for (size_t k = 0; k < 5; k++)
            if (u < (acc += weights[k])) {
                size = sizes[k];
                break;
            }
        double run_time = median * exp(sigma * normal());
        int p = (int)(uniform() * 3);
        bool fixed = uniform() < 0.30;
        bool half_min = uniform() < 0.5;
        long limit = p == 2 ? cap : devices;
        if (size > limit)
            size = (int)limit;
        printf("    {\"id\": \"job-%04ld\", \"arrival\": %.1f, \"max_devices\": %d, "
               "\"work\": %.1f, \"plan\": \"/%c\"",
               i, t, size, run_time * size, "abc"[p]);
        if (fixed)
            printf(", \"elastic\": false");
        else if (half_min && size > 1)
            printf(", \"min_devices\": %d", size / 2);
        print_scaling();
        printf("}%s\n", i + 1 < jobs ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}

static int pick_size(void)
{
    static const int sizes[] = {1, 2, 4, 8, 16, 32};
    static const double weights[] = {0.15, 0.15, 0.25, 0.25, 0.15, 0.05};
    double u = uniform(), acc = 0;
    for (size_t i = 0; i < 6; i++) {
        acc += weights[i];
        if (u < acc)
            return sizes[i];
    }
    return sizes[5];
}

int main(int argc, char **argv)
{
    long jobs = 1200, devices = 64;
    double load = 0.8;
    bool is_mixed = false;
    rng_state = 20240601;
    if (argc % 2 == 0) {
        fprintf(stderr, "gen_trace: option '%s' needs a value\n", argv[argc - 1]);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--profile") == 0) {
            is_mixed = strcmp(argv[i + 1], "mixed") == 0;
            if (!is_mixed && strcmp(argv[i + 1], "synthetic") != 0) {
                fprintf(stderr, "gen_trace: --profile: expected synthetic or mixed, "
                                "got '%s'\n", argv[i + 1]);
                return 2;
            }
        } else if (strcmp(argv[i], "--jobs") == 0)
            jobs = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--devices") == 0)
            devices = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--load") == 0)
            load = strtod(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--seed") == 0)
            rng_state = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "gen_trace: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (jobs < 1 || devices < 1 || !(load > 0)) {
        fprintf(stderr, "gen_trace: --jobs, --devices and --load must be positive\n");
        return 2;
    }
    if (is_mixed)
        return mixed(jobs, devices, load);
    /* Mean work per job in device-seconds: E[size] x E[run time], run time
     * log-uniform in [10 min, 4 h] at perfect scaling on `size` devices. */
    const double t_lo = 600, t_hi = 14400;
    const double mean_size = 0.15 * 1 + 0.15 * 2 + 0.25 * 4 + 0.25 * 8 + 0.15 * 16 +
                             0.05 * 32;
    const double mean_time = (t_hi - t_lo) / log(t_hi / t_lo);
    /* Arrival rate giving `load` x capacity at perfect scaling. */
    const double rate = load * (double)devices / (mean_size * mean_time);

    printf("{\n  \"devices\": %ld,\n  \"hysteresis\": 30,\n  \"resize_cost\": 2,\n",
           devices);
    printf("  \"plans\": [\n"
           "    {\"path\": \"/research\", \"weight\": 2},\n"
           "    {\"path\": \"/production\", \"weight\": 1}\n  ],\n");
    printf("  \"jobs\": [\n");
    double t = 0;
    for (long i = 0; i < jobs; i++) {
        t += -log(1.0 - uniform()) / rate;
        int size = pick_size();
        if (size > devices)
            size = (int)devices;
        double run_time = t_lo * exp(uniform() * log(t_hi / t_lo));
        double work = run_time * size;
        bool fixed = uniform() < 0.10;
        int priority = uniform() < 0.20 ? 10 : 0;
        const char *plan = uniform() < 0.7 ? "/research" : "/production";
        printf("    {\"id\": \"job-%04ld\", \"arrival\": %.1f, \"max_devices\": %d, "
               "\"work\": %.1f, \"plan\": \"%s\", \"priority\": %d",
               i, t, size, work, plan, priority);
        if (fixed)
            printf(", \"elastic\": false");
        print_scaling();
        printf("}%s\n", i + 1 < jobs ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}
