/*
 * dataset_idx.c - the IDX format of MNIST and Fashion-MNIST. A gzip file
 * of one member is inflated whole by libdeflate (twice zlib's speed: a
 * worker joining a job waits for its data set, Fashion-MNIST's 47 MB in
 * about 0.13 s instead of 0.26 s); anything else (raw files, several
 * members, a trailer that does not fit) goes through zlib's gzread, which
 * reads gzip and raw alike, so one path serves "x.gz" and "x".
 *
 * Layout: two zero bytes, a type byte (0x08 = unsigned byte, the only type
 * these datasets use), a dimension count, then one big-endian uint32 per
 * dimension and the data.
 */
#include "dataset.h"

#include <libdeflate.h>
#include <limits.h>
#include <loom/abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "errbuf.h"

#define INVALID LOOM_ERR_INVALID_ARGUMENT
#define IDX_UBYTE 0x08
#define IDX_MAX_DIMS 4

typedef struct idx_file {
    uint32_t dims[IDX_MAX_DIMS];
    int ndims;
    uint8_t *data;
    uint64_t size; /* bytes of data = product of dims */
} idx_file;

typedef struct idx_dataset {
    native_dataset base;
    uint8_t *images;
    uint8_t *labels;
} idx_dataset;

/* Where an IDX file's bytes come from: inflated already, or a zlib
 * stream. */
typedef struct idx_source {
    gzFile f;
    uint8_t *inflated; /* NULL: read f */
    uint64_t len, at;
    const char *gz_error; /* zlib's word on a corrupt stream */
} idx_source;

/* The fast path's bound: larger files stream through zlib in pieces. */
#define IDX_INFLATE_MAX ((uint64_t)1 << 30)
/* Deflate expands at most about 1032:1: a trailer claiming more lies. */
#define DEFLATE_MAX_RATIO 1032u

/* A whole single-member gzip file inflated in one go, its size taken from
 * the gzip trailer; 0 (source untouched) for anything else, which the
 * zlib path reads or reports on. */
static int inflate_whole(const char *path, idx_source *src)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    uint8_t *packed = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    int ok = n >= 18 && fseek(f, 0, SEEK_SET) == 0 && (packed = malloc((size_t)n)) &&
             fread(packed, 1, (size_t)n, f) == (size_t)n && packed[0] == 0x1f && packed[1] == 0x8b;
    fclose(f);
    uint64_t size = 0;
    if (ok) {
        const uint8_t *t = packed + n - 4; /* ISIZE: the inflated size mod 2^32 */
        size = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
        ok = size > 0 && size <= IDX_INFLATE_MAX && size <= (uint64_t)n * DEFLATE_MAX_RATIO;
    }
    uint8_t *out = ok ? malloc(size) : NULL;
    struct libdeflate_decompressor *d = out ? libdeflate_alloc_decompressor() : NULL;
    size_t in_used = 0, out_used = 0;
    ok = d && libdeflate_gzip_decompress_ex(d, packed, (size_t)n, out, size, &in_used,
                                            &out_used) == LIBDEFLATE_SUCCESS &&
         in_used == (size_t)n && out_used == size;
    if (d)
        libdeflate_free_decompressor(d);
    free(packed);
    if (!ok) {
        free(out);
        return 0;
    }
    src->inflated = out;
    src->len = size;
    return 1;
}

/* Reads as much as possible, in chunks gzread can take. */
static uint64_t read_fully(idx_source *src, void *buf, uint64_t size)
{
    if (src->inflated) {
        uint64_t n = src->len - src->at < size ? src->len - src->at : size;
        memcpy(buf, src->inflated + src->at, n);
        src->at += n;
        return n;
    }
    gzFile f = src->f;
    uint64_t done = 0;
    while (done < size) {
        uint64_t want = size - done;
        if (want > (1u << 30))
            want = 1u << 30;
        int got = gzread(f, (char *)buf + done, (unsigned)want);
        int code = Z_OK;
        const char *why = got < 0 ? gzerror(f, &code) : NULL;
        if (why && code != Z_OK)
            src->gz_error = why;
        if (got <= 0)
            break;
        done += (uint64_t)got;
    }
    return done;
}

