/* http/lane_request.c - see lane_request.h. */
#include "http/lane_request.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_wire.h"

void lane_request_init(lane_request *r, size_t header_limit, size_t max_body)
{
    memset(r, 0, sizeof *r);
    r->header_limit = header_limit;
    r->max_body = max_body;
    lane_request_reset(r, 0);
}

void lane_request_free(lane_request *r)
{
    free(r->in);
    r->in = NULL;
    r->in_len = r->in_cap = 0;
}

void lane_request_reset(lane_request *r, size_t at)
{
    http_parser_init(&r->parser, HTTP_REQUEST);
    r->parser.data = r;
    r->req_at = r->parsed = r->held_at = at;
    r->holding = 0;
    r->last_was_value = r->headers_done = r->message_done = 0;
    r->too_large = r->expects_continue = 0;
    r->nheaders = 0;
    r->url = r->body = (lane_span){0, 0};
    r->nquery = 0;
}

/* ---- http-parser callbacks -------------------------------------------- */

/* Appends a piece to a span; a piece not right after it (a folded header
 * line, a chunk after its chunk header) is moved down to join it, which is
 * safe since the parser never looks back. */
static void span_add(lane_request *r, lane_span *s, const char *at, size_t n)
{
    uint32_t off = (uint32_t)(at - r->in);
    if (s->len == 0) {
        s->at = off;
    } else if (off != s->at + s->len) {
        memmove(r->in + s->at + s->len, at, n);
    }
    s->len += (uint32_t)n;
}

static int past_header_limit(lane_request *r, const char *at, size_t n)
{
    if ((size_t)(at - r->in) - r->req_at + n <= r->header_limit)
        return 0;
    r->too_large = 1;
    return 1;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    lane_request *r = p->data;
    if (past_header_limit(r, at, n))
        return 1;
    span_add(r, &r->url, at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    lane_request *r = p->data;
    if (past_header_limit(r, at, n))
        return 1;
    if (r->last_was_value || r->nheaders == 0) {
        if (r->nheaders == LANE_MAX_HEADERS) {
            r->too_large = 1;
            return 1;
        }
        r->name[r->nheaders] = r->value[r->nheaders] = (lane_span){0, 0};
        r->nheaders++;
        r->last_was_value = 0;
    }
    span_add(r, &r->name[r->nheaders - 1], at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    lane_request *r = p->data;
    if (r->nheaders == 0 || past_header_limit(r, at, n))
        return 1;
    r->last_was_value = 1;
    span_add(r, &r->value[r->nheaders - 1], at, n);
    return 0;
}

/* A header value's length without its trailing blanks (not part of it). */
static uint32_t value_len(const lane_request *r, lane_span v)
{
    uint32_t n = v.len;
    while (n && (r->in[v.at + n - 1] == ' ' || r->in[v.at + n - 1] == '\t'))
        n--;
    return n;
}

static int span_is(const lane_request *r, lane_span s, const char *text)
{
    size_t n = strlen(text);
    return s.len == n && strncasecmp(r->in + s.at, text, n) == 0;
}

static int on_headers_complete(http_parser *p)
{
    lane_request *r = p->data;
    r->headers_done = 1;
    if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX && p->content_length > r->max_body) {
        r->too_large = 1;
        return -1; /* 1 here would mean "no body follows", not an error */
    }
    int body_follows = (p->flags & F_CHUNKED) || (p->content_length && p->content_length != ULLONG_MAX);
    if (body_follows && p->http_major == 1 && p->http_minor >= 1)
        for (int i = 0; i < r->nheaders; i++)
            if (span_is(r, r->name[i], "Expect") && span_is(r, r->value[i], "100-continue"))
                r->expects_continue = 1;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    lane_request *r = p->data;
    if (r->body.len + n > r->max_body) {
        r->too_large = 1;
        return 1;
    }
    span_add(r, &r->body, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    lane_request *r = p->data;
    r->message_done = 1;
    http_parser_pause(p, 1); /* one request at a time */
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- parsing and the buffer --------------------------------------------- */

lane_parse lane_request_parse(lane_request *r)
{
    size_t n = http_parser_execute(&r->parser, &parser_settings, r->in + r->parsed, r->in_len - r->parsed);
    r->parsed += n;
    if (r->message_done) {
        http_parser_pause(&r->parser, 0);
        return LANE_PARSE_DONE;
    }
    if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK) {
        if (r->too_large)
            return r->headers_done ? LANE_PARSE_BODY_OVER : LANE_PARSE_HEADERS_OVER;
        return LANE_PARSE_MALFORMED;
    }
    if (!r->headers_done && r->parsed - r->req_at > r->header_limit)
        return LANE_PARSE_HEADERS_OVER;
    return LANE_PARSE_MORE;
}

const char *lane_request_error(const lane_request *r)
{
    return http_errno_description(HTTP_PARSER_ERRNO(&r->parser));
}

static void shift_span(lane_span *s, size_t by)
{
    if (s->len)
        s->at -= (uint32_t)by;
}

int lane_request_make_room(lane_request *r)
{
    if (r->req_at) {
        size_t by = r->req_at;
        memmove(r->in, r->in + by, r->in_len - by);
        r->in_len -= by;
        r->parsed -= by;
        r->req_at = r->held_at = 0;
        shift_span(&r->url, by);
        shift_span(&r->body, by);
        for (int i = 0; i < r->nheaders; i++) {
            shift_span(&r->name[i], by);
            shift_span(&r->value[i], by);
        }
        return 0;
    }
    /* A chunked body's data was moved down to join the body as it came, so
     * what lies between the body's end and what is parsed is framing read
     * already: its room is taken back (it does not count against the
     * limit). Nothing is moved: this is asked for when all is parsed. */
    size_t body_end = (size_t)r->body.at + r->body.len;
    if (r->body.len && body_end < r->parsed) {
        memmove(r->in + body_end, r->in + r->parsed, r->in_len - r->parsed);
        r->in_len -= r->parsed - body_end;
        r->parsed = body_end;
        return 0;
    }
    /* +2: the byte kept for the body's NUL, and one to see a request end */
    size_t most = r->header_limit + r->max_body + 2;
    if (r->in_cap >= most)
        return -1;
    size_t cap = r->in_cap ? r->in_cap * 2 : 4096;
    if (cap > most)
        cap = most;
    char *grown = realloc(r->in, cap);
    if (!grown)
        return -1;
    r->in = grown;
    r->in_cap = cap;
    return 0;
}

void lane_request_answered(lane_request *r)
{
    if (r->holding) {
        r->in[r->held_at] = r->held;
        r->holding = 0;
    }
    if (r->parsed > r->in_cap / 2) {
        memmove(r->in, r->in + r->parsed, r->in_len - r->parsed);
        r->in_len -= r->parsed;
        r->req_at = r->parsed = 0;
    }
}

/* ---- the request, as the routes see it ---------------------------------- */

/* Ends every captured text with a NUL, in place: the bytes after each (':',
 * CR, a space) were taken by the parser already. */
const char *lane_request_finish(lane_request *r)
{
    for (int i = 0; i < r->nheaders; i++) {
        r->in[r->name[i].at + r->name[i].len] = 0;
        r->value[i].len = value_len(r, r->value[i]);
        if (r->value[i].len == 0)
            r->value[i].at = r->name[i].at + r->name[i].len; /* the NUL just written */
        else
            r->in[r->value[i].at + r->value[i].len] = 0;
    }
    const char *url = r->in + r->url.at;
    size_t n = r->url.len;
    const char *q = memchr(url, '?', n);
    size_t path_len = q ? (size_t)(q - url) : n;
    if (q) {
        size_t qlen = n - path_len - 1;
        if (qlen >= sizeof r->query_buf)
            return "query: longer than 1023 bytes";
        memcpy(r->query_buf, q + 1, qlen);
        r->query_buf[qlen] = 0;
        r->nquery = http_split_query(r->query_buf, r->query_key, r->query_value, LANE_MAX_QUERY);
        if (r->nquery < 0)
            return "query: more than 16 arguments";
    }
    if (http_unescape(url, path_len, r->path, sizeof r->path, 0) != 0)
        return "path: longer than 1023 bytes";
    /* the body is NUL-terminated for the routes; the byte after it may be
     * a pipelined request's first, held aside until this one is answered */
    r->held_at = r->body.len ? r->body.at + r->body.len : r->parsed;
    r->held = r->in[r->held_at];
    r->holding = 1;
    r->in[r->held_at] = 0;
    return NULL;
}

const char *lane_request_header(const lane_request *r, const char *name)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcasecmp(r->in + r->name[i].at, name) == 0)
            return r->in + r->value[i].at;
    return NULL;
}

