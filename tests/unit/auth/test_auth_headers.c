/*
 * tests/unit/auth/test_auth_headers.c - parsing Authorization headers:
 * Basic (RFC 7617) and Bearer (RFC 6750), well-formed and malformed.
 */
#include "../../check.h"
#include "auth_test_util.h"

static void test_basic(void)
{
    char user[64], pw[64];
    /* "Aladdin:open sesame", RFC 7617's example */
    CHECK(CODE(auth_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", user, sizeof user, pw,
                                sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(user, "Aladdin");
    CHECK_STR_EQ(pw, "open sesame");
    /* scheme ignores case; spaces around are fine */
    CHECK(CODE(auth_parse_basic("  bAsIc   QWxhZGRpbjpvcGVuIHNlc2FtZQ==  ", user, sizeof user, pw,
                                sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(user, "Aladdin");
    /* the password may hold colons; the user ends at the first one */
    CHECK(CODE(auth_parse_basic("Basic dTpwOnE6cg==", user, sizeof user, pw, sizeof pw)) ==
          LOOM_OK);
    CHECK_STR_EQ(user, "u");
    CHECK_STR_EQ(pw, "p:q:r");
    /* padding left off by some clients */
    CHECK(CODE(auth_parse_basic("Basic dTpwOnE6cg", user, sizeof user, pw, sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(pw, "p:q:r");
    /* an empty password parses (the log-on refuses it) */
    CHECK(CODE(auth_parse_basic("Basic dTo=", user, sizeof user, pw, sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(user, "u");
    CHECK_STR_EQ(pw, "");

    const char *malformed[] = {
        NULL, "", "Basic", "Basic ", "Basic    ",
        "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
        "BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==",   /* no space after the scheme */
        "Basic QWxhZGRpbg==",                  /* "Aladdin": no colon */
        "Basic Om9wZW4=",                      /* ":open": empty user */
        "Basic QWxh ZGRpbjpvcGVu",             /* space inside */
        "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==x", /* junk after padding */
        "Basic !!!!",
        "Basic dQBwOnB3",                      /* "u\0p:pw": NUL byte */
        "Basic dQE6cHc=",                      /* "u\1:pw": control char in user */
        "Basic =",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        strcpy(user, "junk");
        CHECK_MSG(CODE(auth_parse_basic(malformed[i], user, sizeof user, pw, sizeof pw)) ==
                      LOOM_E_INVALID,
                  "accepted \"%s\"", malformed[i] ? malformed[i] : "(null)");
        CHECK_STR_EQ(user, "");
    }
    /* buffers too small are refused, not truncated */
    char small[4];
    CHECK(CODE(auth_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", small, sizeof small, pw,
                                sizeof pw)) == LOOM_E_INVALID);
    CHECK(CODE(auth_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", user, sizeof user, small,
                                sizeof small)) == LOOM_E_INVALID);
    /* a header far longer than any credential */
    static char huge[10000];
    memcpy(huge, "Basic ", 6);
    memset(huge + 6, 'A', sizeof huge - 7);
    CHECK(CODE(auth_parse_basic(huge, user, sizeof user, pw, sizeof pw)) == LOOM_E_INVALID);
}

static void test_bearer(void)
{
    char token[AUTH_SECRET_MAX];
    CHECK(CODE(auth_parse_bearer("Bearer loomt_abc-DEF_123", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "loomt_abc-DEF_123");
    CHECK(CODE(auth_parse_bearer("bearer\tmF_9.B5f-4.1JqM ", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "mF_9.B5f-4.1JqM");
    CHECK(CODE(auth_parse_bearer("Bearer abc+/==", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "abc+/==");

    const char *malformed[] = {
        NULL, "", "Bearer", "Bearer ", "Basic abc", "Bearerabc",
        "Bearer a b", "Bearer a=b", "Bearer ==", "Bearer abc\"", "Bearer ab,c",
        "Bearer abc\r\nX-Evil: 1",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        strcpy(token, "junk");
        CHECK_MSG(CODE(auth_parse_bearer(malformed[i], token, sizeof token)) == LOOM_E_INVALID,
                  "accepted \"%s\"", malformed[i] ? malformed[i] : "(null)");
        CHECK_STR_EQ(token, "");
    }
    char small[8];
    CHECK(CODE(auth_parse_bearer("Bearer 12345678", small, sizeof small)) == LOOM_E_INVALID);
    CHECK(CODE(auth_parse_bearer("Bearer 1234567", small, sizeof small)) == LOOM_OK);
}

int main(void)
{
    test_basic();
    test_bearer();
    return CHECK_DONE();
}
