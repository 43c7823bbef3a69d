/*
 * train/comm/net_allreduce_internal.h - what the group's setup
 * (net_allreduce.c) and its ring (net_allreduce_ring.c) share.
 */
#ifndef LOOM_TRAIN_NET_ALLREDUCE_INTERNAL_H
#define LOOM_TRAIN_NET_ALLREDUCE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "net_allreduce.h"
#include "util/error.h"

struct ring_pass;

struct comm_net {
    int listen_fd;                   /* until linked: the listener's */
    comm_net_listener *own_listener; /* comm_net_listen's; NULL when borrowed */
    int left_fd;  /* receives from rank - 1 */
    int right_fd; /* sends to rank + 1 */
    uint16_t port;
    uint32_t rank, world, generation;
    uint32_t link_timeout_ms;
    int connected;
    char failure[256]; /* why the group is unusable; "" while it is fine */
    uint64_t blocked_ns; /* the caller's thread waited on its left link */
    unsigned char *scratch;
    /* The sender thread (net_allreduce_ring.c) and what it shares with
     * the caller's thread, under `lock`. */
    pthread_t sender;
    int sender_running;
    pthread_mutex_t lock;
    pthread_cond_t cond;       /* a job for the sender, or its end */
    int abort_fd;              /* eventfd: readable once the call failed */
    int progress_fd;           /* eventfd: the receive stream moved */
    _Atomic int sender_waiting; /* the sender waits on progress_fd */
    struct ring_pass *job;     /* the call the sender works on; NULL: none */
    int quit;
};

static inline uint32_t comm_net_left_of(const comm_net *g)
{
    return (g->rank + g->world - 1) % g->world;
}
static inline uint32_t comm_net_right_of(const comm_net *g) { return (g->rank + 1) % g->world; }

/* poll() timeout for the time left until deadline_ns: -1 when it passed. */
int comm_net_ms_until(uint64_t deadline_ns);
/* UNAVAILABLE: the link with `rank` closed (errnum 0) or failed. */
loom_error *comm_net_peer_gone(uint32_t rank, int errnum, const char *during);
/* DEADLINE_EXCEEDED naming `rank`. */
loom_error *comm_net_peer_late(uint32_t rank, const char *during);
/* Marks the group unusable with err's message and, unless it is a
 * deadline, shuts its links; returns err. */
loom_error *comm_net_fail(comm_net *g, loom_error *err);

/* NULL when a call may run on `g`: connected and not failed; `what`
 * names the call in the error. */
loom_error *comm_net_usable(const comm_net *g, const char *what);
/* Adds the time since `since_ns` to the group's blocked time. */
void comm_net_count_blocked(comm_net *g, uint64_t since_ns);

/* Starts the sender thread of a connected group of 2 or more peers. */
loom_error *comm_net_ring_start(comm_net *g);
/* Stops it (when it runs) and frees what it used. */
void comm_net_ring_stop(comm_net *g);

#endif
