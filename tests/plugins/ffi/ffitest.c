/*
 * ffitest.c - a plain C library (no loom headers) whose functions the ffi
 * unit tests call through textual signatures: every scalar type as argument
 * and return, narrow integer returns whose sign libffi must preserve, and
 * pointers in, out and inout.
 */
#include <stdint.h>

double add_f64(double a, double b) { return a + b; }
float mul_f32(float a, float b) { return a * b; }

/* Narrow returns: read back through ffi_arg, the sign must survive. */
int8_t neg_i8(int8_t x) { return (int8_t)-x; }
uint8_t add_u8(uint8_t a, uint8_t b) { return (uint8_t)(a + b); }
int16_t neg_i16(int16_t x) { return (int16_t)-x; }
uint16_t add_u16(uint16_t a, uint16_t b) { return (uint16_t)(a + b); }
uint32_t big_u32(void) { return 4000000000u; }
int32_t answer(void) { return 42; }

/* Mixed scalar arguments, so registers and their widths are exercised. */
double mix(int8_t a, float b, double c, uint16_t d, int64_t e)
{
    return (double)a + (double)b + c + (double)d + (double)e;
}

/* Pointers: in, out, inout. */
int64_t dot_i32(const int32_t *x, const int32_t *y, int64_t n)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (int64_t)x[i] * y[i];
    return s;
}

void fill_f64(double *out, int32_t n, double value)
{
    for (int32_t i = 0; i < n; i++)
        out[i] = value * i;
}

void square_inplace(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] *= x[i];
}

/* A by-value i8 length, so a long request does not fit it. */
int32_t copy_u8(const uint8_t *x, int8_t n, uint8_t *y)
{
    for (int8_t i = 0; i < n; i++)
        y[i] = (uint8_t)(x[i] + 1);
    return 0;
}

/* Fails with a code of its own when asked to. */
int32_t fail_on_negative(const int32_t *x, int64_t n, int32_t *y)
{
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < 0)
            return -7;
        y[i] = x[i];
    }
    return 0;
}

/* The most parameters a signature may have (FFI_SIG_MAX_ARGS = 16). */
int64_t sum16(int64_t a1, int64_t a2, int64_t a3, int64_t a4, int64_t a5, int64_t a6,
              int64_t a7, int64_t a8, int64_t a9, int64_t a10, int64_t a11, int64_t a12,
              int64_t a13, int64_t a14, int64_t a15, int64_t a16)
{
    return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 +
           a15 + a16;
}
