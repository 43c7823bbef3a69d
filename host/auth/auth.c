/* auth/auth.c - opening the auth service, its tables, the first admin, and
 * the helpers the other auth_*.c files share. See auth.h. */
#include "auth/auth_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

#define DEFAULT_TOKEN_TTL_MS (8LL * 3600 * 1000)
#define DEFAULT_MAX_FAILURES 5
#define DEFAULT_FAILURE_WINDOW_MS 60000
#define DEFAULT_LOCKOUT_MS 60000
#define DEFAULT_LIMITER_CAPACITY 4096
#define DEFAULT_ACCOUNT_MAX_FAILURES 20
#define DEFAULT_ACCOUNT_WINDOW_MS (10 * 60000)
#define DEFAULT_LOCKOUT_MAX_MS (15 * 60000)
/* Random bytes in a generated admin password: 144 bits, 24 characters. */
#define GENERATED_PASSWORD_BYTES 18

/* User names compare ignoring case everywhere, so "Admin" cannot sit beside
 * "admin". Every record is keyed by the user's id, which AUTOINCREMENT never
 * hands out twice: a user created again under a removed user's name is
 * someone else, who sees none of the first one's keys, tokens, plans or
 * execs, and whose jobs run under another OS account. Keys and tokens go
 * with their user (ON DELETE CASCADE), and so do plan memberships (the
 * trigger: plan_members is the store's table). A token issued for an API
 * key remembers the key so revoking it revokes them. */
static const char *const schema =
    "CREATE TABLE IF NOT EXISTS users("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
    "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
    "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS api_keys("
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
    "  created_at INTEGER NOT NULL, scope TEXT NOT NULL DEFAULT 'all',"
    "  UNIQUE(user_id, label));"
    "CREATE TABLE IF NOT EXISTS tokens("
    "  token_hash BLOB PRIMARY KEY,"
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
    "CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens(user_id);"
    "CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens(expires_at);"
    "CREATE INDEX IF NOT EXISTS tokens_by_apikey ON tokens(apikey_hash);"
    "CREATE TRIGGER IF NOT EXISTS users_removed_from_plans AFTER DELETE ON users BEGIN"
    "  DELETE FROM plan_members WHERE user_id = OLD.id; END;";

/* Databases made before users had ids kept them by name (the rowid, which
 * SQLite reuses, mapped them to OS accounts). Each user keeps its rowid as
 * its id, so its jobs keep their OS account, and its keys, tokens and execs
 * move to the id. Runs with foreign keys off, as SQLite's table rebuild
 * asks, in one transaction. */
static const char *const migrate_by_name =
    "PRAGMA foreign_keys=OFF;"
    "BEGIN IMMEDIATE;"
    "CREATE TABLE users_by_id("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
    "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
    "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "INSERT INTO users_by_id(id, name, role, pwhash, created_at)"
    "  SELECT rowid, name, role, pwhash, created_at FROM users;"
    "CREATE TABLE api_keys_by_id("
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
    "  created_at INTEGER NOT NULL, UNIQUE(user_id, label));"
    "INSERT INTO api_keys_by_id SELECT u.id, k.key_hash, k.label, k.created_at"
    "  FROM api_keys k JOIN users_by_id u ON u.name = k.user;"
    "CREATE TABLE tokens_by_id("
    "  token_hash BLOB PRIMARY KEY,"
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
    "INSERT INTO tokens_by_id SELECT t.token_hash, u.id, t.expires_at, t.apikey_hash"
    "  FROM tokens t JOIN users_by_id u ON u.name = t.user;"
    "UPDATE execs SET user_id = coalesce((SELECT id FROM users_by_id WHERE name = execs.user), 0);"
    "DROP TABLE tokens; DROP TABLE api_keys; DROP TABLE users;"
    "ALTER TABLE users_by_id RENAME TO users;"
    "ALTER TABLE api_keys_by_id RENAME TO api_keys;"
    "ALTER TABLE tokens_by_id RENAME TO tokens;"
    "COMMIT;"
    "PRAGMA foreign_keys=ON;";

