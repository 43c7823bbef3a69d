/*
 * train/safetensors.c - what the safetensors writer and reader share (see
 * safetensors.h): the dtype table, shape arithmetic, UTF-8 checks. Depends
 * on cJSON and POSIX only, like the writer (safetensors_write.c) and the
 * reader (safetensors_read.c).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "train/safetensors_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ---- */


/* Every byte-sized dtype the format defines; loom's own five come first so
 * safetensors_dtype_name finds them. Sub-byte ones (F4, F6_E2M3, F6_E3M2) are left
 * out on purpose: their sizes are not whole bytes per element. */
static const st_dtype_desc st_dtypes[] = {
    {"F32", LOOM_DTYPE_F32, 4},      {"F64", LOOM_DTYPE_F64, 8},
    {"I32", LOOM_DTYPE_I32, 4},      {"I64", LOOM_DTYPE_I64, 8},
    {"U8", LOOM_DTYPE_U8, 1},        {"BOOL", ST_DTYPE_OTHER, 1},
    {"I8", ST_DTYPE_OTHER, 1},       {"F8_E5M2", ST_DTYPE_OTHER, 1},
    {"F8_E4M3", ST_DTYPE_OTHER, 1},  {"F8_E8M0", ST_DTYPE_OTHER, 1},
    {"I16", ST_DTYPE_OTHER, 2},      {"U16", ST_DTYPE_OTHER, 2},
    {"F16", ST_DTYPE_OTHER, 2},      {"BF16", ST_DTYPE_OTHER, 2},
    {"U32", ST_DTYPE_OTHER, 4},      {"U64", ST_DTYPE_OTHER, 8},
    {"C64", ST_DTYPE_OTHER, 8},
};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

const st_dtype_desc *safetensors_dtype_by_loom(int32_t dtype)
{
    if (dtype == ST_DTYPE_OTHER)
        return NULL;
    for (size_t i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dtype == dtype)
            return &st_dtypes[i];
    return NULL;
}

const st_dtype_desc *safetensors_dtype_by_name(const char *name)
{
    for (size_t i = 0; i < ST_NDTYPES; i++)
        if (strcmp(st_dtypes[i].name, name) == 0)
            return &st_dtypes[i];
    return NULL;
}

const char *safetensors_dtype_name(int32_t dtype)
{
    const st_dtype_desc *d = safetensors_dtype_by_loom(dtype);
    return d ? d->name : NULL;
}

uint32_t safetensors_dtype_size(int32_t dtype)
{
    const st_dtype_desc *d = safetensors_dtype_by_loom(dtype);
    return d ? d->size : 0;
}

/* ---- small helpers ---- */

char *safetensors_dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

int safetensors_byte_count(uint32_t elem_size, const int64_t *shape, uint32_t ndim, uint64_t *out)
{
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *out = 0;
            return 0;
        }
    }
    uint64_t n = elem_size;
    for (uint32_t i = 0; i < ndim; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (d != 0 && n > UINT64_MAX / d)
            return -1;
        n *= d;
    }
    *out = n;
    return 0;
}

const char *safetensors_format_shape(const int64_t *shape, uint32_t ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64,
                                 i ? ", " : "", shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

size_t safetensors_utf8_invalid_at(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (len - i <= need)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += need + 1;
    }
    return len;
}

int safetensors_utf8_valid_str(const char *s)
{
    size_t n = strlen(s);
    return safetensors_utf8_invalid_at((const uint8_t *)s, n) == n;
}

