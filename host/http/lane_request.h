/*
 * http/lane_request.h - one HTTP request as the inference lane
 * (http/http_lane_internal.h) reads it: a connection's input buffer, parsed
 * by http-parser into spans (the target, up to LANE_MAX_HEADERS headers,
 * the body), then the texts a route sees (NUL-terminated headers, the
 * %-decoded path, the query arguments).
 *
 * The buffer holds the current request from req_at and any requests
 * pipelined after it, in place; every position is an offset into it, so
 * the buffer may grow or move. Limits: the request line and headers within
 * header_limit bytes, the body within max_body (chunked or not).
 *
 * Not thread-safe: one connection's loop uses it.
 */
#ifndef LOOM_HTTP_LANE_REQUEST_H
#define LOOM_HTTP_LANE_REQUEST_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#define LANE_MAX_HEADERS 64
#define LANE_MAX_QUERY 16 /* the refusals' texts name these two */
#define LANE_PATH_MAX 1024

typedef struct lane_span {
    uint32_t at, len; /* offsets into the input */
} lane_span;

typedef struct lane_request {
    http_parser parser;
    char *in; /* the input: the current request from req_at */
    size_t in_len, in_cap, req_at, parsed;
    size_t header_limit, max_body;
    size_t held_at; /* the byte the body's NUL replaced (a pipelined request's first) */
    char held;
    int holding;
    int last_was_value, headers_done, message_done;
    int too_large;        /* why the parser was stopped */
    int expects_continue; /* Expect: 100-continue on an HTTP/1.1 request with a body */
    lane_span url, name[LANE_MAX_HEADERS], value[LANE_MAX_HEADERS];
    int nheaders;
    lane_span body;
    char path[LANE_PATH_MAX];
    char query_buf[LANE_PATH_MAX];
    const char *query_key[LANE_MAX_QUERY], *query_value[LANE_MAX_QUERY];
    int nquery;
} lane_request;

typedef enum lane_parse {
    LANE_PARSE_MORE,         /* every byte read is parsed: read more */
    LANE_PARSE_DONE,         /* a whole request (the parser stops at its end) */
    LANE_PARSE_HEADERS_OVER, /* past header_limit or LANE_MAX_HEADERS */
    LANE_PARSE_BODY_OVER,    /* past max_body */
    LANE_PARSE_MALFORMED     /* not HTTP/1.x: lane_request_error says why */
} lane_parse;

void lane_request_init(lane_request *r, size_t header_limit, size_t max_body);
void lane_request_free(lane_request *r);
/* The next request starts at offset `at` of the input. */
void lane_request_reset(lane_request *r, size_t at);

/* Parses what was read since the last call. */
lane_parse lane_request_parse(lane_request *r);
const char *lane_request_error(const lane_request *r);
/* Room for at least one more byte at in + in_len: the current request
 * moved to the buffer's start when answered ones take room (each byte moves
 * at most once: after a move the request starts at 0 until it is answered),
 * or a chunked body's framing read so far given back, else the buffer
 * grown up to what one request may take. -1 when the request is already
 * that long. */
int lane_request_make_room(lane_request *r);

/* A whole request's texts made ready for the routes (headers and body
 * NUL-terminated, the path decoded, the query split): NULL, or what in the
 * request target is past its limit. */
const char *lane_request_finish(lane_request *r);
/* After a request is answered: its byte held aside goes back, and its room
 * is taken back once it is half the buffer (what follows it moves down). */
void lane_request_answered(lane_request *r);

/* After lane_request_finish: a header's value or a query argument, NULL
 * when absent; the body, NUL-terminated. */
const char *lane_request_header(const lane_request *r, const char *name);
const char *lane_request_query(const lane_request *r, const char *key);
const char *lane_request_body(const lane_request *r);
/* At any time: a header's value copied into out (trailing blanks cut), NULL
 * when absent or when it does not fit (a cut value must not match). */
const char *lane_request_header_copy(const lane_request *r, const char *name, char *out, size_t cap);
/* How the first n bytes of a request stand against a NULL-terminated list
 * of prefixes: one of them whole (FULL), or none whole but n bytes that
 * agree with the start of one (PARTIAL: more bytes decide), or none. */
typedef enum lane_match { LANE_MATCH_NONE, LANE_MATCH_PARTIAL, LANE_MATCH_FULL } lane_match;
lane_match lane_prefix_match(const char *const *prefixes, const char *bytes, size_t n);
/* The current request against the prefixes: whole, what was parsed of it
 * (a request parsed to its end is FULL or NONE); partial, every byte read
 * since it began (before it is parsed). */
lane_match lane_request_match(const lane_request *r, const char *const *prefixes, int partial);

#endif
