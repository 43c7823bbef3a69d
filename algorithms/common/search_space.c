/*
 * algorithms/common/search_space.c - copying, checking and mapping the
 * typed search space (see search_space.h).
 */
#include "search_space.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Above this a double no longer holds every integer. */
#define EXACT_INT_LIMIT 9007199254740992.0

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static char *copy_string(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int check_range(const loom_param *p, char *err, size_t errlen)
{
    if (!isfinite(p->low) || !isfinite(p->high) || p->low > p->high)
        return fail(err, errlen, "parameter '%s': low %g must be <= high %g",
                    p->name, p->low, p->high);
    if (!(p->step >= 0) || !isfinite(p->step))
        return fail(err, errlen, "parameter '%s': step %g must be >= 0", p->name,
                    p->step);
    if (p->log_base != 0 && !(p->log_base > 1))
        return fail(err, errlen,
                    "parameter '%s': log_base %g must be 0 (linear) or > 1",
                    p->name, p->log_base);
    if (p->type == LOOM_VALUE_INT && p->log_base == 0 &&
        (p->low != floor(p->low) || p->high != floor(p->high) ||
         p->step != floor(p->step)))
        return fail(err, errlen,
                    "parameter '%s': an INT range needs integer low, high and step",
                    p->name);
    if (p->type == LOOM_VALUE_STRING)
        return fail(err, errlen,
                    "parameter '%s': a string parameter must be a choice list",
                    p->name);
    return 0;
}

static int copy_choices(loom_param *dst, const loom_param *src, char *err,
                        size_t errlen)
{
    uint32_t n = src->choice_count;
    if (n == 0)
        return fail(err, errlen, "parameter '%s': the choice list is empty",
                    src->name);
    if (src->type == LOOM_VALUE_DOUBLE && src->choice_doubles) {
        double *d = malloc(n * sizeof *d);
        if (!d)
            return fail(err, errlen, "out of memory");
        memcpy(d, src->choice_doubles, n * sizeof *d);
        dst->choice_doubles = d;
    } else if (src->type == LOOM_VALUE_INT && src->choice_ints) {
        int64_t *v = malloc(n * sizeof *v);
        if (!v)
            return fail(err, errlen, "out of memory");
        memcpy(v, src->choice_ints, n * sizeof *v);
        dst->choice_ints = v;
    } else if (src->type == LOOM_VALUE_STRING && src->choice_strings) {
        char **s = calloc(n, sizeof *s);
        dst->choice_strings = (const char *const *)s;
        if (!s)
            return fail(err, errlen, "out of memory");
        for (uint32_t i = 0; i < n; i++)
            if (!src->choice_strings[i] || !(s[i] = strdup(src->choice_strings[i])))
                return fail(err, errlen, "parameter '%s': choice %u is missing",
                            src->name, i);
    } else {
        return fail(err, errlen,
                    "parameter '%s': the choice array of its type is missing",
                    src->name);
    }
    return 0;
}

static int copy_param(loom_param *dst, const loom_param *src, char *err,
                      size_t errlen)
{
    memset(dst, 0, sizeof *dst);
    if (!src->name || !src->name[0])
        return fail(err, errlen, "a parameter has no name");
    dst->struct_size = sizeof *dst;
    dst->kind = src->kind;
    dst->type = src->type;
    dst->name = copy_string(src->name);
    if (!dst->name)
        return fail(err, errlen, "out of memory");
    dst->low = src->low;
    dst->high = src->high;
    dst->step = src->step;
    dst->log_base = src->log_base;
    dst->choice_count = src->choice_count;
    if (src->type < LOOM_VALUE_DOUBLE || src->type > LOOM_VALUE_STRING)
        return fail(err, errlen, "parameter '%s': type %d is not DOUBLE, INT or STRING",
                    src->name, (int)src->type);
    if (src->kind == LOOM_PARAM_RANGE) {
        dst->choice_count = 0;
        return check_range(src, err, errlen);
    }
    if (src->kind == LOOM_PARAM_CHOICE)
        return copy_choices(dst, src, err, errlen);
    return fail(err, errlen, "parameter '%s': kind %d is not RANGE (1) or CHOICE (2)",
                src->name, (int)src->kind);
}

int search_space_copy(search_space *out, const loom_param *params,
                      uint32_t count, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (count == 0)
        return fail(err, errlen, "the search space is empty: name at least one "
                                 "hyperparameter to search");
    if (!params)
        return fail(err, errlen, "the search space has %u parameters but no array",
                    count);
    out->params = calloc(count, sizeof *out->params);
    if (!out->params)
        return fail(err, errlen, "out of memory");
    out->count = count;
    for (uint32_t i = 0; i < count; i++) {
        if (copy_param(&out->params[i], &params[i], err, errlen) < 0)
            goto failed;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(out->params[j].name, out->params[i].name) == 0) {
                fail(err, errlen, "parameter '%s' appears twice", params[i].name);
                goto failed;
            }
    }
    return 0;
failed:
    search_space_free(out);
    return -1;
}

