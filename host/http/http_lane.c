/* http/http_lane.c - see http_lane_internal.h. */
#include "http/http_lane_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
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

#include "http/conn_count.h"
#include "http/cors.h"
#include "http/http_wire.h"
#include "http/json_text.h"
#include "http/lane_request.h"
#include "util/log.h"

/* Of --max-header-bytes, what the lane leaves unused, as libmicrohttpd
 * keeps some of the same buffer for its own bookkeeping (300 to 900 bytes,
 * by the number of headers): the documented bound (about 7 KB at the
 * default) holds whichever path a request takes. */
#define LANE_HEADER_SPARE 1024
#define LANE_EVENTS 64
/* Requests one connection may have answered in a row before the loop's
 * other connections get their turn (a long pipeline must not hold a loop). */
#define LANE_TURN_REQUESTS 64
/* A connection's input buffer grown past this by a large request is given
 * back when the connection goes idle (a request body may take 1 MiB). */
#define LANE_IDLE_BUFFER (16 * 1024)

enum lane_state {
    LANE_NEW,     /* between requests: the next one's first bytes decide */
    LANE_READING, /* a lane request arriving */
    LANE_WAITING, /* its handler deferred the reply */
    LANE_WRITING  /* the reply going out */
};

typedef struct lane_loop lane_loop;

typedef struct lane_conn {
    struct lane_conn *prev, *next; /* the loop's connections */
    struct lane_conn *done_next;   /* the loop's queue of replies */
    struct lane_conn *turn_next;   /* the loop's connections with input left after their turn */
    int turn_queued;
    lane_loop *loop;
    int fd;
    uint32_t ip;
    enum lane_state state;
    int orphaned;   /* closed while its reply was pending: freed when it comes */
    int keep_alive; /* the current request's */
    int peer_closed;
    int socket_empty; /* a read found nothing and no EPOLLIN came since */
    int awaiting_headers; /* libmicrohttpd's, handed over once its headers are here */
    time_t last_active;
    time_t began;     /* when the current request's first byte came; 0: none yet */
    lane_request in; /* what was read: this request, and any pipelined after it */
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
    lane_conn *turn_head, *turn_tail; /* whose turn ended with input left */
    time_t now, swept;
    char *peek; /* header_bytes: what a connection for libmicrohttpd sent so far */
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
    int halted;    /* http_lane_halt has run */
    int leaked;    /* it closed connections still waiting for their reply */
    conn_count *counts; /* every connection accepted, until it closes */
};

static const http_transport lane_transport;

void http_lane_hold(http_lane *l, uint32_t ip) { conn_count_hold(l->counts, ip); }

void http_lane_release(http_lane *l, uint32_t ip) { conn_count_give_back(l->counts, ip); }

/* ---- connections ---------------------------------------------------- */

static void unlink_conn(lane_conn *c)
{
    lane_loop *lp = c->loop;
    if (c->turn_queued) { /* rare: a connection closed while queued for a turn */
        lane_conn **at = &lp->turn_head, *before = NULL;
        while (*at && *at != c) {
            before = *at;
            at = &(*at)->turn_next;
        }
        if (*at) {
            *at = c->turn_next;
            if (lp->turn_tail == c)
                lp->turn_tail = before;
        }
        c->turn_queued = 0;
    }
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
    lane_request_free(&c->in);
    free(c);
}

/* Closes the socket; a connection whose reply is pending stays allocated
 * (orphaned) until the reply comes. */
