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
/* Random bytes in a generated admin password: 144 bits, 24 characters. */
#define GENERATED_PASSWORD_BYTES 18

/* User names compare ignoring case everywhere, so "Admin" cannot sit beside
 * "admin". Keys and tokens go with their user (ON DELETE CASCADE). A token
 * issued for an API key remembers the key so revoking it revokes them. */
static const char *const schema =
    "CREATE TABLE IF NOT EXISTS users("
    "  name TEXT PRIMARY KEY COLLATE NOCASE,"
    "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
    "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS api_keys("
    "  user TEXT NOT NULL COLLATE NOCASE REFERENCES users(name) ON DELETE CASCADE,"
    "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
    "  created_at INTEGER NOT NULL, UNIQUE(user, label));"
    "CREATE TABLE IF NOT EXISTS tokens("
    "  token_hash BLOB PRIMARY KEY,"
    "  user TEXT NOT NULL COLLATE NOCASE REFERENCES users(name) ON DELETE CASCADE,"
    "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
    "CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens(user);"
    "CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens(expires_at);"
    "CREATE INDEX IF NOT EXISTS tokens_by_apikey ON tokens(apikey_hash);";

int auth_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

int64_t auth_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int auth_check_name(const char *what, const char *name, char *err,
                    size_t errlen)
{
    if (!name || !*name)
        return auth_fail(err, errlen, AUTH_EINVAL, "%s: must not be empty", what);
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok)
            return auth_fail(err, errlen, AUTH_EINVAL,
                             "%s: '%.63s' has a character other than "
                             "A-Z a-z 0-9 _ . -", what, name);
        if (n >= AUTH_NAME_MAX - 1)
            return auth_fail(err, errlen, AUTH_EINVAL,
                             "%s: longer than %d characters", what,
                             AUTH_NAME_MAX - 1);
    }
    return AUTH_OK;
}

int auth_check_password(const char *password, char *err, size_t errlen)
{
    size_t n = password ? strnlen(password, AUTH_PASSWORD_MAX_LEN + 1) : 0;
    if (n < AUTH_PASSWORD_MIN_LEN)
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "password: must be at least %d characters",
                         AUTH_PASSWORD_MIN_LEN);
    if (n > AUTH_PASSWORD_MAX_LEN)
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "password: must be at most %d characters",
                         AUTH_PASSWORD_MAX_LEN);
    return AUTH_OK;
}

int auth_check_role(const char *role, char *err, size_t errlen)
{
    if (role && (strcmp(role, "admin") == 0 || strcmp(role, "user") == 0))
        return AUTH_OK;
    return auth_fail(err, errlen, AUTH_EINVAL,
                     "role: expected \"admin\" or \"user\", got \"%.32s\"",
                     role ? role : "");
}

int auth_hash_password(const auth_service *svc, const char *password,
                       char out[crypto_pwhash_STRBYTES], char *err,
                       size_t errlen)
{
    if (crypto_pwhash_str(out, password, strlen(password), svc->opslimit,
                          svc->memlimit) != 0)
        return auth_fail(err, errlen, AUTH_EINTERNAL,
                         "password hashing failed (out of memory?)");
    return AUTH_OK;
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
        return AUTH_EINVAL;
    randombytes_buf(raw, sizeof raw);
    memcpy(out, prefix, plen);
    sodium_bin2base64(out + plen, len - plen, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    auth_secret_hash(out, hash);
    return AUTH_OK;
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
}

static int check_limits(const auth_options *o, char *err, size_t errlen)
{
    if (o->pwhash_opslimit < crypto_pwhash_OPSLIMIT_MIN ||
        o->pwhash_opslimit > crypto_pwhash_OPSLIMIT_MAX)
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "pwhash_opslimit: expected %llu..%llu, got %llu",
                         (unsigned long long)crypto_pwhash_OPSLIMIT_MIN,
                         (unsigned long long)crypto_pwhash_OPSLIMIT_MAX,
                         (unsigned long long)o->pwhash_opslimit);
    if (o->pwhash_memlimit < crypto_pwhash_MEMLIMIT_MIN ||
        o->pwhash_memlimit > crypto_pwhash_MEMLIMIT_MAX)
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "pwhash_memlimit: expected %zu..%zu bytes, got %zu",
                         (size_t)crypto_pwhash_MEMLIMIT_MIN,
                         (size_t)crypto_pwhash_MEMLIMIT_MAX, o->pwhash_memlimit);
    return AUTH_OK;
}

