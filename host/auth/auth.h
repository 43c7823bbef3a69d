/*
 * auth/auth.h - users, passwords, bearer tokens and API keys.
 *
 * Its rows live in the host's database, through the store's typed calls
 * (store/store_auth.h; WAL, synchronous=FULL), so a token issued before a restart is
 * still valid after it. Passwords are kept as argon2id strings
 * (crypto_pwhash_str); tokens and API keys are 256-bit random secrets of
 * which only a BLAKE2b hash is stored, so a copy of the database lets nobody
 * log on. Failed log-ons are limited per source address and per account
 * (see "the log-on limiter" below).
 *
 * It takes credentials (user and password, token, key) as strings: reading
 * them from a request is the HTTP transport's work (http/credentials.h).
 *
 * Every function may be called from any thread: one mutex guards auth's
 * changes and the limiter, and the slow password hashing runs outside it.
 * Strings passed in are borrowed for the call; output buffers are the
 * caller's. Failures are loom_errors whose message names the field and what
 * was expected: LOOM_E_INVALID (malformed name, password, role),
 * LOOM_E_UNAUTHENTICATED (wrong credentials; unknown or expired token: the
 * same for an unknown user and a wrong password), LOOM_E_RATE_LIMITED (too
 * many failed log-ons from this address, or on this account from addresses
 * it does not know), LOOM_E_CONFLICT (user or key label
 * taken; removing the last admin), LOOM_E_NOT_FOUND (no such user, key or
 * token), LOOM_E_INTERNAL (database or library failure).
 */
#ifndef LOOM_AUTH_AUTH_H
#define LOOM_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/error.h"

/* Buffer sizes: a user name or label fits AUTH_NAME_MAX (63 chars + NUL); a
 * token or API key fits AUTH_SECRET_MAX; a generated password fits
 * AUTH_PASSWORD_GEN_MAX. Passwords are 8..AUTH_PASSWORD_MAX_LEN bytes. */
#define AUTH_NAME_MAX 64
#define AUTH_ROLE_MAX 8
#define AUTH_SECRET_MAX 64
#define AUTH_PASSWORD_GEN_MAX 32
#define AUTH_PASSWORD_MIN_LEN 8
#define AUTH_PASSWORD_MAX_LEN 1024

/* Prefixes of the secrets handed out, so a leaked one is recognisable (and
 * found by secret scanners) and a key is never mistaken for a token. */
#define AUTH_TOKEN_PREFIX "loomt_"
#define AUTH_APIKEY_PREFIX "loomk_"

/* What an API key, and every token it issues, may do: all its user may
 * ("all"), or only call inference on its user's models ("inference"; the
 * HTTP layer refuses every other route with 403 naming the scope). */
#define AUTH_SCOPE_ALL "all"
#define AUTH_SCOPE_INFERENCE "inference"
#define AUTH_SCOPE_MAX 16

typedef struct auth_service auth_service;

/* Zero (or a NULL options pointer) means the default for every field. */
typedef struct auth_options {
    /* argon2id cost; default crypto_pwhash_OPSLIMIT_INTERACTIVE and
     * MEMLIMIT_INTERACTIVE (64 MiB). Tests use the _MIN limits to stay fast. */
    uint64_t pwhash_opslimit;
    size_t pwhash_memlimit;
    int64_t token_ttl_ms;       /* default 8 h */
    int max_failures;           /* default 5 failed log-ons from one address ... */
    int64_t failure_window_ms;  /* ... within 60 s ... */
    int64_t lockout_ms;         /* ... refuse that address for 60 s */
    int account_max_failures;   /* default 20 failed log-ons on one account ... */
    int64_t account_window_ms;  /* ... within 10 min: refuse it to new addresses */
    int64_t lockout_max_ms;     /* lockouts in a row double up to this; 15 min */
    size_t limiter_capacity;    /* addresses (and accounts) tracked, LRU; 4096 */
} auth_options;

typedef struct auth_identity {
    int64_t user_id;          /* immutable: never given to another user */
    char user[AUTH_NAME_MAX];
    char role[AUTH_ROLE_MAX]; /* "admin" or "user" */
    int64_t expires_at_ms;    /* when the token presented expires */
    char scope[AUTH_SCOPE_MAX]; /* AUTH_SCOPE_ALL, or the scope of the API key
                                   that issued the token */
} auth_identity;

typedef struct auth_user {
    char name[AUTH_NAME_MAX];
    char role[AUTH_ROLE_MAX];
    int64_t created_at_ms;
} auth_user;

typedef struct auth_apikey {
    char user[AUTH_NAME_MAX];
    char label[AUTH_NAME_MAX];
    char scope[AUTH_SCOPE_MAX];
    int64_t created_at_ms;
} auth_apikey;

/* The auth service over the store's tables (store_open made them). Close
 * it before the store. */
loom_error *auth_open(store *st, const auth_options *opt, auth_service **out);
void auth_close(auth_service *svc);

/* First run: when no user exists, creates "admin" (role admin) with
 * `password`, or with a random password written to `generated` (at least
 * AUTH_PASSWORD_GEN_MAX bytes) for the host to print once. *created (may be
 * NULL) is 1 when the admin was created, 0 when users already existed
 * (generated is then ""). */
loom_error *auth_bootstrap_admin(auth_service *svc, const char *password_or_null,
                                 char *generated, size_t len, int *created);

/* A readable random password into `out` (at least AUTH_PASSWORD_GEN_MAX
 * bytes); LOOM_E_INVALID when `out` is too small. */
loom_error *auth_generate_password(char *out, size_t len);

/* Reads an admin password from the first line of `path` (the
 * --admin-password-file option) without its line ending. */