static void format_dims(const idx_file *idx, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < idx->ndims && used < outlen; i++)
        used += (size_t)snprintf(out + used, outlen - used, "%s%u", i ? "x" : "",
                                 idx->dims[i]);
}

/* Reads one IDX file that must have `want_ndims` dimensions (0: 3 or 4,
 * the image layouts). `role` ("images", "labels") is for messages. */
static int idx_read(const char *path, const char *role, int want_ndims,
                    idx_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    idx_source src = {0};
    if (!inflate_whole(path, &src) && !(src.f = gzopen(path, "rb")))
        return native_err(err, errlen, LOOM_ERR_NOT_FOUND,
                          "IDX %s file '%s': cannot open", role, path);
    int rc = 0;
    uint8_t magic[4];
    uint64_t got = read_fully(&src, magic, 4);
    if (got < 4) {
        rc = native_err(err, errlen, INVALID,
                        "IDX %s file '%s': truncated: expected a 4-byte header, "
                        "found %llu bytes",
                        role, path, (unsigned long long)got);
        goto done;
    }
    uint32_t magic_value = (uint32_t)magic[0] << 24 | (uint32_t)magic[1] << 16 |
                           (uint32_t)magic[2] << 8 | magic[3];
    int ndims = magic[3];
    int shape_ok = want_ndims ? ndims == want_ndims : (ndims == 3 || ndims == 4);
    if (magic[0] != 0 || magic[1] != 0 || magic[2] != IDX_UBYTE || !shape_ok) {
        rc = native_err(err, errlen, INVALID,
                        "IDX %s file '%s': bad magic number 0x%08x (expected "
                        "0x%08x%s: unsigned bytes, %s)",
                        role, path, magic_value,
                        want_ndims ? 0x800u | (unsigned)want_ndims : 0x803u,
                        want_ndims ? "" : " or 0x00000804",
                        want_ndims == 1 ? "1 dimension" : "[N, H, W] or [N, C, H, W]");
        goto done;
    }
    uint8_t raw_dims[4 * IDX_MAX_DIMS];
    got = read_fully(&src, raw_dims, 4u * (unsigned)ndims);
    if (got < 4u * (unsigned)ndims) {
        rc = native_err(err, errlen, INVALID,
                        "IDX %s file '%s': truncated: expected %d dimension sizes "
                        "(%d bytes) after the magic number, found %llu bytes",
                        role, path, ndims, 4 * ndims, (unsigned long long)got);
        goto done;
    }
    out->ndims = ndims;
    out->size = 1;
    for (int i = 0; i < ndims; i++) {
        const uint8_t *d = raw_dims + 4 * i;
        out->dims[i] = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 |
                       (uint32_t)d[2] << 8 | d[3];
        if (out->dims[i] == 0 || (i > 0 && out->dims[i] > 65536)) {
            rc = native_err(err, errlen, INVALID,
                            "IDX %s file '%s': dimension %d is %u (expected 1 to "
                            "%u)",
                            role, path, i, out->dims[i], i ? 65536u : UINT32_MAX);
            goto done;
        }
        out->size *= out->dims[i];
    }
    /* A 4 GiB cap keeps a corrupt header from asking for absurd memory. */
    if (out->size > (1ull << 32)) {
        rc = native_err(err, errlen, INVALID,
                        "IDX %s file '%s': header promises %llu bytes of data "
                        "(more than the 4 GiB the reader accepts)",
                        role, path, (unsigned long long)out->size);
        goto done;
    }
    /* Grow the buffer as data arrives, so a header that promises more
     * than the file holds costs only what the file holds. */
    uint64_t cap = out->size < (1u << 20) ? out->size : (1u << 20);
    got = 0;
    for (;;) {
        uint8_t *grown = realloc(out->data, cap);
        if (!grown) {
            rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                            "IDX %s file '%s': cannot allocate %llu bytes", role,
                            path, (unsigned long long)cap);
            goto done;
        }
        out->data = grown;
        uint64_t n = read_fully(&src, out->data + got, cap - got);
        got += n;
        if (got < cap || cap == out->size)
            break;
        cap = cap * 2 < out->size ? cap * 2 : out->size;
    }
    if (got < out->size) {
        char dims[96];
        format_dims(out, dims, sizeof dims);
        rc = native_err(err, errlen, INVALID,
                        "IDX %s file '%s': truncated: header says %s (%llu bytes "
                        "of data) but only %llu bytes follow",
                        role, path, dims, (unsigned long long)out->size,
                        (unsigned long long)got);
    }
