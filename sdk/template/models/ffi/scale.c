/*
 * scale.c - the kernel of the template-ffi model directory: a plain C
 * function, no loom header, called through libffi as model.json's "ffi"
 * says: "int32(ptr f64 in x, i64 n, ptr f64 out y)" with output_size "n".
 * A request {"inputs": [1, 2, 3]} is answered with the output tensor
 * [2, 4, 6] (the Open Inference Protocol v2's answer); a
 * non-zero return fails the request with that code.
 */
#include <stdint.h>

int32_t scale(const double *x, int64_t n, double *y);

int32_t scale(const double *x, int64_t n, double *y)
{
    if (n < 0)
        return 22; /* EINVAL: the request fails with this code */
    for (int64_t i = 0; i < n; i++)
        y[i] = 2.0 * x[i];
    return 0;
}
