/* infer/v2_numbers.c - a "data" array's numbers read straight from the
 * text into the tensor's type (see v2_pack.h), the way the native kernel's
 * decoder reads them: no JSON node per number. */
#include "infer/v2_pack.h"
#include "plugin/dtype_names.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void spaces(v2_number_reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* 10^0 .. 10^22: exact as doubles. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* One JSON number (its grammar checked strictly) as a double. A plain
 * decimal of at most 15 digits is mantissa / 10^k, which rounds exactly as
 * strtod would (both are exact doubles); others go to strtod. */
static int read_double(v2_number_reader *r, double *out)
{
    const char *s = r->p, *p = s, *e = r->end;
    uint64_t mant = 0;
    int digits = 0, frac = 0, exp = 0;
    if (p < e && *p == '-')
        p++;
    if (p < e && *p == '0') {
        p++;
    } else if (p < e && *p >= '1' && *p <= '9') {
        for (; p < e && is_digit(*p); p++, digits++)
            mant = mant * 10 + (uint64_t)(*p - '0');
    } else {
        return V2_READ_SYNTAX;
    }
    if (p < e && *p == '.') {
        if (++p >= e || !is_digit(*p))
            return V2_READ_SYNTAX;
        for (; p < e && is_digit(*p); p++, frac++, digits++)
            mant = mant * 10 + (uint64_t)(*p - '0');
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        exp = 1;
        if (++p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || !is_digit(*p))
            return V2_READ_SYNTAX;
        while (p < e && is_digit(*p))
            p++;
    }
    r->p = p;
    if (!exp && digits <= 15 && frac <= 22)
        *out = (*s == '-' ? -(double)mant : (double)mant) / pow10_exact[frac];
    else
        *out = strtod(s, NULL); /* stops where the checked number ends */
    return isfinite(*out) ? 0 : V2_READ_RANGE;
}

/* One whole number: its magnitude and sign. */
static int read_whole(v2_number_reader *r, uint64_t *mag, int *neg)
{
    const char *p = r->p, *e = r->end;
    *neg = p < e && *p == '-';
    p += *neg;
    if (p >= e || !is_digit(*p) || (*p == '0' && p + 1 < e && is_digit(p[1])))
        return V2_READ_SYNTAX;
    uint64_t v = 0;
    for (; p < e && is_digit(*p); p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return V2_READ_RANGE;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p < e && (*p == '.' || *p == 'e' || *p == 'E'))
        return V2_READ_SYNTAX;
    r->p = p;
    *mag = v;
    return 0;
}

/* The number at r->p stored at dst in r->dtype. */
static int read_one(v2_number_reader *r, char *dst)
{
    if (r->dtype == LOOM_DTYPE_F32 || r->dtype == LOOM_DTYPE_F64) {
        double v;
        int rc = read_double(r, &v);
        if (rc)
            return rc;
        if (r->dtype == LOOM_DTYPE_F64) {
            memcpy(dst, &v, 8);
            return 0;
        }
        if (fabs(v) > FLT_MAX)
            return V2_READ_RANGE;
        float f = (float)v;
        memcpy(dst, &f, 4);
        return 0;
    }
    if (r->dtype == LOOM_DTYPE_BOOL) {
        size_t left = (size_t)(r->end - r->p);
        int t = left >= 4 && memcmp(r->p, "true", 4) == 0;
        if (!t && !(left >= 5 && memcmp(r->p, "false", 5) == 0))
            return V2_READ_SYNTAX;
        r->p += t ? 4 : 5;
        *dst = (char)t;
        return 0;
    }
    uint64_t mag;
    int neg;
    int rc = read_whole(r, &mag, &neg);
    if (rc)
        return rc;
    static const struct {
        int32_t dtype;
        int is_signed;
        uint64_t max;
        size_t size;
    } ints[] = {
        {LOOM_DTYPE_I8, 1, INT8_MAX, 1},     {LOOM_DTYPE_U8, 0, UINT8_MAX, 1},
        {LOOM_DTYPE_I16, 1, INT16_MAX, 2},   {LOOM_DTYPE_U16, 0, UINT16_MAX, 2},
        {LOOM_DTYPE_I32, 1, INT32_MAX, 4},   {LOOM_DTYPE_U32, 0, UINT32_MAX, 4},
        {LOOM_DTYPE_I64, 1, INT64_MAX, 8},   {LOOM_DTYPE_U64, 0, UINT64_MAX, 8},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (ints[k].dtype != r->dtype)
            continue;
        if (neg && !ints[k].is_signed && mag)
            return V2_READ_RANGE;
        if (mag > ints[k].max + (uint64_t)(neg && ints[k].is_signed))
            return V2_READ_RANGE;
        int64_t s = neg ? (int64_t)(0 - mag) : (int64_t)mag;
        /* little or big endian alike: the value narrowed through its type */
        int8_t i8 = (int8_t)s;
        int16_t i16 = (int16_t)s;
        int32_t i32 = (int32_t)s;
        switch (ints[k].size) {
        case 1: memcpy(dst, &i8, 1); break;
        case 2: memcpy(dst, &i16, 2); break;
        case 4: memcpy(dst, &i32, 4); break;
        default: memcpy(dst, &s, 8); break;
        }
        return 0;
    }
    return V2_READ_SYNTAX;
}

