/*
 * fuzz_dataset.h - the check the dataset readers' targets share: every
 * sample of an accepted dataset reads back through get() with its features
 * in [0, 1] and its label below the class count (the readers' promise).
 * Aborts otherwise, so libFuzzer records the input.
 */
#ifndef LOOM_FUZZ_DATASET_H
#define LOOM_FUZZ_DATASET_H

#include <stdlib.h>

#include "dataset.h"

static inline void fuzz_check_samples(const native_dataset *ds)
{
    float *x = malloc((size_t)ds->sample_size * sizeof *x);
    if (!x)
        abort();
    for (uint64_t i = 0; i < ds->count; i++) {
        int32_t label = -1;
        ds->get(ds, i, x, &label);
        if (label < 0 || label >= ds->classes)
            abort();
        for (int64_t j = 0; j < ds->sample_size; j++)
            if (!(x[j] >= 0.0f && x[j] <= 1.0f))
                abort();
    }
    free(x);
}

#endif
