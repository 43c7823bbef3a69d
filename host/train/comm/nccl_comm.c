/*
 * train/comm/nccl_comm.c - the nccl back end of comm.h: average all-reduce
 * and broadcast on device buffers over an NCCL communicator, one
 * communicator per generation.
 *
 * Communicators are created non-blocking (config.blocking = 0) so that
 * init, shrink and every collective return at once and this file polls
 * them against the caller's deadline; on a missed deadline or a peer's
 * failure the communicator is aborted (ncclCommAbort never waits for
 * peers) and the member must adopt a new generation.
 *
 * A joining worker means a new communicator from a fresh unique id
 * (comm_nccl_join); a leaving one can instead be dropped with
 * ncclCommShrink (comm_nccl_shrink), which keeps the survivors' resources.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"
#include "util/cuda_dl.h"
#include "util/error.h"

/* Set once by the two entry points (comm_nccl_unique_id, comm_nccl_open);
 * every other call here runs on a member that open made. */
static const cuda_runtime_api *rt;
static const nccl_api *nc;
static pthread_once_t libraries_once = PTHREAD_ONCE_INIT;

static void load_libraries_once(void)
{
    const nccl_api *n = NULL;
    const cuda_runtime_api *r = NULL;
    loom_err_free(cuda_nccl_load(&n)); /* a failure is asked again below */
    if (n && !cuda_runtime_load(&r)) {
        nc = n;
        rt = r;
    }
}

/* NULL when NCCL and the CUDA runtime are loaded; else why not. */
static loom_error *load_libraries(const char *op)
{
    pthread_once(&libraries_once, load_libraries_once);
    if (nc)
        return NULL;
    const nccl_api *unused;
    loom_error *e = cuda_nccl_load(&unused);
    return e ? loom_err_wrap(e, "%s", op)
             : loom_err(LOOM_ERR_INTERNAL, "%s: the CUDA libraries did not load", op);
}

typedef struct nccl_member {
    comm base;
    int32_t device;
    ncclComm_t nccl; /* NULL until the first join, and after an abort */
    cudaStream_t stream;
    float *barrier_scratch; /* one device float: NCCL has no barrier */
} nccl_member;

static const comm_ops nccl_member_ops;

static loom_error *nccl_error(const char *op, ncclResult_t r)
{
    return loom_err(r == ncclRemoteError || r == ncclSystemError
                        ? LOOM_ERR_UNAVAILABLE
                        : LOOM_ERR_INTERNAL,
                    "%s: NCCL error %d: %s", op, (int)r, nc->ncclGetErrorString(r));
}

static loom_error *cuda_error(const char *op, cudaError_t e)
{
    return loom_err(LOOM_ERR_INTERNAL, "%s: CUDA error %d: %s", op, (int)e,
                    rt->cudaGetErrorString(e));
}

static void pause_briefly(void)
{
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
}

/* Drops the communicator without waiting for peers; the member then has no
 * generation until it joins one. */
static void abandon_generation(nccl_member *m)
{
    if (m->nccl)
        nc->ncclCommAbort(m->nccl);
    m->nccl = NULL;
    m->base.generation = 0;
    m->base.world_size = 0;
    m->base.rank = 0;
}

/* Polls a non-blocking communicator until its pending work (init, shrink,
 * enqueueing a collective) is done. */
static loom_error *wait_comm_ready(ncclComm_t comm, uint64_t deadline_ns,
                                   const char *op)
{
    for (;;) {
        ncclResult_t state = ncclSuccess;
        ncclResult_t r = nc->ncclCommGetAsyncError(comm, &state);
        if (r != ncclSuccess)
            return nccl_error(op, r);
        if (state == ncclSuccess)
            return NULL;
        if (state != ncclInProgress)
            return nccl_error(op, state);
        if (comm_now_ns() >= deadline_ns)
            return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                            "%s: NCCL did not finish before the deadline (a peer "
                            "did not arrive)",
                            op);
        pause_briefly();
    }
}