const char *lane_request_query(const lane_request *r, const char *key)
{
    for (int i = 0; i < r->nquery; i++)
        if (strcmp(r->query_key[i], key) == 0)
            return r->query_value[i];
    return NULL;
}

const char *lane_request_body(const lane_request *r)
{
    return r->in + (r->body.len ? r->body.at : r->parsed);
}

const char *lane_request_header_copy(const lane_request *r, const char *name, char *out, size_t cap)
{
    for (int i = 0; i < r->nheaders; i++)
        if (span_is(r, r->name[i], name)) {
            size_t n = value_len(r, r->value[i]);
            if (n >= cap)
                return NULL;
            memcpy(out, r->in + r->value[i].at, n);
            out[n] = 0;
            return out;
        }
    return NULL;
}

lane_match lane_prefix_match(const char *const *prefixes, const char *bytes, size_t n)
{
    if (n == 0) /* nothing yet: any prefix may come (and bytes may be NULL) */
        return *prefixes ? LANE_MATCH_PARTIAL : LANE_MATCH_NONE;
    lane_match best = LANE_MATCH_NONE;
    for (const char *const *p = prefixes; *p; p++) {
        size_t len = strlen(*p);
        if (memcmp(bytes, *p, n < len ? n : len) != 0)
            continue;
        if (n >= len)
            return LANE_MATCH_FULL;
        best = LANE_MATCH_PARTIAL;
    }
    return best;
}

lane_match lane_request_match(const lane_request *r, const char *const *prefixes, int partial)
{
    /* a whole request is compared alone; a partial one with what came after */
    size_t have = (partial ? r->in_len : r->parsed) - r->req_at;
    lane_match m = lane_prefix_match(prefixes, r->in + r->req_at, have);
    return !partial && m == LANE_MATCH_PARTIAL ? LANE_MATCH_NONE : m;
}
