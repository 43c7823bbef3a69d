/*
 * bench/plugin/bench_plugin_call.c - the round trip of an empty logger
 * callback (log_train_metrics with two metrics) called in this process
 * and through a `loom plugin-host` child, and the same for a search
 * plugin's suggest (one proposal from the random search over a two-
 * parameter space), median and 99th percentile over many calls.
 *
 *   loom_plugin_bench LOOM_BINARY EMPTY_LOGGER.so RANDOM_SEARCH.so [CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hpo/search_client.h"
#include "plugin/plugin_proc.h"
#include "plugin/registry.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print(const char *what, double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, by_value);
    printf("%-38s median %8.2f us   p99 %8.2f us   (%d calls)\n", what, t[n / 2],
           t[(int)((double)n * 0.99)], n);
}

static const loom_metric metrics[2] = {{"loss", 0.5}, {"accuracy", 0.9}};

static int in_process(const char *so, double *t, int n)
{
    registry *r = registry_create();
    registry_entry e;
    loom_error *err = registry_load(r, so, "user", NULL, LOOM_KIND_LOGGER, 0);
    if (err || registry_acquire(r, LOOM_KIND_LOGGER, "empty_logger", &e) != 0) {
        fprintf(stderr, "cannot load %s: %s\n", so, loom_err_message(err));
        return -1;
    }
    const loom_logger_factory *f = e.factory;
    loom_logger_config cfg = {.struct_size = sizeof cfg, .exec_id = "bench", .log_dir = "/tmp",
                              .config_json = "{}"};
    loom_logger_instance *inst;
    if ((err = f->create(f, &cfg, &inst)))
        return -1;
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        loom_err_free(f->log_train_metrics(inst, metrics, 2, (uint64_t)i, 1, 1));
        t[i] = now_us() - t0;
    }
    f->destroy(inst);
    registry_release(r, LOOM_KIND_LOGGER, "empty_logger");
    registry_destroy(r);
    return 0;
}

static int out_of_process(const char *loom, const char *so, double *t, int n)
{
    plugin_proc_spec spec = {.binary = loom, .plugin_path = so, .name = "empty_logger",
                             .kind = "logger"};
    plugin_proc *p = plugin_proc_new(&spec);
    wire_buf b = {0};
    wire_begin(&b);
    wire_put_u8(&b, WIRE_LOGGER_CREATE);
    wire_put_i32(&b, LOOM_LOGGER_DRIVER);
    wire_put_u32(&b, 0);
    wire_put_str(&b, "bench");
    wire_put_str(&b, "/tmp");
    wire_put_str(&b, "{}");
    wire_put_str(&b, NULL);
    wire_put_str(&b, NULL);
    wire_finish(&b);
    loom_error *err = plugin_proc_call(p, "create", &b, 1);
    if (err) {
        fprintf(stderr, "%s\n", loom_err_message(err));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        wire_begin(&b); /* built per call, as logger_set does */
        wire_put_u8(&b, WIRE_LOGGER_TRAIN);
        wire_put_u32(&b, 2);
        for (int m = 0; m < 2; m++) {
            wire_put_str(&b, metrics[m].name);
            wire_put_f64(&b, metrics[m].value);
        }
        wire_put_u64(&b, (uint64_t)i);
        wire_put_u32(&b, 1);
        wire_put_u32(&b, 1);
        wire_finish(&b);
        loom_err_free(plugin_proc_call(p, "log_train_metrics", &b, 0));
        t[i] = now_us() - t0;
    }
    wire_free(&b);
    plugin_proc_free(p);
    return 0;
}

/* ---- a search plugin's suggest ------------------------------------------- */

static const loom_param space[2] = {
    {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_DOUBLE,
     .name = "lr", .low = -4, .high = -1, .log_base = 10},
    {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_INT,
     .name = "width", .low = 16, .high = 256, .step = 16},
};
static const loom_search_config search_config = {
    .struct_size = sizeof(loom_search_config), .max_parallel = 1, .seed = 7,
    .objective_metric = "accuracy", .param_count = 2, .params = space};

static uint64_t proposals;
static uint64_t count_proposal(const loom_proposal_sink *sink, const loom_value *values,
                               uint32_t count, double budget)
{
    (void)sink, (void)values, (void)count, (void)budget;
    return ++proposals;
}
static void finished(const loom_proposal_sink *sink) { (void)sink; }

static int suggest_in_process(const char *so, double *t, int n)
{
    registry *r = registry_create();
    registry_entry e;
    loom_error *err = registry_load(r, so, "user", NULL, LOOM_KIND_SEARCH, 0);
    if (err || registry_acquire(r, LOOM_KIND_SEARCH, "random", &e) != 0) {
        fprintf(stderr, "cannot load %s: %s\n", so, loom_err_message(err));
        return -1;
    }
    const loom_search_factory *f = e.factory;
    loom_search_instance *inst;
    if ((err = f->create(f, &search_config, &inst)))
        return -1;
    loom_proposal_sink sink = {.struct_size = sizeof sink, .propose = count_proposal,
                               .finish = finished};
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        loom_err_free(f->suggest(inst, 1, &sink));
        t[i] = now_us() - t0;
    }
    f->destroy(inst);
    registry_release(r, LOOM_KIND_SEARCH, "random");
    registry_destroy(r);
    return 0;
}

static int suggest_out_of_process(const char *loom, const char *so, double *t, int n)
{
    search_client_spec spec = {.binary = loom, .plugin_path = so, .name = "random"};
    search_client *c;
    loom_error *err = search_client_start(&spec, &search_config, &c);
    if (err) {
        fprintf(stderr, "%s\n", loom_err_message(err));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        search_outcome out = {0};
        double t0 = now_us();
        err = search_client_suggest(c, (uint64_t)i + 1, 1, &out);
        t[i] = now_us() - t0;
        if (!err)
            search_outcome_free(&out, 2);
        loom_err_free(err);
    }
    search_client_free(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s LOOM_BINARY EMPTY_LOGGER.so RANDOM_SEARCH.so [CALLS]\n",
                argv[0]);
        return 2;
    }
    int n = argc > 4 ? atoi(argv[4]) : 20000;
    if (n < 100)
        n = 100;
    double *t = malloc(sizeof *t * (size_t)n);
    if (!t || in_process(argv[2], t, n) != 0)
        return 1;
    print("empty logger call, in-process", t, n);
    if (out_of_process(argv[1], argv[2], t, n) != 0)
        return 1;
    print("empty logger call, plugin-host", t, n);
    if (suggest_in_process(argv[3], t, n) != 0)
        return 1;
    print("search suggest (random), in-process", t, n);
    if (suggest_out_of_process(argv[1], argv[3], t, n) != 0)
        return 1;
    print("search suggest (random), plugin-host", t, n);
    free(t);
    return 0;
}
