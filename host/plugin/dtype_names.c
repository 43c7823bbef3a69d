/* plugin/dtype_names.c - see dtype_names.h. */
#include "plugin/dtype_names.h"

#include <string.h>

static const struct {
    int32_t dtype;
    const char *name;
    size_t size;
} dtypes[] = {
    {LOOM_DTYPE_BOOL, "BOOL", 1}, {LOOM_DTYPE_U8, "UINT8", 1},   {LOOM_DTYPE_U16, "UINT16", 2},
    {LOOM_DTYPE_U32, "UINT32", 4}, {LOOM_DTYPE_U64, "UINT64", 8}, {LOOM_DTYPE_I8, "INT8", 1},
    {LOOM_DTYPE_I16, "INT16", 2}, {LOOM_DTYPE_I32, "INT32", 4},  {LOOM_DTYPE_I64, "INT64", 8},
    {LOOM_DTYPE_F32, "FP32", 4},  {LOOM_DTYPE_F64, "FP64", 8},
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

const char *dtype_name(int32_t dtype)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].name;
    return NULL;
}

int32_t dtype_parse(const char *name, size_t len)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (strlen(dtypes[i].name) == len && memcmp(dtypes[i].name, name, len) == 0)
            return dtypes[i].dtype;
    return -1;
}

size_t dtype_size(int32_t dtype)
{
    for (size_t i = 0; i < NDTYPES; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].size;
    return 0;
}
