/* train/grad_overlap.c - see grad_overlap_internal.h. */
#include "train/grad_overlap_internal.h"

#include <pthread.h>
#include <stdlib.h>

struct grad_overlap {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t thread;
    int thread_started;
    comm *c;
    float *grads;
    size_t count;
    /* Under lock. */
    int armed;          /* a step is being reduced */
    int stopping;
    int busy;           /* the thread is inside an all-reduce */
    size_t ready_from;  /* floats [ready_from, count) are final */
    size_t next_bucket; /* buckets done this step, from the end */
    uint64_t deadline_ns;
    loom_error *err;    /* the step's first failure */
    uint64_t early, total; /* buckets reduced before finish, and all */
};

/* Bucket k covers [lo, hi): counted from the end of the buffer. */
static void bucket_bounds(size_t count, size_t k, size_t *lo, size_t *hi)
{
    size_t from_end = k * GRAD_OVERLAP_BUCKET_FLOATS;
    *hi = count - from_end;
    *lo = *hi > GRAD_OVERLAP_BUCKET_FLOATS ? *hi - GRAD_OVERLAP_BUCKET_FLOATS : 0;
}

/* The next bucket may go: armed, not done, wholly final. */
static int bucket_due(const grad_overlap *o, size_t *lo, size_t *hi)
{
    if (!o->armed || o->next_bucket * GRAD_OVERLAP_BUCKET_FLOATS >= o->count)
        return 0;
    bucket_bounds(o->count, o->next_bucket, lo, hi);
    return o->ready_from <= *lo;
}

static void *reduce_loop(void *arg)
{
    grad_overlap *o = arg;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        size_t lo = 0, hi = 0;
        while (!o->stopping && !bucket_due(o, &lo, &hi))
            pthread_cond_wait(&o->changed, &o->lock);
        if (o->stopping)
            break;
        uint64_t deadline = o->deadline_ns;
        o->busy = 1;
        pthread_mutex_unlock(&o->lock);
        loom_error *e = comm_allreduce_avg_f32(o->c, o->grads + lo, hi - lo, deadline);
        pthread_mutex_lock(&o->lock);
        o->busy = 0;
        o->next_bucket++;
        if (e) {
            /* The generation is broken: the rest would fail the same way. */
            o->err = e;
            o->next_bucket = (o->count + GRAD_OVERLAP_BUCKET_FLOATS - 1) / GRAD_OVERLAP_BUCKET_FLOATS;
        }
        pthread_cond_broadcast(&o->changed); /* a bucket is done */
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

grad_overlap *grad_overlap_new(void)
{
    grad_overlap *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->changed, NULL);
    return o;
}

loom_error *grad_overlap_bind(grad_overlap *o, comm *c, float *grads, size_t count)
{
    o->c = c;
    o->grads = grads;
    o->count = count;
    if (pthread_create(&o->thread, NULL, reduce_loop, o) != 0)
        return loom_err(LOOM_E_INTERNAL, "cannot start the thread that reduces during backward");
    o->thread_started = 1;
    return NULL;
}

void grad_overlap_arm(grad_overlap *o, uint64_t deadline_ns)
{
    pthread_mutex_lock(&o->lock);
    o->armed = 1;
    o->ready_from = o->count;
    o->next_bucket = 0;
    o->deadline_ns = deadline_ns;
    pthread_mutex_unlock(&o->lock);
}

void grad_overlap_ready(void *arg, uint64_t offset, uint64_t nbytes)
{
    grad_overlap *o = arg;
    size_t lo = (size_t)(offset / sizeof(float));
    size_t hi = (size_t)((offset + nbytes) / sizeof(float));
    pthread_mutex_lock(&o->lock);
    if (o->armed && lo < o->ready_from && hi >= o->ready_from && hi <= o->count) {
        o->ready_from = lo;
        pthread_cond_broadcast(&o->changed);
    }
    pthread_mutex_unlock(&o->lock);
}

loom_error *grad_overlap_finish(grad_overlap *o, uint64_t deadline_ns)
{
    pthread_mutex_lock(&o->lock);
    if (!o->armed) {
        o->armed = 1;
        o->next_bucket = 0;
        o->deadline_ns = deadline_ns;
    }
    size_t buckets = (o->count + GRAD_OVERLAP_BUCKET_FLOATS - 1) / GRAD_OVERLAP_BUCKET_FLOATS;
    o->early += o->next_bucket;
    o->total += buckets;
    o->ready_from = 0;
    pthread_cond_broadcast(&o->changed);
    while (o->next_bucket * GRAD_OVERLAP_BUCKET_FLOATS < o->count)
        pthread_cond_wait(&o->changed, &o->lock);
    o->armed = 0;
    loom_error *e = o->err;
    o->err = NULL;
    pthread_mutex_unlock(&o->lock);
    return e;
}

void grad_overlap_abandon(grad_overlap *o)
{
    pthread_mutex_lock(&o->lock);
    o->next_bucket = (o->count + GRAD_OVERLAP_BUCKET_FLOATS - 1) / GRAD_OVERLAP_BUCKET_FLOATS;
    while (o->busy)
        pthread_cond_wait(&o->changed, &o->lock);
    o->armed = 0;
    loom_err_free(o->err);
    o->err = NULL;
    pthread_mutex_unlock(&o->lock);
}

void grad_overlap_counts(grad_overlap *o, uint64_t *early, uint64_t *total)
{
    pthread_mutex_lock(&o->lock);
    *early = o->early;
    *total = o->total;
    o->early = o->total = 0;
    pthread_mutex_unlock(&o->lock);
}

void grad_overlap_free(grad_overlap *o)
{
    if (!o)
        return;
    if (o->thread_started) {
        pthread_mutex_lock(&o->lock);
        o->stopping = 1;
        pthread_cond_broadcast(&o->changed);
        pthread_mutex_unlock(&o->lock);
        pthread_join(o->thread, NULL);
    }
    loom_err_free(o->err);
    pthread_cond_destroy(&o->changed);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
