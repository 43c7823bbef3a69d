/*
 * sched/handover.h - devices in transit between jobs. The policy core moves
 * a device from a shrinking job to another one in its books at once, but the
 * shrinking job's worker leaves the device only at its next step boundary.
 * Until that worker is gone, the device is "draining": the job it was taken
 * from still has a process on it, and no other job may start one there. The
 * table remembers, per device slot, who is draining it and since when, and
 * the last hand-over it measured (decision to hand-back).
 *
 * Not thread-safe: the scheduler service holds its lock around every call.
 */
#ifndef LOOM_SCHED_HANDOVER_H
#define LOOM_SCHED_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HANDOVER_JOB_ID_MAX 160

typedef struct handover_slot {
    char from[HANDOVER_JOB_ID_MAX]; /* "" when the device is not draining */
    int64_t since_ms;               /* when the decision took it */
} handover_slot;

typedef struct handover {
    handover_slot *slots;
    size_t n;
} handover;

/* Sizes the table to n device slots; false when out of memory. */
bool handover_init(handover *h, size_t n);
void handover_free(handover *h);
/* Grows the table to n slots (new ones not draining); false when out of
 * memory. Never shrinks. */
bool handover_resize(handover *h, size_t n);
/* Forgets `slot` (its device left the inventory): the slots above it move
 * down by one, as the scheduler's do. */
void handover_remove(handover *h, int32_t slot);

/* `job` gave `slot` up at `now_ms`: its worker may still be on it. */
void handover_take(handover *h, int32_t slot, const char *job, int64_t now_ms);
/* `job` got `slot` back before leaving it: nothing is in transit. */
void handover_keep(handover *h, int32_t slot, const char *job);
/* The draining job's worker has left `slot`: returns how long the hand-over
 * took in ms and copies the job it came from, or -1 when it was not
 * draining. */
int64_t handover_release(handover *h, int32_t slot, int64_t now_ms, char *from, size_t len);
/* The job that is draining `slot`, or NULL. */
const char *handover_draining(const handover *h, int32_t slot);

#endif
