/* auth/ratelimit.c - see ratelimit.h. A hash table of chained slots threaded
 * on a doubly linked LRU list; slots are preallocated, so nothing is
 * allocated per client. */
#include "auth/ratelimit.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* Longer keys are cut here; an account name, a newline and a peer address
 * (IPv6 included) fit. */
#define CLIENT_MAX 160
/* Consecutive lockouts double the wait up to 2^BACKOFF_STEPS_MAX times. */
#define BACKOFF_STEPS_MAX 16

typedef struct rl_entry {
    char client[CLIENT_MAX];
    uint64_t hash;
    int failures;          /* in the current window */
    int in_flight;         /* attempts begun and not yet ended */
    int64_t window_start;  /* time of the window's first failure */
    int64_t blocked_until; /* 0 when not locked out */
    int64_t last_failure;  /* for the backoff's decay */
    int64_t last_success;  /* 0 when the key never succeeded */
    int strikes;           /* lockouts in a row: the backoff's exponent */
    uint32_t bucket_next;
    uint32_t lru_prev, lru_next;
} rl_entry;

struct ratelimit {
    rl_entry *slots;
    uint32_t capacity, used;
    uint32_t *buckets; /* head slot per bucket, NONE when empty */
    uint32_t bucket_mask;
    uint32_t lru_head, lru_tail; /* most and least recently seen */
    int max_failures;
    int64_t window_ms, lockout_ms, lockout_max_ms;
    unsigned char hash_key[crypto_shorthash_KEYBYTES];
};

ratelimit *ratelimit_create(size_t capacity, int max_failures,
                            int64_t window_ms, int64_t lockout_ms)
{
    if (capacity == 0 || capacity >= NONE / 2 || max_failures <= 0 ||
        window_ms <= 0 || lockout_ms <= 0 || sodium_init() < 0)
        return NULL;
    ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl)
        return NULL;
    uint32_t nbuckets = 1;
    while (nbuckets < capacity)
        nbuckets <<= 1;
    rl->slots = calloc(capacity, sizeof *rl->slots);
    rl->buckets = malloc(nbuckets * sizeof *rl->buckets);
    if (!rl->slots || !rl->buckets) {
        ratelimit_free(rl);
        return NULL;
    }
    for (uint32_t i = 0; i < nbuckets; i++)
        rl->buckets[i] = NONE;
    rl->capacity = (uint32_t)capacity;
    rl->bucket_mask = nbuckets - 1;
    rl->lru_head = rl->lru_tail = NONE;
    rl->max_failures = max_failures;
    rl->window_ms = window_ms;
    rl->lockout_ms = lockout_ms;
    rl->lockout_max_ms = lockout_ms;
    crypto_shorthash_keygen(rl->hash_key);
    return rl;
}

void ratelimit_set_backoff(ratelimit *rl, int64_t lockout_max_ms)
{
    rl->lockout_max_ms = lockout_max_ms > rl->lockout_ms ? lockout_max_ms : rl->lockout_ms;
}

void ratelimit_free(ratelimit *rl)
{
    if (!rl)
        return;
    free(rl->slots);
    free(rl->buckets);
    free(rl);
}

size_t ratelimit_size(const ratelimit *rl)
{
    return rl->used;
}

static uint64_t client_hash(const ratelimit *rl, const char *client)
{
    unsigned char out[crypto_shorthash_BYTES];
    crypto_shorthash(out, (const unsigned char *)client,
                     strnlen(client, CLIENT_MAX - 1), rl->hash_key);
    uint64_t h;
    memcpy(&h, out, sizeof h);
    return h;
}

static void lru_unlink(ratelimit *rl, uint32_t i)
{
    rl_entry *e = &rl->slots[i];
    if (e->lru_prev != NONE)
        rl->slots[e->lru_prev].lru_next = e->lru_next;
    else
        rl->lru_head = e->lru_next;
    if (e->lru_next != NONE)
        rl->slots[e->lru_next].lru_prev = e->lru_prev;
    else
        rl->lru_tail = e->lru_prev;
}

static void lru_push_front(ratelimit *rl, uint32_t i)
{
    rl_entry *e = &rl->slots[i];
    e->lru_prev = NONE;
    e->lru_next = rl->lru_head;
    if (rl->lru_head != NONE)
        rl->slots[rl->lru_head].lru_prev = i;
    rl->lru_head = i;
    if (rl->lru_tail == NONE)
        rl->lru_tail = i;
}

