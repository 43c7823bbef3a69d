/* auth/auth_users.c - managing users and their API keys. See auth.h. */
#include "auth/auth_internal.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

/* Steps a prepared write and finalizes it; SQLITE_DONE, SQLITE_CONSTRAINT or
 * another SQLite code. */
static int step_write(sqlite3_stmt *st)
{
    if (!st)
        return SQLITE_ERROR;
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc;
}

/* Runs a write with up to two text parameters (NULL: not bound); returns
 * the SQLite code of the step. Lock held. */
static int write2(auth_service *svc, const char *sql, const char *a,
                  const char *b)
{
    sqlite3_stmt *st = auth_prepare(svc, sql);
    if (st && a)
        sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
    if (st && b)
        sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
    return step_write(st);
}

loom_error *auth_user_add(auth_service *svc, const char *name, const char *password,
                          const char *role)
{
    loom_error *e = auth_check_name("user name", name);
    if (!e)
        e = auth_check_password(password);
    if (!e)
        e = auth_check_role(role);
    char pwhash[crypto_pwhash_STRBYTES];
    if (!e)
        e = auth_hash_password(svc, password, pwhash);
    if (e)
        return e;

    auth_lock(svc);
    sqlite3_stmt *st = auth_prepare(
        svc, "INSERT INTO users(name, role, pwhash, created_at) VALUES(?,?,?,?)");
    if (st) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, pwhash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, auth_wall_ms());
    }
    int sq = step_write(st);
    if (sq == SQLITE_CONSTRAINT)
        e = loom_err(LOOM_E_CONFLICT, "user '%s' already exists", name);
    else if (sq != SQLITE_DONE)
        e = loom_err(LOOM_E_INTERNAL, "cannot store user '%s': %s", name, sqlite3_errmsg(svc->db));
    auth_unlock(svc);
    if (!e)
        log_info("auth: added user '%s' (role %s)", name, role);
    return e;
}

/* The role of `name` into role, or LOOM_E_NOT_FOUND. Lock held. */
static loom_error *user_role(auth_service *svc, const char *name, char *role, size_t cap)
{
    sqlite3_stmt *st = auth_prepare(svc, "SELECT role FROM users WHERE name = ?");
    if (!st)
        return loom_err(LOOM_E_INTERNAL, "auth: %s", sqlite3_errmsg(svc->db));
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        auth_column_text(st, 0, role, cap);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return NULL;
    if (rc == SQLITE_DONE)
        return loom_err(LOOM_E_NOT_FOUND, "user '%s' does not exist", name);
    return loom_err(LOOM_E_INTERNAL, "auth: %s", sqlite3_errmsg(svc->db));
}

static int count_admins(auth_service *svc)
{
    sqlite3_stmt *st =
        auth_prepare(svc, "SELECT count(*) FROM users WHERE role = 'admin'");
    if (!st)
        return -1;
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

static loom_error *db_failure(auth_service *svc, const char *what, const char *a, const char *b)
{
    return loom_err(LOOM_E_INTERNAL, "cannot %s '%s'%s%s: %s", what, a, b ? " of " : "",
                    b ? b : "", sqlite3_errmsg(svc->db));
}

/* The removal under the lock, in a transaction so that the last-admin check
 * and the delete see the same table even with another process writing. */
static loom_error *remove_locked(auth_service *svc, const char *name)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        return db_failure(svc, "remove user", name, NULL);
    char role[AUTH_ROLE_MAX] = "";
    loom_error *e = user_role(svc, name, role, sizeof role);
    if (!e && strcmp(role, "admin") == 0 && count_admins(svc) <= 1)
        e = loom_err(LOOM_E_CONFLICT, "user '%s' is the last admin: add another admin first",
                     name);
    if (!e && write2(svc, "DELETE FROM users WHERE name = ?", name, NULL) != SQLITE_DONE)
        e = db_failure(svc, "remove user", name, NULL);
    if (!e && auth_exec(svc, "COMMIT") == 0)
        return NULL;
    if (!e)
        e = db_failure(svc, "remove user", name, NULL);
    auth_exec(svc, "ROLLBACK");
    return e;
}

