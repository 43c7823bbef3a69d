/*
 * algorithms/hyperband/hyperband_search.c - Hyperband ("hyperband"; WMLA's
 * "Hyperband"): brackets s = s_max .. 0 of successive halving, s_max =
 * floor(log_eta(ResourceValue)). Bracket s starts n = ceil((s_max + 1) /
 * (s + 1) * eta^s) random configurations with budget ResourceValue /
 * eta^s; each rung keeps the best 1/eta of its members (floor) and
 * proposes them again with eta times the budget, up to ResourceValue. The
 * budget goes through propose (the host writes it into config.json under
 * the task's ResourceName; an elastic experiment proposed again with a
 * larger budget continues from its earlier run's checkpoint). In a space of
 * lists and integer ranges a bracket's starters are distinct
 * configurations while the space has unused ones. A rung is decided once all its members
 * reported, so no loser is still running then. Options: RandomSeed, eta
 * (3), ResourceValue (81), ResourceName (read by the host).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_history.h"
#include "search_options.h"
#include "search_plugin.h"
#include "search_rng.h"
#include "search_space.h"
#include "search_state.h"

#define STATE_VERSION 1

static const loom_host *hb_host;

typedef struct hb_member {
    uint64_t id; /* 0 until proposed */
    int32_t reported, has_value;
    double loss;
} hb_member;

struct loom_search_instance {
    search_space space;
    search_rng rng;
    int32_t maximize;
    uint32_t max_experiments;
    uint64_t proposed;
    int64_t eta, resource;
    int64_t s_max, bracket, rung; /* bracket < 0: all done */
    uint32_t count;               /* members of the current rung */
    hb_member *members;
    double *coords; /* count x dim */
    search_history history;
    loom_value *values;
};

static int64_t ipow(int64_t base, int64_t k)
{
    int64_t v = 1;
    while (k-- > 0)
        v *= base;
    return v;
}

/* Members of rung i of bracket s, and their budget. */
static uint32_t rung_size(const loom_search_instance *inst, int64_t s, int64_t i)
{
    double n = ceil((double)(inst->s_max + 1) / (double)(s + 1) * (double)ipow(inst->eta, s));
    return (uint32_t)floor(n / (double)ipow(inst->eta, i));
}

static double rung_budget(const loom_search_instance *inst, int64_t s, int64_t i)
{
    return (double)inst->resource / (double)ipow(inst->eta, s - i);
}

static void hb_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    free(inst->members);
    free(inst->coords);
    free(inst->values);
    search_history_free(&inst->history);
    search_space_free(&inst->space);
    free(inst);
}

static int resize(loom_search_instance *inst, uint32_t count)
{
    hb_member *m = realloc(inst->members, (count + 1) * sizeof *m);
    if (m)
        inst->members = m;
    double *c = realloc(inst->coords, ((size_t)count * inst->space.count + 1) * sizeof *c);
    if (c)
        inst->coords = c;
    return m && c ? 0 : -1;
}

/* The number of distinct configurations when every parameter is a list
 * or an integer range (0: a continuous one, or more than 2^20). */
static uint64_t finite_size(const loom_search_instance *inst)
{
    uint64_t total = 1;
    for (uint32_t d = 0; d < inst->space.count; d++) {
        uint64_t levels = search_param_levels(&inst->space.params[d]);
        if (levels == 0 || levels > (1u << 20) / total)
            return 0;
        total *= levels;
    }
    return total;
}

/* Whether two coordinates give the same values (a continuous parameter
 * only when they are equal). */
static int same_configuration(const loom_search_instance *inst, const double *a, const double *b)
{
    for (uint32_t d = 0; d < inst->space.count; d++) {
        double levels = (double)search_param_levels(&inst->space.params[d]);
        if (levels ? floor(a[d] * levels) != floor(b[d] * levels) : a[d] != b[d])
            return 0;
    }
    return 1;
}

/* Draws member k's coordinates: in a finite space, a configuration none of
 * the members since the last full cycle through the space has (a bracket
 * of 9 starters over a 3 x 3 grid tries all 9, not 9 draws with repeats). */
static void draw_member(loom_search_instance *inst, uint32_t k, uint64_t finite)
{
    uint32_t dim = inst->space.count;
    double *u = inst->coords + (size_t)k * dim;
    uint32_t cycle_start = finite ? (uint32_t)(k / finite * finite) : k;
    for (int tries = 0; tries < 1000; tries++) {
        for (uint32_t d = 0; d < dim; d++)
            u[d] = search_rng_uniform(&inst->rng);
        uint32_t j = cycle_start;
        while (j < k && !same_configuration(inst, u, inst->coords + (size_t)j * dim))
            j++;
        if (j == k)
            return;
    }
}

/* Starts bracket s with random members. */
static int start_bracket(loom_search_instance *inst, int64_t s)
{
    inst->bracket = s;
    inst->rung = 0;
    if (s < 0) {
        inst->count = 0;
        return 0;
    }
    uint32_t n = rung_size(inst, s, 0);
    if (resize(inst, n) < 0)
        return -1;
    inst->count = n;
    memset(inst->members, 0, n * sizeof *inst->members);
    uint64_t finite = finite_size(inst);
    for (uint32_t k = 0; k < n; k++)
        draw_member(inst, k, finite);
    return 0;
}

