/*
 * algorithms/common/search_design.c - a Latin hypercube computed point by
 * point (see search_design.h): each dimension's stratum order is a shuffle
 * of 0..n-1 drawn from a generator seeded by (seed, d), redone per call (n
 * is a warm-up size, tens of points), and each point's jitter comes from
 * (seed, d, k).
 */
#include "search_design.h"

#include "search_rng.h"

double search_design_coordinate(uint64_t seed, uint32_t n, uint32_t k, uint32_t d)
{
    if (n == 0 || n > SEARCH_DESIGN_MAX || k >= n)
        return 0.5;
    uint32_t order[SEARCH_DESIGN_MAX];
    search_rng rng;
    search_rng_seed(&rng, seed ^ (0x9e3779b97f4a7c15ull * (d + 1)));
    for (uint32_t i = 0; i < n; i++) { /* inside-out Fisher-Yates */
        uint32_t j = (uint32_t)search_rng_below(&rng, (uint64_t)i + 1);
        if (j != i)
            order[i] = order[j];
        order[j] = i;
    }
    search_rng jitter;
    search_rng_seed(&jitter, seed ^ (0xbf58476d1ce4e5b9ull * (d + 1)) ^
                                 (0x94d049bb133111ebull * ((uint64_t)k + 1)));
    return ((double)order[k] + search_rng_uniform(&jitter)) / (double)n;
}

void search_design_point(uint64_t seed, uint32_t n, uint64_t k, uint32_t dims, search_rng *rng,
                         double *u)
{
    int stratified = k < n && n <= SEARCH_DESIGN_MAX;
    for (uint32_t d = 0; d < dims; d++)
        u[d] = stratified ? search_design_coordinate(seed, n, (uint32_t)k, d)
                          : search_rng_uniform(rng);
}