void auth_lock(auth_service *svc)
{
    pthread_mutex_lock(&svc->lock);
    store_lock(svc->st);
}

void auth_unlock_read(auth_service *svc)
{
    store_unlock(svc->st);
    pthread_mutex_unlock(&svc->lock);
}

void auth_unlock(auth_service *svc)
{
    /* Whatever was written is seen by the next token check. */
    __atomic_add_fetch(&svc->generation, 1, __ATOMIC_RELEASE);
    auth_unlock_read(svc);
}

int64_t auth_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

loom_error *auth_check_name(const char *what, const char *name)
{
    if (!name || !*name)
        return loom_err(LOOM_E_INVALID, "%s: must not be empty", what);
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok)
            return loom_err(LOOM_E_INVALID,
                            "%s: '%.63s' has a character other than A-Z a-z 0-9 _ . -", what,
                            name);
        if (n >= AUTH_NAME_MAX - 1)
            return loom_err(LOOM_E_INVALID, "%s: longer than %d characters", what,
                            AUTH_NAME_MAX - 1);
    }
    return NULL;
}

loom_error *auth_check_scope(const char *scope)
{
    if (scope && (strcmp(scope, AUTH_SCOPE_ALL) == 0 || strcmp(scope, AUTH_SCOPE_INFERENCE) == 0))
        return NULL;
    return loom_err(LOOM_E_INVALID, "scope: expected \"" AUTH_SCOPE_ALL "\" or \""
                    AUTH_SCOPE_INFERENCE "\", got \"%.32s\"", scope ? scope : "");
}

loom_error *auth_check_password(const char *password)
{
    size_t n = password ? strnlen(password, AUTH_PASSWORD_MAX_LEN + 1) : 0;
    if (n < AUTH_PASSWORD_MIN_LEN)
        return loom_err(LOOM_E_INVALID, "password: must be at least %d characters",
                        AUTH_PASSWORD_MIN_LEN);
    if (n > AUTH_PASSWORD_MAX_LEN)
        return loom_err(LOOM_E_INVALID, "password: must be at most %d characters",
                        AUTH_PASSWORD_MAX_LEN);
    return NULL;
}

loom_error *auth_check_role(const char *role)
{
    if (role && (strcmp(role, "admin") == 0 || strcmp(role, "user") == 0))
        return NULL;
    return loom_err(LOOM_E_INVALID, "role: expected \"admin\" or \"user\", got \"%.32s\"",
                    role ? role : "");
}

loom_error *auth_hash_password(const auth_service *svc, const char *password,
                               char out[crypto_pwhash_STRBYTES])
{
    if (crypto_pwhash_str(out, password, strlen(password), svc->opslimit, svc->memlimit) != 0)
        return loom_err(LOOM_E_INTERNAL, "password hashing failed (out of memory?)");
    return NULL;
}

void auth_secret_hash(const char *secret,
                      unsigned char hash[AUTH_SECRET_HASH_BYTES])
{
    crypto_generichash(hash, AUTH_SECRET_HASH_BYTES,
                       (const unsigned char *)secret, strlen(secret), NULL, 0);
}

