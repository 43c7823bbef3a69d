/*
 * train/comm/shm_member.h - a worker's handle on the shm segment, shared by
 * the files that make up the worker side: membership (shm_member.c), waiting
 * on peers (shm_wait.c) and the collectives (shm_collectives.c).
 */
#ifndef LOOM_TRAIN_COMM_SHM_MEMBER_H
#define LOOM_TRAIN_COMM_SHM_MEMBER_H

#include "comm_internal.h"
#include "shm_layout.h"

typedef struct shm_member {
    comm base; /* rank, world_size, generation */
    char *segment_name;
    int fd;
    shm_header *header;
    size_t map_bytes;
    uint32_t slot;
    shm_slot *self;
    /* The current generation's member slots, ascending (rank order). */
    uint32_t *members;
    /* Collective chunks done in this generation: chunk k moves this slot's
     * step to base + 2k+1 then base + 2k+2 and uses staging half k % 2. */
    uint64_t chunk;
    /* Per slot: its step when it joined this generation (shm_slot.gen_base),
     * read once at the join barrier. Steps below are relative to it. */
    uint32_t *step_base;
    /* Bytes of this member's gradient buffer in its region (0: none), and
     * of the one the generation reduces in place: set at the join to the
     * size every member holds, or 0. */
    uint64_t gradient_bytes;
    uint64_t in_place_bytes;
    /* Per slot: a pidfd for the process seen there (so a SIGKILLed peer is
     * noticed even before its parent reaps it), and the pid it belongs to. */
    int *pidfd;
    int32_t *pidfd_pid;
} shm_member;

extern const comm_ops shm_member_ops;

/* The collectives (shm_collectives.c), reached through shm_member_ops. */
loom_error *shm_allreduce_avg_f32(comm *c, float *buf, size_t count,
                                  uint64_t deadline_ns);
loom_error *shm_broadcast(comm *c, void *buf, size_t bytes, uint32_t root,
                          uint64_t deadline_ns);
loom_error *shm_barrier(comm *c, uint64_t deadline_ns);

/* Publishes this member's progress (`step` relative to its generation
 * base) and wakes peers sleeping on it. */
void shm_signal_step(shm_member *m, uint32_t step);

/* Waits until slot `peer` reaches `step` (relative to its base) in this
 * member's generation. `op` names the collective in error messages. */
loom_error *shm_wait_step(shm_member *m, uint32_t peer, uint32_t step,
                          uint64_t deadline_ns, const char *op);
/* Waits until every other member reaches `step`. */
loom_error *shm_wait_all_steps(shm_member *m, uint32_t step, uint64_t deadline_ns,
                               const char *op);
/* Waits until slot `peer` has joined `generation` (the join barrier) and
 * records its step base. */
loom_error *shm_wait_joined(shm_member *m, uint32_t peer, uint32_t generation,
                            uint64_t deadline_ns);
/* Waits until the coordinator has published `generation` or a later one. */
loom_error *shm_wait_published(shm_member *m, uint32_t generation,
                               uint64_t deadline_ns);
/* After reading peers' staging: fails if a peer may have overwritten it
 * meanwhile, i.e. it moved on to a generation this member is not part of. */
loom_error *shm_check_peers_stayed(shm_member *m, const char *op);

/* Closes the pidfds held for peers. */
void shm_forget_peers(shm_member *m);

#endif
