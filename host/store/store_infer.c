/* store/store_infer.c - the deployed models' table. See store_infer.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

static const store_step infer_steps[] = {
    {.version = 1,
     .sql = "CREATE TABLE IF NOT EXISTS infer_models ("
            " name TEXT PRIMARY KEY, owner TEXT NOT NULL, dir TEXT NOT NULL,"
            " model_json TEXT NOT NULL, profile_json TEXT NOT NULL,"
            " started INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL)"},
};

const store_family store_family_infer = {"infer", infer_steps,
                                         sizeof infer_steps / sizeof *infer_steps};

void store_model_clear(infer_record *r)
{
    free(r->model_json);
    free(r->profile_json);
    r->model_json = r->profile_json = NULL;
}

static void model_name(char *what, size_t cap, const char *name)
{
    snprintf(what, cap, "model named \"%.64s\"", name);
}

loom_error *store_model_insert(store *st, const infer_record *r)
{
    sqlite3_stmt *s = store_prepare(st, "INSERT INTO infer_models(name, owner, dir, model_json, "
                                        "profile_json, started, created_at) "
                                        "VALUES(?,?,?,?,?,0,?)");
    if (!s)
        return store_unavailable(st, "record a model");
    sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, r->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, r->dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, r->model_json ? r->model_json : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, r->profile_json ? r->profile_json : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, r->created_at);
    loom_error *e = store_finish_write(st, s, "model", 0);
    if (e && loom_err_code(e) == LOOM_E_CONFLICT) {
        loom_err_free(e);
        e = loom_err(LOOM_E_CONFLICT, "a model named \"%s\" is already deployed", r->name);
    }
    return e;
}

static char *dup_text(sqlite3_stmt *s, int i)
{
    char *t = store_column_dup(s, i);
    return t ? t : strdup("");
}

static void read_model(sqlite3_stmt *s, void *row)
{
    infer_record *r = row;
    memset(r, 0, sizeof *r);
    store_column_text(s, 0, r->name, sizeof r->name);
    store_column_text(s, 1, r->owner, sizeof r->owner);
    store_column_text(s, 2, r->dir, sizeof r->dir);
    r->model_json = dup_text(s, 3);
    r->profile_json = dup_text(s, 4);
    r->started = sqlite3_column_int(s, 5);
    r->created_at = sqlite3_column_int64(s, 6);
}

#define SELECT_ROW                                                                   \
    "SELECT name, owner, dir, model_json, profile_json, started, created_at "       \
    "FROM infer_models"

loom_error *store_model_get(store *st, const char *name, infer_record *out)
{
    sqlite3_stmt *s = store_prepare(st, SELECT_ROW " WHERE name = ?");
    if (!s)
        return store_unavailable(st, "read models");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    char what[96];
    model_name(what, sizeof what, name);
    return store_read_one(st, s, read_model, out, what);
}

loom_error *store_model_all(store *st, infer_record **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *s = store_prepare(st, SELECT_ROW " ORDER BY name");
    if (!s)
        return store_unavailable(st, "read models");
    void *rows = NULL;
    loom_error *e = store_rows_prepared(st, s, sizeof(infer_record), read_model, &rows, count);
    *out = rows;
    return e;
}

/* A write naming the model by its first parameter; no row is
 * LOOM_E_NOT_FOUND. */
static loom_error *model_write(store *st, const char *sql, const char *name, const char *text,
                               int has_int, int64_t v)
{
    sqlite3_stmt *s = store_prepare(st, sql);
    if (!s)
        return store_unavailable(st, "change a model");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    if (text)
        sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
    if (has_int)
        sqlite3_bind_int64(s, 3, v);
    char what[96];
    model_name(what, sizeof what, name);
    return store_finish_write(st, s, what, 1);
}

loom_error *store_model_set_started(store *st, const char *name, int started)
{
    return model_write(st, "UPDATE infer_models SET started = ?3 WHERE name = ?1", name, NULL, 1,
                       started);
}

loom_error *store_model_set_profile(store *st, const char *name, const char *profile_json)
{
    return model_write(st, "UPDATE infer_models SET profile_json = ?2 WHERE name = ?1", name,
                       profile_json, 0, 0);
}

loom_error *store_model_delete(store *st, const char *name)
{
    return model_write(st, "DELETE FROM infer_models WHERE name = ?1", name, NULL, 0, 0);
}
