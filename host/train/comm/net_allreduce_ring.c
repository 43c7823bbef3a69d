/*
 * train/comm/net_allreduce_ring.c - the all-reduce of net_allreduce.h.
 *
 * With K peers and the buffer cut into K segments, a call is 2 (K-1) steps
 * on each of two streams: the send stream to the right neighbour and the
 * receive stream from the left one. Send step t carries segment
 * send_segment(t), receive step t carries receive_segment(t):
 *   reduce-scatter (t < K-1): send r-t, receive r-t-1 and add it in;
 *   all-gather (t >= K-1, s = t-K+1): send r+1-s, receive r-s over ours.
 * Send step t+1 carries the segment receive step t delivered, so it may
 * send each byte as soon as that byte was received (and added). Segment
 * r+1 is whole after the last reduce-scatter step, which also applies the
 * scale. An all-gather step never overwrites a byte a send still needs:
 * send() copies into the kernel, and the reduced value of a byte cannot
 * exist anywhere before this peer's own part of it was sent. (That order
 * runs through the network, where ThreadSanitizer cannot follow it: it
 * reports the all-gather's recv() into bytes the sender thread sent.)
 *
 * Each stream has a thread of its own, so that both directions of every
 * link move at once and neither waits for the other's system calls: the
 * caller's thread receives (and adds), the group's sender thread sends,
 * following the receive stream's position (an atomic byte count; an
 * eventfd wakes the sender when it waits for it). Either one that fails
 * records the call's first error, raises the abort eventfd the other polls
 * beside its socket, and stops. Only the sender watches the right link
 * (a neighbour that finished may close it; it cannot while this peer still
 * has bytes to send it).
 * Reduce-scatter receives into a fixed scratch buffer and adds whole
 * elements from it (a partial element waits at its start); all-gather
 * receives straight into the caller's buffer.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "net_allreduce_internal.h"

/* Reduce-scatter's receive buffer: large enough that a receive call moves
 * much, small enough to stay in L2 while it is added. */
#define SCRATCH_BYTES (256u << 10)
/* How long a failure on one link waits to see whether the other link goes
 * down too (see ring_failure): the time a close takes to cross a link. */
#define SECOND_LINK_GRACE_MS 20

/* One call, shared by the caller's thread and the sender thread. */
typedef struct ring_pass {
    comm_net *g;
    char *base;
    size_t count, esize;
    comm_net_type type;
    double scale;
    uint64_t deadline_ns;
    uint32_t steps;                 /* 2 (K-1) on each stream */
    _Atomic uint64_t received;      /* receive stream: bytes received and added */
    loom_error *error;              /* the first error (under g->lock) */
    int aborted;                    /* under g->lock */
    int sender_done;                /* under g->lock */
} ring_pass;

static uint32_t ring_mod(const ring_pass *p, int64_t v)
{
    int64_t k = p->g->world;
    return (uint32_t)(((v % k) + k) % k);
}

static uint32_t send_segment(const ring_pass *p, uint32_t t)
{
    uint32_t k = p->g->world, r = p->g->rank;
    return t < k - 1 ? ring_mod(p, (int64_t)r - t) : ring_mod(p, (int64_t)r + 1 - (t - (k - 1)));
}

static uint32_t receive_segment(const ring_pass *p, uint32_t t)
{
    uint32_t k = p->g->world, r = p->g->rank;
    return t < k - 1 ? ring_mod(p, (int64_t)r - t - 1) : ring_mod(p, (int64_t)r - (t - (k - 1)));
}

/* First element of segment j: floor(j * count / K), without overflow. */
static size_t segment_first(const ring_pass *p, uint32_t j)
{
    size_t k = p->g->world;
    return j * (p->count / k) + j * (p->count % k) / k;
}

static size_t segment_bytes(const ring_pass *p, uint32_t j)
{
    return (segment_first(p, j + 1) - segment_first(p, j)) * p->esize;
}

static char *segment_at(const ring_pass *p, uint32_t j)
{
    return p->base + segment_first(p, j) * p->esize;
}

/* dst = dst + src (then * scale on the last reduce-scatter step), n
 * elements. The sum is the same bits whichever operand is the partial. */
