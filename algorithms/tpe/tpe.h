/*
 * algorithms/tpe/tpe.h - the TPE search's instance and its model, shared by
 * tpe_search.c (module, create, suggest, observe, state) and tpe_model.c
 * (the Parzen estimators and candidate scoring).
 *
 * The finished experiments are split by objective into a good set (the
 * best GoodRatio of them, at most GoodMax) and a bad set; each dimension
 * of the unit cube gets a Parzen estimator over each set (Gaussian kernels
 * whose widths are the gaps to their neighbours, plus a wide prior; a
 * categorical estimator for lists and small integer ranges). EICandidate
 * points drawn from the good estimator l(x) are scored by l(x) / g(x), which
 * orders them by expected improvement (Bergstra et al., 2011); the best is
 * proposed. Before WarmUp results the search is random.
 *
 * Indexes sorted by objective and by each coordinate are kept up to date on
 * observe, so a suggestion costs O(n) per dimension plus the candidates'
 * kernel sums over nearby points, not a sort of the history.
 */
#ifndef LOOM_TPE_H
#define LOOM_TPE_H

#include <loom/loom.h>

#include "search_history.h"
#include "search_rng.h"
#include "search_space.h"

/* Lists and integer ranges up to this many values are categorical. */
#define TPE_MAX_CATEGORIES 64

/* One set's estimator in one continuous dimension: kernels sorted by mean,
 * with running maxima of their widths to bound the kernel sums. */
typedef struct tpe_parzen {
    uint32_t n;
    double *mu, *sigma, *max_left, *max_right;
} tpe_parzen;

typedef struct tpe_dim {
    uint32_t categories; /* 0: continuous */
    tpe_parzen good, bad;
    double *p_good, *p_bad; /* categorical: probability of each value */
} tpe_dim;

struct loom_search_instance {
    search_space space;
    search_rng rng;
    int32_t maximize;
    uint32_t max_experiments;
    uint64_t proposed;
    int64_t warmup, candidates, good_max;
    double good_ratio;
    search_history history;
    /* indexes over the scored points (finished, with a value) */
    uint32_t scored, scored_cap;
    uint32_t *by_loss;   /* history indexes sorted by loss */
    uint32_t **by_coord; /* per dimension, sorted by coordinate */
    uint8_t *is_good;    /* per history index, for the current split */
    tpe_dim *dims;
    double *u, *best_u; /* scratch: one point */
    loom_value *values;
};

extern const loom_host *tpe_host;

/* Inserts history point i into the indexes (-1: out of memory). */
int tpe_index_add(loom_search_instance *inst, uint32_t i);
/* Rebuilds the indexes from the history. */
int tpe_index_rebuild(loom_search_instance *inst);
/* Fills inst->best_u with the model's pick. -1: out of memory. */
int tpe_model_pick(loom_search_instance *inst);
void tpe_model_free(loom_search_instance *inst);

#endif
