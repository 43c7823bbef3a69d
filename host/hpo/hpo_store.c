/* hpo/hpo_store.c - see hpo_store.h. */
#include "hpo/hpo_store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS hpo_tasks("
    " name TEXT PRIMARY KEY, user TEXT NOT NULL, user_id INTEGER NOT NULL,"
    " is_admin INTEGER NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL,"
    " task_json TEXT NOT NULL, algo_state TEXT, search_finished INTEGER NOT NULL,"
    " next_id INTEGER NOT NULL, created_at INTEGER, started_at INTEGER, ended_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS hpo_experiments("
    " task TEXT NOT NULL, id INTEGER NOT NULL, exec_id TEXT NOT NULL, state TEXT NOT NULL,"
    " message TEXT NOT NULL, values_json TEXT NOT NULL, budget REAL, has_metric INTEGER,"
    " metric REAL, attempts INTEGER, observed INTEGER, start_at INTEGER, end_at INTEGER,"
    " PRIMARY KEY(task, id));";

static loom_error *sql_error(store *st, const char *what)
{
    return loom_err(LOOM_E_INTERNAL, "store: %s: %s", what, sqlite3_errmsg(store_db(st)));
}

loom_error *hpo_store_init(store *st)
{
    store_lock(st);
    char *msg = NULL;
    int rc = sqlite3_exec(store_db(st), schema, NULL, NULL, &msg);
    store_unlock(st);
    loom_error *e = rc == SQLITE_OK ? NULL
                                    : loom_err(LOOM_E_INTERNAL, "store: tuning tables: %s",
                                               msg ? msg : "?");
    sqlite3_free(msg);
    return e;
}

void hpo_task_rec_free(hpo_task_rec *t)
{
    free(t->task_json);
    free(t->algo_state);
    t->task_json = t->algo_state = NULL;
}

void hpo_exp_rec_free(hpo_exp_rec *x)
{
    free(x->values_json);
    x->values_json = NULL;
}

void hpo_exp_recs_free(hpo_exp_rec *x, size_t count)
{
    for (size_t i = 0; x && i < count; i++)
        hpo_exp_rec_free(&x[i]);
    free(x);
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? strdup((const char *)t) : NULL;
}

static void col_copy(sqlite3_stmt *s, int i, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

/* Runs a prepared write; lock held. */
static loom_error *run(store *st, sqlite3_stmt *s, const char *what)
{
    int rc = s ? sqlite3_step(s) : SQLITE_ERROR;
    loom_error *e = rc == SQLITE_DONE ? NULL
                    : rc == SQLITE_CONSTRAINT
                        ? loom_err(LOOM_E_CONFLICT, "store: %s: already exists", what)
                        : sql_error(st, what);
    sqlite3_finalize(s);
    return e;
}

static sqlite3_stmt *prep(store *st, const char *sql)
{
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL);
    return s;
}

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