static void add_into(const ring_pass *p, void *dst, const void *src, size_t n, int last)
{
    if (p->type == COMM_NET_F32) {
        float *d = dst;
        const float *s = src;
        float scale = (float)p->scale;
        if (last && p->scale != 1.0) {
            for (size_t i = 0; i < n; i++)
                d[i] = (d[i] + s[i]) * scale;
        } else {
            for (size_t i = 0; i < n; i++)
                d[i] += s[i];
        }
    } else {
        double *d = dst;
        const double *s = src;
        if (last && p->scale != 1.0) {
            for (size_t i = 0; i < n; i++)
                d[i] = (d[i] + s[i]) * p->scale;
        } else {
            for (size_t i = 0; i < n; i++)
                d[i] += s[i];
        }
    }
}

static void scale_all(void *buf, size_t count, comm_net_type type, double scale)
{
    if (scale == 1.0)
        return;
    if (type == COMM_NET_F32) {
        float *d = buf, s = (float)scale;
        for (size_t i = 0; i < count; i++)
            d[i] *= s;
    } else {
        double *d = buf;
        for (size_t i = 0; i < count; i++)
            d[i] *= scale;
    }
}

/* ---- failures ---------------------------------------------------------- */

/* Whether the link on fd is closed or broken (a FIN, a reset, an error)
 * or becomes so within `ms`. */
static int link_down_within(int fd, int ms)
{
    struct pollfd q = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&q, 1, ms) == 1 && (q.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The link with `rank` failed. A peer that fails shuts both its links, so
 * a neighbour of its neighbour may see that second-hand failure first:
 * when the other link goes down too (within SECOND_LINK_GRACE_MS), name
 * both, so that the neighbours of the peer that failed always name it. */
static loom_error *ring_failure(const ring_pass *p, uint32_t rank, int errnum)
{
    comm_net *g = p->g;
    uint32_t other = rank == comm_net_right_of(g) ? comm_net_left_of(g) : comm_net_right_of(g);
    int other_fd = rank == comm_net_right_of(g) ? g->left_fd : g->right_fd;
    if (other != rank && link_down_within(other_fd, SECOND_LINK_GRACE_MS))
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "net all-reduce: the links with rank %u and with rank %u both failed "
                        "during an all-reduce (%s)",
                        other, rank, errnum ? strerror(errnum) : "closed");
    return comm_net_peer_gone(rank, errnum, "an all-reduce");
}

/* Records the call's first error (NULL: only stop) and wakes the other
 * thread wherever it waits. */
static void abort_pass(ring_pass *p, loom_error *err)
{
    comm_net *g = p->g;
    pthread_mutex_lock(&g->lock);
    if (p->error == NULL)
        p->error = err;
    else
        loom_err_free(err);
    if (!p->aborted) {
        p->aborted = 1;
        uint64_t one = 1;
        if (write(g->abort_fd, &one, sizeof(one)) != sizeof(one))
            abort(); /* an eventfd write of 1 only fails on overflow */
    }
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* What a wait on a link ended with, besides an error. */
enum { LINK_READY, LINK_STOP, LINK_PROGRESS };

/* Waits for `events` on fd (the left link, or the right one: 0 to watch
 * only that it stays up), the abort eventfd, and, for the sender, the
 * receive stream's progress. A deadline passing while the sender only
 * waits for progress is the receiving thread's to report: the sender
 * just stops. */
static loom_error *wait_link(ring_pass *p, int fd, short events, int *outcome)
{
    comm_net *g = p->g;
    int right = fd == g->right_fd;
    struct pollfd fds[3] = {
        /* Nothing ever comes from the right after the handshake: readable
         * means it closed. */
        {.fd = fd, .events = (short)(events | (right ? POLLRDHUP | POLLIN : 0))},
        {.fd = g->abort_fd, .events = POLLIN},
        {.fd = right ? g->progress_fd : -1, .events = POLLIN},
    };
    for (;;) {
        int timeout = comm_net_ms_until(p->deadline_ns);
        if (timeout < 0 && right && events == 0) {
            *outcome = LINK_STOP;
            return NULL;
        }
        if (timeout < 0)
            return comm_net_peer_late(right ? comm_net_right_of(g) : comm_net_left_of(g),
                                      "an all-reduce");
        int n = poll(fds, 3, timeout);
        if (n < 0 && errno != EINTR)
            return loom_err_sys(LOOM_ERR_INTERNAL, errno, "net all-reduce: poll");
        if (n <= 0)
            continue;
        if (fds[1].revents) {
            *outcome = LINK_STOP;
            return NULL;
        }
        if (right && (fds[0].revents & (POLLRDHUP | POLLIN | POLLHUP | POLLERR))) {
            int errnum = 0;
            socklen_t len = sizeof(errnum);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &errnum, &len);
            return ring_failure(p, comm_net_right_of(g), errnum);
        }
        if (fds[2].revents) {
            uint64_t drained;
            if (read(g->progress_fd, &drained, sizeof(drained)) < 0)
                drained = 0;
            *outcome = LINK_PROGRESS;
            return NULL;
        }
        *outcome = LINK_READY; /* or an error the next call reports */
        return NULL;
    }
}

