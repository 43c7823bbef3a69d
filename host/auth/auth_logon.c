/* auth/auth_logon.c - log-on with a password or an API key, and the bearer
 * tokens it issues: check, log out, lazy purge of expired ones. See auth.h. */
#include "auth/auth_internal.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

/* Expired tokens are deleted at most this often (and singly when shown). */
#define PURGE_INTERVAL_MS 60000

static void purge_expired(auth_service *svc, int64_t now_ms)
{
    if (now_ms - svc->last_purge_ms < PURGE_INTERVAL_MS &&
        now_ms >= svc->last_purge_ms)
        return;
    svc->last_purge_ms = now_ms;
    sqlite3_stmt *st = auth_prepare(svc, "DELETE FROM tokens WHERE expires_at <= ?");
    if (!st)
        return;
    sqlite3_bind_int64(st, 1, now_ms);
    if (sqlite3_step(st) != SQLITE_DONE)
        log_warn("auth: cannot purge expired tokens: %s", sqlite3_errmsg(svc->db));
    sqlite3_finalize(st);
}

loom_error *auth_issue_token(auth_service *svc, int64_t user_id,
                             const unsigned char *apikey_hash, int64_t now_ms, char *token_out,
                             size_t len, int64_t *expires_at_ms)
{
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    if (auth_new_secret(AUTH_TOKEN_PREFIX, token_out, len, hash) != 0)
        return loom_err(LOOM_E_INVALID, "token: the output buffer needs %d bytes",
                        AUTH_SECRET_MAX);
    purge_expired(svc, now_ms);
    int64_t expires = now_ms + svc->token_ttl_ms;
    sqlite3_stmt *st = auth_prepare(
        svc, "INSERT INTO tokens(token_hash, user_id, expires_at, apikey_hash) "
             "VALUES(?,?,?,?)");
    if (st) {
        sqlite3_bind_blob(st, 1, hash, sizeof hash, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, user_id);
        sqlite3_bind_int64(st, 3, expires);
        if (apikey_hash)
            sqlite3_bind_blob(st, 4, apikey_hash, AUTH_SECRET_HASH_BYTES,
                              SQLITE_STATIC);
    }
    int rc = st ? sqlite3_step(st) : SQLITE_ERROR;
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        sodium_memzero(token_out, len);
        return loom_err(LOOM_E_INTERNAL, "cannot store a token for user %lld: %s",
                        (long long)user_id, sqlite3_errmsg(svc->db));
    }
    if (expires_at_ms)
        *expires_at_ms = expires;
    return NULL;
}

/* The limiter's key of an account: names compare ignoring case. */
static void account_key(const char *user, char *out, size_t len)
{
    size_t i = 0;
    for (; user && user[i] && i + 1 < len; i++)
        out[i] = (char)(user[i] >= 'A' && user[i] <= 'Z' ? user[i] - 'A' + 'a' : user[i]);
    out[i] = '\0';
}

/* An attempt under way: what limiter_end must close. */
typedef struct attempt {
    const char *client;
    char account[AUTH_NAME_MAX];
    char pair[AUTH_NAME_MAX + 72]; /* account, newline, client */
    int trusted;                   /* this address logged on to the account before */
    int counts_account;
} attempt;

static loom_error *rate_limited(const char *what, const char *who, int64_t wait)
{
    return loom_err(LOOM_E_RATE_LIMITED, "too many failed log-ons %s %.64s: try again in %lld s",
                    what, who, (long long)((wait + 999) / 1000));
}

/* Starts a log-on attempt by `client` on `user` (NULL: not known yet, an
 * API key) for both limits; LOOM_E_RATE_LIMITED when it must wait. An
 * address that has logged on to the account before is held back only by
 * its own failures, so an attack on the account from elsewhere does not
 * lock its owner out. Lock held. */
static loom_error *limiter_begin(auth_service *svc, attempt *a, const char *client,
                                 const char *user, int64_t now_ms)
{
    memset(a, 0, sizeof *a);
    a->client = client;
    int64_t wait = ratelimit_begin(svc->limiter, client, now_ms);
    if (wait)
        return rate_limited("from", client, wait);
    if (!user)
        return NULL;
    account_key(user, a->account, sizeof a->account);
    snprintf(a->pair, sizeof a->pair, "%s\n%s", a->account, client);
    a->trusted = ratelimit_succeeded(svc->trusted, a->pair);
    if (a->trusted)
        return NULL;
    wait = ratelimit_begin(svc->account_limiter, a->account, now_ms);
    if (wait) {
        ratelimit_end(svc->limiter, client, now_ms, 0);
        return rate_limited("for account", user,  wait);
    }
    a->counts_account = 1;
    return NULL;
}

