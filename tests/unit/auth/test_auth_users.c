/*
 * tests/unit/auth/test_auth_users.c - the first admin, user management, the
 * last-admin rule, and what ends up in the database (hashes, never secrets).
 */
#include <sqlite3.h>

#include "../../check.h"
#include "auth_test_util.h"
#include "store/store_auth.h"

#define NOW 1000000

static int logon_ok(auth_service *svc, const char *user, const char *password)
{
    char token[AUTH_SECRET_MAX], err[256];
    int64_t expires = 0;
    return TAKE(auth_logon_password(svc, "127.0.0.1", user, password, NOW, token, sizeof token,
                                    &expires)) == LOOM_OK;
}

typedef struct listed {
    int n;
    char names[8][AUTH_NAME_MAX];
    char roles[8][AUTH_ROLE_MAX];
} listed;

static void collect_user(const auth_user *u, void *ctx)
{
    listed *l = ctx;
    if (l->n < 8) {
        snprintf(l->names[l->n], AUTH_NAME_MAX, "%s", u->name);
        snprintf(l->roles[l->n], AUTH_ROLE_MAX, "%s", u->role);
        CHECK(u->created_at_ms > 0);
    }
    l->n++;
}

static void test_bootstrap_random(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char generated[AUTH_PASSWORD_GEN_MAX], err[256] = "";

    CHECK(test_bootstrap(svc, NULL, generated, sizeof generated, err, sizeof err) == 1);
    CHECK(strlen(generated) >= 20);
    CHECK(logon_ok(svc, "admin", generated));
    CHECK(!logon_ok(svc, "admin", "not-the-password"));
    listed l = {0};
    CHECK(test_user_list(svc, collect_user, &l) == 1);
    CHECK_STR_EQ(l.names[0], "admin");
    CHECK_STR_EQ(l.roles[0], "admin");

    /* Second run: users exist, nothing changes and nothing is generated. */
    char again[AUTH_PASSWORD_GEN_MAX] = "junk";
    CHECK(test_bootstrap(svc, NULL, again, sizeof again, err, sizeof err) == 0);
    CHECK_STR_EQ(again, "");
    CHECK(test_user_list(svc, NULL, NULL) == 1);
    CHECK(logon_ok(svc, "admin", generated));

    /* Two databases never get the same password. */
    test_db t2;
    test_db_make(&t2);
    auth_service *svc2 = test_open(&t2, &o);
    char other[AUTH_PASSWORD_GEN_MAX];
    CHECK(test_bootstrap(svc2, NULL, other, sizeof other, err, sizeof err) == 1);
    CHECK(strcmp(other, generated) != 0);
    test_close(svc2);
    test_db_remove(&t2);

    test_close(svc);
    test_db_remove(&t);
}

