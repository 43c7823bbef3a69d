/* store/store.c - see store.h. */
#include "store/store.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/disk_reserve_internal.h"
#include "util/fs.h"
#include "util/log.h"

/* At most this many execs' state changes wait in memory for a full disk. */
#define STORE_MAX_PENDING 4096

struct store {
    sqlite3 *db;
    pthread_mutex_t lock; /* recursive: see store_lock */
    disk_reserve reserve;
    /* Exec state changes a full disk refused, newest per exec: what reads
     * return, written when the disk has room (store_retry). */
    store_exec *pending;
    size_t npending;
    int flushing;
    int64_t next_flush_ms; /* monotonic: store_retry's next try */
};

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO meta VALUES('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS plugins("
    "  kind TEXT NOT NULL, name TEXT NOT NULL COLLATE NOCASE, file TEXT NOT NULL,"
    "  added_at INTEGER NOT NULL, PRIMARY KEY(kind, name));"
    "CREATE TABLE IF NOT EXISTS execs("
    "  id TEXT PRIMARY KEY, user TEXT NOT NULL, framework TEXT NOT NULL,"
    "  args TEXT NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
    "  result_dir TEXT NOT NULL, num_workers INTEGER NOT NULL, pgid INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0,"
    "  ended_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS plans("
    "  path TEXT PRIMARY KEY, weight REAL NOT NULL, min_devices INTEGER NOT NULL,"
    "  cap_devices INTEGER NOT NULL, policy TEXT NOT NULL);"
    /* Members by the users' immutable ids; the name is what was shown when
     * they were added (auth's trigger removes a removed user's rows). */
    "CREATE TABLE IF NOT EXISTS plan_members("
    "  plan TEXT NOT NULL, user_id INTEGER NOT NULL, user_name TEXT NOT NULL,"
    "  added_at INTEGER NOT NULL, PRIMARY KEY(plan, user_id));";

/* Columns added after the first release: (table, column, definition). */
static const char *const added_columns[][3] = {
    /* The owner's immutable id (auth's users.id); 0 for none. */
    {"execs", "user_id", "INTEGER NOT NULL DEFAULT 0"},
    /* What the host did differently from what the submission asked, one a
     * line (store_exec_warnings_set). */
    {"execs", "warnings", "TEXT NOT NULL DEFAULT ''"},
};

/* Adds the columns a database made by an older host lacks. */
static int migrate(sqlite3 *db, char **msg)
{
    for (size_t i = 0; i < sizeof added_columns / sizeof *added_columns; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'",
                 added_columns[i][0], added_columns[i][1]);
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        int have = rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
        sqlite3_finalize(st);
        if (rc != SQLITE_OK)
            return rc;
        if (have)
            continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", added_columns[i][0],
                 added_columns[i][1], added_columns[i][2]);
        if ((rc = sqlite3_exec(db, sql, NULL, NULL, msg)) != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

loom_error *store_open(const char *path, store **out)
{
    *out = NULL;
    store *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&s->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_FULLMUTEX,
                             NULL);
    char *msg = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(s->db, 5000);
        /* WAL + synchronous=FULL: a committed change survives a crash of the
         * host or the machine. */
        rc = sqlite3_exec(s->db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          "PRAGMA foreign_keys=ON;",
                          NULL, NULL, &msg);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, schema, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = migrate(s->db, &msg);
    if (rc == SQLITE_OK)
        disk_reserve_open(&s->reserve, path);
    if (rc != SQLITE_OK) {
        loom_error *e = loom_err(LOOM_E_INTERNAL, "%s: %s", path,
                                 msg ? msg : (s->db ? sqlite3_errmsg(s->db) : "cannot open"));
        sqlite3_free(msg);
        store_close(s);
        return e;
    }
    *out = s;
    return NULL;
}

static void flush_pending(store *s);

void store_close(store *s)
{
    if (!s)
        return;
    if (s->db) {
        flush_pending(s);
        for (size_t i = 0; i < s->npending; i++)
            log_error("store: exec %s's state %s was not written: the disk is still full",
                      s->pending[i].id, exec_state_text(s->pending[i].state));
    }
    free(s->pending);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

struct sqlite3 *store_db(store *s) { return s->db; }
void store_lock(store *s) { pthread_mutex_lock(&s->lock); }
void store_unlock(store *s) { pthread_mutex_unlock(&s->lock); }

/* A prepared statement with the store's lock held, or NULL (unlocked). */
static sqlite3_stmt *prepare(store *s, const char *sql)
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

static loom_error *unavailable(store *s, const char *what)
{
    return loom_err(LOOM_E_INTERNAL, "store: cannot %s: %s", what, sqlite3_errmsg(s->db));
}

/* Ends a statement from prepare() and releases the lock. */
static void finish(store *s, sqlite3_stmt *st)
{
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->lock);
}

static void column_text(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

static int disk_full(store *s, int rc)
{
    return (rc & 0xff) == SQLITE_FULL ||
           ((rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(s->db) == ENOSPC);
}

/* Steps a write; on a full disk, makes room and tries again: first by
 * copying the WAL into the database and truncating it (a WAL that cannot
 * grow), then by giving up the reserve. A statement that failed on a full
 * disk has changed nothing, so it can run again. */
static int step_write(store *s, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    for (int attempt = 0; disk_full(s, rc) && attempt < 2; attempt++) {
        sqlite3_reset(st);
        if (attempt == 0)
            sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
        else if (!disk_reserve_release(&s->reserve))
            break;
        rc = sqlite3_step(st);
    }
    return rc;
}

/* Runs a prepared write. `what` names the row for the message; with
 * must_change, a write that touched no row is LOOM_E_NOT_FOUND; a full
 * disk is LOOM_E_LIMIT. */
static loom_error *finish_write(store *s, sqlite3_stmt *st, const char *what, int must_change)
{
    int rc = step_write(s, st);
    loom_error *e = NULL;
    if (rc == SQLITE_CONSTRAINT)
        e = loom_err(LOOM_E_CONFLICT, "%s already exists", what);
    else if (disk_full(s, rc))
        e = loom_err(LOOM_E_LIMIT, "store: %s: the disk holding the host's state is full", what);
    else if (rc != SQLITE_DONE)
        e = loom_err(LOOM_E_INTERNAL, "store: %s: %s", what, sqlite3_errmsg(s->db));
    else if (must_change && sqlite3_changes(s->db) == 0)
        e = loom_err(LOOM_E_NOT_FOUND, "no %s", what);
    finish(s, st);
    if (!e && s->npending)
        flush_pending(s);
    return e;
}

/* Rows read under the lock, handed to the callback after it: a callback
 * may take other locks (the scheduler's) without ordering them after ours. */
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

typedef void (*row_reader)(sqlite3_stmt *st, void *row);

/* Reads every row of a statement from prepare() (bound), then calls fn. */
static loom_error *each_prepared(store *s, sqlite3_stmt *st, size_t size, row_reader read,
                                 void (*fn)(const void *, void *), void *ctx)
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
        read(st, row);
    }
    if (!e && rc != SQLITE_DONE)
        e = unavailable(s, "read");
    finish(s, st);
    for (size_t i = 0; !e && i < b.n; i++)
        fn(b.rows + i * size, ctx);
    free(b.rows);
    return e;
}

static loom_error *each_row(store *s, const char *sql, size_t size, row_reader read,
                            void (*fn)(const void *, void *), void *ctx)
{
    sqlite3_stmt *st = prepare(s, sql);
    if (!st)
        return unavailable(s, "read");
    return each_prepared(s, st, size, read, fn, ctx);
}

loom_error *store_plugin_add(store *s, const store_plugin *p)
{
    sqlite3_stmt *st = prepare(s, "INSERT INTO plugins(kind, name, file, added_at) VALUES(?,?,?,?)");
    if (!st)
        return unavailable(s, "record a plugin");
    sqlite3_bind_text(st, 1, p->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->file, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, p->added_at);
    char what[128];
    snprintf(what, sizeof what, "%s \"%s\"", p->kind, p->name);
    return finish_write(s, st, what, 0);
}

loom_error *store_plugin_remove(store *s, const char *kind, const char *name)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM plugins WHERE kind = ? AND name = ?");
    if (!st)
        return unavailable(s, "remove a plugin");
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    char what[128];
    snprintf(what, sizeof what, "%s \"%s\"", kind, name);
    return finish_write(s, st, what, 1);
}

