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
    loom_error *e = store_token_delete_expired(svc->st, now_ms);
    if (e)
        log_warn("auth: cannot purge expired tokens: %s", loom_err_message(e));
    loom_err_free(e);
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
    loom_error *e = store_token_insert(svc->st, hash, user_id, expires, apikey_hash);
    if (e) {
        sodium_memzero(token_out, len);
        return loom_err_wrap(e, "cannot store a token for user %lld", (long long)user_id);
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

/* What a store read's error means; frees it, keeping an internal one's
 * message in `why`. */
static int found_of(loom_error *e, char *why, size_t cap)
{
    int found = !e ? FOUND : loom_err_code(e) == LOOM_E_NOT_FOUND ? NOT_FOUND : DB_FAILED;
    if (found == DB_FAILED)
        snprintf(why, cap, "%s", loom_err_message(e));
    loom_err_free(e);
    return found;
}

/* The stored name, role, id and hash of `user`. Lock held. */
static int fetch_user(auth_service *svc, const char *user, char *name, char *role,
                      int64_t *id, char pwhash[crypto_pwhash_STRBYTES], char *why, size_t cap)
{
    store_user u;
    int found = found_of(store_user_by_name(svc->st, user, &u), why, cap);
    if (found == FOUND) {
        memcpy(name, u.name, AUTH_NAME_MAX);
        memcpy(role, u.role, AUTH_ROLE_MAX);
        memcpy(pwhash, u.pwhash, crypto_pwhash_STRBYTES);
        *id = u.id;
    }
    sodium_memzero(u.pwhash, sizeof u.pwhash);
    return found;
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
    /* Only over the hash just verified: a password changed meanwhile stays. */
    auth_lock(svc);
    loom_err_free(store_user_set_pwhash(svc->st, name, fresh, pwhash));
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
    char why[256] = "";
    loom_error *bad_name = auth_check_name("user name", user);
    attempt a;

    auth_lock(svc);
    loom_error *e = limiter_begin(svc, &a, client_id, bad_name ? "" : user, now_ms);
    int found = NOT_FOUND;
    if (!e && !bad_name)
        found = fetch_user(svc, user, name, role, &user_id, pwhash, why, sizeof why);
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
            return loom_err(LOOM_E_INTERNAL, "cannot read users: %s", why);
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
static int find_apikey(auth_service *svc, const unsigned char hash[AUTH_SECRET_HASH_BYTES],
                       char *user, int64_t *user_id, char *why, size_t cap)
{
    store_apikey k;
    int found = found_of(store_apikey_find(svc->st, hash, &k), why, cap);
    /* The lookup is by the hash of a 256-bit secret, which leaks nothing
     * useful through timing; the stored hash is still compared in constant
     * time so no path compares secrets byte by byte. */
    if (found == FOUND && sodium_memcmp(k.hash, hash, AUTH_SECRET_HASH_BYTES) != 0)
        found = NOT_FOUND;
    if (found == FOUND) {
        memcpy(user, k.user, AUTH_NAME_MAX);
        *user_id = k.user_id;
    }
    return found;
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
    char why[256] = "";
    attempt a;
    auth_lock(svc);
    e = limiter_begin(svc, &a, client_id, NULL, now_ms);
    if (!e) {
        int found = plausible ? find_apikey(svc, hash, user, &user_id, why, sizeof why)
                              : NOT_FOUND;
        limiter_end(svc, &a, now_ms, found != FOUND);
        if (found == FOUND)
            e = auth_issue_token(svc, user_id, hash, now_ms, token_out, len, expires_at_ms);
        else if (found == DB_FAILED)
            e = loom_err(LOOM_E_INTERNAL, "cannot read API keys: %s", why);
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

/* Deletes the token of hash `hash`: 1 deleted, 0 none, -1 failed. */
static int delete_token(auth_service *svc, const unsigned char hash[AUTH_SECRET_HASH_BYTES])
{
    loom_error *e = store_token_delete(svc->st, hash);
    int n = !e ? 1 : loom_err_code(e) == LOOM_E_NOT_FOUND ? 0 : -1;
    if (n < 0)
        log_warn("auth: cannot revoke a token: %s", loom_err_message(e));
    loom_err_free(e);
    return n;
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

    /* Every request that misses the cache comes through here: one
     * statement the store prepared once, under the store's lock only. */
    store_token t;
    loom_error *e = store_token_find(svc->st, hash, &t);
    int found = !e && sodium_memcmp(t.hash, hash, sizeof hash) == 0;
    int expired = found && t.expires_at <= now_ms;
    if (expired)
        found = 0;
    if (found) {
        snprintf(who->user, sizeof who->user, "%s", t.user);
        snprintf(who->role, sizeof who->role, "%s", t.role);
        who->user_id = t.user_id;
        who->expires_at_ms = t.expires_at;
        snprintf(who->scope, sizeof who->scope, "%s", t.scope);
    }
    if (e && loom_err_code(e) != LOOM_E_NOT_FOUND)
        e = loom_err_wrap(e, "cannot read tokens");
    else if (!found) {
        loom_err_free(e);
        e = loom_err(LOOM_E_UNAUTHENTICATED, "%s token", expired ? "expired" : "unknown");
    }
    if (expired)
        delete_token(svc, hash);
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
