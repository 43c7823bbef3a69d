/* sched/placement.c - which device a growing job takes and which one a
 * shrinking job gives back, when the inventory spans nodes: a job's
 * workers stay on as few nodes as possible, so that most of its all-reduce
 * stays in a node's shared memory. On one machine (no device names a
 * node) the lowest free slot, as the policy core always took. */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

/* One node's tally for one job. */
typedef struct node_tally {
    const char *node;
    int32_t free, held, first_free;
} node_tally;

static bool any_node(const sched *s)
{
    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i].node)
            return true;
    return false;
}

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Every node's free devices and the ones `j` holds there; *n nodes. NULL
 * when out of memory. */
static node_tally *tally(const sched *s, const sched_job *j, size_t *n)
{
    node_tally *t = calloc(s->n_devices ? s->n_devices : 1, sizeof *t);
    *n = 0;
    for (size_t i = 0; t && i < s->n_devices; i++) {
        const sched_device_rec *d = &s->devices[i];
        size_t k = 0;
        while (k < *n && !same(t[k].node, d->node))
            k++;
        if (k == *n)
            t[(*n)++] = (node_tally){.node = d->node, .first_free = -1};
        if (d->owner == j)
            t[k].held++;
        else if (!d->owner && sched_slot_free(s, (int32_t)i)) {
            if (t[k].first_free < 0)
                t[k].first_free = (int32_t)i;
            t[k].free++;
        }
    }
    return t;
}

/* The node to grow on: one the job is on already (the most of its
 * devices), else the one whose free devices fit what it still wants most
 * tightly, else the one with the most free. */
static const node_tally *grow_node(const node_tally *t, size_t n, int32_t want)
{
    const node_tally *best = NULL;
    for (size_t k = 0; k < n; k++) {
        const node_tally *c = &t[k];
        if (!c->free)
            continue;
        if (!best) {
            best = c;
            continue;
        }
        if ((c->held > 0) != (best->held > 0)) {
            if (c->held > 0)
                best = c;
            continue;
        }
        if (c->held > 0) {
            if (c->held > best->held || (c->held == best->held && c->free > best->free))
                best = c;
            continue;
        }
        bool c_fits = c->free >= want, b_fits = best->free >= want;
        if (c_fits != b_fits) {
            if (c_fits)
                best = c;
        } else if (c_fits ? c->free < best->free : c->free > best->free) {
            best = c;
        }
    }
    return best;
}

int32_t sched_place_take(sched *s, sched_job *j, int32_t want)
{
    if (s->n_free == 0)
        return -1;
    if (!any_node(s))
        return sched_take_free_slot(s, j);
    size_t n;
    node_tally *t = tally(s, j, &n);
    if (!t)
        return sched_take_free_slot(s, j);
    const node_tally *on = grow_node(t, n, want);
    int32_t slot = on ? on->first_free : -1;
    free(t);
    if (slot < 0)
        return sched_take_free_slot(s, j);
    sched_take_slot(s, slot, j);
    return slot;
}

int32_t sched_place_give_back(sched *s, sched_job *j)
{
    if (j->count == 0)
        return -1;
    int32_t at = j->count - 1; /* on one machine: the newest, as always */
    size_t n;
    node_tally *t = any_node(s) ? tally(s, j, &n) : NULL;
    if (t) {
        /* the newest device on the node where the job holds the fewest */
        int32_t fewest = INT32_MAX;
        for (int32_t i = j->count - 1; i >= 0; i--) {
            const char *node = s->devices[j->devices[i]].node;
            for (size_t k = 0; k < n; k++)
                if (same(t[k].node, node) && t[k].held < fewest) {
                    fewest = t[k].held;
                    at = i;
                }
        }
        free(t);
    }
    int32_t slot = j->devices[at];
    memmove(&j->devices[at], &j->devices[at + 1], (size_t)(j->count - at - 1) * sizeof *j->devices);
    j->count--;
    sched_release_slot(s, slot);
    return slot;
}
