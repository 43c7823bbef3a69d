/*
 * plugin/dtype_names.h - the Open Inference Protocol's names of the tensor
 * element types (loom_dtype, loom/abi.h): BOOL, UINT8..UINT64, INT8..INT64,
 * FP32, FP64, and their sizes. One table for the host's v2 codec, the
 * model declarations and the Lua kernels' tensors.
 */
#ifndef LOOM_PLUGIN_DTYPE_NAMES_H
#define LOOM_PLUGIN_DTYPE_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "loom/abi.h"

/* Every name, for a message. */
#define DTYPE_NAME_LIST                                                                   \
    "BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP32 or FP64"

/* "FP32" for LOOM_DTYPE_F32; NULL when the type has no name. */
const char *dtype_name(int32_t dtype);
/* The type of a name (`len` bytes), -1 when unknown. */
int32_t dtype_parse(const char *name, size_t len);
/* Bytes of one element, 0 for an unknown type. */
size_t dtype_size(int32_t dtype);

#endif
