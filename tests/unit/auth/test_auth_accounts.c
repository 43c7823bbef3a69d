/*
 * tests/unit/auth/test_auth_accounts.c - the log-on limiter per address and
 * per account (with backoff), and users' immutable ids: never reused, what
 * keys and tokens hang on, and the migration of a database made when users
 * were kept by name.
 */
#include <sqlite3.h>

#include "../../check.h"
#include "auth_test_util.h"

#define NOW 5000000LL

static int attempt(auth_service *svc, const char *client, const char *user, const char *password,
                   int64_t now)
{
    char token[AUTH_SECRET_MAX];
    return loom_err_take(auth_logon_password(svc, client, user, password, now, token,
                                             sizeof token, NULL),
                         NULL, 0);
}

/* Five bad attempts from one address lock out that address only. */
static void test_address_limit(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    for (int i = 0; i < 5; i++)
        CHECK(attempt(svc, "127.0.0.1", "admin", "wrong-pass", NOW) == LOOM_E_UNAUTHENTICATED);
    CHECK(attempt(svc, "127.0.0.1", "admin", "admin-pass-1", NOW) == LOOM_E_RATE_LIMITED);
    /* The administrator, from an address with no failures, logs on. */
    CHECK(attempt(svc, "127.0.0.2", "admin", "admin-pass-1", NOW) == LOOM_OK);
    CHECK(auth_retry_after_ms(svc, "127.0.0.1", NOW) == 60000);

    /* Backoff: a lockout right after the last one lasts twice as long. */
    int64_t later = NOW + 60000;
    CHECK(attempt(svc, "127.0.0.1", "admin", "admin-pass-1", later) == LOOM_OK);
    for (int i = 0; i < 5; i++)
        CHECK(attempt(svc, "127.0.0.1", "admin", "wrong-pass", later) == LOOM_E_UNAUTHENTICATED);
    CHECK(auth_retry_after_ms(svc, "127.0.0.1", later) == 120000);
    test_close(svc);
    test_db_remove(&t);
}

/* Guesses spread over many addresses still count against the account; the
 * addresses the account's owner logged on from before are not held back. */
static void test_account_limit(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256], client[32];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "bob", "bob-pass-1", "user")) == LOOM_OK);
    CHECK(attempt(svc, "127.0.0.200", "admin", "admin-pass-1", NOW) == LOOM_OK);

    /* Rotating 127.0.0.N, four guesses each: no address reaches its limit. */
    int refused = 0;
    for (int i = 1; i <= 10; i++) {
        snprintf(client, sizeof client, "127.0.0.%d", i);
        for (int k = 0; k < 4; k++)
            refused += attempt(svc, client, "ADMIN", "wrong-pass", NOW) == LOOM_E_RATE_LIMITED;
    }
    CHECK(refused > 0); /* the account's limit (20) stopped the rest */
    /* A new address is refused even with the right password ... */
    CHECK(TAKE(auth_logon_password(svc, "127.0.0.99", "admin", "admin-pass-1", NOW, err,
                                   AUTH_SECRET_MAX, NULL)) == LOOM_E_RATE_LIMITED);
    CHECK_CONTAINS(err, "for account admin");
    /* ... the owner's known address is not, nor is another account. */
    CHECK(attempt(svc, "127.0.0.200", "admin", "admin-pass-1", NOW) == LOOM_OK);
    CHECK(attempt(svc, "127.0.0.99", "bob", "bob-pass-1", NOW) == LOOM_OK);
    /* The account's lockout ends. */
    CHECK(attempt(svc, "127.0.0.99", "admin", "admin-pass-1", NOW + 60000) == LOOM_OK);

    /* Parallel guesses in flight count too (begin without end). */
    auth_identity who;
    CHECK(TAKE(auth_verify_password(svc, "10.1.1.1", "bob", "bob-pass-1", NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "bob");
    CHECK_STR_EQ(who.role, "user");
    CHECK(who.user_id > 0);
    test_close(svc);
    test_db_remove(&t);
}

/* A user made again under a removed user's name is someone else. */
static void test_ids_never_reused(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256], key[AUTH_SECRET_MAX], token[AUTH_SECRET_MAX];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "user")) == LOOM_OK);
    int64_t first = 0, second = 0, carol = 0;
    CHECK(TAKE(auth_user_id(svc, "alice", &first)) == LOOM_OK);
    CHECK(TAKE(auth_apikey_create(svc, "alice", "k", key, sizeof key)) == LOOM_OK);
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-2", "user")) == LOOM_OK);
    CHECK(TAKE(auth_user_id(svc, "alice", &second)) == LOOM_OK);
    CHECK(second > first);
    /* The highest id removed is not handed out again either (a rowid is). */
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(TAKE(auth_user_add(svc, "carol", "carol-pass-1", "user")) == LOOM_OK);
    CHECK(TAKE(auth_user_id(svc, "carol", &carol)) == LOOM_OK);
    CHECK(carol > second);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, token, sizeof token, NULL)) ==
          LOOM_E_UNAUTHENTICATED);
    auth_identity who;
    CHECK(TAKE(auth_logon_password(svc, "c", "carol", "carol-pass-1", NOW, token, sizeof token,
                                   NULL)) == LOOM_OK);
    CHECK(TAKE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK(who.user_id == carol);
    test_close(svc);
    test_db_remove(&t);
}

