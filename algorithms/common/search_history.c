/*
 * algorithms/common/search_history.c - observed experiments as points of
 * the unit cube (see search_history.h).
 */
#include "search_history.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void search_history_init(search_history *h, uint32_t dim)
{
    memset(h, 0, sizeof *h);
    h->dim = dim;
}

void search_history_free(search_history *h)
{
    free(h->points);
    free(h->coords);
    uint32_t dim = h->dim;
    memset(h, 0, sizeof *h);
    h->dim = dim;
}

static int grow(search_history *h)
{
    if (h->count < h->capacity)
        return 0;
    uint32_t cap = h->capacity ? 2 * h->capacity : 64;
    search_point *points = realloc(h->points, cap * sizeof *points);
    if (!points)
        return -1;
    h->points = points;
    double *coords = realloc(h->coords, (size_t)cap * (h->dim ? h->dim : 1) * sizeof *coords);
    if (!coords)
        return -1;
    h->coords = coords;
    h->capacity = cap;
    return 0;
}

int64_t search_history_add_u(search_history *h, const search_point *point,
                             const double *u)
{
    uint32_t at = h->count;
    for (uint32_t i = 0; i < h->count; i++)
        if (h->points[i].id == point->id) {
            at = i;
            break;
        }
    if (at == h->count) {
        if (grow(h) < 0)
            return -1;
        h->count++;
    }
    h->points[at] = *point;
    memcpy(h->coords + (uint64_t)at * h->dim, u, h->dim * sizeof *u);
    return at;
}

int64_t search_history_add(search_history *h, const search_space *space,
                           const loom_observation *obs)
{
    search_point point = {
        .id = obs->experiment_id,
        .status = obs->status,
        .has_value = obs->status == LOOM_EXPERIMENT_FINISHED &&
                     obs->has_objective && isfinite(obs->objective),
        .budget = obs->budget,
    };
    point.value = point.has_value ? obs->objective : 0;
    double stack_u[64] = {0};
    double *u = h->dim <= 64 ? stack_u : malloc(h->dim * sizeof *u);
    if (!u)
        return -1;
    for (uint32_t i = 0; i < h->dim; i++)
        u[i] = obs->values && i < obs->value_count
                   ? search_param_unit(&space->params[i], &obs->values[i]) : 0.5;
    int64_t at = search_history_add_u(h, &point, u);
    if (u != stack_u)
        free(u);
    return at;
}

int64_t search_history_best(const search_history *h, int maximize)
{
    int64_t best = -1;
    for (uint32_t i = 0; i < h->count; i++) {
        const search_point *p = &h->points[i];
        if (!p->has_value)
            continue;
        if (best < 0 || search_loss(p->value, maximize) <
                            search_loss(h->points[best].value, maximize))
            best = i;
    }
    return best;
}

uint32_t search_history_scored(const search_history *h)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < h->count; i++)
        n += h->points[i].has_value != 0;
    return n;
}

/* Appends printf-style text to a growing buffer; -1 when out of memory. */
static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return 0;
        }
        size_t grown = 2 * *cap + (size_t)n;
        char *more = realloc(*buf, grown);
        if (!more)
            return -1;
        *buf = more;
        *cap = grown;
    }
}

/* The list is printed directly (%.17g round-trips a double) and handed to
 * cJSON as a raw item: building and printing a cJSON tree of 10,000
 * numbers made saving a 1,000-trial history cost milliseconds more. */
cJSON *search_history_to_json(const search_history *h)
{
    size_t len = 0, cap = 64 + (size_t)h->count * (96 + 24 * h->dim);
    char *buf = malloc(cap);
    int ok = buf && append(&buf, &len, &cap, "[") == 0;
    for (uint32_t i = 0; ok && i < h->count; i++) {
        const search_point *p = &h->points[i];
        const double *u = search_history_u(h, i);
        ok = append(&buf, &len, &cap, "%s{\"id\":%llu,\"status\":%d,\"value\":", i ? "," : "",
                    (unsigned long long)p->id, (int)p->status) == 0 &&
             (p->has_value ? append(&buf, &len, &cap, "%.17g", p->value)
                           : append(&buf, &len, &cap, "null")) == 0 &&
             append(&buf, &len, &cap, ",\"budget\":%.17g,\"u\":[",
                    isfinite(p->budget) ? p->budget : 0) == 0;
        for (uint32_t d = 0; ok && d < h->dim; d++)
            ok = append(&buf, &len, &cap, d ? ",%.17g" : "%.17g", u[d]) == 0;
        ok = ok && append(&buf, &len, &cap, "]}") == 0;
    }
    ok = ok && append(&buf, &len, &cap, "]") == 0;
    cJSON *raw = ok ? cJSON_CreateRaw(buf) : NULL;
    free(buf);
    return raw;
}

int search_history_from_json(search_history *h, const cJSON *array)
{
    if (!cJSON_IsArray(array))
        return -1;
    search_history fresh;
    search_history_init(&fresh, h->dim);
    const cJSON *item;
    double stack_u[64];
    double *u = h->dim <= 64 ? stack_u : malloc(h->dim * sizeof *u);
    if (!u)
        return -1;
    cJSON_ArrayForEach(item, array) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(item, "status");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, "value");
        const cJSON *budget = cJSON_GetObjectItemCaseSensitive(item, "budget");
        const cJSON *coords = cJSON_GetObjectItemCaseSensitive(item, "u");
        if (!cJSON_IsNumber(id) || !cJSON_IsNumber(status) ||
            !(cJSON_IsNumber(value) || cJSON_IsNull(value)) ||
            !cJSON_IsArray(coords) || cJSON_GetArraySize(coords) != (int)h->dim)
            goto bad;
        search_point p = {
            .id = (uint64_t)id->valuedouble,
            .status = (int32_t)status->valuedouble,
            .has_value = cJSON_IsNumber(value),
            .value = cJSON_IsNumber(value) ? value->valuedouble : 0,
            .budget = cJSON_IsNumber(budget) ? budget->valuedouble : 0,
        };
        uint32_t k = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, coords) {
            if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 1)
                goto bad;
            u[k++] = c->valuedouble;
        }
        if (search_history_add_u(&fresh, &p, u) < 0)
            goto bad;
    }
    if (u != stack_u)
        free(u);
    search_history_free(h);
    *h = fresh;
    return 0;
bad:
    if (u != stack_u)
        free(u);
    search_history_free(&fresh);
    return -1;
}
