/*
 * vecmath.c - an example model for the "ffi" kernel: plain C functions with
 * no loom headers, served because model.json names the library, the symbol
 * and its signature. Returns 0 on success, as the kernel expects.
 */
#include <math.h>
#include <stdint.h>

enum { VECMATH_OK = 0, VECMATH_BAD_LENGTH = 1, VECMATH_OVERFLOW = 2 };

/* y[i] = 2 x[i] + 1. Fails with VECMATH_OVERFLOW when a result would not be
 * a finite float, leaving y partly written. */
int32_t scale_add(const float *x, int64_t n, float *y)
{
    if (n < 0)
        return VECMATH_BAD_LENGTH;
    for (int64_t i = 0; i < n; i++) {
        y[i] = 2.0f * x[i] + 1.0f;
        if (!isfinite(y[i]))
            return VECMATH_OVERFLOW;
    }
    return VECMATH_OK;
}

/* out[0] = sum of x, out[1] = mean: a fixed-size output ("output_size": 2). */
int32_t sum_mean(const double *x, int64_t n, double *out)
{
    if (n < 0)
        return VECMATH_BAD_LENGTH;
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += x[i];
    out[0] = sum;
    out[1] = n ? sum / (double)n : 0.0;
    return VECMATH_OK;
}
