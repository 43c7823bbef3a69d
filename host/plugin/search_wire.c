/* plugin/search_wire.c - see search_wire.h. */
#include "plugin/search_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/num_text.h"

#define MAX_PARAMS 1024u
#define MAX_CHOICES 65536u
#define MAX_OPTIONS 1024u
#define MAX_EXPERIMENTS 100000u
#define MAX_ITEMS 100000u

static const char *type_name(int32_t t)
{
    return t == LOOM_VALUE_DOUBLE ? "DOUBLE" : t == LOOM_VALUE_INT ? "INT" : "STR";
}

loom_error *search_value_fits(const loom_param *p, const loom_value *v)
{
    char a[NUM_TEXT_MAX], b[NUM_TEXT_MAX], c[NUM_TEXT_MAX];
    if (v->type != p->type)
        return loom_err(LOOM_E_INVALID, "'%s': a value of type %d for a %s parameter", p->name,
                        (int)v->type, type_name(p->type));
    if (p->kind == LOOM_PARAM_CHOICE) {
        for (uint32_t c = 0; c < p->choice_count; c++) {
            if ((p->type == LOOM_VALUE_DOUBLE && p->choice_doubles[c] == v->d) ||
                (p->type == LOOM_VALUE_INT && p->choice_ints[c] == v->i) ||
                (p->type == LOOM_VALUE_STRING && v->s && !strcmp(p->choice_strings[c], v->s)))
                return NULL;
        }
        if (p->type == LOOM_VALUE_STRING)
            return loom_err(LOOM_E_INVALID, "'%s': \"%.64s\" is not one of its %u values",
                            p->name, v->s ? v->s : "(null)", p->choice_count);
        return loom_err(LOOM_E_INVALID, "'%s': %s is not one of its %u values", p->name,
                        num_text_double(p->type == LOOM_VALUE_INT ? (double)v->i : v->d, a, sizeof a),
                        p->choice_count);
    }
    double x = p->type == LOOM_VALUE_INT ? (double)v->i : v->d;
    double lo = p->log_base > 1 ? pow(p->log_base, p->low) : p->low;
    double hi = p->log_base > 1 ? pow(p->log_base, p->high) : p->high;
    if (p->type == LOOM_VALUE_INT && p->log_base > 1)
        lo = ceil(lo - 1e-9), hi = floor(hi + 1e-9);
    double slack = 1e-9 * (fabs(lo) + fabs(hi));
    if (!isfinite(x) || x < lo - slack || x > hi + slack)
        return loom_err(LOOM_E_INVALID, "'%s': %s is outside [%s, %s]", p->name,
                        num_text_double(x, a, sizeof a), num_text_double(lo, b, sizeof b),
                        num_text_double(hi, c, sizeof c));
    return NULL;
}

/* ---- config -------------------------------------------------------------- */

static void put_param(wire_buf *b, const loom_param *p)
{
    wire_put_i32(b, p->kind);
    wire_put_i32(b, p->type);
    wire_put_str(b, p->name);
    wire_put_f64(b, p->low);
    wire_put_f64(b, p->high);
    wire_put_f64(b, p->step);
    wire_put_f64(b, p->log_base);
    wire_put_u32(b, p->choice_count);
    for (uint32_t c = 0; c < p->choice_count; c++) {
        if (p->type == LOOM_VALUE_DOUBLE)
            wire_put_f64(b, p->choice_doubles[c]);
        else if (p->type == LOOM_VALUE_INT)
            wire_put_u64(b, (uint64_t)p->choice_ints[c]);
        else
            wire_put_str(b, p->choice_strings[c]);
    }
}

void search_wire_put_config(wire_buf *b, const loom_search_config *cfg)
{
    wire_put_i32(b, cfg->maximize);
    wire_put_u32(b, cfg->max_experiments);
    wire_put_u32(b, cfg->max_parallel);
    wire_put_u64(b, cfg->seed);
    wire_put_str(b, cfg->objective_metric);
    wire_put_u32(b, cfg->param_count);
    for (uint32_t i = 0; i < cfg->param_count; i++)
        put_param(b, &cfg->params[i]);
    wire_put_u32(b, cfg->option_count);
    for (uint32_t i = 0; i < cfg->option_count; i++) {
        wire_put_str(b, cfg->options[i].name);
        wire_put_str(b, cfg->options[i].value);
    }
    wire_put_u32(b, cfg->experiment_count);
    for (uint32_t i = 0; i < cfg->experiment_count; i++)
        search_wire_put_values(b, cfg->experiments[i], cfg->param_count);
}

