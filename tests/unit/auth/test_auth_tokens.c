/*
 * tests/unit/auth/test_auth_tokens.c - bearer tokens (issue, check, expiry,
 * logout, surviving a restart, revocation with their user or password) and
 * API keys (create, log on, revoke); concurrent callers.
 */
#include <pthread.h>
#include <sqlite3.h>

#include "../../check.h"
#include "auth_test_util.h"

#define NOW 1700000000000LL
#define HOUR_MS (3600LL * 1000)

static int logon(auth_service *svc, const char *user, const char *password,
                 int64_t now, char token[AUTH_SECRET_MAX], int64_t *expires)
{
    char err[256] = "";
    return TAKE(
        auth_logon_password(svc, "10.0.0.1", user, password, now, token, AUTH_SECRET_MAX, expires));
}

static int count_rows(const char *path, const char *table)
{
    sqlite3 *db = NULL;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static auth_service *setup(test_db *t, const auth_options *o)
{
    test_db_make(t);
    auth_service *svc = test_open(t, o);
    char err[256];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "user")) == LOOM_OK);
    return svc;
}

static void test_issue_check_expire_logout(void)
{
    test_db t;
    auth_options o = test_fast_options();
    o.token_ttl_ms = 5000;
    auth_service *svc = setup(&t, &o);
    char token[AUTH_SECRET_MAX], err[256] = "";
    int64_t expires = 0;
    auth_identity who;

    /* Wrong password, unknown user: the same refusal, nothing issued. */
    CHECK(logon(svc, "alice", "wrong-password", NOW, token, &expires) == LOOM_E_UNAUTHENTICATED);
    CHECK_STR_EQ(token, "");
    CHECK(TAKE(auth_logon_password(svc, "c", "nobody", "alice-pass-1", NOW, token, sizeof token,
                                   &expires)) == LOOM_E_UNAUTHENTICATED);
    CHECK_STR_EQ(err, "invalid user name or password");

    CHECK(logon(svc, "alice", "alice-pass-1", NOW, token, &expires) == LOOM_OK);
    CHECK(strncmp(token, AUTH_TOKEN_PREFIX, strlen(AUTH_TOKEN_PREFIX)) == 0);
    CHECK(strlen(token) >= 6 + 43); /* 32 random bytes, base64url */
    CHECK(expires == NOW + 5000);
    memset(&who, 0, sizeof who);
    CHECK(CODE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice");
    CHECK_STR_EQ(who.role, "user");
    CHECK(who.expires_at_ms == NOW + 5000);
    CHECK(CODE(auth_check_token(svc, token, NOW + 4999, &who)) == LOOM_OK);

    /* A second log-on gets a different token; both are valid. */
    char token2[AUTH_SECRET_MAX];
    CHECK(logon(svc, "Alice", "alice-pass-1", NOW + 1000, token2, &expires) == LOOM_OK);
    CHECK(strcmp(token, token2) != 0);
    CHECK(CODE(auth_check_token(svc, token2, NOW + 1000, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice"); /* the stored spelling */

    /* Expiry: refused at the deadline, and the row is gone (lazy purge). */
    CHECK(count_rows(t.path, "tokens") == 2);
    CHECK(CODE(auth_check_token(svc, token, NOW + 5000, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(count_rows(t.path, "tokens") == 1);
    CHECK(CODE(auth_check_token(svc, token, NOW, &who)) == LOOM_E_UNAUTHENTICATED);

    /* Logout revokes; a second logout finds nothing. */
    CHECK(CODE(auth_logout(svc, token2)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, token2, NOW + 1000, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_logout(svc, token2)) == LOOM_E_NOT_FOUND);

    /* Garbage is refused, not crashed on. */
    char huge[1000];
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    CHECK(CODE(auth_check_token(svc, NULL, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, "", NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, "loomt_nope", NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, huge, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_logout(svc, NULL)) == LOOM_E_NOT_FOUND);

    /* Expired tokens nobody presents go at a later log-on. */
    char t3[AUTH_SECRET_MAX], t4[AUTH_SECRET_MAX];
    CHECK(logon(svc, "admin", "admin-pass-1", NOW + 10000, t3, &expires) == LOOM_OK);
    CHECK(logon(svc, "admin", "admin-pass-1", NOW + 10000, t4, &expires) == LOOM_OK);
    CHECK(count_rows(t.path, "tokens") == 2);
    CHECK(logon(svc, "admin", "admin-pass-1", NOW + 10 * 60000, t4, &expires) == LOOM_OK);
    CHECK(count_rows(t.path, "tokens") == 1);
    CHECK(CODE(auth_check_token(svc, t4, NOW + 10 * 60000, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.role, "admin");

    test_close(svc);
    test_db_remove(&t);
}

static void test_default_ttl_and_restart(void)
{
    test_db t;
    auth_options o = test_fast_options();
    auth_service *svc = setup(&t, &o);
    char token[AUTH_SECRET_MAX];
    int64_t expires = 0;
    CHECK(logon(svc, "admin", "admin-pass-1", NOW, token, &expires) == LOOM_OK);
    CHECK(expires == NOW + 8 * HOUR_MS);
    test_close(svc);

    /* A restarted host still honours the token, and the users are there. */
    svc = test_open(&t, &o);
    auth_identity who;
    CHECK(CODE(auth_check_token(svc, token, NOW + 7 * HOUR_MS, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "admin");
    CHECK_STR_EQ(who.role, "admin");
    CHECK(CODE(auth_check_token(svc, token, NOW + 8 * HOUR_MS, &who)) == LOOM_E_UNAUTHENTICATED);
    char generated[AUTH_PASSWORD_GEN_MAX], err[256];
    CHECK(test_bootstrap(svc, NULL, generated, sizeof generated, err, sizeof err) == 0);
    test_close(svc);
    test_db_remove(&t);
}

static void test_revoked_with_user_and_password(void)
{
    test_db t;
    auth_options o = test_fast_options();
    auth_service *svc = setup(&t, &o);
    char err[256], a1[AUTH_SECRET_MAX], a2[AUTH_SECRET_MAX], adm[AUTH_SECRET_MAX];
    auth_identity who;
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, a1, NULL) == LOOM_OK);
    CHECK(logon(svc, "admin", "admin-pass-1", NOW, adm, NULL) == LOOM_OK);

    /* A new password revokes the user's tokens and API keys (and the
     * tokens those issued), not anyone else's. */
    char key[AUTH_SECRET_MAX], admkey[AUTH_SECRET_MAX], kt[AUTH_SECRET_MAX];
    CHECK(TAKE(auth_apikey_create(svc, "alice", "laptop", key, sizeof key)) == LOOM_OK);
    CHECK(TAKE(auth_apikey_create(svc, "admin", "ci", admkey, sizeof admkey)) == LOOM_OK);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, kt, sizeof kt, NULL)) == LOOM_OK);
    CHECK(TAKE(auth_user_passwd(svc, "alice", "alice-pass-2", 0)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, a1, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, kt, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, kt, sizeof kt, NULL)) ==
          LOOM_E_UNAUTHENTICATED);
    CHECK(test_apikey_list(svc, "alice", NULL, NULL) == 0);
    CHECK(CODE(auth_check_token(svc, adm, NOW, &who)) == LOOM_OK);
    CHECK(test_apikey_list(svc, "admin", NULL, NULL) == 1);

    /* Asked to keep them, the keys stay and still log on; tokens go. */
    CHECK(TAKE(auth_apikey_create(svc, "alice", "laptop", key, sizeof key)) == LOOM_OK);
    CHECK(logon(svc, "alice", "alice-pass-2", NOW, a1, NULL) == LOOM_OK);
    CHECK(TAKE(auth_user_passwd(svc, "alice", "alice-pass-2b", 1)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, a1, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, kt, sizeof kt, NULL)) == LOOM_OK);
    CHECK(TAKE(auth_user_passwd(svc, "alice", "alice-pass-2", 1)) == LOOM_OK);

    /* Removing the user revokes the rest. */
    CHECK(logon(svc, "alice", "alice-pass-2", NOW, a2, NULL) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, a2, NOW, &who)) == LOOM_OK);
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, a2, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, adm, NOW, &who)) == LOOM_OK);
    CHECK(count_rows(t.path, "tokens") == 1);

    /* A user of the same name added later does not inherit anything. */
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-3", "user")) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, a2, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    test_close(svc);
    test_db_remove(&t);
}