static void close_conn(lane_conn *c)
{
    lane_loop *lp = c->loop;
    unlink_conn(c);
    /* Out of the epoll set first: close() alone leaves the registration
     * while another copy of the descriptor lives (a child forked before
     * its exec holds one), and an event would then name a freed
     * connection. */
    epoll_ctl(lp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
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

/* The next request starts at offset `at` of the input. */
static void start_request(lane_conn *c, size_t at)
{
    lane_request_reset(&c->in, at);
    c->began = 0;
    memset(&c->req, 0, offsetof(http_request, fields));
    c->req.nfields = 0;
    c->req.nparams = 0;
    c->req.user = NULL;
    c->req.is_admin = 0;
    c->req.peer[0] = 0;
}

/* A client that asked to be told before it sends its body (curl does for a
 * body over 1 KiB) is told now; without it, it waits a second first. */
static void continue_if_expected(lane_conn *c)
{
    if (!c->in.expects_continue)
        return;
    c->in.expects_continue = 0;
    static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
    /* a socket with no room for these few bytes has a client that sends
     * anyway once its wait ends */
    ssize_t n = send(c->fd, go_on, sizeof go_on - 1, MSG_NOSIGNAL);
    (void)n;
}

/* ---- the request, as the routes see it ---------------------------------- */

static const char *lane_header(const http_request *req, const char *name)
{
    const lane_conn *c = req->connection;
    return lane_request_header(&c->in, name);
}

static const char *lane_query(const http_request *req, const char *key)
{
    const lane_conn *c = req->connection;
    return lane_request_query(&c->in, key);
}

static http_pending *lane_defer(const http_request *req)
{
    lane_conn *c = req->connection;
    return &c->pending;
}

static const http_transport lane_transport = {lane_header, lane_query, lane_defer};

/* ---- replies ------------------------------------------------------------- */

/* The reply's head and body, ready for sendmsg. */
static void compose(lane_conn *c)
{
    const http_config *cfg = c->loop->lane->cfg;
    http_response *res = &c->reply;
    if (!res->status)
        http_server_fail(c->loop->lane->srv, res, LOOM_E_INTERNAL, "handler gave no reply");
    if (res->body && (!res->content_type[0] || strncmp(res->content_type, "application/json", 16) == 0))
        res->body = json_text_repair_utf8(res->body, &res->len);
    cors_headers cors;
    if (cfg->cors) {
        char origin[CORS_ORIGIN_MAX];
        cors_reply_headers(cfg->cors, lane_request_header_copy(&c->in, "Origin", origin, sizeof origin),
                           &cors);
    }
    http_head head = {
        .status = res->status,
        .date = http_date_now(),
        .content_type = res->content_type,
        .disposition = res->disposition,
        .content_length = res->len,
        .cors = cfg->cors ? &cors : NULL,
        .close = !c->keep_alive,
        .keep_alive = c->keep_alive && c->in.parser.http_minor == 0,
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

/* One read into the buffer's free room (there must be some): 1 when bytes
 * came, 0 when the socket is empty, -1 when the client closed or failed. */
static int read_some(lane_conn *c)
{
    lane_request *in = &c->in;
    for (;;) {
        ssize_t n = recv(c->fd, in->in + in->in_len, in->in_cap - in->in_len - 1, 0);
        if (n > 0) {
            in->in_len += (size_t)n;
            c->last_active = c->loop->now;
            c->socket_empty = 0;
            return 1;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            c->socket_empty = 1;
            return 0;
        }
        return -1;
    }
}

/* What the client sent before this reply goes out, it sent without
 * waiting for the reply (pipelined): it is read now, into the buffer's
 * free room (the answered request's bytes taken back once they are half of
 * it). So when the buffer runs dry between requests, the socket holds only
 * what came after a reply, in segments not yet touched, and the next
 * request's first bytes can be peeked to choose its path. Peeking instead
 * at the rest of a segment read in part can stall for good: the whole
 * segment stays charged to the socket's receive buffer, which can keep its
 * window shut while the peek waits for bytes that cannot come. */
static void read_pipelined(lane_conn *c)
{
    lane_request_answered(&c->in);
    while (c->in.in_len + 1 < c->in.in_cap) {
        int r = read_some(c);
        if (r < 0)
            c->peer_closed = 1; /* answered what it sent, then closed */
        if (r <= 0)
            return;
    }
}

/* The reply the connection holds goes out next (drive() writes it). */
static void send_reply(lane_conn *c)
{
    compose(c); /* reads the request's headers: before they can move */
    if (c->keep_alive)
        read_pipelined(c);
    c->state = LANE_WRITING;
}

/* The reply went out: 0 when the connection closed with it, else 1 and
 * the connection is ready for its next request. */
static int finish_reply(lane_conn *c)
{
    free(c->reply.body);
    memset(&c->reply, 0, sizeof c->reply);
    /* a client that closed its side after pipelining is answered all it sent */
    if (!c->keep_alive || (c->peer_closed && c->in.parsed == c->in.in_len)) {
        close_conn(c);
        return 0;
    }
    /* a request pipelined after this one stays where it is; with none,
     * the buffer starts over */
    size_t next = c->in.parsed;
    if (next == c->in.in_len) {
        next = c->in.in_len = 0;
        if (c->in.in_cap > LANE_IDLE_BUFFER)
            lane_request_free(&c->in);
    }
    start_request(c, next);
    c->state = LANE_NEW;
    return 1;
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

/* A refusal while reading, made on the loop itself; the connection closes
 * after it, since the rest of what was sent is not read. */
static void reply_now(lane_conn *c, int32_t code, const char *what)
{
    memset(&c->reply, 0, sizeof c->reply);
    http_server_fail(c->loop->lane->srv, &c->reply, code, "%s", what);
    c->keep_alive = 0;
    send_reply(c);
}

/* A refusal with a status no loom code maps to (431, 408). */
static void reply_status(lane_conn *c, int status, const char *msg)
{
    memset(&c->reply, 0, sizeof c->reply);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "status", status);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    http_reply_data(&c->reply, status, "application/json", text, text ? strlen(text) : 0);
    c->keep_alive = 0;
    send_reply(c);
}

/* libmicrohttpd's refusal of the same. */
static void refuse_headers(lane_conn *c)
{
    char msg[160];
    snprintf(msg, sizeof msg,
             "request headers: more than %d of them or %u bytes (loom serve --max-header-bytes %u)",
             LANE_MAX_HEADERS, c->loop->lane->cfg->limits.header_bytes - LANE_HEADER_SPARE,
             c->loop->lane->cfg->limits.header_bytes);
    reply_status(c, 431, msg);
}

/* Headers still coming past the deadline: 408, and the connection closes. */
static void refuse_slow_headers(lane_conn *c)
{
    char msg[160];
    snprintf(msg, sizeof msg,
             "request headers: not complete within %u s of the request's first byte (loom serve "
             "--header-timeout)",
             c->loop->lane->cfg->limits.header_timeout_s);
    c->awaiting_headers = 0;
    reply_status(c, 408, msg);
}

static void refuse_body(lane_conn *c)
{
    char msg[128];
    snprintf(msg, sizeof msg, "request body exceeds the limit of %zu bytes",
             c->loop->lane->cfg->max_body);
    reply_now(c, LOOM_E_TOO_LARGE, msg);
}

/* The answer to a request the reader stopped (not LANE_PARSE_DONE/MORE). */
static void refuse_request(lane_conn *c, lane_parse why)
{
    if (why == LANE_PARSE_HEADERS_OVER) {
        refuse_headers(c);
    } else if (why == LANE_PARSE_BODY_OVER) {
        refuse_body(c);
    } else {
        char msg[160];
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", lane_request_error(&c->in));
        reply_now(c, LOOM_E_INVALID, msg);
    }
}

static const char not_lane_pipelined[] =
    "a pipelined request that is not an inference call: send it on its own connection or after "
    "this one's reply";

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

/* ---- requests ------------------------------------------------------------ */

static void dispatch(lane_conn *c)
{
    http_lane *l = c->loop->lane;
    c->keep_alive = http_should_keep_alive(&c->in.parser);
    c->state = LANE_WAITING;
    memset(&c->reply, 0, sizeof c->reply);
    /* A pipelined request was let in on part of the prefix; one that turns
     * out to be another route's must not run on the lane's loops. */
    if (!lane_request_starts_with(&c->in, l->prefix, l->prefix_len, 0)) {
        reply_now(c, LOOM_E_INVALID, not_lane_pipelined);
        return;
    }
    const char *too_long = lane_request_finish(&c->in);
    if (too_long) {
        http_server_fail(l->srv, &c->reply, LOOM_E_INVALID, "%s", too_long);
        send_reply(c);
        return;
    }
    http_request *req = &c->req;
    req->method = http_method_str((enum http_method)c->in.parser.method);
    req->path = c->in.path;
    req->connection = c;
    req->transport = &lane_transport;
    req->body = lane_request_body(&c->in);
    req->body_len = c->in.body.len;
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

/* Reads and parses until the socket is drained or a request is complete
 * (dispatched, or refused): 0 when the connection closed. */
static int read_request(lane_conn *c)
{
    lane_request *in = &c->in;
    for (;;) {
        if (in->parsed < in->in_len) {
            lane_parse p = lane_request_parse(in);
            continue_if_expected(c);
            if (p == LANE_PARSE_DONE)
                dispatch(c);
            else if (p != LANE_PARSE_MORE)
                refuse_request(c, p);
            if (p != LANE_PARSE_MORE)
                return 1;
        }
        if (in->in_len + 1 >= in->in_cap && lane_request_make_room(in) != 0) {
            /* as long as one request may be: past whichever part it is in */
            refuse_request(c, in->headers_done ? LANE_PARSE_BODY_OVER : LANE_PARSE_HEADERS_OVER);
            return 1;
        }
        int r = read_some(c);
        if (r > 0)
            continue;
        if (r == 0)
            return 1;
        close_conn(c); /* closed mid-request, or an error */
        return 0;
    }
}

/* Whether a connection for libmicrohttpd has sent its headers in full (or
 * as many bytes as they may have, or closed its side): it is handed over
 * only then, so that the lane's header deadline covers it too. Peeks, so
 * libmicrohttpd gets every byte. */
static int headers_arrived(lane_conn *c)
{
    lane_loop *lp = c->loop;
    size_t cap = lp->lane->cfg->limits.header_bytes;
    ssize_t n;
    do
        n = recv(c->fd, lp->peek, cap, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n <= 0 || (size_t)n >= cap || c->peer_closed)
        return 1; /* libmicrohttpd answers what there is (431, 400) */
    return memmem(lp->peek, (size_t)n, "\r\n\r\n", 4) || memmem(lp->peek, (size_t)n, "\n\n", 2);
}

/* Between requests: the first bytes (peeked, or already read past the last
 * request) decide whose the connection is. 0 when it is no longer the
 * lane's (closed, or handed to libmicrohttpd). */
static int take_input(lane_conn *c)
{
    http_lane *l = c->loop->lane;
    if (c->state == LANE_READING)
        return read_request(c);
    if (c->in.in_len > c->in.req_at) { /* pipelined after a lane request */
        if (!lane_request_starts_with(&c->in, l->prefix, l->prefix_len, 1)) {
            /* read already, so it cannot go to libmicrohttpd */
            reply_now(c, LOOM_E_INVALID, not_lane_pipelined);
            return 1;
        }
        c->state = LANE_READING;
        if (!c->began)
            c->began = c->loop->now;
        return read_request(c);
    }
    /* nothing to look at until the next EPOLLIN: spares a read per request */
    if (c->socket_empty)
        return 1;
    char first[64];
    size_t want = l->prefix_len < sizeof first ? l->prefix_len : sizeof first;
    ssize_t n;
    do
        n = recv(c->fd, first, want, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) {
        c->socket_empty = 1;
        return 1;
    }
    if (n <= 0) {
        close_conn(c);
        return 0;
    }
    c->last_active = c->loop->now;
    if (!c->began)
        c->began = c->loop->now;
    if (c->awaiting_headers || memcmp(first, l->prefix, (size_t)n) != 0) {
        if (!headers_arrived(c)) {
            c->awaiting_headers = 1;
            c->socket_empty = 1; /* looked at all there is: wait for more */
            return 1;
        }
        hand_over(c);
        return 0;
    }
    if ((size_t)n < want) {
        if (c->peer_closed) { /* nothing more comes: not a request */
            close_conn(c);
            return 0;
        }
        return 1; /* the rest of the prefix comes with the next bytes */
    }
    c->state = LANE_READING;
    return read_request(c);
}

static void queue_turn(lane_conn *c)
{
    lane_loop *lp = c->loop;
    if (c->turn_queued) /* driven again by an event while it waited its turn */
        return;
    c->turn_queued = 1;
    c->turn_next = NULL;
    if (lp->turn_tail)
        lp->turn_tail->turn_next = c;
    else
        lp->turn_head = c;
    lp->turn_tail = c;
}

/* Moves a connection on as far as it can go without waiting: writes its
 * reply, reads and dispatches its next request, and so on, until it waits
 * for bytes, room or a deferred reply; after LANE_TURN_REQUESTS replies it
 * is queued for another turn, behind the loop's other connections. A loop,
 * not calls from one step to the next: a long pipeline of requests answered
 * at once must not deepen the stack. */
static void drive(lane_conn *c)
{
    for (int replies = 0;;) {
        switch (c->state) {
        case LANE_WAITING:
            return;
        case LANE_WRITING:
            if (write_reply(c) != 1 || !finish_reply(c))
                return;
            if (++replies == LANE_TURN_REQUESTS) {
                queue_turn(c);
                return;
            }
            break;
        case LANE_NEW:
        case LANE_READING:
            if (!take_input(c) || c->state == LANE_NEW || c->state == LANE_READING)
                return;
            break;
        }
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
        if (c->orphaned) {
            free_conn(c);
        } else {
            send_reply(c);
            drive(c);
        }
        c = next;
    }
}

/* The connections whose turn ended with work left, in the order queued;
 * those queued again now wait for the next pass. */
static void take_turns(lane_loop *lp)
{
    lane_conn *c = lp->turn_head;
    lp->turn_head = lp->turn_tail = NULL;
    while (c) {
        lane_conn *next = c->turn_next;
        c->turn_queued = 0;
        c->turn_next = NULL;
        drive(c);
        c = next;
    }
}

/* ---- the loops ----------------------------------------------------------- */

/* Whether the connection is inside a request whose headers are not all
 * here yet. */
static int headers_pending(const lane_conn *c)
{
    return (c->state == LANE_NEW && c->began) || (c->state == LANE_READING && !c->in.headers_done);
}

/* With every connection taken, one from an address that holds fewer than
 * another makes room: the loop closes the other address's connection that
 * has waited longest without a complete request (a flood of connections
 * that trickle their headers, or idle ones). 1 when it made room. */
static int evict_for(lane_loop *lp, uint32_t ip)
{
    http_lane *l = lp->lane;
    unsigned mine = 0;
    if (conn_count_open(l->counts, ip, &mine) < l->cfg->limits.max_connections)
        return 0; /* not the total limit: the address's own */
    lane_conn *victim = NULL;
    unsigned most = mine + 1;
    for (lane_conn *c = lp->conns; c; c = c->next) {
        if (c->state != LANE_NEW && !headers_pending(c))
            continue; /* a request being served */
        unsigned theirs = 0;
        conn_count_open(l->counts, c->ip, &theirs);
        if (theirs > most || (victim && theirs == most && c->last_active < victim->last_active)) {
            victim = c;
            most = theirs;
        }
    }
    if (!victim)
        return 0;
    close_conn(victim);
    return 1;
}

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
        if (!conn_count_take(l->counts, ip) && !(evict_for(lp, ip) && conn_count_take(l->counts, ip))) {
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
        lane_request_init(&c->in, l->cfg->limits.header_bytes - LANE_HEADER_SPARE, l->cfg->max_body);
        start_request(c, 0);
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
    if (events & EPOLLIN)
        c->socket_empty = 0;
    drive(c);
}


/* Connections silent past the idle timeout are closed; one waiting for
 * its reply is not (the model service times requests out). A request whose
 * headers are still coming past the header deadline is answered 408,
 * however steadily they trickle. */
static void sweep_idle(lane_loop *lp)
{
    const http_limits *l = &lp->lane->cfg->limits;
    lp->swept = lp->now;
    for (lane_conn *c = lp->conns, *next; c; c = next) {
        next = c->next;
        if (c->state != LANE_WAITING && lp->now - c->last_active > (time_t)l->idle_timeout_s) {
            close_conn(c);
        } else if (headers_pending(c) && c->began &&
                   lp->now - c->began > (time_t)l->header_timeout_s) {
            refuse_slow_headers(c);
            drive(c);
        }
    }
}


static void *loop_main(void *arg)
{
    lane_loop *lp = arg;
    http_lane *l = lp->lane;
    struct epoll_event events[LANE_EVENTS];
    while (!l->stopping) {
        int timeout = lp->turn_head ? 0 : lp->nconns ? 1000 : -1;
        int n = epoll_wait(lp->epfd, events, LANE_EVENTS, timeout);
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
        take_turns(lp);
        if (lp->now != lp->swept)
            sweep_idle(lp);
    }
    return NULL;
}

/* ---- start and stop ------------------------------------------------------ */

loom_error *http_listen(const struct sockaddr_in *addr, int *fd, int *port)
{
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (*fd < 0 || setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(*fd, (const struct sockaddr *)addr, sizeof *addr) != 0 || listen(*fd, SOMAXCONN) != 0) {
        int err = errno;
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return loom_err(LOOM_E_UNAVAILABLE, "%s", strerror(err));
    }
    struct sockaddr_in bound;
    socklen_t blen = sizeof bound;
    getsockname(*fd, (struct sockaddr *)&bound, &blen);
    *port = ntohs(bound.sin_port);
    return NULL;
}

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
    loom_error *e = http_listen(addr, &l->listen_fd, &l->port);
    if (e) {
        http_lane_stop(l);
        return e;
    }
    for (unsigned i = 0; i < threads; i++) {
        lane_loop *lp = &l->loops[i];
        lp->lane = l;
        lp->epfd = epoll_create1(EPOLL_CLOEXEC);
        lp->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        lp->peek = malloc(cfg->limits.header_bytes);
        pthread_mutex_init(&lp->done_lock, NULL);
        struct epoll_event wake_ev = {.events = EPOLLIN, .data.ptr = lp};
        if (lp->epfd < 0 || lp->wakefd < 0 || !lp->peek ||
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

loom_error *http_lane_accept(http_lane *l)
{
    for (unsigned i = 0; i < l->nloops; i++) {
        struct epoll_event listen_ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &l->listen_fd};
        if (epoll_ctl(l->loops[i].epfd, EPOLL_CTL_ADD, l->listen_fd, &listen_ev) != 0)
            return loom_err(LOOM_E_INTERNAL, "the HTTP lane's loop %u cannot accept: %s", i,
                            strerror(errno));
    }
    return NULL;
}

int http_lane_port(const http_lane *l) { return l->port; }

void http_lane_halt(http_lane *l)
{
    if (!l || l->halted)
        return;
    l->halted = 1;
    l->stopping = 1;
    for (unsigned i = 0; i < l->nloops; i++) {
        uint64_t one = 1;
        ssize_t w = write(l->loops[i].wakefd, &one, sizeof one);
        (void)w;
        pthread_join(l->loops[i].thread, NULL);
    }
    for (unsigned i = 0; l->loops && i < l->nloops; i++) {
        lane_loop *lp = &l->loops[i];
        take_replies(lp);
        while (lp->conns) {
            lane_conn *c = lp->conns;
            l->leaked |= c->state == LANE_WAITING;
            close_conn(c);
        }
    }
    if (l->listen_fd >= 0)
        close(l->listen_fd);
    l->listen_fd = -1;
}

void http_lane_stop(http_lane *l)
{
    if (!l)
        return;
    http_lane_halt(l);
    if (l->leaked) {
        /* a reply may still come for them: they and their loops stay */
        log_warn("the HTTP lane stopped with requests still waiting for their reply");
        return;
    }
    for (unsigned i = 0; l->loops && i < l->nloops; i++) {
        close(l->loops[i].epfd);
        close(l->loops[i].wakefd);
        pthread_mutex_destroy(&l->loops[i].done_lock);
        free(l->loops[i].peek);
    }
    free(l->loops);
    conn_count_free(l->counts);
    free(l);
}