loom_error *hpo_store_task_insert(store *st, const hpo_task_rec *t)
{
    store_lock(st);
    sqlite3_stmt *s = prep(st, "INSERT INTO hpo_tasks VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
    if (s)
        bind_task(s, t);
    loom_error *e = run(st, s, "tuning task");
    store_unlock(st);
    return e;
}

static loom_error *task_update_locked(store *st, const hpo_task_rec *t)
{
    sqlite3_stmt *s = prep(st, "UPDATE hpo_tasks SET state=?5, message=?6, algo_state=?8,"
                               " search_finished=?9, next_id=?10, started_at=?12, ended_at=?13"
                               " WHERE name=?1 AND user=?2 AND ?3=?3 AND ?4=?4 AND ?7=?7"
                               " AND ?11=?11");
    if (s)
        bind_task(s, t);
    return run(st, s, "tuning task");
}

loom_error *hpo_store_task_update(store *st, const hpo_task_rec *t)
{
    store_lock(st);
    loom_error *e = task_update_locked(st, t);
    store_unlock(st);
    return e;
}

/* The state word in column i, or NULL. */
static const char *col_word(sqlite3_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(s, i);
}

/* Fails, naming the task, on a state this version does not know. */
static loom_error *read_task(sqlite3_stmt *s, hpo_task_rec *t)
{
    memset(t, 0, sizeof *t);
    col_copy(s, 0, t->name, sizeof t->name);
    col_copy(s, 1, t->user, sizeof t->user);
    t->user_id = sqlite3_column_int64(s, 2);
    t->is_admin = sqlite3_column_int(s, 3);
    loom_error *e = hpo_task_state_parse(col_word(s, 4), &t->state);
    col_copy(s, 5, t->message, sizeof t->message);
    t->task_json = col_dup(s, 6);
    t->algo_state = col_dup(s, 7);
    t->search_finished = sqlite3_column_int(s, 8);
    t->next_id = (uint64_t)sqlite3_column_int64(s, 9);
    t->created_at = sqlite3_column_int64(s, 10);
    t->started_at = sqlite3_column_int64(s, 11);
    t->ended_at = sqlite3_column_int64(s, 12);
    return loom_err_wrap(e, "tuning task \"%s\"", t->name);
}

loom_error *hpo_store_task_get(store *st, const char *name, hpo_task_rec *out)
{
    store_lock(st);
    sqlite3_stmt *s = prep(st, "SELECT * FROM hpo_tasks WHERE name=?1");
    loom_error *e = NULL;
    if (!s) {
        e = sql_error(st, "tuning task");
    } else {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            if ((e = read_task(s, out)) != NULL)
                hpo_task_rec_free(out);
        } else {
            e = rc == SQLITE_DONE ? loom_err(LOOM_E_NOT_FOUND, "no tuning task \"%s\"", name)
                                  : sql_error(st, "tuning task");
        }
    }
    sqlite3_finalize(s);
    store_unlock(st);
    return e;
}

loom_error *hpo_store_task_delete(store *st, const char *name)
{
    store_lock(st);
    sqlite3_stmt *s = prep(st, "DELETE FROM hpo_experiments WHERE task=?1");
    if (s)
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    loom_error *e = run(st, s, "tuning experiments");
    if (!e && (s = prep(st, "DELETE FROM hpo_tasks WHERE name=?1")) != NULL)
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    if (!e)
        e = run(st, s, "tuning task");
    store_unlock(st);
    return e;
}

loom_error *hpo_store_task_each(store *st, void (*fn)(const hpo_task_rec *, void *), void *ctx)
{
    /* Read every row first, then call fn without the lock. */
    store_lock(st);
    sqlite3_stmt *s = prep(st, "SELECT * FROM hpo_tasks ORDER BY created_at, name");
    hpo_task_rec *rows = NULL;
    size_t n = 0, cap = 0;
    int rc = SQLITE_ERROR;
    loom_error *e = NULL;
    while (s && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            hpo_task_rec *grown = realloc(rows, cap * sizeof *rows);
            if (!grown)
                break;
            rows = grown;
        }
        if ((e = read_task(s, &rows[n++])) != NULL)
            break;
    }
    if (!e && rc != SQLITE_DONE)
        e = sql_error(st, "tuning tasks");
    sqlite3_finalize(s);
    store_unlock(st);
    for (size_t i = 0; i < n; i++) {
        if (!e)
            fn(&rows[i], ctx);
        hpo_task_rec_free(&rows[i]);
    }
    free(rows);
    return e;
}

