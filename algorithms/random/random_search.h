/*
 * algorithms/random/random_search.h - the random search plugin's instance,
 * shared by its two files: random_search.c (module, create, suggest,
 * observe) and random_state.c (save_state / load_state).
 */
#ifndef LOOM_RANDOM_SEARCH_H
#define LOOM_RANDOM_SEARCH_H

#include <loom/loom.h>

#include "search_history.h"
#include "search_rng.h"
#include "search_space.h"

struct loom_search_instance {
    search_space space;
    double *unit;       /* one coordinate per parameter, reused per proposal */
    loom_value *values; /* the proposal being made */
    search_rng rng;
    uint32_t max_experiments; /* 0: no limit */
    int32_t maximize;
    uint64_t proposed;
    search_history history;
};

/* The host table given to init; NULL before init and after deinit. */
extern const loom_host *random_host;

loom_error *random_save_state(loom_search_instance *inst, char **state_out);
loom_error *random_load_state(loom_search_instance *inst, const char *state);

#endif
