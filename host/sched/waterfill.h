/*
 * sched/waterfill.h - weighted water-filling with bounds, in whole devices.
 *
 * Divides `total` devices between items so that each gets
 * clamp(weight * level, lo, hi) for one common level, then rounds to whole
 * devices by largest remainder. It is the one division rule of the
 * scheduler: between plans (by share weight) and between a plan's jobs
 * (weight 1). O(n log n): the level is found by sorting the 2n points where
 * an item starts or stops growing, not by handing out devices one at a time.
 */
#ifndef LOOM_SCHED_WATERFILL_H
#define LOOM_SCHED_WATERFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wf_item {
    double weight;      /* > 0 */
    int64_t lo, hi;     /* 0 <= lo <= hi */
    int64_t current;    /* rounding ties: who holds more keeps more ... */
    uint64_t seq;       /* ... then the older (smaller seq) first */
    int64_t out;        /* the result */
} wf_item;

/* Scratch buffers reused between calls so a fill does not allocate. */
typedef struct wf_ctx {
    void *events;
    size_t events_cap;
    void *keys;
    size_t keys_cap;
    wf_item *copy;
    size_t copy_cap;
} wf_ctx;

/* Sets every item's `out`. When total >= sum(hi) everyone gets hi. When
 * total < sum(lo) (only after an inconsistent restore or a shrunken
 * inventory) the lower bounds are scaled down in proportion. Otherwise
 * lo <= out <= hi and sum(out) == total. Returns false when out of memory
 * (then `out` is lo for every item). */
bool wf_fill(wf_ctx *ctx, wf_item *items, size_t n, int64_t total);
void wf_ctx_free(wf_ctx *ctx);

#endif
