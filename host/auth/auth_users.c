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

int auth_user_add(auth_service *svc, const char *name, const char *password,
                  const char *role, char *err, size_t errlen)
{
    int rc = auth_check_name("user name", name, err, errlen);
    if (rc == AUTH_OK)
        rc = auth_check_password(password, err, errlen);
    if (rc == AUTH_OK)
        rc = auth_check_role(role, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    char pwhash[crypto_pwhash_STRBYTES];
    rc = auth_hash_password(svc, password, pwhash, err, errlen);
    if (rc != AUTH_OK)
        return rc;

    pthread_mutex_lock(&svc->lock);
    sqlite3_stmt *st = auth_prepare(
        svc, "INSERT INTO users(name, role, pwhash, created_at) VALUES(?,?,?,?)");
    if (st) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, role, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, pwhash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, auth_wall_ms());
    }
    int sq = step_write(st);
    if (sq == SQLITE_DONE)
        rc = AUTH_OK;
    else if (sq == SQLITE_CONSTRAINT)
        rc = auth_fail(err, errlen, AUTH_EEXISTS, "user '%s' already exists", name);
    else
        rc = auth_fail(err, errlen, AUTH_EINTERNAL, "cannot store user '%s': %s",
                       name, sqlite3_errmsg(svc->db));
    pthread_mutex_unlock(&svc->lock);
    if (rc == AUTH_OK)
        log_info("auth: added user '%s' (role %s)", name, role);
    return rc;
}

/* The role of `name` into role; AUTH_OK or AUTH_ENOTFOUND. Lock held. */
static int user_role(auth_service *svc, const char *name, char *role,
                     size_t cap)
{
    sqlite3_stmt *st = auth_prepare(svc, "SELECT role FROM users WHERE name = ?");
    if (!st)
        return AUTH_EINTERNAL;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        auth_column_text(st, 0, role, cap);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? AUTH_OK : rc == SQLITE_DONE ? AUTH_ENOTFOUND
                                                         : AUTH_EINTERNAL;
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

/* The removal under the lock, in a transaction so that the last-admin check
 * and the delete see the same table even with another process writing. */
static int remove_locked(auth_service *svc, const char *name, char *err,
                         size_t errlen)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        return auth_fail(err, errlen, AUTH_EINTERNAL, "cannot remove user '%s': %s",
                         name, sqlite3_errmsg(svc->db));
    char role[AUTH_ROLE_MAX] = "";
    int rc = user_role(svc, name, role, sizeof role);
    if (rc == AUTH_ENOTFOUND)
        rc = auth_fail(err, errlen, rc, "user '%s' does not exist", name);
    if (rc == AUTH_OK && strcmp(role, "admin") == 0 && count_admins(svc) <= 1)
        rc = auth_fail(err, errlen, AUTH_ECONFLICT,
                       "user '%s' is the last admin: add another admin first", name);
    if (rc == AUTH_OK) {
        if (write2(svc, "DELETE FROM users WHERE name = ?", name, NULL) != SQLITE_DONE)
            rc = AUTH_EINTERNAL;
    }
    if (rc == AUTH_OK && auth_exec(svc, "COMMIT") == 0)
        return AUTH_OK;
    if (rc == AUTH_OK || rc == AUTH_EINTERNAL)
        rc = auth_fail(err, errlen, AUTH_EINTERNAL, "cannot remove user '%s': %s",
                       name, sqlite3_errmsg(svc->db));
    auth_exec(svc, "ROLLBACK");
    return rc;
}

