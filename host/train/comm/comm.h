/*
 * train/comm/comm.h - collectives for elastic training: average all-reduce,
 * broadcast and barrier among the members of a numbered generation, behind
 * one interface with three back ends.
 *
 *  shm   CPU worker processes on one node. The coordinator creates a POSIX
 *        shared-memory segment sized for max ranks and the largest buffer;
 *        each worker attaches to it by slot. All-reduce is reduce-scatter +
 *        all-gather through the segment, so every process does 1/world of
 *        the adds. Coordinator and workers share one PID namespace: a
 *        slot records its process's pid so peers notice its death.
 *        A worker may keep its gradient buffer in its slot's region of the
 *        segment (comm_shm_gradient_memory); when every member does, the
 *        all-reduce runs in place: each member sums its share straight
 *        from every member's region and writes the average into every
 *        region, with no staging copies.
 *  nccl  GPU workers (only when built with LOOM_HAVE_CUDA): the same calls
 *        over an NCCL communicator made from a unique id the coordinator
 *        hands out; a new communicator per generation.
 *  net   Workers on nodes of their own, sharing no memory: the same calls
 *        over a TCP ring (net_allreduce.h), a new ring per generation on a
 *        port each member keeps for its life.
 *
 * Membership. The coordinator publishes a generation: a number (1, 2, ...)
 * and the list of member slots. A worker adopts it with comm_shm_join(), a
 * barrier every member of that generation calls at a step boundary. Within a
 * generation, rank = position of the slot in the ascending slot list, and
 * every member calls the same collectives in the same order with the same
 * sizes.
 *
 * Deadlines. Every call that waits takes an absolute deadline on the
 * CLOCK_MONOTONIC clock in nanoseconds (comm_deadline_after_ms makes one).
 * Errors (a loom_error the caller frees with loom_err_free):
 *  LOOM_ERR_DEADLINE_EXCEEDED  a peer did not arrive in time; the message
 *                              names its slot.
 *  LOOM_ERR_UNAVAILABLE        a peer died or detached, or the coordinator
 *                              published a newer generation mid-call.
 * After such an error the buffer's contents are unspecified; the group is
 * usable again once the coordinator publishes a generation and its members
 * join it.
 *
 * Determinism. The shm back end sums each element in ascending slot order
 * and divides by the world size, so equal inputs give bitwise-equal
 * averages whatever the timing.
 *
 * Threading: one comm handle is used by one thread at a time.
 */
#ifndef LOOM_TRAIN_COMM_H
#define LOOM_TRAIN_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <loom/abi.h>

#include "net_allreduce.h"

/* ---- deadlines -------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds: the clock every deadline is measured on. */
uint64_t comm_now_ns(void);
/* The deadline `ms` milliseconds from now. */
uint64_t comm_deadline_after_ms(uint32_t ms);

/* ---- a member's handle (both back ends) ------------------------------- */

typedef struct comm comm;

/* Averages `count` floats in place across the members. For nccl, `buf` is
 * device memory. */
loom_error *comm_allreduce_avg_f32(comm *c, float *buf, size_t count,
                                   uint64_t deadline_ns);
/* Copies `bytes` from rank `root`'s buffer into every other member's. */
loom_error *comm_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                           uint64_t deadline_ns);
/* Returns once every member has called it. */
loom_error *comm_barrier(comm *c, uint64_t deadline_ns);

uint32_t comm_rank(const comm *c);       /* 0-based, within the generation */
uint32_t comm_world_size(const comm *c); /* 0 before the first join */
uint32_t comm_generation(const comm *c); /* 0 before the first join */
const char *comm_backend_name(const comm *c); /* "shm", "nccl" or "net" */
/* Nanoseconds this member spent so far waiting for its peers inside
 * collectives and joins (shm; 0 for nccl, whose waits are on the GPU): the
 * part of a step lost to the slowest worker. net: the time blocked on its
 * left neighbour's bytes inside collectives, plus its joins, which over
 * TCP counts the network's time too. */
uint64_t comm_wait_ns(const comm *c);

/* Leaves the group (peers waiting on this member get LOOM_ERR_UNAVAILABLE)
 * and frees the handle. NULL is fine. */
void comm_close(comm *c);

/* ---- shm: the coordinator's side -------------------------------------- */

typedef struct comm_shm_segment comm_shm_segment;