typedef struct key_list {
    int n;
    char labels[4][AUTH_NAME_MAX];
} key_list;

static void collect_key(const auth_apikey *k, void *ctx)
{
    key_list *l = ctx;
    if (l->n < 4)
        snprintf(l->labels[l->n], AUTH_NAME_MAX, "%s/%s", k->user, k->label);
    l->n++;
}

static void test_apikeys(void)
{
    test_db t;
    auth_options o = test_fast_options();
    auth_service *svc = setup(&t, &o);
    char err[256] = "", key[AUTH_SECRET_MAX], key2[AUTH_SECRET_MAX];
    char token[AUTH_SECRET_MAX], pw_token[AUTH_SECRET_MAX];
    int64_t expires = 0;
    auth_identity who;

    CHECK(TAKE(auth_apikey_create(svc, "alice", "ci", key, sizeof key)) == LOOM_OK);
    CHECK(strncmp(key, AUTH_APIKEY_PREFIX, strlen(AUTH_APIKEY_PREFIX)) == 0);
    CHECK(strlen(key) >= 6 + 43);
    CHECK(TAKE(auth_apikey_create(svc, "alice", "laptop", key2, sizeof key2)) == LOOM_OK);
    CHECK(strcmp(key, key2) != 0);
    CHECK(TAKE(auth_apikey_create(svc, "alice", "ci", key2, sizeof key2)) == LOOM_E_CONFLICT);
    CHECK_STR_EQ(err, "user 'alice' already has an API key labelled 'ci'");
    CHECK(TAKE(auth_apikey_create(svc, "nobody", "ci", key2, sizeof key2)) == LOOM_E_NOT_FOUND);
    CHECK_STR_EQ(err, "user 'nobody' does not exist");
    CHECK(TAKE(auth_apikey_create(svc, "alice", "bad label", key2, sizeof key2)) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "API key label");
    char small[16];
    CHECK(TAKE(auth_apikey_create(svc, "alice", "x", small, sizeof small)) == LOOM_E_INVALID);

    key_list l = {0};
    CHECK(test_apikey_list(svc, "alice", collect_key, &l) == 2);
    CHECK_STR_EQ(l.labels[0], "alice/ci");
    CHECK_STR_EQ(l.labels[1], "alice/laptop");
    CHECK(test_apikey_list(svc, "admin", NULL, NULL) == 0);
    CHECK(test_apikey_list(svc, NULL, NULL, NULL) == 2);

    /* Log on with the key; the token names its user. */
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.2", key, NOW, token, sizeof token, &expires)) ==
          LOOM_OK);
    CHECK(expires == NOW + 8 * HOUR_MS);
    CHECK(CODE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice");
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, pw_token, NULL) == LOOM_OK);

    /* Neither a key nor a token passes for the other. */
    CHECK(CODE(auth_check_token(svc, key, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.2", token, NOW, key2, sizeof key2, NULL)) ==
          LOOM_E_UNAUTHENTICATED);
    CHECK_STR_EQ(err, "invalid API key");
    char altered[AUTH_SECRET_MAX];
    snprintf(altered, sizeof altered, "%s", key);
    altered[10] = altered[10] == 'A' ? 'B' : 'A';
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.2", altered, NOW, key2, sizeof key2, NULL)) ==
          LOOM_E_UNAUTHENTICATED);

    /* Keys survive a restart. */
    test_close(svc);
    svc = test_open(&t, &o);
    char token_after[AUTH_SECRET_MAX];
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.3", key, NOW, token_after, sizeof token_after,
                                 NULL)) == LOOM_OK);

    /* Revoking the key refuses it and the tokens it issued, not the
     * password's token. */
    CHECK(TAKE(auth_apikey_revoke(svc, "alice", "ci")) == LOOM_OK);
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.3", key, NOW, token, sizeof token, NULL)) ==
          LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, token_after, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(CODE(auth_check_token(svc, pw_token, NOW, &who)) == LOOM_OK);
    CHECK(TAKE(auth_apikey_revoke(svc, "alice", "ci")) == LOOM_E_NOT_FOUND);
    CHECK_STR_EQ(err, "user 'alice' has no API key labelled 'ci'");
    CHECK(test_apikey_list(svc, NULL, NULL, NULL) == 1);

    /* Removing the user takes the remaining key with it. */
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(count_rows(t.path, "api_keys") == 0);
    test_close(svc);
    test_db_remove(&t);
}