static void test_bootstrap_given(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char generated[AUTH_PASSWORD_GEN_MAX] = "junk", err[256] = "";

    CHECK(test_bootstrap(svc, "short", generated, sizeof generated, err,
                               sizeof err) == -LOOM_E_INVALID);
    CHECK_CONTAINS(err, "at least 8");
    CHECK(test_user_list(svc, NULL, NULL) == 0);

    CHECK(test_bootstrap(svc, "correct horse", generated, sizeof generated,
                               err, sizeof err) == 1);
    CHECK_STR_EQ(generated, "");
    CHECK(logon_ok(svc, "admin", "correct horse"));
    /* A too-small buffer for a generated password is refused up front. */
    char tiny[4];
    CHECK(test_bootstrap(svc, NULL, tiny, sizeof tiny, err, sizeof err) == -LOOM_E_INVALID);

    /* --admin-password-file: the first line without its newline. */
    char file[160], pw[128];
    snprintf(file, sizeof file, "%s/pw", t.dir);
    FILE *f = fopen(file, "w");
    fputs("from-a-file-123\nsecond line\n", f);
    fclose(f);
    CHECK(TAKE(auth_read_password_file(file, pw, sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(pw, "from-a-file-123");
    f = fopen(file, "w");
    fputs("short\n", f);
    fclose(f);
    CHECK(TAKE(auth_read_password_file(file, pw, sizeof pw)) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, file);
    CHECK_CONTAINS(err, "at least 8");
    unlink(file);
    CHECK(TAKE(auth_read_password_file(file, pw, sizeof pw)) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "No such file");

    test_close(svc);
    test_db_remove(&t);
}

static void test_add_list_remove_passwd(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256] = "";
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);

    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "user")) == LOOM_OK);
    CHECK(TAKE(auth_user_add(svc, "bob.ops-2_x", "bob-pass-12", "admin")) == LOOM_OK);
    listed l = {0};
    CHECK(test_user_list(svc, collect_user, &l) == 3);
    CHECK_STR_EQ(l.names[0], "admin");
    CHECK_STR_EQ(l.names[1], "alice");
    CHECK_STR_EQ(l.roles[1], "user");
    CHECK_STR_EQ(l.names[2], "bob.ops-2_x");
    CHECK_STR_EQ(l.roles[2], "admin");

    /* Duplicates, also when only the case differs. */
    CHECK(TAKE(auth_user_add(svc, "alice", "another-pass", "user")) == LOOM_E_CONFLICT);
    CHECK_STR_EQ(err, "user 'alice' already exists");
    CHECK(TAKE(auth_user_add(svc, "ALICE", "another-pass", "user")) == LOOM_E_CONFLICT);
    CHECK_CONTAINS(err, "already exists");

    /* Validation names the field and what was expected. */
    CHECK(TAKE(auth_user_add(svc, "", "valid-pass", "user")) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "user name");
    CHECK(TAKE(auth_user_add(svc, "a b", "valid-pass", "user")) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "A-Z a-z 0-9 _ . -");
    CHECK(TAKE(auth_user_add(svc, "caf\xc3\xa9", "valid-pass", "user")) == LOOM_E_INVALID);
    CHECK(TAKE(auth_user_add(svc, "x;drop", "valid-pass", "user")) == LOOM_E_INVALID);
    char longest[64], too_long[65];
    memset(longest, 'n', 63);
    longest[63] = '\0';
    memset(too_long, 'n', 64);
    too_long[64] = '\0';
    CHECK(TAKE(auth_user_add(svc, longest, "valid-pass", "user")) == LOOM_OK);
    CHECK(TAKE(auth_user_add(svc, too_long, "valid-pass", "user")) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "longer than 63");
    CHECK(TAKE(auth_user_add(svc, "carol", "1234567", "user")) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "password: must be at least 8");
    CHECK(TAKE(auth_user_add(svc, "carol", "12345678", "root")) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "role: expected \"admin\" or \"user\"");
    CHECK(TAKE(auth_user_add(svc, "carol", "12345678", NULL)) == LOOM_E_INVALID);
    CHECK(test_user_list(svc, NULL, NULL) == 4);

    /* passwd: the old password stops working, the new one works. */
    CHECK(logon_ok(svc, "alice", "alice-pass-1"));
    CHECK(TAKE(auth_user_passwd(svc, "alice", "alice-pass-2", 0)) == LOOM_OK);
    CHECK(!logon_ok(svc, "alice", "alice-pass-1"));
    CHECK(logon_ok(svc, "alice", "alice-pass-2"));
    CHECK(logon_ok(svc, "Alice", "alice-pass-2")); /* names ignore case */
    CHECK(TAKE(auth_user_passwd(svc, "alice", "short", 0)) == LOOM_E_INVALID);
    CHECK(TAKE(auth_user_passwd(svc, "nobody", "long-enough", 0)) == LOOM_E_NOT_FOUND);
    CHECK_STR_EQ(err, "user 'nobody' does not exist");

    /* remove */
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_OK);
    CHECK(!logon_ok(svc, "alice", "alice-pass-2"));
    CHECK(TAKE(auth_user_remove(svc, "alice")) == LOOM_E_NOT_FOUND);
    CHECK_STR_EQ(err, "user 'alice' does not exist");
    CHECK(TAKE(auth_user_remove(svc, "bad name")) == LOOM_E_INVALID);
    l.n = 0;
    CHECK(test_user_list(svc, collect_user, &l) == 3);
    CHECK_STR_EQ(l.names[1], "bob.ops-2_x");

    test_close(svc);
    test_db_remove(&t);
}

