/*
 * algorithms/common/search_options.c - typed algoParams (see
 * search_options.h).
 */
#include "search_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

const char *search_option(const loom_search_config *config, const char *name)
{
    for (uint32_t i = 0; config->options && i < config->option_count; i++)
        if (config->options[i].name &&
            strcasecmp(config->options[i].name, name) == 0)
            return config->options[i].value;
    return NULL;
}

int search_option_int(const loom_search_config *config, const char *name,
                      int64_t fallback, int64_t min, int64_t max, int64_t *out,
                      char *err, size_t errlen)
{
    const char *text = search_option(config, name);
    *out = fallback;
    if (!text)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    while (*end == ' ')
        end++;
    if (errno || end == text || *end || v < min || v > max) {
        snprintf(err, errlen,
                 "algoParams '%s' is \"%s\"; expected an integer from %lld to %lld",
                 name, text, (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int search_option_double(const loom_search_config *config, const char *name,
                         double fallback, double min, double max, double *out,
                         char *err, size_t errlen)
{
    const char *text = search_option(config, name);
    *out = fallback;
    if (!text)
        return 0;
    char *end;
    double v = strtod(text, &end);
    while (*end == ' ')
        end++;
    if (end == text || *end || !isfinite(v) || v < min || v > max) {
        snprintf(err, errlen,
                 "algoParams '%s' is \"%s\"; expected a number from %g to %g",
                 name, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
}
