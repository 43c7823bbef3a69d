/*
 * algorithms/common/search_space.h - the typed search space of
 * "loom.search/2" (loom_param), copied once at create and mapped to and from
 * the unit cube, for every built-in search plugin.
 *
 * Every parameter maps a coordinate u in [0, 1) onto its values, uniformly
 * in the sampled domain: the exponent for log-scale ranges, the index for
 * stepped ranges, integer ranges and choice lists. Random search draws u;
 * model-based searches (TPE, Bayesian) model the objective over the cube and
 * turn points into values with the same function, so integer, stepped,
 * string and log-scale parameters work in all of them alike.
 */
#ifndef LOOM_SEARCH_SPACE_H
#define LOOM_SEARCH_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <loom/loom.h>

/* A deep copy of the host's parameters: the plugin keeps it past create. */
typedef struct search_space {
    uint32_t count;
    loom_param *params;
} search_space;

/* Copies and checks `count` parameters (the host validated them; a plugin
 * checks again because a third-party host may not have). Returns 0, or -1
 * with a message naming the parameter and field in err (*out is then
 * empty). */
int search_space_copy(search_space *out, const loom_param *params,
                      uint32_t count, char *err, size_t errlen);
void search_space_free(search_space *space);

/* Number of distinct values, or 0 when continuous (a DOUBLE range without
 * step, or an INT range on a log scale without step). */
uint64_t search_param_levels(const loom_param *p);

/* The value at coordinate u (clamped into [0, 1)). A string value points
 * into the parameter's choice_strings. */
void search_param_value(const loom_param *p, double u, loom_value *out);

/* The coordinate of a value: the centre of its level, or its position in a
 * continuous range; values outside the domain are clamped. */
double search_param_unit(const loom_param *p, const loom_value *v);

/* 1 when v has the parameter's type and lies in its domain. */
int search_param_contains(const loom_param *p, const loom_value *v);

/* Fills out[] (space->count values) from the coordinates u[]. */
void search_space_values(const search_space *space, const double *u,
                         loom_value *out);

/* A value as JSON (number or string) and back; from_json returns -1 when the
 * item does not fit the parameter. */
cJSON *search_value_to_json(const loom_param *p, const loom_value *v);
int search_value_from_json(const loom_param *p, const cJSON *item,
                           loom_value *out);

/* One proposal as text "name=value, ..." for log lines; returns buf. */
const char *search_values_text(const search_space *space, const loom_value *v,
                               char *buf, size_t len);

/* Maps u to values and hands them to the host as one proposal (no
 * budget). 1 when taken; 0 when the host refused it, which is logged
 * through `host` naming the values and, through ABI 1.5's propose_experiment,
 * the host's reason (the caller stops proposing for now: a
 * refused point is not counted, the next suggest draws a new one). */
int search_space_propose(const search_space *space, const double *u, loom_value *values,
                         const loom_proposal_sink *sink, const loom_host *host);

#endif
