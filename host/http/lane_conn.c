/* http/lane_conn.c - see lane_conn_internal.h. */
#include "http/lane_conn_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/cors.h"
#include "http/http_wire.h"
#include "http/json_text.h"
#include "util/log.h"

static const http_transport lane_transport;
static void drive(lane_conn *c);

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
void lane_conn_close(lane_conn *c)
{
    lane_loop *lp = c->loop;
    unlink_conn(c);
    /* Out of the epoll set first: close() alone leaves the registration
     * while another copy of the descriptor lives (a child forked before
     * its exec holds one), and an event would then name a freed
     * connection. */
    epoll_ctl(lp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->relay) {
        epoll_ctl(lp->epfd, EPOLL_CTL_DEL, lane_relay_fd(c->relay), NULL);
        lane_relay_close(c->relay);
        c->relay = NULL;
    }
    lane_tls_session_free(c->tls);
    c->tls = NULL;
    close(c->fd);
    c->fd = -1;
    if (!c->uncounted)
        http_lane_release(lp->lane, c->ip);
    if (c->state == LANE_WAITING) {
        c->orphaned = 1;
    } else {
        c->closed = 1;
        c->dead_next = lp->dead;
        lp->dead = c;
    }
}

void lane_loop_bury(lane_loop *lp)
{
    while (lp->dead) {
        lane_conn *c = lp->dead;
        lp->dead = c->dead_next;
        free_conn(c);
    }
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
void lane_conn_start_request(lane_conn *c, size_t at)
{
    lane_request_reset(&c->in, at);
    c->began = 0;
    c->fresh = 0;
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
     * anyway once its wait ends (over TLS, they go before the reply) */
    if (c->tls) {
        struct iovec v = {(void *)go_on, sizeof go_on - 1};
        if (lane_tls_queue(c->tls, &v, 1) == 0)
            lane_tls_flush(c->tls);
        return;
    }
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
 * came, 0 when the socket is empty, -1 when the client closed or failed.
 * A plain read that fills less than the room emptied the socket: bytes
 * that come later bring an edge of their own (spares a read that would
 * only say EAGAIN, once per request). */
static int read_some(lane_conn *c)
{
    lane_request *in = &c->in;
    for (;;) {
        size_t room = in->in_cap - in->in_len - 1;
        ssize_t n = c->tls ? lane_tls_recv(c->tls, in->in + in->in_len, room)
                           : recv(c->fd, in->in + in->in_len, room, 0);
        if (n > 0) {
            in->in_len += (size_t)n;
            c->last_active = c->loop->now;
            c->socket_empty = !c->tls && (size_t)n < room;
            return 1;
        }
        if (c->tls ? n == 0 : n < 0 && errno == EAGAIN) {
            c->socket_empty = 1;
            return 0;
        }
        if (n < 0 && !c->tls && errno == EINTR)
            continue;
        return -1;
    }
}

/* The reply the connection holds goes out next (drive() writes it). */
static void send_reply(lane_conn *c)
{
    compose(c); /* reads the request's headers: before they can move */
    if (c->tls && lane_tls_queue(c->tls, c->iov, 2) != 0)
        c->keep_alive = 0; /* out of memory: the flush sends what it took, and it closes */
    lane_request_answered(&c->in);
    c->served = 1;
    c->state = LANE_WRITING;
}

/* The reply went out: 0 when the connection closed with it, else 1 and
 * the connection is ready for its next request. */
static int finish_reply(lane_conn *c)
{
    free(c->reply.body);
    memset(&c->reply, 0, sizeof c->reply);
    /* a client that closed its side after pipelining is answered all it
     * sent: all of it was read when the socket is empty since its end */
    if (!c->keep_alive || (c->peer_closed && c->socket_empty && c->in.parsed == c->in.in_len)) {
        lane_conn_close(c);
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
    lane_conn_start_request(c, next);
    c->state = LANE_NEW;
    return 1;
}

/* Writes what is left of the reply: 1 when it all went, 0 to wait for
 * room, -1 when the connection failed (and was closed). */
static int write_reply(lane_conn *c)
{
    if (c->tls) {
        int f = lane_tls_flush(c->tls);
        if (f < 0)
            lane_conn_close(c);
        else if (f > 0)
            c->last_active = c->loop->now;
        return f;
    }
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
            lane_conn_close(c);
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

void lane_conn_refuse_slow_headers(lane_conn *c)
{
    if (c->tls) { /* as libmicrohttpd over TLS did: no 408 (none can go before the handshake) */
        lane_conn_close(c);
        return;
    }
    char msg[160];
    snprintf(msg, sizeof msg,
             "request headers: not complete within %u s of the request's first byte (loom serve "
             "--header-timeout)",
             c->loop->lane->cfg->limits.header_timeout_s);
    c->awaiting_headers = 0;
    reply_status(c, 408, msg);
    drive(c);
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
    if (lane_request_match(&c->in, l->prefixes, 0) != LANE_MATCH_FULL) {
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
        lane_conn_close(c); /* closed mid-request, or an error */
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

/* A request for libmicrohttpd whose bytes the lane read goes to it through
 * a relay, with them; the connection is libmicrohttpd's from now on. 1
 * when the relay runs. */
static int start_relay(lane_conn *c)
{
    lane_loop *lp = c->loop;
    int peer_fd;
    c->relay = lane_relay_open(c->in.in + c->in.req_at, c->in.in_len - c->in.req_at, &peer_fd);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (!c->relay || epoll_ctl(lp->epfd, EPOLL_CTL_ADD, lane_relay_fd(c->relay), &ev) != 0) {
        if (peer_fd >= 0)
            close(peer_fd);
        lane_conn_close(c);
        return 0;
    }
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = c->ip};
    socklen_t len = sizeof addr;
    getpeername(c->fd, (struct sockaddr *)&addr, &len);
    if (http_server_adopt(lp->lane->srv, peer_fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        lane_conn_close(c);
        return 0;
    }
    /* counted by libmicrohttpd's callbacks while it holds the other end,
     * as a connection handed over is */
    http_lane_release(lp->lane, c->ip);
    c->uncounted = 1;
    lane_request_free(&c->in);
    c->state = LANE_RELAYING;
    c->began = 0;
    return 1;
}

/* Whether the request at req_at has its headers in full. */
static int headers_read(const lane_request *in)
{
    const char *at = in->in + in->req_at;
    size_t n = in->in_len - in->req_at;
    return memmem(at, n, "\r\n\r\n", 4) || memmem(at, n, "\n\n", 2);
}

/* Between requests, over HTTPS (nothing can be peeked below TLS) or after
 * the connection's first lane request (a peek per request is a syscall
 * more): the next request's first bytes are read and decide: the lane's
 * are read on; another's, once its headers are here (the header deadline
 * covers them), go to libmicrohttpd through a relay (start_relay). */
static int take_input_read(lane_conn *c)
{
    lane_request *in = &c->in;
    for (;;) {
        size_t have = in->in_len - in->req_at;
        lane_match m = lane_prefix_match(c->loop->lane->prefixes, in->in + in->req_at, have);
        if (have && m == LANE_MATCH_FULL) {
            c->state = LANE_READING;
            return read_request(c);
        }
        /* headers longer than the lane's buffer: libmicrohttpd refuses them */
        if (have && m == LANE_MATCH_NONE && (headers_read(in) || have >= in->header_limit))
            return start_relay(c);
        if (in->in_len + 1 >= in->in_cap && lane_request_make_room(in) != 0)
            return start_relay(c);
        if (c->socket_empty) {
            if (c->peer_closed) { /* nothing more comes: not a request */
                lane_conn_close(c);
                return 0;
            }
            return 1;
        }
        int r = read_some(c);
        if (r == 0)
            return 1;
        if (r < 0) {
            lane_conn_close(c);
            return 0;
        }
        c->fresh = 1;
        if (!c->began)
            c->began = c->loop->now;
    }
}

/* Between requests: the first bytes (peeked, or already read past the last
 * request) decide whose the connection is. 0 when it is no longer the
 * lane's (closed, or handed to libmicrohttpd). */
static int take_input(lane_conn *c)
{
    http_lane *l = c->loop->lane;
    if (c->state == LANE_READING)
        return read_request(c);
    if (c->in.in_len > c->in.req_at && !c->fresh) { /* pipelined after a lane request */
        if (lane_request_match(&c->in, l->prefixes, 1) == LANE_MATCH_NONE) {
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
    if (c->tls || c->served)
        return take_input_read(c);
    char first[HTTP_LANE_PREFIX_MAX];
    size_t want = l->prefix_max;
    ssize_t n;
    do
        n = recv(c->fd, first, want, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN) {
        c->socket_empty = 1;
        return 1;
    }
    if (n <= 0) {
        lane_conn_close(c);
        return 0;
    }
    c->last_active = c->loop->now;
    if (!c->began)
        c->began = c->loop->now;
    lane_match m = lane_prefix_match(l->prefixes, first, (size_t)n);
    if (c->awaiting_headers || m == LANE_MATCH_NONE) {
        if (!headers_arrived(c)) {
            c->awaiting_headers = 1;
            c->socket_empty = 1; /* looked at all there is: wait for more */
            return 1;
        }
        hand_over(c);
        return 0;
    }
    if (m == LANE_MATCH_PARTIAL) {
        if (c->peer_closed) { /* nothing more comes: not a request */
            lane_conn_close(c);
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
        case LANE_HANDSHAKE: {
            int h = lane_tls_handshake(c->tls);
            if (h < 0)
                lane_conn_close(c);
            if (h <= 0)
                return;
            c->state = LANE_NEW;
            break;
        }
        case LANE_RELAYING:
            if (!lane_relay_pump(c->relay, c->tls, c->fd))
                lane_conn_close(c);
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

void lane_loop_take_replies(lane_loop *lp)
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
void lane_loop_take_turns(lane_loop *lp)
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

/* Whether the connection is inside a request whose headers are not all
 * here yet. */
int lane_conn_headers_pending(const lane_conn *c)
{
    return c->state == LANE_HANDSHAKE || (c->state == LANE_NEW && c->began) ||
           (c->state == LANE_READING && !c->in.headers_done);
}

void lane_conn_on_event(lane_conn *c, uint32_t events)
{
    if (c->closed) /* by an earlier event of this batch */
        return;
    /* a relay's either socket: what libmicrohttpd sent before it closed goes out */
    if ((events & (EPOLLERR | EPOLLHUP)) && c->state != LANE_RELAYING) {
        lane_conn_close(c);
        return;
    }
    if (events & EPOLLRDHUP)
        c->peer_closed = 1;
    if (events & EPOLLIN) {
        c->socket_empty = 0;
        if (c->tls)
            lane_tls_readable(c->tls);
    }
    drive(c);
}
