/* sched/pools.c - the device pools of an inventory holding both CPU slots
 * and GPUs (sched_pool): a round is planned once per kind, each seeing only
 * that kind's devices (the free set masked) and jobs, so that the policy
 * core, written for one pool, keeps every job's devices of one kind. */
#include <stdlib.h>

#include "sched/sched_internal.h"

int32_t sched_pool_device_kind(int32_t pool)
{
    return pool == SCHED_POOL_GPU ? LOOM_DEVICE_CUDA : LOOM_DEVICE_CPU;
}

bool sched_inventory_mixed(const sched *s)
{
    for (size_t i = 1; i < s->n_devices; i++)
        if (s->devices[i].kind != s->devices[0].kind)
            return true;
    return false;
}

size_t sched_pool_size(const sched *s, int32_t pool)
{
    if (!sched_inventory_mixed(s))
        return s->n_devices;
    size_t n = 0;
    int32_t kind = sched_pool_device_kind(pool);
    for (size_t i = 0; i < s->n_devices; i++)
        n += s->devices[i].kind == kind;
    return n;
}

static size_t count_free(const sched *s)
{
    size_t n = 0;
    for (size_t w = 0; w < s->free_words; w++)
        n += (size_t)__builtin_popcountll(s->free_bits[w]);
    return n;
}

bool sched_pool_enter(sched *s, int32_t kind, sched_pool_round *saved)
{
    *saved = (sched_pool_round){.jobs = s->jobs, .n_jobs = s->n_jobs};
    sched_job **mine = malloc((s->n_jobs ? s->n_jobs : 1) * sizeof *mine);
    if (!mine)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (sched_pool_device_kind(s->jobs[i]->pool) == kind)
            mine[n++] = s->jobs[i];
    s->jobs = mine;
    s->n_jobs = n;
    s->pool_devices = 0;
    for (size_t i = 0; i < s->n_devices; i++) {
        if (s->devices[i].kind == kind)
            s->pool_devices++;
        else
            s->free_bits[i / 64] &= ~(UINT64_C(1) << (i % 64));
    }
    s->n_free = count_free(s);
    return true;
}

void sched_pool_leave(sched *s, int32_t kind, sched_pool_round *saved)
{
    /* A device is free exactly when no job owns it: the other kinds' are
     * set so again (a job holding one from before the inventory was mixed
     * may have given it back in this round). */
    for (size_t i = 0; i < s->n_devices; i++)
        if (s->devices[i].kind != kind) {
            uint64_t bit = UINT64_C(1) << (i % 64);
            if (s->devices[i].owner)
                s->free_bits[i / 64] &= ~bit;
            else
                s->free_bits[i / 64] |= bit;
        }
    s->n_free = count_free(s);
    free(s->jobs);
    s->jobs = saved->jobs;
    s->n_jobs = saved->n_jobs;
    s->pool_devices = s->n_devices;
}
