/* store/store_hpo.c - tuning's tables and records. See store_hpo.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

static const store_step hpo_steps[] = {
    {.version = 1,
     .sql = "CREATE TABLE IF NOT EXISTS hpo_tasks("
            " name TEXT PRIMARY KEY, user TEXT NOT NULL, user_id INTEGER NOT NULL,"
            " is_admin INTEGER NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL,"
            " task_json TEXT NOT NULL, algo_state TEXT, search_finished INTEGER NOT NULL,"
            " next_id INTEGER NOT NULL, created_at INTEGER, started_at INTEGER,"
            " ended_at INTEGER);"
            "CREATE TABLE IF NOT EXISTS hpo_experiments("
            " task TEXT NOT NULL, id INTEGER NOT NULL, exec_id TEXT NOT NULL,"
            " state TEXT NOT NULL, message TEXT NOT NULL, values_json TEXT NOT NULL,"
            " budget REAL, has_metric INTEGER, metric REAL, attempts INTEGER,"
            " observed INTEGER, start_at INTEGER, end_at INTEGER, PRIMARY KEY(task, id));"},
    {.version = 2,
     .sql = "CREATE TABLE IF NOT EXISTS hpo_algorithms(name TEXT PRIMARY KEY,"
            " user TEXT NOT NULL, dir TEXT NOT NULL, python TEXT NOT NULL,"
            " log_level TEXT NOT NULL, added_at INTEGER);"},
    /* Optimizers installed before they had owners' rights stay their
     * installers' own. */
    {.version = 3, .table = "hpo_algorithms", .column = "published",
     .definition = "INTEGER NOT NULL DEFAULT 0"},
};

const store_family store_family_hpo = {"hpo", hpo_steps, sizeof hpo_steps / sizeof *hpo_steps};

void store_hpo_task_free(hpo_task_rec *t)
{
    free(t->task_json);
    free(t->algo_state);
    t->task_json = t->algo_state = NULL;
}

void store_hpo_exp_free(hpo_exp_rec *x)
{
    free(x->values_json);
    x->values_json = NULL;
}

void store_hpo_exps_free(hpo_exp_rec *x, size_t count)
{
    for (size_t i = 0; x && i < count; i++)
        store_hpo_exp_free(&x[i]);
    free(x);
}

/* ---- tasks ---- */

#define TASK_COLUMNS                                                                    \
    "name, user, user_id, is_admin, state, message, task_json, algo_state, "           \
    "search_finished, next_id, created_at, started_at, ended_at"

static void bind_task(sqlite3_stmt *s, const hpo_task_rec *t)
{
    sqlite3_bind_text(s, 1, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, t->user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, t->user_id);
    sqlite3_bind_int(s, 4, t->is_admin);
    sqlite3_bind_text(s, 5, hpo_task_state_text(t->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, t->message, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 7, t->task_json ? t->task_json : "", -1, SQLITE_STATIC);
    if (t->algo_state)
        sqlite3_bind_text(s, 8, t->algo_state, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 8);
    sqlite3_bind_int(s, 9, t->search_finished);
    sqlite3_bind_int64(s, 10, (sqlite3_int64)t->next_id);
    sqlite3_bind_int64(s, 11, t->created_at);
    sqlite3_bind_int64(s, 12, t->started_at);
    sqlite3_bind_int64(s, 13, t->ended_at);
}

loom_error *store_hpo_task_insert(store *st, const hpo_task_rec *t)
{
    sqlite3_stmt *s = store_prepare(st, "INSERT INTO hpo_tasks(" TASK_COLUMNS ") VALUES"
                                        "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
    if (!s)
        return store_unavailable(st, "record a tuning task");
    bind_task(s, t);
    return store_finish_write(st, s, "tuning task", 0);
}

loom_error *store_hpo_task_update(store *st, const hpo_task_rec *t)
{
    sqlite3_stmt *s = store_prepare(st, "UPDATE hpo_tasks SET state=?5, message=?6, algo_state=?8,"
                                        " search_finished=?9, next_id=?10, started_at=?12,"
                                        " ended_at=?13 WHERE name=?1 AND user=?2 AND ?3=?3"
                                        " AND ?4=?4 AND ?7=?7 AND ?11=?11");
    if (!s)
        return store_unavailable(st, "update a tuning task");
    bind_task(s, t);
    return store_finish_write(st, s, "tuning task", 0);
}

static void read_task(sqlite3_stmt *s, void *row)
{
    hpo_task_rec *t = row;
    memset(t, 0, sizeof *t);
    store_column_text(s, 0, t->name, sizeof t->name);
    store_column_text(s, 1, t->user, sizeof t->user);
    t->user_id = sqlite3_column_int64(s, 2);
    t->is_admin = sqlite3_column_int(s, 3);
    store_column_text(s, 5, t->message, sizeof t->message);
    loom_error *unknown = hpo_task_state_parse((const char *)sqlite3_column_text(s, 4), &t->state);
    if (unknown) { /* written by a later version: shown as ended, with why */
        t->state = HPO_TASK_FAILED;
        loom_err_take(unknown, t->message, sizeof t->message);
    }
    t->task_json = store_column_dup(s, 6);
    t->algo_state = store_column_dup(s, 7);
    t->search_finished = sqlite3_column_int(s, 8);
    t->next_id = (uint64_t)sqlite3_column_int64(s, 9);
    t->created_at = sqlite3_column_int64(s, 10);
    t->started_at = sqlite3_column_int64(s, 11);
    t->ended_at = sqlite3_column_int64(s, 12);
}

loom_error *store_hpo_task_get(store *st, const char *name, hpo_task_rec *out)
{
    sqlite3_stmt *s = store_prepare(st, "SELECT " TASK_COLUMNS " FROM hpo_tasks WHERE name=?1");
    if (!s)
        return store_unavailable(st, "read a tuning task");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    char what[160];
    snprintf(what, sizeof what, "tuning task \"%.128s\"", name);
    return store_read_one(st, s, read_task, out, what);
}

loom_error *store_hpo_task_delete(store *st, const char *name)
{
    loom_error *e = store_txn_begin(st);
    if (e)
        return e;
    sqlite3_stmt *s = NULL;
    if (!(s = store_prepare(st, "DELETE FROM hpo_experiments WHERE task=?1")))
        e = store_unavailable(st, "delete tuning experiments");
    if (!e) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        e = store_finish_write(st, s, "tuning experiments", 0);
    }
    if (!e && !(s = store_prepare(st, "DELETE FROM hpo_tasks WHERE name=?1")))
        e = store_unavailable(st, "delete a tuning task");
    if (!e) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        e = store_finish_write(st, s, "tuning task", 0);
    }
    return store_txn_end(st, e);
}

