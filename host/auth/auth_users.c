/* auth/auth_users.c - managing users and their API keys. See auth.h. */
#include "auth/auth_internal.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

/* The store's error with auth's words: `conflict` and `missing` replace
 * the messages of LOOM_E_CONFLICT and LOOM_E_NOT_FOUND (NULL: kept); any
 * other error is prefixed with `doing`. */
static loom_error *in_words(loom_error *e, const char *doing, const char *conflict,
                            const char *missing)
{
    if (!e)
        return NULL;
    int code = loom_err_code(e);
    const char *words = code == LOOM_E_CONFLICT ? conflict : code == LOOM_E_NOT_FOUND ? missing : NULL;
    if (!words)
        return code == LOOM_E_CONFLICT || code == LOOM_E_NOT_FOUND ? e
                                                                   : loom_err_wrap(e, "cannot %s", doing);
    loom_err_free(e);
    return loom_err(code, "%s", words);
}

loom_error *auth_user_add(auth_service *svc, const char *name, const char *password,
                          const char *role)
{
    loom_error *e = auth_check_name("user name", name);
    if (!e)
        e = auth_check_password(password);
    if (!e)
        e = auth_check_role(role);
    store_user u = {.created_at = auth_wall_ms()};
    if (!e)
        e = auth_hash_password(svc, password, u.pwhash);
    if (e)
        return e;
    snprintf(u.name, sizeof u.name, "%s", name);
    snprintf(u.role, sizeof u.role, "%s", role);
    char conflict[128];
    snprintf(conflict, sizeof conflict, "user '%s' already exists", name);
    auth_lock(svc);
    e = in_words(store_user_insert(svc->st, &u), "store the user", conflict, NULL);
    auth_unlock(svc);
    sodium_memzero(u.pwhash, sizeof u.pwhash);
    if (!e)
        log_info("auth: added user '%s' (role %s)", name, role);
    return e;
}

static void missing_user(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "user '%s' does not exist", name);
}

/* The removal in a transaction, so that the last-admin check and the
 * delete see the same table even with another process writing. Lock held. */
static loom_error *remove_locked(auth_service *svc, const char *name)
{
    loom_error *e = store_txn_begin(svc->st);
    if (e)
        return loom_err_wrap(e, "cannot remove user '%s'", name);
    char missing[128];
    missing_user(missing, sizeof missing, name);
    store_user u;
    e = in_words(store_user_by_name(svc->st, name, &u), "read the users", NULL, missing);
    sodium_memzero(u.pwhash, sizeof u.pwhash);
    int64_t admins = 0;
    if (!e && strcmp(u.role, "admin") == 0)
        e = store_user_count(svc->st, "admin", &admins);
    if (!e && strcmp(u.role, "admin") == 0 && admins <= 1)
        e = loom_err(LOOM_E_CONFLICT, "user '%s' is the last admin: add another admin first",
                     name);
    if (!e)
        e = in_words(store_user_delete(svc->st, name), "remove the user", NULL, missing);
    return store_txn_end(svc->st, e);
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
    loom_error *e = store_txn_begin(svc->st);
    if (e)
        return loom_err_wrap(e, "cannot change the password of '%s'", name);
    char missing[128];
    missing_user(missing, sizeof missing, name);
    e = in_words(store_user_set_pwhash(svc->st, name, pwhash, NULL), "change the password",
                 NULL, missing);
    /* Whoever had the old password may hold a token or have made a key:
     * both go (the tokens keys issued with them). */
    if (!e)
        e = store_token_delete_user(svc->st, name);
    if (!e && !keep_keys)
        e = store_apikey_delete_user(svc->st, name);
    return store_txn_end(svc->st, e);
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
    sodium_memzero(pwhash, sizeof pwhash);
    if (!e)
        log_info("auth: changed the password of '%s' and revoked its tokens%s", name,
                 keep_keys ? "" : " and API keys");
    return e;
}

typedef struct user_lister {
    void (*fn)(const auth_user *user, void *ctx);
    void *ctx;
    size_t n;
} user_lister;

