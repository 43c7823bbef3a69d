/*
 * http/cors.h - cross-origin calls from browsers (WMLA's inference page runs
 * on another origin). The host keeps an allow-list of origins (`loom serve
 * --cors-origin ORIGIN`, repeatable); a preflight (OPTIONS with
 * Access-Control-Request-Method) from a listed origin is answered 204 with
 * what it may send, one from any other origin is refused 403 naming it.
 * Replies to a listed origin carry Access-Control-Allow-Origin with that
 * origin and Access-Control-Allow-Credentials; nobody else gets either, so
 * a page on another origin cannot read a reply made with the user's
 * credentials. "*" is refused: credentials never go to every origin.
 */
#ifndef LOOM_HTTP_CORS_H
#define LOOM_HTTP_CORS_H

#include <stddef.h>

#include "util/error.h"

#define CORS_MAX_ORIGINS 64
#define CORS_ORIGIN_MAX 256 /* bytes of one origin, with its NUL */
#define CORS_MAX_HEADERS 6

typedef struct cors_policy cors_policy;

/* Checks each origin ("http://host" or "https://host:port": a scheme, a
 * host, an optional port, nothing after) and copies the list; NULL policy
 * with no origins is fine (every cross-origin call is refused).
 * LOOM_E_INVALID names a malformed origin, LOOM_E_LIMIT too many. */
loom_error *cors_policy_create(const char *const *origins, int count, cors_policy **out);
void cors_policy_free(cors_policy *p);
int cors_origin_allowed(const cors_policy *p, const char *origin);

/* The headers a reply carries: names and values point into the struct or
 * at constants, valid while it lives. */
typedef struct cors_headers {
    int count;
    const char *name[CORS_MAX_HEADERS];
    const char *value[CORS_MAX_HEADERS];
    char origin[CORS_ORIGIN_MAX];
} cors_headers;

/* For a request carrying `origin` (NULL: none): the headers its reply
 * gets (none when the origin is not listed). */
void cors_reply_headers(const cors_policy *p, const char *origin, cors_headers *out);

/* A preflight is an OPTIONS request with Origin and
 * Access-Control-Request-Method. */
int cors_is_preflight(const char *method, const char *origin, const char *request_method);

#endif
