/* algorithms/common/search_rng.c - see search_rng.h. */
#include "search_rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void search_rng_seed(search_rng *rng, uint64_t seed)
{
    /* splitmix64 spreads any seed, 0 included, over the four words, which
     * therefore are never all zero. */
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
}

uint64_t search_rng_next(search_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double search_rng_uniform(search_rng *rng)
{
    return (double)(search_rng_next(rng) >> 11) * 0x1.0p-53;
}

uint64_t search_rng_below(search_rng *rng, uint64_t n)
{
    /* Reject the top partial block so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = search_rng_next(rng);
    while (x >= limit);
    return x % n;
}

double search_rng_normal(search_rng *rng)
{
    double u1 = 1.0 - search_rng_uniform(rng); /* (0, 1]: log is finite */
    double u2 = search_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

void search_rng_format(const search_rng *rng, char *out)
{
    for (int i = 0; i < 4; i++)
        snprintf(out + 16 * i, 17, "%016llx", (unsigned long long)rng->s[i]);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int search_rng_parse(search_rng *rng, const char *text)
{
    if (!text || strlen(text) != SEARCH_RNG_TEXT_LEN)
        return -1;
    search_rng parsed;
    for (int i = 0; i < 4; i++) {
        uint64_t word = 0;
        for (int j = 0; j < 16; j++) {
            int d = hex_digit(text[16 * i + j]);
            if (d < 0)
                return -1;
            word = (word << 4) | (uint64_t)d;
        }
        parsed.s[i] = word;
    }
    if ((parsed.s[0] | parsed.s[1] | parsed.s[2] | parsed.s[3]) == 0)
        return -1;
    *rng = parsed;
    return 0;
}