static char *dup_str(const char *s) { return strdup(s ? s : ""); }

static int get_param(wire_reader *r, loom_param *p)
{
    p->struct_size = sizeof *p;
    p->kind = wire_get_i32(r);
    p->type = wire_get_i32(r);
    p->name = dup_str(wire_get_str(r));
    p->low = wire_get_f64(r);
    p->high = wire_get_f64(r);
    p->step = wire_get_f64(r);
    p->log_base = wire_get_f64(r);
    uint32_t n = wire_get_u32(r);
    if (r->bad || n > MAX_CHOICES || !p->name)
        return -1;
    p->choice_count = n;
    if (n == 0)
        return 0;
    if (p->type == LOOM_VALUE_DOUBLE) {
        double *d = calloc(n, sizeof *d);
        p->choice_doubles = d;
        for (uint32_t c = 0; d && c < n; c++)
            d[c] = wire_get_f64(r);
    } else if (p->type == LOOM_VALUE_INT) {
        int64_t *v = calloc(n, sizeof *v);
        p->choice_ints = v;
        for (uint32_t c = 0; v && c < n; c++)
            v[c] = (int64_t)wire_get_u64(r);
    } else {
        char **s = calloc(n, sizeof *s);
        p->choice_strings = (const char *const *)s;
        for (uint32_t c = 0; s && c < n; c++)
            if (!(s[c] = dup_str(wire_get_str(r))))
                return -1;
    }
    return r->bad || (!p->choice_doubles && !p->choice_ints && !p->choice_strings) ? -1 : 0;
}

int search_wire_get_config(wire_reader *r, search_config_copy *out)
{
    memset(out, 0, sizeof *out);
    loom_search_config *c = &out->cfg;
    c->struct_size = sizeof *c;
    c->maximize = wire_get_i32(r);
    c->max_experiments = wire_get_u32(r);
    c->max_parallel = wire_get_u32(r);
    c->seed = wire_get_u64(r);
    c->objective_metric = out->objective_metric = dup_str(wire_get_str(r));
    uint32_t n = wire_get_u32(r);
    if (r->bad || n > MAX_PARAMS || !out->objective_metric)
        return -1;
    c->params = out->params = calloc(n ? n : 1, sizeof *out->params);
    if (!out->params)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        c->param_count = i + 1;
        if (get_param(r, &out->params[i]) != 0)
            return -1;
    }
    n = wire_get_u32(r);
    if (r->bad || n > MAX_OPTIONS)
        return -1;
    c->options = out->options = calloc(n ? n : 1, sizeof *out->options);
    if (!out->options)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        c->option_count = i + 1;
        out->options[i].name = dup_str(wire_get_str(r));
        out->options[i].value = dup_str(wire_get_str(r));
        if (!out->options[i].name || !out->options[i].value)
            return -1;
    }
    n = wire_get_u32(r);
    if (r->bad || n > MAX_EXPERIMENTS)
        return -1;
    out->experiments = calloc(n ? n : 1, sizeof *out->experiments);
    c->experiments = (const loom_value *const *)out->experiments;
    if (!out->experiments)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        c->experiment_count = i + 1;
        if (!(out->experiments[i] = calloc(c->param_count ? c->param_count : 1, sizeof(loom_value))))
            return -1;
        search_wire_get_values(r, out->experiments[i], c->param_count, 1);
        if (r->bad)
            return -1;
    }
    return r->bad ? -1 : 0;
}

static void free_values(loom_value *v, uint32_t n)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < n; i++)
        free((char *)v[i].s);
    free(v);
}

