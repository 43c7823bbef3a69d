/*
 * plugin/search_wire.h - a search instance's calls on the plugin-host wire
 * (plugin_wire.h), shared by both ends so they cannot disagree:
 *   CREATE  the loom_search_config (space, options, explicit experiments)
 *           reply: u8 has_state (save_state/load_state present)
 *   SUGGEST u64 next_id, u32 max
 *   OBSERVE u64 next_id, the loom_observation
 *           reply of both: the sink's record (search_outcome)
 *   SAVE    reply: the state string (NULL: the plugin keeps none)
 *   LOAD    str state
 * In the child, propose() assigns ids from next_id on, refuses values
 * outside the space (the outcome says which) and proposals past `max`.
 */
#ifndef LOOM_PLUGIN_SEARCH_WIRE_H
#define LOOM_PLUGIN_SEARCH_WIRE_H

#include <loom/search.h>

#include "plugin/plugin_wire.h"
#include "util/error.h"

/* A config decoded from a frame, owning all it points at. */
typedef struct search_config_copy {
    loom_search_config cfg;
    char *objective_metric;
    loom_param *params;
    loom_search_option *options;
    loom_value **experiments;
} search_config_copy;

void search_wire_put_config(wire_buf *b, const loom_search_config *cfg);
/* 0, or -1 (r->bad, or out of memory). */
int search_wire_get_config(wire_reader *r, search_config_copy *out);
void search_config_copy_free(search_config_copy *c);

/* Values: count, then per value its type, double, integer and string. A
 * decoded string points into the frame (a copy with `dup`). */
void search_wire_put_values(wire_buf *b, const loom_value *v, uint32_t n);
/* Decodes exactly `n` values into out (r->bad when the count differs). */
void search_wire_get_values(wire_reader *r, loom_value *out, uint32_t n, int dup);

void search_wire_put_observation(wire_buf *b, const loom_observation *o);

/* What a suggest or observe did through the sink. */
typedef struct search_proposal {
    uint64_t id;
    double budget;
    loom_value *values; /* param_count; strings owned */
} search_proposal;

typedef struct search_outcome {
    uint32_t nproposals;
    search_proposal *proposals;
    uint32_t nstops;
    uint64_t *stops;
    int finished;
    char refused[512]; /* the first proposal refused as outside the space, or "" */
} search_outcome;

void search_wire_put_outcome(wire_buf *b, const search_outcome *o, uint32_t param_count);
/* 0, or -1 (malformed, or out of memory). */
int search_wire_get_outcome(wire_reader *r, uint32_t param_count, search_outcome *out);
void search_outcome_free(search_outcome *o, uint32_t param_count);

/* The check both ends make on a proposed value (hpo repeats it). NULL when
 * v is a value of p, else LOOM_E_INVALID with the reason. */
loom_error *search_value_fits(const loom_param *p, const loom_value *v);

#endif