static int open_db(auth_service *svc, const char *db_path, char *err,
                   size_t errlen)
{
    int rc = sqlite3_open_v2(db_path, &svc->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_FULLMUTEX,
                             NULL);
    char *msg = NULL;
    if (rc == SQLITE_OK) {
        /* The host's store shares the file: wait for its writes rather than
         * failing with SQLITE_BUSY. WAL + synchronous=FULL: a committed user,
         * key or token survives a crash. foreign_keys drives the cascades. */
        sqlite3_busy_timeout(svc->db, 5000);
        rc = sqlite3_exec(svc->db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          "PRAGMA foreign_keys=ON;",
                          NULL, NULL, &msg);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(svc->db, schema, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        auth_fail(err, errlen, AUTH_EINTERNAL, "%s: %s", db_path,
                  msg ? msg : svc->db ? sqlite3_errmsg(svc->db) : "cannot open");
        sqlite3_free(msg);
        return AUTH_EINTERNAL;
    }
    return AUTH_OK;
}

auth_service *auth_open(const char *db_path, const auth_options *opt,
                        char *err, size_t errlen)
{
    if (!db_path || !*db_path) {
        auth_fail(err, errlen, AUTH_EINVAL, "auth: database path is empty");
        return NULL;
    }
    if (sodium_init() < 0) {
        auth_fail(err, errlen, AUTH_EINTERNAL, "auth: libsodium failed to initialise");
        return NULL;
    }
    auth_options o = {0};
    if (opt)
        o = *opt;
    apply_defaults(&o);
    if (check_limits(&o, err, errlen) != AUTH_OK)
        return NULL;

    auth_service *svc = calloc(1, sizeof *svc);
    if (!svc) {
        auth_fail(err, errlen, AUTH_EINTERNAL, "auth: out of memory");
        return NULL;
    }
    pthread_mutex_init(&svc->lock, NULL);
    svc->opslimit = o.pwhash_opslimit;
    svc->memlimit = o.pwhash_memlimit;
    svc->token_ttl_ms = o.token_ttl_ms;
    svc->limiter = ratelimit_create(o.limiter_capacity, o.max_failures,
                                    o.failure_window_ms, o.lockout_ms);
    if (!svc->limiter) {
        auth_fail(err, errlen, AUTH_EINTERNAL,
                  "auth: cannot make the log-on limiter for %zu clients",
                  o.limiter_capacity);
        auth_close(svc);
        return NULL;
    }
    if (open_db(svc, db_path, err, errlen) != AUTH_OK) {
        auth_close(svc);
        return NULL;
    }
    svc->check_token_stmt = auth_prepare(
        svc, "SELECT t.token_hash, t.expires_at, u.name, u.role FROM tokens t "
             "JOIN users u ON u.name = t.user WHERE t.token_hash = ?");
    if (!svc->check_token_stmt) {
        auth_fail(err, errlen, AUTH_EINTERNAL, "%s: %s", db_path,
                  sqlite3_errmsg(svc->db));
        auth_close(svc);
        return NULL;
    }
    char dummy[AUTH_SECRET_MAX];
    unsigned char unused[AUTH_SECRET_HASH_BYTES];
    auth_new_secret("", dummy, sizeof dummy, unused);
    int rc = auth_hash_password(svc, dummy, svc->dummy_pwhash, err, errlen);
    sodium_memzero(dummy, sizeof dummy);
    if (rc != AUTH_OK) {
        auth_close(svc);
        return NULL;
    }
    return svc;
}

void auth_close(auth_service *svc)
{
    if (!svc)
        return;
    sqlite3_finalize(svc->check_token_stmt);
    sqlite3_close(svc->db);
    ratelimit_free(svc->limiter);
    pthread_mutex_destroy(&svc->lock);
    free(svc);
}

/* base64url: no characters a shell or a terminal would mangle. */
int auth_generate_password(char *out, size_t len)
{
    unsigned char raw[GENERATED_PASSWORD_BYTES];
    if (len < sodium_base64_ENCODED_LEN(sizeof raw,
                                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) ||
        sodium_init() < 0)
        return AUTH_EINVAL;
    randombytes_buf(raw, sizeof raw);
    sodium_bin2base64(out, len, raw, sizeof raw,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
    return AUTH_OK;
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

int auth_bootstrap_admin(auth_service *svc, const char *password_or_null,
                         char *generated, size_t len, char *err, size_t errlen)
{
    if (generated && len > 0)
        generated[0] = '\0';
    if (password_or_null) {
        int rc = auth_check_password(password_or_null, err, errlen);
        if (rc != AUTH_OK)
            return rc;
    } else if (!generated || len < AUTH_PASSWORD_GEN_MAX) {
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "bootstrap: the buffer for the generated password "
                         "needs %d bytes", AUTH_PASSWORD_GEN_MAX);
    }

    /* Held across the hash: this runs once, at start-up, and holding it
     * keeps two callers from both seeing an empty table. */
    pthread_mutex_lock(&svc->lock);
    int n = count_users(svc);
    if (n < 0)
        auth_fail(err, errlen, AUTH_EINTERNAL, "bootstrap: cannot count users: %s",
                  sqlite3_errmsg(svc->db));
    if (n != 0) {
        pthread_mutex_unlock(&svc->lock);
        return n > 0 ? 0 : AUTH_EINTERNAL;
    }
    char password[AUTH_PASSWORD_GEN_MAX];
    const char *chosen = password_or_null;
    if (!chosen) {
        auth_generate_password(password, sizeof password);
        chosen = password;
    }
    char pwhash[crypto_pwhash_STRBYTES];
    int rc = auth_hash_password(svc, chosen, pwhash, err, errlen);
    if (rc == AUTH_OK) {
        sqlite3_stmt *st = auth_prepare(
            svc, "INSERT INTO users(name, role, pwhash, created_at) "
                 "VALUES('admin', 'admin', ?, ?)");
        if (st) {
            sqlite3_bind_text(st, 1, pwhash, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, auth_wall_ms());
        }
        if (!st || sqlite3_step(st) != SQLITE_DONE)
            rc = auth_fail(err, errlen, AUTH_EINTERNAL,
                           "bootstrap: cannot store user 'admin': %s",
                           sqlite3_errmsg(svc->db));
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&svc->lock);
    if (rc == AUTH_OK && !password_or_null)
        snprintf(generated, len, "%s", password);
    sodium_memzero(password, sizeof password);
    if (rc == AUTH_OK)
        log_info("auth: created user 'admin' (role admin)");
    return rc == AUTH_OK ? 1 : rc;
}

int auth_read_password_file(const char *path, char *password, size_t len,
                            char *err, size_t errlen)
{
    if (!password || len == 0)
        return auth_fail(err, errlen, AUTH_EINVAL, "%s: no buffer", path);
    password[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return auth_fail(err, errlen, AUTH_EINVAL, "%s: %s", path,
                         strerror(errno));
    int ok = fgets(password, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return auth_fail(err, errlen, AUTH_EINVAL, "%s: file is empty", path);
    size_t n = strlen(password);
    if (n + 1 == len && password[n - 1] != '\n') {
        sodium_memzero(password, len);
        return auth_fail(err, errlen, AUTH_EINVAL,
                         "%s: first line longer than %zu bytes", path, len - 2);
    }
    password[strcspn(password, "\r\n")] = '\0';
    int rc = auth_check_password(password, err, errlen);
    if (rc != AUTH_OK) {
        char reason[128];
        snprintf(reason, sizeof reason, "%s", err ? err : "");
        sodium_memzero(password, len);
        return auth_fail(err, errlen, rc, "%s: %s", path, reason);
    }
    return AUTH_OK;
}

int auth_http_status(int rc)
{
    switch (rc) {
    case AUTH_OK: return 200;
    case AUTH_EINVAL: return 400;
    case AUTH_EDENIED: return 401;
    case AUTH_ERATELIMITED: return 429;
    case AUTH_EEXISTS: return 409;
    case AUTH_ENOTFOUND: return 404;
    case AUTH_ECONFLICT: return 409;
    default: return 500;
    }
}
