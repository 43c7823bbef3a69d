/* store/store_auth.c - auth's tables and records. See store_auth.h. */
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"
#include "util/log.h"

/* Databases made before users had ids kept them by name (the rowid, which
 * SQLite reuses, mapped them to OS accounts). Each user keeps its rowid as
 * its id, so its jobs keep their OS account, and its keys, tokens and execs
 * move to the id. Runs with foreign keys off, inside the migration's
 * transaction. */
static const char migrate_by_name_sql[] =
    "CREATE TABLE users_by_id("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
    "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
    "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "INSERT INTO users_by_id(id, name, role, pwhash, created_at)"
    "  SELECT rowid, name, role, pwhash, created_at FROM users;"
    "CREATE TABLE api_keys_by_id("
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
    "  created_at INTEGER NOT NULL, UNIQUE(user_id, label));"
    "INSERT INTO api_keys_by_id SELECT u.id, k.key_hash, k.label, k.created_at"
    "  FROM api_keys k JOIN users_by_id u ON u.name = k.user;"
    "CREATE TABLE tokens_by_id("
    "  token_hash BLOB PRIMARY KEY,"
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
    "INSERT INTO tokens_by_id SELECT t.token_hash, u.id, t.expires_at, t.apikey_hash"
    "  FROM tokens t JOIN users_by_id u ON u.name = t.user;"
    "UPDATE execs SET user_id = coalesce((SELECT id FROM users_by_id WHERE name = execs.user), 0);"
    "DROP TABLE tokens; DROP TABLE api_keys; DROP TABLE users;"
    "ALTER TABLE users_by_id RENAME TO users;"
    "ALTER TABLE api_keys_by_id RENAME TO api_keys;"
    "ALTER TABLE tokens_by_id RENAME TO tokens;";

static int migrate_by_name(sqlite3 *db, char **msg)
{
    if (store_has_column(db, "users", "name") != 1 || store_has_column(db, "users", "id") != 0)
        return SQLITE_OK; /* no users yet, or already by id */
    int rc = sqlite3_exec(db, migrate_by_name_sql, NULL, NULL, msg);
    if (rc == SQLITE_OK)
        log_info("store: users now have ids that are never reused (database migrated)");
    return rc;
}

/* Every record is keyed by the user's id: a user created again under a
 * removed user's name is someone else, who sees none of the first one's
 * keys, tokens, plans or execs. A token issued for an API key remembers
 * the key so revoking it revokes them. */
static const store_step auth_steps[] = {
    {.version = 1, .run = migrate_by_name},
    {.version = 2,
     .sql = "CREATE TABLE IF NOT EXISTS users("
            "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
            "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
            "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
            "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
            "CREATE TABLE IF NOT EXISTS api_keys("
            "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
            "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
            "  created_at INTEGER NOT NULL, scope TEXT NOT NULL DEFAULT 'all',"
            "  UNIQUE(user_id, label));"
            "CREATE TABLE IF NOT EXISTS tokens("
            "  token_hash BLOB PRIMARY KEY,"
            "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
            "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
            "CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens(user_id);"
            "CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens(expires_at);"
            "CREATE INDEX IF NOT EXISTS tokens_by_apikey ON tokens(apikey_hash);"
            /* plan_members is the host's table: a removed user leaves it */
            "CREATE TRIGGER IF NOT EXISTS users_removed_from_plans AFTER DELETE ON users BEGIN"
            "  DELETE FROM plan_members WHERE user_id = OLD.id; END;"},
    /* Keys made before keys had scopes may do all their user may. */
    {.version = 3, .table = "api_keys", .column = "scope",
     .definition = "TEXT NOT NULL DEFAULT 'all'"},
};

const store_family store_family_auth = {"auth", auth_steps,
                                        sizeof auth_steps / sizeof *auth_steps};

/* ---- users ---- */

static loom_error *user_write(store *s, const char *sql, const store_user *u, const char *what)
{
    sqlite3_stmt *st = store_prepare(s, sql);
    if (!st)
        return store_unavailable(s, what);
    sqlite3_bind_text(st, 1, u->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, u->role, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, u->pwhash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, u->created_at);
    char name[96];
    snprintf(name, sizeof name, "user '%s'", u->name);
    return store_finish_write(s, st, name, 0);
}

loom_error *store_user_insert(store *s, const store_user *u)
{
    return user_write(s, "INSERT INTO users(name, role, pwhash, created_at) VALUES(?,?,?,?)", u,
                      "record a user");
}

loom_error *store_user_insert_first(store *s, const store_user *u, int *inserted)
{
    *inserted = 0;
    pthread_mutex_lock(&s->lock);
    loom_error *e = user_write(s, "INSERT INTO users(name, role, pwhash, created_at) "
                                  "SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM users)",
                               u, "record the first user");
    if (!e)
        *inserted = sqlite3_changes(s->db) > 0;
    pthread_mutex_unlock(&s->lock);
    return e;
}