/* Waits for the collective just enqueued on the member's stream. */
static loom_error *finish_collective(nccl_member *m, ncclResult_t enqueued,
                                     uint64_t deadline_ns, const char *op)
{
    loom_error *err = NULL;
    if (enqueued != ncclSuccess && enqueued != ncclInProgress)
        err = nccl_error(op, enqueued);
    else
        err = wait_comm_ready(m->nccl, deadline_ns, op);
    while (err == NULL) {
        cudaError_t e = rt->cudaStreamQuery(m->stream);
        if (e == cudaSuccess)
            return NULL;
        if (e != cudaErrorNotReady) {
            err = cuda_error(op, e);
            break;
        }
        ncclResult_t state = ncclSuccess;
        nc->ncclCommGetAsyncError(m->nccl, &state);
        if (state != ncclSuccess && state != ncclInProgress) {
            err = nccl_error(op, state);
            break;
        }
        if (comm_now_ns() >= deadline_ns) {
            err = loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                           "%s: generation %u did not complete before the "
                           "deadline (a peer did not arrive)",
                           op, m->base.generation);
            break;
        }
        sched_yield();
    }
    abandon_generation(m);
    return loom_err_wrap(err, "communicator aborted, join a new generation");
}

static loom_error *nccl_allreduce_avg_f32(comm *c, float *buf, size_t count,
                                          uint64_t deadline_ns)
{
    nccl_member *m = (nccl_member *)c;
    if (count == 0)
        return NULL;
    ncclResult_t r = nc->ncclAllReduce(buf, buf, count, ncclFloat32, ncclAvg, m->nccl,
                                   m->stream);
    return finish_collective(m, r, deadline_ns, "allreduce");
}

static loom_error *nccl_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                                  uint64_t deadline_ns)
{
    nccl_member *m = (nccl_member *)c;
    if (bytes == 0)
        return NULL;
    ncclResult_t r = nc->ncclBroadcast(buf, buf, bytes, ncclUint8, (int)root, m->nccl,
                                   m->stream);
    return finish_collective(m, r, deadline_ns, "broadcast");
}

static loom_error *nccl_barrier(comm *c, uint64_t deadline_ns)
{
    nccl_member *m = (nccl_member *)c;
    ncclResult_t r = nc->ncclAllReduce(m->barrier_scratch, m->barrier_scratch, 1,
                                   ncclFloat32, ncclSum, m->nccl, m->stream);
    return finish_collective(m, r, deadline_ns, "barrier");
}

static void nccl_member_close(comm *c)
{
    nccl_member *m = (nccl_member *)c;
    abandon_generation(m);
    if (m->barrier_scratch)
        rt->cudaFree(m->barrier_scratch);
    if (m->stream)
        rt->cudaStreamDestroy(m->stream);
    free(m);
}

static const comm_ops nccl_member_ops = {
    .name = "nccl",
    .allreduce_avg_f32 = nccl_allreduce_avg_f32,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .close = nccl_member_close,
};

loom_error *comm_nccl_unique_id(uint8_t *id, size_t id_len)
{
    if (id == NULL || id_len != COMM_NCCL_ID_BYTES)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "nccl unique id: buffer must be %d bytes, got %zu",
                        COMM_NCCL_ID_BYTES, id_len);
    loom_error *e = load_libraries("nccl unique id");
    if (e)
        return e;
    ncclUniqueId uid;
    ncclResult_t r = nc->ncclGetUniqueId(&uid);
    if (r != ncclSuccess)
        return nccl_error("nccl unique id", r);
    memcpy(id, uid.internal, COMM_NCCL_ID_BYTES);
    return NULL;
}

loom_error *comm_nccl_open(int32_t device, comm **out)
{
    *out = NULL;
    loom_error *loaded = load_libraries("nccl open");
    if (loaded)
        return loaded;
    cudaError_t e = rt->cudaSetDevice(device);
    if (e != cudaSuccess)
        return loom_err_wrap(cuda_error("nccl open", e), "CUDA device %d", (int)device);
    nccl_member *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "nccl open: out of memory");
    m->base.ops = &nccl_member_ops;
    m->device = device;
    if ((e = rt->cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = rt->cudaMalloc((void **)&m->barrier_scratch, sizeof(float))) != cudaSuccess) {
        nccl_member_close(&m->base);
        return cuda_error("nccl open", e);
    }
    *out = &m->base;
    return NULL;
}

