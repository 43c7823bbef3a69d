/*
 * store/store_infer.h - deployed models in the host's database: who
 * deployed each, where its directory is, its model.json and profile, and
 * whether it is started, so that a restarted host starts again what was
 * started. Errors as in store.h.
 */
#ifndef LOOM_STORE_STORE_INFER_H
#define LOOM_STORE_STORE_INFER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

typedef struct infer_record {
    char name[64];
    char owner[64];
    char dir[PATH_MAX]; /* HOME/models/NAME */
    char *model_json;   /* malloc'd */
    char *profile_json; /* malloc'd */
    int started;
    int64_t created_at; /* unix ms */
} infer_record;

/* Frees what r holds (not r). */
void store_model_clear(infer_record *r);

/* LOOM_E_CONFLICT when the name is taken; `started` is written 0. */
loom_error *store_model_insert(store *st, const infer_record *r);
/* LOOM_E_NOT_FOUND when there is none. */
loom_error *store_model_get(store *st, const char *name, infer_record *out);
loom_error *store_model_set_started(store *st, const char *name, int started);
loom_error *store_model_set_profile(store *st, const char *name, const char *profile_json);
loom_error *store_model_delete(store *st, const char *name);
/* Every record, in name order: a malloc'd array (clear each, free it). */
loom_error *store_model_all(store *st, infer_record **out, size_t *count);

#endif