void search_space_free(search_space *space)
{
    for (uint32_t i = 0; i < space->count; i++) {
        loom_param *p = &space->params[i];
        free((char *)p->name);
        free((double *)p->choice_doubles);
        free((int64_t *)p->choice_ints);
        if (p->choice_strings)
            for (uint32_t j = 0; j < p->choice_count; j++)
                free((char *)p->choice_strings[j]);
        free((char **)p->choice_strings);
    }
    free(space->params);
    memset(space, 0, sizeof *space);
}

static double effective_step(const loom_param *p)
{
    if (p->type == LOOM_VALUE_INT && p->log_base == 0)
        return p->step >= 1 ? p->step : 1;
    return p->step;
}

uint64_t search_param_levels(const loom_param *p)
{
    if (p->kind == LOOM_PARAM_CHOICE)
        return p->choice_count;
    double step = effective_step(p);
    if (!(step > 0))
        return 0;
    /* The slack keeps (0.5 - 0) / 0.1 at 6 levels despite rounding. */
    double q = floor((p->high - p->low) / step + 1e-9);
    if (q >= EXACT_INT_LIMIT)
        q = EXACT_INT_LIMIT;
    return (uint64_t)q + 1;
}

/* low + k * step accumulates binary noise (0.30000000000000004); twelve
 * significant digits give the value the user meant. */
static double tidy(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.12g", v);
    return strtod(buf, NULL);
}

/* The sampled coordinate x (an exponent on a log scale) to the value. */
static void range_value(const loom_param *p, double x, loom_value *out)
{
    double v = p->log_base > 1 ? pow(p->log_base, x) : x;
    if (p->type == LOOM_VALUE_INT) {
        out->i = llround(v);
        out->d = (double)out->i;
    } else {
        out->d = v;
    }
}

void search_param_value(const loom_param *p, double u, loom_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = p->type;
    if (!(u > 0))
        u = 0; /* also NaN */
    if (u >= 1)
        u = nextafter(1.0, 0.0);
    uint64_t levels = search_param_levels(p);
    uint64_t k = 0;
    if (levels) {
        k = (uint64_t)(u * (double)levels);
        if (k >= levels)
            k = levels - 1;
    }
    if (p->kind == LOOM_PARAM_CHOICE) {
        if (p->type == LOOM_VALUE_INT) {
            out->i = p->choice_ints[k];
            out->d = (double)out->i;
        } else if (p->type == LOOM_VALUE_DOUBLE) {
            out->d = p->choice_doubles[k];
        } else {
            out->s = p->choice_strings[k];
        }
        return;
    }
    double x;
    if (levels) {
        x = tidy(p->low + (double)k * effective_step(p));
        if (x > p->high)
            x = p->high;
    } else {
        x = p->low + u * (p->high - p->low);
    }
    range_value(p, x, out);
}

static uint64_t choice_index(const loom_param *p, const loom_value *v, int *found)
{
    *found = 1;
    for (uint32_t k = 0; k < p->choice_count; k++) {
        if (p->type == LOOM_VALUE_INT && p->choice_ints[k] == v->i)
            return k;
        if (p->type == LOOM_VALUE_DOUBLE && p->choice_doubles[k] == v->d)
            return k;
        if (p->type == LOOM_VALUE_STRING && v->s &&
            strcmp(p->choice_strings[k], v->s) == 0)
            return k;
    }
    *found = 0;
    return 0;
}

/* The sampled coordinate of a range value (the exponent on a log scale). */
static double range_coordinate(const loom_param *p, const loom_value *v)
{
    double value = p->type == LOOM_VALUE_INT ? (double)v->i : v->d;
    if (p->log_base > 1)
        return value > 0 ? log(value) / log(p->log_base) : p->low;
    return value;
}

