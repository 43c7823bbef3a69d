/*
 * infer/infer_store.h - deployed models in the host's database (a table of
 * the infer service's own, through store_db): who deployed each, where its
 * directory is, its model.json and profile, and whether it is started, so
 * that a restarted host starts again what was started.
 */
#ifndef LOOM_INFER_INFER_STORE_H
#define LOOM_INFER_INFER_STORE_H

#include <limits.h>
#include <stdint.h>

#include "store/store.h"
#include "util/error.h"

typedef struct infer_record {
    char name[64];
    char owner[64];
    char dir[PATH_MAX]; /* HOME/models/NAME */
    char *model_json;   /* malloc'd */
    char *profile_json; /* malloc'd */
    int started;
    int64_t created_at; /* unix ms */
} infer_record;

void infer_record_clear(infer_record *r);

loom_error *infer_store_init(store *st);
/* LOOM_E_CONFLICT when the name is taken. */
loom_error *infer_store_insert(store *st, const infer_record *r);
/* LOOM_E_NOT_FOUND when there is none. */
loom_error *infer_store_get(store *st, const char *name, infer_record *out);
loom_error *infer_store_set_started(store *st, const char *name, int started);
loom_error *infer_store_set_profile(store *st, const char *name, const char *profile_json);
loom_error *infer_store_delete(store *st, const char *name);
/* Every record, in name order: a malloc'd array (clear each, free it). */
loom_error *infer_store_all(store *st, infer_record **out, size_t *count);

#endif