static int run_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", path, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc;
}

static int64_t int_query(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* A database from before ids: users by name, keys and tokens naming them,
 * execs without an owner id. A removed user's rowid (2) was reused. */
static void test_migration(void)
{
    test_db t;
    test_db_make(&t);
    unsigned char hash[crypto_generichash_BYTES];
    const char *apikey = "loomk_migrated-key";
    crypto_generichash(hash, sizeof hash, (const unsigned char *)apikey, strlen(apikey), NULL, 0);
    char hex[2 * sizeof hash + 1];
    sodium_bin2hex(hex, sizeof hex, hash, sizeof hash);
    char sql[4096];
    snprintf(sql, sizeof sql,
             "CREATE TABLE users(name TEXT PRIMARY KEY COLLATE NOCASE, role TEXT NOT NULL,"
             "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
             "CREATE TABLE api_keys(user TEXT NOT NULL COLLATE NOCASE REFERENCES users(name)"
             "  ON DELETE CASCADE, key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE"
             "  NOCASE, created_at INTEGER NOT NULL, UNIQUE(user, label));"
             "CREATE TABLE tokens(token_hash BLOB PRIMARY KEY, user TEXT NOT NULL COLLATE NOCASE"
             "  REFERENCES users(name) ON DELETE CASCADE, expires_at INTEGER NOT NULL,"
             "  apikey_hash BLOB);"
             "CREATE TABLE execs(id TEXT PRIMARY KEY, user TEXT NOT NULL, framework TEXT NOT NULL,"
             "  args TEXT NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
             "  result_dir TEXT NOT NULL, num_workers INTEGER NOT NULL, pgid INTEGER NOT NULL"
             "  DEFAULT 0, created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0,"
             "  ended_at INTEGER NOT NULL DEFAULT 0);"
             "INSERT INTO users(rowid, name, role, pwhash, created_at) VALUES"
             "  (1, 'admin', 'admin', 'x', 1), (2, 'dave', 'user', 'x', 2), (5, 'erin', 'user', 'x', 3);"
             "INSERT INTO api_keys VALUES('dave', x'%s', 'ci', 4);"
             "INSERT INTO execs(id, user, framework, args, state, result_dir, num_workers,"
             "  created_at) VALUES('dave-1', 'dave', 'command', '', 'FINISHED', '/x', 1, 1),"
             "  ('gone-1', 'gone', 'command', '', 'FINISHED', '/y', 1, 1);",
             hex);
    CHECK(run_sql(t.path, sql) == SQLITE_OK);

    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256], token[AUTH_SECRET_MAX];
    int64_t id = 0;
    /* Each user keeps its rowid as its id: its OS account stays. */
    CHECK(TAKE(auth_user_id(svc, "dave", &id)) == LOOM_OK);
    CHECK(id == 2);
    CHECK(TAKE(auth_user_id(svc, "erin", &id)) == LOOM_OK);
    CHECK(id == 5);
    CHECK(TAKE(auth_logon_apikey(svc, "c", apikey, NOW, token, sizeof token, NULL)) == LOOM_OK);
    auth_identity who;
    CHECK(TAKE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.user, "dave");
    CHECK(who.user_id == 2);
    /* New users get ids above every old one. */
    CHECK(TAKE(auth_user_add(svc, "frank", "frank-pass-1", "user")) == LOOM_OK);
    CHECK(TAKE(auth_user_id(svc, "frank", &id)) == LOOM_OK);
    CHECK(id == 6);
    test_close(svc);
    /* Execs now name their owner's id; an exec of a user gone is nobody's. */
    CHECK(int_query(t.path, "SELECT user_id FROM execs WHERE id = 'dave-1'") == 2);
    CHECK(int_query(t.path, "SELECT user_id FROM execs WHERE id = 'gone-1'") == 0);
    /* Opening again migrates nothing twice. */
    svc = test_open(&t, &o);
    CHECK(TAKE(auth_user_id(svc, "dave", &id)) == LOOM_OK);
    CHECK(id == 2);
    test_close(svc);
    test_db_remove(&t);
}

int main(void)
{
    test_address_limit();
    test_account_limit();
    test_ids_never_reused();
    test_migration();
    return CHECK_DONE();
}