/* ---- the send stream (the sender thread) ------------------------------ */

/* Waits until the receive stream is past `position` (1), or the call
 * stops (0, *err set when the right link failed). */
static int wait_received(ring_pass *p, uint64_t position, loom_error **err)
{
    comm_net *g = p->g;
    for (;;) {
        /* Say so before looking again: the receiver writes progress_fd
         * after each store when it sees this flag, so no wake-up is lost. */
        atomic_store(&g->sender_waiting, 1);
        if (atomic_load(&p->received) > position) {
            atomic_store(&g->sender_waiting, 0);
            return 1;
        }
        int outcome = LINK_READY;
        *err = wait_link(p, g->right_fd, 0, &outcome);
        atomic_store(&g->sender_waiting, 0);
        if (*err || outcome == LINK_STOP)
            return 0;
    }
}

static loom_error *send_stream(ring_pass *p)
{
    comm_net *g = p->g;
    uint64_t from_received = 0; /* receive stream position where step t-1 began */
    for (uint32_t t = 0; t < p->steps; t++) {
        if (t >= 2)
            from_received += segment_bytes(p, receive_segment(p, t - 2));
        size_t bytes = segment_bytes(p, send_segment(p, t)), sent = 0;
        char *from = segment_at(p, send_segment(p, t));
        while (sent < bytes) {
            if (comm_now_ns() >= p->deadline_ns)
                return comm_net_peer_late(comm_net_right_of(g), "an all-reduce");
            size_t may = bytes;
            if (t > 0) { /* what receive step t-1 delivered of this segment */
                uint64_t at = atomic_load(&p->received);
                may = at <= from_received ? 0 : (size_t)(at - from_received);
                if (may > bytes)
                    may = bytes;
            }
            loom_error *err = NULL;
            if (may <= sent) {
                if (!wait_received(p, from_received + sent, &err))
                    return err;
                continue;
            }
            ssize_t n = send(g->right_fd, from + sent, may - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                sent += (size_t)n;
            } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                int outcome = LINK_READY;
                err = wait_link(p, g->right_fd, POLLOUT, &outcome);
                if (err || outcome == LINK_STOP)
                    return err;
            } else {
                return ring_failure(p, comm_net_right_of(g), n < 0 ? errno : 0);
            }
        }
    }
    return NULL;
}

