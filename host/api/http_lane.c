/* api/http_lane.c - see http_lane_internal.h. */
#include "api/http_lane_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <http_parser.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "api/conn_count.h"
#include "api/cors.h"
#include "api/http_wire.h"
#include "api/json_text.h"
#include "api/status.h"
#include "util/log.h"

#define LANE_MAX_HEADERS 64
/* Of --max-header-bytes, what the lane leaves unused, as libmicrohttpd
 * keeps some of the same buffer for its own bookkeeping (300 to 900 bytes,
 * by the number of headers): the documented bound (about 7 KB at the
 * default) holds whichever path a request takes. */
#define LANE_HEADER_SPARE 1024
#define LANE_MAX_QUERY 16  /* the texts below name these two */
#define LANE_PATH_MAX 1024
#define LANE_EVENTS 64

enum lane_state {
    LANE_NEW,     /* between requests: the next one's first bytes decide */
    LANE_READING, /* a lane request arriving */
    LANE_WAITING, /* its handler deferred the reply */
    LANE_WRITING  /* the reply going out */
};

typedef struct lane_span {
    uint32_t at, len; /* offsets into the connection's input */
} lane_span;

typedef struct lane_loop lane_loop;

typedef struct lane_conn {
    struct lane_conn *prev, *next; /* the loop's connections */
    struct lane_conn *done_next;   /* the loop's queue of replies */
    lane_loop *loop;
    int fd;
    uint32_t ip;
    enum lane_state state;
    int orphaned;   /* closed while its reply was pending: freed when it comes */
    int keep_alive; /* the current request's */
    int peer_closed;
    time_t last_active;
    http_parser parser;
    char *in; /* what was read: the current request from offset 0 */
    size_t in_len, in_cap, parsed;
    char *spill; /* bytes past the current request (pipelined), kept aside */
    size_t spill_len;
    int last_was_value, headers_done, message_done, refused;
    int32_t refusal;  /* a loom status code for a request refused while read */
    lane_span url, name[LANE_MAX_HEADERS], value[LANE_MAX_HEADERS];
    int nheaders;
    lane_span body;
    char path[LANE_PATH_MAX];
    char query_buf[LANE_PATH_MAX];
    const char *query_key[LANE_MAX_QUERY], *query_value[LANE_MAX_QUERY];
    int nquery;
    http_request req;
    http_pending pending;
    http_response reply;
    char head[1024];
    struct iovec iov[2]; /* the reply's head and body; what is left of them */
    int iov_first;       /* the first with bytes left; 2: all written */
} lane_conn;

struct lane_loop {
    http_lane *lane;
    pthread_t thread;
    int epfd, wakefd;
    pthread_mutex_t done_lock;
    lane_conn *done_head, *done_tail;
    lane_conn *conns;
    unsigned nconns;
    time_t now, swept;
};

struct http_lane {
    http_server *srv;
    const http_config *cfg;
    int listen_fd, port;
    const char *prefix;
    size_t prefix_len;
    unsigned nloops;
    lane_loop *loops;
    volatile int stopping;
    conn_count *counts; /* every connection accepted, until it closes */
};

static const http_transport lane_transport;

void http_lane_hold(http_lane *l, uint32_t ip) { conn_count_hold(l->counts, ip); }

void http_lane_release(http_lane *l, uint32_t ip) { conn_count_give_back(l->counts, ip); }

/* ---- connections ---------------------------------------------------- */

static void unlink_conn(lane_conn *c)
{
    lane_loop *lp = c->loop;
    if (c->prev)
        c->prev->next = c->next;
    else
        lp->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    lp->nconns--;
}

static void free_conn(lane_conn *c)
{
    free(c->reply.body);
    free(c->in);
    free(c->spill);
    free(c);
}

/* Closes the socket; a connection whose reply is pending stays allocated
 * (orphaned) until the reply comes. */
static void close_conn(lane_conn *c)
{
    lane_loop *lp = c->loop;
    unlink_conn(c);
    close(c->fd);
    c->fd = -1;
    http_lane_release(lp->lane, c->ip);
    if (c->state == LANE_WAITING)
        c->orphaned = 1;
    else
        free_conn(c);
}

