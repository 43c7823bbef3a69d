/*
 * algorithms/common/search_space.h - WMLA's hyperParams array, parsed and
 * validated once, for every built-in search plugin.
 *
 * Accepted entries (numbers may also be given as numeric strings, as WMLA
 * writes "step" and "power"):
 *   Range    DOUBLE  minDbVal, maxDbVal, optional step (quantised) and power
 *                    (value = power^x with x drawn from [min, max]: log scale)
 *   Range    INT     minIntVal, maxIntVal (inclusive), optional step >= 1 and
 *                    power (value = round(power^k))
 *   Discrete INT     discreteIntVal   [integers]
 *   Discrete DOUBLE  discreteDbVal    [numbers]
 *   Discrete STR     discreateStrVal  [strings] (WMLA's spelling) or
 *                    discreteStrVal
 *
 * Every parameter maps a coordinate u in [0, 1) onto its values, uniformly in
 * the sampled domain (the exponent for power ranges, the index for steps and
 * lists). Random search draws u; model-based searches (TPE, Bayes) can work
 * in that unit cube and turn points into configs with the same functions.
 */
#ifndef LOOM_SEARCH_SPACE_H
#define LOOM_SEARCH_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef enum search_param_type {
    SEARCH_RANGE = 1,
    SEARCH_DISCRETE = 2
} search_param_type;

typedef enum search_data_type {
    SEARCH_DOUBLE = 1,
    SEARCH_INT = 2,
    SEARCH_STR = 3
} search_data_type;

typedef struct search_param {
    char *name;
    search_param_type type;
    search_data_type data_type;
    /* Range DOUBLE: bounds of the sampled domain (exponents when power > 0);
     * step 0 means continuous. */
    double min, max, step;
    /* Range DOUBLE or INT: 0 when absent. */
    double power;
    /* Range INT: inclusive bounds and step (1 when absent). */
    int64_t imin, imax, istep;
    /* Discrete: `count` values in the array of the data type. */
    uint32_t count;
    double *dvals;
    int64_t *ivals;
    char **svals;
} search_param;

typedef struct search_space {
    uint32_t count;
    search_param *params;
} search_space;

/* Parses and validates `json` (the hyperParams array). On failure returns -1
 * and writes a message naming the hyperparameter and field into err; *out is
 * then empty. An empty array is valid here: each algorithm decides whether
 * it can search nothing. */
int search_space_parse(const char *json, search_space *out, char *err,
                       size_t errlen);
int search_space_from_cjson(const cJSON *array, search_space *out, char *err,
                            size_t errlen);
void search_space_free(search_space *space);

/* Number of distinct values a parameter takes, or 0 when it is continuous
 * (Range DOUBLE without step). Grid-like searches enumerate these. */
uint64_t search_param_levels(const search_param *p);

/* The value at coordinate u in [0, 1) (clamped), as a new cJSON item:
 * INT as an integral number, DOUBLE as a number, STR as a string. NULL only
 * when out of memory. */
cJSON *search_param_value(const search_param *p, double u);

/* A whole config object {name: value} from one coordinate per parameter. */
cJSON *search_space_config(const search_space *space, const double *u);

#endif