typedef struct comm_shm_config {
    uint32_t max_ranks;        /* slots 0 .. max_ranks-1; at most 256 */
    uint64_t max_buffer_bytes; /* largest all-reduce or broadcast accepted */
    /* Per-slot staging memory; larger buffers go through it in chunks.
     * 0 picks a default (COMM_SHM_DEFAULT_STAGING, or less when
     * max_buffer_bytes is small). */
    uint64_t staging_bytes;
    /* Per-slot gradient region (comm_shm_gradient_memory): the largest
     * gradient buffer a worker can keep in the segment. The regions are
     * sparse: only the pages workers reserve take memory. 0: none. */
    uint64_t gradient_region_bytes;
    /* An in-place all-reduce whose buffers (all members' together) reach
     * this size writes with non-temporal stores. 0: the last-level cache's
     * size (sysconf), or COMM_SHM_DEFAULT_STREAM_BYTES when unknown. */
    uint64_t stream_min_bytes;
} comm_shm_config;

#define COMM_SHM_MAX_RANKS 256u
/* Two 256 KB halves: a chunk's input, a peer's staging and the output stay
 * in L2, and the per-chunk handshakes (about a microsecond each) stay far
 * below the copy time. */
#define COMM_SHM_DEFAULT_STAGING (512u << 10)
/* Largest gradient region per slot (16 GiB): slots times this stays far
 * inside a 64-bit address space even at COMM_SHM_MAX_RANKS. */
#define COMM_SHM_MAX_GRADIENT_REGION (16ull << 30)
#define COMM_SHM_DEFAULT_STREAM_BYTES (32ull << 20)

/* Creates the segment `name` ("/loom-<job>", see shm_open(3)). Fails with
 * LOOM_ERR_ALREADY_EXISTS when the name is taken. */
loom_error *comm_shm_create(const char *name, const comm_shm_config *config,
                            comm_shm_segment **out);
/* Publishes the next generation: `count` distinct slots (any order). Members
 * of the previous generation that are still inside a collective get
 * LOOM_ERR_UNAVAILABLE. Writes the new generation number to *generation. */
loom_error *comm_shm_publish(comm_shm_segment *seg, const uint32_t *slots,
                             uint32_t count, uint32_t *generation);
/* Tells waiting peers that the process in `slot` is gone (call on SIGCHLD;
 * peers also notice on their own, this only makes it immediate). */
void comm_shm_mark_dead(comm_shm_segment *seg, uint32_t slot);
uint32_t comm_shm_published_generation(const comm_shm_segment *seg);
/* Unmaps and unlinks the segment. Attached workers keep their mapping. */
void comm_shm_destroy(comm_shm_segment *seg);

/* ---- shm: a worker's side --------------------------------------------- */

/* Attaches this process to `slot` of segment `name`. Errors: NOT_FOUND (no
 * such segment), INVALID_ARGUMENT (slot out of range, not a loom segment),
 * ALREADY_EXISTS (a live process holds the slot). */
loom_error *comm_shm_attach(const char *name, uint32_t slot, comm **out);
/* Memory for this member's gradient buffer: `bytes` (a multiple of 4) of
 * its slot's gradient region, zeroed, page aligned, valid until comm_close.
 * The pages are reserved at once (fallocate), so a full /dev/shm shows here,
 * never as a SIGBUS later. Call it before joining a generation. From the
 * next join on, when every member of the generation holds a buffer of the
 * same size there, an all-reduce of that buffer, or of the same part of it
 * on every member, runs in place (comm_shm_in_place); any other buffer goes
 * through staging as before.
 * In place, peers write into each other's buffers while a collective runs:
 * a member whose collective failed must not touch its buffer again before
 * its peers are out of theirs (their calls returned, or they died). The
 * trainer's rounds ensure it: the coordinator collects every member's reply
 * before its next plan, and a member leaves a generation only dead.
 * Errors: INVALID_ARGUMENT (bytes 0 or not a multiple of 4; called while in
 * a generation; called a second time), RESOURCE_EXHAUSTED (larger than the region; /dev/shm full).
 */
loom_error *comm_shm_gradient_memory(comm *c, uint64_t bytes, float **out);
/* Bytes of the gradient buffer the current generation reduces in place: 0
 * when it does not (a member keeps its gradients elsewhere). */