static int by_loss(const void *a, const void *b)
{
    const hb_member *x = a, *y = b;
    double lx = x->has_value ? x->loss : INFINITY, ly = y->has_value ? y->loss : INFINITY;
    return lx < ly ? -1 : lx > ly;
}

/* Every member reported: keep the best, or go to the next bracket. */
static int advance(loom_search_instance *inst)
{
    if (inst->rung >= inst->bracket)
        return start_bracket(inst, inst->bracket - 1);
    uint32_t dim = inst->space.count, keep = rung_size(inst, inst->bracket, inst->rung + 1);
    /* Sort members with their coordinates: pair them through an index. */
    for (uint32_t k = 0; k < inst->count; k++)
        inst->members[k].id = k; /* reuse id as the index while sorting */
    qsort(inst->members, inst->count, sizeof *inst->members, by_loss);
    double *sorted = malloc(((size_t)keep * dim + 1) * sizeof *sorted);
    uint8_t *taken = calloc(inst->count + 1, 1);
    if (!sorted || !taken) {
        free(sorted);
        free(taken);
        return -1;
    }
    /* The best distinct configurations first (one that drew several
     * starters is promoted once), then the next best to fill the rung. */
    uint32_t chosen = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < inst->count && chosen < keep; k++) {
            const double *u = inst->coords + inst->members[k].id * dim;
            uint32_t j = 0;
            while (pass == 0 && j < chosen && !same_configuration(inst, u, sorted + (size_t)j * dim))
                j++;
            if (taken[k] || (pass == 0 && j < chosen))
                continue;
            taken[k] = 1;
            memcpy(sorted + (size_t)chosen++ * dim, u, dim * sizeof *sorted);
        }
    free(taken);
    memcpy(inst->coords, sorted, (size_t)keep * dim * sizeof *sorted);
    free(sorted);
    inst->count = keep;
    memset(inst->members, 0, keep * sizeof *inst->members);
    inst->rung++;
    return 0;
}

static loom_error *hb_suggest(loom_search_instance *inst, uint32_t max,
                              const loom_proposal_sink *sink)
{
    uint32_t dim = inst->space.count;
    while (inst->bracket >= 0 && max > 0) {
        if (inst->max_experiments && inst->proposed >= inst->max_experiments)
            break;
        uint32_t next = 0, reported = 0;
        while (next < inst->count && inst->members[next].id)
            next++;
        for (uint32_t k = 0; k < inst->count; k++)
            reported += inst->members[k].reported;
        if (next == inst->count) {
            if (reported < inst->count)
                break; /* wait for this rung's results */
            if (advance(inst) < 0)
                return hb_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "hyperband: out of memory");
            continue;
        }
        search_space_values(&inst->space, inst->coords + (size_t)next * dim, inst->values);
        uint64_t id = sink->propose(sink, inst->values, dim,
                                    rung_budget(inst, inst->bracket, inst->rung));
        if (id == 0)
            break;
        inst->members[next].id = id;
        inst->proposed++;
        max--;
    }
    if ((inst->bracket < 0 ||
         (inst->max_experiments && inst->proposed >= inst->max_experiments)) && sink->finish)
        sink->finish(sink);
    return NULL;
}

static loom_error *hb_observe(loom_search_instance *inst, const loom_observation *obs,
                              const loom_proposal_sink *sink)
{
    (void)sink;
    if (search_history_add(&inst->history, &inst->space, obs) < 0)
        return hb_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "hyperband: out of memory");
    for (uint32_t k = 0; k < inst->count; k++)
        if (inst->members[k].id == obs->experiment_id) {
            hb_member *m = &inst->members[k];
            m->reported = 1;
            m->has_value = obs->status == LOOM_EXPERIMENT_FINISHED && obs->has_objective &&
                           isfinite(obs->objective);
            m->loss = m->has_value ? search_loss(obs->objective, inst->maximize) : 0;
        }
    return NULL;
}

static loom_error *hb_create(const loom_search_factory *self, const loom_search_config *c,
                             loom_search_instance **out)
{
    (void)self;
    *out = NULL;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return hb_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "hyperband: out of memory");
    char err[512];
    int64_t seed;
    if (search_space_copy(&inst->space, c->params, c->param_count, err, sizeof err) < 0 ||
        search_option_int(c, "RandomSeed", (int64_t)(c->seed & INT64_MAX), 0, INT64_MAX, &seed,
                          err, sizeof err) < 0 ||
        search_option_int(c, "eta", 3, 2, 100, &inst->eta, err, sizeof err) < 0 ||
        search_option_int(c, "ResourceValue", 81, 1, 1000000, &inst->resource, err,
                          sizeof err) < 0) {
        hb_destroy(inst);
        return hb_host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "hyperband: %s", err);
    }
    inst->values = calloc(inst->space.count, sizeof *inst->values);
    search_history_init(&inst->history, inst->space.count);
    search_rng_seed(&inst->rng, (uint64_t)seed);
    while (ipow(inst->eta, inst->s_max + 1) <= inst->resource)
        inst->s_max++;
    inst->maximize = c->maximize;
    inst->max_experiments = c->max_experiments;
    if (!inst->values || start_bracket(inst, inst->s_max) < 0) {
        hb_destroy(inst);
        return hb_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "hyperband: out of memory");
    }
    *out = inst;
    return NULL;
}

