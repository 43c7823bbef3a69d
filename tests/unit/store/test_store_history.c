/* The history tables: each series keeps at most its points and nothing
 * older than the window, pruned as rows are written; one series' rows
 * never push out another's; ranges read oldest first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store/store.h"
#include "store/store_history.h"

static int code_of(loom_error *e)
{
    int code = loom_err_code(e);
    loom_err_free(e);
    return code;
}

static void add_metric(store *st, const store_history_bounds *b, const char *exec,
                       const char *name, int64_t t, double value)
{
    store_history_metric m = {.t = t, .step = t, .epoch = 1, .value = value};
    snprintf(m.name, sizeof m.name, "%s", name);
    CHECK(code_of(store_history_metric_add(st, b, exec, &m)) == LOOM_OK);
}

static size_t metric_count(store *st, const char *exec, int64_t from, int64_t to,
                           const char *name, int64_t *first_t)
{
    store_history_metric *v = NULL;
    size_t n = 0, k = 0;
    CHECK(code_of(store_history_metrics(st, exec, from, to, &v, &n)) == LOOM_OK);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name) && k++ == 0 && first_t)
            *first_t = v[i].t;
    for (size_t i = 1; i < n; i++)
        CHECK(v[i].t >= v[i - 1].t); /* oldest first */
    free(v);
    return k;
}

static void test_points_per_series(store *st)
{
    store_history_bounds b = {.window_ms = 1000000, .max_points = 10};
    for (int i = 1; i <= 25; i++)
        add_metric(st, &b, "e1", "loss", 1000 + i, 1.0 / i);
    add_metric(st, &b, "e1", "accuracy", 1100, 0.5);
    add_metric(st, &b, "e2", "loss", 1100, 0.7);
    int64_t first = 0;
    /* the newest 10 of e1's loss stay: 1016 .. 1025 */
    CHECK(metric_count(st, "e1", 0, 5000, "loss", &first) == 10);
    CHECK(first == 1016);
    /* other series are their own */
    CHECK(metric_count(st, "e1", 0, 5000, "accuracy", NULL) == 1);
    CHECK(metric_count(st, "e2", 0, 5000, "loss", NULL) == 1);
    /* a range */
    CHECK(metric_count(st, "e1", 1020, 1022, "loss", NULL) == 3);
    CHECK(metric_count(st, "e1", 3000, 4000, "loss", NULL) == 0);
}

static void test_window(store *st)
{
    store_history_bounds b = {.window_ms = 100, .max_points = 1000};
    for (int i = 0; i < 5; i++) {
        store_history_device d = {.t = 10000 + i * 60, .slot = 3};
        snprintf(d.holder, sizeof d.holder, "%s", i % 2 ? "" : "alice-1");
        snprintf(d.kind, sizeof d.kind, "%s", i % 2 ? "" : "exec");
        snprintf(d.user, sizeof d.user, "%s", i % 2 ? "" : "alice");
        CHECK(code_of(store_history_device_add(st, &b, &d)) == LOOM_OK);
    }
    store_history_device *v = NULL;
    size_t n = 0;
    CHECK(code_of(store_history_devices(st, 0, 20000, &v, &n)) == LOOM_OK);
    /* written last at 10240: rows before 10140 went (10000, 10060, 10120) */
    CHECK(n == 2);
    if (n == 2) {
        CHECK(v[0].t == 10180 && v[0].slot == 3 && v[0].holder[0] == 0);
        CHECK(v[1].t == 10240 && !strcmp(v[1].holder, "alice-1") && !strcmp(v[1].user, "alice") &&
              !strcmp(v[1].kind, "exec"));
    }
    free(v);

    store_history_model m = {.t = 10240, .requests_per_s = 12.5, .instances = 2};
    CHECK(code_of(store_history_model_add(st, &b, "mnist", &m)) == LOOM_OK);
    m.t = 10400;
    m.instances = 3;
    CHECK(code_of(store_history_model_add(st, &b, "mnist", &m)) == LOOM_OK);
    store_history_model *mv = NULL;
    CHECK(code_of(store_history_models(st, "mnist", 0, 20000, &mv, &n)) == LOOM_OK);
    CHECK(n == 1 && mv[0].instances == 3 && mv[0].requests_per_s == 12.5);
    free(mv);
}

int main(void)
{
    store *st = NULL;
    CHECK(code_of(store_open(":memory:", &st)) == LOOM_OK);
    if (st) {
        test_points_per_series(st);
        test_window(st);
        store_close(st);
    }
    return CHECK_DONE();
}
