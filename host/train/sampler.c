/* train/sampler.c - see sampler.h. */
#include "train/sampler.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64: a well-mixed stream from any seed, enough for shuffling. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int sampler_init(sampler *s, uint64_t n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->seed = seed;
    s->perm = malloc((n ? n : 1) * sizeof *s->perm);
    s->used = calloc(n / 8 + 1, 1);
    if (!s->perm || !s->used) {
        sampler_free(s);
        return -1;
    }
    sampler_begin_epoch(s, 0);
    return 0;
}

void sampler_free(sampler *s)
{
    free(s->perm);
    free(s->returned);
    free(s->used);
    memset(s, 0, sizeof *s);
}

void sampler_begin_epoch(sampler *s, uint32_t epoch)
{
    s->epoch = epoch;
    s->cursor = 0;
    s->nreturned = 0;
    s->inflight = 0;
    s->committed = 0;
    s->duplicates = 0;
    memset(s->used, 0, s->n / 8 + 1);
    for (uint64_t i = 0; i < s->n; i++)
        s->perm[i] = i;
    /* Fisher-Yates from a stream that depends on the seed and the epoch. */
    uint64_t state = s->seed ^ (0xA0761D6478BD642Full * (epoch + 1));
    for (uint64_t i = s->n; i > 1; i--) {
        uint64_t j = splitmix64(&state) % i;
        uint64_t t = s->perm[i - 1];
        s->perm[i - 1] = s->perm[j];
        s->perm[j] = t;
    }
}

size_t sampler_take(sampler *s, uint64_t *out, size_t max)
{
    size_t k = 0;
    while (k < max && s->nreturned > 0)
        out[k++] = s->returned[--s->nreturned];
    while (k < max && s->cursor < s->n)
        out[k++] = s->perm[s->cursor++];
    s->inflight += k;
    return k;
}

void sampler_commit(sampler *s, const uint64_t *idx, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t x = idx[i];
        if (x >= s->n)
            continue;
        if (s->used[x / 8] & (1u << (x % 8)))
            s->duplicates++;
        s->used[x / 8] |= (uint8_t)(1u << (x % 8));
        s->committed++;
    }
    s->inflight -= count <= s->inflight ? count : s->inflight;
}

void sampler_give_back(sampler *s, const uint64_t *idx, size_t count)
{
    if (s->nreturned + count > s->cap_returned) {
        size_t cap = s->cap_returned ? s->cap_returned : 256;
        while (cap < s->nreturned + count)
            cap *= 2;
        uint64_t *grown = realloc(s->returned, cap * sizeof *grown);
        if (!grown)
            return; /* keeps them in flight: the epoch cannot complete, loudly */
        s->returned = grown;
        s->cap_returned = cap;
    }
    /* Pushed in reverse so they come out in their original order. */
    for (size_t i = count; i > 0; i--)
        s->returned[s->nreturned++] = idx[i - 1];
    s->inflight -= count <= s->inflight ? count : s->inflight;
}

int sampler_copy(sampler *dst, const sampler *src)
{
    size_t nperm = src->n ? src->n : 1, nused = src->n / 8 + 1;
    int same_n = dst->perm && dst->n == src->n;
    uint64_t *perm = same_n ? dst->perm : malloc(nperm * sizeof *perm);
    uint8_t *used = same_n ? dst->used : malloc(nused);
    uint64_t *returned = NULL;
    if (src->nreturned)
        returned = malloc(src->nreturned * sizeof *returned);
    if (!perm || !used || (src->nreturned && !returned)) {
        if (!same_n) {
            free(perm);
            free(used);
        }
        free(returned);
        return -1;
    }
    if (!same_n) {
        free(dst->perm);
        free(dst->used);
    }
    free(dst->returned);
    *dst = *src;
    dst->perm = perm;
    dst->used = used;
    dst->returned = returned;
    dst->cap_returned = src->nreturned;
    memcpy(perm, src->perm, nperm * sizeof *perm);
    memcpy(used, src->used, nused);
    if (returned)
        memcpy(returned, src->returned, src->nreturned * sizeof *returned);
    return 0;
}

uint64_t sampler_remaining(const sampler *s)
{
    return (uint64_t)s->nreturned + (s->n - s->cursor);
}

int sampler_epoch_complete(const sampler *s)
{
    return sampler_remaining(s) == 0 && s->inflight == 0 && s->committed == s->n &&
           s->duplicates == 0;
}
