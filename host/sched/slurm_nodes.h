/*
 * sched/slurm_nodes.h - what a Slurm node gives loom's inventory: its GPUs
 * (the node's gres, `gpu:N`), or else CPU slots (one per CPU, or one per
 * `cpus_per_slot` CPUs), and whether its state lets work be placed on it.
 * A pure mapping over a description filled from libslurm's node records,
 * so it is tested without Slurm.
 */
#ifndef LOOM_SCHED_SLURM_NODES_H
#define LOOM_SCHED_SLURM_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Slurm's node_state: a base state in the low bits and flags above it, the
 * values of slurm.h (slurm_source.c checks them against it at build time). */
enum {
    SLURM_NODE_BASE = 0x0000000f,
    SLURM_NODE_UNKNOWN = 0,
    SLURM_NODE_DOWN = 1,
    SLURM_NODE_IDLE = 2,
    SLURM_NODE_ALLOCATED = 3,
    SLURM_NODE_ERROR = 4,
    SLURM_NODE_MIXED = 5,
    SLURM_NODE_FUTURE = 6,
    SLURM_NODE_FLAG_DRAIN = 1u << 9,
    SLURM_NODE_FLAG_NO_RESPOND = 1u << 11,
    SLURM_NODE_FLAG_POWERED_DOWN = 1u << 12,
    SLURM_NODE_FLAG_FAIL = 1u << 13,
    SLURM_NODE_FLAG_POWERING_UP = 1u << 14,
    SLURM_NODE_FLAG_MAINT = 1u << 15,
    SLURM_NODE_FLAG_POWERING_DOWN = 1u << 18,
    SLURM_NODE_FLAG_REBOOT_ISSUED = 1u << 20,
    SLURM_NODE_FLAG_INVALID_REG = 1u << 22,
};

#define SLURM_NODE_NAME_MAX 64   /* bytes with the NUL, as sched_slot_view's node */
#define SLURM_NODE_GPUS_MAX 64   /* GPUs one node's gres may declare */
#define SLURM_NODE_SLOTS_MAX 4096 /* CPU slots one node may give */

/* One node as Slurm describes it (borrowed strings). */
typedef struct slurm_node_desc {
    const char *name;
    uint32_t state; /* node_state */
    uint32_t cpus;  /* configured CPUs */
    const char *gres; /* "gpu:2", "gpu:a100:4(S:0-1),mps:100"; NULL or "" when none */
} slurm_node_desc;

/* One device of a node. */
typedef struct slurm_device {
    char node[SLURM_NODE_NAME_MAX];
    int32_t kind;  /* loom_device_kind */
    int32_t index; /* GPU ordinal or CPU slot number on that node */
} slurm_device;

/* Whether work may be placed on a node in `state`: IDLE, ALLOCATED or
 * MIXED without DRAIN, FAIL, NO_RESPOND, MAINT or a power or reboot
 * transition. Else false and *why (may be NULL) names the state, in
 * Slurm's words ("down", "drain", "not responding", ...). */
bool slurm_node_usable(uint32_t state, const char **why);

/* The GPUs a gres string declares (the sum over its `gpu` entries, typed
 * or not; `gpu` alone is one). LOOM_E_INVALID naming the entry for a count
 * that is not a number, LOOM_E_LIMIT over SLURM_NODE_GPUS_MAX. */
loom_error *slurm_gres_gpus(const char *gres, int32_t *out);

/* A node's devices: its GPUs when its gres has any, else cpus /
 * cpus_per_slot CPU slots (0 means 1 CPU a slot; a node with fewer CPUs
 * than that gives none). Copies up to `cap` into out and sets *count to how
 * many there are. Errors name the node: a name over SLURM_NODE_NAME_MAX - 1
 * bytes, a bad gres, more than SLURM_NODE_SLOTS_MAX slots. The state is not
 * looked at (slurm_node_usable). */
loom_error *slurm_node_devices(const slurm_node_desc *node, uint32_t cpus_per_slot,
                               slurm_device *out, size_t cap, size_t *count);

#endif