static void read_plugin(sqlite3_stmt *st, void *row)
{
    store_plugin *p = row;
    column_text(st, 0, p->kind, sizeof p->kind);
    column_text(st, 1, p->name, sizeof p->name);
    column_text(st, 2, p->file, sizeof p->file);
    p->added_at = sqlite3_column_int64(st, 3);
}

typedef struct plugin_visit {
    void (*fn)(const store_plugin *, void *);
    void *ctx;
} plugin_visit;

static void visit_plugin(const void *row, void *arg)
{
    plugin_visit *v = arg;
    v->fn(row, v->ctx);
}

loom_error *store_plugin_each(store *s, void (*fn)(const store_plugin *, void *), void *ctx)
{
    plugin_visit v = {fn, ctx};
    return each_row(s, "SELECT kind, name, file, added_at FROM plugins ORDER BY rowid",
                    sizeof(store_plugin), read_plugin, visit_plugin, &v);
}

#define EXEC_COLUMNS                                                           \
    "id, user, framework, args, state, message, result_dir, num_workers, "     \
    "pgid, created_at, started_at, ended_at, user_id"

loom_error *store_exec_insert(store *s, const store_exec *e)
{
    sqlite3_stmt *st = prepare(s, "INSERT INTO execs(" EXEC_COLUMNS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return unavailable(s, "record an exec");
    sqlite3_bind_text(st, 1, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->framework, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, e->args, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, exec_state_text(e->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, e->message, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, e->result_dir, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 8, e->num_workers);
    sqlite3_bind_int(st, 9, e->pgid);
    sqlite3_bind_int64(st, 10, e->created_at);
    sqlite3_bind_int64(st, 11, e->started_at);
    sqlite3_bind_int64(st, 12, e->ended_at);
    sqlite3_bind_int64(st, 13, e->user_id);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", e->id);
    return finish_write(s, st, what, 0);
}

/* The exec's state change waiting in memory, or NULL. Call with the lock. */
static store_exec *pending_of(store *s, const char *id)
{
    for (size_t i = 0; i < s->npending; i++)
        if (strcmp(s->pending[i].id, id) == 0)
            return &s->pending[i];
    return NULL;
}

static void drop_pending(store *s, const char *id)
{
    store_exec *p = pending_of(s, id);
    if (p)
        *p = s->pending[--s->npending];
}

/* Keeps a state change the full disk refused; LOOM_E_LIMIT when too many
 * wait already. Call with the lock. */
static loom_error *keep_pending(store *s, const store_exec *e)
{
    store_exec *p = pending_of(s, e->id);
    if (!p) {
        if (s->npending == STORE_MAX_PENDING)
            return loom_err(LOOM_E_LIMIT,
                            "store: exec \"%s\": the disk is full and %d other state changes "
                            "wait for it",
                            e->id, STORE_MAX_PENDING);
        store_exec *grown = realloc(s->pending, (s->npending + 1) * sizeof *grown);
        if (!grown)
            return loom_err(LOOM_E_INTERNAL, "store: out of memory");
        s->pending = grown;
        p = &s->pending[s->npending++];
    }
    *p = *e;
    log_warn("store: exec %s's state %s waits in memory until the disk has room", e->id,
             exec_state_text(e->state));
    return NULL;
}

/* Writes the fields a state change sets over a row read from the disk. */
static void overlay_pending(store *s, store_exec *row)
{
    const store_exec *p = pending_of(s, row->id);
    if (!p)
        return;
    row->state = p->state;
    memcpy(row->message, p->message, sizeof row->message);
    row->pgid = p->pgid;
    row->started_at = p->started_at;
    row->ended_at = p->ended_at;
}

static loom_error *write_exec_update(store *s, const store_exec *e)
{
    sqlite3_stmt *st = prepare(s, "UPDATE execs SET state = ?, message = ?, pgid = ?, "
                                  "started_at = ?, ended_at = ? WHERE id = ?");
    if (!st)
        return unavailable(s, "update an exec");
    sqlite3_bind_text(st, 1, exec_state_text(e->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->message, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, e->pgid);
    sqlite3_bind_int64(st, 4, e->started_at);
    sqlite3_bind_int64(st, 5, e->ended_at);
    sqlite3_bind_text(st, 6, e->id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", e->id);
    return finish_write(s, st, what, 1);
}

/* Writes what waits, oldest first, until the disk refuses again. */
static void flush_pending(store *s)
{
    pthread_mutex_lock(&s->lock);
    if (!s->flushing) {
        s->flushing = 1;
        while (s->npending) {
            store_exec first = s->pending[0];
            loom_error *e = write_exec_update(s, &first);
            int full = e && loom_err_code(e) == LOOM_E_LIMIT;
            if (e && !full && loom_err_code(e) != LOOM_E_NOT_FOUND)
                log_error("store: exec %s's state %s: %s", first.id, exec_state_text(first.state),
                          loom_err_message(e));
            loom_err_free(e);
            if (full)
                break;
            /* written, or gone for good (the row was deleted) */
            drop_pending(s, first.id);
            log_info("store: exec %s's state %s is written", first.id,
                     exec_state_text(first.state));
        }
        s->flushing = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

loom_error *store_exec_update(store *s, const store_exec *e)
{
    pthread_mutex_lock(&s->lock);
    loom_error *err = NULL;
    store_exec *p = pending_of(s, e->id);
    if (p)
        *p = *e; /* behind the older ones: written in their turn */
    else if ((err = write_exec_update(s, e)) != NULL && loom_err_code(err) == LOOM_E_LIMIT) {
        loom_err_free(err);
        err = keep_pending(s, e);
    }
    pthread_mutex_unlock(&s->lock);
    return err;
}

void store_retry(store *s)
{
    pthread_mutex_lock(&s->lock);
    int64_t now = time_mono_ms();
    if (s->npending && now >= s->next_flush_ms) {
        s->next_flush_ms = now + STORE_RESERVE_RETRY_MS;
        flush_pending(s);
    }
    /* the reserve only once every waiting state is written: they come first */
    if (!s->npending)
        disk_reserve_restore(&s->reserve);
    pthread_mutex_unlock(&s->lock);
}

size_t store_pending_count(store *s)
{
    pthread_mutex_lock(&s->lock);
    size_t n = s->npending;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void read_exec(sqlite3_stmt *st, void *row)
{
    store_exec *e = row;
    column_text(st, 0, e->id, sizeof e->id);
    column_text(st, 1, e->user, sizeof e->user);
    column_text(st, 2, e->framework, sizeof e->framework);
    column_text(st, 3, e->args, sizeof e->args);
    column_text(st, 5, e->message, sizeof e->message);
    loom_error *unknown = exec_state_parse((const char *)sqlite3_column_text(st, 4), &e->state);
    if (unknown) {
        /* Written by a later version: shown as ended, with why. */
        e->state = EXEC_STATE_ERROR;
        loom_err_take(unknown, e->message, sizeof e->message);
    }
    column_text(st, 6, e->result_dir, sizeof e->result_dir);
    e->num_workers = sqlite3_column_int(st, 7);
    e->pgid = sqlite3_column_int(st, 8);
    e->created_at = sqlite3_column_int64(st, 9);
    e->started_at = sqlite3_column_int64(st, 10);
    e->ended_at = sqlite3_column_int64(st, 11);
    e->user_id = sqlite3_column_int64(st, 12);
}

/* Runs sql (its one parameter: the exec's id) and hands the row to read;
 * `doing` names the work for messages. */
static loom_error *read_exec_row(store *s, const char *sql, const char *id, const char *doing,
                                 void (*read)(sqlite3_stmt *, void *), void *out)
{
    sqlite3_stmt *st = prepare(s, sql);
    if (!st)
        return unavailable(s, doing);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    loom_error *e = NULL;
    if (rc == SQLITE_ROW)
        read(st, out);
    else if (rc == SQLITE_DONE)
        e = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    else
        e = unavailable(s, doing);
    finish(s, st);
    return e;
}

/* Runs sql, whose last parameter is the exec's id and whose first is
 * `text` when given; an exec that is not there is LOOM_E_NOT_FOUND. */
static loom_error *write_exec_row(store *s, const char *sql, const char *id, const char *doing,
                                  const char *text)
{
    sqlite3_stmt *st = prepare(s, sql);
    if (!st)
        return unavailable(s, doing);
    if (text)
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, text ? 2 : 1, id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", id);
    return finish_write(s, st, what, 1);
}

loom_error *store_exec_get(store *s, const char *id, store_exec *out)
{
    sqlite3_stmt *st = prepare(s, "SELECT " EXEC_COLUMNS " FROM execs WHERE id = ?");
    if (!st)
        return unavailable(s, "read an exec");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    loom_error *e = NULL;
    if (rc == SQLITE_ROW) {
        read_exec(st, out);
        overlay_pending(s, out);
    }
    else if (rc == SQLITE_DONE)
        e = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    else
        e = unavailable(s, "read an exec");
    finish(s, st);
    return e;
}

loom_error *store_exec_warnings_set(store *s, const char *id, const char *warnings)
{
    return write_exec_row(s, "UPDATE execs SET warnings = ? WHERE id = ?", id,
                          "record an exec's warnings", warnings);
}

typedef struct text_out {
    char *text;
    size_t cap;
} text_out;

static void read_text(sqlite3_stmt *st, void *out)
{
    text_out *t = out;
    column_text(st, 0, t->text, t->cap);
}

loom_error *store_exec_warnings_get(store *s, const char *id, char *out, size_t cap)
{
    out[0] = 0;
    text_out t = {out, cap};
    return read_exec_row(s, "SELECT warnings FROM execs WHERE id = ?", id,
                         "read an exec's warnings", read_text, &t);
}

loom_error *store_exec_delete(store *s, const char *id)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM execs WHERE id = ?");
    if (!st)
        return unavailable(s, "delete an exec");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", id);
    pthread_mutex_lock(&s->lock);
    loom_error *e = finish_write(s, st, what, 1);
    if (!e)
        drop_pending(s, id);
    pthread_mutex_unlock(&s->lock);
    return e;
}

typedef struct exec_visit {
    store *s;
    void (*fn)(const store_exec *, void *);
    void *ctx;
} exec_visit;

static void visit_exec(const void *row, void *arg)
{
    exec_visit *v = arg;
    store_exec *e = (store_exec *)row;
    pthread_mutex_lock(&v->s->lock);
    overlay_pending(v->s, e);
    pthread_mutex_unlock(&v->s->lock);
    v->fn(e, v->ctx);
}

loom_error *store_exec_each(store *s, void (*fn)(const store_exec *, void *), void *ctx)
{
    exec_visit v = {s, fn, ctx};
    return each_row(s, "SELECT " EXEC_COLUMNS " FROM execs ORDER BY created_at, rowid",
                    sizeof(store_exec), read_exec, visit_exec, &v);
}

loom_error *store_plan_put(store *s, const store_plan *p)
{
    sqlite3_stmt *st = prepare(s, "INSERT OR REPLACE INTO plans(path, weight, min_devices, "
                                  "cap_devices, policy) VALUES(?,?,?,?,?)");
    if (!st)
        return unavailable(s, "record a plan");
    sqlite3_bind_text(st, 1, p->path, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, p->weight);
    sqlite3_bind_int(st, 3, p->min_devices);
    sqlite3_bind_int(st, 4, p->cap_devices);
    sqlite3_bind_text(st, 5, p->policy, -1, SQLITE_STATIC);
    char what[300];
    snprintf(what, sizeof what, "plan \"%s\"", p->path);
    return finish_write(s, st, what, 0);
}

loom_error *store_plan_remove(store *s, const char *path)
{
    /* Its members go with it: a plan made again later starts empty. */
    sqlite3_stmt *st = prepare(s, "DELETE FROM plan_members WHERE plan = ?");
    if (!st)
        return unavailable(s, "remove a plan's members");
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    loom_error *e = finish_write(s, st, "plan members", 0);
    if (e)
        return e;
    st = prepare(s, "DELETE FROM plans WHERE path = ?");
    if (!st)
        return unavailable(s, "remove a plan");
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    char what[300];
    snprintf(what, sizeof what, "plan \"%s\"", path);
    return finish_write(s, st, what, 1);
}

static void read_plan(sqlite3_stmt *st, void *row)
{
    store_plan *p = row;
    column_text(st, 0, p->path, sizeof p->path);
    p->weight = sqlite3_column_double(st, 1);
    p->min_devices = sqlite3_column_int(st, 2);
    p->cap_devices = sqlite3_column_int(st, 3);
    column_text(st, 4, p->policy, sizeof p->policy);
}

typedef struct plan_visit {
    void (*fn)(const store_plan *, void *);
    void *ctx;
} plan_visit;

static void visit_plan(const void *row, void *arg)
{
    plan_visit *v = arg;
    v->fn(row, v->ctx);
}

loom_error *store_plan_each(store *s, void (*fn)(const store_plan *, void *), void *ctx)
{
    plan_visit v = {fn, ctx};
    return each_row(s, "SELECT path, weight, min_devices, cap_devices, policy FROM plans "
                       "ORDER BY path",
                    sizeof(store_plan), read_plan, visit_plan, &v);
}

loom_error *store_plan_member_add(store *s, const char *plan, int64_t user_id, const char *user,
                                  int64_t added_at)
{
    sqlite3_stmt *st = prepare(s, "INSERT INTO plan_members(plan, user_id, user_name, added_at) "
                                  "VALUES(?,?,?,?)");
    if (!st)
        return unavailable(s, "record a plan member");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    sqlite3_bind_text(st, 3, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, added_at);
    char what[400];
    snprintf(what, sizeof what, "member \"%s\" of plan \"%s\"", user, plan);
    return finish_write(s, st, what, 0);
}

loom_error *store_plan_member_remove(store *s, const char *plan, int64_t user_id)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM plan_members WHERE plan = ? AND user_id = ?");
    if (!st)
        return unavailable(s, "remove a plan member");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    char what[300];
    snprintf(what, sizeof what, "such member of plan \"%s\"", plan);
    return finish_write(s, st, what, 1);
}

loom_error *store_plan_member_has(store *s, const char *plan, int64_t user_id, int *member)
{
    *member = 0;
    sqlite3_stmt *st = prepare(s, "SELECT 1 FROM plan_members WHERE plan = ? AND user_id = ?");
    if (!st)
        return unavailable(s, "read plan members");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    int rc = sqlite3_step(st);
    *member = rc == SQLITE_ROW;
    loom_error *e = rc == SQLITE_ROW || rc == SQLITE_DONE ? NULL : unavailable(s, "read plan members");
    finish(s, st);
    return e;
}

static void read_member(sqlite3_stmt *st, void *row)
{
    store_plan_member *m = row;
    column_text(st, 0, m->plan, sizeof m->plan);
    m->user_id = sqlite3_column_int64(st, 1);
    column_text(st, 2, m->user, sizeof m->user);
    m->added_at = sqlite3_column_int64(st, 3);
}

typedef struct member_visit {
    void (*fn)(const store_plan_member *, void *);
    void *ctx;
} member_visit;

static void visit_member(const void *row, void *arg)
{
    member_visit *v = arg;
    v->fn(row, v->ctx);
}

loom_error *store_plan_member_each(store *s, const char *plan,
                                   void (*fn)(const store_plan_member *, void *), void *ctx)
{
    member_visit v = {fn, ctx};
    sqlite3_stmt *st = prepare(s, "SELECT plan, user_id, user_name, added_at FROM plan_members "
                                  "WHERE ?1 IS NULL OR plan = ?1 ORDER BY plan, user_name");
    if (!st)
        return unavailable(s, "read plan members");
    if (plan)
        sqlite3_bind_text(st, 1, plan, -1, SQLITE_TRANSIENT);
    return each_prepared(s, st, sizeof(store_plan_member), read_member, visit_member, &v);
}

loom_error *store_plugin_file_users(store *s, const char *file, int *count)
{
    *count = 0;
    sqlite3_stmt *st = prepare(s, "SELECT count(*) FROM plugins WHERE file = ?");
    if (!st)
        return unavailable(s, "read plugins");
    sqlite3_bind_text(st, 1, file, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *count = sqlite3_column_int(st, 0);
    loom_error *e = rc == SQLITE_ROW ? NULL : unavailable(s, "read plugins");
    finish(s, st);
    return e;
}
