/* sched/waterfill.c - see waterfill.h. */
#include "sched/waterfill.h"

#include <math.h>
#include <stdlib.h>

/* A point on the level axis where an item starts (+weight) or stops
 * (-weight) growing. */
typedef struct wf_event {
    double level;
    double dweight;
} wf_event;

/* Rounding order: a larger quantised remainder first, then the item that
 * holds more now (so rounding does not move devices back and forth), then
 * the older item. */
typedef struct wf_key {
    int64_t frac;
    int64_t current;
    uint64_t seq;
    size_t index;
} wf_key;

static bool grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (*cap >= need)
        return true;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*buf, n * elem);
    if (!p)
        return false;
    *buf = p;
    *cap = n;
    return true;
}

static int event_cmp(const void *a, const void *b)
{
    double x = ((const wf_event *)a)->level, y = ((const wf_event *)b)->level;
    return (x > y) - (x < y);
}

/* Descending frac, descending current, ascending seq. */
static int key_cmp_take(const void *a, const void *b)
{
    const wf_key *x = a, *y = b;
    if (x->frac != y->frac)
        return x->frac > y->frac ? -1 : 1;
    if (x->current != y->current)
        return x->current > y->current ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The exact reverse: whom to take a device back from first. */
static int key_cmp_give_back(const void *a, const void *b)
{
    return key_cmp_take(b, a);
}

static int64_t quantised_fraction(double x)
{
    double frac = x - floor(x);
    if (frac < 0)
        frac = 0;
    /* Quantised so remainders equal up to rounding noise tie exactly and
     * the tie-breaks decide. */
    return (int64_t)llround(frac * 1048576.0);
}

static bool fill_core(wf_ctx *ctx, wf_item *items, size_t n, int64_t total)
{
    int64_t sum_lo = 0;
    size_t growing = 0;
    for (size_t i = 0; i < n; i++) {
        sum_lo += items[i].lo;
        if (items[i].hi > items[i].lo)
            growing++;
    }
    if (!grow(&ctx->events, &ctx->events_cap, 2 * growing, sizeof(wf_event)) ||
        !grow(&ctx->keys, &ctx->keys_cap, n, sizeof(wf_key)))
        return false;

    wf_event *ev = ctx->events;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].hi <= items[i].lo)
            continue;
        ev[m++] = (wf_event){(double)items[i].lo / items[i].weight, items[i].weight};
        ev[m++] = (wf_event){(double)items[i].hi / items[i].weight, -items[i].weight};
    }
    qsort(ev, m, sizeof *ev, event_cmp);

    /* Sweep the piecewise-linear f(level) = sum clamp(w*level, lo, hi) up
     * to the level where it reaches `total`. */
    double f = (double)sum_lo, slope = 0, level = 0, target = (double)total;
    double found = INFINITY;
    for (size_t k = 0; k < m; k++) {
        if (slope > 0) {
            double fe = f + slope * (ev[k].level - level);
            if (fe >= target) {
                found = level + (target - f) / slope;
                break;
            }
            f = fe;
        }
        level = ev[k].level;
        slope += ev[k].dweight;
    }

    int64_t sum = 0;
    wf_key *keys = ctx->keys;
    for (size_t i = 0; i < n; i++) {
        double x = items[i].weight * found;
        if (!(x < (double)items[i].hi))
            x = (double)items[i].hi;
        if (x < (double)items[i].lo)
            x = (double)items[i].lo;
        int64_t whole = (int64_t)floor(x + 1e-9);
        if (whole < items[i].lo)
            whole = items[i].lo;
        if (whole > items[i].hi)
            whole = items[i].hi;
        items[i].out = whole;
        keys[i] = (wf_key){quantised_fraction(x + 1e-9), items[i].current,
                           items[i].seq, i};
        sum += whole;
    }

    /* Largest remainder; several passes only if rounding noise left more
     * than one device per item to place (it cannot, but stay safe). */
    int64_t remaining = total - sum;
    if (remaining != 0) {
        qsort(keys, n, sizeof *keys, remaining > 0 ? key_cmp_take : key_cmp_give_back);
        while (remaining != 0) {
            bool moved = false;
            for (size_t k = 0; k < n && remaining != 0; k++) {
                wf_item *it = &items[keys[k].index];
                if (remaining > 0 && it->out < it->hi) {
                    it->out++;
                    remaining--;
                    moved = true;
                } else if (remaining < 0 && it->out > it->lo) {
                    it->out--;
                    remaining++;
                    moved = true;
                }
            }
            if (!moved)
                break;
        }
    }
    return true;
}

bool wf_fill(wf_ctx *ctx, wf_item *items, size_t n, int64_t total)
{
    int64_t sum_lo = 0, sum_hi = 0;
    for (size_t i = 0; i < n; i++) {
        sum_lo += items[i].lo;
        sum_hi += items[i].hi;
    }
    if (total >= sum_hi) {
        for (size_t i = 0; i < n; i++)
            items[i].out = items[i].hi;
        return true;
    }
    if (total > sum_lo) {
        if (fill_core(ctx, items, n, total))
            return true;
        for (size_t i = 0; i < n; i++)
            items[i].out = items[i].lo;
        return false;
    }
    if (total == sum_lo) {
        for (size_t i = 0; i < n; i++)
            items[i].out = items[i].lo;
        return true;
    }

    /* The lower bounds do not fit: scale them in proportion, by filling
     * [0, lo] with weight lo. */
    if (!grow((void **)&ctx->copy, &ctx->copy_cap, n, sizeof(wf_item)))
        return false;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (items[i].lo == 0) {
            items[i].out = 0;
            continue;
        }
        ctx->copy[m] = items[i];
        ctx->copy[m].weight = (double)items[i].lo;
        ctx->copy[m].hi = items[i].lo;
        ctx->copy[m].lo = 0;
        m++;
    }
    bool ok = total <= 0 ? true : fill_core(ctx, ctx->copy, m, total);
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].lo != 0)
            items[i].out = total <= 0 || !ok ? 0 : ctx->copy[m++].out;
    return ok;
}

void wf_ctx_free(wf_ctx *ctx)
{
    free(ctx->events);
    free(ctx->keys);
    free(ctx->copy);
    *ctx = (wf_ctx){0};
}