/* Ends an attempt begun by limiter_begin. Lock held. */
static void limiter_end(auth_service *svc, const attempt *a, int64_t now_ms, int failed)
{
    ratelimit_end(svc->limiter, a->client, now_ms, failed);
    if (a->counts_account)
        ratelimit_end(svc->account_limiter, a->account, now_ms, failed);
    if (!failed && a->pair[0] && ratelimit_begin(svc->trusted, a->pair, now_ms) == 0)
        ratelimit_end(svc->trusted, a->pair, now_ms, 0);
}

/* What a found row, or its absence, means. */
enum { FOUND, NOT_FOUND, DB_FAILED };

/* The stored name, role, id and hash of `user`. Lock held. */
static int fetch_user(auth_service *svc, const char *user, char *name, char *role,
                      int64_t *id, char pwhash[crypto_pwhash_STRBYTES])
{
    sqlite3_stmt *st =
        auth_prepare(svc, "SELECT name, pwhash, role, id FROM users WHERE name = ?");
    if (!st)
        return DB_FAILED;
    sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        auth_column_text(st, 0, name, AUTH_NAME_MAX);
        auth_column_text(st, 1, pwhash, crypto_pwhash_STRBYTES);
        auth_column_text(st, 2, role, AUTH_ROLE_MAX);
        *id = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? FOUND : rc == SQLITE_DONE ? NOT_FOUND : DB_FAILED;
}

/* After a successful log-on: when the configured cost differs from the one
 * the hash was made with, store a new hash so the policy catches up. */
static void rehash_if_needed(auth_service *svc, const char *name,
                             const char *pwhash, const char *password)
{
    if (crypto_pwhash_str_needs_rehash(pwhash, svc->opslimit, svc->memlimit) == 0)
        return;
    char fresh[crypto_pwhash_STRBYTES];
    loom_error *e = auth_hash_password(svc, password, fresh);
    if (e) {
        loom_err_free(e);
        return;
    }
    auth_lock(svc);
    sqlite3_stmt *st = auth_prepare(
        svc, "UPDATE users SET pwhash = ?1 WHERE name = ?2 AND pwhash = ?3");
    if (st) {
        sqlite3_bind_text(st, 1, fresh, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, pwhash, -1, SQLITE_STATIC);
        sqlite3_step(st);
        sqlite3_finalize(st);
    }
    auth_unlock(svc);
}

static loom_error *token_buffer_check(const char *token_out, size_t len)
{
    if (!token_out || len < AUTH_SECRET_MAX)
        return loom_err(LOOM_E_INVALID, "token: the output buffer needs %d bytes",
                        AUTH_SECRET_MAX);
    return NULL;
}

loom_error *auth_verify_password(auth_service *svc, const char *client_id, const char *user,
                                 const char *password, int64_t now_ms, auth_identity *who)
{
    if (!client_id)
        client_id = "";
    char name[AUTH_NAME_MAX] = "", role[AUTH_ROLE_MAX] = "";
    char pwhash[crypto_pwhash_STRBYTES] = "";
    int64_t user_id = 0;
    loom_error *bad_name = auth_check_name("user name", user);
    attempt a;

    auth_lock(svc);
    loom_error *e = limiter_begin(svc, &a, client_id, bad_name ? "" : user, now_ms);
    int found = NOT_FOUND;
    if (!e && !bad_name)
        found = fetch_user(svc, user, name, role, &user_id, pwhash);
    loom_err_free(bad_name); /* refused like an unknown user */
    auth_unlock(svc);
    if (e)
        return e;

    /* The slow part, outside the lock. An unknown user is checked against a
     * dummy hash so the answer takes as long as for a wrong password. */
    size_t plen = password ? strnlen(password, AUTH_PASSWORD_MAX_LEN + 1) : 0;
    int ok = 0;
    if (plen <= AUTH_PASSWORD_MAX_LEN) {
        int verified = crypto_pwhash_str_verify(
            found == FOUND ? pwhash : svc->dummy_pwhash,
            password ? password : "", plen);
        ok = found == FOUND && verified == 0;
    }

    auth_lock(svc);
    limiter_end(svc, &a, now_ms, !ok);
    auth_unlock(svc);
    if (!ok) {
        log_warn("auth: failed log-on from %s", client_id);
        if (found == DB_FAILED)
            return loom_err(LOOM_E_INTERNAL, "cannot read users: %s", sqlite3_errmsg(svc->db));
        return loom_err(LOOM_E_UNAUTHENTICATED, "invalid user name or password");
    }
    rehash_if_needed(svc, name, pwhash, password);
    if (who) {
        snprintf(who->user, sizeof who->user, "%s", name);
        snprintf(who->role, sizeof who->role, "%s", role);
        who->user_id = user_id;
        who->expires_at_ms = 0;
        snprintf(who->scope, sizeof who->scope, "%s", AUTH_SCOPE_ALL);
    }
    return NULL;
}

