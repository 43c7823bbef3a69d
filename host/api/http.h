/*
 * api/http.h - the host's HTTP server: libmicrohttpd underneath, a route
 * table of "METHOD /path/{}/more" patterns on top, bodies collected with a
 * size limit (refused early from Content-Length), multipart/form-data parsed
 * into fields, JSON replies with cJSON.
 */
#ifndef LOOM_API_HTTP_H
#define LOOM_API_HTTP_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/error.h"

#define HTTP_MAX_PARAMS 4
#define HTTP_MAX_FIELDS 8

typedef struct http_field {
    char name[64];
    char filename[256];
    char *data;
    size_t len;
} http_field;

typedef struct http_request {
    const char *method;
    const char *path;
    void *connection;  /* struct MHD_Connection * */
    const char *body;  /* raw body (NUL-terminated); empty for multipart */
    size_t body_len;
    http_field fields[HTTP_MAX_FIELDS]; /* multipart/form-data parts */
    int nfields;
    const char *params[HTTP_MAX_PARAMS]; /* the {} segments of the route */
    int nparams;
    char param_buf[HTTP_MAX_PARAMS][256];
    const char *user; /* who is asking (NULL on a public route without credentials) */
    int is_admin;
    char user_buf[64];
    char peer[64];    /* the client's address, for rate limits */
} http_request;

typedef struct http_response {
    int status;
    char content_type[64];
    char *body; /* malloc'd */
    size_t len;
} http_response;

typedef void (*http_handler)(void *ctx, const http_request *req, http_response *res);

/* Who may call a route. */
enum { HTTP_USER = 0, HTTP_PUBLIC = 1, HTTP_ADMIN = 2 };

typedef struct http_route {
    const char *method;
    const char *pattern; /* "{}" matches one path segment */
    http_handler handler;
    int access;          /* HTTP_USER (default), HTTP_PUBLIC or HTTP_ADMIN */
} http_route;

/* Identifies the caller from the request's credentials: fills user and
 * is_admin and returns 0, or returns -1 (the request is refused with 401). */
typedef int (*http_authenticator)(void *ctx, const http_request *req, char *user, size_t userlen,
                                  int *is_admin);

const char *http_query(const http_request *req, const char *key);
const char *http_header(const http_request *req, const char *key);
const http_field *http_field_get(const http_request *req, const char *name);

/* Replies; each takes ownership of what it is given. */
void http_reply_json(http_response *res, int status, cJSON *json);
void http_reply_data(http_response *res, int status, const char *content_type,
                     char *data, size_t len);
/* Errors go through api/status.h (api_error, api_reply_error), so their
 * status comes from the one table. */
/* Parses the body as a JSON object (depth-limited); on failure replies 400
 * and returns NULL. */
cJSON *http_body_json(const http_request *req, http_response *res);

/* A reply given later, from any thread: a handler that waits on another
 * thread (an inference batch) calls http_defer and returns without
 * replying; the connection is suspended, holding the request (its body
 * stays valid), until http_pending_reply is called, exactly once. Every
 * deferred request must be answered before the server stops. */
typedef struct http_pending http_pending;
http_pending *http_defer(const http_request *req);
/* Takes ownership of res->body. */
void http_pending_reply(http_pending *p, http_response *res);

typedef struct http_server http_server;

typedef struct http_config {
    const char *address;   /* IPv4 address to bind, e.g. "127.0.0.1" */
    int port;              /* 0: any free port */
    size_t max_body;       /* JSON and form bodies */
    size_t max_upload;     /* multipart/form-data bodies */
    const http_route *routes;
    size_t nroutes;
    void *ctx;             /* passed to every handler */
    http_authenticator authenticate; /* NULL: every route is open */
    const char *tls_cert_pem;  /* both set: HTTPS (GnuTLS) instead of HTTP */
    const char *tls_key_pem;
} http_config;

/* Listens; LOOM_E_INVALID for a bad address, LOOM_E_UNAVAILABLE when it
 * cannot bind. */
loom_error *http_server_start(const http_config *cfg, http_server **out);
int http_server_port(const http_server *s);
void http_server_stop(http_server *s);

#endif
