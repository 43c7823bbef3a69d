/*
 * tests/unit/api/test_cors.c - the CORS allow-list: origins checked when
 * the host starts, "*" refused, listed origins alone get the allow
 * headers (and credentials), preflights recognised.
 */
#include <string.h>

#include "http/cors.h"
#include "check.h"

static const char *header(const cors_headers *h, const char *name)
{
    for (int i = 0; i < h->count; i++)
        if (strcmp(h->name[i], name) == 0)
            return h->value[i];
    return NULL;
}

static int refused(const char *origin, int32_t code, const char *needle)
{
    const char *list[] = {origin};
    cors_policy *p = NULL;
    char msg[512] = "";
    int32_t got = loom_err_take(cors_policy_create(list, 1, &p), msg, sizeof msg);
    cors_policy_free(p);
    return got == code && strstr(msg, needle) != NULL;
}

int main(void)
{
    const char *origins[] = {"https://notebooks.example.com", "http://127.0.0.1:8888"};
    cors_policy *p = NULL;
    CHECK(loom_err_take(cors_policy_create(origins, 2, &p), NULL, 0) == LOOM_OK);
    CHECK(cors_origin_allowed(p, "https://notebooks.example.com"));
    CHECK(cors_origin_allowed(p, "HTTPS://Notebooks.Example.com"));
    CHECK(cors_origin_allowed(p, "http://127.0.0.1:8888"));
    CHECK(!cors_origin_allowed(p, "http://127.0.0.1:8889"));
    CHECK(!cors_origin_allowed(p, "https://notebooks.example.com.evil.example"));
    CHECK(!cors_origin_allowed(p, "null"));
    CHECK(!cors_origin_allowed(p, NULL));

    cors_headers h;
    cors_reply_headers(p, "https://notebooks.example.com", &h);
    CHECK_STR_EQ(header(&h, "Access-Control-Allow-Origin"), "https://notebooks.example.com");
    CHECK_STR_EQ(header(&h, "Access-Control-Allow-Credentials"), "true");
    CHECK_CONTAINS(header(&h, "Access-Control-Allow-Headers"), "X-User-Token");
    CHECK_STR_EQ(header(&h, "Vary"), "Origin");
    cors_reply_headers(p, "https://evil.example", &h);
    CHECK(header(&h, "Access-Control-Allow-Origin") == NULL);
    CHECK(header(&h, "Access-Control-Allow-Credentials") == NULL);
    CHECK_STR_EQ(header(&h, "Vary"), "Origin");
    cors_reply_headers(p, NULL, &h);
    CHECK(h.count == 0);

    CHECK(cors_is_preflight("OPTIONS", "https://evil.example", "POST"));
    CHECK(!cors_is_preflight("OPTIONS", "https://evil.example", NULL));
    CHECK(!cors_is_preflight("GET", "https://evil.example", "POST"));
    cors_policy_free(p);

    /* No list: nobody is allowed. */
    CHECK(loom_err_take(cors_policy_create(NULL, 0, &p), NULL, 0) == LOOM_OK);
    CHECK(!cors_origin_allowed(p, "https://notebooks.example.com"));
    cors_policy_free(p);

    /* Bad origins are refused by name. */
    CHECK(refused("*", LOOM_E_INVALID, "\"*\" is refused"));
    CHECK(refused("notebooks.example.com", LOOM_E_INVALID, "expected SCHEME://HOST[:PORT]"));
    CHECK(refused("https://notebooks.example.com/path", LOOM_E_INVALID, "/path"));
    CHECK(refused("https://host:0", LOOM_E_INVALID, "host:0"));
    CHECK(refused("https://host:70000", LOOM_E_INVALID, "host:70000"));
    CHECK(refused("ftp://host", LOOM_E_INVALID, "ftp://host"));
    const char *many[CORS_MAX_ORIGINS + 1];
    for (int i = 0; i <= CORS_MAX_ORIGINS; i++)
        many[i] = "http://a.example";
    char msg[256];
    CHECK(loom_err_take(cors_policy_create(many, CORS_MAX_ORIGINS + 1, &p), msg, sizeof msg) ==
          LOOM_E_LIMIT);
    CHECK_CONTAINS(msg, "at most 64");
    return CHECK_DONE();
}