/* Hands the connection to libmicrohttpd, which owns it from now on. */
static void hand_over(lane_conn *c)
{
    lane_loop *lp = c->loop;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = c->ip};
    socklen_t len = sizeof addr;
    getpeername(c->fd, (struct sockaddr *)&addr, &len);
    epoll_ctl(lp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    int fd = c->fd;
    /* counted again when libmicrohttpd has taken it (http_lane_hold) */
    http_lane_release(lp->lane, c->ip);
    unlink_conn(c);
    free_conn(c);
    http_server_adopt(lp->lane->srv, fd, (struct sockaddr *)&addr, sizeof addr);
}

static void reset_request(lane_conn *c)
{
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    c->parsed = 0;
    c->last_was_value = c->headers_done = c->message_done = c->refused = 0;
    c->refusal = 0;
    c->nheaders = 0;
    c->url = c->body = (lane_span){0, 0};
    c->nquery = 0;
    memset(&c->req, 0, offsetof(http_request, fields));
    c->req.nfields = 0;
    c->req.nparams = 0;
    c->req.user = NULL;
    c->req.is_admin = 0;
    c->req.peer[0] = 0;
}

/* ---- http-parser callbacks -------------------------------------------- */

/* Appends a piece to a span; a piece not right after it (a folded header
 * line, a chunk after its chunk header) is moved down to join it, which is
 * safe since the parser never looks back. */
static void span_add(lane_conn *c, lane_span *s, const char *at, size_t n)
{
    uint32_t off = (uint32_t)(at - c->in);
    if (s->len == 0) {
        s->at = off;
    } else if (off != s->at + s->len) {
        memmove(c->in + s->at + s->len, at, n);
    }
    s->len += (uint32_t)n;
}