loom_error *store_user_count(store *s, const char *role, int64_t *count)
{
    *count = 0;
    sqlite3_stmt *st = store_prepare(s, "SELECT count(*) FROM users WHERE ?1 IS NULL OR role = ?1");
    if (!st)
        return store_unavailable(s, "count users");
    if (role)
        sqlite3_bind_text(st, 1, role, -1, SQLITE_STATIC);
    return store_read_int(s, st, count, "count of users");
}

static void read_user(sqlite3_stmt *st, void *row)
{
    store_user *u = row;
    u->id = sqlite3_column_int64(st, 0);
    store_column_text(st, 1, u->name, sizeof u->name);
    store_column_text(st, 2, u->role, sizeof u->role);
    store_column_text(st, 3, u->pwhash, sizeof u->pwhash);
    u->created_at = sqlite3_column_int64(st, 4);
}

#define USER_COLUMNS "SELECT id, name, role, pwhash, created_at FROM users"

loom_error *store_user_by_name(store *s, const char *name, store_user *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = store_prepare(s, USER_COLUMNS " WHERE name = ?");
    if (!st)
        return store_unavailable(s, "read users");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    return store_read_one(s, st, read_user, out, "such user");
}

loom_error *store_user_by_id(store *s, int64_t id, store_user *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = store_prepare(s, USER_COLUMNS " WHERE id = ?");
    if (!st)
        return store_unavailable(s, "read users");
    sqlite3_bind_int64(st, 1, id);
    return store_read_one(s, st, read_user, out, "such user");
}

/* Runs a write whose parameters are up to two texts (NULL: unbound). */
static loom_error *write_texts(store *s, const char *sql, const char *a, const char *b,
                               const char *what, int must_change)
{
    sqlite3_stmt *st = store_prepare(s, sql);
    if (!st)
        return store_unavailable(s, what);
    if (a)
        sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
    return store_finish_write(s, st, what, must_change);
}

loom_error *store_user_delete(store *s, const char *name)
{
    return write_texts(s, "DELETE FROM users WHERE name = ?", name, NULL, "such user", 1);
}

