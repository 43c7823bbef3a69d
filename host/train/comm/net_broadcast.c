/*
 * train/comm/net_broadcast.c - comm_net_broadcast (net_allreduce.h): the
 * root's bytes pass along the ring, each peer forwarding to its right what
 * arrived from its left while the rest still arrives. One thread polls
 * both links; the group's sender thread stays idle (it works only inside
 * an all-reduce). Bytes are bytes: any count, no element type.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "comm.h"
#include "net_allreduce_internal.h"

/* The most bytes one system call moves, so that receiving and forwarding
 * take turns often and the pipeline never drains on one side. */
#define STREAM_CALL_BYTES (1u << 20)

/* One broadcast on one peer. The root has every byte from the start; the
 * last peer before the root only receives. */
typedef struct pass {
    comm_net *g;
    char *buf;
    size_t bytes, received, sent;
    int receives, forwards;
} pass;

static size_t call_bytes(size_t n) { return n < STREAM_CALL_BYTES ? n : STREAM_CALL_BYTES; }

static int waits_left(const pass *p) { return p->receives && p->received < p->bytes; }
static int waits_right(const pass *p) { return p->forwards && p->sent < p->received; }

/* Moves what the links take without waiting; *moved when anything did. */
static loom_error *move(pass *p, int *moved)
{
    comm_net *g = p->g;
    if (waits_left(p)) {
        ssize_t n = recv(g->left_fd, p->buf + p->received, call_bytes(p->bytes - p->received),
                         MSG_DONTWAIT);
        if (n > 0) {
            p->received += (size_t)n;
            *moved = 1;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            return comm_net_peer_gone(comm_net_left_of(g), n == 0 ? 0 : errno, "a broadcast");
        }
    }
    if (waits_right(p)) {
        ssize_t n = send(g->right_fd, p->buf + p->sent, call_bytes(p->received - p->sent),
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            p->sent += (size_t)n;
            *moved = 1;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            return comm_net_peer_gone(comm_net_right_of(g), n == 0 ? 0 : errno, "a broadcast");
        }
    }
    return NULL;
}

/* Waits until a link this peer needs is ready, or the deadline passes
 * (naming the neighbour it waited for). */
static loom_error *wait_links(pass *p, uint64_t deadline_ns)
{
    comm_net *g = p->g;
    if (!waits_left(p) && !(p->forwards && p->sent < p->bytes))
        return NULL; /* the last move finished it */
    struct pollfd fds[2] = {
        {.fd = waits_left(p) ? g->left_fd : -1, .events = POLLIN},
        {.fd = waits_right(p) ? g->right_fd : -1, .events = POLLOUT},
    };
    int timeout = comm_net_ms_until(deadline_ns);
    if (timeout < 0)
        return comm_net_peer_late(fds[0].fd >= 0 ? comm_net_left_of(g) : comm_net_right_of(g),
                                  "a broadcast");
    uint64_t since = comm_now_ns();
    int n = poll(fds, 2, timeout);
    if (fds[0].fd >= 0)
        comm_net_count_blocked(g, since);
    if (n < 0 && errno != EINTR)
        return loom_err_sys(LOOM_ERR_INTERNAL, errno, "net broadcast: poll");
    return NULL; /* ready, an error the next call reports, or the deadline */
}

loom_error *comm_net_broadcast(comm_net *g, void *buf, size_t bytes, uint32_t root,
                               uint64_t deadline_ns)
{
    if (g == NULL || (buf == NULL && bytes > 0))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "net broadcast: needs a group and a buffer");
    loom_error *err = comm_net_usable(g, "broadcast");
    if (err)
        return err;
    if (root >= g->world)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net broadcast: root rank %u: expected a rank below the world size %u",
                        root, g->world);
    if (g->world == 1 || bytes == 0)
        return NULL;
    uint32_t after_root = (g->rank + g->world - root) % g->world;
    pass p = {.g = g, .buf = buf, .bytes = bytes, .received = after_root == 0 ? bytes : 0,
              .receives = after_root != 0, .forwards = after_root != g->world - 1};
    while (err == NULL && (p.received < bytes || (p.forwards && p.sent < bytes))) {
        int moved = 0;
        err = move(&p, &moved);
        /* Waiting checks the deadline; bytes that trickle in get checked
         * too, so a slow but steady stream stops in time. */
        if (err == NULL && (!moved || comm_now_ns() >= deadline_ns))
            err = wait_links(&p, deadline_ns);
    }
    return err ? comm_net_fail(g, err) : NULL;
}
