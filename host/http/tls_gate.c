/* http/tls_gate.c - see tls_gate_internal.h. */
#include "http/tls_gate_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/conn_count.h"

/* A connection from its accept until libmicrohttpd closes it. */
typedef struct gate_conn {
    int fd;
    uint32_t ip;
    uint16_t port;    /* the peer's, network order: with ip, which socket fd is */
    time_t accepted;
    int headers_done; /* its first request's headers arrived in time */
    int shut;         /* shut down by the gate: closing */
    int counted;      /* holds a count (an evicted one gave it back at once) */
    struct gate_conn *prev, *next;
} gate_conn;

struct tls_gate {
    http_server *srv;
    const http_limits *limits;
    int listen_fd, wake_fd, port;
    conn_count *counts;
    pthread_t thread;
    int running;
    volatile int stopping;
    pthread_mutex_t lock; /* the list and every entry in it */
    gate_conn *conns;     /* newest first */
};

static void unlink_conn(tls_gate *g, gate_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
}

static gate_conn *find(tls_gate *g, int fd)
{
    for (gate_conn *c = g->conns; c; c = c->next)
        if (c->fd == fd)
            return c;
    return NULL;
}

static void give_back(tls_gate *g, gate_conn *c)
{
    if (c->counted)
        conn_count_give_back(g->counts, c->ip);
    c->counted = 0;
}

/* The descriptor accept just returned was closed by whoever held it
 * before: an entry still naming it is one libmicrohttpd closed without a
 * word (a connection it could not set up). It goes, with its count, so the
 * sweep never shuts the new connection down in its name. Lock held. */
static void drop_stale(tls_gate *g, int fd)
{
    gate_conn *c;
    while ((c = find(g, fd)) != NULL) {
        give_back(g, c);
        unlink_conn(g, c);
        free(c);
    }
}

/* Shuts down c's socket, if fd is still it: a connection libmicrohttpd
 * dropped unreported leaves fd free for reuse by anything else, which must
 * not be shut down in its name (such an entry is marked shut, and leaves at
 * its fd's next accept). */
static void shut(gate_conn *c)
{
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    if (getpeername(c->fd, (struct sockaddr *)&peer, &len) == 0 && peer.sin_family == AF_INET &&
        peer.sin_addr.s_addr == c->ip && peer.sin_port == c->port)
        shutdown(c->fd, SHUT_RDWR);
    c->shut = 1;
}

/* With every connection taken, one from an address that holds fewer than
 * another makes room: the unfinished connection of the address holding the
 * most that has waited longest is shut down, and its count given back now.
 * 1 when it made room. Called with the lock held. */
static int evict_for(tls_gate *g, uint32_t ip)
{
    unsigned mine = 0;
    if (conn_count_open(g->counts, ip, &mine) < g->limits->max_connections)
        return 0; /* not the total limit: the address's own */
    gate_conn *victim = NULL;
    unsigned most = mine + 1;
    for (gate_conn *c = g->conns; c; c = c->next) {
        if (c->headers_done || c->shut)
            continue;
        unsigned theirs = 0;
        conn_count_open(g->counts, c->ip, &theirs);
        if (theirs > most || (victim && theirs == most && c->accepted <= victim->accepted)) {
            victim = c;
            most = theirs;
        }
    }
    if (!victim)
        return 0;
    shut(victim);
    give_back(g, victim);
    return 1;
}

static void accept_all(tls_gate *g)
{
    for (;;) {
        struct sockaddr_in addr;
        socklen_t len = sizeof addr;
        int fd = accept4(g->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN, or out of descriptors: the next connection retries */
        }
        uint32_t ip = addr.sin_addr.s_addr;
        gate_conn *c = calloc(1, sizeof *c);
        pthread_mutex_lock(&g->lock);
        drop_stale(g, fd);
        int counted = c && (conn_count_take(g->counts, ip) ||
                            (evict_for(g, ip) && conn_count_take(g->counts, ip)));
        if (counted) {
            *c = (gate_conn){.fd = fd, .ip = ip, .port = addr.sin_port, .accepted = time(NULL),
                             .counted = 1, .next = g->conns};
            if (g->conns)
                g->conns->prev = c;
            g->conns = c;
        }
        pthread_mutex_unlock(&g->lock);
        if (!counted) {
            free(c); /* over --max-connections or --max-connections-per-ip */
            close(fd);
            continue;
        }
        if (http_server_adopt(g->srv, fd, (struct sockaddr *)&addr, len) != 0) {
            /* libmicrohttpd closed it: the entry goes here, unless its
             * close was reported meanwhile (only this thread adds entries,
             * so one found for fd is still c) */
            pthread_mutex_lock(&g->lock);
            drop_stale(g, fd);
            pthread_mutex_unlock(&g->lock);
        }
    }
}