double search_param_unit(const loom_param *p, const loom_value *v)
{
    uint64_t levels = search_param_levels(p);
    if (p->kind == LOOM_PARAM_CHOICE) {
        int found;
        uint64_t k = choice_index(p, v, &found);
        return ((double)k + 0.5) / (double)levels;
    }
    double x = range_coordinate(p, v);
    if (levels) {
        double k = floor((x - p->low) / effective_step(p) + 0.5);
        if (k < 0)
            k = 0;
        if (k > (double)(levels - 1))
            k = (double)(levels - 1);
        return (k + 0.5) / (double)levels;
    }
    if (p->high <= p->low)
        return 0.5;
    double u = (x - p->low) / (p->high - p->low);
    if (!(u > 0))
        u = 0;
    if (u >= 1)
        u = nextafter(1.0, 0.0);
    return u;
}

int search_param_contains(const loom_param *p, const loom_value *v)
{
    if (v->type != p->type)
        return 0;
    if (p->kind == LOOM_PARAM_CHOICE) {
        int found;
        choice_index(p, v, &found);
        return found;
    }
    if (p->type == LOOM_VALUE_DOUBLE && !isfinite(v->d))
        return 0;
    double x = range_coordinate(p, v);
    /* Rounding an INT on a log scale and pow/log round trips move the
     * coordinate by a little; a relative slack absorbs both. */
    double slack = 1e-9 * (1 + fabs(p->high) + fabs(p->low));
    if (p->type == LOOM_VALUE_INT && p->log_base > 1) {
        double lo = pow(p->log_base, p->low), hi = pow(p->log_base, p->high);
        return (double)v->i >= floor(lo) && (double)v->i <= ceil(hi);
    }
    return x >= p->low - slack && x <= p->high + slack;
}

void search_space_values(const search_space *space, const double *u,
                         loom_value *out)
{
    for (uint32_t i = 0; i < space->count; i++)
        search_param_value(&space->params[i], u[i], &out[i]);
}

cJSON *search_value_to_json(const loom_param *p, const loom_value *v)
{
    (void)p;
    if (v->type == LOOM_VALUE_STRING)
        return cJSON_CreateString(v->s ? v->s : "");
    if (v->type == LOOM_VALUE_INT)
        return cJSON_CreateNumber((double)v->i);
    return cJSON_CreateNumber(v->d);
}

int search_value_from_json(const loom_param *p, const cJSON *item,
                           loom_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = p->type;
    if (p->type == LOOM_VALUE_STRING) {
        if (!cJSON_IsString(item) || p->kind != LOOM_PARAM_CHOICE)
            return -1;
        for (uint32_t k = 0; k < p->choice_count; k++)
            if (strcmp(p->choice_strings[k], item->valuestring) == 0) {
                out->s = p->choice_strings[k];
                return 0;
            }
        return -1;
    }
    if (!cJSON_IsNumber(item))
        return -1;
    if (p->type == LOOM_VALUE_INT) {
        double d = item->valuedouble;
        if (d != floor(d) || fabs(d) > EXACT_INT_LIMIT)
            return -1;
        out->i = (int64_t)d;
        out->d = d;
    } else {
        out->d = item->valuedouble;
    }
    return search_param_contains(p, out) ? 0 : -1;
}

const char *search_values_text(const search_space *space, const loom_value *v,
                               char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < space->count && used < len; i++) {
        const char *sep = i ? ", " : "";
        int n;
        if (v[i].type == LOOM_VALUE_STRING)
            n = snprintf(buf + used, len - used, "%s%s=%s", sep,
                         space->params[i].name, v[i].s ? v[i].s : "");
        else if (v[i].type == LOOM_VALUE_INT)
            n = snprintf(buf + used, len - used, "%s%s=%lld", sep,
                         space->params[i].name, (long long)v[i].i);
        else
            n = snprintf(buf + used, len - used, "%s%s=%g", sep,
                         space->params[i].name, v[i].d);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

int search_space_propose(const search_space *space, const double *u, loom_value *values,
                         const loom_proposal_sink *sink, const loom_host *host)
{
    search_space_values(space, u, values);
    char text[512];
    /* ABI 1.5's propose_experiment says why; a sink without it, 0 = refused. */
    if (LOOM_STRUCT_HAS(sink, loom_proposal_sink, propose_experiment) && sink->propose_experiment) {
        uint64_t id = 0;
        loom_error *refused = sink->propose_experiment(sink, values, space->count, 0, &id);
        if (!refused)
            return 1;
        host->log(host, LOOM_LOG_WARN, "the host refused proposal %s: %s",
                  search_values_text(space, values, text, sizeof text),
                  host->error_message(refused));
        host->error_free(refused);
        return 0;
    }
    if (sink->propose(sink, values, space->count, 0) != 0)
        return 1;
    host->log(host, LOOM_LOG_WARN, "the host refused proposal %s",
              search_values_text(space, values, text, sizeof text));
    return 0;
}