loom_error *store_hpo_task_each(store *st, void (*fn)(const hpo_task_rec *, void *), void *ctx)
{
    sqlite3_stmt *s = store_prepare(st, "SELECT " TASK_COLUMNS " FROM hpo_tasks "
                                        "ORDER BY created_at, name");
    if (!s)
        return store_unavailable(st, "read tuning tasks");
    void *rows = NULL;
    size_t n = 0;
    loom_error *e = store_rows_prepared(st, s, sizeof(hpo_task_rec), read_task, &rows, &n);
    hpo_task_rec *t = rows;
    for (size_t i = 0; i < n; i++) {
        if (!e)
            fn(&t[i], ctx);
        store_hpo_task_free(&t[i]);
    }
    free(rows);
    return e;
}

/* ---- experiments ---- */

static loom_error *exp_put(store *st, const hpo_exp_rec *x)
{
    sqlite3_stmt *s = store_prepare(st, "INSERT OR REPLACE INTO hpo_experiments(task, id, "
                                        "exec_id, state, message, values_json, budget, "
                                        "has_metric, metric, attempts, observed, start_at, "
                                        "end_at) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
    if (!s)
        return store_unavailable(st, "record a tuning experiment");
    sqlite3_bind_text(s, 1, x->task, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)x->id);
    sqlite3_bind_text(s, 3, x->exec_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, hpo_exp_state_text(x->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, x->message, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, x->values_json ? x->values_json : "[]", -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 7, x->budget);
    sqlite3_bind_int(s, 8, x->has_metric);
    sqlite3_bind_double(s, 9, x->metric);
    sqlite3_bind_int(s, 10, x->attempts);
    sqlite3_bind_int(s, 11, x->observed);
    sqlite3_bind_int64(s, 12, x->start_at);
    sqlite3_bind_int64(s, 13, x->end_at);
    return store_finish_write(st, s, "tuning experiment", 0);
}

loom_error *store_hpo_exp_put(store *st, const hpo_exp_rec *x)
{
    return exp_put(st, x);
}

static void read_exp(sqlite3_stmt *s, void *row)
{
    hpo_exp_rec *x = row;
    store_column_text(s, 0, x->task, sizeof x->task);
    x->id = (uint64_t)sqlite3_column_int64(s, 1);
    store_column_text(s, 2, x->exec_id, sizeof x->exec_id);
    store_column_text(s, 4, x->message, sizeof x->message);
    loom_error *unknown = hpo_exp_state_parse((const char *)sqlite3_column_text(s, 3), &x->state);
    if (unknown) { /* written by a later version: shown as ended, with why */
        x->state = HPO_EXP_ERROR;
        loom_err_take(unknown, x->message, sizeof x->message);
    }
    x->values_json = store_column_dup(s, 5);
    x->budget = sqlite3_column_double(s, 6);
    x->has_metric = sqlite3_column_int(s, 7);
    x->metric = sqlite3_column_double(s, 8);
    x->attempts = sqlite3_column_int(s, 9);
    x->observed = sqlite3_column_int(s, 10);
    x->start_at = sqlite3_column_int64(s, 11);
    x->end_at = sqlite3_column_int64(s, 12);
}

loom_error *store_hpo_exp_list(store *st, const char *task, hpo_exp_rec **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *s = store_prepare(st, "SELECT task, id, exec_id, state, message, values_json, "
                                        "budget, has_metric, metric, attempts, observed, "
                                        "start_at, end_at FROM hpo_experiments WHERE task=?1 "
                                        "ORDER BY id");
    if (!s)
        return store_unavailable(st, "read tuning experiments");
    sqlite3_bind_text(s, 1, task, -1, SQLITE_STATIC);
    void *rows = NULL;
    loom_error *e = store_rows_prepared(st, s, sizeof(hpo_exp_rec), read_exp, &rows, count);
    *out = rows;
    if (e) {
        store_hpo_exps_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return e;
}

loom_error *store_hpo_commit(store *st, const hpo_task_rec *t, hpo_exp_rec *xs, size_t n)
{
    loom_error *e = store_txn_begin(st);
    if (e)
        return e;
    for (size_t i = 0; !e && i < n; i++)
        if (xs[i].dirty)
            e = exp_put(st, &xs[i]);
    if (!e)
        e = store_hpo_task_update(st, t);
    e = store_txn_end(st, e);
    for (size_t i = 0; !e && i < n; i++)
        xs[i].dirty = 0;
    return e;
}

static void read_exec_task(sqlite3_stmt *s, void *row)
{
    hpo_exec_task *x = row;
    store_column_text(s, 0, x->exec_id, sizeof x->exec_id);
    store_column_text(s, 1, x->task, sizeof x->task);
    x->experiment = (uint64_t)sqlite3_column_int64(s, 2);
}

loom_error *store_hpo_exec_tasks(store *st, hpo_exec_task **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *s = store_prepare(st, "SELECT exec_id, task, id FROM hpo_experiments "
                                        "WHERE exec_id != '' ORDER BY exec_id");
    if (!s)
        return store_unavailable(st, "read tuning experiments");
    void *rows = NULL;
    loom_error *e = store_rows_prepared(st, s, sizeof(hpo_exec_task), read_exec_task, &rows, count);
    *out = rows;
    if (e) {
        free(*out);
        *out = NULL;
        *count = 0;
    }
    return e;
}

/* ---- plugin optimizers ---- */

#define ALGORITHM_COLUMNS "name, user, dir, python, log_level, added_at, published"

loom_error *store_hpo_algorithm_insert(store *st, const hpo_algorithm_rec *a)
{
    sqlite3_stmt *s = store_prepare(st, "INSERT INTO hpo_algorithms(name, user, dir, python, "
                                        "log_level, added_at) VALUES(?1,?2,?3,?4,?5,?6)");
    if (!s)
        return store_unavailable(st, "record a plugin optimizer");
    sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, a->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, a->dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, a->python, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, a->log_level, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, a->added_at);
    char what[96];
    snprintf(what, sizeof what, "plugin optimizer \"%.64s\"", a->name);
    return store_finish_write(st, s, what, 0);
}

static void read_algorithm(sqlite3_stmt *s, void *row)
{
    hpo_algorithm_rec *r = row;
    memset(r, 0, sizeof *r);
    store_column_text(s, 0, r->name, sizeof r->name);
    store_column_text(s, 1, r->user, sizeof r->user);
    store_column_text(s, 2, r->dir, sizeof r->dir);
    store_column_text(s, 3, r->python, sizeof r->python);
    store_column_text(s, 4, r->log_level, sizeof r->log_level);
    r->added_at = sqlite3_column_int64(s, 5);
    r->published = sqlite3_column_int(s, 6);
}

loom_error *store_hpo_algorithm_get(store *st, const char *name, hpo_algorithm_rec *out)
{
    sqlite3_stmt *s = store_prepare(st, "SELECT " ALGORITHM_COLUMNS " FROM hpo_algorithms "
                                        "WHERE name=?1");
    if (!s)
        return store_unavailable(st, "read plugin optimizers");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "plugin optimizer \"%.64s\"", name);
    return store_read_one(st, s, read_algorithm, out, what);
}

