/*
 * tests/unit/auth/test_auth_basic.c - Basic credentials presented on a
 * request: verified against the stored hash, remembered for a while, the
 * memory dropped when the password changes or the user goes, failures
 * counted by the log-on limiter, a locked-out client refused even a pair
 * it had right before.
 */
#include "../../check.h"
#include "auth_test_util.h"

#define NOW 1700000000000LL

static int basic(auth_service *svc, const char *client, const char *user, const char *password,
                 int64_t now, auth_identity *who)
{
    return CODE(auth_check_basic(svc, client, user, password, now, who));
}

int main(void)
{
    test_db t;
    test_db_make(&t);
    auth_options o = test_fast_options();
    auth_service *svc = test_open(&t, &o);
    char err[256];
    CHECK(test_bootstrap(svc, "admin-pass-1", NULL, 0, err, sizeof err) == 1);
    CHECK(TAKE(auth_user_add(svc, "alice", "alice-pass-1", "user")) == LOOM_OK);

    /* The right pair: the user as stored, the role, a lapse time. */
    auth_identity who = {0};
    CHECK(basic(svc, "10.0.0.1", "ALICE", "alice-pass-1", NOW, &who) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice");
    CHECK_STR_EQ(who.role, "user");
    CHECK(who.expires_at_ms == NOW + AUTH_BASIC_CACHE_TTL_MS);
    /* Again, from the cache: the same answer. */
    CHECK(basic(svc, "10.0.0.1", "ALICE", "alice-pass-1", NOW + 1000, &who) == LOOM_OK);
    CHECK_STR_EQ(who.user, "alice");
    /* A wrong password, an unknown user, a malformed name: one refusal. */
    CHECK(basic(svc, "10.0.0.2", "alice", "alice-pass-2", NOW, NULL) == LOOM_E_UNAUTHENTICATED);
    CHECK(basic(svc, "10.0.0.2", "nobody", "alice-pass-1", NOW, NULL) == LOOM_E_UNAUTHENTICATED);
    CHECK(basic(svc, "10.0.0.3", "bad name!", "alice-pass-1", NOW, NULL) == LOOM_E_UNAUTHENTICATED);

    /* A new password: the remembered pair is dropped at once. */
    CHECK(TAKE(auth_user_passwd(svc, "alice", "alice-pass-2", 0)) == LOOM_OK);
    CHECK(basic(svc, "10.0.0.1", "alice", "alice-pass-1", NOW + 2000, NULL) ==
          LOOM_E_UNAUTHENTICATED);
    CHECK(basic(svc, "10.0.0.1", "alice", "alice-pass-2", NOW + 2000, &who) == LOOM_OK);
    /* A role change shows on the next request, cached or not. */
    CHECK(TAKE(auth_user_add(svc, "carol", "carol-pass-1", "admin")) == LOOM_OK);
    CHECK(basic(svc, "10.0.0.4", "carol", "carol-pass-1", NOW, &who) == LOOM_OK);
    CHECK_STR_EQ(who.role, "admin");
    /* The user removed: the pair no longer works. */
    CHECK(TAKE(auth_user_remove(svc, "carol")) == LOOM_OK);
    CHECK(basic(svc, "10.0.0.4", "carol", "carol-pass-1", NOW + 10, NULL) ==
          LOOM_E_UNAUTHENTICATED);

    /* The pair lapses after the cache's time and is verified again. */
    CHECK(basic(svc, "10.0.0.1", "alice", "alice-pass-2", NOW + AUTH_BASIC_CACHE_TTL_MS + 5000,
                &who) == LOOM_OK);

    /* Failures count against the log-on limiter, like failed log-ons: five,
     * then the client waits, even with the right pair remembered. */
    const int64_t later = NOW + 10 * 60 * 1000;
    CHECK(basic(svc, "10.0.0.9", "alice", "alice-pass-2", later, NULL) == LOOM_OK);
    for (int i = 0; i < 5; i++)
        CHECK(basic(svc, "10.0.0.9", "alice", "wrong-pass", later, NULL) == LOOM_E_UNAUTHENTICATED);
    CHECK(basic(svc, "10.0.0.9", "alice", "wrong-pass", later, NULL) == LOOM_E_RATE_LIMITED);
    CHECK(basic(svc, "10.0.0.9", "alice", "alice-pass-2", later, NULL) == LOOM_E_RATE_LIMITED);
    CHECK(auth_retry_after_ms(svc, "10.0.0.9", later) > 0);
    /* The same limit a password log-on sees. */
    char token[AUTH_SECRET_MAX];
    CHECK(CODE(auth_logon_password(svc, "10.0.0.9", "alice", "alice-pass-2", later, token,
                                   sizeof token, NULL)) == LOOM_E_RATE_LIMITED);
    /* Another client is not held back. */
    CHECK(basic(svc, "10.0.0.10", "alice", "alice-pass-2", later, NULL) == LOOM_OK);
    /* Absurd input is refused, never read past. */
    char longpw[AUTH_PASSWORD_MAX_LEN + 10];
    memset(longpw, 'x', sizeof longpw - 1);
    longpw[sizeof longpw - 1] = 0;
    CHECK(basic(svc, "10.0.0.11", "alice", longpw, later, NULL) == LOOM_E_UNAUTHENTICATED);

    test_close(svc);
    test_db_remove(&t);
    return CHECK_DONE();
}
