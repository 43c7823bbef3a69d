/*
 * algorithms/common/search_design.h - the starting points of model-based
 * searches as a Latin hypercube: n points whose coordinates, in every
 * dimension, fall one in each of n equal strata (jittered inside it), so
 * the first results cover each parameter's range evenly instead of
 * clumping as independent draws do. A point depends only on (seed, n, k,
 * d), so a restored search regenerates the rest of its design.
 */
#ifndef LOOM_SEARCH_DESIGN_H
#define LOOM_SEARCH_DESIGN_H

#include <stdint.h>

#include "search_rng.h"

/* Designs larger than this are not stratified (callers draw at random). */
#define SEARCH_DESIGN_MAX 1024

/* Coordinate d in [0, 1) of point k (k < n <= SEARCH_DESIGN_MAX) of the
 * design `seed`. */
double search_design_coordinate(uint64_t seed, uint32_t n, uint32_t k, uint32_t d);

/* Start point k of a search that starts with n points, into u[0..dims):
 * the design's when n <= SEARCH_DESIGN_MAX, else independent draws. */
void search_design_point(uint64_t seed, uint32_t n, uint64_t k, uint32_t dims, search_rng *rng,
                         double *u);

#endif
