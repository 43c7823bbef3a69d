/* train/worker_comm.c - a worker's collectives: attached to the host's
 * shared segment, or, on a Slurm node, a member of a TCP ring per
 * generation; joining each generation and pulling the state from its
 * root. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/adapter.h"
#include "train/checkpoint.h"
#include "train/worker_internal.h"

/* loom_trainer_config.gradient_memory: the adapter's gradient buffer in
 * this worker's region of the shared segment, so the all-reduce runs in
 * place. A refusal is said once; the adapter then allocates its own. */
static void *offer_gradient_memory(void *data, uint64_t nbytes)
{
    worker *w = data;
    float *region = NULL;
    loom_error *e = comm_shm_gradient_memory(w->comm, nbytes, &region);
    if (e) {
        train_worker_say("gradients stay in the adapter's memory (all-reduce through staging): %s",
            loom_err_message(e));
        loom_err_free(e);
    }
    return region;
}

/* What the host offers the adapter beyond the model (CPU only: a device's
 * kernels end later than the adapter's calls return): reducing during
 * backward, and the gradient buffer in the shared segment. The comm is
 * attached first: the gradient memory offered is its slot's. */
int train_worker_attach_collectives(worker *w, loom_trainer_config *cfg)
{
    loom_error *e;
    if (w->net) {
        /* The ring's own key, derived from the exec's secret: a ring
         * proof is never an answer to the coordinator's challenge. */
        uint8_t ring_key[COMM_NET_SECRET_BYTES];
        crypto_generichash(ring_key, sizeof ring_key, (const uint8_t *)"loom ring", 9, w->secret,
                           sizeof w->secret);
        e = comm_net_member_open("0.0.0.0", ring_key, LOOM_HEARTBEAT_TIMEOUT_MS, &w->comm);
        sodium_memzero(ring_key, sizeof ring_key);
    } else {
        e = comm_shm_attach(w->shm, w->slot, &w->comm);
    }
    if (e)
        return train_worker_fail(e, "collectives");
    /* Over TCP the all-reduce runs once per step on the whole buffer. */
    if (strcmp(w->device, "cpu") || w->net)
        return 0;
    if (w->overlap_reduce) {
        if (!(w->overlap = grad_overlap_new())) {
            fprintf(stderr, "loom worker: out of memory\n");
            return 1;
        }
        cfg->gradient_ready = grad_overlap_ready;
        cfg->gradient_ready_data = w->overlap;
    }
    if (w->in_place_reduce) {
        cfg->gradient_memory = offer_gradient_memory;
        cfg->gradient_memory_data = w;
    }
    return 0;
}

/* The comm a buffer travels on: nccl for device memory, shm for host
 * memory (a GPU adapter may keep small state, like step counters, on the
 * host). Both have the same members and ranks. */
comm *train_worker_comm_for(worker *w, const loom_tensor_view *v)
{
    return v->on_device && w->gpu_comm ? w->gpu_comm : w->comm;
}

/* The nccl side of a generation, after the shm barrier made every member
 * arrive: a generation that only lost members shrinks the communicator
 * (the leavers' ranks in the previous one excluded); any other gets a new
 * one from the coordinator's unique id. Ranks follow the shm ranks. */
static loom_error *join_gpu_generation(worker *w, const msg_join *join, uint64_t deadline)
{
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    if (join->shrink && w->joined_once) {
        loom_error *e = comm_nccl_shrink(w->gpu_comm, join->generation, join->exclude,
                                         join->nexclude, deadline);
        if (e || comm_rank(w->gpu_comm) == comm_rank(w->comm))
            return e;
        return loom_err(LOOM_E_INTERNAL, "nccl shrink gave rank %u, the generation says %u",
                        comm_rank(w->gpu_comm), comm_rank(w->comm));
    }
    uint8_t id[COMM_NCCL_ID_BYTES];
    size_t got = 0, len = strlen(join->nccl_id);
    if (len != 2 * sizeof id)
        return loom_err(LOOM_E_INVALID, "join: no nccl_id for a GPU generation");
    if (sodium_hex2bin(id, sizeof id, join->nccl_id, len, NULL, &got, NULL) != 0 || got != sizeof id)
        return loom_err(LOOM_E_INVALID, "join: nccl_id is not hexadecimal");
    return comm_nccl_join(w->gpu_comm, join->generation, id, sizeof id, comm_world_size(w->comm),
                          comm_rank(w->comm), deadline);
#else
    (void)w, (void)join, (void)deadline;
    return loom_err(LOOM_E_UNSUPPORTED, "built without CUDA");
#endif
}

/* Links this member into the generation's ring (TCP): the coordinator
 * lists every member's address in rank order. */
static loom_error *join_net_generation(worker *w, const msg_join *join, uint64_t deadline)
{
    if (join->nnet == 0)
        return loom_err(LOOM_E_INVALID, "join: no member addresses for a worker over TCP");
    comm_net_peer *peers = calloc(join->nnet, sizeof *peers);
    if (!peers)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    uint32_t rank = join->nnet;
    for (uint32_t r = 0; r < join->nnet; r++) {
        snprintf(peers[r].address, sizeof peers[r].address, "%s", join->net[r].address);
        peers[r].port = (uint16_t)join->net[r].port;
        if (join->net[r].slot == w->slot)
            rank = r;
    }
    loom_error *e = rank < join->nnet
                        ? comm_net_member_join(w->comm, join->generation, peers, join->nnet, rank,
                                               deadline)
                        : loom_err(LOOM_E_NOT_FOUND, "join: slot %u is not a member of "
                                   "generation %u", w->slot, join->generation);
    free(peers);
    return e;
}

/* Joins a generation and takes the state from its root. */
loom_error *train_worker_join_and_pull(worker *w, const msg_join *join, const char *load_path)
{
    uint64_t deadline = comm_deadline_after_ms(join->timeout_ms);
    /* Fault injection for the tests of EDT_PULL_*: a worker that has not
     * yet pulled the weights arrives this late at a later generation. */
    const char *delay = getenv("LOOM_FAULT_JOIN_DELAY_MS");
    if (delay && join->generation > 1 && !w->joined_once)
        usleep((useconds_t)strtoul(delay, NULL, 10) * 1000u);
    loom_error *e = w->net ? join_net_generation(w, join, deadline)
                           : comm_shm_join(w->comm, join->generation, deadline);
    if (!e && w->gpu_comm)
        e = join_gpu_generation(w, join, deadline);
    if (!e && load_path && !(e = checkpoint_load(load_path, w->stage.host, w->stage.count, NULL)))
        e = tensor_stage_push(&w->stage, w->views);
    if (e)
        return e;
    if (join->root < 0) {
        w->joined_once = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < w->nviews; i++) {
        e = comm_broadcast(train_worker_comm_for(w, &w->views[i]), w->views[i].data, (size_t)w->views[i].nbytes,
                           (uint32_t)join->root, deadline);
        if (e)
            return loom_err_wrap(e, "pulling the weights (tensor %s)", w->views[i].name);
    }
    if ((e = adapter_state_loaded(w->fw, w->inst)))
        return e;
    w->joined_once = 1; /* holds the weights now */
    return NULL;
}
