/*
 * auth/ratelimit.h - the per-client limit on failed log-ons.
 *
 * After max_failures failed attempts within window_ms a client is refused for
 * lockout_ms; each lockout that follows another (no quiet spell of the
 * longest lockout between them) doubles the wait, up to the backoff's
 * maximum (ratelimit_set_backoff; none by default). Attempts still being checked count against the limit too, so
 * parallel guesses cannot slip past it. Memory is bounded: a fixed table of
 * `capacity` clients, the least recently seen one evicted to make room.
 * Client ids are bucketed with a randomly keyed SipHash so nobody can pick
 * ids that collide. Not thread-safe: the caller holds its lock.
 */
#ifndef LOOM_AUTH_RATELIMIT_H
#define LOOM_AUTH_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ratelimit ratelimit;

/* Returns NULL when out of memory or an argument is not positive. */
ratelimit *ratelimit_create(size_t capacity, int max_failures,
                            int64_t window_ms, int64_t lockout_ms);
void ratelimit_free(ratelimit *rl);
/* Lets consecutive lockouts double up to lockout_max_ms. */
void ratelimit_set_backoff(ratelimit *rl, int64_t lockout_max_ms);

/* Starts an attempt by `client`: 0 when it may go on (it is then in flight
 * until ratelimit_end), or the milliseconds it must wait. */
int64_t ratelimit_begin(ratelimit *rl, const char *client, int64_t now_ms);
/* Ends an attempt begun with ratelimit_begin; `failed` counts it. */
void ratelimit_end(ratelimit *rl, const char *client, int64_t now_ms,
                   int failed);
/* Milliseconds `client` must still wait (0: it may try now). */
int64_t ratelimit_retry_after(ratelimit *rl, const char *client,
                              int64_t now_ms);
/* Whether an attempt by `client` has succeeded since it was last evicted. */
int ratelimit_succeeded(ratelimit *rl, const char *client);
/* Clients currently tracked (never more than the capacity). */
size_t ratelimit_size(const ratelimit *rl);

#endif
