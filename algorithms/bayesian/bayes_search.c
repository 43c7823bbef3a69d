/*
 * algorithms/bayesian/bayes_search.c - Bayesian optimisation ("bayesian";
 * WMLA's "Bayesian"): after InitPoints (10) random experiments, a Gaussian
 * process (bayes_gp.c) is fitted to the finished ones and the next point
 * maximises expected improvement over random candidates, perturbations of
 * the best points so far and a local refinement of the best candidates.
 * Lists, steps and integers are searched at their values' centres in the
 * unit cube, so the process only ever sees points that can run. Options:
 * RandomSeed, InitPoints, Candidates (1000).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bayes_gp.h"
#include "search_design.h"
#include "search_history.h"
#include "search_options.h"
#include "search_plugin.h"
#include "search_rng.h"
#include "search_space.h"
#include "search_state.h"

#define STATE_VERSION 1
#define LIKELIHOOD_EVALS 120
#define REFINE_STARTS 3
#define REFINE_STEPS 40

static const loom_host *bayes_host;

struct loom_search_instance {
    search_space space;
    uint64_t *levels; /* per dimension; 0: continuous */
    search_rng rng;
    uint64_t design_seed; /* the InitPoints' Latin hypercube (search_design.h) */
    int32_t maximize;
    uint32_t max_experiments;
    uint64_t proposed;
    int64_t init_points, candidates;
    search_history history;
    double *theta; /* the GP's log hyperparameters, kept between fits */
    bayes_gp gp;
    double *x, *y;             /* the scored points, packed */
    double *cand, *cand_ei;    /* candidates and their EI */
    double *u, *trial;         /* scratch points */
    loom_value *values;
};

static loom_error *no_memory(const char *what)
{
    return bayes_host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED, "bayesian: out of memory %s",
                                  what);
}

static void bayes_destroy(loom_search_instance *inst)
{
    if (!inst)
        return;
    bayes_gp_free(&inst->gp);
    free(inst->levels);
    free(inst->theta);
    free(inst->x);
    free(inst->y);
    free(inst->cand);
    free(inst->cand_ei);
    free(inst->u);
    free(inst->trial);
    free(inst->values);
    search_history_free(&inst->history);
    search_space_free(&inst->space);
    free(inst);
}

static loom_error *bayes_create(const loom_search_factory *self, const loom_search_config *c,
                                loom_search_instance **out)
{
    (void)self;
    *out = NULL;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return no_memory("creating the instance");
    char err[512];
    int64_t seed;
    if (search_space_copy(&inst->space, c->params, c->param_count, err, sizeof err) < 0 ||
        search_option_int(c, "RandomSeed", (int64_t)(c->seed & INT64_MAX), 0, INT64_MAX, &seed,
                          err, sizeof err) < 0 ||
        search_option_int(c, "InitPoints", 10, 1, 100000, &inst->init_points, err,
                          sizeof err) < 0 ||
        search_option_int(c, "Candidates", 1000, 1, 1000000, &inst->candidates, err,
                          sizeof err) < 0) {
        bayes_destroy(inst);
        return bayes_host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "bayesian: %s", err);
    }
    uint32_t dim = inst->space.count;
    inst->levels = calloc(dim, sizeof *inst->levels);
    inst->theta = calloc(bayes_gp_theta_count(dim), sizeof *inst->theta);
    inst->cand = calloc((size_t)inst->candidates * dim, sizeof *inst->cand);
    inst->cand_ei = calloc((size_t)inst->candidates, sizeof *inst->cand_ei);
    inst->u = calloc(dim, sizeof *inst->u);
    inst->trial = calloc(dim, sizeof *inst->trial);
    inst->values = calloc(dim, sizeof *inst->values);
    if (!inst->levels || !inst->theta || !inst->cand || !inst->cand_ei || !inst->u ||
        !inst->trial || !inst->values) {
        bayes_destroy(inst);
        return no_memory("creating the instance");
    }
    for (uint32_t d = 0; d < dim; d++)
        inst->levels[d] = search_param_levels(&inst->space.params[d]);
    bayes_gp_theta_default(inst->theta, dim);
    search_history_init(&inst->history, dim);
    search_rng_seed(&inst->rng, (uint64_t)seed);
    inst->design_seed = (uint64_t)seed;
    inst->maximize = c->maximize;
    inst->max_experiments = c->max_experiments;
    *out = inst;
    return NULL;
}

