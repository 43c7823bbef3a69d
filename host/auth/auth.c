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
 * "admin". Every record is keyed by the user's id, which is never handed
 * out twice: a user created again under a removed user's name is someone
 * else, who sees none of the first one's keys, tokens, plans or execs, and
 * whose jobs run under another OS account. The tables and their migrations
 * are the store's (store/store_auth.h). */

void auth_lock(auth_service *svc)
{
    pthread_mutex_lock(&svc->lock);
}

void auth_unlock_read(auth_service *svc)
{
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
     * keeps two callers from both seeing an empty table; the store adds the
     * row only while there is no user, whoever else writes. */
    auth_lock(svc);
    int64_t n = 0;
    e = store_user_count(svc->st, NULL, &n);
    if (e || n != 0) {
        auth_unlock(svc);
        return loom_err_wrap(e, "bootstrap: cannot count users");
    }
    char password[AUTH_PASSWORD_GEN_MAX];
    const char *chosen = password_or_null;
    if (!chosen) {
        loom_err_free(auth_generate_password(password, sizeof password));
        chosen = password;
    }
    store_user admin = {.name = "admin", .role = "admin", .created_at = auth_wall_ms()};
    e = auth_hash_password(svc, chosen, admin.pwhash);
    int inserted = 0;
    if (!e)
        e = loom_err_wrap(store_user_insert_first(svc->st, &admin, &inserted),
                          "bootstrap: cannot store user 'admin'");
    sodium_memzero(admin.pwhash, sizeof admin.pwhash);
    auth_unlock(svc);
    if (!e && !inserted) {
        sodium_memzero(password, sizeof password);
        return NULL; /* another host made the first user meanwhile */
    }
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
