/*
 * http/http.h - the host's HTTP transport: libmicrohttpd underneath, a route
 * table of "METHOD /path/{}/more" patterns on top, JSON replies with cJSON.
 * It knows no service: the routes, the authenticator and the error replier
 * are given to it (api/ gives loom's).
 * A request is admitted from its headers alone (route, method, credentials,
 * Content-Length, an upload slot) before any body byte is read; JSON bodies
 * are collected in memory up to a limit, multipart/form-data file parts are
 * written to a spool file as they arrive. Slow routes run on a work queue
 * while their connection waits, so the server's threads stay free.
 */
#ifndef LOOM_HTTP_H
#define LOOM_HTTP_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "http/cors.h"
#include "util/error.h"

#define HTTP_MAX_PARAMS 4
#define HTTP_MAX_FIELDS 8

typedef struct http_field {
    char name[64];
    char filename[256];
    char *data;  /* a plain part's bytes (NUL-terminated); NULL for a file part */
    char *path;  /* a file part (one with a filename): its spool file, removed
                  * when the request ends; NULL for a plain part */
    size_t len;
} http_field;

typedef struct http_transport http_transport;

typedef struct http_request {
    const char *method;
    const char *path;
    void *connection;  /* the front end's own: struct MHD_Connection * or the lane's */
    const http_transport *transport; /* how to read its headers and reply later */
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

/* Room for a reply's own headers (http_reply_header): a
 * Content-Security-Policy and a Set-Cookie with room to spare. */
#define HTTP_EXTRA_HEADER_BYTES 1536

typedef struct http_response {
    int status;
    char content_type[64];
    char *body; /* malloc'd */
    size_t len;
    char disposition[320]; /* Content-Disposition, when set */
    /* More headers, "name\0value\0" one after the other (libmicrohttpd's
     * front end sends them; the inference lane's replies carry none). */
    char extra_headers[HTTP_EXTRA_HEADER_BYTES];
    size_t extra_len;
} http_response;

typedef void (*http_handler)(void *ctx, const http_request *req, http_response *res);

/* Who may call a route. */
enum { HTTP_USER = 0, HTTP_PUBLIC = 1, HTTP_ADMIN = 2 };

typedef struct http_route {
    const char *method;
    const char *pattern; /* "{}" matches one path segment */
    http_handler handler;
    int access;          /* HTTP_USER (default), HTTP_PUBLIC or HTTP_ADMIN, with
                          * | HTTP_SLOW for a route that runs on the work queue,
                          * not a server thread: one that does slow work
                          * (unpacking, removing folders) or waits on a lock
                          * that slow work holds */
} http_route;

enum { HTTP_SLOW = 0x100, HTTP_ACCESS_MASK = 0xff };

/* Identifies the caller from the request's credentials: fills user and
 * is_admin and returns 0, or returns -1; a route that needs a user is then
 * refused with *why when the authenticator set it (e.g. rate limited),
 * else with 401. */
typedef int (*http_authenticator)(void *ctx, const http_request *req, char *user, size_t userlen,
                                  int *is_admin, loom_error **why);

const char *http_query(const http_request *req, const char *key);
const char *http_header(const http_request *req, const char *key);
const http_field *http_field_get(const http_request *req, const char *name);
/* A field's bytes whether held in memory or spooled: a malloc'd,
 * NUL-terminated copy of at most `max` bytes, or NULL when larger (or out of
 * memory). */
char *http_field_load(const http_field *f, size_t max);

/* Replies; each takes ownership of what it is given. */
void http_reply_json(http_response *res, int status, cJSON *json);
void http_reply_data(http_response *res, int status, const char *content_type,
                     char *data, size_t len);
/* Adds a header to the reply: 0, or -1 when it does not fit in
 * HTTP_EXTRA_HEADER_BYTES (nothing is added then). */
int http_reply_header(http_response *res, const char *name, const char *value);
/* Errors are replied by the routes' layer (its code-to-status table,
 * http_config.reply_error), the transport's own refusals too. */
typedef void (*http_error_replier)(http_response *res, loom_error *err);

/* A reply given later, from any thread: a handler that waits on another
 * thread (an inference batch) calls http_defer and returns without
 * replying; the connection is suspended, holding the request (its body
 * stays valid), until http_pending_reply is called, exactly once. Every
 * deferred request must be answered before the server stops. */
typedef struct http_pending http_pending;
http_pending *http_defer(const http_request *req);
/* Takes ownership of res->body. */
void http_pending_reply(http_pending *p, http_response *res);

/* A reply streamed for as long as the client stays (Server-Sent Events):
 * a handler calls http_stream_open and replies 200 with its content type
 * (any body is dropped); the response then carries what http_stream_send
 * queues, from any thread, and its connection waits suspended (no server
 * thread, no idle timeout) while there is nothing to send. Only
 * libmicrohttpd's connections stream (the lane's give NULL). The stream
 * ends when the client goes, when the server stops, or when more than
 * HTTP_STREAM_MAX_BUFFER bytes wait unread. */
#define HTTP_STREAM_MAX_BUFFER (1u << 20)
typedef struct http_stream http_stream;
http_stream *http_stream_open(const http_request *req);
/* Queues len bytes: 0, or -1 once the stream has ended (nothing queued). */
int http_stream_send(http_stream *s, const char *data, size_t len);
/* Ends the stream: what is queued is sent, then the reply ends. */
void http_stream_end(http_stream *s);
/* 1 while the stream goes on; 0 once it ended (its client closed the
 * connection, the server stops, or too much waited). */
int http_stream_alive(http_stream *s);
/* The route's hold, given up once (after its last send). */
void http_stream_release(http_stream *s);

/* What a front end gives the routes for a request: libmicrohttpd's
 * connections (http/http.c) and the inference lane's (http/http_lane.c). */
struct http_transport {
    const char *(*header)(const http_request *req, const char *name);
    const char *(*query)(const http_request *req, const char *key);
    http_pending *(*defer)(const http_request *req);
};
/* Kept by the front end inside its request; reply hands the response over. */
struct http_pending {
    void (*reply)(http_pending *p, http_response *res);
};

typedef struct http_server http_server;

/* The limits that keep the server answering; 0 in any field: its default. */
typedef struct http_limits {
    unsigned max_connections;        /* open connections in all */
    unsigned max_connections_per_ip; /* from one client address */
    unsigned idle_timeout_s;         /* a connection silent this long is closed */
    unsigned max_uploads;            /* multipart uploads in progress, in all */
    unsigned max_uploads_per_user;   /* ... by one user */
    unsigned slow_threads;           /* threads of the work queue for slow routes */
    unsigned slow_queue;             /* slow requests waiting for them */
    unsigned header_bytes;           /* each connection's buffer: the request's
                                      * headers, in all, fit in it with about
                                      * 900 bytes to spare (else 431) */
    unsigned header_timeout_s;       /* a request's headers complete within this
                                      * from its first byte (else 408); over
                                      * HTTPS, the first request's from the
                                      * accept (else the connection closes) */
} http_limits;

#define HTTP_DEFAULT_MAX_CONNECTIONS 1024
#define HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP 128
#define HTTP_DEFAULT_IDLE_TIMEOUT_S 15
#define HTTP_DEFAULT_HEADER_TIMEOUT_S 10
/* How long http_server_stop waits for libmicrohttpd to stop. */
#define HTTP_STOP_DEADLINE_S 5
#define HTTP_DEFAULT_MAX_UPLOADS 8
#define HTTP_DEFAULT_MAX_UPLOADS_PER_USER 2
#define HTTP_DEFAULT_SLOW_THREADS 8
#define HTTP_DEFAULT_SLOW_QUEUE 256
/* Small: libmicrohttpd clears a connection's buffer for every request on
 * it, and at 32 KiB that was a tenth of a small request's time. */
#define HTTP_DEFAULT_HEADER_BYTES 8192
#define HTTP_MIN_HEADER_BYTES 4096

/* The limits with every 0 replaced by its default. */
http_limits http_limits_resolve(const http_limits *given);

typedef struct http_config {
    const char *address;   /* IPv4 address to bind, e.g. "127.0.0.1" */
    int port;              /* 0: any free port */
    size_t max_body;       /* JSON and form bodies, and a multipart body's plain parts */
    size_t max_upload;     /* multipart/form-data bodies */
    const char *spool_dir; /* where file parts are written (must exist) */
    http_limits limits;
    const http_route *routes;
    size_t nroutes;
    void *ctx;             /* passed to every handler */
    http_authenticator authenticate; /* NULL: every route is open */
    http_error_replier reply_error;  /* required: replies a loom_error (and frees it) */
    const char *tls_cert_pem;  /* both set: HTTPS (GnuTLS, in the lane) instead of HTTP */
    const char *tls_key_pem;
    const cors_policy *cors;   /* origins browsers may call from; NULL: none */
    /* Requests starting with one of these ("POST /dlim/v1/inference/"; a
     * NULL-terminated list, each of at most HTTP_LANE_PREFIX_MAX bytes) go
     * through the lane (http/http_lane_internal.h); NULL: none (over HTTPS
     * the lane still terminates TLS and relays every request). Every route
     * a request under them reaches must never block: its handler runs on
     * the lane's loops. */
    const char *const *lane_prefixes;
    unsigned lane_threads;     /* 0: HTTP_DEFAULT_LANE_THREADS */
} http_config;

#define HTTP_DEFAULT_LANE_THREADS 2
#define HTTP_LANE_PREFIX_MAX 64

/* Listens; LOOM_E_INVALID for a bad address, LOOM_E_UNAVAILABLE when it
 * cannot bind. */
loom_error *http_server_start(const http_config *cfg, http_server **out);
int http_server_port(const http_server *s);
void http_server_stop(http_server *s);

#endif
