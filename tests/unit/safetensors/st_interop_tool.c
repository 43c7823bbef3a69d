/*
 * st_interop_tool.c - the C side of the PyTorch interoperability test
 * (st_interop.py).
 *   st_interop_tool write PATH   writes the reference checkpoint
 *   st_interop_tool dump PATH    validates PATH and prints, per tensor in name
 *                                order, "tensor NAME DTYPE DIMS HEXBYTES"
 *                                (DIMS comma-separated, "-" for a scalar),
 *                                then "meta KEY VALUE" per metadata entry
 * Exit status 0, or 1 with the reader's message on stderr.
 */
#include "train/safetensors.h"

#include <stdio.h>
#include <string.h>

static int write_reference(const char *path)
{
    /* Values PyTorch rebuilds independently in st_interop.py. */
    static const float w[2][3] = {{0.5f, -1.25f, 3.0f}, {1e-30f, -0.0f, 65504.0f}};
    static const double b[3] = {0.1, -2.5, 1e300};
    static const int32_t i[2][2] = {{-1, 0}, {2147483647, -2147483647 - 1}};
    static const int64_t l[3] = {INT64_C(-9007199254740993), 0, INT64_C(9223372036854775807)};
    static const uint8_t u[5] = {0, 1, 127, 128, 255};
    static const int64_t sw[2] = {2, 3}, sb[1] = {3}, si[2] = {2, 2}, sl[1] = {3}, su[1] = {5},
                         se[2] = {0, 4};
    char err[512];
    st_writer *wr = safetensors_writer_new();
    int rc = loom_err_take(safetensors_writer_add(wr, "layer.weight", LOOM_DTYPE_F32, sw, 2, w, sizeof w), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "layer.bias", LOOM_DTYPE_F64, sb, 1, b, sizeof b), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "counts", LOOM_DTYPE_I32, si, 2, i, sizeof i), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "ids", LOOM_DTYPE_I64, sl, 1, l, sizeof l), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "bytes", LOOM_DTYPE_U8, su, 1, u, sizeof u), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "empty", LOOM_DTYPE_F32, se, 2, NULL, 0), err, sizeof err);
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_add(wr, "step", LOOM_DTYPE_I64, NULL, 0, &l[2], 8), err, sizeof err);
    if (rc == 0)
        rc = safetensors_writer_set_metadata(wr, "format", "pt") == 0 &&
                     safetensors_writer_set_metadata(wr, "epoch", "7") == 0
                 ? 0
                 : -1;
    if (rc == 0)
        rc = loom_err_take(safetensors_writer_commit(wr, path), err, sizeof err);
    safetensors_writer_free(wr);
    if (rc != 0)
        fprintf(stderr, "write: %s\n", err);
    return rc == 0 ? 0 : 1;
}

static int dump(const char *path)
{
    char err[1024];
    st_file *f;
    if (loom_err_take(safetensors_open(path, 0, &f), err, sizeof err) != LOOM_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    for (uint32_t k = 0; k < safetensors_count(f); k++) {
        st_tensor_info t;
        safetensors_tensor(f, k, &t);
        printf("tensor %s %s ", t.name, t.dtype_name);
        if (t.ndim == 0)
            printf("-");
        for (uint32_t d = 0; d < t.ndim; d++)
            printf("%s%lld", d ? "," : "", (long long)t.shape[d]);
        printf(" ");
        for (uint64_t b = 0; b < t.nbytes; b++)
            printf("%02x", ((const uint8_t *)t.data)[b]);
        printf("%s\n", t.nbytes ? "" : "-");
    }
    for (uint32_t k = 0; k < safetensors_metadata_count(f); k++) {
        const char *key, *value;
        safetensors_metadata_at(f, k, &key, &value);
        printf("meta %s %s\n", key, value);
    }
    safetensors_close(f);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "write") == 0)
        return write_reference(argv[2]);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2]);
    fprintf(stderr, "usage: %s write|dump PATH\n", argv[0]);
    return 2;
}