/* Headers still coming past the deadline: the connection is shut down
 * (below TLS there is no 408 to send); libmicrohttpd closes it. */
static void sweep(tls_gate *g, time_t now)
{
    pthread_mutex_lock(&g->lock);
    for (gate_conn *c = g->conns; c; c = c->next)
        if (!c->headers_done && !c->shut &&
            now - c->accepted >= (time_t)g->limits->header_timeout_s)
            shut(c);
    pthread_mutex_unlock(&g->lock);
}

static void *gate_main(void *arg)
{
    tls_gate *g = arg;
    time_t swept = 0;
    while (!g->stopping) {
        struct pollfd p[2] = {{.fd = g->listen_fd, .events = POLLIN},
                              {.fd = g->wake_fd, .events = POLLIN}};
        int n = poll(p, 2, 1000);
        if (n > 0 && (p[0].revents & POLLIN))
            accept_all(g);
        time_t now = time(NULL);
        if (now != swept) {
            sweep(g, now);
            swept = now;
        }
    }
    return NULL;
}

void tls_gate_headers_done(tls_gate *g, int fd)
{
    pthread_mutex_lock(&g->lock);
    gate_conn *c = find(g, fd);
    if (c)
        c->headers_done = 1;
    pthread_mutex_unlock(&g->lock);
}

void tls_gate_closed(tls_gate *g, int fd)
{
    pthread_mutex_lock(&g->lock);
    gate_conn *c = find(g, fd);
    if (c) {
        give_back(g, c);
        unlink_conn(g, c);
    }
    pthread_mutex_unlock(&g->lock);
    free(c);
}

int tls_gate_port(const tls_gate *g) { return g->port; }

loom_error *tls_gate_start(http_server *srv, const struct sockaddr_in *addr, tls_gate **out)
{
    *out = NULL;
    const http_config *cfg = http_server_config(srv);
    tls_gate *g = calloc(1, sizeof *g);
    if (!g)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    g->srv = srv;
    g->limits = &cfg->limits;
    g->wake_fd = -1;
    pthread_mutex_init(&g->lock, NULL);
    g->counts = conn_count_create(cfg->limits.max_connections, cfg->limits.max_connections_per_ip);
    loom_error *e = http_listen(addr, &g->listen_fd, &g->port);
    if (!e && !g->counts)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    if (!e && (g->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        e = loom_err(LOOM_E_INTERNAL, "the HTTPS gate: eventfd: %s", strerror(errno));
    if (e) {
        tls_gate_stop(g);
        return e;
    }
    *out = g;
    return NULL;
}

loom_error *tls_gate_accept(tls_gate *g)
{
    int rc = pthread_create(&g->thread, NULL, gate_main, g);
    if (rc != 0)
        return loom_err(LOOM_E_INTERNAL, "the HTTPS gate's thread cannot start: %s", strerror(rc));
    g->running = 1;
    return NULL;
}

void tls_gate_halt(tls_gate *g)
{
    if (!g || g->stopping)
        return;
    g->stopping = 1;
    if (g->running) {
        uint64_t one = 1;
        ssize_t w = write(g->wake_fd, &one, sizeof one);
        (void)w;
        pthread_join(g->thread, NULL);
        g->running = 0;
    }
    if (g->listen_fd >= 0)
        close(g->listen_fd);
    g->listen_fd = -1;
}

void tls_gate_stop(tls_gate *g)
{
    if (!g)
        return;
    tls_gate_halt(g);
    if (g->wake_fd >= 0)
        close(g->wake_fd);
    for (gate_conn *c = g->conns, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    conn_count_free(g->counts);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
