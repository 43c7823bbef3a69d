/* store/store.c - see store.h. */
#include "store/store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

struct store {
    sqlite3 *db;
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
    "  cap_devices INTEGER NOT NULL, policy TEXT NOT NULL);";

store *store_open(const char *path, char *err, size_t errlen)
{
    store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
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
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path,
                 msg ? msg : (s->db ? sqlite3_errmsg(s->db) : "cannot open"));
        sqlite3_free(msg);
        sqlite3_close(s->db);
        free(s);
        return NULL;
    }
    return s;
}

void store_close(store *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

static sqlite3_stmt *prepare(store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        log_error("store: cannot prepare \"%s\": %s", sql, sqlite3_errmsg(s->db));
        return NULL;
    }
    return st;
}

static void column_text(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

/* Runs a prepared write; returns 0, or -1 with the reason in err. */
static int finish_write(store *s, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && err)
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
    int constraint = rc == SQLITE_CONSTRAINT;
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return 0;
    return constraint ? -2 : -1;
}

int store_plugin_add(store *s, const store_plugin *p, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(s, "INSERT INTO plugins(kind, name, file, added_at) VALUES(?,?,?,?)");
    if (!st) {
        snprintf(err, errlen, "store unavailable");
        return -1;
    }
    sqlite3_bind_text(st, 1, p->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->file, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, p->added_at);
    return finish_write(s, st, err, errlen);
}

int store_plugin_remove(store *s, const char *kind, const char *name)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM plugins WHERE kind = ? AND name = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    int rc = finish_write(s, st, NULL, 0);
    return rc == 0 && sqlite3_changes(s->db) > 0 ? 0 : -1;
}

int store_plugin_each(store *s, void (*fn)(const store_plugin *, void *), void *ctx)
{
    sqlite3_stmt *st = prepare(s, "SELECT kind, name, file, added_at FROM plugins ORDER BY rowid");
    if (!st)
        return -1;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        store_plugin p;
        column_text(st, 0, p.kind, sizeof p.kind);
        column_text(st, 1, p.name, sizeof p.name);
        column_text(st, 2, p.file, sizeof p.file);
        p.added_at = sqlite3_column_int64(st, 3);
        fn(&p, ctx);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

#define EXEC_COLUMNS                                                           \
    "id, user, framework, args, state, message, result_dir, num_workers, "     \
    "pgid, created_at, started_at, ended_at"

int store_exec_insert(store *s, const store_exec *e, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(s, "INSERT INTO execs(" EXEC_COLUMNS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st) {
        snprintf(err, errlen, "store unavailable");
        return -1;
    }
    sqlite3_bind_text(st, 1, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->framework, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, e->args, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, e->state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, e->message, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, e->result_dir, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 8, e->num_workers);
    sqlite3_bind_int(st, 9, e->pgid);
    sqlite3_bind_int64(st, 10, e->created_at);
    sqlite3_bind_int64(st, 11, e->started_at);
    sqlite3_bind_int64(st, 12, e->ended_at);
    return finish_write(s, st, err, errlen);
}

int store_exec_update(store *s, const store_exec *e)
{
    sqlite3_stmt *st = prepare(s, "UPDATE execs SET state = ?, message = ?, pgid = ?, "
                                  "started_at = ?, ended_at = ? WHERE id = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, e->state, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->message, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, e->pgid);
    sqlite3_bind_int64(st, 4, e->started_at);
    sqlite3_bind_int64(st, 5, e->ended_at);
    sqlite3_bind_text(st, 6, e->id, -1, SQLITE_STATIC);
    return finish_write(s, st, NULL, 0);
}

static void read_exec(sqlite3_stmt *st, store_exec *e)
{
    column_text(st, 0, e->id, sizeof e->id);
    column_text(st, 1, e->user, sizeof e->user);
    column_text(st, 2, e->framework, sizeof e->framework);
    column_text(st, 3, e->args, sizeof e->args);
    column_text(st, 4, e->state, sizeof e->state);
    column_text(st, 5, e->message, sizeof e->message);
    column_text(st, 6, e->result_dir, sizeof e->result_dir);
    e->num_workers = sqlite3_column_int(st, 7);
    e->pgid = sqlite3_column_int(st, 8);
    e->created_at = sqlite3_column_int64(st, 9);
    e->started_at = sqlite3_column_int64(st, 10);
    e->ended_at = sqlite3_column_int64(st, 11);
}

int store_exec_get(store *s, const char *id, store_exec *out)
{
    sqlite3_stmt *st = prepare(s, "SELECT " EXEC_COLUMNS " FROM execs WHERE id = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        read_exec(st, out);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int store_exec_delete(store *s, const char *id)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM execs WHERE id = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = finish_write(s, st, NULL, 0);
    return rc == 0 && sqlite3_changes(s->db) > 0 ? 0 : -1;
}

int store_exec_each(store *s, void (*fn)(const store_exec *, void *), void *ctx)
{
    sqlite3_stmt *st = prepare(s, "SELECT " EXEC_COLUMNS " FROM execs ORDER BY created_at, rowid");
    if (!st)
        return -1;
    int n = 0;
    store_exec *e = malloc(sizeof *e);
    while (e && sqlite3_step(st) == SQLITE_ROW) {
        read_exec(st, e);
        fn(e, ctx);
        n++;
    }
    free(e);
    sqlite3_finalize(st);
    return n;
}

int store_plan_put(store *s, const store_plan *p)
{
    sqlite3_stmt *st = prepare(s, "INSERT OR REPLACE INTO plans(path, weight, min_devices, "
                                  "cap_devices, policy) VALUES(?,?,?,?,?)");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, p->path, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, p->weight);
    sqlite3_bind_int(st, 3, p->min_devices);
    sqlite3_bind_int(st, 4, p->cap_devices);
    sqlite3_bind_text(st, 5, p->policy, -1, SQLITE_STATIC);
    return finish_write(s, st, NULL, 0);
}

int store_plan_remove(store *s, const char *path)
{
    sqlite3_stmt *st = prepare(s, "DELETE FROM plans WHERE path = ?");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    int rc = finish_write(s, st, NULL, 0);
    return rc == 0 && sqlite3_changes(s->db) > 0 ? 0 : -1;
}

int store_plan_each(store *s, void (*fn)(const store_plan *, void *), void *ctx)
{
    sqlite3_stmt *st = prepare(s, "SELECT path, weight, min_devices, cap_devices, policy FROM plans ORDER BY path");
    if (!st)
        return -1;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        store_plan p;
        column_text(st, 0, p.path, sizeof p.path);
        p.weight = sqlite3_column_double(st, 1);
        p.min_devices = sqlite3_column_int(st, 2);
        p.cap_devices = sqlite3_column_int(st, 3);
        column_text(st, 4, p.policy, sizeof p.policy);
        fn(&p, ctx);
        n++;
    }
    sqlite3_finalize(st);
    return n;
}