uint64_t comm_shm_in_place_bytes(const comm *c);
/* Adopts `generation`: waits until the coordinator has published it, then
 * until every member has joined it. NOT_FOUND when this slot is not a
 * member; UNAVAILABLE when a newer generation superseded it. */
loom_error *comm_shm_join(comm *c, uint32_t generation, uint64_t deadline_ns);

/* ---- net: a worker on another node --------------------------------- */

/* A member whose collectives run over TCP (a ring per generation,
 * net_allreduce.h), for workers that share no memory with the others.
 * Listens once on an ephemeral port of `bind_address` ("0.0.0.0": every
 * interface) and keeps that port for every generation, so the
 * coordinator learns it once (in the worker's hello). `secret` is the
 * exec's COMM_NET_SECRET_BYTES secret, copied.
 * Collectives: the all-reduce is comm_net_allreduce's ring (segment j
 * summed from rank j on, times (float)(1 / world)): bitwise equal on every
 * member, not the shm back end's order. A broadcast (any byte count)
 * passes along the ring from the root in a stream; a barrier is an
 * all-reduce of one float. In a generation of 1, each is a no-op success
 * with no sockets. Errors as net_allreduce.h's; after one the ring is
 * unusable (UNAVAILABLE) until the next join. `link_timeout_ms` (0:
 * COMM_NET_DEFAULT_LINK_TIMEOUT_MS) is how long a ring link may leave data
 * unacknowledged before it is taken as cut: a trainer passes its heartbeat
 * timeout, the silence after which the coordinator drops a worker anyway,
 * so that the survivors' round fails then too, not seconds later. */
loom_error *comm_net_member_open(const char *bind_address, const uint8_t *secret,
                                 uint32_t link_timeout_ms, comm **out);
/* The port the member listens on. */
uint16_t comm_net_member_port(const comm *c);
/* Adopts `generation`: drops the previous generation's ring and links a
 * new one of `count` members (peers[r] is rank r's address and port; this
 * member is `rank`). Every member of the generation calls it with the
 * same list. Errors as comm_net_connect's; INVALID_ARGUMENT as well when
 * `generation` is not newer than the last one joined or peers[rank] is
 * not this member's port. After an error the member is in no ring (world
 * size 0) until a join succeeds. */
loom_error *comm_net_member_join(comm *c, uint32_t generation, const comm_net_peer *peers,
                                 uint32_t count, uint32_t rank, uint64_t deadline_ns);

/* ---- the next generation on GPUs ------------------------------------- */

/* Whether GPU members can form the next generation by shrinking their
 * communicator (ncclCommShrink) instead of building a new one: only when
 * members left and none joined (every slot of `next` is in `prev`), and the
 * last round went well (`after_failure` 0: a failed collective aborted the
 * communicators). Slots are listed in rank order. Returns 1 and writes the
 * leavers' ranks in `prev` (ascending) to excluded[0..*nexcluded), else 0.
 * `excluded` holds nprev entries. */
int comm_plan_shrink(const uint32_t *prev, uint32_t nprev, const uint32_t *next, uint32_t n,
                     int after_failure, uint32_t *excluded, uint32_t *nexcluded);

/* ---- nccl (GPU) ------------------------------------------------------- */
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA

#define COMM_NCCL_ID_BYTES 128

/* Coordinator: a fresh unique id (COMM_NCCL_ID_BYTES) for one generation. */
loom_error *comm_nccl_unique_id(uint8_t *id, size_t id_len);
/* A handle bound to CUDA device `device`, with no communicator yet. */
loom_error *comm_nccl_open(int32_t device, comm **out);
/* Adopts a generation: aborts the current communicator (if any) and makes
 * a new one of `world` ranks from the coordinator's `id`. All members call
 * it with the same id. Used whenever a worker joins. */
loom_error *comm_nccl_join(comm *c, uint32_t generation, const uint8_t *id,
                           size_t id_len, uint32_t world, uint32_t rank,
                           uint64_t deadline_ns);
/* Adopts a generation without the `count` excluded ranks (ranks of the
 * current generation) through ncclCommShrink, which needs no new id. All
 * survivors call it with the same list. */
loom_error *comm_nccl_shrink(comm *c, uint32_t generation,
                             const uint32_t *excluded_ranks, uint32_t count,
                             uint64_t deadline_ns);
#endif

#endif