/* Moves a point to the centre of its values' cells, clamped into the cube. */
static void snap(const loom_search_instance *inst, double *u)
{
    for (uint32_t d = 0; d < inst->space.count; d++) {
        double v = u[d] < 0 ? 0 : u[d] >= 1 ? nextafter(1.0, 0.0) : u[d];
        uint64_t l = inst->levels[d];
        u[d] = l ? (floor(v * (double)l) + 0.5) / (double)l : v;
    }
}

/* Packs the scored points; returns their number and the best loss. */
static uint32_t pack(loom_search_instance *inst, double *best)
{
    const search_history *h = &inst->history;
    uint32_t dim = h->dim, n = 0;
    *best = INFINITY;
    for (uint32_t i = 0; i < h->count; i++) {
        if (!h->points[i].has_value)
            continue;
        memcpy(inst->x + (size_t)n * dim, search_history_u(h, i), dim * sizeof *inst->x);
        inst->y[n] = search_loss(h->points[i].value, inst->maximize);
        *best = fmin(*best, inst->y[n]);
        n++;
    }
    return n;
}

static void perturb(loom_search_instance *inst, const double *from, double radius, double *to)
{
    for (uint32_t d = 0; d < inst->space.count; d++)
        to[d] = from[d] + radius * search_rng_normal(&inst->rng);
    snap(inst, to);
}

/* Local refinement: random steps from `u` that keep improving EI, with a
 * shrinking radius. */
static double refine(loom_search_instance *inst, double *u, double ei, double best)
{
    double radius = 0.1;
    for (int s = 0; s < REFINE_STEPS; s++) {
        perturb(inst, u, radius, inst->trial);
        double e = bayes_gp_ei(&inst->gp, inst->trial, best);
        if (e > ei) {
            ei = e;
            memcpy(u, inst->trial, inst->space.count * sizeof *u);
        } else {
            radius = fmax(radius * 0.7, 1e-3);
        }
    }
    return ei;
}

/* Fills inst->u with the point of highest expected improvement. */
static int pick(loom_search_instance *inst)
{
    uint32_t dim = inst->space.count, count = inst->history.count;
    double *x = realloc(inst->x, ((size_t)count * dim + 1) * sizeof *x);
    if (x)
        inst->x = x;
    double *y = realloc(inst->y, (count + 1) * sizeof *y);
    if (y)
        inst->y = y;
    if (!x || !y)
        return -1;
    double best;
    uint32_t n = pack(inst, &best);
    if (bayes_gp_fit(&inst->gp, dim, n, inst->x, inst->y, inst->theta, LIKELIHOOD_EVALS) < 0)
        return -1;
    uint32_t m = (uint32_t)inst->candidates;
    for (uint32_t c = 0; c < m; c++) {
        double *u = inst->cand + (size_t)c * dim;
        if (c % 4 == 3) { /* a quarter near observed points */
            uint64_t k = search_rng_below(&inst->rng, n);
            perturb(inst, inst->x + (size_t)k * dim, 0.05, u);
        } else {
            for (uint32_t d = 0; d < dim; d++)
                u[d] = search_rng_uniform(&inst->rng);
            snap(inst, u);
        }
        inst->cand_ei[c] = bayes_gp_ei(&inst->gp, u, best);
    }
    double top = -1;
    for (int r = 0; r < REFINE_STARTS; r++) {
        uint32_t arg = 0;
        for (uint32_t c = 1; c < m; c++)
            if (inst->cand_ei[c] > inst->cand_ei[arg])
                arg = c;
        double *u = inst->cand + (size_t)arg * dim;
        double ei = refine(inst, u, inst->cand_ei[arg], best);
        inst->cand_ei[arg] = -1; /* the next start is another candidate */
        if (ei > top) {
            top = ei;
            memcpy(inst->u, u, dim * sizeof *u);
        }
    }
    return 0;
}

