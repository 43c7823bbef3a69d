/* infer/infer_store.c - see infer_store.h. */
#include "infer/infer_store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void infer_record_clear(infer_record *r)
{
    free(r->model_json);
    free(r->profile_json);
    r->model_json = r->profile_json = NULL;
}

static loom_error *exec_sql(store *st, const char *sql)
{
    char *msg = NULL;
    store_lock(st);
    int rc = sqlite3_exec(store_db(st), sql, NULL, NULL, &msg);
    store_unlock(st);
    loom_error *e = rc == SQLITE_OK ? NULL
                                    : loom_err(LOOM_E_INTERNAL, "models table: %s",
                                               msg ? msg : "error");
    sqlite3_free(msg);
    return e;
}

loom_error *infer_store_init(store *st)
{
    return exec_sql(st, "CREATE TABLE IF NOT EXISTS infer_models ("
                        " name TEXT PRIMARY KEY, owner TEXT NOT NULL, dir TEXT NOT NULL,"
                        " model_json TEXT NOT NULL, profile_json TEXT NOT NULL,"
                        " started INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL)");
}

/* Runs a statement binding up to three texts and an optional integer
 * (bound when `has_int`); returns the number of rows changed, or -1. */
static int write_row(store *st, const char *sql, const char *a, const char *b, int has_int,
                     int64_t v, char *err, size_t errlen)
{
    sqlite3 *db = store_db(st);
    store_lock(st);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        if (a)
            sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
        if (b)
            sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
        if (has_int)
            sqlite3_bind_int64(s, 3, v);
        rc = sqlite3_step(s);
    }
    int changed = rc == SQLITE_DONE ? sqlite3_changes(db) : -1;
    if (changed < 0)
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(s);
    store_unlock(st);
    return changed;
}

loom_error *infer_store_insert(store *st, const infer_record *r)
{
    sqlite3 *db = store_db(st);
    store_lock(st);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "INSERT INTO infer_models(name, owner, dir, model_json, "
                                "profile_json, started, created_at) VALUES(?,?,?,?,?,0,?)",
                                -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, r->owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, r->dir, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, r->model_json, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, r->profile_json, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 6, r->created_at);
        rc = sqlite3_step(s);
    }
    loom_error *e = NULL;
    if (rc == SQLITE_CONSTRAINT)
        e = loom_err(LOOM_E_CONFLICT, "a model named \"%s\" is already deployed", r->name);
    else if (rc != SQLITE_DONE)
        e = loom_err(LOOM_E_INTERNAL, "cannot record model \"%s\": %s", r->name,
                     sqlite3_errmsg(db));
    sqlite3_finalize(s);
    store_unlock(st);
    return e;
}

static char *dup_column(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return strdup(t ? (const char *)t : "");
}

static void read_row(sqlite3_stmt *s, infer_record *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", (const char *)sqlite3_column_text(s, 0));
    snprintf(r->owner, sizeof r->owner, "%s", (const char *)sqlite3_column_text(s, 1));
    snprintf(r->dir, sizeof r->dir, "%s", (const char *)sqlite3_column_text(s, 2));
    r->model_json = dup_column(s, 3);
    r->profile_json = dup_column(s, 4);
    r->started = sqlite3_column_int(s, 5);
    r->created_at = sqlite3_column_int64(s, 6);
}

#define SELECT_ROW "SELECT name, owner, dir, model_json, profile_json, started, created_at " \
                   "FROM infer_models"

loom_error *infer_store_get(store *st, const char *name, infer_record *out)
{
    sqlite3 *db = store_db(st);
    store_lock(st);
    sqlite3_stmt *s = NULL;
    loom_error *e = NULL;
    if (sqlite3_prepare_v2(db, SELECT_ROW " WHERE name = ?", -1, &s, NULL) != SQLITE_OK) {
        e = loom_err(LOOM_E_INTERNAL, "models table: %s", sqlite3_errmsg(db));
    } else {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW)
            read_row(s, out);
        else
            e = loom_err(LOOM_E_NOT_FOUND, "no model named \"%s\"", name);
    }
    sqlite3_finalize(s);
    store_unlock(st);
    return e;
}

loom_error *infer_store_all(store *st, infer_record **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3 *db = store_db(st);
    store_lock(st);
    sqlite3_stmt *s = NULL;
    loom_error *e = NULL;
    size_t cap = 0;
    if (sqlite3_prepare_v2(db, SELECT_ROW " ORDER BY name", -1, &s, NULL) != SQLITE_OK)
        e = loom_err(LOOM_E_INTERNAL, "models table: %s", sqlite3_errmsg(db));
    while (!e && sqlite3_step(s) == SQLITE_ROW) {
        if (*count == cap) {
            cap = cap ? cap * 2 : 8;
            infer_record *grown = realloc(*out, cap * sizeof **out);
            if (!grown) {
                e = loom_err(LOOM_E_INTERNAL, "out of memory");
                break;
            }
            *out = grown;
        }
        read_row(s, &(*out)[(*count)++]);
    }
    sqlite3_finalize(s);
    store_unlock(st);
    return e;
}

static loom_error *changed_one(int changed, const char *err, const char *name)
{
    if (changed < 0)
        return loom_err(LOOM_E_INTERNAL, "models table: %s", err);
    return changed ? NULL : loom_err(LOOM_E_NOT_FOUND, "no model named \"%s\"", name);
}

loom_error *infer_store_set_started(store *st, const char *name, int started)
{
    char err[256];
    int n = write_row(st, "UPDATE infer_models SET started = ?3 WHERE name = ?1", name, NULL, 1,
                      started, err, sizeof err);
    return changed_one(n, err, name);
}

loom_error *infer_store_set_profile(store *st, const char *name, const char *profile_json)
{
    char err[256];
    int n = write_row(st, "UPDATE infer_models SET profile_json = ?2 WHERE name = ?1", name,
                      profile_json, 0, 0, err, sizeof err);
    return changed_one(n, err, name);
}

loom_error *infer_store_delete(store *st, const char *name)
{
    char err[256];
    int n = write_row(st, "DELETE FROM infer_models WHERE name = ?1", name, NULL, 0, 0, err,
                      sizeof err);
    return changed_one(n, err, name);
}
