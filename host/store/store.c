/* store/store.c - see store.h. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"
#include "util/fs.h"
#include "util/log.h"

/* At most this many execs' state changes wait in memory for a full disk. */
#define STORE_MAX_PENDING 4096

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
    loom_error *e = NULL;
    if (rc != SQLITE_OK)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", path,
                     msg ? msg : (s->db ? sqlite3_errmsg(s->db) : "cannot open"));
    sqlite3_free(msg);
    if (!e)
        e = store_migrate(s, path);
    if (!e && sqlite3_prepare_v3(s->db, STORE_TOKEN_FIND_SQL, -1, SQLITE_PREPARE_PERSISTENT,
                                 &s->token_find, NULL) != SQLITE_OK)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", path, sqlite3_errmsg(s->db));
    if (e) {
        store_close(s);
        return e;
    }
    disk_reserve_open(&s->reserve, path);
    *out = s;
    return NULL;
}

void store_close(store *s)
{
    if (!s)
        return;
    if (s->db) {
        store_flush_pending(s);
        for (size_t i = 0; i < s->npending; i++)
            log_error("store: exec %s's state %s was not written: the disk is still full",
                      s->pending[i].id, exec_state_text(s->pending[i].state));
    }
    free(s->pending);
    sqlite3_finalize(s->token_find);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Rows read by store_each_prepared. */
static loom_error *each_row(store *s, const char *sql, size_t size, store_row_reader read,
                            void (*fn)(const void *, void *), void *ctx)
{
    sqlite3_stmt *st = store_prepare(s, sql);
    if (!st)
        return store_unavailable(s, "read");
    return store_each_prepared(s, st, size, read, fn, ctx);
}

loom_error *store_plugin_add(store *s, const store_plugin *p)
{
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO plugins(kind, name, file, added_at) VALUES(?,?,?,?)");
    if (!st)
        return store_unavailable(s, "record a plugin");
    sqlite3_bind_text(st, 1, p->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->file, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, p->added_at);
    char what[128];
    snprintf(what, sizeof what, "%s \"%s\"", p->kind, p->name);
    return store_finish_write(s, st, what, 0);
}

loom_error *store_plugin_remove(store *s, const char *kind, const char *name)
{
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM plugins WHERE kind = ? AND name = ?");
    if (!st)
        return store_unavailable(s, "remove a plugin");
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    char what[128];
    snprintf(what, sizeof what, "%s \"%s\"", kind, name);
    return store_finish_write(s, st, what, 1);
}

static void read_plugin(sqlite3_stmt *st, void *row)
{
    store_plugin *p = row;
    store_column_text(st, 0, p->kind, sizeof p->kind);
    store_column_text(st, 1, p->name, sizeof p->name);
    store_column_text(st, 2, p->file, sizeof p->file);
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
    "pgid, created_at, started_at, ended_at, user_id, plan"

loom_error *store_exec_insert(store *s, const store_exec *e)
{
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO execs(" EXEC_COLUMNS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return store_unavailable(s, "record an exec");
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
    sqlite3_bind_text(st, 14, e->plan, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", e->id);
    return store_finish_write(s, st, what, 0);
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
    sqlite3_stmt *st = store_prepare(s, "UPDATE execs SET state = ?, message = ?, pgid = ?, "
                                  "started_at = ?, ended_at = ? WHERE id = ?");
    if (!st)
        return store_unavailable(s, "update an exec");
    sqlite3_bind_text(st, 1, exec_state_text(e->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->message, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, e->pgid);
    sqlite3_bind_int64(st, 4, e->started_at);
    sqlite3_bind_int64(st, 5, e->ended_at);
    sqlite3_bind_text(st, 6, e->id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", e->id);
    return store_finish_write(s, st, what, 1);
}

/* Writes what waits, oldest first, until the disk refuses again. */
void store_flush_pending(store *s)
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
        store_flush_pending(s);
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
    store_column_text(st, 0, e->id, sizeof e->id);
    store_column_text(st, 1, e->user, sizeof e->user);
    store_column_text(st, 2, e->framework, sizeof e->framework);
    store_column_text(st, 3, e->args, sizeof e->args);
    store_column_text(st, 5, e->message, sizeof e->message);
    loom_error *unknown = exec_state_parse((const char *)sqlite3_column_text(st, 4), &e->state);
    if (unknown) {
        /* Written by a later version: shown as ended, with why. */
        e->state = EXEC_STATE_ERROR;
        loom_err_take(unknown, e->message, sizeof e->message);
    }
    store_column_text(st, 6, e->result_dir, sizeof e->result_dir);
    e->num_workers = sqlite3_column_int(st, 7);
    e->pgid = sqlite3_column_int(st, 8);
    e->created_at = sqlite3_column_int64(st, 9);
    e->started_at = sqlite3_column_int64(st, 10);
    e->ended_at = sqlite3_column_int64(st, 11);
    e->user_id = sqlite3_column_int64(st, 12);
    store_column_text(st, 13, e->plan, sizeof e->plan);
}

/* Runs sql (its one parameter: the exec's id) and hands the row to read;
 * `doing` names the work for messages. */
static loom_error *read_exec_row(store *s, const char *sql, const char *id, const char *doing,
                                 store_row_reader read, void *out)
{
    sqlite3_stmt *st = store_prepare(s, sql);
    if (!st)
        return store_unavailable(s, doing);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    loom_error *e = NULL;
    if (rc == SQLITE_ROW)
        read(st, out);
    else if (rc == SQLITE_DONE)
        e = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    else
        e = store_unavailable(s, doing);
    store_finish(s, st);
    return e;
}

/* Runs sql, whose last parameter is the exec's id and whose first is
 * `text` when given; an exec that is not there is LOOM_E_NOT_FOUND. */
static loom_error *write_exec_row(store *s, const char *sql, const char *id, const char *doing,
                                  const char *text)
{
    sqlite3_stmt *st = store_prepare(s, sql);
    if (!st)
        return store_unavailable(s, doing);
    if (text)
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, text ? 2 : 1, id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", id);
    return store_finish_write(s, st, what, 1);
}

loom_error *store_exec_get(store *s, const char *id, store_exec *out)
{
    sqlite3_stmt *st = store_prepare(s, "SELECT " EXEC_COLUMNS " FROM execs WHERE id = ?");
    if (!st)
        return store_unavailable(s, "read an exec");
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
        e = store_unavailable(s, "read an exec");
    store_finish(s, st);
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
    store_column_text(st, 0, t->text, t->cap);
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
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM execs WHERE id = ?");
    if (!st)
        return store_unavailable(s, "delete an exec");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    char what[96];
    snprintf(what, sizeof what, "exec \"%s\"", id);
    pthread_mutex_lock(&s->lock);
    loom_error *e = store_finish_write(s, st, what, 1);
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
    sqlite3_stmt *st = store_prepare(s, "INSERT OR REPLACE INTO plans(path, weight, min_devices, "
                                  "cap_devices, policy, max_procs, max_memory, max_disk) "
                                  "VALUES(?,?,?,?,?,?,?,?)");
    if (!st)
        return store_unavailable(s, "record a plan");
    sqlite3_bind_text(st, 1, p->path, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, p->weight);
    sqlite3_bind_int(st, 3, p->min_devices);
    sqlite3_bind_int(st, 4, p->cap_devices);
    sqlite3_bind_text(st, 5, p->policy, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, p->max_procs);
    sqlite3_bind_int64(st, 7, p->max_memory);
    sqlite3_bind_int64(st, 8, p->max_disk);
    char what[300];
    snprintf(what, sizeof what, "plan \"%s\"", p->path);
    return store_finish_write(s, st, what, 0);
}

loom_error *store_plan_remove(store *s, const char *path)
{
    /* Its members go with it: a plan made again later starts empty. */
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM plan_members WHERE plan = ?");
    if (!st)
        return store_unavailable(s, "remove a plan's members");
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    loom_error *e = store_finish_write(s, st, "plan members", 0);
    if (e)
        return e;
    st = store_prepare(s, "DELETE FROM plans WHERE path = ?");
    if (!st)
        return store_unavailable(s, "remove a plan");
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    char what[300];
    snprintf(what, sizeof what, "plan \"%s\"", path);
    return store_finish_write(s, st, what, 1);
}

static void read_plan(sqlite3_stmt *st, void *row)
{
    store_plan *p = row;
    store_column_text(st, 0, p->path, sizeof p->path);
    p->weight = sqlite3_column_double(st, 1);
    p->min_devices = sqlite3_column_int(st, 2);
    p->cap_devices = sqlite3_column_int(st, 3);
    store_column_text(st, 4, p->policy, sizeof p->policy);
    p->max_procs = sqlite3_column_int64(st, 5);
    p->max_memory = sqlite3_column_int64(st, 6);
    p->max_disk = sqlite3_column_int64(st, 7);
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
    return each_row(s, "SELECT path, weight, min_devices, cap_devices, policy, max_procs, "
                       "max_memory, max_disk FROM plans ORDER BY path",
                    sizeof(store_plan), read_plan, visit_plan, &v);
}

loom_error *store_plan_member_add(store *s, const char *plan, int64_t user_id, const char *user,
                                  int64_t added_at)
{
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO plan_members(plan, user_id, user_name, added_at) "
                                  "VALUES(?,?,?,?)");
    if (!st)
        return store_unavailable(s, "record a plan member");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    sqlite3_bind_text(st, 3, user, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, added_at);
    char what[400];
    snprintf(what, sizeof what, "member \"%s\" of plan \"%s\"", user, plan);
    return store_finish_write(s, st, what, 0);
}

loom_error *store_plan_member_remove(store *s, const char *plan, int64_t user_id)
{
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM plan_members WHERE plan = ? AND user_id = ?");
    if (!st)
        return store_unavailable(s, "remove a plan member");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    char what[300];
    snprintf(what, sizeof what, "such member of plan \"%s\"", plan);
    return store_finish_write(s, st, what, 1);
}

loom_error *store_plan_member_has(store *s, const char *plan, int64_t user_id, int *member)
{
    *member = 0;
    sqlite3_stmt *st = store_prepare(s, "SELECT 1 FROM plan_members WHERE plan = ? AND user_id = ?");
    if (!st)
        return store_unavailable(s, "read plan members");
    sqlite3_bind_text(st, 1, plan, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    int rc = sqlite3_step(st);
    *member = rc == SQLITE_ROW;
    loom_error *e = rc == SQLITE_ROW || rc == SQLITE_DONE ? NULL : store_unavailable(s, "read plan members");
    store_finish(s, st);
    return e;
}

static void read_member(sqlite3_stmt *st, void *row)
{
    store_plan_member *m = row;
    store_column_text(st, 0, m->plan, sizeof m->plan);
    m->user_id = sqlite3_column_int64(st, 1);
    store_column_text(st, 2, m->user, sizeof m->user);
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
    sqlite3_stmt *st = store_prepare(s, "SELECT plan, user_id, user_name, added_at FROM plan_members "
                                  "WHERE ?1 IS NULL OR plan = ?1 ORDER BY plan, user_name");
    if (!st)
        return store_unavailable(s, "read plan members");
    if (plan)
        sqlite3_bind_text(st, 1, plan, -1, SQLITE_TRANSIENT);
    return store_each_prepared(s, st, sizeof(store_plan_member), read_member, visit_member, &v);
}

loom_error *store_plugin_file_users(store *s, const char *file, int *count)
{
    *count = 0;
    sqlite3_stmt *st = store_prepare(s, "SELECT count(*) FROM plugins WHERE file = ?");
    if (!st)
        return store_unavailable(s, "read plugins");
    sqlite3_bind_text(st, 1, file, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *count = sqlite3_column_int(st, 0);
    loom_error *e = rc == SQLITE_ROW ? NULL : store_unavailable(s, "read plugins");
    store_finish(s, st);
    return e;
}
