/* auth/auth_basic.c - HTTP Basic credentials on every request (WMLA's
 * notebooks send them with each call), checked against the stored argon2id
 * hash. A client polling every second would cost one argon2id per call, so
 * a verified pair is remembered for a short while. See auth.h.
 *
 * The cache holds no password: an entry is found by a BLAKE2b hash of
 * "user NUL password" keyed with a random key made when the cache is, and
 * remembers a hash of the stored password hash it was verified against. A
 * hit re-reads the user's row: an entry whose user is gone or whose
 * password hash changed (a new password) is dropped, and the role is read
 * fresh. Misses go through the log-on limiter like any log-on. */
#include "auth/auth_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define CACHE_SLOTS 256 /* verified pairs remembered at once */

typedef struct basic_entry {
    unsigned char key[crypto_generichash_BYTES];      /* keyed hash of user, password */
    unsigned char pwhash_hash[crypto_generichash_BYTES]; /* of the stored hash verified */
    int64_t user_id;                                  /* immutable */
    int64_t expires_ms;                               /* 0: a free slot */
    int64_t used_ms;
} basic_entry;

struct auth_basic_cache {
    unsigned char secret[crypto_generichash_KEYBYTES];
    basic_entry slots[CACHE_SLOTS];
};

void auth_basic_cache_free(auth_basic_cache *c)
{
    if (!c)
        return;
    sodium_memzero(c, sizeof *c);
    free(c);
}

/* The cache, made on first use. Service lock held. */
static auth_basic_cache *cache_of(auth_service *svc)
{
    if (!svc->basic_cache) {
        svc->basic_cache = calloc(1, sizeof *svc->basic_cache);
        if (svc->basic_cache)
            randombytes_buf(svc->basic_cache->secret, sizeof svc->basic_cache->secret);
    }
    return svc->basic_cache;
}

static void pair_key(const auth_basic_cache *c, const char *user, const char *password,
                     unsigned char out[crypto_generichash_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, c->secret, sizeof c->secret, crypto_generichash_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)user, strlen(user) + 1);
    crypto_generichash_update(&st, (const unsigned char *)password, strlen(password));
    crypto_generichash_final(&st, out, crypto_generichash_BYTES);
}

static void hash_of_pwhash(const char *pwhash, unsigned char out[crypto_generichash_BYTES])
{
    crypto_generichash(out, crypto_generichash_BYTES, (const unsigned char *)pwhash,
                       strlen(pwhash), NULL, 0);
}

/* The live entry for `key`, or NULL. Service lock held. */
static basic_entry *cache_find(auth_basic_cache *c, const unsigned char *key, int64_t now_ms)
{
    for (int i = 0; i < CACHE_SLOTS; i++) {
        basic_entry *e = &c->slots[i];
        if (e->expires_ms > now_ms && sodium_memcmp(e->key, key, sizeof e->key) == 0)
            return e;
    }
    return NULL;
}

/* A free, expired or least recently used slot. Service lock held. */
static basic_entry *cache_victim(auth_basic_cache *c, int64_t now_ms)
{
    basic_entry *victim = &c->slots[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        basic_entry *e = &c->slots[i];
        if (e->expires_ms <= now_ms)
            return e;
        if (e->used_ms < victim->used_ms)
            victim = e;
    }
    return victim;
}

/* The stored name, hash and role of user `id`: 1 when found. */
static int read_user(auth_service *svc, int64_t id, char *name, char *pwhash, char *role)
{
    store_user u;
    loom_error *e = store_user_by_id(svc->st, id, &u);
    if (e) {
        loom_err_free(e);
        return 0;
    }
    memcpy(name, u.name, AUTH_NAME_MAX);
    memcpy(pwhash, u.pwhash, crypto_pwhash_STRBYTES);
    memcpy(role, u.role, AUTH_ROLE_MAX);
    sodium_memzero(u.pwhash, sizeof u.pwhash);
    return 1;
}

