/*
 * template_search.c - a search algorithm to start from: it proposes a fixed
 * number of random points (max_experiments, or 10 when unlimited) and then
 * says it is finished.
 *
 * The host owns the tuning loop: it calls suggest(max) when it can run more
 * experiments, runs each proposal, and reports results with observe. The
 * space is WMLA's hyperParams array; this template understands Range
 * (minDbVal/maxDbVal or minIntVal/maxIntVal) and Discrete lists. save_state
 * and load_state let a tuning task survive a host restart.
 */
#include <loom/loom.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POINTS 10

static const loom_host *host;

struct loom_search_instance {
    cJSON *space;      /* the hyperParams array */
    uint64_t rng;      /* splitmix64 state: the whole generator */
    uint32_t total;    /* points to propose */
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

static const cJSON *discrete_list(const cJSON *param)
{
    const char *fields[] = {"discreteIntVal", "discreteDbVal", "discreateStrVal",
                            "discreteStrVal"};
    for (int i = 0; i < 4; i++) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(param, fields[i]);
        if (cJSON_GetArraySize(list) > 0)
            return list;
    }
    return NULL;
}

static int is_int(const cJSON *param)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(param, "dataType"));
    return type && strcmp(type, "INT") == 0;
}

/* One random value for one parameter, or NULL when the entry is unusable. */
static cJSON *sample(const cJSON *param, uint64_t *rng)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(param, "type"));
    if (type && strcmp(type, "Discrete") == 0) {
        const cJSON *list = discrete_list(param);
        if (!list)
            return NULL;
        int n = cJSON_GetArraySize(list);
        return cJSON_Duplicate(cJSON_GetArrayItem(list, (int)(uniform(rng) * n)), 1);
    }
    int integer = is_int(param);
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(param, integer ? "minIntVal" : "minDbVal");
    const cJSON *hi = cJSON_GetObjectItemCaseSensitive(param, integer ? "maxIntVal" : "maxDbVal");
    if (!cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || lo->valuedouble > hi->valuedouble)
        return NULL;
    if (integer) {
        double span = hi->valuedouble - lo->valuedouble + 1;
        return cJSON_CreateNumber(lo->valuedouble + (double)(long long)(uniform(rng) * span));
    }
    return cJSON_CreateNumber(lo->valuedouble + uniform(rng) * (hi->valuedouble - lo->valuedouble));
}

static void destroy(loom_search_instance *inst)
{
    cJSON_Delete(inst->space);
    free(inst);
}

static loom_error *create(const loom_search_factory *self,
                          const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template_search: out of memory");
    inst->space = cJSON_Parse(config->space_json ? config->space_json : "");
    inst->rng = config->seed;
    inst->total = config->max_experiments ? config->max_experiments : DEFAULT_POINTS;
    if (!cJSON_IsArray(inst->space)) {
        destroy(inst);
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "template_search: hyperParams is not a JSON array");
    }
    /* Refuse a bad space now, not at the first suggest: draw one value of
     * each parameter from a throwaway generator. */
    uint64_t probe = 0;
    const cJSON *param;
    cJSON_ArrayForEach(param, inst->space) {
        cJSON *value = sample(param, &probe);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(param, "name"));
        if (!value || !name) {
            cJSON_Delete(value);
            loom_error *err = host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                               "template_search: hyperparameter '%s' needs a "
                                               "name and min/max bounds or a non-empty list",
                                               name ? name : "?");
            destroy(inst);
            return err;
        }
        cJSON_Delete(value);
    }
    *out = inst;
    return NULL;
}

static loom_error *suggest(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink)
{
    while (max-- > 0 && inst->proposed < inst->total) {
        cJSON *config = cJSON_CreateObject();
        const cJSON *param;
        cJSON_ArrayForEach(param, inst->space) {
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(param, "name"));
            cJSON_AddItemToObject(config, name, sample(param, &inst->rng));
        }
        char *text = cJSON_PrintUnformatted(config);
        cJSON_Delete(config);
        if (!text)
            return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template_search: out of memory");
        uint64_t id = sink->propose(sink, text); /* the host copies the text */
        cJSON_free(text);
        if (id == 0)
            break; /* refused: try again at the next suggest */
        inst->proposed++;
    }
    if (inst->proposed >= inst->total)
        sink->finish(sink);
    return NULL;
}

static loom_error *observe(loom_search_instance *inst, uint64_t experiment_id,
                           int32_t status, const loom_metric *metrics,
                           uint32_t metric_count)
{
    (void)inst;
    /* A model-based search would learn from this; random search only logs. */
    if (metric_count > 0)
        host->log(host, LOOM_LOG_INFO, "experiment %llu ended (status %d): %s=%g",
                  (unsigned long long)experiment_id, status, metrics[0].name,
                  metrics[0].value);
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
