/*
 * algorithms/examples/c_search/hill_climb.c - an example search plugin in
 * C against the SDK alone ("example_hill_climb"): five random points, then
 * each proposal moves every range parameter of the best point so far by a
 * Gaussian step (on the exponent for log scales) and redraws each list
 * value with probability 1/4; it finishes after max_experiments (or 10).
 * Built from the SDK template (sdk/template/template_search.c).
 *
 * The host owns the tuning loop: it calls suggest(max) when it can run more
 * experiments, runs each proposal, and reports results with observe. The
 * space arrives typed (loom_param: a range, maybe stepped or on a log
 * scale, or a list of choices); a proposal is one loom_value per parameter
 * in the space's order. The config is borrowed during create, so the
 * instance copies the parameters it keeps. save_state and load_state let a
 * tuning task survive a host restart.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup, M_PI */
#endif
#include <loom/loom.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POINTS 10

static const loom_host *host;

struct loom_search_instance {
    uint32_t count;
    loom_param *params; /* copies; choice strings are the instance's */
    loom_value *point;  /* the proposal being made */
    uint64_t rng;       /* splitmix64 state: the whole generator */
    uint32_t total;     /* points to propose */
    uint32_t proposed;
    int maximize;
    int has_best;
    double best_value;
    loom_value *best; /* the best point's values (strings point into params) */
};

#define RANDOM_START 5

static double normal(uint64_t *rng);

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state) /* [0, 1) */
{
    return (double)(next_random(state) >> 11) * 0x1.0p-53;
}

/* One random value of one parameter (steps are ignored for brevity). */
static loom_value sample(const loom_param *p, uint64_t *rng)
{
    loom_value v = {.type = p->type};
    if (p->kind == LOOM_PARAM_CHOICE) {
        uint32_t k = (uint32_t)(uniform(rng) * p->choice_count);
        if (p->type == LOOM_VALUE_STRING)
            v.s = p->choice_strings[k];
        else if (p->type == LOOM_VALUE_INT)
            v.i = p->choice_ints[k];
        else
            v.d = p->choice_doubles[k];
        return v;
    }
    double x = p->low + uniform(rng) * (p->high - p->low);
    if (p->type == LOOM_VALUE_INT && p->log_base == 0)
        x = floor(p->low + uniform(rng) * (p->high - p->low + 1));
    double value = p->log_base > 1 ? pow(p->log_base, x) : x;
    if (p->type == LOOM_VALUE_INT)
        v.i = llround(value);
    else
        v.d = value;
    return v;
}

static void destroy(loom_search_instance *inst)
{
    for (uint32_t i = 0; i < inst->count; i++) {
        const loom_param *p = &inst->params[i];
        free((char *)p->name);
        for (uint32_t k = 0; p->choice_strings && k < p->choice_count; k++)
            free((char *)p->choice_strings[k]);
        free((void *)p->choice_strings);
        free((void *)p->choice_doubles);
        free((void *)p->choice_ints);
    }
    free(inst->params);
    free(inst->point);
    free(inst->best);
    free(inst);
}

/* Copies what the instance keeps of one parameter; -1 when out of memory. */
static int copy_param(loom_param *dst, const loom_param *src)
{
    *dst = *src;
    dst->choice_strings = NULL;
    dst->choice_doubles = NULL;
    dst->choice_ints = NULL;
    dst->name = strdup(src->name);
    uint32_t n = src->choice_count;
    if (!dst->name || src->kind != LOOM_PARAM_CHOICE)
        return dst->name ? 0 : -1;
    if (src->type == LOOM_VALUE_STRING) {
        char **s = calloc(n, sizeof *s);
        dst->choice_strings = (const char *const *)s;
        for (uint32_t k = 0; s && k < n; k++)
            if (!(s[k] = strdup(src->choice_strings[k])))
                return -1;
        return s ? 0 : -1;
    }
    size_t size = src->type == LOOM_VALUE_INT ? sizeof(int64_t) : sizeof(double);
    void *copy = malloc(n * size);
    if (!copy)
        return -1;
    memcpy(copy, src->type == LOOM_VALUE_INT ? (const void *)src->choice_ints
                                              : (const void *)src->choice_doubles, n * size);
    if (src->type == LOOM_VALUE_INT)
        dst->choice_ints = copy;
    else
        dst->choice_doubles = copy;
    return 0;
}