typedef struct worker_arg {
    auth_service *svc;
    int index;
    int ok;
} worker_arg;

static void *logon_worker(void *p)
{
    worker_arg *a = p;
    char client[32], token[AUTH_SECRET_MAX], err[256];
    snprintf(client, sizeof client, "10.1.0.%d", a->index);
    for (int i = 0; i < 10; i++) {
        auth_identity who;
        if (TAKE(auth_logon_password(a->svc, client, "alice", "alice-pass-1", NOW, token,
                                     sizeof token, NULL)) == LOOM_OK &&
            CODE(auth_check_token(a->svc, token, NOW, &who)) == LOOM_OK &&
            strcmp(who.user, "alice") == 0 && CODE(auth_logout(a->svc, token)) == LOOM_OK)
            a->ok++;
    }
    return NULL;
}

static void test_concurrent_callers(void)
{
    test_db t;
    auth_options o = test_fast_options();
    auth_service *svc = setup(&t, &o);
    pthread_t th[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){svc, i, 0};
        pthread_create(&th[i], NULL, logon_worker, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(args[i].ok == 10, "worker %d: %d of 10", i, args[i].ok);
    }
    CHECK(count_rows(t.path, "tokens") == 0);
    test_close(svc);
    test_db_remove(&t);
}

/* A token checked a moment ago (so kept by the check's cache) is still
 * refused at once when it is revoked, its key revoked, or it expires; a
 * changed role is seen at once. */
