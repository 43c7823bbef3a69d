/*
 * http/http_stream_internal.h - a streamed reply's life on libmicrohttpd's
 * side (http.c's): made when a handler opens it (http_stream_open), sent
 * through a callback response that suspends its connection while there is
 * nothing to send, and ended for good when the server stops.
 */
#ifndef LOOM_HTTP_STREAM_INTERNAL_H
#define LOOM_HTTP_STREAM_INTERNAL_H

#include <pthread.h>

#include "http/http.h"
#include "http/mhd_dl.h"

/* The server's open streams, so that its stop can end them. */
typedef struct http_stream_set {
    pthread_mutex_t lock;
    http_stream *head;
} http_stream_set;

void http_stream_set_init(http_stream_set *set);
/* Ends every stream (their callbacks report the end) and resumes the
 * suspended ones: a daemon must not stop with a connection suspended. */
void http_stream_set_end_all(http_stream_set *set);
void http_stream_set_destroy(http_stream_set *set);

/* A stream on conn, held twice: by the route (http_stream_release) and the
 * connection (its response, or http_stream_abandon). NULL: out of memory. */
http_stream *http_stream_new(http_stream_set *set, const mhd_api *mhd, struct MHD_Connection *conn);
/* The connection's response for it when the handler replied 200 (the
 * connection's hold goes to it), else NULL (the hold is dropped: the
 * handler's reply is sent as any other). */
struct MHD_Response *http_stream_response(http_stream *s, int status);
/* The handler replied something else: the connection lets go. */
void http_stream_abandon(http_stream *s);

#endif