static nccl_member *as_nccl(comm *c)
{
    return c != NULL && c->ops == &nccl_member_ops ? (nccl_member *)c : NULL;
}

loom_error *comm_nccl_join(comm *c, uint32_t generation, const uint8_t *id,
                           size_t id_len, uint32_t world, uint32_t rank,
                           uint64_t deadline_ns)
{
    nccl_member *m = as_nccl(c);
    if (m == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "nccl join: not an nccl handle");
    if (id == NULL || id_len != COMM_NCCL_ID_BYTES || generation == 0 || world == 0 ||
        rank >= world)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "nccl join: need a %d-byte id, generation >= 1 and rank < "
                        "world (got %zu bytes, generation %u, rank %u of %u)",
                        COMM_NCCL_ID_BYTES, id_len, generation, rank, world);
    abandon_generation(m);
    rt->cudaSetDevice(m->device);

    ncclUniqueId uid;
    memcpy(uid.internal, id, COMM_NCCL_ID_BYTES);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t fresh = NULL;
    ncclResult_t r = nc->ncclCommInitRankConfig(&fresh, (int)world, uid, (int)rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        if (fresh)
            nc->ncclCommAbort(fresh);
        return nccl_error("nccl join", r);
    }
    loom_error *err = wait_comm_ready(fresh, deadline_ns, "nccl join");
    if (err) {
        nc->ncclCommAbort(fresh);
        return err;
    }
    m->nccl = fresh;
    m->base.generation = generation;
    m->base.world_size = world;
    m->base.rank = rank;
    return NULL;
}

loom_error *comm_nccl_shrink(comm *c, uint32_t generation,
                             const uint32_t *excluded_ranks, uint32_t count,
                             uint64_t deadline_ns)
{
    nccl_member *m = as_nccl(c);
    if (m == NULL || m->nccl == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "nccl shrink: no communicator to shrink (join a generation)");
    if (count == 0 || count >= m->base.world_size || excluded_ranks == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "nccl shrink: must exclude 1..%u ranks, got %u",
                        m->base.world_size - 1, count);
    int *excluded = malloc(count * sizeof(int));
    if (excluded == NULL)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "nccl shrink: out of memory");
    for (uint32_t i = 0; i < count; i++) {
        if (excluded_ranks[i] >= m->base.world_size || excluded_ranks[i] == m->base.rank) {
            free(excluded);
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "nccl shrink: excluded rank %u is out of range or this "
                            "member's own rank",
                            excluded_ranks[i]);
        }
        excluded[i] = (int)excluded_ranks[i];
    }

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t shrunk = NULL;
    /* NCCL_SHRINK_ABORT: the parent may have operations stuck on the peer
     * that left; terminate them first. */
    ncclResult_t r = nc->ncclCommShrink(m->nccl, excluded, (int)count, &shrunk, &config,
                                    NCCL_SHRINK_ABORT);
    free(excluded);
    loom_error *err = NULL;
    if (r != ncclSuccess && r != ncclInProgress)
        err = nccl_error("nccl shrink", r);
    else
        err = wait_comm_ready(shrunk, deadline_ns, "nccl shrink");
    int new_rank = 0, new_world = 0;
    if (err == NULL && ((r = nc->ncclCommUserRank(shrunk, &new_rank)) != ncclSuccess ||
                        (r = nc->ncclCommCount(shrunk, &new_world)) != ncclSuccess))
        err = nccl_error("nccl shrink", r);
    abandon_generation(m); /* the parent is done either way */
    if (err) {
        if (shrunk)
            nc->ncclCommAbort(shrunk);
        return err;
    }
    m->nccl = shrunk;
    m->base.generation = generation;
    m->base.world_size = (uint32_t)new_world;
    m->base.rank = (uint32_t)new_rank;
    return NULL;
}