done:
    /* what stopped the reading, rather than how little it found */
    if (rc == INVALID && src.gz_error) {
        const char *why = src.gz_error; /* "PATH: reason": the path is said once */
        size_t n = strlen(path);
        if (!strncmp(why, path, n) && !strncmp(why + n, ": ", 2))
            why += n + 2;
        rc = native_err(err, errlen, INVALID, "IDX %s file '%s': corrupt gzip data (%s)", role,
                        path, why);
    }
    if (src.f)
        gzclose(src.f);
    free(src.inflated);
    if (rc) {
        free(out->data);
        out->data = NULL;
    }
    return rc;
}

static void idx_get(const native_dataset *ds, uint64_t index, float *x,
                    int32_t *label)
{
    const idx_dataset *idx = (const idx_dataset *)ds;
    const uint8_t *src = idx->images + index * (uint64_t)ds->sample_size;
    for (int64_t i = 0; i < ds->sample_size; i++)
        x[i] = src[i] * (1.0f / 255.0f);
    *label = idx->labels[index];
}

static void idx_close(native_dataset *ds)
{
    idx_dataset *idx = (idx_dataset *)ds;
    if (!idx)
        return;
    free(idx->images);
    free(idx->labels);
    free(idx);
}

int native_idx_open(const char *images_path, const char *labels_path,
                    native_dataset **out, char *err, size_t errlen)
{
    *out = NULL;
    idx_file images, labels;
    int rc = idx_read(images_path, "images", 0, &images, err, errlen);
    if (rc)
        return rc;
    if ((rc = idx_read(labels_path, "labels", 1, &labels, err, errlen))) {
        free(images.data);
        return rc;
    }
    if (images.dims[0] != labels.dims[0]) {
        rc = native_err(err, errlen, INVALID,
                        "IDX images file '%s' has %u samples but labels file "
                        "'%s' has %u",
                        images_path, images.dims[0], labels_path, labels.dims[0]);
        goto fail;
    }
    idx_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto fail;
    }
    ds->images = images.data;
    ds->labels = labels.data;
    ds->base.count = images.dims[0];
    ds->base.ndim = 3;
    if (images.ndims == 3) {
        ds->base.shape[0] = 1;
        ds->base.shape[1] = (int32_t)images.dims[1];
        ds->base.shape[2] = (int32_t)images.dims[2];
    } else {
        for (int i = 0; i < 3; i++)
            ds->base.shape[i] = (int32_t)images.dims[i + 1];
    }
    ds->base.sample_size =
        (int64_t)ds->base.shape[0] * ds->base.shape[1] * ds->base.shape[2];
    int max_label = 0;
    for (uint64_t i = 0; i < labels.size; i++)
        if (labels.data[i] > max_label)
            max_label = labels.data[i];
    ds->base.classes = max_label + 1;
    ds->base.get = idx_get;
    ds->base.close = idx_close;
    *out = &ds->base;
    return 0;
fail:
    free(images.data);
    free(labels.data);
    return rc;
}
