/*
 * train/safetensors_internal.h - what the safetensors writer
 * (safetensors_write.c) and reader (safetensors_read.c) share; not for
 * callers, who use safetensors.h.
 */
#ifndef LOOM_TRAIN_SAFETENSORS_INTERNAL_H
#define LOOM_TRAIN_SAFETENSORS_INTERNAL_H

#include "train/safetensors.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "safetensors data is little-endian; this code assumes a little-endian host"
#endif

/* Tensor data is handed out 8-byte aligned; copies are made 64-byte aligned
 * so vector loads on them are happy too. */
#define ST_DATA_ALIGN 8
#define ST_COPY_ALIGN 64
/* The largest integer a JSON number (a double in cJSON) holds exactly. */
#define ST_MAX_JSON_INT 9007199254740992.0

typedef struct st_dtype_desc {
    const char *name;
    int32_t dtype; /* loom_dtype or ST_DTYPE_OTHER */
    uint32_t size;
} st_dtype_desc;

/* One "__metadata__" entry, in a writer or a file. */
typedef struct st_wmeta {
    char *key;
    char *value;
} st_wmeta;

/* The table entry of a loom_dtype / a safetensors dtype name, or NULL. */
const st_dtype_desc *safetensors_dtype_by_loom(int32_t dtype);
const st_dtype_desc *safetensors_dtype_by_name(const char *name);

char *safetensors_dup_str(const char *s);
/* elem_size * product(shape) into *out; -1 when it does not fit 64 bits.
 * A zero dimension makes the count 0 however large the others are. */
int safetensors_byte_count(uint32_t elem_size, const int64_t *shape, uint32_t ndim, uint64_t *out);
/* "[20, 20]" into buf (truncated if needed). */
const char *safetensors_format_shape(const int64_t *shape, uint32_t ndim, char *buf, size_t len);
/* Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and
 * code points past U+10FFFF included), or len when all is well. */
size_t safetensors_utf8_invalid_at(const uint8_t *s, size_t len);
int safetensors_utf8_valid_str(const char *s);

#endif