/* The request line and headers past their limit: refused (431). */
static int past_header_limit(lane_conn *c, const char *at, size_t n)
{
    const http_limits *lim = &c->loop->lane->cfg->limits;
    if ((size_t)(at - c->in) + n <= lim->header_bytes - LANE_HEADER_SPARE)
        return 0;
    c->refusal = LOOM_E_TOO_LARGE;
    return 1;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    lane_conn *c = p->data;
    if (past_header_limit(c, at, n))
        return 1;
    span_add(c, &c->url, at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    lane_conn *c = p->data;
    if (past_header_limit(c, at, n))
        return 1;
    if (c->last_was_value || c->nheaders == 0) {
        if (c->nheaders == LANE_MAX_HEADERS) {
            c->refusal = LOOM_E_TOO_LARGE;
            return 1;
        }
        c->name[c->nheaders] = c->value[c->nheaders] = (lane_span){0, 0};
        c->nheaders++;
        c->last_was_value = 0;
    }
    span_add(c, &c->name[c->nheaders - 1], at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    lane_conn *c = p->data;
    if (c->nheaders == 0 || past_header_limit(c, at, n))
        return 1;
    c->last_was_value = 1;
    span_add(c, &c->value[c->nheaders - 1], at, n);
    return 0;
}

static int span_is(const lane_conn *c, lane_span s, const char *text)
{
    size_t n = strlen(text);
    return s.len == n && strncasecmp(c->in + s.at, text, n) == 0;
}

/* A client that asked to be told before it sends its body (curl does for a
 * body over 1 KiB) is told now; without it, it waits a second first. */
static void continue_if_expected(lane_conn *c)
{
    for (int i = 0; i < c->nheaders; i++)
        if (span_is(c, c->name[i], "Expect") && span_is(c, c->value[i], "100-continue")) {
            static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
            /* a socket with no room for these few bytes has a client that
             * sends anyway once its wait ends */
            ssize_t n = send(c->fd, go_on, sizeof go_on - 1, MSG_NOSIGNAL);
            (void)n;
            return;
        }
}

/* A header's value copied out, NUL-terminated, from the spans alone: also
 * for a request refused before its texts were terminated. NULL when it is
 * absent or does not fit (a cut value must not match anything). */
static const char *header_copy(const lane_conn *c, const char *name, char *out, size_t cap)
{
    for (int i = 0; i < c->nheaders; i++)
        if (span_is(c, c->name[i], name)) {
            size_t n = c->value[i].len;
            const char *v = c->in + c->value[i].at;
            while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
            if (n >= cap)
                return NULL;
            memcpy(out, v, n);
            out[n] = 0;
            return out;
        }
    return NULL;
}

static int on_headers_complete(http_parser *p)
{
    lane_conn *c = p->data;
    c->headers_done = 1;
    size_t limit = c->loop->lane->cfg->max_body;
    if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX && p->content_length > limit) {
        c->refusal = LOOM_E_TOO_LARGE;
        return -1; /* 1 here would mean "no body follows", not an error */
    }
    int body_follows = (p->flags & F_CHUNKED) || (p->content_length && p->content_length != ULLONG_MAX);
    if (body_follows && p->http_major == 1 && p->http_minor >= 1)
        continue_if_expected(c);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    lane_conn *c = p->data;
    if (c->body.len + n > c->loop->lane->cfg->max_body) {
        c->refusal = LOOM_E_TOO_LARGE;
        return 1;
    }
    span_add(c, &c->body, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    lane_conn *c = p->data;
    c->message_done = 1;
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

/* ---- the request, as the routes see it ---------------------------------- */

static const char *lane_header(const http_request *req, const char *name)
{
    const lane_conn *c = req->connection;
    for (int i = 0; i < c->nheaders; i++)
        if (strcasecmp(c->in + c->name[i].at, name) == 0)
            return c->in + c->value[i].at;
    return NULL;
}

static const char *lane_query(const http_request *req, const char *key)
{
    const lane_conn *c = req->connection;
    for (int i = 0; i < c->nquery; i++)
        if (strcmp(c->query_key[i], key) == 0)
            return c->query_value[i];
    return NULL;
}

static http_pending *lane_defer(const http_request *req)
{
    lane_conn *c = req->connection;
    return &c->pending;
}

static const http_transport lane_transport = {lane_header, lane_query, lane_defer};

/* Ends every captured text with a NUL, in place: the bytes after each (':',
 * CR, a space) were taken by the parser already. NULL, or what in the
 * request target is past its limit. */
static const char *terminate_texts(lane_conn *c)
{
    for (int i = 0; i < c->nheaders; i++) {
        c->in[c->name[i].at + c->name[i].len] = 0;
        /* a value's trailing blanks are not part of it */
        while (c->value[i].len && (c->in[c->value[i].at + c->value[i].len - 1] == ' ' ||
                                   c->in[c->value[i].at + c->value[i].len - 1] == '\t'))
            c->value[i].len--;
        if (c->value[i].len == 0)
            c->value[i].at = c->name[i].at + c->name[i].len; /* the NUL just written */
        else
            c->in[c->value[i].at + c->value[i].len] = 0;
    }
    const char *url = c->in + c->url.at;
    size_t n = c->url.len;
    const char *q = memchr(url, '?', n);
    size_t path_len = q ? (size_t)(q - url) : n;
    if (q) {
        size_t qlen = n - path_len - 1;
        if (qlen >= sizeof c->query_buf)
            return "query: longer than 1023 bytes";
        memcpy(c->query_buf, q + 1, qlen);
        c->query_buf[qlen] = 0;
        c->nquery = http_split_query(c->query_buf, c->query_key, c->query_value, LANE_MAX_QUERY);
        if (c->nquery < 0)
            return "query: more than 16 arguments";
    }
    if (http_unescape(url, path_len, c->path, sizeof c->path, 0) != 0)
        return "path: longer than 1023 bytes";
    /* the body is NUL-terminated for the routes: its byte after is free,
     * since bytes past the request were moved aside */
    c->in[c->body.len ? c->body.at + c->body.len : c->parsed] = 0;
    return NULL;
}

/* ---- replies ------------------------------------------------------------- */

/* The reply's head and body, ready for sendmsg. */
static void compose(lane_conn *c)
{
    const http_config *cfg = c->loop->lane->cfg;
    http_response *res = &c->reply;
    if (!res->status)
        api_error(res, LOOM_E_INTERNAL, "handler gave no reply");
    if (res->body && (!res->content_type[0] || strncmp(res->content_type, "application/json", 16) == 0))
        res->body = json_text_repair_utf8(res->body, &res->len);
    cors_headers cors;
    if (cfg->cors) {
        char origin[CORS_ORIGIN_MAX];
        cors_reply_headers(cfg->cors, header_copy(c, "Origin", origin, sizeof origin), &cors);
    }
    http_head head = {
        .status = res->status,
        .date = http_date_now(),
        .content_type = res->content_type,
        .disposition = res->disposition,
        .content_length = res->len,
        .cors = cfg->cors ? &cors : NULL,
        .close = !c->keep_alive,
        .keep_alive = c->keep_alive && c->parser.http_minor == 0,
    };
    size_t n = http_head_write(&head, c->head, sizeof c->head);
    if (n == 0) { /* longer than any head the routes make: still an answer */
        static const char failed[] =
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        memcpy(c->head, failed, sizeof failed - 1);
        n = sizeof failed - 1;
        c->keep_alive = 0;
        res->len = 0;
    }
    c->iov[0] = (struct iovec){c->head, n};
    c->iov[1] = (struct iovec){res->body, res->len};
    c->iov_first = 0;
}

static void process_input(lane_conn *c);

static void finish_reply(lane_conn *c)
{
    free(c->reply.body);
    memset(&c->reply, 0, sizeof c->reply);
    if (!c->keep_alive || c->peer_closed) {
        close_conn(c);
        return;
    }
    /* the next request: what was read past this one, first */
    c->in_len = 0;
    if (c->spill_len) {
        memcpy(c->in, c->spill, c->spill_len);
        c->in_len = c->spill_len;
        free(c->spill);
        c->spill = NULL;
        c->spill_len = 0;
    }
    reset_request(c);
    c->state = LANE_NEW;
    process_input(c);
}

/* Writes what is left of the reply: 1 when it all went, 0 to wait for
 * room, -1 when the connection failed (and was closed). */
static int write_reply(lane_conn *c)
{
    while (c->iov_first < 2) {
        if (c->iov[c->iov_first].iov_len == 0) {
            c->iov_first++;
            continue;
        }
        /* sendmsg for MSG_NOSIGNAL: a peer gone is an error here, not SIGPIPE */
        struct msghdr msg = {.msg_iov = c->iov + c->iov_first,
                             .msg_iovlen = (size_t)(2 - c->iov_first)};
        ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            close_conn(c);
            return -1;
        }
        c->last_active = c->loop->now;
        for (size_t left = (size_t)n; left && c->iov_first < 2;) {
            struct iovec *v = &c->iov[c->iov_first];
            size_t take = left < v->iov_len ? left : v->iov_len;
            v->iov_base = (char *)v->iov_base + take;
            v->iov_len -= take;
            left -= take;
            if (v->iov_len == 0)
                c->iov_first++;
        }
    }
    return 1;
}

static void send_reply(lane_conn *c)
{
    compose(c);
    c->state = LANE_WRITING;
    if (write_reply(c) == 1)
        finish_reply(c);
}

/* A refusal while reading, made on the loop itself; the connection closes
 * after it, since the rest of what was sent is not read. */
static void reply_now(lane_conn *c, int32_t code, const char *what)
{
    memset(&c->reply, 0, sizeof c->reply);
    api_error(&c->reply, code, "%s", what);
    c->keep_alive = 0;
    c->state = LANE_WAITING;
    send_reply(c);
}

/* 431, which no loom code maps to: libmicrohttpd's refusal of the same. */
static void refuse_headers(lane_conn *c)
{
    memset(&c->reply, 0, sizeof c->reply);
    char msg[160];
    snprintf(msg, sizeof msg,
             "request headers: more than %d of them or %u bytes (loom serve --max-header-bytes %u)",
             LANE_MAX_HEADERS, c->loop->lane->cfg->limits.header_bytes - LANE_HEADER_SPARE,
             c->loop->lane->cfg->limits.header_bytes);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "status", 431);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    http_reply_data(&c->reply, 431, "application/json", text, text ? strlen(text) : 0);
    c->keep_alive = 0;
    c->state = LANE_WAITING;
    send_reply(c);
}

/* From any thread: queued for the connection's loop, which is woken only
 * when the queue was empty (once per batch of replies). */
static void lane_reply(http_pending *p, http_response *res)
{
    lane_conn *c = (lane_conn *)((char *)p - offsetof(lane_conn, pending));
    lane_loop *lp = c->loop;
    c->reply = *res;
    res->body = NULL;
    c->done_next = NULL;
    pthread_mutex_lock(&lp->done_lock);
    int was_empty = lp->done_head == NULL;
    if (lp->done_tail)
        lp->done_tail->done_next = c;
    else
        lp->done_head = c;
    lp->done_tail = c;
    pthread_mutex_unlock(&lp->done_lock);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t w = write(lp->wakefd, &one, sizeof one);
        (void)w; /* a full counter still wakes the loop */
    }
}

