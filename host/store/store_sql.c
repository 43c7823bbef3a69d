/* store/store_sql.c - the statement helpers every store_*.c file uses, and
 * transactions (store.h). See store_internal.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"
#include "util/log.h"

sqlite3_stmt *store_prepare(store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->lock);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        log_error("store: cannot prepare \"%s\": %s", sql, sqlite3_errmsg(s->db));
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    return st;
}

void store_finish(store *s, sqlite3_stmt *st)
{
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
}

loom_error *store_unavailable(store *s, const char *what)
{
    return loom_err(LOOM_E_INTERNAL, "store: cannot %s: %s", what, sqlite3_errmsg(s->db));
}

void store_column_text(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

char *store_column_dup(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

static int disk_full(store *s, int rc)
{
    return (rc & 0xff) == SQLITE_FULL ||
           ((rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(s->db) == ENOSPC);
}

/* Steps a write; on a full disk, makes room and tries again: first by
 * copying the WAL into the database and truncating it (a WAL that cannot
 * grow), then by giving up the reserve. A statement that failed on a full
 * disk has changed nothing, so it can run again. Inside a transaction the
 * WAL cannot be copied back, so only the reserve helps. */
static int step_write(store *s, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    for (int attempt = 0; disk_full(s, rc) && attempt < 2; attempt++) {
        sqlite3_reset(st);
        if (attempt == 0 && !s->txn_depth)
            sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        else if (!disk_reserve_release(&s->reserve))
            break;
        rc = sqlite3_step(st);
    }
    return rc;
}

loom_error *store_finish_write(store *s, sqlite3_stmt *st, const char *what, int must_change)
{
    int rc = step_write(s, st);
    loom_error *e = NULL;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        e = loom_err(LOOM_E_CONFLICT, "%s already exists", what);
    else if (disk_full(s, rc))
        e = loom_err(LOOM_E_LIMIT, "store: %s: the disk holding the host's state is full", what);
    else if (rc != SQLITE_DONE)
        e = loom_err(LOOM_E_INTERNAL, "store: %s: %s", what, sqlite3_errmsg(s->db));
    else if (must_change && sqlite3_changes(s->db) == 0)
        e = loom_err(LOOM_E_NOT_FOUND, "no %s", what);
    store_finish(s, st);
    /* Inside a transaction a rollback would lose what was flushed. */
    if (!e && s->npending && !s->txn_depth)
        store_flush_pending(s);
    return e;
}

loom_error *store_read_one(store *s, sqlite3_stmt *st, store_row_reader read, void *out,
                           const char *missing)
{
    int rc = sqlite3_step(st);
    loom_error *e = NULL;
    if (rc == SQLITE_ROW)
        read(st, out);
    else if (rc == SQLITE_DONE)
        e = loom_err(LOOM_E_NOT_FOUND, "no %s", missing);
    else
        e = store_unavailable(s, "read");
    store_finish(s, st);
    return e;
}

static void read_int(sqlite3_stmt *st, void *out)
{
    *(int64_t *)out = sqlite3_column_int64(st, 0);
}

loom_error *store_read_int(store *s, sqlite3_stmt *st, int64_t *out, const char *what)
{
    *out = 0;
    return store_read_one(s, st, read_int, out, what);
}

/* Rows read under the lock, handed over after it. */
typedef struct row_buffer {
    char *rows;
    size_t size, n, cap;
} row_buffer;

static void *row_next(row_buffer *b)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        char *grown = realloc(b->rows, cap * b->size);
        if (!grown)
            return NULL;
        b->rows = grown;
        b->cap = cap;
    }
    return b->rows + b->size * b->n++;
}

loom_error *store_rows_prepared(store *s, sqlite3_stmt *st, size_t size, store_row_reader read,
                                void **out, size_t *count)
{
    row_buffer b = {.size = size};
    loom_error *e = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        void *row = row_next(&b);
        if (!row) {
            e = loom_err(LOOM_E_INTERNAL, "store: out of memory reading rows");
            break;
        }
        memset(row, 0, size);
        read(st, row);
    }
    if (!e && rc != SQLITE_DONE)
        e = store_unavailable(s, "read");
    store_finish(s, st);
    *out = b.rows;
    *count = b.n;
    return e;
}

loom_error *store_each_prepared(store *s, sqlite3_stmt *st, size_t size, store_row_reader read,
                                void (*fn)(const void *, void *), void *ctx)
{
    void *rows = NULL;
    size_t n = 0;
    loom_error *e = store_rows_prepared(s, st, size, read, &rows, &n);
    for (size_t i = 0; !e && i < n; i++)
        fn((char *)rows + i * size, ctx);
    free(rows);
    return e;
}

static int exec_sql(store *s, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        log_error("store: \"%s\" failed: %s", sql, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    return rc;
}

loom_error *store_txn_begin(store *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->txn_depth) {
        pthread_mutex_unlock(&s->lock);
        return loom_err(LOOM_E_INTERNAL, "store: a transaction is already open");
    }
    if (exec_sql(s, "BEGIN IMMEDIATE") != SQLITE_OK) {
        loom_error *e = store_unavailable(s, "begin a transaction");
        pthread_mutex_unlock(&s->lock);
        return e;
    }
    s->txn_depth = 1;
    return NULL;
}

loom_error *store_txn_end(store *s, loom_error *e)
{
    if (!e && exec_sql(s, "COMMIT") != SQLITE_OK)
        e = store_unavailable(s, "commit");
    if (e && sqlite3_get_autocommit(s->db) == 0)
        exec_sql(s, "ROLLBACK");
    s->txn_depth = 0;
    pthread_mutex_unlock(&s->lock);
    if (!e && s->npending)
        store_flush_pending(s);
    return e;
}
