/*
 * store/store_history.h - what the host remembers of the recent past, for
 * pages and scripts that draw it: who held each device from when, the
 * metrics a training exec reported per iteration and per epoch, a model's
 * request rate and instances. Each series (a device, an exec's metric, a
 * model) is bounded as it is written: rows older than the window or past
 * the most points of the series are removed in the same call. Errors as in
 * store.h.
 */
#ifndef LOOM_STORE_STORE_HISTORY_H
#define LOOM_STORE_STORE_HISTORY_H

#include <stdint.h>

#include "store/store.h"

#define STORE_HISTORY_NAME_MAX 64 /* a holder, user, exec id, metric or model name */

/* How much each series keeps. */
typedef struct store_history_bounds {
    int64_t window_ms;  /* rows older than now - window_ms go */
    int64_t max_points; /* the newest this many of a series stay */
} store_history_bounds;

/* A device's holder from time t (ms): holder "" when it became free. */
typedef struct store_history_device {
    int64_t t;
    int32_t slot;
    char holder[STORE_HISTORY_NAME_MAX];
    char kind[16]; /* "exec", "tuning", "model" or "" */
    char user[STORE_HISTORY_NAME_MAX];
} store_history_device;

/* One value of an exec's metric: at iteration `step` (-1: an epoch's
 * value) of epoch `epoch` (from 1). */
typedef struct store_history_metric {
    int64_t t;
    int64_t step;
    int32_t epoch;
    char name[STORE_HISTORY_NAME_MAX];
    double value;
} store_history_metric;

typedef struct store_history_model {
    int64_t t;
    double requests_per_s;
    int32_t instances;
} store_history_model;

loom_error *store_history_device_add(store *st, const store_history_bounds *b,
                                     const store_history_device *row);
loom_error *store_history_metric_add(store *st, const store_history_bounds *b, const char *exec,
                                     const store_history_metric *row);
loom_error *store_history_model_add(store *st, const store_history_bounds *b, const char *model,
                                    const store_history_model *row);

/* Rows with from <= t <= to, oldest first, as malloc'd arrays (the caller
 * frees); the device rows of every slot, the metric rows of one exec, the
 * rows of one model. */
loom_error *store_history_devices(store *st, int64_t from, int64_t to,
                                  store_history_device **out, size_t *count);
loom_error *store_history_metrics(store *st, const char *exec, int64_t from, int64_t to,
                                  store_history_metric **out, size_t *count);
loom_error *store_history_models(store *st, const char *model, int64_t from, int64_t to,
                                 store_history_model **out, size_t *count);

#endif
