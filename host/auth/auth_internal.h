/*
 * auth/auth_internal.h - what the auth_*.c files share: the service struct,
 * validation, secret generation and hashing, and SQLite helpers. Not for use
 * outside host/auth/.
 */
#ifndef LOOM_AUTH_AUTH_INTERNAL_H
#define LOOM_AUTH_AUTH_INTERNAL_H

#include <pthread.h>
#include <sodium.h>
#include <sqlite3.h>

#include "auth/auth.h"
#include "auth/ratelimit.h"

/* Stored hashes of tokens and API keys: BLAKE2b-256. */
#define AUTH_SECRET_HASH_BYTES crypto_generichash_BYTES
/* Random bytes in a token or API key. */
#define AUTH_SECRET_RANDOM_BYTES 32
/* Anything longer presented as a token or key cannot be one of ours. */
#define AUTH_SECRET_INPUT_MAX 256

struct auth_service {
    sqlite3 *db;
    pthread_mutex_t lock; /* the connection's statements, the limiter */
    ratelimit *limiter;
    unsigned long long opslimit;
    size_t memlimit;
    int64_t token_ttl_ms;
    int64_t last_purge_ms; /* when expired tokens were last deleted */
    /* auth_check_token runs on every request: its statement is prepared
     * once (parsing it each time cost most of the call). */
    sqlite3_stmt *check_token_stmt;
    /* A hash of a random password, verified against when the user is
     * unknown so that the answer takes as long as for a wrong password. */
    char dummy_pwhash[crypto_pwhash_STRBYTES];
};

/* Writes the message to err (when not NULL) and returns rc. */
int auth_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Checks a user name or key label: 1-63 of [A-Za-z0-9_.-]. `what` names the
 * field in the message. */
int auth_check_name(const char *what, const char *name, char *err,
                    size_t errlen);
int auth_check_password(const char *password, char *err, size_t errlen);
int auth_check_role(const char *role, char *err, size_t errlen);

/* argon2id string of `password` with the service's limits. Slow: call
 * without the lock. */
int auth_hash_password(const auth_service *svc, const char *password,
                       char out[crypto_pwhash_STRBYTES], char *err,
                       size_t errlen);

/* A new secret "<prefix><base64url of 32 random bytes>" and its hash. */
int auth_new_secret(const char *prefix, char *out, size_t len,
                    unsigned char hash[AUTH_SECRET_HASH_BYTES]);
void auth_secret_hash(const char *secret,
                      unsigned char hash[AUTH_SECRET_HASH_BYTES]);

/* Stores a new token for `user`; apikey_hash names the key it was issued
 * for (NULL for a password log-on). Called with the lock held. */
int auth_issue_token(auth_service *svc, const char *user,
                     const unsigned char *apikey_hash, int64_t now_ms,
                     char *token_out, size_t len, int64_t *expires_at_ms,
                     char *err, size_t errlen);

/* Milliseconds since the epoch, for created_at columns. */
int64_t auth_wall_ms(void);

/* A prepared statement, or NULL with the reason logged. */
sqlite3_stmt *auth_prepare(auth_service *svc, const char *sql);
/* Runs sql without results (BEGIN, COMMIT, ...); 0 or -1 (logged). */
int auth_exec(auth_service *svc, const char *sql);
void auth_column_text(sqlite3_stmt *st, int col, char *dst, size_t cap);

#endif
