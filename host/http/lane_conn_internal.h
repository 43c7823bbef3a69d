/*
 * http/lane_conn_internal.h - the lane's connections (http/http_lane_internal.h),
 * shared by its loops (http_lane.c: accept, limits, sweeps, start and stop)
 * and its connections' code (lane_conn.c: reading, routing, replying,
 * TLS and relays). Threading: a connection is its loop's alone; replies
 * reach the loop through its done queue (done_lock).
 */
#ifndef LOOM_HTTP_LANE_CONN_INTERNAL_H
#define LOOM_HTTP_LANE_CONN_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "http/conn_count.h"
#include "http/http_lane_internal.h"
#include "http/lane_relay.h"
#include "http/lane_request.h"

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
    LANE_HANDSHAKE, /* HTTPS: the TLS handshake under way */
    LANE_NEW,     /* between requests: the next one's first bytes decide */
    LANE_READING, /* a lane request arriving */
    LANE_WAITING, /* its handler deferred the reply */
    LANE_WRITING, /* the reply going out */
    LANE_RELAYING /* libmicrohttpd's, through a relay (http/lane_relay.h) */
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
    int closed;     /* closed: freed by lane_loop_bury once the loop's batch
                     * of events is done (a relayed connection has two
                     * sockets, so a later event of the batch may name it) */
    struct lane_conn *dead_next;
    int keep_alive; /* the current request's */
    int peer_closed;
    int socket_empty; /* a read found nothing and no EPOLLIN came since */
    int awaiting_headers; /* libmicrohttpd's, handed over once its headers are here */
    int fresh;        /* the input past req_at was read after the last reply */
    int served;       /* has had a lane request: its later ones are read, not peeked */
    lane_tls_session *tls; /* HTTPS: its session */
    lane_relay *relay;     /* libmicrohttpd's connection, once its bytes were read */
    int uncounted;         /* relayed: libmicrohttpd counts it (http_lane_hold) */
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
    lane_conn *dead; /* closed in this batch of events, to be freed */
    time_t now, swept;
    char *peek; /* header_bytes: what a connection for libmicrohttpd sent so far */
};

struct http_lane {
    http_server *srv;
    const http_config *cfg;
    int listen_fd, port;
    const char *const *prefixes; /* NULL-terminated */
    size_t prefix_max;           /* the longest's length */
    unsigned nloops;
    lane_loop *loops;
    volatile int stopping;
    int halted;    /* http_lane_halt has run */
    int leaked;    /* it closed connections still waiting for their reply */
    conn_count *counts; /* every connection accepted, until it closes */
    const lane_tls *tls; /* HTTPS; NULL: plain HTTP */
};

/* Closes the socket; a connection whose reply is pending stays allocated
 * (orphaned) until the reply comes. */
/* Frees the connections closed since the last call: after a batch of
 * events, when none of them can name one any more. */
void lane_loop_bury(lane_loop *lp);
void lane_conn_close(lane_conn *c);
/* The next request starts at offset `at` of the input. */
void lane_conn_start_request(lane_conn *c, size_t at);
/* An epoll event on the connection's socket (or its relay's). */
void lane_conn_on_event(lane_conn *c, uint32_t events);
/* Whether the connection is inside a request whose headers are not all
 * here yet (or, over HTTPS, its handshake). */
int lane_conn_headers_pending(const lane_conn *c);
/* Headers still coming past the deadline: 408 (over HTTPS the connection
 * closes), and the connection moves on. */
void lane_conn_refuse_slow_headers(lane_conn *c);
/* The replies the loop's done queue holds go out; then the connections
 * whose turn ended with input left get another. */
void lane_loop_take_replies(lane_loop *lp);
void lane_loop_take_turns(lane_loop *lp);

#endif