static loom_error *bayes_suggest(loom_search_instance *inst, uint32_t max,
                                 const loom_proposal_sink *sink)
{
    if (!sink || !sink->propose)
        return bayes_host->error_new(LOOM_ERR_INVALID_ARGUMENT, "bayesian: suggest needs a sink");
    for (uint32_t k = 0; k < max; k++) {
        if (inst->max_experiments && inst->proposed >= inst->max_experiments)
            break;
        if (search_history_scored(&inst->history) < (uint64_t)inst->init_points ||
            search_history_scored(&inst->history) < 2) {
            /* The first InitPoints form a Latin hypercube; more while
             * waiting for their results are drawn at random. */
            search_design_point(inst->design_seed, (uint32_t)inst->init_points, inst->proposed,
                                inst->space.count, &inst->rng, inst->u);
        } else if (pick(inst) < 0) {
            return no_memory("fitting the Gaussian process");
        }
        if (!search_space_propose(&inst->space, inst->u, inst->values, sink, bayes_host))
            break;
        inst->proposed++;
    }
    if (inst->max_experiments && inst->proposed >= inst->max_experiments && sink->finish)
        sink->finish(sink);
    return NULL;
}

static loom_error *bayes_observe(loom_search_instance *inst, const loom_observation *obs,
                                 const loom_proposal_sink *sink)
{
    (void)sink;
    if (!obs)
        return bayes_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                     "bayesian: observe needs an observation");
    return search_history_add(&inst->history, &inst->space, obs) < 0
               ? no_memory("recording an observation") : NULL;
}

/* The state adds the GP's hyperparameters, where the next fit starts. */
static loom_error *bayes_save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *root = search_state_begin("bayesian", STATE_VERSION, &inst->rng, inst->proposed,
                                     &inst->history);
    cJSON *theta = cJSON_CreateDoubleArray(inst->theta,
                                           (int)bayes_gp_theta_count(inst->space.count));
    if (!root || !theta || search_state_add_seed(root, "design", inst->design_seed) < 0 ||
        !cJSON_AddItemToObject(root, "theta", theta)) {
        cJSON_Delete(theta);
        theta = NULL;
    }
    return search_state_print(bayes_host, "bayesian", theta ? root : (cJSON_Delete(root), NULL),
                              state_out);
}

static loom_error *bayes_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root;
    search_rng rng;
    uint64_t proposed = 0;
    search_history history;
    search_history_init(&history, inst->space.count);
    loom_error *err = search_state_parse(bayes_host, "bayesian", STATE_VERSION, state, &root,
                                         &rng, &proposed, &history);
    if (err)
        return err;
    const cJSON *theta = cJSON_GetObjectItemCaseSensitive(root, "theta");
    uint32_t m = bayes_gp_theta_count(inst->space.count);
    int numbers = cJSON_IsArray(theta) && cJSON_GetArraySize(theta) == (int)m;
    for (uint32_t k = 0; numbers && k < m; k++) {
        const cJSON *v = cJSON_GetArrayItem(theta, (int)k);
        numbers = cJSON_IsNumber(v) && isfinite(v->valuedouble);
    }
    uint64_t design;
    if (!numbers || search_state_read_seed(root, "design", &design) < 0) {
        cJSON_Delete(root);
        search_history_free(&history);
        return bayes_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                      "bayesian: saved state: field 'theta' is not %u "
                                      "numbers or 'design' not 16 hex digits", m);
    }
    for (uint32_t k = 0; k < m; k++)
        inst->theta[k] = cJSON_GetNumberValue(cJSON_GetArrayItem(theta, (int)k));
    cJSON_Delete(root);
    inst->design_seed = design;
    search_history_free(&inst->history);
    inst->history = history;
    inst->rng = rng;
    inst->proposed = proposed;
    return NULL;
}

static const loom_search_factory bayes_factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = bayes_create,
    .destroy = bayes_destroy,
    .suggest = bayes_suggest,
    .observe = bayes_observe,
    .save_state = bayes_save_state,
    .load_state = bayes_load_state,
};

SEARCH_PLUGIN_MODULE(bayes_host, bayes_factory, "bayesian", "1.0.0",
                     "Gaussian-process Bayesian optimisation (Matern 5/2, marginal likelihood, "
                     "expected improvement): RandomSeed, InitPoints (10), Candidates (1000)")
