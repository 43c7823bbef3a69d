/* util/workqueue.c - see workqueue.h. */
#include "util/workqueue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKQUEUE_MAX_THREADS 64

typedef struct job {
    workqueue_fn fn;
    void *arg;
    struct job *next;
} job;

struct workqueue {
    char name[32];
    pthread_mutex_t lock;
    pthread_cond_t wake;
    job *head, *tail;
    size_t queued, running, max_queued;
    int stopping;
    int nthreads;
    pthread_t threads[WORKQUEUE_MAX_THREADS];
};

static void *worker(void *arg)
{
    workqueue *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (!q->head && !q->stopping)
            pthread_cond_wait(&q->wake, &q->lock);
        job *j = q->head;
        if (!j)
            break; /* stopping, and nothing left */
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
        q->queued--;
        q->running++;
        pthread_mutex_unlock(&q->lock);
        j->fn(j->arg);
        free(j);
        pthread_mutex_lock(&q->lock);
        q->running--;
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

workqueue *workqueue_create(const char *name, int threads, size_t max_queued)
{
    if (threads < 1 || threads > WORKQUEUE_MAX_THREADS || max_queued == 0)
        return NULL;
    workqueue *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    snprintf(q->name, sizeof q->name, "%s", name);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->wake, NULL);
    q->max_queued = max_queued;
    for (; q->nthreads < threads; q->nthreads++)
        if (pthread_create(&q->threads[q->nthreads], NULL, worker, q) != 0) {
            workqueue_destroy(q);
            return NULL;
        }
    return q;
}

loom_error *workqueue_submit(workqueue *q, workqueue_fn fn, void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", q->name);
    *j = (job){fn, arg, NULL};
    pthread_mutex_lock(&q->lock);
    if (q->stopping || q->queued >= q->max_queued) {
        size_t queued = q->queued;
        int stopping = q->stopping;
        pthread_mutex_unlock(&q->lock);
        free(j);
        if (stopping)
            return loom_err(LOOM_E_UNAVAILABLE, "%s: shutting down", q->name);
        return loom_err(LOOM_E_UNAVAILABLE, "%s: %zu jobs already wait (the limit); try again later",
                        q->name, queued);
    }
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->queued++;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

size_t workqueue_pending(workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->queued + q->running;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void workqueue_drain(workqueue *q)
{
    pthread_mutex_lock(&q->lock);
    q->stopping = 1;
    pthread_cond_broadcast(&q->wake);
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < q->nthreads; i++)
        pthread_join(q->threads[i], NULL);
    q->nthreads = 0;
}

void workqueue_destroy(workqueue *q)
{
    if (!q)
        return;
    workqueue_drain(q);
    pthread_cond_destroy(&q->wake);
    pthread_mutex_destroy(&q->lock);
    free(q);
}
