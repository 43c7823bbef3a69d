/*
 * algorithms/common/search_state.h - the JSON state every built-in search
 * saves: {"algorithm", "version", "rng" (64 hex digits: JSON numbers are
 * doubles and would lose the generator's bits), "proposed", "history"}
 * plus whatever fields the algorithm adds.
 */
#ifndef LOOM_SEARCH_STATE_H
#define LOOM_SEARCH_STATE_H

#include <cjson/cJSON.h>
#include <loom/loom.h>

#include "search_history.h"
#include "search_rng.h"

/* The common fields; NULL when out of memory. */
cJSON *search_state_begin(const char *algorithm, int version,
                          const search_rng *rng, uint64_t proposed,
                          const search_history *history);

/* Prints `root` (and deletes it) into *out, allocated with host->alloc. */
loom_error *search_state_print(const loom_host *host, const char *algorithm,
                               cJSON *root, char **out);

/* Parses `text` and checks the common fields. On success *root is the
 * parsed object (the caller reads its own fields, then deletes it) and
 * rng, proposed and history (initialised with the instance's dim) hold the
 * saved values; nothing of the instance changes until the caller commits
 * them. */
loom_error *search_state_parse(const loom_host *host, const char *algorithm,
                               int version, const char *text, cJSON **root,
                               search_rng *rng, uint64_t *proposed,
                               search_history *history);

/* A 64-bit seed as 16 hex digits (JSON numbers would lose bits), and back;
 * read returns -1 when the field is absent or not 16 hex digits. */
int search_state_add_seed(cJSON *object, const char *field, uint64_t seed);
int search_state_read_seed(const cJSON *object, const char *field, uint64_t *seed);

/* A non-negative integer field; -1 when absent or not one. */
int search_state_count(const cJSON *object, const char *field, uint64_t *out);

#endif
