/*
 * tests/unit/search/search_driver.h - drives a search plugin (.so) through
 * the real loader path (dlopen, loom_module_entry, init with the host
 * table) and its "loom.search/2" vtable: a recording proposal sink that
 * checks every value against the space independently of the plugins'
 * own mapping, and helpers to observe results and run a tuning loop.
 */
#ifndef LOOM_TEST_SEARCH_DRIVER_H
#define LOOM_TEST_SEARCH_DRIVER_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "util/error.h"
#include "../builtins/builtin_plugin.h"

typedef struct recorded {
    uint64_t id;
    double budget;
    loom_value *values; /* dim values; strings copied */
} recorded;

typedef struct recorder {
    loom_proposal_sink sink;
    const loom_param *params;
    uint32_t dim;
    recorded *items;
    uint32_t count, cap;
    uint32_t finished;    /* finish() calls */
    uint32_t refuse_next; /* refuse this many proposals */
    uint32_t refused_with_reason; /* of those, through propose_experiment */
    uint32_t outside;     /* proposals with a value outside the space */
    uint64_t next_id;
    uint64_t stopped[1024];
    uint32_t stop_count;
} recorder;

/* 1 when v is a value of p: its type, inside the bounds, on a step. */
static inline int value_in_space(const loom_param *p, const loom_value *v)
{
    if (v->type != p->type)
        return 0;
    if (p->kind == LOOM_PARAM_CHOICE) {
        for (uint32_t k = 0; k < p->choice_count; k++)
            if ((p->type == LOOM_VALUE_INT && p->choice_ints[k] == v->i) ||
                (p->type == LOOM_VALUE_DOUBLE && p->choice_doubles[k] == v->d) ||
                (p->type == LOOM_VALUE_STRING && v->s && !strcmp(p->choice_strings[k], v->s)))
                return 1;
        return 0;
    }
    double value = p->type == LOOM_VALUE_INT ? (double)v->i : v->d;
    if (!isfinite(value))
        return 0;
    if (p->log_base > 1) {
        double lo = pow(p->log_base, p->low), hi = pow(p->log_base, p->high);
        if (p->type == LOOM_VALUE_INT)
            return value >= floor(lo) && value <= ceil(hi);
        double x = log(value) / log(p->log_base);
        if (x < p->low - 1e-9 || x > p->high + 1e-9)
            return 0;
        if (p->step > 0) {
            double k = (x - p->low) / p->step;
            return fabs(k - round(k)) < 1e-6;
        }
        return 1;
    }
    if (value < p->low - 1e-12 || value > p->high + 1e-12)
        return 0;
    double step = p->step;
    if (p->type == LOOM_VALUE_INT && step < 1)
        step = 1;
    if (step > 0) {
        double k = (value - p->low) / step;
        return fabs(k - round(k)) < 1e-6;
    }
    return 1;
}

static inline uint64_t recorder_propose(const loom_proposal_sink *sink, const loom_value *values,
                                 uint32_t count, double budget)
{
    recorder *r = sink->host_data;
    if (r->refuse_next) {
        r->refuse_next--;
        return 0;
    }
    if (count != r->dim) {
        r->outside++;
        return 0;
    }
    for (uint32_t i = 0; i < count; i++)
        if (!value_in_space(&r->params[i], &values[i])) {
            r->outside++;
            return 0;
        }
    if (r->count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->items = realloc(r->items, r->cap * sizeof *r->items);
    }
    recorded *item = &r->items[r->count++];
    item->id = ++r->next_id;
    item->budget = budget;
    item->values = calloc(count ? count : 1, sizeof *item->values);
    for (uint32_t i = 0; i < count; i++) {
        item->values[i] = values[i];
        if (values[i].type == LOOM_VALUE_STRING)
            item->values[i].s = strdup(values[i].s);
    }
    return item->id;
}

static inline int32_t recorder_stop(const loom_proposal_sink *sink, uint64_t id)
{
    recorder *r = sink->host_data;
    if (r->stop_count < 1024)
        r->stopped[r->stop_count++] = id;
    return 0;
}

static inline void recorder_finish(const loom_proposal_sink *sink)
{
    ((recorder *)sink->host_data)->finished++;
}

/* ABI 1.5's form of propose, over recorder_propose: a refusal is an error
 * (the host's own errors: the plugins run in this process). A test sets it
 * on a recorder to take the algorithms through that path. */
static inline loom_error *recorder_propose_experiment(const loom_proposal_sink *sink,
                                                      const loom_value *values, uint32_t count,
                                                      double budget, uint64_t *id)
{
    recorder *r = sink->host_data;
    r->refused_with_reason += r->refuse_next > 0;
    *id = recorder_propose(sink, values, count, budget);
    return *id ? NULL : loom_err(LOOM_E_INVALID, "refused by the test's recorder");
}

static inline void recorder_init(recorder *r, const loom_param *params, uint32_t dim)
{
    memset(r, 0, sizeof *r);
    r->sink.struct_size = sizeof r->sink;
    r->sink.host_data = r;
    r->sink.propose = recorder_propose;
    r->sink.stop = recorder_stop;
    r->sink.finish = recorder_finish;
    r->params = params;
    r->dim = dim;
}

