/* http/credentials.c - parsing the Authorization header's Basic (RFC 7617)
 * and Bearer (RFC 6750) schemes. Strict: anything not in the grammar is
 * refused rather than guessed at. See credentials.h. */
#include "http/credentials.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Longest Basic credential accepted (base64 text), far above any real one. */
#define BASIC_B64_MAX 2048

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The credentials after "<scheme> " (scheme matched ignoring case), with
 * their length up to trailing white space; NULL when the scheme differs or
 * nothing follows it. */
static const char *after_scheme(const char *header, const char *scheme,
                                size_t *len)
{
    if (!header)
        return NULL;
    while (is_space(*header))
        header++;
    size_t n = strlen(scheme);
    if (strncasecmp(header, scheme, n) != 0 || !is_space(header[n]))
        return NULL;
    const char *p = header + n;
    while (is_space(*p))
        p++;
    size_t l = strlen(p);
    while (l > 0 && is_space(p[l - 1]))
        l--;
    *len = l;
    return l > 0 ? p : NULL;
}

static int is_token68_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
           c == '~' || c == '+' || c == '/';
}

/* token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static int is_token68(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && is_token68_char(s[i]))
        i++;
    if (i == 0)
        return 0;
    while (i < len && s[i] == '=')
        i++;
    return i == len;
}

static int decode_base64(const char *b64, size_t len, unsigned char *bin,
                         size_t cap, size_t *bin_len)
{
    /* RFC 7617 says padded base64; some clients drop the padding. */
    const int variants[] = {sodium_base64_VARIANT_ORIGINAL,
                            sodium_base64_VARIANT_ORIGINAL_NO_PADDING};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const char *end = NULL;
        if (sodium_base642bin(bin, cap, b64, len, NULL, bin_len, &end,
                              variants[i]) == 0 &&
            end == b64 + len)
            return 0;
    }
    return -1;
}

loom_error *http_parse_basic(const char *authorization_header, char *user, size_t user_len,
                             char *password, size_t password_len)
{
    if (!user || !password || user_len == 0 || password_len == 0)
        return loom_err(LOOM_E_INVALID, "Authorization: no room for the credentials");
    user[0] = password[0] = '\0';
    size_t len;
    const char *b64 = after_scheme(authorization_header, "Basic", &len);
    if (!b64 || len > BASIC_B64_MAX || !is_token68(b64, len))
        return loom_err(LOOM_E_INVALID, "Authorization: expected Basic and base64(user:password)");

    unsigned char bin[BASIC_B64_MAX];
    size_t n = 0;
    const char *why = NULL;
    if (decode_base64(b64, len, bin, sizeof bin, &n) != 0)
        why = "not base64";
    /* A NUL would cut the strings short; the user-id has no control
     * characters and ends at the first colon (RFC 7617 section 2). */
    else if (memchr(bin, '\0', n))
        why = "a NUL byte in the credentials";
    const unsigned char *colon = why ? NULL : memchr(bin, ':', n);
    if (!why && (!colon || colon == bin))
        why = "expected user:password";
    size_t ulen = colon ? (size_t)(colon - bin) : 0, plen = colon ? n - ulen - 1 : 0;
    for (size_t i = 0; !why && i < ulen; i++)
        if (bin[i] < 0x20 || bin[i] == 0x7f)
            why = "a control character in the user name";
    if (!why && (ulen >= user_len || plen >= password_len))
        why = "user name or password too long";
    if (!why) {
        memcpy(user, bin, ulen);
        user[ulen] = '\0';
        memcpy(password, colon + 1, plen);
        password[plen] = '\0';
    }
    sodium_memzero(bin, sizeof bin);
    return why ? loom_err(LOOM_E_INVALID, "Authorization: Basic: %s", why) : NULL;
}

loom_error *http_parse_bearer(const char *authorization_header, char *token, size_t len)
{
    if (!token || len == 0)
        return loom_err(LOOM_E_INVALID, "Authorization: no room for the token");
    token[0] = '\0';
    size_t n;
    const char *t = after_scheme(authorization_header, "Bearer", &n);
    if (!t || !is_token68(t, n) || n >= len)
        return loom_err(LOOM_E_INVALID, "Authorization: expected Bearer and a token");
    memcpy(token, t, n);
    token[n] = '\0';
    return NULL;
}

/* The token headers WMLA's clients send instead of Authorization: Bearer. */
static const char *const token_headers[] = {"X-Auth-Token", "X-User-Token"};

loom_error *http_credentials_of(const http_request *req, http_credentials *out)
{
    memset(out, 0, sizeof *out);
    const char *authz = http_header(req, "Authorization");
    loom_error *e = http_parse_bearer(authz, out->token, sizeof out->token);
    out->has_token = !e;
    loom_err_free(e);
    for (size_t i = 0; !out->has_token && i < sizeof token_headers / sizeof *token_headers; i++) {
        const char *x = http_header(req, token_headers[i]);
        if (x && strlen(x) < sizeof out->token) {
            snprintf(out->token, sizeof out->token, "%s", x);
            out->has_token = 1;
        }
    }
    if (!out->has_token && !authz)
        out->has_cookie = http_cookie_value(http_header(req, "Cookie"), HTTP_SESSION_COOKIE,
                                            out->cookie, sizeof out->cookie);
    if (!authz || strncasecmp(authz, "Basic ", 6) != 0)
        return NULL;
    e = http_parse_basic(authz, out->user, sizeof out->user, out->password, sizeof out->password);
    out->has_basic = !e;
    return e;
}

int http_cookie_value(const char *cookie_header, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = cookie_header; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ';')
            p++;
        size_t pair = strcspn(p, ";");
        if (pair > n && strncmp(p, name, n) == 0 && p[n] == '=') {
            size_t vlen = pair - n - 1;
            while (vlen > 0 && (p[n + 1 + vlen - 1] == ' ' || p[n + 1 + vlen - 1] == '\t'))
                vlen--;
            if (vlen == 0 || vlen >= len)
                return 0;
            memcpy(out, p + n + 1, vlen);
            out[vlen] = 0;
            return 1;
        }
        p += pair;
    }
    return 0;
}

void http_credentials_clear(http_credentials *c)
{
    sodium_memzero(c, sizeof *c);
}