static void take_replies(lane_loop *lp)
{
    pthread_mutex_lock(&lp->done_lock);
    lane_conn *c = lp->done_head;
    lp->done_head = lp->done_tail = NULL;
    pthread_mutex_unlock(&lp->done_lock);
    while (c) {
        lane_conn *next = c->done_next;
        if (c->orphaned)
            free_conn(c);
        else
            send_reply(c);
        c = next;
    }
}

/* ---- requests ------------------------------------------------------------ */

static void dispatch(lane_conn *c)
{
    http_lane *l = c->loop->lane;
    c->keep_alive = http_should_keep_alive(&c->parser) && !c->peer_closed;
    /* bytes past this request wait aside, so its body stays in place */
    if (c->in_len > c->parsed) {
        c->spill_len = c->in_len - c->parsed;
        c->spill = malloc(c->spill_len);
        if (!c->spill) {
            c->spill_len = 0;
            c->keep_alive = 0;
        } else {
            memcpy(c->spill, c->in + c->parsed, c->spill_len);
        }
        c->in_len = c->parsed;
    }
    c->state = LANE_WAITING;
    memset(&c->reply, 0, sizeof c->reply);
    const char *too_long = terminate_texts(c);
    if (too_long) {
        api_error(&c->reply, LOOM_E_INVALID, "%s", too_long);
        send_reply(c);
        return;
    }
    http_request *req = &c->req;
    req->method = http_method_str((enum http_method)c->parser.method);
    req->path = c->path;
    req->connection = c;
    req->transport = &lane_transport;
    req->body = c->in + (c->body.len ? c->body.at : c->parsed);
    req->body_len = c->body.len;
    http_format_ipv4((struct in_addr){.s_addr = c->ip}, req->peer);
    const http_route *route = NULL;
    http_response now = {0};
    if (http_server_admit(l->srv, req, &now, &route) != 0) {
        c->reply = now;
        send_reply(c);
        return;
    }
    c->pending.reply = lane_reply;
    route->handler(l->cfg->ctx, req, &now);
    if (now.status) { /* answered at once, without deferring */
        c->reply = now;
        send_reply(c);
    }
    /* else: lane_reply queues the reply for this loop */
}

