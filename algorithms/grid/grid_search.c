/*
 * algorithms/grid/grid_search.c - grid search ("grid"; WMLA's
 * "ExperimentGridSearch"): the task's explicit `experiments` in their
 * order when it gives them, else the Cartesian product of every
 * parameter's values (lists, integer ranges, stepped ranges), the last
 * parameter varying fastest; finish() once every combination was proposed
 * or max_experiments is reached. A continuous range has no grid: it needs
 * a step. At most GRID_MAX_POINTS combinations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_history.h"
#include "search_plugin.h"
#include "search_space.h"
#include "search_state.h"

#define STATE_VERSION 1
#define GRID_MAX_POINTS 1000000

static const loom_host *grid_host;

struct loom_search_instance {
    search_space space;
    uint64_t *levels;
    uint64_t total;
    loom_value *explicit_values; /* total x dim, when the task listed experiments */
    uint32_t max_experiments;
    uint64_t proposed;
    search_rng rng; /* unused by the grid; kept so the state has the common shape */
    search_history history;
    double *u;
    loom_value *values;
};

static void grid_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    free(inst->levels);
    free(inst->explicit_values);
    free(inst->u);
    free(inst->values);
    search_history_free(&inst->history);
    search_space_free(&inst->space);
    free(inst);
}

static loom_error *invalid(loom_search_instance *inst, const char *message)
{
    loom_error *err = grid_host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "grid: %s", message);
    grid_destroy(inst);
    return err;
}

/* Copies the explicit experiments, checking every value against the space
 * (string values are re-pointed at the instance's copy of the choices). */
static int copy_experiments(loom_search_instance *inst, const loom_search_config *c, char *err,
                            size_t errlen)
{
    uint32_t dim = inst->space.count;
    inst->explicit_values = calloc((size_t)c->experiment_count * dim, sizeof(loom_value));
    if (!inst->explicit_values)
        return snprintf(err, errlen, "out of memory"), -1;
    for (uint32_t e = 0; e < c->experiment_count; e++)
        for (uint32_t d = 0; d < dim; d++) {
            const loom_param *p = &inst->space.params[d];
            loom_value v = c->experiments[e][d];
            if (!search_param_contains(p, &v))
                return snprintf(err, errlen, "experiments[%u]: the value of '%s' is outside "
                                "its domain", e, p->name), -1;
            if (v.type == LOOM_VALUE_STRING)
                for (uint32_t k = 0; k < p->choice_count; k++)
                    if (strcmp(p->choice_strings[k], v.s) == 0)
                        v.s = p->choice_strings[k];
            inst->explicit_values[(size_t)e * dim + d] = v;
        }
    inst->total = c->experiment_count;
    return 0;
}

static loom_error *grid_create(const loom_search_factory *self, const loom_search_config *c,
                               loom_search_instance **out)
{
    (void)self;
    *out = NULL;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    char err[512];
    if (!inst)
        return grid_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "grid: out of memory");
    if (search_space_copy(&inst->space, c->params, c->param_count, err, sizeof err) < 0)
        return invalid(inst, err);
    uint32_t dim = inst->space.count;
    inst->levels = calloc(dim, sizeof *inst->levels);
    inst->u = calloc(dim, sizeof *inst->u);
    inst->values = calloc(dim, sizeof *inst->values);
    if (!inst->levels || !inst->u || !inst->values)
        return invalid(inst, "out of memory");
    search_history_init(&inst->history, dim);
    search_rng_seed(&inst->rng, c->seed);
    inst->max_experiments = c->max_experiments;
    if (c->experiment_count && c->experiments) {
        if (copy_experiments(inst, c, err, sizeof err) < 0)
            return invalid(inst, err);
        *out = inst;
        return NULL;
    }
    inst->total = 1;
    for (uint32_t d = 0; d < dim; d++) {
        inst->levels[d] = search_param_levels(&inst->space.params[d]);
        if (inst->levels[d] == 0) {
            snprintf(err, sizeof err, "parameter '%s' is a continuous range: give it a step "
                     "(or list the experiments) for a grid", inst->space.params[d].name);
            return invalid(inst, err);
        }
        if (inst->levels[d] > GRID_MAX_POINTS / inst->total) {
            snprintf(err, sizeof err, "the grid has more than %d combinations (at parameter "
                     "'%s'): use larger steps or another algorithm", GRID_MAX_POINTS,
                     inst->space.params[d].name);
            return invalid(inst, err);
        }
        inst->total *= inst->levels[d];
    }
    *out = inst;
    return NULL;
}

/* Combination k of the product, last parameter fastest. */
static void combination(loom_search_instance *inst, uint64_t k)
{
    uint32_t dim = inst->space.count;
    if (inst->explicit_values) {
        memcpy(inst->values, inst->explicit_values + (size_t)k * dim, dim * sizeof(loom_value));
        return;
    }
    for (uint32_t d = dim; d-- > 0;) {
        uint64_t digit = k % inst->levels[d];
        k /= inst->levels[d];
        inst->u[d] = ((double)digit + 0.5) / (double)inst->levels[d];
    }
    search_space_values(&inst->space, inst->u, inst->values);
}

static loom_error *grid_suggest(loom_search_instance *inst, uint32_t max,
                                const loom_proposal_sink *sink)
{
    uint64_t end = inst->total;
    if (inst->max_experiments && inst->max_experiments < end)
        end = inst->max_experiments;
    for (uint32_t k = 0; k < max && inst->proposed < end; k++) {
        combination(inst, inst->proposed);
        if (sink->propose(sink, inst->values, inst->space.count, 0) == 0)
            break; /* refused: the same combination is offered again next time */
        inst->proposed++;
    }
    if (inst->proposed >= end && sink->finish)
        sink->finish(sink);
    return NULL;
}

static loom_error *grid_observe(loom_search_instance *inst, const loom_observation *obs,
                                const loom_proposal_sink *sink)
{
    (void)sink;
    return search_history_add(&inst->history, &inst->space, obs) < 0
               ? grid_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "grid: out of memory")
               : NULL;
}

static loom_error *grid_save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *root = search_state_begin("grid", STATE_VERSION, &inst->rng, inst->proposed,
                                     &inst->history);
    return search_state_print(grid_host, "grid", root, state_out);
}

static loom_error *grid_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root;
    search_rng rng;
    uint64_t proposed = 0;
    search_history history;
    search_history_init(&history, inst->space.count);
    loom_error *err = search_state_parse(grid_host, "grid", STATE_VERSION, state, &root, &rng,
                                         &proposed, &history);
    if (err)
        return err;
    cJSON_Delete(root);
    if (proposed > inst->total) {
        search_history_free(&history);
        return grid_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                     "grid: saved state: 'proposed' %llu exceeds the grid's "
                                     "%llu combinations (another space?)",
                                     (unsigned long long)proposed,
                                     (unsigned long long)inst->total);
    }
    search_history_free(&inst->history);
    inst->history = history;
    inst->rng = rng;
    inst->proposed = proposed;
    return NULL;
}

static const loom_search_factory grid_factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = grid_create,
    .destroy = grid_destroy,
    .suggest = grid_suggest,
    .observe = grid_observe,
    .save_state = grid_save_state,
    .load_state = grid_load_state,
};

SEARCH_PLUGIN_MODULE(grid_host, grid_factory, "grid", "1.0.0",
                     "Grid search (ExperimentGridSearch): every combination of lists, integer "
                     "and stepped ranges, or the task's explicit experiments")