void search_config_copy_free(search_config_copy *c)
{
    const loom_search_config *cfg = &c->cfg;
    for (uint32_t i = 0; c->params && i < cfg->param_count; i++) {
        loom_param *p = &c->params[i];
        free((char *)p->name);
        free((double *)p->choice_doubles);
        free((int64_t *)p->choice_ints);
        for (uint32_t k = 0; p->choice_strings && k < p->choice_count; k++)
            free((char *)p->choice_strings[k]);
        free((char **)p->choice_strings);
    }
    for (uint32_t i = 0; c->options && i < cfg->option_count; i++) {
        free((char *)c->options[i].name);
        free((char *)c->options[i].value);
    }
    for (uint32_t i = 0; c->experiments && i < cfg->experiment_count; i++)
        free_values(c->experiments[i], cfg->param_count);
    free(c->params);
    free(c->options);
    free(c->experiments);
    free(c->objective_metric);
    memset(c, 0, sizeof *c);
}

/* ---- values, observations, outcomes --------------------------------------- */

void search_wire_put_values(wire_buf *b, const loom_value *v, uint32_t n)
{
    wire_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        wire_put_i32(b, v[i].type);
        wire_put_f64(b, v[i].d);
        wire_put_u64(b, (uint64_t)v[i].i);
        wire_put_str(b, v[i].type == LOOM_VALUE_STRING ? v[i].s : NULL);
    }
}

void search_wire_get_values(wire_reader *r, loom_value *out, uint32_t n, int dup)
{
    if (wire_get_u32(r) != n) {
        r->bad = 1;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i].type = wire_get_i32(r);
        out[i].reserved = 0;
        out[i].d = wire_get_f64(r);
        out[i].i = (int64_t)wire_get_u64(r);
        const char *s = wire_get_str(r);
        out[i].s = s && dup ? strdup(s) : s;
    }
}

void search_wire_put_observation(wire_buf *b, const loom_observation *o)
{
    wire_put_i32(b, o->status);
    wire_put_u64(b, o->experiment_id);
    wire_put_i32(b, o->has_objective);
    wire_put_f64(b, o->objective);
    wire_put_f64(b, o->budget);
    search_wire_put_values(b, o->values, o->value_count);
    wire_put_u32(b, o->metric_count);
    for (uint32_t i = 0; i < o->metric_count; i++) {
        wire_put_str(b, o->metrics[i].name);
        wire_put_f64(b, o->metrics[i].value);
    }
}

void search_wire_put_outcome(wire_buf *b, const search_outcome *o, uint32_t param_count)
{
    wire_put_u32(b, o->nproposals);
    for (uint32_t i = 0; i < o->nproposals; i++) {
        wire_put_u64(b, o->proposals[i].id);
        wire_put_f64(b, o->proposals[i].budget);
        search_wire_put_values(b, o->proposals[i].values, param_count);
    }
    wire_put_u32(b, o->nstops);
    for (uint32_t i = 0; i < o->nstops; i++)
        wire_put_u64(b, o->stops[i]);
    wire_put_u8(b, (uint8_t)(o->finished != 0));
    wire_put_str(b, o->refused);
}

int search_wire_get_outcome(wire_reader *r, uint32_t param_count, search_outcome *out)
{
    memset(out, 0, sizeof *out);
    uint32_t n = wire_get_u32(r);
    if (r->bad || n > MAX_ITEMS)
        return -1;
    out->proposals = calloc(n ? n : 1, sizeof *out->proposals);
    if (!out->proposals)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        search_proposal *p = &out->proposals[out->nproposals++];
        p->id = wire_get_u64(r);
        p->budget = wire_get_f64(r);
        if (!(p->values = calloc(param_count ? param_count : 1, sizeof *p->values)))
            return -1;
        search_wire_get_values(r, p->values, param_count, 1);
        if (r->bad)
            return -1;
    }
    n = wire_get_u32(r);
    if (r->bad || n > MAX_ITEMS)
        return -1;
    out->stops = calloc(n ? n : 1, sizeof *out->stops);
    if (!out->stops)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        out->stops[out->nstops++] = wire_get_u64(r);
    out->finished = wire_get_u8(r);
    const char *refused = wire_get_str(r);
    snprintf(out->refused, sizeof out->refused, "%s", refused ? refused : "");
    return r->bad ? -1 : 0;
}

void search_outcome_free(search_outcome *o, uint32_t param_count)
{
    for (uint32_t i = 0; o->proposals && i < o->nproposals; i++)
        free_values(o->proposals[i].values, param_count);
    free(o->proposals);
    free(o->stops);
    memset(o, 0, sizeof *o);
}
