/*
 * train/comm/net_member.c - the "net" back end of comm.h: a member on a
 * node of its own, whose collectives run over the TCP ring of
 * net_allreduce.h. It listens once for its whole life; each generation is
 * a new ring (a comm_net group) accepted on that listener.
 */
#include "comm_internal.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

typedef struct net_member {
    comm base;
    comm_net_listener *listener;
    comm_net *ring;  /* the generation's; NULL in a generation of 1 or none */
    uint32_t failed; /* generation whose join failed last; 0: none */
    uint8_t secret[COMM_NET_SECRET_BYTES];
} net_member;

static const comm_ops net_member_ops;

static net_member *as_member(const comm *c)
{
    return c != NULL && c->ops == &net_member_ops ? (net_member *)c : NULL;
}

/* NULL when there is a ring to run on (*alone: a generation of 1, none
 * needed). */
static loom_error *ring_of(net_member *m, const char *op, int *alone)
{
    *alone = m->base.world_size == 1;
    if (*alone || m->ring)
        return NULL;
    return loom_err(LOOM_ERR_UNAVAILABLE,
                    "net %s: generation %u did not form; this member is in no ring until "
                    "it joins a newer one",
                    op, m->failed);
}

/* Runs after a call on the ring: its blocked time is the member's wait. */
static loom_error *count_wait(net_member *m, uint64_t blocked_before, loom_error *err)
{
    m->base.wait_ns += comm_net_blocked_ns(m->ring) - blocked_before;
    return err;
}

static loom_error *net_allreduce_avg(comm *c, float *buf, size_t count, uint64_t deadline_ns)
{
    net_member *m = (net_member *)c;
    int alone = 0;
    loom_error *err = ring_of(m, "all-reduce", &alone);
    if (err || alone)
        return err; /* the average of one is itself */
    uint64_t before = comm_net_blocked_ns(m->ring);
    return count_wait(m, before,
                      comm_net_allreduce(m->ring, buf, count, COMM_NET_F32,
                                         1.0 / c->world_size, deadline_ns));
}

static loom_error *net_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                                 uint64_t deadline_ns)
{
    net_member *m = (net_member *)c;
    int alone = 0;
    loom_error *err = ring_of(m, "broadcast", &alone);
    if (err || alone)
        return err;
    uint64_t before = comm_net_blocked_ns(m->ring);
    return count_wait(m, before, comm_net_broadcast(m->ring, buf, bytes, root, deadline_ns));
}

/* An all-reduce of one element: every member's value is in the sum every
 * member receives, so no member leaves before all arrived. */
static loom_error *net_barrier(comm *c, uint64_t deadline_ns)
{
    net_member *m = (net_member *)c;
    int alone = 0;
    loom_error *err = ring_of(m, "barrier", &alone);
    if (err || alone)
        return err;
    float token = 0.0f;
    uint64_t before = comm_net_blocked_ns(m->ring);
    return count_wait(m, before,
                      comm_net_allreduce(m->ring, &token, 1, COMM_NET_F32, 1.0, deadline_ns));
}

static void net_close(comm *c)
{
    net_member *m = (net_member *)c;
    comm_net_close(m->ring);
    comm_net_listener_close(m->listener);
    sodium_memzero(m->secret, sizeof(m->secret));
    free(m);
}

static const comm_ops net_member_ops = {
    .name = "net",
    .allreduce_avg_f32 = net_allreduce_avg,
    .broadcast = net_broadcast,
    .barrier = net_barrier,
    .close = net_close,
};

loom_error *comm_net_member_open(const char *bind_address, const uint8_t *secret,
                                 uint32_t link_timeout_ms, comm **out)
{
    *out = NULL;
    if (secret == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net member: no secret (expected COMM_NET_SECRET_BYTES bytes)");
    net_member *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return loom_err(LOOM_ERR_INTERNAL, "net member: out of memory");
    loom_error *err = comm_net_listener_open(bind_address, link_timeout_ms, &m->listener);
    if (err) {
        free(m);
        return err;
    }
    m->base.ops = &net_member_ops;
    memcpy(m->secret, secret, sizeof(m->secret));
    *out = &m->base;
    return NULL;
}

uint16_t comm_net_member_port(const comm *c)
{
    net_member *m = as_member(c);
    return m ? comm_net_listener_port(m->listener) : 0;
}

static loom_error *check_join(const net_member *m, uint32_t generation,
                              const comm_net_peer *peers, uint32_t count, uint32_t rank)
{
    if (generation == 0 || generation <= m->base.generation)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net member: generation %u: expected one newer than generation %u, "
                        "the last joined",
                        generation, m->base.generation);
    if (peers == NULL || count == 0 || count > COMM_NET_MAX_PEERS || rank >= count)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net member: %u peers, rank %u: expected a list of 1 to %u peers "
                        "(COMM_NET_MAX_PEERS) and a rank below their count",
                        count, rank, COMM_NET_MAX_PEERS);
    uint16_t port = comm_net_listener_port(m->listener);
    if (peers[rank].port != port)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net member: peers[%u] (this member, rank %u) has port %u; expected "
                        "the port it listens on, %u",
                        rank, rank, peers[rank].port, port);
    return NULL;
}

loom_error *comm_net_member_join(comm *c, uint32_t generation, const comm_net_peer *peers,
                                 uint32_t count, uint32_t rank, uint64_t deadline_ns)
{
    net_member *m = as_member(c);
    if (m == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "net member: the handle is not a net member");
    loom_error *err = check_join(m, generation, peers, count, rank);
    if (err)
        return err;
    /* The previous ring goes first: its neighbours, moving on too, see it
     * close rather than wait on it. */
    comm_net_close(m->ring);
    m->ring = NULL;
    m->base.world_size = 0;
    uint64_t started = comm_now_ns();
    if (count > 1)
        err = comm_net_connect_on(m->listener, peers, count, rank, generation, m->secret,
                                  deadline_ns, &m->ring);
    m->base.wait_ns += comm_now_ns() - started;
    if (err) {
        m->failed = generation;
        return err;
    }
    m->failed = 0;
    m->base.rank = rank;
    m->base.world_size = count;
    m->base.generation = generation;
    return NULL;
}
