/*
 * util/workqueue.h - a small pool of threads running queued jobs in order,
 * so slow work (unpacking an archive, removing a folder) leaves the thread
 * that accepted it free. The queue is bounded: a full queue refuses a job
 * instead of growing.
 */
#ifndef LOOM_UTIL_WORKQUEUE_H
#define LOOM_UTIL_WORKQUEUE_H

#include <stddef.h>

#include "util/error.h"

typedef struct workqueue workqueue;
typedef void (*workqueue_fn)(void *arg);

/* `threads` workers (1 to 64), at most `max_queued` jobs waiting. NULL when
 * out of memory or a thread cannot start. */
workqueue *workqueue_create(const char *name, int threads, size_t max_queued);
/* Queues fn(arg); LOOM_E_UNAVAILABLE when max_queued jobs already wait or
 * the queue is shutting down (fn is then not called). */
loom_error *workqueue_submit(workqueue *q, workqueue_fn fn, void *arg);
/* Jobs queued or running. */
size_t workqueue_pending(workqueue *q);
/* Refuses new jobs, runs every job already queued and stops the workers;
 * the queue stays valid (submissions are refused) until destroyed. */
void workqueue_drain(workqueue *q);
/* Drains, then frees. */
void workqueue_destroy(workqueue *q);

#endif
