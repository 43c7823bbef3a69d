/*
 * algorithms/tpe/tpe_search.c - the TPE search plugin ("tpe"; WMLA's
 * "Tpe"): options RandomSeed, WarmUp (20), EICandidate (24), GoodRatio
 * (0.25), GoodMax (25); the model is in tpe_model.c.
 */
#include "tpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_design.h"
#include "search_options.h"
#include "search_plugin.h"
#include "search_state.h"

#define STATE_VERSION 1

const loom_host *tpe_host;

static loom_error *no_memory(const char *what)
{
    return tpe_host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED, "tpe: out of memory %s", what);
}

static void tpe_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    tpe_model_free(inst);
    for (uint32_t d = 0; inst->by_coord && d < inst->space.count; d++)
        free(inst->by_coord[d]);
    free(inst->by_coord);
    free(inst->by_loss);
    free(inst->width);
    free(inst->dims);
    free(inst->u);
    free(inst->best_u);
    free(inst->values);
    search_history_free(&inst->history);
    search_space_free(&inst->space);
    free(inst);
}

static int read_options(loom_search_instance *inst, const loom_search_config *c, char *err,
                        size_t errlen)
{
    int64_t seed;
    if (search_option_int(c, "RandomSeed", (int64_t)(c->seed & INT64_MAX), 0, INT64_MAX, &seed,
                          err, errlen) < 0 ||
        search_option_int(c, "WarmUp", 20, 0, 100000, &inst->warmup, err, errlen) < 0 ||
        search_option_int(c, "EICandidate", 24, 1, 100000, &inst->candidates, err, errlen) < 0 ||
        search_option_double(c, "GoodRatio", 0.25, 1e-6, 1, &inst->good_ratio, err, errlen) < 0 ||
        search_option_int(c, "GoodMax", 25, 1, 1000000, &inst->good_max, err, errlen) < 0)
        return -1;
    search_rng_seed(&inst->rng, (uint64_t)seed);
    inst->design_seed = (uint64_t)seed;
    return 0;
}

static int allocate(loom_search_instance *inst)
{
    uint32_t dim = inst->space.count;
    inst->by_coord = calloc(dim, sizeof *inst->by_coord);
    inst->dims = calloc(dim, sizeof *inst->dims);
    inst->u = calloc(dim, sizeof *inst->u);
    inst->best_u = calloc(dim, sizeof *inst->best_u);
    inst->values = calloc(dim, sizeof *inst->values);
    if (!inst->by_coord || !inst->dims || !inst->u || !inst->best_u || !inst->values)
        return -1;
    if (tpe_model_init(inst) < 0)
        return -1;
    search_history_init(&inst->history, dim);
    return 0;
}

static loom_error *tpe_create(const loom_search_factory *self, const loom_search_config *config,
                              loom_search_instance **out)
{
    (void)self;
    *out = NULL;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return no_memory("creating the instance");
    char err[512];
    if (search_space_copy(&inst->space, config->params, config->param_count, err,
                          sizeof err) < 0 ||
        read_options(inst, config, err, sizeof err) < 0) {
        tpe_destroy(inst);
        return tpe_host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "tpe: %s", err);
    }
    if (allocate(inst) < 0) {
        tpe_destroy(inst);
        return no_memory("creating the instance");
    }
    inst->maximize = config->maximize;
    inst->max_experiments = config->max_experiments;
    *out = inst;
    return NULL;
}

static loom_error *tpe_suggest(loom_search_instance *inst, uint32_t max,
                               const loom_proposal_sink *sink)
{
    if (!sink || !sink->propose)
        return tpe_host->error_new(LOOM_ERR_INVALID_ARGUMENT, "tpe: suggest needs a sink");
    for (uint32_t k = 0; k < max; k++) {
        if (inst->max_experiments && inst->proposed >= inst->max_experiments)
            break;
        if (inst->scored < (uint64_t)inst->warmup || inst->scored < 2) {
            /* The first WarmUp points form a Latin hypercube; more while
             * waiting for their results are drawn at random. */
            search_design_point(inst->design_seed, (uint32_t)inst->warmup, inst->proposed,
                                inst->space.count, &inst->rng, inst->best_u);
        } else if (tpe_model_pick(inst) < 0) {
            return no_memory("building the model");
        }
        if (!search_space_propose(&inst->space, inst->best_u, inst->values, sink, tpe_host))
            break;
        inst->proposed++;
    }
    if (inst->max_experiments && inst->proposed >= inst->max_experiments && sink->finish)
        sink->finish(sink);
    return NULL;
}

static loom_error *tpe_observe(loom_search_instance *inst, const loom_observation *obs,
                               const loom_proposal_sink *sink)
{
    (void)sink;
    if (!obs)
        return tpe_host->error_new(LOOM_ERR_INVALID_ARGUMENT, "tpe: observe needs an observation");
    uint32_t before = inst->history.count;
    int64_t at = search_history_add(&inst->history, &inst->space, obs);
    if (at < 0)
        return no_memory("recording an observation");
    /* A repeated report of one experiment replaces it: rebuild the indexes. */
    int rc = (uint32_t)at < before ? tpe_index_rebuild(inst) : tpe_index_add(inst, (uint32_t)at);
    return rc < 0 ? no_memory("indexing an observation") : NULL;
}

static loom_error *tpe_save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *root = search_state_begin("tpe", STATE_VERSION, &inst->rng, inst->proposed,
                                     &inst->history);
    if (search_state_add_seed(root, "design", inst->design_seed) < 0) {
        cJSON_Delete(root);
        root = NULL;
    }
    return search_state_print(tpe_host, "tpe", root, state_out);
}

static loom_error *tpe_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root;
    search_rng rng;
    uint64_t proposed = 0;
    search_history history;
    search_history_init(&history, inst->space.count);
    loom_error *err = search_state_parse(tpe_host, "tpe", STATE_VERSION, state, &root, &rng,
                                         &proposed, &history);
    if (err)
        return err;
    uint64_t design;
    int has_design = search_state_read_seed(root, "design", &design) == 0;
    cJSON_Delete(root);
    if (!has_design) {
        search_history_free(&history);
        return tpe_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                   "tpe: saved state: field 'design' is not 16 hex digits");
    }
    inst->design_seed = design;
    search_history_free(&inst->history);
    inst->history = history;
    inst->rng = rng;
    inst->proposed = proposed;
    return tpe_index_rebuild(inst) < 0 ? no_memory("loading the state") : NULL;
}

static const loom_search_factory tpe_factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = tpe_create,
    .destroy = tpe_destroy,
    .suggest = tpe_suggest,
    .observe = tpe_observe,
    .save_state = tpe_save_state,
    .load_state = tpe_load_state,
};

SEARCH_PLUGIN_MODULE(tpe_host, tpe_factory, "tpe", "1.0.0",
                     "Tree-structured Parzen Estimator: RandomSeed, WarmUp (20), "
                     "EICandidate (24), GoodRatio (0.25), GoodMax (25); resumable")
