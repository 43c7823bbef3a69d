/*
 * http/http_wire.h - the HTTP/1.1 text the inference lane (http/http_lane_internal.h)
 * reads and writes itself, where libmicrohttpd does it for the other
 * routes: a reply's status line and headers, and a request target's
 * %-decoding and query arguments, decoded as libmicrohttpd decodes them.
 */
#ifndef LOOM_HTTP_WIRE_H
#define LOOM_HTTP_WIRE_H

#include <stddef.h>

#include "http/cors.h"

typedef struct http_head {
    int status;
    const char *date;         /* the Date header's value */
    const char *content_type; /* NULL or "": application/json */
    const char *disposition;  /* NULL or "": none */
    unsigned long long content_length;
    const cors_headers *cors; /* NULL: none */
    int close;                /* Connection: close */
    int keep_alive;           /* Connection: keep-alive (to an HTTP/1.0 client that asked) */
} http_head;

/* Writes the head, with its blank line; its length, or 0 when it does not
 * fit in cap bytes. */
size_t http_head_write(const http_head *h, char *out, size_t cap);
const char *http_reason_phrase(int status);

/* %XX decoded (and '+' as a space when plus_is_space, as in query
 * arguments) from n bytes of s into out, NUL-terminated; out may be s.
 * 0, or -1 when it does not fit in cap. */
int http_unescape(const char *s, size_t n, char *out, size_t cap, int plus_is_space);
/* Splits "a=1&b=x%20y" in place into decoded keys and values ("" for a key
 * without '='); their count, or -1 when there are more than max. */
int http_split_query(char *query, const char **keys, const char **values, int max);

#endif
