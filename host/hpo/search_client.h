/*
 * hpo/search_client.h - one task's search algorithm, run in a `loom
 * plugin-host` child (plugin/plugin_proc.h) and spoken to over the search
 * calls of plugin/search_wire.h. Its errors name the plugin ("search 'tpe'
 * suggest: no answer within 5000 ms: its process was killed").
 */
#ifndef LOOM_HPO_SEARCH_CLIENT_H
#define LOOM_HPO_SEARCH_CLIENT_H

#include <loom/search.h>

#include "plugin/search_wire.h"
#include "util/error.h"

typedef struct search_client search_client;

typedef struct search_client_spec {
    const char *binary;      /* the loom binary (plugin-host) */
    const char *plugin_path; /* the plugin's file */
    const char *name;        /* its registered name */
    const char *output;      /* the child's stdout/stderr file, or NULL */
    const char *const *read_dirs; /* more trees the child may read, or NULL */
    unsigned deadline_ms;    /* per call; 0: plugin_proc's default */
    const char *owner;       /* the task's owner: the child runs under their account */
    int64_t owner_id;        /* their immutable id */
    const char *work_dir;    /* the one folder the child writes (its TMPDIR), or NULL */
} search_client_spec;

/* Starts the child and creates the instance. */
loom_error *search_client_start(const search_client_spec *spec, const loom_search_config *cfg,
                                search_client **out);
void search_client_free(search_client *c);
/* 1 when the plugin saves and restores its state. */
int search_client_has_state(const search_client *c);

/* Proposal ids start at next_id. *out is filled on success (free with
 * search_outcome_free(out, param_count)). */
loom_error *search_client_suggest(search_client *c, uint64_t next_id, uint32_t max,
                                  search_outcome *out);
loom_error *search_client_observe(search_client *c, uint64_t next_id, const loom_observation *obs,
                                  search_outcome *out);
/* *state: malloc'd, or NULL when the plugin keeps none. */
loom_error *search_client_save(search_client *c, char **state);
loom_error *search_client_load(search_client *c, const char *state);

#endif
