/*
 * algorithms/common/search_rng.h - the pseudo-random generator every built-in
 * search plugin uses: xoshiro256** seeded through splitmix64 (Blackman and
 * Vigna). Its whole state is four integers, so a search can save it and a
 * restored search continues with exactly the numbers an uninterrupted one
 * would draw.
 */
#ifndef LOOM_SEARCH_RNG_H
#define LOOM_SEARCH_RNG_H

#include <stdint.h>

typedef struct search_rng {
    uint64_t s[4];
} search_rng;

/* Length of the text form: 4 x 16 hex digits, without the NUL. */
#define SEARCH_RNG_TEXT_LEN 64

void search_rng_seed(search_rng *rng, uint64_t seed);
uint64_t search_rng_next(search_rng *rng);
/* Uniform in [0, 1), 53 random bits. */
double search_rng_uniform(search_rng *rng);
/* Uniform integer in [0, n), without modulo bias; n must be > 0. */
uint64_t search_rng_below(search_rng *rng, uint64_t n);
/* Standard normal (Box-Muller, no cached spare so the state stays s[4]). */
double search_rng_normal(search_rng *rng);

/* State as text (out holds SEARCH_RNG_TEXT_LEN + 1 bytes) and back. Parse
 * returns 0, or -1 when `text` is not 64 hex digits or is the all-zero state
 * (which xoshiro can never leave). */
void search_rng_format(const search_rng *rng, char *out);
int search_rng_parse(search_rng *rng, const char *text);

#endif