int auth_user_remove(auth_service *svc, const char *name, char *err,
                     size_t errlen)
{
    int rc = auth_check_name("user name", name, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    pthread_mutex_lock(&svc->lock);
    rc = remove_locked(svc, name, err, errlen);
    pthread_mutex_unlock(&svc->lock);
    if (rc == AUTH_OK)
        log_info("auth: removed user '%s' with its API keys and tokens", name);
    return rc;
}

static int passwd_locked(auth_service *svc, const char *name,
                         const char *pwhash, char *err, size_t errlen)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        goto failed;
    if (write2(svc, "UPDATE users SET pwhash = ?1 WHERE name = ?2", pwhash,
               name) != SQLITE_DONE)
        goto failed;
    if (sqlite3_changes(svc->db) == 0) {
        auth_exec(svc, "ROLLBACK");
        return auth_fail(err, errlen, AUTH_ENOTFOUND, "user '%s' does not exist", name);
    }
    /* Whoever had the old password may hold a token: it goes too. */
    if (write2(svc, "DELETE FROM tokens WHERE user = ?", name, NULL) != SQLITE_DONE ||
        auth_exec(svc, "COMMIT") != 0)
        goto failed;
    return AUTH_OK;
failed:
    auth_fail(err, errlen, AUTH_EINTERNAL, "cannot change the password of '%s': %s",
              name, sqlite3_errmsg(svc->db));
    auth_exec(svc, "ROLLBACK");
    return AUTH_EINTERNAL;
}