static int grow_input(lane_conn *c)
{
    const http_config *cfg = c->loop->lane->cfg;
    size_t most = (size_t)cfg->limits.header_bytes + cfg->max_body + 2;
    if (c->in_cap >= most)
        return -1;
    size_t cap = c->in_cap ? c->in_cap * 2 : 4096;
    if (cap > most)
        cap = most;
    char *grown = realloc(c->in, cap);
    if (!grown)
        return -1;
    c->in = grown;
    c->in_cap = cap;
    return 0;
}

/* Feeds the parser what was read; 1 when a request is complete (and
 * dispatched), 0 for more input, -1 when the connection was answered with
 * a refusal or closed. */
static int parse_input(lane_conn *c)
{
    size_t n = http_parser_execute(&c->parser, &parser_settings, c->in + c->parsed,
                                   c->in_len - c->parsed);
    c->parsed += n;
    if (c->message_done) {
        http_parser_pause(&c->parser, 0);
        dispatch(c);
        return 1;
    }
    enum http_errno err = HTTP_PARSER_ERRNO(&c->parser);
    if (err != HPE_OK) {
        if (c->refusal == LOOM_E_TOO_LARGE && !c->headers_done) {
            refuse_headers(c);
        } else if (c->refusal == LOOM_E_TOO_LARGE) {
            char msg[128];
            snprintf(msg, sizeof msg, "request body exceeds the limit of %zu bytes",
                     c->loop->lane->cfg->max_body);
            reply_now(c, LOOM_E_TOO_LARGE, msg);
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "malformed HTTP request: %s", http_errno_description(err));
            reply_now(c, LOOM_E_INVALID, msg);
        }
        return -1;
    }
    if (!c->headers_done && c->parsed > c->loop->lane->cfg->limits.header_bytes - LANE_HEADER_SPARE) {
        refuse_headers(c);
        return -1;
    }
    return 0;
}

