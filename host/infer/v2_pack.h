/*
 * infer/v2_pack.h - the codec's inner parts (v2_codec.h): the tensor pack's
 * entries, written and read, and the reader of a "data" array's numbers
 * straight into a tensor's type.
 */
#ifndef LOOM_INFER_V2_PACK_H
#define LOOM_INFER_V2_PACK_H

#include "infer/v2_codec.h"

typedef struct v2_pack_entry {
    int32_t dtype;
    uint32_t ndim;
    uint64_t name_off, name_len, data_off, nbytes;
    int64_t shape[LOOM_MAX_DIMS];
} v2_pack_entry;

#define V2_PACK_HEADER 8u
#define V2_ALIGN(n) (((n) + 7u) & ~(size_t)7u)

/* Room for `more` bytes past len (within V2_PACK_MAX): 0, or -1. */
int v2_buf_reserve(v2_buf *b, size_t more);

/* A pack's header, entries and names for the n declared tensors, their
 * data to follow: 0, or -1 (out of memory). */
int v2_pack_begin(v2_buf *b, const model_tensor *t, uint32_t n);
/* Entry i's shape and data: from data_from (aligned up) to the end. */
void v2_pack_set_entry(v2_buf *b, int i, const int64_t *shape, uint32_t ndim,
                       size_t data_from);

enum { V2_READ_SYNTAX = -1, V2_READ_RANGE = -2, V2_READ_TOO_LARGE = -3 };

typedef struct v2_number_reader {
    const char *p, *end; /* p at the array's '[' */
    int32_t dtype;
    v2_buf *pack;  /* the values are appended, from an 8-aligned offset */
    int64_t count; /* values read (on failure: the index of the bad one) */
} v2_number_reader;

/* Reads a (nested) array of numbers (true/false for BOOL): 0, or a
 * V2_READ_ code; p ends past the array. */
int v2_read_numbers(v2_number_reader *r);
/* What data of that type holds, for a message ("numbers of FP32"). */
const char *v2_number_expected(int32_t dtype);

#endif