static loom_error *exp_put_locked(store *st, const hpo_exp_rec *x)
{
    sqlite3_stmt *s = prep(st, "INSERT OR REPLACE INTO hpo_experiments VALUES"
                               "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
    if (s) {
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
    }
    return run(st, s, "tuning experiment");
}

loom_error *hpo_store_exp_put(store *st, const hpo_exp_rec *x)
{
    store_lock(st);
    loom_error *e = exp_put_locked(st, x);
    store_unlock(st);
    return e;
}

/* Makes room in *rows (of *cap rows of `size`) for row `count`, doubling:
 * 0, or -1 out of memory (the rows as they were). */
static int room_for_one(void **rows, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 0;
    size_t grown_cap = *cap ? *cap * 2 : 16;
    void *grown = realloc(*rows, grown_cap * size);
    if (!grown)
        return -1;
    *rows = grown;
    *cap = grown_cap;
    return 0;
}

loom_error *hpo_store_exp_list(store *st, const char *task, hpo_exp_rec **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    store_lock(st);
    sqlite3_stmt *s = prep(st, "SELECT * FROM hpo_experiments WHERE task=?1 ORDER BY id");
    if (s)
        sqlite3_bind_text(s, 1, task, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc = SQLITE_ERROR;
    loom_error *e = NULL;
    while (s && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (room_for_one((void **)out, &cap, *count, sizeof **out) != 0) {
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
            break;
        }
        hpo_exp_rec *x = &(*out)[(*count)++];
        memset(x, 0, sizeof *x);
        col_copy(s, 0, x->task, sizeof x->task);
        x->id = (uint64_t)sqlite3_column_int64(s, 1);
        col_copy(s, 2, x->exec_id, sizeof x->exec_id);
        if ((e = hpo_exp_state_parse(col_word(s, 3), &x->state)) != NULL) {
            e = loom_err_wrap(e, "tuning task \"%s\" experiment %llu", x->task,
                                (unsigned long long)x->id);
            break;
        }
        col_copy(s, 4, x->message, sizeof x->message);
        x->values_json = col_dup(s, 5);
        x->budget = sqlite3_column_double(s, 6);
        x->has_metric = sqlite3_column_int(s, 7);
        x->metric = sqlite3_column_double(s, 8);
        x->attempts = sqlite3_column_int(s, 9);
        x->observed = sqlite3_column_int(s, 10);
        x->start_at = sqlite3_column_int64(s, 11);
        x->end_at = sqlite3_column_int64(s, 12);
    }
    if (!e && rc != SQLITE_DONE)
        e = sql_error(st, "tuning experiments");
    sqlite3_finalize(s);
    store_unlock(st);
    if (e) {
        hpo_exp_recs_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return e;
}

loom_error *hpo_store_commit(store *st, const hpo_task_rec *t, hpo_exp_rec *xs, size_t n)
{
    store_lock(st);
    sqlite3 *db = store_db(st);
    loom_error *e = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
                        ? NULL
                        : sql_error(st, "begin");
    for (size_t i = 0; !e && i < n; i++)
        if (xs[i].dirty)
            e = exp_put_locked(st, &xs[i]);
    if (!e)
        e = task_update_locked(st, t);
    if (!e && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        e = sql_error(st, "commit");
    if (e)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    for (size_t i = 0; !e && i < n; i++)
        xs[i].dirty = 0;
    store_unlock(st);
    return e;
}

loom_error *hpo_store_exec_tasks(store *st, hpo_exec_task **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    store_lock(st);
    sqlite3_stmt *s = prep(st, "SELECT exec_id, task, id FROM hpo_experiments WHERE exec_id != '' "
                               "ORDER BY exec_id");
    size_t cap = 0;
    int rc = SQLITE_ERROR;
    loom_error *e = NULL;
    while (s && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (room_for_one((void **)out, &cap, *count, sizeof **out) != 0) {
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
            break;
        }
        hpo_exec_task *x = &(*out)[(*count)++];
        col_copy(s, 0, x->exec_id, sizeof x->exec_id);
        col_copy(s, 1, x->task, sizeof x->task);
        x->experiment = (uint64_t)sqlite3_column_int64(s, 2);
    }
    if (!e && rc != SQLITE_DONE)
        e = sql_error(st, "tuning experiments");
    sqlite3_finalize(s);
    store_unlock(st);
    if (e) {
        free(*out);
        *out = NULL;
        *count = 0;
    }
    return e;
}
