/*
 * fuzz_dataset.h - the checks the dataset readers' targets share: a refusal
 * says why and leaves no dataset; an accepted dataset passes the target's
 * shape check, and every sample reads back through get() with its features
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

/* Checks what an open call returned (rc, *ds, err) and closes the dataset. */
static inline void fuzz_check_open(int rc, native_dataset *ds, const char *err,
                                   void (*check_shape)(const native_dataset *))
{
    if (rc != 0) {
        if (ds || !err[0])
            abort();
        return;
    }
    if (!ds)
        abort();
    check_shape(ds);
    fuzz_check_samples(ds);
    ds->close(ds);
}

#endif