int auth_user_passwd(auth_service *svc, const char *name, const char *password,
                     char *err, size_t errlen)
{
    int rc = auth_check_name("user name", name, err, errlen);
    if (rc == AUTH_OK)
        rc = auth_check_password(password, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    char pwhash[crypto_pwhash_STRBYTES];
    rc = auth_hash_password(svc, password, pwhash, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    pthread_mutex_lock(&svc->lock);
    rc = passwd_locked(svc, name, pwhash, err, errlen);
    pthread_mutex_unlock(&svc->lock);
    if (rc == AUTH_OK)
        log_info("auth: changed the password of '%s' and revoked its tokens", name);
    return rc;
}

int auth_user_list(auth_service *svc,
                   void (*fn)(const auth_user *user, void *ctx), void *ctx)
{
    pthread_mutex_lock(&svc->lock);
    sqlite3_stmt *st = auth_prepare(
        svc, "SELECT name, role, created_at FROM users ORDER BY name");
    int n = st ? 0 : AUTH_EINTERNAL;
    int rc = SQLITE_DONE;
    while (st && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        auth_user u;
        auth_column_text(st, 0, u.name, sizeof u.name);
        auth_column_text(st, 1, u.role, sizeof u.role);
        u.created_at_ms = sqlite3_column_int64(st, 2);
        if (fn)
            fn(&u, ctx);
        n++;
    }
    if (rc != SQLITE_DONE)
        n = AUTH_EINTERNAL;
    sqlite3_finalize(st);
    pthread_mutex_unlock(&svc->lock);
    return n;
}

int auth_user_id(auth_service *svc, const char *name, int64_t *id)
{
    pthread_mutex_lock(&svc->lock);
    sqlite3_stmt *st = auth_prepare(svc, "SELECT rowid FROM users WHERE name = ?");
    int rc = st ? AUTH_ENOTFOUND : AUTH_EINTERNAL;
    if (st) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            rc = AUTH_OK;
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&svc->lock);
    return rc;
}

int auth_apikey_create(auth_service *svc, const char *user, const char *label,
                       char *key_out, size_t len, char *err, size_t errlen)
{
    int rc = auth_check_name("user name", user, err, errlen);
    if (rc == AUTH_OK)
        rc = auth_check_name("API key label", label, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    if (auth_new_secret(AUTH_APIKEY_PREFIX, key_out, len, hash) != AUTH_OK)
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "API key: the output buffer needs %d bytes", AUTH_SECRET_MAX);

    pthread_mutex_lock(&svc->lock);
    char role[AUTH_ROLE_MAX];
    rc = user_role(svc, user, role, sizeof role);
    if (rc == AUTH_ENOTFOUND)
        rc = auth_fail(err, errlen, rc, "user '%s' does not exist", user);
    if (rc == AUTH_OK) {
        sqlite3_stmt *st = auth_prepare(
            svc, "INSERT INTO api_keys(user, key_hash, label, created_at) "
                 "VALUES((SELECT name FROM users WHERE name = ?), ?, ?, ?)");
        if (st) {
            sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
            sqlite3_bind_blob(st, 2, hash, sizeof hash, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, label, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, auth_wall_ms());
        }
        int sq = step_write(st);
        if (sq == SQLITE_CONSTRAINT)
            rc = auth_fail(err, errlen, AUTH_EEXISTS,
                           "user '%s' already has an API key labelled '%s'", user, label);
        else if (sq != SQLITE_DONE)
            rc = AUTH_EINTERNAL;
    }
    if (rc == AUTH_EINTERNAL)
        auth_fail(err, errlen, rc, "cannot store the API key '%s' of '%s': %s",
                  label, user, sqlite3_errmsg(svc->db));
    pthread_mutex_unlock(&svc->lock);
    if (rc != AUTH_OK)
        sodium_memzero(key_out, len);
    else
        log_info("auth: created API key '%s' for '%s'", label, user);
    return rc;
}

static int revoke_locked(auth_service *svc, const char *user,
                         const char *label, char *err, size_t errlen)
{
    if (auth_exec(svc, "BEGIN IMMEDIATE") != 0)
        goto failed;
    /* Tokens first, while the key's hash can still be looked up. */
    if (write2(svc, "DELETE FROM tokens WHERE apikey_hash = "
                    "(SELECT key_hash FROM api_keys WHERE user = ?1 AND label = ?2)",
               user, label) != SQLITE_DONE ||
        write2(svc, "DELETE FROM api_keys WHERE user = ?1 AND label = ?2", user,
               label) != SQLITE_DONE)
        goto failed;
    if (sqlite3_changes(svc->db) == 0) {
        auth_exec(svc, "ROLLBACK");
        return auth_fail(err, errlen, AUTH_ENOTFOUND,
                         "user '%s' has no API key labelled '%s'", user, label);
    }
    if (auth_exec(svc, "COMMIT") != 0)
        goto failed;
    return AUTH_OK;
failed:
    auth_fail(err, errlen, AUTH_EINTERNAL, "cannot revoke the API key '%s' of '%s': %s",
              label, user, sqlite3_errmsg(svc->db));
    auth_exec(svc, "ROLLBACK");
    return AUTH_EINTERNAL;
}

int auth_apikey_revoke(auth_service *svc, const char *user, const char *label,
                       char *err, size_t errlen)
{
    int rc = auth_check_name("user name", user, err, errlen);
    if (rc == AUTH_OK)
        rc = auth_check_name("API key label", label, err, errlen);
    if (rc != AUTH_OK)
        return rc;
    pthread_mutex_lock(&svc->lock);
    rc = revoke_locked(svc, user, label, err, errlen);
    pthread_mutex_unlock(&svc->lock);
    if (rc == AUTH_OK)
        log_info("auth: revoked API key '%s' of '%s'", label, user);
    return rc;
}

int auth_apikey_list(auth_service *svc, const char *user,
                     void (*fn)(const auth_apikey *key, void *ctx), void *ctx)
{
    pthread_mutex_lock(&svc->lock);
    sqlite3_stmt *st = auth_prepare(
        svc, "SELECT user, label, created_at FROM api_keys "
             "WHERE ?1 IS NULL OR user = ?1 ORDER BY user, label");
    int n = st ? 0 : AUTH_EINTERNAL;
    int rc = SQLITE_DONE;
    if (st && user)
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
    while (st && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        auth_apikey k;
        auth_column_text(st, 0, k.user, sizeof k.user);
        auth_column_text(st, 1, k.label, sizeof k.label);
        k.created_at_ms = sqlite3_column_int64(st, 2);
        if (fn)
            fn(&k, ctx);
        n++;
    }
    if (rc != SQLITE_DONE)
        n = AUTH_EINTERNAL;
    sqlite3_finalize(st);
    pthread_mutex_unlock(&svc->lock);
    return n;
}