static inline void recorder_free(recorder *r)
{
    for (uint32_t i = 0; i < r->count; i++) {
        for (uint32_t j = 0; j < r->dim; j++)
            if (r->items[i].values[j].type == LOOM_VALUE_STRING)
                free((char *)r->items[i].values[j].s);
        free(r->items[i].values);
    }
    free(r->items);
    r->items = NULL;
    r->count = r->cap = 0;
}

static inline recorded *recorder_find(recorder *r, uint64_t id)
{
    for (uint32_t i = 0; i < r->count; i++)
        if (r->items[i].id == id)
            return &r->items[i];
    return NULL;
}

/* Two recorded proposals carry the same values. */
static inline int same_values(const recorded *a, const recorded *b, uint32_t dim)
{
    for (uint32_t j = 0; j < dim; j++) {
        const loom_value *x = &a->values[j], *y = &b->values[j];
        if (x->type != y->type || x->i != y->i || x->d != y->d ||
            (x->type == LOOM_VALUE_STRING && strcmp(x->s, y->s) != 0))
            return 0;
    }
    return a->budget == b->budget;
}

typedef struct search_setup {
    const loom_param *params;
    uint32_t dim;
    const loom_search_option *options;
    uint32_t option_count;
    uint64_t seed;
    uint32_t max_experiments;
    int maximize;
    uint32_t experiment_count;
    const loom_value *const *experiments;
} search_setup;

static inline loom_search_instance *search_create(const loom_search_factory *f, const search_setup *s,
                                           loom_error **err_out)
{
    loom_search_config c = {
        .struct_size = sizeof c, .maximize = s->maximize, .max_experiments = s->max_experiments,
        .max_parallel = 4, .seed = s->seed, .objective_metric = "loss",
        .param_count = s->dim, .params = s->params,
        .option_count = s->option_count, .options = s->options,
        .experiment_count = s->experiment_count, .experiments = s->experiments};
    loom_search_instance *inst = NULL;
    loom_error *err = f->create(f, &c, &inst);
    if (err_out)
        *err_out = err;
    else {
        CHECK_MSG(err == NULL, "create: %s", loom_err_message(err));
        loom_err_free(err);
    }
    return inst;
}

static inline void search_suggest(const loom_search_factory *f, loom_search_instance *inst,
                           uint32_t max, recorder *r)
{
    loom_error *err = f->suggest(inst, max, &r->sink);
    CHECK_MSG(err == NULL, "suggest: %s", loom_err_message(err));
    loom_err_free(err);
}

/* Reports a recorded proposal back with `objective` (NAN: none). */
static inline void search_observe(const loom_search_factory *f, loom_search_instance *inst,
                           recorder *r, const recorded *item, int32_t status, double objective)
{
    loom_metric metric = {"loss", objective};
    loom_observation obs = {
        .struct_size = sizeof obs, .status = status, .experiment_id = item->id,
        .has_objective = !isnan(objective), .objective = isnan(objective) ? 0 : objective,
        .budget = item->budget, .value_count = r->dim, .values = item->values,
        .metric_count = isnan(objective) ? 0 : 1, .metrics = &metric};
    loom_error *err = f->observe(inst, &obs, &r->sink);
    CHECK_MSG(err == NULL, "observe: %s", loom_err_message(err));
    loom_err_free(err);
}

/* A continuous parameter named `name` over [low, high]. */
static inline loom_param range_param(const char *name, double low, double high)
{
    loom_param p = {.struct_size = sizeof p, .kind = LOOM_PARAM_RANGE,
                    .type = LOOM_VALUE_DOUBLE, .name = name, .low = low, .high = high};
    return p;
}

/* The value of a DOUBLE or INT proposal as a number. */
static inline double number_of(const loom_value *v)
{
    return v->type == LOOM_VALUE_INT ? (double)v->i : v->d;
}

/* Runs `budget` sequential trials of fn over the proposals' numbers and
 * returns the best (lowest) value found; trace (budget values, or NULL)
 * gets the best so far after each trial. */
static inline double search_minimize_trace(const loom_search_factory *f, const search_setup *s,
                                           double (*fn)(const double *x, uint32_t dim),
                                           uint32_t budget, double *trace)
{
    loom_search_instance *inst = search_create(f, s, NULL);
    if (!inst)
        return INFINITY;
    recorder r;
    recorder_init(&r, s->params, s->dim);
    double best = INFINITY, x[64];
    for (uint32_t t = 0; t < budget; t++) {
        uint32_t before = r.count;
        search_suggest(f, inst, 1, &r);
        if (r.count == before)
            break;
        recorded *item = &r.items[r.count - 1];
        for (uint32_t j = 0; j < s->dim; j++)
            x[j] = number_of(&item->values[j]);
        double y = fn(x, s->dim);
        if (y < best)
            best = y;
        if (trace)
            trace[t] = best;
        search_observe(f, inst, &r, item, LOOM_EXPERIMENT_FINISHED, s->maximize ? -y : y);
    }
    CHECK(r.outside == 0);
    recorder_free(&r);
    f->destroy(inst);
    return best;
}

static inline double search_minimize(const loom_search_factory *f, const search_setup *s,
                                     double (*fn)(const double *x, uint32_t dim), uint32_t budget)
{
    return search_minimize_trace(f, s, fn, budget, NULL);
}

#endif