/* The state adds the bracket, the rung and its members. */
static loom_error *hb_save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *root = search_state_begin("hyperband", STATE_VERSION, &inst->rng, inst->proposed,
                                     &inst->history);
    cJSON *members = cJSON_CreateArray();
    int ok = root && members && cJSON_AddNumberToObject(root, "bracket", (double)inst->bracket) &&
             cJSON_AddNumberToObject(root, "rung", (double)inst->rung) &&
             cJSON_AddItemToObject(root, "members", members);
    if (!ok)
        cJSON_Delete(members);
    for (uint32_t k = 0; ok && k < inst->count; k++) {
        const hb_member *m = &inst->members[k];
        cJSON *item = cJSON_CreateObject();
        ok = item && cJSON_AddItemToArray(members, item);
        cJSON *u = ok ? cJSON_CreateDoubleArray(inst->coords + (size_t)k * inst->space.count,
                                                (int)inst->space.count) : NULL;
        ok = ok && u && cJSON_AddItemToObject(item, "u", u) &&
             cJSON_AddNumberToObject(item, "id", (double)m->id) &&
             cJSON_AddBoolToObject(item, "reported", m->reported) &&
             (m->has_value ? cJSON_AddNumberToObject(item, "loss", m->loss) != NULL
                           : cJSON_AddNullToObject(item, "loss") != NULL);
    }
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return search_state_print(hb_host, "hyperband", root, state_out);
}

/* Checks the saved members, then copies them in: -1 leaves the rung as it
 * was (out of memory, or a member that does not fit this space). */
static int load_members(loom_search_instance *inst, const cJSON *members)
{
    uint32_t dim = inst->space.count, n = (uint32_t)cJSON_GetArraySize(members);
    const cJSON *item;
    cJSON_ArrayForEach(item, members) {
        uint64_t id;
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(item, "u");
        if (search_state_count(item, "id", &id) < 0 || !cJSON_IsArray(u) ||
            cJSON_GetArraySize(u) != (int)dim)
            return -1;
        const cJSON *c;
        cJSON_ArrayForEach(c, u) {
            if (!cJSON_IsNumber(c) || c->valuedouble < 0 || c->valuedouble > 1)
                return -1;
        }
    }
    if (resize(inst, n) < 0)
        return -1;
    uint32_t k = 0;
    cJSON_ArrayForEach(item, members) {
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(item, "loss");
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(item, "u");
        hb_member *m = &inst->members[k];
        m->id = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(item, "id"));
        m->reported = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "reported"));
        m->has_value = cJSON_IsNumber(loss);
        m->loss = m->has_value ? loss->valuedouble : 0;
        for (uint32_t d = 0; d < dim; d++)
            inst->coords[(size_t)k * dim + d] = cJSON_GetNumberValue(cJSON_GetArrayItem(u, (int)d));
        k++;
    }
    inst->count = n;
    return 0;
}

static loom_error *hb_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root;
    search_rng rng;
    uint64_t proposed = 0;
    search_history history;
    search_history_init(&history, inst->space.count);
    loom_error *err = search_state_parse(hb_host, "hyperband", STATE_VERSION, state, &root, &rng,
                                         &proposed, &history);
    if (err)
        return err;
    const cJSON *bracket = cJSON_GetObjectItemCaseSensitive(root, "bracket");
    const cJSON *rung = cJSON_GetObjectItemCaseSensitive(root, "rung");
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(root, "members");
    if (!cJSON_IsNumber(bracket) || !cJSON_IsNumber(rung) || !cJSON_IsArray(members) ||
        bracket->valuedouble > (double)inst->s_max || load_members(inst, members) < 0) {
        cJSON_Delete(root);
        search_history_free(&history);
        return hb_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                  "hyperband: saved state: fields 'bracket', 'rung' and "
                                  "'members' do not describe a bracket of this search");
    }
    inst->bracket = (int64_t)bracket->valuedouble;
    inst->rung = (int64_t)rung->valuedouble;
    cJSON_Delete(root);
    search_history_free(&inst->history);
    inst->history = history;
    inst->rng = rng;
    inst->proposed = proposed;
    return NULL;
}

static const loom_search_factory hb_factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = hb_create,
    .destroy = hb_destroy,
    .suggest = hb_suggest,
    .observe = hb_observe,
    .save_state = hb_save_state,
    .load_state = hb_load_state,
};

SEARCH_PLUGIN_MODULE(hb_host, hb_factory, "hyperband", "1.0.0",
                     "Hyperband: brackets of successive halving; RandomSeed, eta (3), "
                     "ResourceName, ResourceValue (81)")
