/*
 * sched/owner_journal.h - every change of a device's holder, as it happens:
 * the scheduler service notes each slot's holder after every call that may
 * move devices, and a change is queued with the time it was seen. A reader
 * that looks once a second (the history) so still sees a job that held a
 * device for a few milliseconds. Bounded: when the reader falls behind,
 * the oldest changes are dropped and counted, so the reader knows to look
 * at the devices as they are instead.
 *
 * Not thread-safe: the scheduler service holds its lock around every call.
 */
#ifndef LOOM_SCHED_OWNER_JOURNAL_H
#define LOOM_SCHED_OWNER_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OWNER_JOURNAL_NAME_MAX 64
/* Changes kept until read: 16 s of a 64-device inventory changing hands
 * every 50 ms planning round, far more than a reader's second. */
#define OWNER_JOURNAL_CAPACITY 4096

typedef struct owner_change {
    int64_t t_ms;  /* wall clock, ms since the epoch */
    int32_t slot;
    int32_t kind;  /* the holder's sched_job_kind (0 when free) */
    char holder[OWNER_JOURNAL_NAME_MAX]; /* the job; "" when free */
    char user[OWNER_JOURNAL_NAME_MAX];   /* its user; "" when free */
} owner_change;

typedef struct owner_journal {
    char (*noted)[OWNER_JOURNAL_NAME_MAX]; /* each slot's holder as last noted */
    size_t nslots;
    owner_change *ring;
    size_t cap, first, count;
    uint64_t dropped; /* changes lost to a full ring since the last read */
} owner_journal;

/* False when out of memory. */
bool owner_journal_init(owner_journal *j, size_t capacity);
void owner_journal_free(owner_journal *j);

/* `slot` is held by `holder` ("" or NULL: free) at t_ms: queued when it
 * differs from what was last noted for the slot (a slot noted for the
 * first time is a change). False when out of memory. */
bool owner_journal_note(owner_journal *j, int32_t slot, const char *holder, const char *user,
                        int32_t kind, int64_t t_ms);

/* Whether `holder` ("" or NULL: free) is what was last noted for `slot`:
 * nothing to note, and nothing to look up for it. */
bool owner_journal_unchanged(const owner_journal *j, int32_t slot, const char *holder);

/* The slots from `slot` up moved down by one (a device left): what is
 * noted for them moves with them. */
void owner_journal_remove(owner_journal *j, int32_t slot);

/* Moves up to `cap` of the oldest changes to `out` and returns how many;
 * *dropped gets (and resets) how many were lost since the last read. */
size_t owner_journal_read(owner_journal *j, owner_change *out, size_t cap, uint64_t *dropped);

#endif
