/*
 * tests/unit/api/test_http_credentials.c - the transport's credentials:
 * Authorization headers, Basic (RFC 7617) and Bearer (RFC 6750),
 * well-formed and malformed, and which header a request's token and
 * password come from.
 */
#include <string.h>
#include <strings.h>

#include "check.h"
#include "http/credentials.h"

#define CODE(call) loom_err_take((call), NULL, 0)

static void test_basic(void)
{
    char user[64], pw[64];
    /* "Aladdin:open sesame", RFC 7617's example */
    CHECK(CODE(http_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", user, sizeof user, pw,
                                sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(user, "Aladdin");
    CHECK_STR_EQ(pw, "open sesame");
    /* scheme ignores case; spaces around are fine */
    CHECK(CODE(http_parse_basic("  bAsIc   QWxhZGRpbjpvcGVuIHNlc2FtZQ==  ", user, sizeof user, pw,
                                sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(user, "Aladdin");
    /* the password may hold colons; the user ends at the first one */
    CHECK(CODE(http_parse_basic("Basic dTpwOnE6cg==", user, sizeof user, pw, sizeof pw)) ==
          LOOM_OK);
    CHECK_STR_EQ(user, "u");
    CHECK_STR_EQ(pw, "p:q:r");
    /* padding left off by some clients */
    CHECK(CODE(http_parse_basic("Basic dTpwOnE6cg", user, sizeof user, pw, sizeof pw)) == LOOM_OK);
    CHECK_STR_EQ(pw, "p:q:r");
    /* an empty password parses (the log-on refuses it) */
    CHECK(CODE(http_parse_basic("Basic dTo=", user, sizeof user, pw, sizeof pw)) == LOOM_OK);
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
        CHECK_MSG(CODE(http_parse_basic(malformed[i], user, sizeof user, pw, sizeof pw)) ==
                      LOOM_E_INVALID,
                  "accepted \"%s\"", malformed[i] ? malformed[i] : "(null)");
        CHECK_STR_EQ(user, "");
    }
    /* buffers too small are refused, not truncated */
    char small[4];
    CHECK(CODE(http_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", small, sizeof small, pw,
                                sizeof pw)) == LOOM_E_INVALID);
    CHECK(CODE(http_parse_basic("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", user, sizeof user, small,
                                sizeof small)) == LOOM_E_INVALID);
    /* a header far longer than any credential */
    static char huge[10000];
    memcpy(huge, "Basic ", 6);
    memset(huge + 6, 'A', sizeof huge - 7);
    CHECK(CODE(http_parse_basic(huge, user, sizeof user, pw, sizeof pw)) == LOOM_E_INVALID);
}

static void test_bearer(void)
{
    char token[HTTP_CRED_TOKEN_MAX];
    CHECK(CODE(http_parse_bearer("Bearer loomt_abc-DEF_123", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "loomt_abc-DEF_123");
    CHECK(CODE(http_parse_bearer("bearer\tmF_9.B5f-4.1JqM ", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "mF_9.B5f-4.1JqM");
    CHECK(CODE(http_parse_bearer("Bearer abc+/==", token, sizeof token)) == LOOM_OK);
    CHECK_STR_EQ(token, "abc+/==");

    const char *malformed[] = {
        NULL, "", "Bearer", "Bearer ", "Basic abc", "Bearerabc",
        "Bearer a b", "Bearer a=b", "Bearer ==", "Bearer abc\"", "Bearer ab,c",
        "Bearer abc\r\nX-Evil: 1",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        strcpy(token, "junk");
        CHECK_MSG(CODE(http_parse_bearer(malformed[i], token, sizeof token)) == LOOM_E_INVALID,
                  "accepted \"%s\"", malformed[i] ? malformed[i] : "(null)");
        CHECK_STR_EQ(token, "");
    }
    char small[8];
    CHECK(CODE(http_parse_bearer("Bearer 12345678", small, sizeof small)) == LOOM_E_INVALID);
    CHECK(CODE(http_parse_bearer("Bearer 1234567", small, sizeof small)) == LOOM_OK);
}

/* A request whose headers are a NULL-ended list of name, value pairs. */
static const char *const *fake_headers;

static const char *fake_header(const http_request *req, const char *name)
{
    (void)req;
    for (const char *const *h = fake_headers; h && h[0]; h += 2)
        if (strcasecmp(h[0], name) == 0)
            return h[1];
    return NULL;
}

static const http_transport fake_transport = {fake_header, NULL, NULL};

static int32_t credentials_of(const char *const *headers, http_credentials *c)
{
    http_request req = {.method = "GET", .path = "/", .transport = &fake_transport};
    fake_headers = headers;
    return CODE(http_credentials_of(&req, c));
}

static void test_request_credentials(void)
{
    http_credentials c;
    const char *none[] = {NULL};
    CHECK(credentials_of(none, &c) == LOOM_OK);
    CHECK(!c.has_token && !c.has_basic);

    const char *bearer[] = {"Authorization", "Bearer loomt_abc", "X-Auth-Token", "other", NULL};
    CHECK(credentials_of(bearer, &c) == LOOM_OK);
    CHECK(c.has_token && !c.has_basic);
    CHECK_STR_EQ(c.token, "loomt_abc"); /* Authorization first */

    /* WMLA's and dlim's token headers */
    const char *wmla[] = {"X-Auth-Token", "loomt_wmla", NULL};
    CHECK(credentials_of(wmla, &c) == LOOM_OK);
    CHECK_STR_EQ(c.token, "loomt_wmla");
    const char *dlim[] = {"X-User-Token", "loomt_dlim", NULL};
    CHECK(credentials_of(dlim, &c) == LOOM_OK);
    CHECK_STR_EQ(c.token, "loomt_dlim");

    /* Basic beside a token header: both extracted, the caller chooses */
    const char *both[] = {"Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", "X-Auth-Token",
                          "loomt_x", NULL};
    CHECK(credentials_of(both, &c) == LOOM_OK);
    CHECK(c.has_token && c.has_basic);
    CHECK_STR_EQ(c.user, "Aladdin");
    CHECK_STR_EQ(c.password, "open sesame");
    http_credentials_clear(&c);
    CHECK(c.password[0] == 0 && c.user[0] == 0 && !c.has_basic);

    /* a malformed Basic header is an error naming it; a token still comes */
    const char *bad[] = {"Authorization", "Basic !!", "X-User-Token", "loomt_y", NULL};
    CHECK(credentials_of(bad, &c) == LOOM_E_INVALID);
    CHECK(!c.has_basic && c.has_token);
    CHECK_STR_EQ(c.token, "loomt_y");

    /* a token header too long for any token is not taken */
    char longer[HTTP_CRED_TOKEN_MAX + 8];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    const char *too_long[] = {"X-Auth-Token", longer, NULL};
    CHECK(credentials_of(too_long, &c) == LOOM_OK);
    CHECK(!c.has_token);

    /* the console's session cookie counts only when nothing else is sent:
     * a Bearer or Basic caller is never taken for a cookie session */
    const char *cookie[] = {"Cookie", "theme=dark; loom_session=loomt_c; x=1", NULL};
    CHECK(credentials_of(cookie, &c) == LOOM_OK);
    CHECK(c.has_cookie && !c.has_token && !c.has_basic);
    CHECK_STR_EQ(c.cookie, "loomt_c");
    const char *cookie_and_bearer[] = {"Cookie", "loom_session=loomt_c", "Authorization",
                                       "Bearer loomt_b", NULL};
    CHECK(credentials_of(cookie_and_bearer, &c) == LOOM_OK);
    CHECK(!c.has_cookie && c.has_token);
    const char *cookie_and_basic[] = {"Cookie", "loom_session=loomt_c", "Authorization",
                                      "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", NULL};
    CHECK(credentials_of(cookie_and_basic, &c) == LOOM_OK);
    CHECK(!c.has_cookie && c.has_basic);
    http_credentials_clear(&c);
}

static void test_cookie_value(void)
{
    char v[16];
    CHECK(http_cookie_value("loom_session=abc", "loom_session", v, sizeof v) && !strcmp(v, "abc"));
    CHECK(http_cookie_value("a=1;loom_session=abc ;b=2", "loom_session", v, sizeof v));
    CHECK_STR_EQ(v, "abc");
    /* a name that only ends or starts like it is another cookie */
    CHECK(!http_cookie_value("xloom_session=abc", "loom_session", v, sizeof v));
    CHECK(!http_cookie_value("loom_session_old=abc", "loom_session", v, sizeof v));
    /* empty, missing, too long for the buffer: none (never cut short) */
    CHECK(!http_cookie_value("loom_session=", "loom_session", v, sizeof v));
    CHECK(!http_cookie_value("loom_session=; other=1", "loom_session", v, sizeof v));
    CHECK(!http_cookie_value(NULL, "loom_session", v, sizeof v));
    CHECK(!http_cookie_value("loom_session=0123456789abcdef", "loom_session", v, sizeof v));
}

int main(void)
{
    test_basic();
    test_bearer();
    test_request_credentials();
    test_cookie_value();
    return CHECK_DONE();
}