static loom_error *create(const loom_search_factory *self,
                          const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self;
    if (config->param_count == 0)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "template_search: the search space is empty");
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template_search: out of memory");
    inst->params = calloc(config->param_count, sizeof *inst->params);
    inst->point = calloc(config->param_count, sizeof *inst->point);
    inst->best = calloc(config->param_count, sizeof *inst->best);
    inst->maximize = config->maximize;
    int ok = inst->params && inst->point && inst->best;
    for (uint32_t i = 0; ok && i < config->param_count; i++) {
        inst->count = i + 1;
        ok = copy_param(&inst->params[i], &config->params[i]) == 0;
    }
    if (!ok) {
        destroy(inst);
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template_search: out of memory");
    }
    inst->rng = config->seed;
    inst->total = config->max_experiments ? config->max_experiments : DEFAULT_POINTS;
    *out = inst;
    return NULL;
}

static double normal(uint64_t *rng)
{
    double u = uniform(rng), v = uniform(rng);
    return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* A step from the best value of a range parameter, kept inside it. */
static loom_value step_from(const loom_param *p, const loom_value *best, uint64_t *rng)
{
    loom_value v = *best;
    double value = p->type == LOOM_VALUE_INT ? (double)best->i : best->d;
    double x = p->log_base > 1 ? log(value) / log(p->log_base) : value;
    x += 0.1 * (p->high - p->low) * normal(rng);
    x = x < p->low ? p->low : x > p->high ? p->high : x;
    value = p->log_base > 1 ? pow(p->log_base, x) : x;
    if (p->type == LOOM_VALUE_INT)
        v.i = llround(value);
    else
        v.d = value;
    return v;
}

static loom_error *suggest(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink)
{
    while (max-- > 0 && inst->proposed < inst->total) {
        for (uint32_t i = 0; i < inst->count; i++) {
            const loom_param *p = &inst->params[i];
            int explore = !inst->has_best || inst->proposed < RANDOM_START ||
                          (p->kind == LOOM_PARAM_CHOICE && uniform(&inst->rng) < 0.25);
            inst->point[i] = explore ? sample(p, &inst->rng)
                             : p->kind == LOOM_PARAM_CHOICE ? inst->best[i]
                                                            : step_from(p, &inst->best[i], &inst->rng);
        }
        /* The host copies the values; 0 means refused: try again at the next
         * suggest. */
        if (sink->propose(sink, inst->point, inst->count, 0) == 0)
            break;
        inst->proposed++;
    }
    if (inst->proposed >= inst->total)
        sink->finish(sink);
    return NULL;
}

static loom_error *observe(loom_search_instance *inst, const loom_observation *obs,
                           const loom_proposal_sink *sink)
{
    (void)sink;
    if (obs->status != LOOM_EXPERIMENT_FINISHED || !obs->has_objective ||
        obs->value_count != inst->count)
        return NULL;
    double loss = inst->maximize ? -obs->objective : obs->objective;
    if (inst->has_best && loss >= inst->best_value)
        return NULL;
    inst->has_best = 1;
    inst->best_value = loss;
    for (uint32_t i = 0; i < inst->count; i++) {
        inst->best[i] = obs->values[i];
        /* the host's strings live only for this call: point at our copy */
        const loom_param *p = &inst->params[i];
        for (uint32_t k = 0; p->choice_strings && k < p->choice_count; k++)
            if (obs->values[i].s && strcmp(obs->values[i].s, p->choice_strings[k]) == 0)
                inst->best[i].s = p->choice_strings[k];
    }
    return NULL;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create,
    .destroy = destroy,
    .suggest = suggest,
    .observe = observe,
    /* No save_state/load_state: a task using it starts over after a host
     * restart (the pair is optional). */
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *factory_id)
{
    if (strcmp(factory_id, LOOM_SEARCH_FACTORY_ID) == 0)
        return &factory;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "example_hill_climb",
    .version = "1.0.0",
    .description = "Example: random start, then Gaussian steps from the best point",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}
