/*
 * auth/auth.h - users, passwords, bearer tokens and API keys.
 *
 * A self-contained service over its own SQLite connection to the host's
 * database (WAL, synchronous=FULL), so a token issued before a restart is
 * still valid after it. Passwords are kept as argon2id strings
 * (crypto_pwhash_str); tokens and API keys are 256-bit random secrets of
 * which only a BLAKE2b hash is stored, so a copy of the database lets nobody
 * log on. Log-on attempts are rate limited per client (peer address).
 *
 * Every function may be called from any thread: one mutex guards the
 * connection and the limiter, and the slow password hashing runs outside it.
 * Strings passed in are borrowed for the call; output buffers are the
 * caller's. Functions that take `err` write a message naming the field and
 * what was expected when they fail (err may be NULL).
 */
#ifndef LOOM_AUTH_AUTH_H
#define LOOM_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Return codes. Negative values are failures; the comment names the HTTP
 * status auth_http_status() maps them to. */
enum {
    AUTH_OK = 0,
    AUTH_EINVAL = -1,       /* 400 malformed name, password, role, header */
    AUTH_EDENIED = -2,      /* 401 wrong credentials; unknown/expired token */
    AUTH_ERATELIMITED = -3, /* 429 too many failed log-ons from this client */
    AUTH_EEXISTS = -4,      /* 409 user or API key label already exists */
    AUTH_ENOTFOUND = -5,    /* 404 no such user, API key or token */
    AUTH_ECONFLICT = -6,    /* 409 refused by a rule: removing the last admin */
    AUTH_EINTERNAL = -7     /* 500 database or library failure */
};

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

typedef struct auth_service auth_service;

/* Zero (or a NULL options pointer) means the default for every field. */
typedef struct auth_options {
    /* argon2id cost; default crypto_pwhash_OPSLIMIT_INTERACTIVE and
     * MEMLIMIT_INTERACTIVE (64 MiB). Tests use the _MIN limits to stay fast. */
    uint64_t pwhash_opslimit;
    size_t pwhash_memlimit;
    int64_t token_ttl_ms;       /* default 8 h */
    int max_failures;           /* default 5 failed log-ons ... */
    int64_t failure_window_ms;  /* ... within 60 s ... */
    int64_t lockout_ms;         /* ... refuse that client for 60 s */
    size_t limiter_capacity;    /* clients tracked at once, LRU; default 4096 */
} auth_options;

typedef struct auth_identity {
    char user[AUTH_NAME_MAX];
    char role[AUTH_ROLE_MAX]; /* "admin" or "user" */
    int64_t expires_at_ms;    /* when the token presented expires */
} auth_identity;

typedef struct auth_user {
    char name[AUTH_NAME_MAX];
    char role[AUTH_ROLE_MAX];
    int64_t created_at_ms;
} auth_user;

typedef struct auth_apikey {
    char user[AUTH_NAME_MAX];
    char label[AUTH_NAME_MAX];
    int64_t created_at_ms;
} auth_apikey;

/* Opens (creating if needed) the database at db_path and its auth tables.
 * Returns NULL with the reason in err. */
auth_service *auth_open(const char *db_path, const auth_options *opt,
                        char *err, size_t errlen);
void auth_close(auth_service *svc);

/* First run: when no user exists, creates "admin" (role admin) with
 * `password`, or with a random password written to `generated` (at least
 * AUTH_PASSWORD_GEN_MAX bytes) for the host to print once. Returns 1 when the
 * admin was created, 0 when users already existed (generated is then ""), or
 * a negative AUTH_E* code. */
int auth_bootstrap_admin(auth_service *svc, const char *password_or_null,
                         char *generated, size_t len, char *err, size_t errlen);

/* A readable random password into `out` (at least AUTH_PASSWORD_GEN_MAX
 * bytes): AUTH_OK, or AUTH_EINVAL when `out` is too small. */
int auth_generate_password(char *out, size_t len);