static void test_checked_then_revoked(void)
{
    test_db t;
    auth_options o = test_fast_options();
    o.token_ttl_ms = 5000;
    auth_service *svc = setup(&t, &o);
    char err[256], tok[AUTH_SECRET_MAX], key[AUTH_SECRET_MAX], kt[AUTH_SECRET_MAX];
    auth_identity who;
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, tok, NULL) == LOOM_OK);
    for (int i = 0; i < 3; i++)
        CHECK(CODE(auth_check_token(svc, tok, NOW + i, &who)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW + 5000, &who)) == LOOM_E_UNAUTHENTICATED);
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, tok, NULL) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, NULL)) == LOOM_OK);
    CHECK(CODE(auth_logout(svc, tok)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_E_UNAUTHENTICATED);

    CHECK(TAKE(auth_apikey_create(svc, "alice", "ci", key, sizeof key)) == LOOM_OK);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, kt, sizeof kt, NULL)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, kt, NOW, &who)) == LOOM_OK);
    CHECK(TAKE(auth_apikey_revoke(svc, "alice", "ci")) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, kt, NOW, &who)) == LOOM_E_UNAUTHENTICATED);

    /* a role changed under a checked token: alice, removed and added again
     * as an administrator, is someone else; her old token is refused */
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, tok, NULL) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.role, "user");
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "admin")) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    test_close(svc);
    test_db_remove(&t);
}

/* Basic log-ons (every request of a Basic client) only read auth's tables:
 * they leave other clients' checked tokens in the cache. Shown by a token
 * row deleted behind auth's back (not an auth change, so the cache may
 * still answer for it until auth's tables change). */
static void test_basic_keeps_token_cache(void)
{
    test_db t;
    auth_options o = test_fast_options();
    auth_service *svc = setup(&t, &o);
    char err[256], tok[AUTH_SECRET_MAX];
    auth_identity who;
    CHECK(logon(svc, "alice", "alice-pass-1", NOW, tok, NULL) == LOOM_OK);
    /* the first Basic log-on verifies the password (and records it) */
    CHECK(CODE(auth_check_basic(svc, "10.0.0.9", "admin", "admin-pass-1", NOW, &who)) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_OK);
    for (int i = 0; i < 2; i++) /* the next ones come from the Basic cache */
        CHECK(CODE(auth_check_basic(svc, "10.0.0.9", "admin", "admin-pass-1", NOW, &who)) == LOOM_OK);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(t.path, &db) == SQLITE_OK &&
          sqlite3_exec(db, "DELETE FROM tokens", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice");
    /* an auth change empties the cache: the deleted row is then missed */
    CHECK(TAKE(auth_user_add(svc, "carol", "carol-pass-1", "user")) == LOOM_OK);
    CHECK(CODE(auth_check_token(svc, tok, NOW, &who)) == LOOM_E_UNAUTHENTICATED);
    test_close(svc);
    test_db_remove(&t);
}

int main(void)
{
    test_issue_check_expire_logout();
    test_default_ttl_and_restart();
    test_revoked_with_user_and_password();
    test_apikeys();
    test_concurrent_callers();
    test_checked_then_revoked();
    test_basic_keeps_token_cache();
    return CHECK_DONE();
}
