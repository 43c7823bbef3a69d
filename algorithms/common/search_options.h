/*
 * algorithms/common/search_options.h - the task's algoParams as typed
 * settings: names match case-insensitively (WMLA writes "RandomSeed",
 * users write "randomseed"), values are strings as WMLA gives them, and a
 * value that is not a number in range is refused with its name.
 */
#ifndef LOOM_SEARCH_OPTIONS_H
#define LOOM_SEARCH_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <loom/loom.h>

/* The value of option `name`, or NULL when the task does not set it. */
const char *search_option(const loom_search_config *config, const char *name);

/* *out = the option as an integer in [min, max], or `fallback` when absent.
 * Returns 0, or -1 with a message naming the option in err. */
int search_option_int(const loom_search_config *config, const char *name,
                      int64_t fallback, int64_t min, int64_t max, int64_t *out,
                      char *err, size_t errlen);
int search_option_double(const loom_search_config *config, const char *name,
                         double fallback, double min, double max, double *out,
                         char *err, size_t errlen);

#endif
