/*
 * train/comm/comm_internal.h - what a back end provides behind comm.h: a
 * table of operations and the common head every handle starts with.
 */
#ifndef LOOM_TRAIN_COMM_INTERNAL_H
#define LOOM_TRAIN_COMM_INTERNAL_H

#include "comm.h"

typedef struct comm_ops {
    const char *name;
    loom_error *(*allreduce_avg_f32)(comm *c, float *buf, size_t count,
                                     uint64_t deadline_ns);
    loom_error *(*broadcast)(comm *c, void *buf, size_t bytes, uint32_t root,
                             uint64_t deadline_ns);
    loom_error *(*barrier)(comm *c, uint64_t deadline_ns);
    void (*close)(comm *c);
} comm_ops;

/* The first member of every back end's handle. */
struct comm {
    const comm_ops *ops;
    uint32_t rank;
    uint32_t world_size; /* 0 until the first successful join */
    uint32_t generation; /* 0 until the first successful join */
    uint64_t wait_ns;    /* spent waiting for peers (comm_wait_ns) */
};

#endif
