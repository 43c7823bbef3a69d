/*
 * sched/node_numbers.h - one number per Slurm node, given the first time
 * the node is seen and never reused, so that a device's id is unique
 * across the cluster: its node's number times NODE_DEVICE_STRIDE plus its
 * ordinal on the node (a CUDA ordinal or a CPU slot). This machine's
 * devices are node 0, so their ids are their ordinals as before. The
 * trainer tells its workers' devices apart by these ids; two nodes both
 * have a CPU slot 0.
 *
 * Not thread-safe: the scheduler service holds its lock around every call.
 */
#ifndef LOOM_SCHED_NODE_NUMBERS_H
#define LOOM_SCHED_NODE_NUMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/slurm_nodes.h"

/* Ordinals on one node stay below this (a node's devices: at most 4,095). */
#define NODE_DEVICE_STRIDE 4096
/* Nodes numbered in a host's life (the id stays a positive int32). */
#define NODE_NUMBERS_MAX 32767

typedef struct node_numbers {
    char (*names)[SLURM_NODE_NAME_MAX]; /* names[k] is node k + 1 */
    size_t n, cap;
} node_numbers;

/* The number of `node` (NULL or "": this machine, 0), numbering it when
 * it is new; -1 when out of memory or past NODE_NUMBERS_MAX. */
int32_t node_numbers_of(node_numbers *t, const char *node);
/* The name of node `number` ("" for 0); false for a number not given. */
bool node_numbers_name(const node_numbers *t, int32_t number, char *out, size_t len);
/* A device's cluster-wide id, and back. */
static inline int32_t node_device_id(int32_t number, int32_t ordinal)
{
    return number * NODE_DEVICE_STRIDE + ordinal;
}
static inline int32_t node_device_ordinal(int32_t id) { return id % NODE_DEVICE_STRIDE; }
static inline int32_t node_device_number(int32_t id) { return id / NODE_DEVICE_STRIDE; }
void node_numbers_free(node_numbers *t);

#endif
