/*
 * algorithms/random/random_search.c - random search ("random"; the host
 * matches WMLA's "Random" case-insensitively). Every proposal draws one
 * uniform coordinate per hyperparameter from a seeded xoshiro256** and maps
 * it through the typed space (log scale, steps, integers, lists), so a task
 * with the same seed proposes the same values, before and after a restart.
 */
#include "random_search.h"

#include <stdlib.h>
#include <string.h>

#include "search_options.h"

const loom_host *random_host;

static loom_error *no_memory(const char *what)
{
    return random_host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED,
                                   "random: out of memory %s", what);
}

static void random_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    search_space_free(&inst->space);
    search_history_free(&inst->history);
    free(inst->unit);
    free(inst->values);
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
    int64_t seed;
    if (search_space_copy(&inst->space, config->params, config->param_count,
                          err, sizeof err) < 0 ||
        search_option_int(config, "RandomSeed", (int64_t)(config->seed & INT64_MAX),
                          0, INT64_MAX, &seed, err, sizeof err) < 0) {
        random_destroy(inst);
        return random_host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "random: %s", err);
    }
    inst->unit = calloc(inst->space.count, sizeof *inst->unit);
    inst->values = calloc(inst->space.count, sizeof *inst->values);
    if (!inst->unit || !inst->values) {
        random_destroy(inst);
        return no_memory("creating the instance");
    }
    search_history_init(&inst->history, inst->space.count);
    search_rng_seed(&inst->rng, (uint64_t)seed);
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
        if (!search_space_propose(&inst->space, inst->unit, inst->values, sink, random_host))
            break;
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
                                  const loom_observation *obs,
                                  const loom_proposal_sink *sink)
{
    (void)sink;
    if (!obs)
        return random_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                      "random: observe needs an observation");
    if (obs->status == LOOM_EXPERIMENT_FINISHED && !obs->has_objective)
        random_host->log(random_host, LOOM_LOG_WARN,
                         "experiment %llu finished without the objective metric",
                         (unsigned long long)obs->experiment_id);
    if (search_history_add(&inst->history, &inst->space, obs) < 0)
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
    .version = "2.0.0",
    .description = "Random search: uniform over ranges, log scales, steps and "
                   "lists; seeded (RandomSeed) and resumable",
    .init = random_init,
    .deinit = random_deinit,
    .get_factory = random_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &random_module;
}
