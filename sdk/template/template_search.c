/*
 * template_search.c - a search algorithm to start from: it proposes a fixed
 * number of random points (max_experiments, or 10 when unlimited) and then
 * says it is finished.
 *
 * The host owns the tuning loop: it calls suggest(max) when it can run more
 * experiments, runs each proposal, and reports results with observe. The
 * space arrives typed (loom_param: a range, maybe stepped or on a log
 * scale, or a list of choices); a proposal is one loom_value per parameter
 * in the space's order. The config is borrowed during create, so the
 * instance copies the parameters it keeps. save_state and load_state let a
 * tuning task survive a host restart.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
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
};

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
    int ok = inst->params && inst->point;
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

static loom_error *suggest(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink)
{
    while (max-- > 0 && inst->proposed < inst->total) {
        for (uint32_t i = 0; i < inst->count; i++)
            inst->point[i] = sample(&inst->params[i], &inst->rng);
        /* The host copies the values. A refusal (the SDK's rule, loom.h)
         * says why; try again at the next suggest. A host of this SDK's
         * minor or later always offers propose_experiment. */
        uint64_t id;
        loom_error *refused = sink->propose_experiment(sink, inst->point, inst->count, 0, &id);
        if (refused) {
            host->log(host, LOOM_LOG_INFO, "template_search: %s", host->error_message(refused));
            host->error_free(refused);
            break;
        }
        inst->proposed++;
    }
    if (inst->proposed >= inst->total)
        sink->finish(sink);
    return NULL;
}

static loom_error *observe(loom_search_instance *inst, const loom_observation *obs,
                           const loom_proposal_sink *sink)
{
    (void)inst;
    (void)sink;
    /* A model-based search would learn from obs->values and obs->objective;
     * random search only logs. */
    if (obs->has_objective)
        host->log(host, LOOM_LOG_INFO, "experiment %llu ended (status %d): objective %g",
                  (unsigned long long)obs->experiment_id, obs->status, obs->objective);
    return NULL;
}

static loom_error *save_state(loom_search_instance *inst, char **state_out)
{
    /* The host frees the state, so it comes from the host's allocator. */
    char *state = host->alloc(64);
    if (!state)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template_search: out of memory");
    snprintf(state, 64, "%llu %u", (unsigned long long)inst->rng, inst->proposed);
    *state_out = state;
    return NULL;
}

static loom_error *load_state(loom_search_instance *inst, const char *state)
{
    unsigned long long rng;
    unsigned proposed;
    if (sscanf(state, "%llu %u", &rng, &proposed) != 2)
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                "template_search: saved state \"%s\" is not "
                                "\"<rng> <proposed>\"", state);
    inst->rng = rng;
    inst->proposed = proposed;
    return NULL;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create,
    .destroy = destroy,
    .suggest = suggest,
    .observe = observe,
    .save_state = save_state,
    .load_state = load_state,
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
    .id = "template_search",
    .version = "0.1.0",
    .description = "Template: a fixed number of random points",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}