loom_error *auth_user_remove(auth_service *svc, const char *name)
{
    loom_error *e = auth_check_name("user name", name);
    if (e)
        return e;
    auth_lock(svc);
    e = remove_locked(svc, name);
    auth_unlock(svc);
    if (!e)
        log_info("auth: removed user '%s' with its API keys and tokens", name);
    return e;
}

static loom_error *passwd_locked(auth_service *svc, const char *name, const char *pwhash,
                                 int keep_keys)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        goto failed;
    if (write2(svc, "UPDATE users SET pwhash = ?1 WHERE name = ?2", pwhash,
               name) != SQLITE_DONE)
        goto failed;
    if (sqlite3_changes(svc->db) == 0) {
        auth_exec(svc, "ROLLBACK");
        return loom_err(LOOM_E_NOT_FOUND, "user '%s' does not exist", name);
    }
    /* Whoever had the old password may hold a token or have made a key:
     * both go (the tokens keys issued with them). */
    if (write2(svc, "DELETE FROM tokens WHERE user_id = (SELECT id FROM users WHERE name = ?)",
               name, NULL) != SQLITE_DONE)
        goto failed;
    if (!keep_keys &&
        write2(svc, "DELETE FROM api_keys WHERE user_id = (SELECT id FROM users WHERE name = ?)",
               name, NULL) != SQLITE_DONE)
        goto failed;
    if (auth_exec(svc, "COMMIT") != 0)
        goto failed;
    return NULL;
failed:;
    loom_error *e = db_failure(svc, "change the password of", name, NULL);
    auth_exec(svc, "ROLLBACK");
    return e;
}

loom_error *auth_user_passwd(auth_service *svc, const char *name, const char *password,
                             int keep_keys)
{
    loom_error *e = auth_check_name("user name", name);
    if (!e)
        e = auth_check_password(password);
    char pwhash[crypto_pwhash_STRBYTES];
    if (!e)
        e = auth_hash_password(svc, password, pwhash);
    if (e)
        return e;
    auth_lock(svc);
    e = passwd_locked(svc, name, pwhash, keep_keys);
    auth_unlock(svc);
    if (!e)
        log_info("auth: changed the password of '%s' and revoked its tokens%s", name,
                 keep_keys ? "" : " and API keys");
    return e;
}

loom_error *auth_user_list(auth_service *svc, void (*fn)(const auth_user *user, void *ctx),
                           void *ctx, size_t *count)
{
    auth_lock(svc);
    sqlite3_stmt *st = auth_prepare(
        svc, "SELECT name, role, created_at FROM users ORDER BY name");
    size_t n = 0;
    int rc = SQLITE_ERROR;
    while (st && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        auth_user u;
        auth_column_text(st, 0, u.name, sizeof u.name);
        auth_column_text(st, 1, u.role, sizeof u.role);
        u.created_at_ms = sqlite3_column_int64(st, 2);
        if (fn)
            fn(&u, ctx);
        n++;
    }
    loom_error *e = rc == SQLITE_DONE ? NULL
                                      : loom_err(LOOM_E_INTERNAL, "cannot list users: %s",
                                                 sqlite3_errmsg(svc->db));
    sqlite3_finalize(st);
    auth_unlock(svc);
    if (count)
        *count = n;
    return e;
}

loom_error *auth_user_id(auth_service *svc, const char *name, int64_t *id)
{
    auth_lock(svc);
    sqlite3_stmt *st = auth_prepare(svc, "SELECT id FROM users WHERE name = ?");
    loom_error *e = st ? loom_err(LOOM_E_NOT_FOUND, "user %s: no such user", name)
                       : loom_err(LOOM_E_INTERNAL, "user %s: cannot read the users: %s", name,
                                  sqlite3_errmsg(svc->db));
    if (st) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            loom_err_free(e);
            e = NULL;
        }
    }
    sqlite3_finalize(st);
    auth_unlock(svc);
    return e;
}

loom_error *auth_apikey_create(auth_service *svc, const char *user, const char *label,
                               char *key_out, size_t len)
{
    return auth_apikey_create_scoped(svc, user, label, AUTH_SCOPE_ALL, key_out, len);
}

