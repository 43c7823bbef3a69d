/*
 * store/store_auth.h - auth's records in the host's database: users (by an
 * immutable id that AUTOINCREMENT never hands out twice), their API keys
 * and the bearer tokens log-ons issue. Secrets are never stored, only
 * their hashes. Keys and tokens go with their user, and so do plan
 * memberships. Names compare ignoring case. What a user, a key or a token
 * may do is auth's to decide; these calls only keep the rows. Errors as in
 * store.h.
 */
#ifndef LOOM_STORE_STORE_AUTH_H
#define LOOM_STORE_STORE_AUTH_H

#include <stdint.h>

#include "store/store.h"

#define STORE_USER_NAME_MAX 64     /* a user name or key label, with its NUL */
#define STORE_USER_ROLE_MAX 8      /* "admin" or "user" */
#define STORE_KEY_SCOPE_MAX 16     /* "all" or "inference" */
#define STORE_PWHASH_MAX 128       /* an argon2id string (crypto_pwhash_STRBYTES) */
#define STORE_SECRET_HASH_BYTES 32 /* a token's or key's hash */

typedef struct store_user {
    int64_t id;
    char name[STORE_USER_NAME_MAX];
    char role[STORE_USER_ROLE_MAX];
    char pwhash[STORE_PWHASH_MAX];
    int64_t created_at; /* unix ms */
} store_user;

/* A token found by its hash, with its user and the scope of the key it
 * was issued for ("all" for a password log-on). */
typedef struct store_token {
    unsigned char hash[STORE_SECRET_HASH_BYTES]; /* as stored: compare in constant time */
    int64_t expires_at;                          /* unix ms */
    int64_t user_id;
    char user[STORE_USER_NAME_MAX];
    char role[STORE_USER_ROLE_MAX];
    char scope[STORE_KEY_SCOPE_MAX];
} store_token;

typedef struct store_apikey {
    unsigned char hash[STORE_SECRET_HASH_BYTES]; /* as stored */
    int64_t user_id;
    char user[STORE_USER_NAME_MAX];
    char label[STORE_USER_NAME_MAX];
    char scope[STORE_KEY_SCOPE_MAX];
    int64_t created_at; /* unix ms */
} store_apikey;

/* ---- users ---- */
/* Adds u (its id is chosen; u->id is ignored). LOOM_E_CONFLICT when the
 * name is taken. */
loom_error *store_user_insert(store *s, const store_user *u);
/* Adds u only when there is no user at all: *inserted 1, else 0. */
loom_error *store_user_insert_first(store *s, const store_user *u, int *inserted);
/* How many users have `role` (NULL: any). */
loom_error *store_user_count(store *s, const char *role, int64_t *count);
/* LOOM_E_NOT_FOUND when there is none. */
loom_error *store_user_by_name(store *s, const char *name, store_user *out);
loom_error *store_user_by_id(store *s, int64_t id, store_user *out);
/* Removes the user with its keys, tokens and plan memberships;
 * LOOM_E_NOT_FOUND when there is none. */
loom_error *store_user_delete(store *s, const char *name);
/* Sets the password hash of `name`; with `if_pwhash`, only while the
 * stored hash is that one. LOOM_E_NOT_FOUND when no row changed. */
loom_error *store_user_set_pwhash(store *s, const char *name, const char *pwhash,
                                  const char *if_pwhash);
/* Every user by name (pwhash left empty). */
loom_error *store_user_each(store *s, void (*fn)(const store_user *, void *), void *ctx);

/* ---- tokens ---- */
/* apikey_hash: the key the token was issued for, NULL for a password. */
loom_error *store_token_insert(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                               int64_t user_id, int64_t expires_at,
                               const unsigned char *apikey_hash);
/* LOOM_E_NOT_FOUND when no token has that hash (expired ones are found). */
loom_error *store_token_find(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                             store_token *out);
/* LOOM_E_NOT_FOUND when there was none. */
loom_error *store_token_delete(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES]);
loom_error *store_token_delete_expired(store *s, int64_t now_ms);
/* Every token of user `name`, and every token issued for `name`'s key
 * `label`. */
loom_error *store_token_delete_user(store *s, const char *name);
loom_error *store_token_delete_apikey(store *s, const char *user, const char *label);

/* ---- API keys ---- */
/* Adds k for the user named k->user. LOOM_E_NOT_FOUND when there is no
 * such user, LOOM_E_CONFLICT when the user has a key of that label. */
loom_error *store_apikey_insert(store *s, const store_apikey *k);
/* LOOM_E_NOT_FOUND when no key has that hash. */
loom_error *store_apikey_find(store *s, const unsigned char hash[STORE_SECRET_HASH_BYTES],
                              store_apikey *out);
/* LOOM_E_NOT_FOUND when `user` has no key `label`. */
loom_error *store_apikey_delete(store *s, const char *user, const char *label);
loom_error *store_apikey_delete_user(store *s, const char *name);
/* The keys of `user` (NULL: everyone's) by user and label. */
loom_error *store_apikey_each(store *s, const char *user,
                              void (*fn)(const store_apikey *, void *), void *ctx);

#endif