static void test_last_admin(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256] = "";
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "plain", "plain-pass-1", "user")) == LOOM_OK);

    CHECK(TAKE(auth_user_remove(svc, "admin")) == LOOM_E_CONFLICT);
    CHECK_CONTAINS(err, "last admin");
    CHECK(logon_ok(svc, "admin", "admin-pass-1"));

    CHECK(TAKE(auth_user_add(svc, "root2", "root2-pass-1", "admin")) == LOOM_OK);
    CHECK(TAKE(auth_user_remove(svc, "admin")) == LOOM_OK);
    CHECK(TAKE(auth_user_remove(svc, "root2")) == LOOM_E_CONFLICT);
    CHECK_STR_EQ(err, "user 'root2' is the last admin: add another admin first");
    /* A plain user may go while one admin remains. */
    CHECK(TAKE(auth_user_remove(svc, "plain")) == LOOM_OK);
    CHECK(test_user_list(svc, NULL, NULL) == 1);

    test_close(svc);
    test_db_remove(&t);
}

/* Reads a column back with sqlite3 itself: what an attacker with a copy of
 * the file would see. */
static void test_stored_hashes(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256] = "", key[AUTH_SECRET_MAX], token[AUTH_SECRET_MAX];
    const char *password = "Tr0ub4dor&3";
    CHECK(test_bootstrap(svc, password, NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "dave", password, "user")) == LOOM_OK);
    CHECK(TAKE(auth_apikey_create(svc, "dave", "ci", key, sizeof key)) == LOOM_OK);
    CHECK(TAKE(auth_logon_password(svc, "c", "dave", password, NOW, token, sizeof token, NULL)) ==
          LOOM_OK);

    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(t.path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT name, pwhash FROM users", -1, &st, NULL) == SQLITE_OK);
    int rows = 0;
    char first_hash[256] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(st, 1);
        CHECK(h != NULL && strstr(h, password) == NULL);
        CHECK(h != NULL && strncmp(h, "$argon2", 7) == 0);
        if (rows == 0)
            snprintf(first_hash, sizeof first_hash, "%s", h ? h : "");
        else /* same password, different salt */
            CHECK(h != NULL && strcmp(h, first_hash) != 0);
        rows++;
    }
    CHECK(rows == 2);
    sqlite3_finalize(st);

    /* API keys and tokens: 32-byte hashes, neither the secret nor a part. */
    const char *secret_tables[][2] = {{"SELECT key_hash FROM api_keys", key},
                                      {"SELECT token_hash FROM tokens", token}};
    for (int i = 0; i < 2; i++) {
        CHECK(sqlite3_prepare_v2(db, secret_tables[i][0], -1, &st, NULL) == SQLITE_OK);
        CHECK(sqlite3_step(st) == SQLITE_ROW);
        const void *blob = sqlite3_column_blob(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        CHECK(n == 32);
        const char *secret = secret_tables[i][1];
        CHECK(strlen(secret) > 40);
        CHECK(blob && !memmem(blob, (size_t)n, secret + 6, 8));
        sqlite3_finalize(st);
    }
    /* and nowhere in the file itself */
    sqlite3_close(db);
    test_close(svc);
    FILE *f = fopen(t.path, "rb");
    static char file_bytes[1 << 20];
    size_t n = f ? fread(file_bytes, 1, sizeof file_bytes, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 0);
    CHECK(!memmem(file_bytes, n, password, strlen(password)));
    CHECK(!memmem(file_bytes, n, key, strlen(key)));
    CHECK(!memmem(file_bytes, n, token, strlen(token)));
    test_db_remove(&t);
}

static void read_pwhash(const char *path, const char *user, char *out, size_t cap)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT pwhash FROM users WHERE name = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, user, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Raising the configured cost upgrades a hash at the user's next log-on. */
static void test_rehash_on_logon(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256], before[256], after[256];
    CHECK(TAKE(auth_user_add(svc, "erin", "erin-pass-1", "admin")) == LOOM_OK);
    read_pwhash(t.path, "erin", before, sizeof before);
    CHECK_CONTAINS(before, ",t=1,");
    test_close(svc);

    o.pwhash_opslimit = crypto_pwhash_OPSLIMIT_MIN + 1;
    svc = test_open(&t, &o);
    CHECK(!logon_ok(svc, "erin", "wrong-pass-1"));
    read_pwhash(t.path, "erin", after, sizeof after);
    CHECK_STR_EQ(after, before); /* a failed log-on changes nothing */
    CHECK(logon_ok(svc, "erin", "erin-pass-1"));
    read_pwhash(t.path, "erin", after, sizeof after);
    CHECK_CONTAINS(after, ",t=2,");
    CHECK(logon_ok(svc, "erin", "erin-pass-1"));

    /* Limits outside libsodium's range are refused by name. */
    o.pwhash_memlimit = 1;
    store *st = NULL;
    loom_err_free(store_open(t.path, &st));
    auth_service *refused = NULL;
    CHECK(TAKE(auth_open(st, &o, &refused)) == LOOM_E_INVALID);
    CHECK(refused == NULL);
    CHECK_CONTAINS(err, "pwhash_memlimit");
    store_close(st);
    test_close(svc);
    test_db_remove(&t);
}

