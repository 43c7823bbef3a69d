/*
 * http/credentials.h - who a request says it is, taken from its headers: a
 * bearer token (Authorization: Bearer, or WMLA's X-Auth-Token and dlim's
 * X-User-Token) and Basic credentials (Authorization: Basic). The transport
 * only extracts them; checking them is the auth service's work, which never
 * sees a header.
 */
#ifndef LOOM_HTTP_CREDENTIALS_H
#define LOOM_HTTP_CREDENTIALS_H

#include <stddef.h>

#include "http/http.h"
#include "util/error.h"

/* Room for what is extracted: a user name of 63 bytes, a password of 1024,
 * a token of 71 (loom's are shorter; a longer one is no loom token). */
#define HTTP_CRED_USER_MAX 64
#define HTTP_CRED_PASSWORD_MAX 1025
#define HTTP_CRED_TOKEN_MAX 72

/* The web console's session: a log-on token in this cookie (HttpOnly,
 * SameSite=Strict), sent by the browser itself, so what it authenticates
 * is held to the console's rules (api/routes_console.c). */
#define HTTP_SESSION_COOKIE "loom_session"

typedef struct http_credentials {
    int has_cookie; /* the session cookie, when there is no other credential */
    char cookie[HTTP_CRED_TOKEN_MAX];
    int has_token;
    char token[HTTP_CRED_TOKEN_MAX];
    int has_basic;
    char user[HTTP_CRED_USER_MAX];
    char password[HTTP_CRED_PASSWORD_MAX];
} http_credentials;

/* Fills *out with what the request carries (both, either or neither). A
 * malformed Authorization: Basic is LOOM_E_INVALID naming what is wrong,
 * with has_basic 0 and any token still filled. Clear *out with
 * http_credentials_clear when done: it may hold a password. */
loom_error *http_credentials_of(const http_request *req, http_credentials *out);
void http_credentials_clear(http_credentials *c);

/* The header's Basic credentials into user and password (NUL-terminated);
 * LOOM_E_INVALID naming the fault when the header is not exactly "Basic"
 * and base64(user:password), or they do not fit. */
loom_error *http_parse_basic(const char *authorization_header, char *user, size_t user_len,
                             char *password, size_t password_len);
/* The header's Bearer token into token; LOOM_E_INVALID otherwise. */
loom_error *http_parse_bearer(const char *authorization_header, char *token, size_t len);

/* The value of cookie `name` in a Cookie header (RFC 6265 "a=1; b=2")
 * into out: 1 when present and it fits (len bytes with the NUL), else 0. */
int http_cookie_value(const char *cookie_header, const char *name, char *out, size_t len);

#endif
