/*
 * algorithms/random/random_search.h - the random search plugin's instance,
 * shared by its two files: random_search.c (module, create, suggest,
 * observe) and random_state.c (save_state / load_state).
 */
#ifndef LOOM_RANDOM_SEARCH_H
#define LOOM_RANDOM_SEARCH_H

#include <loom/loom.h>

#include "search_rng.h"
#include "search_space.h"

typedef struct random_observation {
    uint64_t experiment_id;
    int32_t status;    /* loom_experiment_status */
    int32_t has_value; /* the objective metric was reported */
    double value;
} random_observation;

struct loom_search_instance {
    search_space space;
    double *unit; /* one coordinate per parameter, reused per proposal */
    search_rng rng;
    uint32_t max_experiments; /* 0: no limit */
    int32_t maximize;
    char *objective; /* metric name; NULL: the first metric reported */
    uint64_t proposed;
    random_observation *observations;
    uint32_t observation_count, observation_capacity;
    /* The best finished experiment so far; derived from observations. */
    int32_t has_best;
    uint64_t best_id;
    double best_value;
};

/* The host table given to init; NULL before init and after deinit. */
extern const loom_host *random_host;

/* Records an observation (replacing an earlier one of the same experiment)
 * and updates the best. Returns 0, or -1 when out of memory. */
int random_record(loom_search_instance *inst, uint64_t experiment_id,
                  int32_t status, int32_t has_value, double value);

loom_error *random_save_state(loom_search_instance *inst, char **state_out);
loom_error *random_load_state(loom_search_instance *inst, const char *state);

#endif