loom_error *auth_logon_password(auth_service *svc, const char *client_id, const char *user,
                                const char *password, int64_t now_ms, char *token_out,
                                size_t len, int64_t *expires_at_ms)
{
    loom_error *e = token_buffer_check(token_out, len);
    if (e)
        return e;
    token_out[0] = '\0';
    auth_identity who;
    e = auth_verify_password(svc, client_id, user, password, now_ms, &who);
    if (e)
        return e;
    auth_lock(svc);
    e = auth_issue_token(svc, who.user_id, NULL, now_ms, token_out, len, expires_at_ms);
    auth_unlock(svc);
    if (!e)
        log_info("auth: '%s' logged on with a password from %s", who.user,
                 client_id ? client_id : "");
    return e;
}

/* The user owning the API key of hash `hash`. Lock held. */
static int find_apikey(auth_service *svc,
                       const unsigned char hash[AUTH_SECRET_HASH_BYTES],
                       char *user, int64_t *user_id)
{
    sqlite3_stmt *st = auth_prepare(
        svc, "SELECT k.key_hash, u.name, u.id FROM api_keys k "
             "JOIN users u ON u.id = k.user_id WHERE k.key_hash = ?");
    if (!st)
        return DB_FAILED;
    sqlite3_bind_blob(st, 1, hash, AUTH_SECRET_HASH_BYTES, SQLITE_STATIC);
    int rc = NOT_FOUND;
    int sq = sqlite3_step(st);
    /* The lookup is by the hash of a 256-bit secret, which leaks nothing
     * useful through timing; the stored hash is still compared in constant
     * time so no path compares secrets byte by byte. */
    if (sq == SQLITE_ROW &&
        sqlite3_column_bytes(st, 0) == AUTH_SECRET_HASH_BYTES &&
        sodium_memcmp(sqlite3_column_blob(st, 0), hash, AUTH_SECRET_HASH_BYTES) == 0) {
        auth_column_text(st, 1, user, AUTH_NAME_MAX);
        *user_id = sqlite3_column_int64(st, 2);
        rc = FOUND;
    } else if (sq != SQLITE_ROW && sq != SQLITE_DONE) {
        rc = DB_FAILED;
    }
    sqlite3_finalize(st);
    return rc;
}

loom_error *auth_logon_apikey(auth_service *svc, const char *client_id, const char *apikey,
                              int64_t now_ms, char *token_out, size_t len,
                              int64_t *expires_at_ms)
{
    if (!client_id)
        client_id = "";
    loom_error *e = token_buffer_check(token_out, len);
    if (e)
        return e;
    token_out[0] = '\0';
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    int plausible = apikey && strnlen(apikey, AUTH_SECRET_INPUT_MAX + 1) <= AUTH_SECRET_INPUT_MAX;
    if (plausible)
        auth_secret_hash(apikey, hash);

    char user[AUTH_NAME_MAX] = "";
    int64_t user_id = 0;
    attempt a;
    auth_lock(svc);
    e = limiter_begin(svc, &a, client_id, NULL, now_ms);
    if (!e) {
        int found = plausible ? find_apikey(svc, hash, user, &user_id) : NOT_FOUND;
        limiter_end(svc, &a, now_ms, found != FOUND);
        if (found == FOUND)
            e = auth_issue_token(svc, user_id, hash, now_ms, token_out, len, expires_at_ms);
        else if (found == DB_FAILED)
            e = loom_err(LOOM_E_INTERNAL, "cannot read API keys: %s", sqlite3_errmsg(svc->db));
        else
            e = loom_err(LOOM_E_UNAUTHENTICATED, "invalid API key");
    }
    auth_unlock(svc);
    if (!e)
        log_info("auth: '%s' logged on with an API key from %s", user, client_id);
    else if (loom_err_code(e) == LOOM_E_UNAUTHENTICATED)
        log_warn("auth: failed API key log-on from %s", client_id);
    return e;
}

int64_t auth_retry_after_ms(auth_service *svc, const char *client_id,
                            int64_t now_ms)
{
    pthread_mutex_lock(&svc->lock);
    int64_t wait = ratelimit_retry_after(svc->limiter, client_id ? client_id : "", now_ms);
    pthread_mutex_unlock(&svc->lock);
    return wait;
}

/* Deletes the token of hash `hash`; returns the rows deleted or -1. Lock
 * held. */