/* Reads and parses until the socket is drained or a request is complete. */
static void read_request(lane_conn *c)
{
    for (;;) {
        if (c->parsed < c->in_len) {
            int r = parse_input(c);
            if (r != 0)
                return;
        }
        if (c->in_len + 1 >= c->in_cap && grow_input(c) != 0) {
            if (!c->headers_done) {
                refuse_headers(c);
            } else {
                char msg[128];
                snprintf(msg, sizeof msg, "request body exceeds the limit of %zu bytes",
                         c->loop->lane->cfg->max_body);
                reply_now(c, LOOM_E_TOO_LARGE, msg);
            }
            return;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            c->last_active = c->loop->now;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        close_conn(c); /* closed mid-request, or an error */
        return;
    }
}

/* Between requests: the first bytes (peeked, or already read past the last
 * request) decide whose the connection is. */
static void process_input(lane_conn *c)
{
    http_lane *l = c->loop->lane;
    if (c->state != LANE_NEW) {
        if (c->state == LANE_READING)
            read_request(c);
        return;
    }
    if (c->in_len) { /* pipelined after a lane request */
        size_t n = c->in_len < l->prefix_len ? c->in_len : l->prefix_len;
        if (memcmp(c->in, l->prefix, n) != 0) {
            /* read already, so it cannot go to libmicrohttpd */
            reply_now(c, LOOM_E_INVALID,
                      "a pipelined request that is not an inference call: send it on its own "
                      "connection or after this one's reply");
            return;
        }
        c->state = LANE_READING;
        read_request(c);
        return;
    }
    char first[64];
    size_t want = l->prefix_len < sizeof first ? l->prefix_len : sizeof first;
    ssize_t n;
    do
        n = recv(c->fd, first, want, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        close_conn(c);
        return;
    }
    c->last_active = c->loop->now;
    if (memcmp(first, l->prefix, (size_t)n) != 0) {
        hand_over(c);
        return;
    }
    if ((size_t)n < want) {
        if (c->peer_closed) /* nothing more comes: not a request */
            close_conn(c);
        return; /* the rest of the prefix comes with the next bytes */
    }
    c->state = LANE_READING;
    read_request(c);
}

/* ---- the loops ----------------------------------------------------------- */

static void accept_all(lane_loop *lp)
{
    http_lane *l = lp->lane;
    for (;;) {
        struct sockaddr_in addr;
        socklen_t len = sizeof addr;
        int fd = accept4(l->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN, or out of descriptors: the next connection retries */
        }
        uint32_t ip = addr.sin_addr.s_addr;
        if (!conn_count_take(l->counts, ip)) {
            close(fd); /* over --max-connections or --max-connections-per-ip */
            continue;
        }
        lane_conn *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET};
        if (!c) {
            close(fd);
            http_lane_release(l, ip);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        c->ip = ip;
        c->loop = lp;
        c->state = LANE_NEW;
        c->last_active = lp->now;
        reset_request(c);
        ev.data.ptr = c;
        if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            close(fd);
            http_lane_release(l, ip);
            free(c);
            continue;
        }
        c->next = lp->conns;
        if (lp->conns)
            lp->conns->prev = c;
        lp->conns = c;
        lp->nconns++;
    }
}

static void on_event(lane_conn *c, uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP)) {
        close_conn(c);
        return;
    }
    if (events & EPOLLRDHUP)
        c->peer_closed = 1;
    if ((events & EPOLLOUT) && c->state == LANE_WRITING) {
        if (write_reply(c) != 1)
            return;
        finish_reply(c);
        return;
    }
    if (events & EPOLLIN)
        process_input(c);
}

/* Connections silent past the idle timeout are closed; one waiting for
 * its reply is not (the router times requests out). */
static void sweep_idle(lane_loop *lp)
{
    unsigned limit = lp->lane->cfg->limits.idle_timeout_s;
    lp->swept = lp->now;
    for (lane_conn *c = lp->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != LANE_WAITING && lp->now - c->last_active > (time_t)limit)
            close_conn(c);
    }
}

