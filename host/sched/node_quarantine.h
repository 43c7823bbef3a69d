/*
 * sched/node_quarantine.h - nodes loom keeps out of the inventory for a
 * while although Slurm still shows them usable: one whose workers stopped
 * answering (Slurm notices a dead node only after its SlurmdTimeout, tens
 * of seconds or more), or one that cannot reach the shared directory.
 * Nothing is placed there until the period ends; then the node is tried
 * again, and kept out again if it fails again.
 *
 * Not thread-safe: the scheduler service holds its lock around every call.
 */
#ifndef LOOM_SCHED_NODE_QUARANTINE_H
#define LOOM_SCHED_NODE_QUARANTINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/slurm_nodes.h"

/* How long a node stays out, unless the service is told otherwise. */
#define NODE_QUARANTINE_DEFAULT_MS 30000
/* The most nodes kept out at once; one more pushes out the oldest. */
#define NODE_QUARANTINE_MAX 256

typedef struct node_quarantine_entry {
    char node[SLURM_NODE_NAME_MAX];
    char reason[160];
    int64_t until_ms; /* CLOCK_MONOTONIC */
} node_quarantine_entry;

typedef struct node_quarantine {
    node_quarantine_entry entries[NODE_QUARANTINE_MAX];
    size_t n;
} node_quarantine;

/* Keeps `node` out until now_ms + ms (a node already out: the later end
 * and the new reason). */
void node_quarantine_add(node_quarantine *q, const char *node, const char *reason,
                         int64_t now_ms, int64_t ms);
/* Whether `node` is out at now_ms; an entry whose period ended is dropped
 * (logged: the node is tried again). */
bool node_quarantine_holds(node_quarantine *q, const char *node, int64_t now_ms);
/* Drops every ended entry (logged); returns how many nodes are out. */
size_t node_quarantine_expire(node_quarantine *q, int64_t now_ms);

#endif