static void *sender_main(void *arg)
{
    comm_net *g = arg;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (!g->quit && (g->job == NULL || g->job->sender_done))
            pthread_cond_wait(&g->cond, &g->lock);
        if (g->quit)
            break;
        ring_pass *p = g->job;
        pthread_mutex_unlock(&g->lock);
        loom_error *err = send_stream(p);
        if (err)
            abort_pass(p, err);
        pthread_mutex_lock(&g->lock);
        p->sender_done = 1;
        pthread_cond_broadcast(&g->cond);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

/* ---- the receive stream (the caller's thread) ------------------------- */

/* Receives one step into `into` (all-gather) or through the scratch buffer
 * (reduce-scatter), publishing its progress. NULL with *stopped when the
 * sender failed. */
static loom_error *receive_step(ring_pass *p, uint32_t t, uint64_t *position, int *stopped)
{
    comm_net *g = p->g;
    uint32_t k = g->world, seg = receive_segment(p, t);
    size_t bytes = segment_bytes(p, seg), done = 0, pending = 0;
    char *to = segment_at(p, seg);
    int reducing = t < k - 1;
    while (done < bytes) {
        /* Checked on every turn: a slow but steady stream stops in time too. */
        if (comm_now_ns() >= p->deadline_ns)
            return comm_net_peer_late(comm_net_left_of(g), "an all-reduce");
        size_t want = bytes - done;
        char *into = to + done;
        if (reducing) {
            want -= pending;
            if (want > SCRATCH_BYTES - pending)
                want = SCRATCH_BYTES - pending;
            into = (char *)g->scratch + pending;
        }
        ssize_t n = recv(g->left_fd, into, want, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            int outcome = LINK_READY;
            uint64_t since = comm_now_ns();
            loom_error *err = wait_link(p, g->left_fd, POLLIN, &outcome);
            comm_net_count_blocked(g, since);
            *stopped = outcome == LINK_STOP;
            if (err || *stopped)
                return err;
            continue;
        }
        if (n <= 0)
            return ring_failure(p, comm_net_left_of(g), n < 0 ? errno : 0);
        size_t got = (size_t)n;
        if (reducing) {
            size_t have = pending + got, whole = have / p->esize;
            add_into(p, to + done, g->scratch, whole, t == k - 2);
            got = whole * p->esize;
            pending = have - got;
            memmove(g->scratch, g->scratch + got, pending);
        }
        done += got;
        /* The sender may now send these bytes on. */
        atomic_store(&p->received, *position + done);
        if (atomic_load(&g->sender_waiting)) {
            uint64_t one = 1;
            if (write(g->progress_fd, &one, sizeof(one)) < 0)
                one = 0; /* EAGAIN: the counter is full of wake-ups already */
        }
    }
    *position += bytes;
    return NULL;
}

loom_error *comm_net_allreduce(comm_net *g, void *buf, size_t count,
                               comm_net_type type, double scale, uint64_t deadline_ns)
{
    if (g == NULL || (buf == NULL && count > 0) ||
        (type != COMM_NET_F32 && type != COMM_NET_F64))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: needs a group, a buffer and a type (F32 or F64)");
    size_t esize = type == COMM_NET_F32 ? sizeof(float) : sizeof(double);
    if (count > SIZE_MAX / esize)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: %zu elements do not fit in memory", count);
    loom_error *unusable = comm_net_usable(g, "all-reduce");
    if (unusable)
        return unusable;
    if (g->world == 1 || count == 0) {
        scale_all(buf, count, type, scale);
        return NULL;
    }
    ring_pass p = {.g = g, .base = buf, .count = count, .esize = esize, .type = type,
                   .scale = scale, .deadline_ns = deadline_ns, .steps = 2 * (g->world - 1)};
    atomic_init(&p.received, 0);
    pthread_mutex_lock(&g->lock);
    g->job = &p;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);

    uint64_t position = 0;
    int stopped = 0;
    for (uint32_t t = 0; t < p.steps && !stopped; t++) {
        loom_error *err = receive_step(&p, t, &position, &stopped);
        if (err) {
            abort_pass(&p, err);
            break;
        }
    }
    /* The sender's waits all end by the deadline or at an abort. */
    pthread_mutex_lock(&g->lock);
    while (!p.sender_done)
        pthread_cond_wait(&g->cond, &g->lock);
    g->job = NULL;
    loom_error *err = p.error;
    pthread_mutex_unlock(&g->lock);
    if (p.aborted) { /* drain the eventfd for the next call */
        uint64_t drained;
        if (read(g->abort_fd, &drained, sizeof(drained)) < 0)
            drained = 0;
    }
    return err ? comm_net_fail(g, err) : NULL;
}

/* ---- the sender thread's life ----------------------------------------- */

loom_error *comm_net_ring_start(comm_net *g)
{
    g->scratch = malloc(SCRATCH_BYTES);
    if (g->scratch == NULL)
        return loom_err(LOOM_ERR_INTERNAL, "net all-reduce: out of memory");
    g->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g->progress_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g->abort_fd < 0 || g->progress_fd < 0)
        return loom_err_sys(LOOM_ERR_INTERNAL, errno, "net all-reduce: eventfd");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the deadlines' clock */
    pthread_cond_init(&g->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&g->lock, NULL);
    int rc = pthread_create(&g->sender, NULL, sender_main, g);
    if (rc != 0) {
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        return loom_err_sys(LOOM_ERR_INTERNAL, rc, "net all-reduce: starting the sender thread");
    }
    g->sender_running = 1;
    return NULL;
}

void comm_net_ring_stop(comm_net *g)
{
    if (g->sender_running) {
        pthread_mutex_lock(&g->lock);
        g->quit = 1;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->sender, NULL);
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        g->sender_running = 0;
    }
    if (g->abort_fd >= 0)
        close(g->abort_fd);
    if (g->progress_fd >= 0)
        close(g->progress_fd);
    g->abort_fd = g->progress_fd = -1;
    free(g->scratch);
    g->scratch = NULL;
}