static void list_user(const store_user *u, void *arg)
{
    user_lister *l = arg;
    auth_user out;
    snprintf(out.name, sizeof out.name, "%s", u->name);
    snprintf(out.role, sizeof out.role, "%s", u->role);
    out.created_at_ms = u->created_at;
    if (l->fn)
        l->fn(&out, l->ctx);
    l->n++;
}

loom_error *auth_user_list(auth_service *svc, void (*fn)(const auth_user *user, void *ctx),
                           void *ctx, size_t *count)
{
    user_lister l = {fn, ctx, 0};
    auth_lock(svc);
    loom_error *e = loom_err_wrap(store_user_each(svc->st, list_user, &l), "cannot list users");
    auth_unlock(svc);
    if (count)
        *count = l.n;
    return e;
}

loom_error *auth_user_id(auth_service *svc, const char *name, int64_t *id)
{
    store_user u;
    auth_lock(svc);
    loom_error *e = store_user_by_name(svc->st, name, &u);
    auth_unlock(svc);
    sodium_memzero(u.pwhash, sizeof u.pwhash);
    if (!e)
        *id = u.id;
    else if (loom_err_code(e) == LOOM_E_NOT_FOUND) {
        loom_err_free(e);
        e = loom_err(LOOM_E_NOT_FOUND, "user %s: no such user", name);
    } else
        e = loom_err_wrap(e, "user %s: cannot read the users", name);
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
    store_apikey k = {.created_at = auth_wall_ms()};
    if (auth_new_secret(AUTH_APIKEY_PREFIX, key_out, len, k.hash) != 0)
        return loom_err(LOOM_E_INVALID, "API key: the output buffer needs %d bytes",
                        AUTH_SECRET_MAX);
    snprintf(k.user, sizeof k.user, "%s", user);
    snprintf(k.label, sizeof k.label, "%s", label);
    snprintf(k.scope, sizeof k.scope, "%s", scope);
    char conflict[192], missing[128];
    snprintf(conflict, sizeof conflict, "user '%s' already has an API key labelled '%s'", user,
             label);
    missing_user(missing, sizeof missing, user);
    auth_lock(svc);
    e = in_words(store_apikey_insert(svc->st, &k), "store the API key", conflict, missing);
    auth_unlock(svc);
    if (e)
        sodium_memzero(key_out, len);
    else
        log_info("auth: created API key '%s' (scope %s) for '%s'", label, scope, user);
    return e;
}

static loom_error *revoke_locked(auth_service *svc, const char *user, const char *label)
{
    loom_error *e = store_txn_begin(svc->st);
    if (e)
        return loom_err_wrap(e, "cannot revoke the API key '%s' of '%s'", label, user);
    char missing[192];
    snprintf(missing, sizeof missing, "user '%s' has no API key labelled '%s'", user, label);
    /* Tokens first, while the key's hash can still be looked up. */
    e = store_token_delete_apikey(svc->st, user, label);
    if (!e)
        e = in_words(store_apikey_delete(svc->st, user, label), "revoke the API key", NULL,
                     missing);
    return store_txn_end(svc->st, e);
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

typedef struct key_lister {
    void (*fn)(const auth_apikey *key, void *ctx);
    void *ctx;
    size_t n;
} key_lister;

static void list_key(const store_apikey *k, void *arg)
{
    key_lister *l = arg;
    auth_apikey out;
    snprintf(out.user, sizeof out.user, "%s", k->user);
    snprintf(out.label, sizeof out.label, "%s", k->label);
    out.created_at_ms = k->created_at;
    snprintf(out.scope, sizeof out.scope, "%s", k->scope);
    if (l->fn)
        l->fn(&out, l->ctx);
    l->n++;
}

loom_error *auth_apikey_list(auth_service *svc, const char *user,
                             void (*fn)(const auth_apikey *key, void *ctx), void *ctx,
                             size_t *count)
{
    key_lister l = {fn, ctx, 0};
    auth_lock(svc);
    loom_error *e = loom_err_wrap(store_apikey_each(svc->st, user, list_key, &l),
                                  "cannot list API keys");
    auth_unlock(svc);
    if (count)
        *count = l.n;
    return e;
}