static void fill_identity(auth_identity *who, int64_t id, const char *name, const char *role,
                          int64_t exp)
{
    if (!who)
        return;
    who->user_id = id;
    snprintf(who->user, sizeof who->user, "%s", name);
    snprintf(who->role, sizeof who->role, "%s", role);
    who->expires_at_ms = exp;
    snprintf(who->scope, sizeof who->scope, "%s", AUTH_SCOPE_ALL);
}

/* A cached verification still good: 1 (who filled), 0 (verify afresh). */
static int cached_pass(auth_service *svc, const unsigned char *key, int64_t now_ms,
                       auth_identity *who)
{
    char name[AUTH_NAME_MAX], pwhash[crypto_pwhash_STRBYTES], role[AUTH_ROLE_MAX];
    unsigned char now_hash[crypto_generichash_BYTES];
    int ok = 0;
    auth_lock(svc);
    auth_basic_cache *c = cache_of(svc);
    basic_entry *e = c ? cache_find(c, key, now_ms) : NULL;
    if (e) {
        if (read_user(svc, e->user_id, name, pwhash, role)) {
            hash_of_pwhash(pwhash, now_hash);
            ok = sodium_memcmp(now_hash, e->pwhash_hash, sizeof now_hash) == 0;
        }
        if (ok) {
            e->used_ms = now_ms;
            fill_identity(who, e->user_id, name, role, e->expires_ms);
        } else {
            sodium_memzero(e, sizeof *e); /* the password changed, or the user left */
        }
    }
    auth_unlock_read(svc);
    return ok;
}

/* Remembers a pair just verified for user `id`, with the hash it holds now
 * (a rehash on log-on makes the next use verify once more). */
static void cache_remember(auth_service *svc, const unsigned char *key, int64_t id,
                           int64_t now_ms)
{
    char name[AUTH_NAME_MAX], pwhash[crypto_pwhash_STRBYTES], role[AUTH_ROLE_MAX];
    auth_lock(svc);
    auth_basic_cache *c = cache_of(svc);
    if (c && read_user(svc, id, name, pwhash, role)) {
        basic_entry *e = cache_victim(c, now_ms);
        memcpy(e->key, key, sizeof e->key);
        hash_of_pwhash(pwhash, e->pwhash_hash);
        e->user_id = id;
        e->expires_ms = now_ms + AUTH_BASIC_CACHE_TTL_MS;
        e->used_ms = now_ms;
    }
    auth_unlock_read(svc);
    sodium_memzero(pwhash, sizeof pwhash);
}

loom_error *auth_check_basic(auth_service *svc, const char *client_id, const char *user,
                             const char *password, int64_t now_ms, auth_identity *who)
{
    if (!client_id)
        client_id = "";
    if (!user || !password || strnlen(password, AUTH_PASSWORD_MAX_LEN + 1) > AUTH_PASSWORD_MAX_LEN ||
        strnlen(user, AUTH_NAME_MAX) >= AUTH_NAME_MAX)
        return loom_err(LOOM_E_UNAUTHENTICATED, "invalid user name or password");
    unsigned char key[crypto_generichash_BYTES];
    auth_lock(svc);
    auth_basic_cache *c = cache_of(svc);
    if (c)
        pair_key(c, user, password, key);
    auth_unlock_read(svc);
    if (!c)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    /* A client locked out for failures is refused even a pair known good. */
    int64_t locked = auth_retry_after_ms(svc, client_id, now_ms);
    if (locked > 0)
        return loom_err(LOOM_E_RATE_LIMITED,
                        "too many failed log-ons from %.64s: try again in %lld s", client_id,
                        (long long)((locked + 999) / 1000));
    if (cached_pass(svc, key, now_ms, who))
        return NULL;
    auth_identity verified;
    loom_error *e = auth_verify_password(svc, client_id, user, password, now_ms, &verified);
    if (e)
        return e;
    cache_remember(svc, key, verified.user_id, now_ms);
    verified.expires_at_ms = now_ms + AUTH_BASIC_CACHE_TTL_MS;
    if (who)
        *who = verified;
    return NULL;
}
