/*
 * algorithms/tpe/tpe.h - the TPE search's instance and its model, shared by
 * tpe_search.c (module, create, suggest, observe, state) and tpe_model.c
 * (the Parzen estimators and candidate scoring).
 *
 * The finished experiments are split by objective into a good set (the
 * best GoodRatio of them, at most GoodMax) and a bad set; each dimension
 * of the unit cube gets a Parzen estimator over each set (Gaussian kernels
 * whose widths are the gaps to their neighbours, plus a wide prior; a
 * categorical estimator for lists and small integer ranges). The good
 * kernels are weighted by rank, (n - r)^2, so the best few lead. EICandidate
 * points drawn from the good estimator l(x) are scored by l(x) / g(x), which
 * orders them by expected improvement (Bergstra et al., 2011); the best is
 * proposed. Before WarmUp results the search is random.
 *
 * Cost: the bad set grows with the history, so its estimator is kept
 * incrementally. Each point's kernel width is fixed when it is observed
 * (the larger gap to its neighbours then, floored at 1/min(100, n+1)), and
 * its kernel is added to a per-dimension table of the summed density of
 * all points; g(x) is that table, interpolated, minus the good points'
 * kernels. A suggestion then costs O(GoodMax) per candidate and dimension,
 * not O(history), and observe O(table bins in the kernel's reach).
 */
#ifndef LOOM_TPE_H
#define LOOM_TPE_H

#include <loom/loom.h>

#include "search_history.h"
#include "search_rng.h"
#include "search_space.h"

/* Lists and integer ranges up to this many values are categorical. */
#define TPE_MAX_CATEGORIES 64
/* Bins of the summed-density table over [0, 1] per dimension; kernels are
 * at least 0.01 wide, 20 bins per width. */
#define TPE_GRID_BINS 2048

/* The good set's estimator in one continuous dimension: kernels sorted by
 * mean, widths from the gaps between them. */
typedef struct tpe_parzen {
    uint32_t n, cap;
    double *mu, *sigma, *scale; /* scale: 1 / the kernel's mass in [0, 1] */
    double *weight; /* by rank in the good set; they sum to n */
} tpe_parzen;

typedef struct tpe_dim {
    uint32_t categories; /* 0: continuous */
    tpe_parzen good;
    double *grid;        /* continuous: TPE_GRID_BINS + 1 summed kernels of all points */
    double *count_all;   /* categorical: points per value */
    double *p_good, *p_bad; /* categorical: log probability of each value */
} tpe_dim;

struct loom_search_instance {
    search_space space;
    search_rng rng;
    uint64_t design_seed; /* the warm-up's Latin hypercube (search_design.h) */
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
    double *width;       /* per history index x dimension: its kernel's width and
                          * 1 / its mass in [0, 1] (pairs) */
    uint32_t width_cap;  /* history indexes width has room for */
    tpe_dim *dims;
    double *u, *best_u; /* scratch: one point */
    loom_value *values;
};

extern const loom_host *tpe_host;

/* Allocates the per-dimension tables (-1: out of memory). */
int tpe_model_init(loom_search_instance *inst);
/* Inserts history point i into the indexes and tables (-1: out of memory). */
int tpe_index_add(loom_search_instance *inst, uint32_t i);
/* Rebuilds the indexes and tables from the history, in its order. */
int tpe_index_rebuild(loom_search_instance *inst);
/* Fills inst->best_u with the model's pick. -1: out of memory. */
int tpe_model_pick(loom_search_instance *inst);
void tpe_model_free(loom_search_instance *inst);

#endif