static void bucket_unlink(ratelimit *rl, uint32_t i)
{
    uint32_t *link = &rl->buckets[rl->slots[i].hash & rl->bucket_mask];
    while (*link != i)
        link = &rl->slots[*link].bucket_next;
    *link = rl->slots[i].bucket_next;
}

/* The slot of `client`, moved to the front of the LRU list, or NONE. */
static uint32_t find(ratelimit *rl, const char *client, uint64_t h)
{
    for (uint32_t i = rl->buckets[h & rl->bucket_mask]; i != NONE;
         i = rl->slots[i].bucket_next) {
        rl_entry *e = &rl->slots[i];
        if (e->hash == h && strncmp(e->client, client, CLIENT_MAX - 1) == 0) {
            lru_unlink(rl, i);
            lru_push_front(rl, i);
            return i;
        }
    }
    return NONE;
}

/* The slot of `client`, made if needed by evicting the least recently seen
 * client when the table is full. */
static rl_entry *obtain(ratelimit *rl, const char *client)
{
    uint64_t h = client_hash(rl, client);
    uint32_t i = find(rl, client, h);
    if (i != NONE)
        return &rl->slots[i];
    if (rl->used < rl->capacity) {
        i = rl->used++;
    } else {
        i = rl->lru_tail;
        lru_unlink(rl, i);
        bucket_unlink(rl, i);
    }
    rl_entry *e = &rl->slots[i];
    memset(e, 0, sizeof *e);
    snprintf(e->client, sizeof e->client, "%s", client);
    e->hash = h;
    uint32_t *head = &rl->buckets[h & rl->bucket_mask];
    e->bucket_next = *head;
    *head = i;
    lru_push_front(rl, i);
    return e;
}

static rl_entry *lookup(ratelimit *rl, const char *client)
{
    uint32_t i = find(rl, client, client_hash(rl, client));
    return i == NONE ? NULL : &rl->slots[i];
}

/* Forgets failures whose window or lockout has passed, and the backoff
 * once the key has gone a longest lockout without failing. */
static void refresh(const ratelimit *rl, rl_entry *e, int64_t now_ms)
{
    if (e->strikes > 0 && e->blocked_until == 0 &&
        now_ms - e->last_failure >= rl->lockout_max_ms)
        e->strikes = 0;
    if (e->blocked_until != 0 && now_ms >= e->blocked_until) {
        e->blocked_until = 0;
        e->failures = 0;
    }
    if (e->blocked_until == 0 && e->failures > 0 &&
        now_ms - e->window_start >= rl->window_ms)
        e->failures = 0;
}

int64_t ratelimit_begin(ratelimit *rl, const char *client, int64_t now_ms)
{
    rl_entry *e = obtain(rl, client);
    refresh(rl, e, now_ms);
    if (e->blocked_until > now_ms)
        return e->blocked_until - now_ms;
    /* Attempts in flight may all fail: refuse more than could still be
     * allowed, until the ones running have ended. */
    if (e->failures + e->in_flight >= rl->max_failures) {
        int64_t wait = e->failures > 0 ? e->window_start + rl->window_ms - now_ms : 0;
        return wait > 0 ? wait : 1000;
    }
    e->in_flight++;
    return 0;
}

void ratelimit_end(ratelimit *rl, const char *client, int64_t now_ms,
                   int failed)
{
    /* The entry may have been evicted while the attempt ran; a failure then
     * starts a new record. */
    rl_entry *e = failed ? obtain(rl, client) : lookup(rl, client);
    if (!e)
        return;
    if (e->in_flight > 0)
        e->in_flight--;
    if (!failed) {
        e->last_success = now_ms;
        return;
    }
    refresh(rl, e, now_ms);
    if (e->failures == 0)
        e->window_start = now_ms;
    e->failures++;
    e->last_failure = now_ms;
    if (e->failures >= rl->max_failures && e->blocked_until == 0) {
        int64_t wait = rl->lockout_ms;
        for (int i = 0; i < e->strikes && i < BACKOFF_STEPS_MAX && wait < rl->lockout_max_ms; i++)
            wait *= 2;
        e->blocked_until = now_ms + (wait < rl->lockout_max_ms ? wait : rl->lockout_max_ms);
        e->strikes++;
    }
}

int ratelimit_succeeded(ratelimit *rl, const char *client)
{
    rl_entry *e = lookup(rl, client);
    return e && e->last_success != 0;
}

int64_t ratelimit_retry_after(ratelimit *rl, const char *client,
                              int64_t now_ms)
{
    rl_entry *e = lookup(rl, client);
    if (!e)
        return 0;
    refresh(rl, e, now_ms);
    return e->blocked_until > now_ms ? e->blocked_until - now_ms : 0;
}