int auth_new_secret(const char *prefix, char *out, size_t len,
                    unsigned char hash[AUTH_SECRET_HASH_BYTES])
{
    unsigned char raw[AUTH_SECRET_RANDOM_BYTES];
    size_t plen = strlen(prefix);
    size_t need = plen + sodium_base64_ENCODED_LEN(
                             sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    if (!out || len < need)
        return -1;
    randombytes_buf(raw, sizeof raw);
    memcpy(out, prefix, plen);
    sodium_bin2base64(out + plen, len - plen, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    auth_secret_hash(out, hash);
    return 0;
}

sqlite3_stmt *auth_prepare(auth_service *svc, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(svc->db, sql, -1, &st, NULL) != SQLITE_OK) {
        log_error("auth: cannot prepare \"%s\": %s", sql, sqlite3_errmsg(svc->db));
        return NULL;
    }
    return st;
}

int auth_exec(auth_service *svc, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(svc->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        log_error("auth: \"%s\" failed: %s", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

void auth_column_text(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

static void apply_defaults(auth_options *o)
{
    if (o->pwhash_opslimit == 0)
        o->pwhash_opslimit = crypto_pwhash_OPSLIMIT_INTERACTIVE;
    if (o->pwhash_memlimit == 0)
        o->pwhash_memlimit = crypto_pwhash_MEMLIMIT_INTERACTIVE;
    if (o->token_ttl_ms <= 0)
        o->token_ttl_ms = DEFAULT_TOKEN_TTL_MS;
    if (o->max_failures <= 0)
        o->max_failures = DEFAULT_MAX_FAILURES;
    if (o->failure_window_ms <= 0)
        o->failure_window_ms = DEFAULT_FAILURE_WINDOW_MS;
    if (o->lockout_ms <= 0)
        o->lockout_ms = DEFAULT_LOCKOUT_MS;
    if (o->limiter_capacity == 0)
        o->limiter_capacity = DEFAULT_LIMITER_CAPACITY;
    if (o->account_max_failures <= 0)
        o->account_max_failures = DEFAULT_ACCOUNT_MAX_FAILURES;
    if (o->account_window_ms <= 0)
        o->account_window_ms = DEFAULT_ACCOUNT_WINDOW_MS;
    if (o->lockout_max_ms <= 0)
        o->lockout_max_ms = DEFAULT_LOCKOUT_MAX_MS;
}

static loom_error *check_limits(const auth_options *o)
{
    if (o->pwhash_opslimit < crypto_pwhash_OPSLIMIT_MIN ||
        o->pwhash_opslimit > crypto_pwhash_OPSLIMIT_MAX)
        return loom_err(LOOM_E_INVALID, "pwhash_opslimit: expected %llu..%llu, got %llu",
                        (unsigned long long)crypto_pwhash_OPSLIMIT_MIN,
                        (unsigned long long)crypto_pwhash_OPSLIMIT_MAX,
                        (unsigned long long)o->pwhash_opslimit);
    if (o->pwhash_memlimit < crypto_pwhash_MEMLIMIT_MIN ||
        o->pwhash_memlimit > crypto_pwhash_MEMLIMIT_MAX)
        return loom_err(LOOM_E_INVALID, "pwhash_memlimit: expected %zu..%zu bytes, got %zu",
                        (size_t)crypto_pwhash_MEMLIMIT_MIN, (size_t)crypto_pwhash_MEMLIMIT_MAX,
                        o->pwhash_memlimit);
    return NULL;
}

/* Whether `table` has a column `column`: -1 when it cannot tell. */
static int has_column(auth_service *svc, const char *table, const char *column)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name = ?", table);
    sqlite3_stmt *st = auth_prepare(svc, sql);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, column, -1, SQLITE_STATIC);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n < 0 ? -1 : n > 0;
}

/* Brings a database made before users had ids to the current tables. */
static int migrate(auth_service *svc, char **msg)
{
    int users = has_column(svc, "users", "name");
    int ids = has_column(svc, "users", "id");
    if (users != 1 || ids != 0)
        return SQLITE_OK;
    int rc = sqlite3_exec(svc->db, migrate_by_name, NULL, NULL, msg);
    if (rc != SQLITE_OK) {
        sqlite3_exec(svc->db, "ROLLBACK; PRAGMA foreign_keys=ON;", NULL, NULL, NULL);
        return rc;
    }
    log_info("auth: users now have ids that are never reused (database migrated)");
    return SQLITE_OK;
}

/* Keys made before keys had scopes may do all their user may. Runs after
 * the schema, which a migrated database's api_keys predates. */
static int add_key_scopes(auth_service *svc, char **msg)
{
    if (has_column(svc, "api_keys", "scope") != 0)
        return SQLITE_OK;
    return sqlite3_exec(svc->db, "ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL "
                        "DEFAULT 'all'", NULL, NULL, msg);
}

/* The tables, in the store's database; foreign_keys (set by the store)
 * drives the cascades. */
static loom_error *create_tables(auth_service *svc)
{
    char *msg = NULL;
    store_lock(svc->st);
    int rc = migrate(svc, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(svc->db, schema, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = add_key_scopes(svc, &msg);
    loom_error *e = rc == SQLITE_OK ? NULL
                                    : loom_err(LOOM_E_INTERNAL, "auth tables: %s",
                                               msg ? msg : sqlite3_errmsg(svc->db));
    sqlite3_free(msg);
    if (!e) {
        svc->check_token_stmt = auth_prepare(
            svc, "SELECT t.token_hash, t.expires_at, u.name, u.role, u.id, "
                 "coalesce(k.scope, 'all') FROM tokens t "
                 "JOIN users u ON u.id = t.user_id "
                 "LEFT JOIN api_keys k ON k.key_hash = t.apikey_hash WHERE t.token_hash = ?");
        if (!svc->check_token_stmt)
            e = loom_err(LOOM_E_INTERNAL, "auth: %s", sqlite3_errmsg(svc->db));
    }
    store_unlock(svc->st);
    return e;
}

loom_error *auth_open(store *st, const auth_options *opt, auth_service **out)
{
    *out = NULL;
    if (sodium_init() < 0)
        return loom_err(LOOM_E_INTERNAL, "auth: libsodium failed to initialise");
    auth_options o = {0};
    if (opt)
        o = *opt;
    apply_defaults(&o);
    loom_error *e = check_limits(&o);
    if (e)
        return e;

    auth_service *svc = calloc(1, sizeof *svc);
    if (!svc)
        return loom_err(LOOM_E_INTERNAL, "auth: out of memory");
    pthread_mutex_init(&svc->lock, NULL);
    pthread_mutex_init(&svc->cache_lock, NULL);
    svc->generation = 1;
    svc->token_cache = calloc(AUTH_TOKEN_CACHE_SLOTS, sizeof *svc->token_cache);
    svc->st = st;
    svc->db = store_db(st);
    svc->opslimit = o.pwhash_opslimit;
    svc->memlimit = o.pwhash_memlimit;
    svc->token_ttl_ms = o.token_ttl_ms;
    svc->limiter = ratelimit_create(o.limiter_capacity, o.max_failures,
                                    o.failure_window_ms, o.lockout_ms);
    svc->account_limiter = ratelimit_create(o.limiter_capacity, o.account_max_failures,
                                            o.account_window_ms, o.lockout_ms);
    svc->trusted = ratelimit_create(o.limiter_capacity, 1, 1, 1);
    if (!svc->limiter || !svc->account_limiter || !svc->trusted || !svc->token_cache)
        e = loom_err(LOOM_E_INTERNAL, "auth: cannot make the log-on limiter for %zu clients",
                     o.limiter_capacity);
    else {
        ratelimit_set_backoff(svc->limiter, o.lockout_max_ms);
        ratelimit_set_backoff(svc->account_limiter, o.lockout_max_ms);
    }
    if (!e)
        e = create_tables(svc);
    if (!e) {
        char dummy[AUTH_SECRET_MAX];
        unsigned char unused[AUTH_SECRET_HASH_BYTES];
        auth_new_secret("", dummy, sizeof dummy, unused);
        e = auth_hash_password(svc, dummy, svc->dummy_pwhash);
        sodium_memzero(dummy, sizeof dummy);
    }
    if (e) {
        auth_close(svc);
        return e;
    }
    *out = svc;
    return NULL;
}

void auth_close(auth_service *svc)
{
    if (!svc)
        return;
    sqlite3_finalize(svc->check_token_stmt);
    ratelimit_free(svc->limiter);
    ratelimit_free(svc->account_limiter);
    ratelimit_free(svc->trusted);
    auth_basic_cache_free(svc->basic_cache);
    if (svc->token_cache)
        sodium_memzero(svc->token_cache, AUTH_TOKEN_CACHE_SLOTS * sizeof *svc->token_cache);
    free(svc->token_cache);
    pthread_mutex_destroy(&svc->cache_lock);
    pthread_mutex_destroy(&svc->lock);
    free(svc);
}

/* base64url: no characters a shell or a terminal would mangle. */
loom_error *auth_generate_password(char *out, size_t len)
{
    unsigned char raw[GENERATED_PASSWORD_BYTES];
    if (len < sodium_base64_ENCODED_LEN(sizeof raw,
                                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
        sodium_init() < 0)
        return loom_err(LOOM_E_INVALID, "password: the buffer needs %d bytes",
                        AUTH_PASSWORD_GEN_MAX);
    randombytes_buf(raw, sizeof raw);
    sodium_bin2base64(out, len, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    return NULL;
}

static int count_users(auth_service *svc)
{
    sqlite3_stmt *st = auth_prepare(svc, "SELECT count(*) FROM users");
    if (!st)
        return -1;
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

loom_error *auth_bootstrap_admin(auth_service *svc, const char *password_or_null,
                                 char *generated, size_t len, int *created)
{
    if (created)
        *created = 0;
    if (generated && len > 0)
        generated[0] = '\0';
    loom_error *e = NULL;
    if (password_or_null && (e = auth_check_password(password_or_null)) != NULL)
        return e;
    if (!password_or_null && (!generated || len < AUTH_PASSWORD_GEN_MAX))
        return loom_err(LOOM_E_INVALID,
                        "bootstrap: the buffer for the generated password needs %d bytes",
                        AUTH_PASSWORD_GEN_MAX);

    /* Held across the hash: this runs once, at start-up, and holding it
     * keeps two callers from both seeing an empty table. */
    auth_lock(svc);
    int n = count_users(svc);
    if (n != 0) {
        if (n < 0)
            e = loom_err(LOOM_E_INTERNAL, "bootstrap: cannot count users: %s",
                         sqlite3_errmsg(svc->db));
        auth_unlock(svc);
        return e;
    }
    char password[AUTH_PASSWORD_GEN_MAX];
    const char *chosen = password_or_null;
    if (!chosen) {
        loom_err_free(auth_generate_password(password, sizeof password));
        chosen = password;
    }
    char pwhash[crypto_pwhash_STRBYTES];
    e = auth_hash_password(svc, chosen, pwhash);
    if (!e) {
        sqlite3_stmt *st = auth_prepare(
            svc, "INSERT INTO users(name, role, pwhash, created_at) "
                 "VALUES('admin', 'admin', ?, ?)");
        if (st) {
            sqlite3_bind_text(st, 1, pwhash, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, auth_wall_ms());
        }
        if (!st || sqlite3_step(st) != SQLITE_DONE)
            e = loom_err(LOOM_E_INTERNAL, "bootstrap: cannot store user 'admin': %s",
                         sqlite3_errmsg(svc->db));
        sqlite3_finalize(st);
    }
    auth_unlock(svc);
    if (!e && !password_or_null)
        snprintf(generated, len, "%s", password);
    sodium_memzero(password, sizeof password);
    if (!e) {
        log_info("auth: created user 'admin' (role admin)");
        if (created)
            *created = 1;
    }
    return e;
}

loom_error *auth_read_password_file(const char *path, char *password, size_t len)
{
    if (!password || len == 0)
        return loom_err(LOOM_E_INVALID, "%s: no buffer", path);
    password[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return loom_err(LOOM_E_INVALID, "%s: %s", path, strerror(errno));
    int ok = fgets(password, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return loom_err(LOOM_E_INVALID, "%s: file is empty", path);
    size_t n = strlen(password);
    if (n + 1 == len && password[n - 1] != '\n') {
        sodium_memzero(password, len);
        return loom_err(LOOM_E_INVALID, "%s: first line longer than %zu bytes", path, len - 2);
    }
    password[strcspn(password, "\r\n")] = '\0';
    loom_error *e = auth_check_password(password);
    if (e)
        sodium_memzero(password, len);
    return loom_err_wrap(e, "%s", path);
}
