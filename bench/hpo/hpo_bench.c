/*
 * bench/hpo/hpo_bench.c - a search plugin through its real entry points
 * (dlopen, loom_module_entry, the "loom.search/2" vtable):
 *
 *   hpo_bench overhead PLUGIN.so TRIALS
 *       runs TRIALS ask+tell rounds on Hartmann-6's space (objective
 *       excluded from the timing) and prints the median microseconds of
 *       the last 100 rounds, and of 9 save_state calls at the end;
 *   hpo_bench quality PLUGIN.so branin|hartmann6 TRIALS SEED [NAME=VALUE..]
 *       prints the best value after 50 and after TRIALS trials.
 */
#include <stdio.h>
#include <time.h>

#include "objectives.h"
#include "search_driver.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static loom_param params[6];

static uint32_t space_for(const char *fn)
{
    if (strcmp(fn, "branin") == 0) {
        params[0] = range_param("x1", -5, 10);
        params[1] = range_param("x2", 0, 15);
        return 2;
    }
    static const char *names[6] = {"x1", "x2", "x3", "x4", "x5", "x6"};
    for (int i = 0; i < 6; i++)
        params[i] = range_param(names[i], 0, 1);
    return 6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, uint32_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define TIMED_ROUNDS 100
#define SAVE_ROUNDS 9

static int overhead(const loom_search_factory *f, uint32_t trials)
{
    search_setup s = {.params = params, .dim = space_for("hartmann6"), .seed = 1};
    loom_search_instance *inst = search_create(f, &s, NULL);
    if (!inst)
        return 1;
    recorder r;
    recorder_init(&r, params, s.dim);
    double spent[TIMED_ROUNDS], x[6];
    uint32_t timed = 0;
    for (uint32_t t = 0; t < trials; t++) {
        double t0 = now_us();
        search_suggest(f, inst, 1, &r);
        double t1 = now_us();
        recorded *item = &r.items[r.count - 1];
        for (uint32_t j = 0; j < s.dim; j++)
            x[j] = item->values[j].d;
        double y = hartmann6(x, 6);
        double t2 = now_us();
        search_observe(f, inst, &r, item, LOOM_EXPERIMENT_FINISHED, y);
        double t3 = now_us();
        if (t + TIMED_ROUNDS >= trials)
            spent[timed++] = (t1 - t0) + (t3 - t2);
    }
    double saves[SAVE_ROUNDS];
    size_t bytes = 0;
    for (int k = 0; k < SAVE_ROUNDS; k++) {
        char *state = NULL;
        double t0 = now_us();
        loom_error *err = f->save_state(inst, &state);
        saves[k] = now_us() - t0;
        bytes = state ? strlen(state) : 0;
        loom_err_free(err);
        free(state);
    }
    printf("ask+tell at %u trials: %.1f us (median of the last %u); save_state: %.1f us "
           "(median of %d), %zu bytes\n",
           trials, median(spent, timed), timed, median(saves, SAVE_ROUNDS), SAVE_ROUNDS, bytes);
    recorder_free(&r);
    f->destroy(inst);
    return 0;
}

static int quality(const loom_search_factory *f, const char *fn, uint32_t trials, uint64_t seed,
                   int argc, char **argv)
{
    loom_search_option options[8];
    uint32_t n = 0;
    for (int i = 0; i < argc && n < 8; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            continue;
        *eq = 0;
        options[n++] = (loom_search_option){argv[i], eq + 1};
    }
    search_setup s = {.params = params, .dim = space_for(fn), .seed = seed,
                      .options = options, .option_count = n};
    double (*objective)(const double *, uint32_t) = s.dim == 2 ? branin : hartmann6;
    double *trace = calloc(trials ? trials : 1, sizeof *trace);
    if (!trace)
        return 1;
    for (uint32_t t = 0; t < trials; t++)
        trace[t] = INFINITY;
    double at_end = search_minimize_trace(f, &s, objective, trials, trace);
    double at50 = trace[(trials < 50 ? trials : 50) - 1];
    free(trace);
    printf("%s seed %llu: best after 50: %.4f, after %u: %.4f\n", fn, (unsigned long long)seed,
           at50, trials, at_end);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: hpo_bench overhead PLUGIN.so TRIALS\n"
                        "       hpo_bench quality PLUGIN.so branin|hartmann6 TRIALS SEED "
                        "[NAME=VALUE...]\n");
        return 2;
    }
    test_plugin plugin = {0};
    const loom_search_factory *f = test_plugin_open(&plugin, argv[2], LOOM_SEARCH_FACTORY_ID);
    if (!f)
        return 1;
    int rc;
    if (strcmp(argv[1], "overhead") == 0)
        rc = overhead(f, (uint32_t)atoi(argv[3]));
    else if (argc >= 6)
        rc = quality(f, argv[3], (uint32_t)atoi(argv[4]), strtoull(argv[5], NULL, 10), argc - 6,
                     argv + 6);
    else
        rc = 2;
    test_plugin_close(&plugin);
    return rc ? rc : CHECK_DONE();
}
