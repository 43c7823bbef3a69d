/*
 * api/history.h - the host's history sampler: once a second it looks at
 * what the services already gather (the scheduler's devices and holders,
 * each running training exec's progress, every started model's counters)
 * and writes what changed to the store's history tables
 * (store/store_history.h), bounded by the window and the points per
 * series it is given. Read-only towards the services: nothing they do
 * waits for it.
 */
#ifndef LOOM_API_HISTORY_H
#define LOOM_API_HISTORY_H

#include "api/api.h"
#include "store/store_history.h"

/* `loom serve --history-hours H --history-points N`: the defaults and
 * bounds. */
#define HISTORY_DEFAULT_HOURS 24
#define HISTORY_MAX_HOURS 8760
#define HISTORY_DEFAULT_POINTS 10000
#define HISTORY_MIN_POINTS 10
#define HISTORY_MAX_POINTS 1000000
/* How often it samples, and how often models' rates among those samples. */
#define HISTORY_TICK_MS 1000
#define HISTORY_MODEL_EVERY 5
/* The most execs and models it follows at once (more: the rest wait). */
#define HISTORY_MAX_EXECS 256
#define HISTORY_MAX_MODELS 256

typedef struct api_history api_history;

/* Starts the sampler over d's services (d->history_bounds). */
loom_error *api_history_start(api_services *d, api_history **out);
/* Stops it (waits for its tick to end) and frees. NULL is fine. */
void api_history_stop(api_history *h);
/* One tick now, on the caller's thread (tests). */
void api_history_tick(api_history *h);

#endif
