/* http/http_lane.c - see http_lane_internal.h. */
#include "http/lane_conn_internal.h"

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

#include "util/log.h"

void http_lane_hold(http_lane *l, uint32_t ip) { conn_count_hold(l->counts, ip); }

void http_lane_release(http_lane *l, uint32_t ip) { conn_count_give_back(l->counts, ip); }

/* ---- the loops ----------------------------------------------------------- */


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
        if (c->state != LANE_NEW && !lane_conn_headers_pending(c))
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
    lane_conn_close(victim);
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
        if (l->tls) {
            /* the first request's headers are due header_timeout_s after the
             * accept: a handshake that never ends is closed with them */
            c->tls = lane_tls_session_new(l->tls, fd);
            c->state = LANE_HANDSHAKE;
        }
        lane_request_init(&c->in, l->cfg->limits.header_bytes - LANE_HEADER_SPARE, l->cfg->max_body);
        lane_conn_start_request(c, 0);
        c->began = l->tls ? lp->now : 0;
        ev.data.ptr = c;
        if ((l->tls && !c->tls) || epoll_ctl(lp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            lane_tls_session_free(c->tls);
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


/* Connections silent past the idle timeout are closed; one waiting for
 * its reply is not (the model service times requests out). A request whose
 * headers are still coming past the header deadline is answered 408 (over
 * HTTPS: closed), however steadily they trickle. */
static void sweep_idle(lane_loop *lp)
{
    const http_limits *l = &lp->lane->cfg->limits;
    lp->swept = lp->now;
    for (lane_conn *c = lp->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == LANE_RELAYING) {
            continue; /* libmicrohttpd's timeouts apply */
        } else if (c->state != LANE_WAITING &&
                   lp->now - c->last_active > (time_t)l->idle_timeout_s) {
            lane_conn_close(c);
        } else if (lane_conn_headers_pending(c) && c->began &&
                   lp->now - c->began > (time_t)l->header_timeout_s) {
            lane_conn_refuse_slow_headers(c);
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
                lane_conn_on_event(ptr, events[i].events);
            }
        }
        lane_loop_take_replies(lp);
        lane_loop_take_turns(lp);
        if (lp->now != lp->swept)
            sweep_idle(lp);
        lane_loop_bury(lp);
    }
    lane_loop_bury(lp);
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
                            const lane_tls *tls, http_lane **out)
{
    *out = NULL;
    const http_config *cfg = http_server_config(srv);
    http_lane *l = calloc(1, sizeof *l);
    if (!l)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    l->srv = srv;
    l->cfg = cfg;
    l->tls = tls;
    static const char *const no_prefixes[] = {NULL}; /* HTTPS alone: every request relayed */
    l->prefixes = cfg->lane_prefixes ? cfg->lane_prefixes : no_prefixes;
    for (const char *const *p = l->prefixes; *p; p++)
        if (strlen(*p) > l->prefix_max)
            l->prefix_max = strlen(*p);
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
        lane_loop_take_replies(lp);
        while (lp->conns) {
            lane_conn *c = lp->conns;
            l->leaked |= c->state == LANE_WAITING;
            lane_conn_close(c);
        }
        lane_loop_bury(lp);
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