/* Auth keeps no connection of its own: its users live in the store's
 * database. An in-memory store is a database only its own connection sees,
 * so a second connection would find no users there. */
static void test_shares_the_store(void)
{
    store *st = NULL;
    CHECK(CODE(store_open(":memory:", &st)) == LOOM_OK);
    auth_options o = test_fast_options();
    auth_service *svc = NULL;
    CHECK(CODE(auth_open(st, &o, &svc)) == LOOM_OK);
    if (!svc) {
        store_close(st);
        return;
    }
    CHECK(CODE(auth_user_add(svc, "dana", "dana-pass-1", "user")) == LOOM_OK);
    store_user u;
    CHECK(CODE(store_user_by_name(st, "dana", &u)) == LOOM_OK);
    CHECK_STR_EQ(u.role, "user");
    /* The store's own tables sit beside auth's in the same database. */
    store_plan plan = {.path = "/dana", .weight = 1, .policy = "fair"};
    CHECK(CODE(store_plan_put(st, &plan)) == LOOM_OK);
    auth_close(svc);
    store_close(st);
}

static void collect_scope(const auth_apikey *k, void *ctx)
{
    if (strcmp(k->label, "web") == 0)
        snprintf(ctx, AUTH_SCOPE_MAX, "%s", k->scope);
}

/* A key's scope is stored and listed, rides on every token the key issues,
 * and a database made before scopes gets them (its keys: "all"). */
static void test_key_scopes(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256] = "", key[AUTH_SECRET_MAX], token[AUTH_SECRET_MAX];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "erin", "erin-pass-1", "user")) == LOOM_OK);
    CHECK(TAKE(auth_apikey_create_scoped(svc, "erin", "bad", "everything", key, sizeof key)) ==
          LOOM_E_INVALID);
    CHECK(strstr(err, "scope: expected") != NULL);
    CHECK(TAKE(auth_apikey_create_scoped(svc, "erin", "web", AUTH_SCOPE_INFERENCE, key,
                                         sizeof key)) == LOOM_OK);
    char listed_scope[AUTH_SCOPE_MAX] = "";
    CHECK(TAKE(auth_apikey_list(svc, "erin", collect_scope, listed_scope, NULL)) == LOOM_OK);
    CHECK_STR_EQ(listed_scope, AUTH_SCOPE_INFERENCE);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, token, sizeof token, NULL)) == LOOM_OK);
    auth_identity who;
    CHECK(TAKE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.scope, AUTH_SCOPE_INFERENCE);
    CHECK(TAKE(auth_logon_password(svc, "c", "erin", "erin-pass-1", NOW, token, sizeof token,
                                   NULL)) == LOOM_OK);
    CHECK(TAKE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.scope, AUTH_SCOPE_ALL);
    CHECK(TAKE(auth_apikey_create(svc, "erin", "old", key, sizeof key)) == LOOM_OK);
    test_close(svc);

    /* The same database as a build before scopes left it (it recorded no
     * schema versions either). */
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(t.path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "ALTER TABLE api_keys DROP COLUMN scope; DROP TABLE schema_migrations",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    svc = test_open(&t, &o);
    CHECK(TAKE(auth_logon_apikey(svc, "c", key, NOW, token, sizeof token, NULL)) == LOOM_OK);
    CHECK(TAKE(auth_check_token(svc, token, NOW, &who)) == LOOM_OK);
    CHECK_STR_EQ(who.scope, AUTH_SCOPE_ALL);
    test_close(svc);
    test_db_remove(&t);
}

int main(void)
{
    test_bootstrap_random();
    test_bootstrap_given();
    test_add_list_remove_passwd();
    test_last_admin();
    test_stored_hashes();
    test_rehash_on_logon();
    test_shares_the_store();
    test_key_scopes();
    return CHECK_DONE();
}
