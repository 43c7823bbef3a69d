/*
 * train/comm/comm.c - the back-end-neutral half of comm.h: deadlines,
 * argument checks every back end shares, and dispatch to the back end.
 */
#include "comm_internal.h"

#include <time.h>

#include "util/error.h"

uint64_t comm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t comm_deadline_after_ms(uint32_t ms)
{
    return comm_now_ns() + (uint64_t)ms * 1000000ull;
}

/* Collectives need a generation to run in: catch a missing join here with a
 * message that says so, rather than in each back end. */
static loom_error *require_member(const comm *c, const char *op)
{
    if (c == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s: comm handle is NULL", op);
    if (c->generation == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: not a member of any generation yet (join one first)",
                        op);
    return NULL;
}

loom_error *comm_allreduce_avg_f32(comm *c, float *buf, size_t count,
                                   uint64_t deadline_ns)
{
    loom_error *err = require_member(c, "allreduce");
    if (err)
        return err;
    if (buf == NULL && count > 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "allreduce: buffer is NULL");
    return c->ops->allreduce_avg_f32(c, buf, count, deadline_ns);
}

loom_error *comm_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                           uint64_t deadline_ns)
{
    loom_error *err = require_member(c, "broadcast");
    if (err)
        return err;
    if (buf == NULL && bytes > 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "broadcast: buffer is NULL");
    if (root >= c->world_size)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "broadcast: root rank %u is out of range (world size %u)",
                        root, c->world_size);
    return c->ops->broadcast(c, buf, bytes, root, deadline_ns);
}

loom_error *comm_barrier(comm *c, uint64_t deadline_ns)
{
    loom_error *err = require_member(c, "barrier");
    if (err)
        return err;
    return c->ops->barrier(c, deadline_ns);
}

uint32_t comm_rank(const comm *c) { return c ? c->rank : 0; }
uint32_t comm_world_size(const comm *c) { return c ? c->world_size : 0; }
uint32_t comm_generation(const comm *c) { return c ? c->generation : 0; }
const char *comm_backend_name(const comm *c) { return c ? c->ops->name : "none"; }
uint64_t comm_wait_ns(const comm *c) { return c ? c->wait_ns : 0; }

void comm_close(comm *c)
{
    if (c)
        c->ops->close(c);
}
