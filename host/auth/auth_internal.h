/*
 * auth/auth_internal.h - what the auth_*.c files share: the service struct,
 * validation, secret generation and hashing. The rows are the store's
 * (store/store_auth.h). Not for use outside host/auth/.
 */
#ifndef LOOM_AUTH_AUTH_INTERNAL_H
#define LOOM_AUTH_AUTH_INTERNAL_H

#include <pthread.h>
#include <sodium.h>

#include "auth/auth.h"
#include "auth/ratelimit.h"
#include "store/store_auth.h"

/* The store's records hold what auth's buffers do. */
_Static_assert(STORE_USER_NAME_MAX == AUTH_NAME_MAX, "user name sizes differ");
_Static_assert(STORE_USER_ROLE_MAX == AUTH_ROLE_MAX, "role sizes differ");
_Static_assert(STORE_KEY_SCOPE_MAX == AUTH_SCOPE_MAX, "scope sizes differ");
_Static_assert(STORE_PWHASH_MAX == crypto_pwhash_STRBYTES, "password hash sizes differ");
_Static_assert(STORE_SECRET_HASH_BYTES == crypto_generichash_BYTES, "secret hash sizes differ");

/* Stored hashes of tokens and API keys: BLAKE2b-256. */
#define AUTH_SECRET_HASH_BYTES crypto_generichash_BYTES
/* Random bytes in a token or API key. */
#define AUTH_SECRET_RANDOM_BYTES 32
/* Anything longer presented as a token or key cannot be one of ours. */
#define AUTH_SECRET_INPUT_MAX 256

typedef struct auth_basic_cache auth_basic_cache;
void auth_basic_cache_free(auth_basic_cache *cache);

struct auth_service {
    store *st;
    pthread_mutex_t lock; /* the limiters, the Basic cache and every change to auth's rows */
    ratelimit *limiter;         /* failed log-ons per source address */
    ratelimit *account_limiter; /* per account, from addresses it does not know */
    ratelimit *trusted;         /* "account\naddress" pairs that logged on */
    unsigned long long opslimit;
    size_t memlimit;
    int64_t token_ttl_ms;
    int64_t last_purge_ms; /* when expired tokens were last deleted */
    /* A hash of a random password, verified against when the user is
     * unknown so that the answer takes as long as for a wrong password. */
    char dummy_pwhash[crypto_pwhash_STRBYTES];
    /* Basic credentials verified lately (auth_basic.c); made on first use. */
    auth_basic_cache *basic_cache;
    /* Tokens verified lately (auth_logon.c): every request checks one, and
     * the database read behind the service's lock was a seventh of the
     * host's time under an inference load. Every change to auth's tables is
     * made under auth_lock, whose unlock advances `generation`: an entry of
     * an older generation is not used, so a revoked token, a removed user or
     * a changed role take effect on the next request as before. */
    pthread_mutex_t cache_lock;
    uint64_t generation; /* atomic */
    struct auth_token_entry *token_cache; /* AUTH_TOKEN_CACHE_SLOTS */
};

#define AUTH_TOKEN_CACHE_SLOTS 256
typedef struct auth_token_entry {
    unsigned char hash[AUTH_SECRET_HASH_BYTES];
    uint64_t generation; /* 0: empty */
    auth_identity who;
} auth_token_entry;

/* The service's lock; a change of several rows that must be atomic runs
 * as a store transaction inside it (store_txn_begin). */
void auth_lock(auth_service *svc);
void auth_unlock(auth_service *svc);
/* For a section that only read auth's tables (or touched the in-memory
 * caches): the token cache stays valid. Every Basic request takes the lock
 * twice, and advancing the generation there emptied the token cache for
 * every other client. */
void auth_unlock_read(auth_service *svc);

/* Checks a user name or key label: 1-63 of [A-Za-z0-9_.-]. `what` names the
 * field in the message. */
loom_error *auth_check_name(const char *what, const char *name);
loom_error *auth_check_password(const char *password);
loom_error *auth_check_role(const char *role);

/* argon2id string of `password` with the service's limits. Slow: call
 * without the lock. */
loom_error *auth_hash_password(const auth_service *svc, const char *password,
                               char out[crypto_pwhash_STRBYTES]);

/* A new secret "<prefix><base64url of 32 random bytes>" and its hash; -1
 * when `out` is too small. */
int auth_new_secret(const char *prefix, char *out, size_t len,
                    unsigned char hash[AUTH_SECRET_HASH_BYTES]);
void auth_secret_hash(const char *secret,
                      unsigned char hash[AUTH_SECRET_HASH_BYTES]);

/* Stores a new token for user `user_id`; apikey_hash names the key it was issued
 * for (NULL for a password log-on). Called with the lock held. */
loom_error *auth_issue_token(auth_service *svc, int64_t user_id,
                             const unsigned char *apikey_hash, int64_t now_ms, char *token_out,
                             size_t len, int64_t *expires_at_ms);

/* Milliseconds since the epoch, for created_at columns. */
int64_t auth_wall_ms(void);

#endif