static int array(v2_number_reader *r, size_t size, int depth)
{
    if (depth > V2_DEPTH_MAX || r->p >= r->end || *r->p != '[')
        return V2_READ_SYNTAX;
    r->p++;
    spaces(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return 0;
    }
    v2_buf *b = r->pack;
    for (;;) {
        spaces(r);
        if (r->p >= r->end)
            return V2_READ_SYNTAX;
        int rc;
        if (*r->p == '[') {
            rc = array(r, size, depth + 1);
        } else {
            if (b->len + size > b->cap && v2_buf_reserve(b, size) != 0)
                return V2_READ_TOO_LARGE;
            rc = read_one(r, b->data + b->len);
            if (!rc) {
                b->len += size;
                r->count++;
            }
        }
        if (rc)
            return rc;
        spaces(r);
        if (r->p >= r->end)
            return V2_READ_SYNTAX;
        char sep = *r->p++;
        if (sep == ']')
            return 0;
        if (sep != ',')
            return V2_READ_SYNTAX;
    }
}

int v2_read_numbers(v2_number_reader *r)
{
    v2_buf *b = r->pack;
    size_t at = V2_ALIGN(b->len);
    if (at > b->cap && v2_buf_reserve(b, at - b->len) != 0)
        return V2_READ_TOO_LARGE;
    memset(b->data + b->len, 0, at - b->len);
    b->len = at;
    r->count = 0;
    size_t size = dtype_size(r->dtype);
    return size ? array(r, size, 0) : V2_READ_SYNTAX;
}

const char *v2_number_expected(int32_t dtype)
{
    switch (dtype) {
    case LOOM_DTYPE_BOOL: return "true or false (BOOL)";
    case LOOM_DTYPE_F32: return "numbers of FP32";
    case LOOM_DTYPE_F64: return "numbers of FP64";
    case LOOM_DTYPE_I8: return "whole numbers of INT8 (-128 to 127)";
    case LOOM_DTYPE_I16: return "whole numbers of INT16 (-32768 to 32767)";
    case LOOM_DTYPE_I32: return "whole numbers of INT32 (-2147483648 to 2147483647)";
    case LOOM_DTYPE_I64: return "whole numbers of INT64";
    case LOOM_DTYPE_U8: return "whole numbers of UINT8 (0 to 255)";
    case LOOM_DTYPE_U16: return "whole numbers of UINT16 (0 to 65535)";
    case LOOM_DTYPE_U32: return "whole numbers of UINT32 (0 to 4294967295)";
    default: return "whole numbers of UINT64 (0 and up)";
    }
}