/* Reads an admin password from the first line of `path` (the
 * --admin-password-file option) without its line ending. */
int auth_read_password_file(const char *path, char *password, size_t len,
                            char *err, size_t errlen);

/* ---- users: names are 1-63 of [A-Za-z0-9_.-], unique ignoring case ---- */
int auth_user_add(auth_service *svc, const char *name, const char *password,
                  const char *role, char *err, size_t errlen);
/* Removes the user with its API keys and tokens; the last admin stays. */
int auth_user_remove(auth_service *svc, const char *name, char *err,
                     size_t errlen);
/* Sets a new password and revokes the user's tokens (API keys stay). */
int auth_user_passwd(auth_service *svc, const char *name, const char *password,
                     char *err, size_t errlen);
/* Calls fn for every user by name; returns the count or AUTH_EINTERNAL. */
int auth_user_list(auth_service *svc,
                   void (*fn)(const auth_user *user, void *ctx), void *ctx);

/* The user's row id (what the host maps a job's OS account from):
 * AUTH_OK, AUTH_ENOTFOUND or AUTH_EINTERNAL. */
int auth_user_id(auth_service *svc, const char *name, int64_t *id);

/* ---- API keys: shown once, stored hashed, named by a per-user label ---- */
/* Writes the new key to key_out (at least AUTH_SECRET_MAX bytes). */
int auth_apikey_create(auth_service *svc, const char *user, const char *label,
                       char *key_out, size_t len, char *err, size_t errlen);
/* Deletes the key and revokes the tokens it issued. */
int auth_apikey_revoke(auth_service *svc, const char *user, const char *label,
                       char *err, size_t errlen);
/* Calls fn for each key of `user` (all users when NULL); returns the count. */
int auth_apikey_list(auth_service *svc, const char *user,
                     void (*fn)(const auth_apikey *key, void *ctx), void *ctx);

/* ---- log-on: issue a bearer token valid for the configured TTL ----
 * client_id names the client for the rate limit (e.g. the peer address).
 * token_out needs AUTH_SECRET_MAX bytes. Returns AUTH_OK, AUTH_EDENIED (the
 * same for an unknown user and a wrong password), AUTH_ERATELIMITED, ... */
int auth_logon_password(auth_service *svc, const char *client_id,
                        const char *user, const char *password, int64_t now_ms,
                        char *token_out, size_t len, int64_t *expires_at_ms,
                        char *err, size_t errlen);
int auth_logon_apikey(auth_service *svc, const char *client_id,
                      const char *apikey, int64_t now_ms, char *token_out,
                      size_t len, int64_t *expires_at_ms, char *err,
                      size_t errlen);
/* How long `client_id` must still wait before it may log on again (0: now);
 * for the HTTP layer's Retry-After. */
int64_t auth_retry_after_ms(auth_service *svc, const char *client_id,
                            int64_t now_ms);

/* Checks a bearer token: AUTH_OK and fills *who, or AUTH_EDENIED for an
 * unknown, expired or revoked token or one whose user was removed. The role
 * is read now, so a role change takes effect on the next request. */
int auth_check_token(auth_service *svc, const char *token, int64_t now_ms,
                     auth_identity *who);
/* Revokes a token: AUTH_OK, or AUTH_ENOTFOUND when it was not valid. */
int auth_logout(auth_service *svc, const char *token);

/* ---- Authorization headers ----
 * "Basic base64(user:password)" (RFC 7617) and "Bearer token" (RFC 6750);
 * the scheme is matched ignoring case. AUTH_OK, or AUTH_EINVAL for a
 * malformed header or an output buffer too small. */
int auth_parse_basic(const char *authorization_header, char *user,
                     size_t user_len, char *password, size_t password_len);
int auth_parse_bearer(const char *authorization_header, char *token,
                      size_t len);

/* The HTTP status for a return code (200 for AUTH_OK). */
int auth_http_status(int rc);

#endif