static int delete_token(auth_service *svc,
                        const unsigned char hash[AUTH_SECRET_HASH_BYTES])
{
    sqlite3_stmt *st = auth_prepare(svc, "DELETE FROM tokens WHERE token_hash = ?");
    if (!st)
        return -1;
    sqlite3_bind_blob(st, 1, hash, AUTH_SECRET_HASH_BYTES, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? sqlite3_changes(svc->db) : -1;
}

static int plausible_token(const char *token)
{
    return token && *token &&
           strnlen(token, AUTH_SECRET_INPUT_MAX + 1) <= AUTH_SECRET_INPUT_MAX;
}

static auth_token_entry *cache_slot(auth_service *svc,
                                    const unsigned char hash[AUTH_SECRET_HASH_BYTES])
{
    return &svc->token_cache[(hash[0] | (unsigned)hash[1] << 8) % AUTH_TOKEN_CACHE_SLOTS];
}

/* The identity of a token verified lately, of this generation and not
 * expired: 1 with *who filled. */
static int cached_token(auth_service *svc, const unsigned char hash[AUTH_SECRET_HASH_BYTES],
                        uint64_t generation, int64_t now_ms, auth_identity *who)
{
    auth_token_entry *e = cache_slot(svc, hash);
    pthread_mutex_lock(&svc->cache_lock);
    int hit = e->generation == generation && e->who.expires_at_ms > now_ms &&
              sodium_memcmp(e->hash, hash, AUTH_SECRET_HASH_BYTES) == 0;
    if (hit && who)
        *who = e->who;
    pthread_mutex_unlock(&svc->cache_lock);
    return hit;
}

/* Keeps what the database said of a token, as of `generation` (read
 * before the database was). */
static void cache_token(auth_service *svc, const unsigned char hash[AUTH_SECRET_HASH_BYTES],
                        uint64_t generation, const auth_identity *who)
{
    auth_token_entry *e = cache_slot(svc, hash);
    pthread_mutex_lock(&svc->cache_lock);
    memcpy(e->hash, hash, AUTH_SECRET_HASH_BYTES);
    e->generation = generation;
    e->who = *who;
    pthread_mutex_unlock(&svc->cache_lock);
}

loom_error *auth_check_token(auth_service *svc, const char *token, int64_t now_ms,
                             auth_identity *who)
{
    if (!plausible_token(token))
        return loom_err(LOOM_E_UNAUTHENTICATED, "not a token");
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    auth_secret_hash(token, hash);
    uint64_t generation = __atomic_load_n(&svc->generation, __ATOMIC_ACQUIRE);
    if (cached_token(svc, hash, generation, now_ms, who))
        return NULL;
    auth_identity found_who;
    if (!who)
        who = &found_who;

    /* Every request comes through here: only the service's lock, which keeps
     * auth's own transactions away. No other statement's row count or error
     * is read here, so the store's statements need not wait for this one. */
    pthread_mutex_lock(&svc->lock);
    sqlite3_stmt *st = svc->check_token_stmt;
    int found = 0, expired = 0;
    sqlite3_bind_blob(st, 1, hash, sizeof hash, SQLITE_STATIC);
    int sq = sqlite3_step(st);
    if (sq == SQLITE_ROW && sqlite3_column_bytes(st, 0) == (int)sizeof hash &&
        sodium_memcmp(sqlite3_column_blob(st, 0), hash, sizeof hash) == 0) {
        int64_t expires = sqlite3_column_int64(st, 1);
        if (expires <= now_ms) {
            expired = 1;
        } else {
            if (who) {
                auth_column_text(st, 2, who->user, sizeof who->user);
                auth_column_text(st, 3, who->role, sizeof who->role);
                who->user_id = sqlite3_column_int64(st, 4);
                who->expires_at_ms = expires;
                auth_column_text(st, 5, who->scope, sizeof who->scope);
            }
            found = 1;
        }
    }
    loom_error *e = found ? NULL
                    : sq != SQLITE_ROW && sq != SQLITE_DONE
                        ? loom_err(LOOM_E_INTERNAL, "cannot read tokens: %s", sqlite3_errmsg(svc->db))
                        : loom_err(LOOM_E_UNAUTHENTICATED, "%s token", expired ? "expired" : "unknown");
    /* Reset ends the read so the statement holds no lock on the file. */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (expired)
        delete_token(svc, hash);
    pthread_mutex_unlock(&svc->lock);
    if (found)
        cache_token(svc, hash, generation, who);
    return e;
}

loom_error *auth_logout(auth_service *svc, const char *token)
{
    if (!plausible_token(token))
        return loom_err(LOOM_E_NOT_FOUND, "not a token");
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    auth_secret_hash(token, hash);
    auth_lock(svc);
    int n = delete_token(svc, hash);
    auth_unlock(svc);
    if (n > 0)
        return NULL;
    return n == 0 ? loom_err(LOOM_E_NOT_FOUND, "no such token (expired, or already revoked)")
                  : loom_err(LOOM_E_INTERNAL, "cannot revoke the token");
}