loom_error *auth_apikey_create_scoped(auth_service *svc, const char *user, const char *label,
                                      const char *scope, char *key_out, size_t len)
{
    loom_error *e = auth_check_name("user name", user);
    if (!e)
        e = auth_check_name("API key label", label);
    if (!e)
        e = auth_check_scope(scope);
    if (e)
        return e;
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    if (auth_new_secret(AUTH_APIKEY_PREFIX, key_out, len, hash) != 0)
        return loom_err(LOOM_E_INVALID, "API key: the output buffer needs %d bytes",
                        AUTH_SECRET_MAX);

    auth_lock(svc);
    char role[AUTH_ROLE_MAX];
    e = user_role(svc, user, role, sizeof role);
    if (!e) {
        sqlite3_stmt *st = auth_prepare(
            svc, "INSERT INTO api_keys(user_id, key_hash, label, created_at, scope) "
                 "VALUES((SELECT id FROM users WHERE name = ?), ?, ?, ?, ?)");
        if (st) {
            sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
            sqlite3_bind_blob(st, 2, hash, sizeof hash, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, label, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, auth_wall_ms());
            sqlite3_bind_text(st, 5, scope, -1, SQLITE_STATIC);
        }
        int sq = step_write(st);
        if (sq == SQLITE_CONSTRAINT)
            e = loom_err(LOOM_E_CONFLICT, "user '%s' already has an API key labelled '%s'", user,
                         label);
        else if (sq != SQLITE_DONE)
            e = db_failure(svc, "store the API key", label, user);
    }
    auth_unlock(svc);
    if (e)
        sodium_memzero(key_out, len);
    else
        log_info("auth: created API key '%s' (scope %s) for '%s'", label, scope, user);
    return e;
}

static loom_error *revoke_locked(auth_service *svc, const char *user, const char *label)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        goto failed;
    /* Tokens first, while the key's hash can still be looked up. */
    if (write2(svc, "DELETE FROM tokens WHERE apikey_hash = "
                    "(SELECT key_hash FROM api_keys WHERE label = ?2 AND user_id = "
                    "(SELECT id FROM users WHERE name = ?1))",
               user, label) != SQLITE_DONE ||
        write2(svc, "DELETE FROM api_keys WHERE label = ?2 AND user_id = "
                    "(SELECT id FROM users WHERE name = ?1)", user,
               label) != SQLITE_DONE)
        goto failed;
    if (sqlite3_changes(svc->db) == 0) {
        auth_exec(svc, "ROLLBACK");
        return loom_err(LOOM_E_NOT_FOUND, "user '%s' has no API key labelled '%s'", user, label);
    }
    if (auth_exec(svc, "COMMIT") != 0)
        goto failed;
    return NULL;
failed:;
    loom_error *e = db_failure(svc, "revoke the API key", label, user);
    auth_exec(svc, "ROLLBACK");
    return e;
}

loom_error *auth_apikey_revoke(auth_service *svc, const char *user, const char *label)
{
    loom_error *e = auth_check_name("user name", user);
    if (!e)
        e = auth_check_name("API key label", label);
    if (e)
        return e;
    auth_lock(svc);
    e = revoke_locked(svc, user, label);
    auth_unlock(svc);
    if (!e)
        log_info("auth: revoked API key '%s' of '%s'", label, user);
    return e;
}

loom_error *auth_apikey_list(auth_service *svc, const char *user,
                             void (*fn)(const auth_apikey *key, void *ctx), void *ctx,
                             size_t *count)
{
    auth_lock(svc);
    sqlite3_stmt *st = auth_prepare(
        svc, "SELECT u.name, k.label, k.created_at, k.scope FROM api_keys k "
             "JOIN users u ON u.id = k.user_id "
             "WHERE ?1 IS NULL OR u.name = ?1 ORDER BY u.name, k.label");
    size_t n = 0;
    int rc = SQLITE_ERROR;
    if (st && user)
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
    while (st && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        auth_apikey k;
        auth_column_text(st, 0, k.user, sizeof k.user);
        auth_column_text(st, 1, k.label, sizeof k.label);
        k.created_at_ms = sqlite3_column_int64(st, 2);
        auth_column_text(st, 3, k.scope, sizeof k.scope);
        if (fn)
            fn(&k, ctx);
        n++;
    }
    loom_error *e = rc == SQLITE_DONE ? NULL
                                      : loom_err(LOOM_E_INTERNAL, "cannot list API keys: %s",
                                                 sqlite3_errmsg(svc->db));
    sqlite3_finalize(st);
    auth_unlock(svc);
    if (count)
        *count = n;
    return e;
}
