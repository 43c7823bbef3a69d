/*
 * algorithms/common/search_history.h - the finished experiments a search
 * has observed, each as its point in the unit cube (search_space.h) and its
 * objective, with a JSON form for save_state/load_state.
 *
 * Objectives are kept as the experiment reported them; `loss` turns one
 * into a value to minimise whatever the task's direction.
 */
#ifndef LOOM_SEARCH_HISTORY_H
#define LOOM_SEARCH_HISTORY_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <loom/loom.h>

#include "search_space.h"

typedef struct search_point {
    uint64_t id;
    int32_t status;    /* loom_experiment_status */
    int32_t has_value; /* a finite objective was reported */
    double value;      /* raw objective */
    double budget;     /* the budget it ran with, or 0 */
} search_point;

typedef struct search_history {
    uint32_t dim;
    uint32_t count, capacity;
    search_point *points;
    double *coords; /* count * dim: point i at coords + i * dim */
} search_history;

void search_history_init(search_history *h, uint32_t dim);
void search_history_free(search_history *h);

static inline const double *search_history_u(const search_history *h, uint32_t i)
{
    return h->coords + (uint64_t)i * h->dim;
}

/* Records an observation (replacing an earlier one of the same experiment).
 * Returns the point's index, or -1 when out of memory. */
int64_t search_history_add(search_history *h, const search_space *space,
                           const loom_observation *obs);
/* The same from coordinates. */
int64_t search_history_add_u(search_history *h, const search_point *point,
                             const double *u);

/* The value to minimise: the objective, negated when maximising. */
static inline double search_loss(double value, int maximize)
{
    return maximize ? -value : value;
}

/* Index of the best finished point with a value, or -1. */
int64_t search_history_best(const search_history *h, int maximize);

/* Number of finished points with a value. */
uint32_t search_history_scored(const search_history *h);

/* [{"id","status","value"|null,"budget","u":[...]}]; NULL when out of
 * memory. */
cJSON *search_history_to_json(const search_history *h);
/* Replaces the history's points; -1 when the JSON does not fit `dim`. */
int search_history_from_json(search_history *h, const cJSON *array);

#endif
