/*
 * tests/unit/auth/test_auth_ratelimit.c - the per-client limit on failed
 * log-ons: the lockout and its end, other clients unaffected, successes not
 * counted, attempts in flight counted, and a bounded table with LRU eviction.
 */
#include "../../check.h"
#include "auth/ratelimit.h"
#include "auth_test_util.h"

#define NOW 5000000LL

static int attempt(auth_service *svc, const char *client, const char *password,
                   int64_t now, char *err, size_t errlen)
{
    char token[AUTH_SECRET_MAX];
    return loom_err_take(auth_logon_password(svc, client, "alice", password, now, token,
                               sizeof token, NULL), err, errlen);
}

static void test_lockout(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256] = "";
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "admin")) == LOOM_OK);

    /* Successes do not count. */
    for (int i = 0; i < 8; i++)
        CHECK(attempt(svc, "10.0.0.1", "alice-pass-1", NOW, err, sizeof err) == LOOM_OK);

    /* Five failures within 60 s ... */
    for (int i = 0; i < 5; i++)
        CHECK(attempt(svc, "10.0.0.1", "wrong-pass", NOW + i * 1000, err, sizeof err) == LOOM_E_UNAUTHENTICATED);
    CHECK(auth_retry_after_ms(svc, "10.0.0.1", NOW + 4000) == 60000);

    /* ... and even the right password is refused, with the distinct code. */
    CHECK(attempt(svc, "10.0.0.1", "alice-pass-1", NOW + 5000, err, sizeof err) == LOOM_E_RATE_LIMITED);
    CHECK_CONTAINS(err, "too many failed log-ons from 10.0.0.1");
    CHECK_CONTAINS(err, "try again in 59 s");
    char key[AUTH_SECRET_MAX], token[AUTH_SECRET_MAX];
    CHECK(TAKE(auth_apikey_create(svc, "alice", "k", key, sizeof key)) == LOOM_OK);
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.1", key, NOW + 5000, token, sizeof token, NULL)) ==
          LOOM_E_RATE_LIMITED);

    /* Another client is not affected. */
    CHECK(attempt(svc, "10.0.0.2", "alice-pass-1", NOW + 5000, err, sizeof err) == LOOM_OK);
    CHECK(auth_retry_after_ms(svc, "10.0.0.2", NOW + 5000) == 0);

    /* Still refused just before the lockout ends, allowed from then on. */
    CHECK(attempt(svc, "10.0.0.1", "alice-pass-1", NOW + 4000 + 59999, err, sizeof err) == LOOM_E_RATE_LIMITED);
    CHECK(attempt(svc, "10.0.0.1", "alice-pass-1", NOW + 4000 + 60000, err, sizeof err) == LOOM_OK);
    CHECK(auth_retry_after_ms(svc, "10.0.0.1", NOW + 4000 + 60000) == 0);

    /* The slate is clean: four failures again do not lock out. */
    int64_t later = NOW + 200000;
    for (int i = 0; i < 4; i++)
        CHECK(attempt(svc, "10.0.0.1", "wrong-pass", later, err, sizeof err) == LOOM_E_UNAUTHENTICATED);
    CHECK(attempt(svc, "10.0.0.1", "alice-pass-1", later, err, sizeof err) == LOOM_OK);

    /* Failures spread wider than the window do not add up. */
    int64_t t0 = NOW + 1000000;
    for (int i = 0; i < 4; i++)
        CHECK(attempt(svc, "10.0.0.3", "wrong-pass", t0, err, sizeof err) == LOOM_E_UNAUTHENTICATED);
    for (int i = 0; i < 4; i++)
        CHECK(attempt(svc, "10.0.0.3", "wrong-pass", t0 + 60000, err, sizeof err) == LOOM_E_UNAUTHENTICATED);
    CHECK(attempt(svc, "10.0.0.3", "alice-pass-1", t0 + 60000, err, sizeof err) == LOOM_OK);

    /* Failed API key log-ons count the same. */
    for (int i = 0; i < 5; i++)
        CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.4", "loomk_guess", NOW, token, sizeof token,
                                     NULL)) == LOOM_E_UNAUTHENTICATED);
    CHECK(TAKE(auth_logon_apikey(svc, "10.0.0.4", key, NOW, token, sizeof token, NULL)) ==
          LOOM_E_RATE_LIMITED);
    test_close(svc);
    test_db_remove(&t);
}

