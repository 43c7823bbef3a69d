/*
 * algorithms/random/random_state.c - random search's save_state/load_state:
 * the common state (search_state.h) and nothing more; a restored search
 * draws exactly the numbers an uninterrupted one would.
 */
#include "random_search.h"

#include "search_state.h"

#define STATE_VERSION 2

loom_error *random_save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *root = search_state_begin("random", STATE_VERSION, &inst->rng,
                                     inst->proposed, &inst->history);
    return search_state_print(random_host, "random", root, state_out);
}

/* Everything is checked before the instance changes, so a bad state leaves
 * the search as it was. */
loom_error *random_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root;
    search_rng rng;
    uint64_t proposed = 0;
    search_history history;
    search_history_init(&history, inst->space.count);
    loom_error *err = search_state_parse(random_host, "random", STATE_VERSION, state,
                                         &root, &rng, &proposed, &history);
    if (err)
        return err;
    cJSON_Delete(root);
    search_history_free(&inst->history);
    inst->history = history;
    inst->rng = rng;
    inst->proposed = proposed;
    return NULL;
}