loom_error *auth_read_password_file(const char *path, char *password, size_t len);

/* ---- users: names are 1-63 of [A-Za-z0-9_.-], unique ignoring case ---- */
loom_error *auth_user_add(auth_service *svc, const char *name, const char *password,
                          const char *role);
/* Removes the user with its API keys and tokens; the last admin stays. */
loom_error *auth_user_remove(auth_service *svc, const char *name);
/* Sets a new password and revokes the user's tokens and, unless keep_keys,
 * API keys (with the tokens they issued): whoever had the old password may
 * have made either. */
loom_error *auth_user_passwd(auth_service *svc, const char *name, const char *password,
                             int keep_keys);
/* Calls fn (may be NULL) for every user by name; *count (may be NULL) gets
 * how many there are. */
loom_error *auth_user_list(auth_service *svc, void (*fn)(const auth_user *user, void *ctx),
                           void *ctx, size_t *count);

/* The user's immutable id (what records are keyed by, and what the host
 * maps a job's OS account from; ids start at 1 and are never reused), or
 * LOOM_E_NOT_FOUND. */
loom_error *auth_user_id(auth_service *svc, const char *name, int64_t *id);

/* ---- API keys: shown once, stored hashed, named by a per-user label ---- */
/* Writes the new key to key_out (at least AUTH_SECRET_MAX bytes); its scope
 * is AUTH_SCOPE_ALL. */
loom_error *auth_apikey_create(auth_service *svc, const char *user, const char *label,
                               char *key_out, size_t len);
/* The same with a scope: AUTH_SCOPE_ALL or AUTH_SCOPE_INFERENCE (anything
 * else is LOOM_E_INVALID naming the field). */
loom_error *auth_apikey_create_scoped(auth_service *svc, const char *user, const char *label,
                                      const char *scope, char *key_out, size_t len);
/* LOOM_E_INVALID unless `scope` is one of the scopes above. */
loom_error *auth_check_scope(const char *scope);
/* Deletes the key and revokes the tokens it issued. */
loom_error *auth_apikey_revoke(auth_service *svc, const char *user, const char *label);
/* Calls fn (may be NULL) for each key of `user` (all users when NULL);
 * *count (may be NULL) gets how many there are. */
loom_error *auth_apikey_list(auth_service *svc, const char *user,
                             void (*fn)(const auth_apikey *key, void *ctx), void *ctx,
                             size_t *count);

/* ---- the log-on limiter ----
 * Two limits, both with backoff:
 * - per source address: max_failures failed log-ons (any account, API keys
 *   included) within failure_window_ms refuse that address for lockout_ms;
 * - per account: account_max_failures failed password log-ons on one
 *   account within account_window_ms refuse that account for lockout_ms to
 *   every address that has not logged on to it before, so rotating
 *   addresses does not multiply an attacker's guesses.
 * Each lockout that follows another doubles, up to lockout_max_ms. An
 * address that has logged on to an account before (since the host started)
 * is held back only by its own failures; one client's failures never lock
 * another address out, and the right password from an address with no
 * failures logs on unless that account is under attack from addresses it
 * does not know. */

/* ---- log-on: issue a bearer token valid for the configured TTL ----
 * client_id names the client for the rate limit (e.g. the peer address).
 * token_out needs AUTH_SECRET_MAX bytes. LOOM_E_UNAUTHENTICATED is the same
 * for an unknown user and a wrong password. */
loom_error *auth_logon_password(auth_service *svc, const char *client_id, const char *user,
                                const char *password, int64_t now_ms, char *token_out,
                                size_t len, int64_t *expires_at_ms);
/* The password check alone, through the same limits, without a token (for
 * credentials sent with each request): fills *who (may be NULL; its
 * expires_at_ms is 0). */
loom_error *auth_verify_password(auth_service *svc, const char *client_id, const char *user,
                                 const char *password, int64_t now_ms, auth_identity *who);
loom_error *auth_logon_apikey(auth_service *svc, const char *client_id, const char *apikey,
                              int64_t now_ms, char *token_out, size_t len,
                              int64_t *expires_at_ms);
/* How long address `client_id` must still wait before it may log on again
 * (0: now); for the HTTP layer's Retry-After. */
int64_t auth_retry_after_ms(auth_service *svc, const char *client_id,
                            int64_t now_ms);

/* Checks a bearer token and fills *who (may be NULL), or
 * LOOM_E_UNAUTHENTICATED for an unknown, expired or revoked token or one
 * whose user was removed. The role is read now, so a role change takes
 * effect on the next request. */
loom_error *auth_check_token(auth_service *svc, const char *token, int64_t now_ms,
                             auth_identity *who);
/* HTTP Basic credentials presented on a request (not a log-on: no token
 * is issued). Checked against the stored argon2id hash; a verified pair is
 * remembered for AUTH_BASIC_CACHE_TTL_MS so a client sending them on every
 * call does not pay a hash each time. The cache is keyed by a keyed
 * BLAKE2b hash (it holds no password), and an entry is dropped as soon as
 * the user's password changes or the user is removed. Verifications that
 * miss the cache go through the log-on limiter: a wrong pair counts as a
 * failed log-on of `client_id` and is LOOM_E_RATE_LIMITED when that client
 * must wait. who->expires_at_ms is when the cached verification lapses. */
#define AUTH_BASIC_CACHE_TTL_MS 60000
loom_error *auth_check_basic(auth_service *svc, const char *client_id, const char *user,
                             const char *password, int64_t now_ms, auth_identity *who);

/* Revokes a token, or LOOM_E_NOT_FOUND when it was not valid. */
loom_error *auth_logout(auth_service *svc, const char *token);

#endif