/* Attempts that have begun and not ended count, so parallel guesses cannot
 * all pass the check before the first failure is recorded. */
static void test_in_flight(void)
{
    ratelimit *rl = ratelimit_create(16, 5, 60000, 60000);
    CHECK(rl != NULL);
    for (int i = 0; i < 5; i++)
        CHECK(ratelimit_begin(rl, "c", NOW) == 0);
    CHECK(ratelimit_begin(rl, "c", NOW) > 0);
    /* They succeed: nothing counted, the client may go on. */
    for (int i = 0; i < 5; i++)
        ratelimit_end(rl, "c", NOW, 0);
    CHECK(ratelimit_begin(rl, "c", NOW) == 0);
    ratelimit_end(rl, "c", NOW, 1);
    CHECK(ratelimit_retry_after(rl, "c", NOW) == 0);
    ratelimit_free(rl);
    CHECK(ratelimit_create(0, 5, 1, 1) == NULL);
    CHECK(ratelimit_create(8, 0, 1, 1) == NULL);
}

static void test_bounded_table(void)
{
    enum { CAPACITY = 256, CLIENTS = 10000 };
    ratelimit *rl = ratelimit_create(CAPACITY, 5, 60000, 60000);
    char client[32];
    /* "hot" is locked out and keeps being seen; "cold" is locked out and
     * then not seen again. */
    for (int i = 0; i < 5; i++) {
        CHECK(ratelimit_begin(rl, "hot", NOW) == 0);
        ratelimit_end(rl, "hot", NOW, 1);
        CHECK(ratelimit_begin(rl, "cold", NOW) == 0);
        ratelimit_end(rl, "cold", NOW, 1);
    }
    CHECK(ratelimit_retry_after(rl, "cold", NOW) > 0);
    size_t largest = 0;
    for (int i = 0; i < CLIENTS; i++) {
        snprintf(client, sizeof client, "192.168.%d.%d", i / 256, i % 256);
        CHECK(ratelimit_begin(rl, client, NOW) == 0);
        ratelimit_end(rl, client, NOW, 1);
        if (ratelimit_size(rl) > largest)
            largest = ratelimit_size(rl);
        if (i % 100 == 0)
            CHECK(ratelimit_begin(rl, "hot", NOW) > 0);
    }
    CHECK(largest == CAPACITY);
    CHECK(ratelimit_retry_after(rl, "hot", NOW) > 0);   /* recently seen: kept */
    CHECK(ratelimit_retry_after(rl, "cold", NOW) == 0); /* least recent: evicted */
    /* The most recent clients are still tracked with their failure. */
    for (int i = 0; i < 4; i++) {
        CHECK(ratelimit_begin(rl, "192.168.39.15", NOW) == 0);
        ratelimit_end(rl, "192.168.39.15", NOW, 1);
    }
    CHECK(ratelimit_retry_after(rl, "192.168.39.15", NOW) > 0);
    ratelimit_free(rl);
}

/* The same through the service, with its limiter_capacity option. */
static void test_service_bounded(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    o.limiter_capacity = 100;
    auth_service *svc = test_open(&t, &o);
    char err[256], client[32];
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "user")) == LOOM_OK);
    for (int i = 0; i < 5; i++)
        attempt(svc, "attacker", "wrong-pass", NOW, err, sizeof err);
    CHECK(attempt(svc, "attacker", "alice-pass-1", NOW, err, sizeof err) == LOOM_E_RATE_LIMITED);
    int denied = 0;
    for (int i = 0; i < 10000; i++) {
        snprintf(client, sizeof client, "10.%d.%d.1", i / 256, i % 256);
        denied += TAKE(auth_logon_apikey(svc, client, "loomk_guess", NOW, err, AUTH_SECRET_MAX,
                                         NULL)) == LOOM_E_UNAUTHENTICATED;
    }
    CHECK(denied == 10000);
    /* 10,000 newer clients pushed the attacker out of a 100-entry table. */
    CHECK(auth_retry_after_ms(svc, "attacker", NOW) == 0);
    test_close(svc);
    test_db_remove(&t);
}

int main(void)
{
    test_lockout();
    test_in_flight();
    test_bounded_table();
    test_service_bounded();
    return CHECK_DONE();
}