loom_error *store_user_set_pwhash(store *s, const char *name, const char *pwhash,
                                  const char *if_pwhash)
{
    sqlite3_stmt *st = store_prepare(s, "UPDATE users SET pwhash = ?1 WHERE name = ?2 AND "
                                        "(?3 IS NULL OR pwhash = ?3)");
    if (!st)
        return store_unavailable(s, "change a password");
    sqlite3_bind_text(st, 1, pwhash, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    if (if_pwhash)
        sqlite3_bind_text(st, 3, if_pwhash, -1, SQLITE_STATIC);
    return store_finish_write(s, st, "such user", 1);
}

typedef struct user_visit {
    void (*fn)(const store_user *, void *);
    void *ctx;
} user_visit;

static void visit_user(const void *row, void *arg)
{
    user_visit *v = arg;
    v->fn(row, v->ctx);
}

loom_error *store_user_each(store *s, void (*fn)(const store_user *, void *), void *ctx)
{
    user_visit v = {fn, ctx};
    sqlite3_stmt *st = store_prepare(s, "SELECT id, name, role, '', created_at FROM users "
                                        "ORDER BY name");
    if (!st)
        return store_unavailable(s, "list users");
    return store_each_prepared(s, st, sizeof(store_user), read_user, visit_user, &v);
}

/* ---- tokens ---- */

loom_error *store_token_insert(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                               int64_t user_id, int64_t expires_at,
                               const unsigned char *apikey_hash)
{
    sqlite3_stmt *st = store_prepare(s, "INSERT INTO tokens(token_hash, user_id, expires_at, "
                                        "apikey_hash) VALUES(?,?,?,?)");
    if (!st)
        return store_unavailable(s, "record a token");
    sqlite3_bind_blob(st, 1, hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, user_id);
    sqlite3_bind_int64(st, 3, expires_at);
    if (apikey_hash)
        sqlite3_bind_blob(st, 4, apikey_hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
    return store_finish_write(s, st, "token", 0);
}

/* A blob column of exactly `len` bytes into dst; other lengths leave it
 * zeroed (no stored hash of ours has them). */
static void column_hash(sqlite3_stmt *st, int col, unsigned char *dst, size_t len)
{
    memset(dst, 0, len);
    if (sqlite3_column_bytes(st, col) == (int)len)
        memcpy(dst, sqlite3_column_blob(st, col), len);
}

static void read_token(sqlite3_stmt *st, void *row)
{
    store_token *t = row;
    column_hash(st, 0, t->hash, sizeof t->hash);
    t->expires_at = sqlite3_column_int64(st, 1);
    store_column_text(st, 2, t->user, sizeof t->user);
    store_column_text(st, 3, t->role, sizeof t->role);
    t->user_id = sqlite3_column_int64(st, 4);
    store_column_text(st, 5, t->scope, sizeof t->scope);
}

loom_error *store_token_find(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                             store_token *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    sqlite3_stmt *st = s->token_find;
    sqlite3_bind_blob(st, 1, hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    loom_error *e = NULL;
    if (rc == SQLITE_ROW)
        read_token(st, out);
    else if (rc == SQLITE_DONE)
        e = loom_err(LOOM_E_NOT_FOUND, "no such token");
    else
        e = store_unavailable(s, "read tokens");
    /* Reset ends the read so the statement holds no lock on the file. */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    pthread_mutex_unlock(&s->lock);
    return e;
}

loom_error *store_token_delete(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES])
{
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM tokens WHERE token_hash = ?");
    if (!st)
        return store_unavailable(s, "revoke a token");
    sqlite3_bind_blob(st, 1, hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
    return store_finish_write(s, st, "such token", 1);
}

loom_error *store_token_delete_expired(store *s, int64_t now_ms)
{
    sqlite3_stmt *st = store_prepare(s, "DELETE FROM tokens WHERE expires_at <= ?");
    if (!st)
        return store_unavailable(s, "purge expired tokens");
    sqlite3_bind_int64(st, 1, now_ms);
    return store_finish_write(s, st, "expired tokens", 0);
}

loom_error *store_token_delete_user(store *s, const char *name)
{
    return write_texts(s, "DELETE FROM tokens WHERE user_id = (SELECT id FROM users WHERE name = ?)",
                       name, NULL, "tokens", 0);
}

loom_error *store_token_delete_apikey(store *s, const char *user, const char *label)
{
    return write_texts(s, "DELETE FROM tokens WHERE apikey_hash = "
                          "(SELECT key_hash FROM api_keys WHERE label = ?2 AND user_id = "
                          "(SELECT id FROM users WHERE name = ?1))",
                       user, label, "tokens", 0);
}

/* ---- API keys ---- */

loom_error *store_apikey_insert(store *s, const store_apikey *k)
{
    pthread_mutex_lock(&s->lock);
    store_user u;
    loom_error *e = store_user_by_name(s, k->user, &u);
    sqlite3_stmt *st = NULL;
    if (!e && !(st = store_prepare(s, "INSERT INTO api_keys(user_id, key_hash, label, "
                                      "created_at, scope) VALUES(?,?,?,?,?)")))
        e = store_unavailable(s, "record an API key");
    if (!e) {
        sqlite3_bind_int64(st, 1, u.id);
        sqlite3_bind_blob(st, 2, k->hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, k->label, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, k->created_at);
        sqlite3_bind_text(st, 5, k->scope, -1, SQLITE_STATIC);
        e = store_finish_write(s, st, "API key", 0);
    }
    pthread_mutex_unlock(&s->lock);
    return e;
}

static void read_apikey(sqlite3_stmt *st, void *row)
{
    store_apikey *k = row;
    column_hash(st, 0, k->hash, sizeof k->hash);
    k->user_id = sqlite3_column_int64(st, 1);
    store_column_text(st, 2, k->user, sizeof k->user);
    store_column_text(st, 3, k->label, sizeof k->label);
    store_column_text(st, 4, k->scope, sizeof k->scope);
    k->created_at = sqlite3_column_int64(st, 5);
}

#define APIKEY_COLUMNS                                                          \
    "SELECT k.key_hash, u.id, u.name, k.label, k.scope, k.created_at FROM api_keys k " \
    "JOIN users u ON u.id = k.user_id "

loom_error *store_apikey_find(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                              store_apikey *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = store_prepare(s, APIKEY_COLUMNS "WHERE k.key_hash = ?");
    if (!st)
        return store_unavailable(s, "read API keys");
    sqlite3_bind_blob(st, 1, hash, STORE_SECRET_HASH_BYTES, SQLITE_STATIC);
    return store_read_one(s, st, read_apikey, out, "such API key");
}

loom_error *store_apikey_delete(store *s, const char *user, const char *label)
{
    return write_texts(s, "DELETE FROM api_keys WHERE label = ?2 AND user_id = "
                          "(SELECT id FROM users WHERE name = ?1)",
                       user, label, "such API key", 1);
}

loom_error *store_apikey_delete_user(store *s, const char *name)
{
    return write_texts(s, "DELETE FROM api_keys WHERE user_id = "
                          "(SELECT id FROM users WHERE name = ?)",
                       name, NULL, "API keys", 0);
}

typedef struct apikey_visit {
    void (*fn)(const store_apikey *, void *);
    void *ctx;
} apikey_visit;

static void visit_apikey(const void *row, void *arg)
{
    apikey_visit *v = arg;
    v->fn(row, v->ctx);
}

loom_error *store_apikey_each(store *s, const char *user,
                              void (*fn)(const store_apikey *, void *), void *ctx)
{
    apikey_visit v = {fn, ctx};
    sqlite3_stmt *st = store_prepare(s, APIKEY_COLUMNS "WHERE ?1 IS NULL OR u.name = ?1 "
                                        "ORDER BY u.name, k.label");
    if (!st)
        return store_unavailable(s, "list API keys");
    if (user)
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
    return store_each_prepared(s, st, sizeof(store_apikey), read_apikey, visit_apikey, &v);
}
