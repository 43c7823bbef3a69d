/*
 * algorithms/random/random_search.c - random search ("random"; the host
 * matches WMLA's "Random" case-insensitively). Every proposal draws one
 * uniform coordinate per hyperparameter from a seeded xoshiro256** and maps
 * it through the WMLA space (log scale for "power", steps, lists), so a task
 * with the same seed proposes the same configs, before and after a restart.
 */
#include "random_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const loom_host *random_host;

static loom_error *no_memory(const char *what)
{
    return random_host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED,
                                   "random: out of memory %s", what);
}

static int better(const loom_search_instance *inst, double a, double b)
{
    return inst->maximize ? a > b : a < b;
}

static void recompute_best(loom_search_instance *inst)
{
    inst->has_best = 0;
    for (uint32_t i = 0; i < inst->observation_count; i++) {
        const random_observation *o = &inst->observations[i];
        if (o->status != LOOM_EXPERIMENT_FINISHED || !o->has_value)
            continue;
        if (!inst->has_best || better(inst, o->value, inst->best_value)) {
            inst->has_best = 1;
            inst->best_id = o->experiment_id;
            inst->best_value = o->value;
        }
    }
}

int random_record(loom_search_instance *inst, uint64_t experiment_id,
                  int32_t status, int32_t has_value, double value)
{
    random_observation obs = {experiment_id, status, has_value, value};
    for (uint32_t i = 0; i < inst->observation_count; i++)
        if (inst->observations[i].experiment_id == experiment_id) {
            inst->observations[i] = obs;
            recompute_best(inst);
            return 0;
        }
    if (inst->observation_count == inst->observation_capacity) {
        uint32_t cap = inst->observation_capacity ? 2 * inst->observation_capacity : 16;
        random_observation *grown =
            realloc(inst->observations, cap * sizeof *grown);
        if (!grown)
            return -1;
        inst->observations = grown;
        inst->observation_capacity = cap;
    }
    inst->observations[inst->observation_count++] = obs;
    if (status == LOOM_EXPERIMENT_FINISHED && has_value &&
        (!inst->has_best || better(inst, value, inst->best_value))) {
        inst->has_best = 1;
        inst->best_id = experiment_id;
        inst->best_value = value;
    }
    return 0;
}

static void random_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    search_space_free(&inst->space);
    free(inst->unit);
    free(inst->objective);
    free(inst->observations);
    free(inst);
}

static loom_error *random_create(const loom_search_factory *self,
                                 const loom_search_config *config,
                                 loom_search_instance **out)
{
    (void)self;
    *out = NULL;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return no_memory("creating the instance");

    char err[512];
    if (search_space_parse(config->space_json, &inst->space, err, sizeof err) < 0) {
        random_destroy(inst);
        return random_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                       "random: %s", err);
    }
    if (inst->space.count == 0) {
        random_destroy(inst);
        return random_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                      "random: hyperParams is empty: name at "
                                      "least one hyperparameter to search");
    }
    inst->unit = calloc(inst->space.count, sizeof *inst->unit);
    if (config->objective_metric && config->objective_metric[0])
        inst->objective = strdup(config->objective_metric);
    if (!inst->unit || (config->objective_metric && config->objective_metric[0] &&
                        !inst->objective)) {
        random_destroy(inst);
        return no_memory("creating the instance");
    }
    search_rng_seed(&inst->rng, config->seed);
    inst->max_experiments = config->max_experiments;
    inst->maximize = config->maximize;
    *out = inst;
    return NULL;
}

static loom_error *random_suggest(loom_search_instance *inst, uint32_t max,
                                  const loom_proposal_sink *sink)
{
    if (!sink || !sink->propose)
        return random_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                      "random: suggest needs a proposal sink");
    uint64_t n = max;
    if (inst->max_experiments) {
        uint64_t left = inst->proposed < inst->max_experiments
                            ? inst->max_experiments - inst->proposed : 0;
        if (n > left)
            n = left;
    }
    for (uint64_t i = 0; i < n; i++) {
        for (uint32_t j = 0; j < inst->space.count; j++)
            inst->unit[j] = search_rng_uniform(&inst->rng);
        cJSON *config = search_space_config(&inst->space, inst->unit);
        char *text = config ? cJSON_PrintUnformatted(config) : NULL;
        cJSON_Delete(config);
        if (!text)
            return no_memory("formatting a proposal");
        uint64_t id = sink->propose(sink, text);
        if (id == 0) {
            /* A refused point is not counted; the next suggest draws a new
             * one rather than insisting on this one. */
            random_host->log(random_host, LOOM_LOG_WARN,
                             "the host refused proposal %s", text);
            cJSON_free(text);
            break;
        }
        cJSON_free(text);
        inst->proposed++;
    }
    /* Said whenever the budget is spent, so a restored search tells its
     * (possibly restarted) host too. */
    if (inst->max_experiments && inst->proposed >= inst->max_experiments &&
        sink->finish)
        sink->finish(sink);
    return NULL;
}

static loom_error *random_observe(loom_search_instance *inst,
                                  uint64_t experiment_id, int32_t status,
                                  const loom_metric *metrics,
                                  uint32_t metric_count)
{
    const loom_metric *objective = NULL;
    for (uint32_t i = 0; i < metric_count && !objective; i++)
        if (!inst->objective || strcmp(metrics[i].name, inst->objective) == 0)
            objective = &metrics[i];
    if (status == LOOM_EXPERIMENT_FINISHED && !objective)
        random_host->log(random_host, LOOM_LOG_WARN,
                         "experiment %llu finished without the "
                         "objective metric '%s'",
                         (unsigned long long)experiment_id,
                         inst->objective ? inst->objective : "(any)");
    /* A NaN loss must not become the best; it is kept as "no value". */
    int has_value = objective && isfinite(objective->value);
    if (random_record(inst, experiment_id, status, has_value,
                      has_value ? objective->value : 0) < 0)
        return no_memory("recording an observation");
    return NULL;
}

static const loom_search_factory random_factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = random_create,
    .destroy = random_destroy,
    .suggest = random_suggest,
    .observe = random_observe,
    .save_state = random_save_state,
    .load_state = random_load_state,
};

static loom_error *random_init(const loom_host *host)
{
    random_host = host;
    return NULL;
}

static void random_deinit(void)
{
    random_host = NULL;
}

static const void *random_get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_SEARCH_FACTORY_ID) == 0)
        return &random_factory;
    return NULL;
}

static const loom_module random_module = {
    LOOM_MODULE_HEADER,
    .id = "random",
    .version = "1.0.0",
    .description = "Random search over WMLA hyperParams: uniform, log scale "
                   "with power, steps and lists; seeded and resumable",
    .init = random_init,
    .deinit = random_deinit,
    .get_factory = random_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &random_module;
}