static void *loop_main(void *arg)
{
    lane_loop *lp = arg;
    http_lane *l = lp->lane;
    struct epoll_event events[LANE_EVENTS];
    while (!l->stopping) {
        int n = epoll_wait(lp->epfd, events, LANE_EVENTS, lp->nconns ? 1000 : -1);
        lp->now = time(NULL);
        for (int i = 0; i < n; i++) {
            void *ptr = events[i].data.ptr;
            if (ptr == &l->listen_fd) {
                accept_all(lp);
            } else if (ptr == lp) {
                uint64_t count;
                ssize_t r = read(lp->wakefd, &count, sizeof count);
                (void)r;
            } else {
                on_event(ptr, events[i].events);
            }
        }
        take_replies(lp);
        if (lp->now != lp->swept)
            sweep_idle(lp);
    }
    return NULL;
}

/* ---- start and stop ------------------------------------------------------ */

loom_error *http_lane_start(http_server *srv, const struct sockaddr_in *addr, unsigned threads,
                            http_lane **out)
{
    *out = NULL;
    const http_config *cfg = http_server_config(srv);
    http_lane *l = calloc(1, sizeof *l);
    if (!l)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    l->srv = srv;
    l->cfg = cfg;
    l->prefix = cfg->lane_prefix;
    l->prefix_len = strlen(cfg->lane_prefix);
    l->listen_fd = -1;
    l->counts = conn_count_create(cfg->limits.max_connections, cfg->limits.max_connections_per_ip);
    l->loops = calloc(threads, sizeof *l->loops);
    if (!l->counts || !l->loops) {
        http_lane_stop(l);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    l->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (l->listen_fd < 0 || setsockopt(l->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(l->listen_fd, (const struct sockaddr *)addr, sizeof *addr) != 0 ||
        listen(l->listen_fd, SOMAXCONN) != 0) {
        int err = errno;
        http_lane_stop(l);
        return loom_err(LOOM_E_UNAVAILABLE, "%s", strerror(err));
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    getsockname(l->listen_fd, (struct sockaddr *)&bound, &blen);
    l->port = ntohs(bound.sin_port);
    for (unsigned i = 0; i < threads; i++) {
        lane_loop *lp = &l->loops[i];
        lp->lane = l;
        lp->epfd = epoll_create1(EPOLL_CLOEXEC);
        lp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        pthread_mutex_init(&lp->done_lock, NULL);
        struct epoll_event listen_ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &l->listen_fd};
        struct epoll_event wake_ev = {.events = EPOLLIN, .data.ptr = lp};
        if (lp->epfd < 0 || lp->wakefd < 0 ||
            epoll_ctl(lp->epfd, EPOLL_CTL_ADD, l->listen_fd, &listen_ev) != 0 ||
            epoll_ctl(lp->epfd, EPOLL_CTL_ADD, lp->wakefd, &wake_ev) != 0 ||
            pthread_create(&lp->thread, NULL, loop_main, lp) != 0) {
            http_lane_stop(l);
            return loom_err(LOOM_E_INTERNAL, "the HTTP lane's loop %u cannot start: %s", i,
                            strerror(errno));
        }
        l->nloops = i + 1;
    }
    *out = l;
    return NULL;
}

int http_lane_port(const http_lane *l) { return l->port; }

void http_lane_stop(http_lane *l)
{
    if (!l)
        return;
    l->stopping = 1;
    for (unsigned i = 0; i < l->nloops; i++) {
        uint64_t one = 1;
        ssize_t w = write(l->loops[i].wakefd, &one, sizeof one);
        (void)w;
        pthread_join(l->loops[i].thread, NULL);
    }
    int leaked = 0;
    for (unsigned i = 0; l->loops && i < l->nloops; i++) {
        lane_loop *lp = &l->loops[i];
        take_replies(lp);
        while (lp->conns) {
            lane_conn *c = lp->conns;
            leaked |= c->state == LANE_WAITING;
            close_conn(c);
        }
    }
    if (l->listen_fd >= 0)
        close(l->listen_fd);
    if (leaked) {
        /* a reply may still come for them: they and their loops stay */
        log_warn("the HTTP lane stopped with requests still waiting for their reply");
        return;
    }
    for (unsigned i = 0; l->loops && i < l->nloops; i++) {
        close(l->loops[i].epfd);
        close(l->loops[i].wakefd);
        pthread_mutex_destroy(&l->loops[i].done_lock);
    }
    free(l->loops);
    conn_count_free(l->counts);
    free(l);
}