loom_error *store_hpo_algorithm_list(store *st, hpo_algorithm_rec **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *s = store_prepare(st, "SELECT " ALGORITHM_COLUMNS " FROM hpo_algorithms "
                                        "ORDER BY name");
    if (!s)
        return store_unavailable(st, "read plugin optimizers");
    void *rows = NULL;
    loom_error *e = store_rows_prepared(st, s, sizeof(hpo_algorithm_rec), read_algorithm, &rows,
                                        count);
    *out = rows;
    if (e) {
        free(*out);
        *out = NULL;
        *count = 0;
    }
    return e;
}

loom_error *store_hpo_algorithm_delete(store *st, const char *name)
{
    sqlite3_stmt *s = store_prepare(st, "DELETE FROM hpo_algorithms WHERE name=?1");
    if (!s)
        return store_unavailable(st, "remove a plugin optimizer");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    return store_finish_write(st, s, "plugin optimizer", 0);
}

loom_error *store_hpo_algorithm_publish(store *st, const char *name, int published)
{
    sqlite3_stmt *s = store_prepare(st, "UPDATE hpo_algorithms SET published=?1 WHERE name=?2");
    if (!s)
        return store_unavailable(st, "publish a plugin optimizer");
    sqlite3_bind_int(s, 1, published != 0);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "plugin optimizer \"%.64s\"", name);
    return store_finish_write(st, s, what, 1);
}
