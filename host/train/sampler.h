/*
 * train/sampler.h - which training samples each step uses. Each epoch is a
 * permutation of [0, n) drawn from the job's seed; a step takes indices from
 * it, and when the step commits they count as used, or when it aborts (a
 * worker died mid-step) they go back to be taken first by the next step. So
 * every sample is used exactly once per epoch whatever joins, leaves or dies,
 * and the sampler counts it: `committed` and `duplicates` prove it.
 */
#ifndef LOOM_TRAIN_SAMPLER_H
#define LOOM_TRAIN_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct sampler {
    uint64_t n;
    uint64_t seed;
    uint32_t epoch;
    uint64_t *perm;
    uint64_t cursor;      /* next position of perm to hand out */
    uint64_t *returned;   /* handed back by aborted steps; taken first */
    size_t nreturned, cap_returned;
    uint64_t inflight;    /* taken, neither committed nor handed back */
    uint64_t committed;   /* used this epoch */
    uint64_t duplicates;  /* commits of a sample already used this epoch */
    uint8_t *used;        /* bitmap of samples used this epoch */
} sampler;

int sampler_init(sampler *s, uint64_t n, uint64_t seed);
void sampler_free(sampler *s);
/* Starts `epoch`: a fresh permutation, nothing used. */
void sampler_begin_epoch(sampler *s, uint32_t epoch);
/* Takes up to `max` indices into out; returns how many. */
size_t sampler_take(sampler *s, uint64_t *out, size_t max);
void sampler_commit(sampler *s, const uint64_t *idx, size_t count);
void sampler_give_back(sampler *s, const uint64_t *idx, size_t count);
/* Makes dst (zeroed, or a previous copy) an exact copy of src, for a
 * rewind later; -1 when out of memory (dst then unchanged). */
int sampler_copy(sampler *dst, const sampler *src);
/* Samples not yet taken. */
uint64_t sampler_remaining(const sampler *s);
/* Every sample of the epoch has been committed. */
int sampler_epoch_complete(const sampler *s);

#endif
