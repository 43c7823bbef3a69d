/*
 * train/safetensors.h - checkpoints and final models in the safetensors
 * format, so PyTorch and friends read what loom writes and loom reads theirs.
 *
 * The format: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
 * (tensor name -> {"dtype", "shape", "data_offsets": [begin, end]} and an
 * optional "__metadata__" object of string -> string), then the data
 * section: the raw little-endian tensor bytes, offsets relative to its start.
 *
 * Writer: collect tensors (referenced, not copied) and metadata, then commit
 * atomically: a crash leaves either the old file or the whole new one under
 * the path, never a torn one. Output is deterministic: header entries and
 * metadata keys in name order (byte-wise strcmp); the data section laid out
 * by element size (largest first), then name, so every tensor starts at a
 * multiple of its element size (the safetensors library's own layout); the
 * header padded with spaces so the data section starts 8-byte aligned.
 *
 * Reader: safetensors_open validates the whole file before returning (header size and
 * JSON, every entry's types, dtypes, shapes, offsets, sizes, overlaps, gaps,
 * metadata) so callers can trust every st_tensor_info it hands out. Every
 * error message starts with the file's path (or the buffer's label) and says
 * what is wrong and what was expected.
 *
 * Dtypes: loom's five (F32, F64, I32, I64, U8) map to loom_dtype. The other
 * byte-sized safetensors dtypes (BOOL, I8, I16, U16, U32, U64, F16, BF16,
 * C64, F8_E5M2, F8_E4M3, F8_E8M0) are accepted with dtype ST_DTYPE_OTHER and
 * their name and element size in st_tensor_info, so a file with a BF16
 * tensor can still be opened for its F32 ones. Sub-byte dtypes (F4, F6_*)
 * and unknown names are refused. Little-endian hosts only, like the format.
 *
 * Threads: an st_file is read-only after safetensors_open and may be read from any
 * number of threads; an st_writer belongs to one thread at a time.
 */
#ifndef LOOM_TRAIN_SAFETENSORS_H
#define LOOM_TRAIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <loom/abi.h>

#include "util/error.h"

/* dtype of a tensor whose safetensors dtype has no loom_dtype. Negative so
 * it can never collide with a loom_dtype added later. */
#define ST_DTYPE_OTHER (-1)

/* The largest header either side accepts (the format's own limit). */
#define ST_MAX_HEADER_BYTES ((uint64_t)100 << 20)

/* ---- writer ---- */

typedef struct st_writer st_writer;

/* NULL only when out of memory. */
st_writer *safetensors_writer_new(void);

/* Adds one tensor. `dtype` is a loom_dtype; `shape` has `ndim` (at most
 * LOOM_MAX_DIMS) non-negative dims; `nbytes` must equal the dtype's size
 * times the product of the shape. `data` (host memory, little-endian) is
 * REFERENCED, not copied: it must stay valid and unchanged until
 * safetensors_writer_commit returns (or safetensors_writer_free). `name` is copied; it must be
 * non-empty UTF-8, not "__metadata__", and unique in this writer.
 * LOOM_E_INVALID naming the tensor otherwise (nothing added). */
loom_error *safetensors_writer_add(st_writer *w, const char *name, int32_t dtype, const int64_t *shape,
                          uint32_t ndim, const void *data, uint64_t nbytes);

/* safetensors_writer_add for a plugin's tensor view (name, dtype, shape, data,
 * nbytes). Refuses device memory (on_device = 1): copy it to the host first. */
loom_error *safetensors_writer_add_view(st_writer *w, const loom_tensor_view *view);

/* Sets (or replaces) one "__metadata__" entry; key and value are copied and
 * must be UTF-8. 0, or -1 on a NULL/invalid string or out of memory. */
int safetensors_writer_set_metadata(st_writer *w, const char *key, const char *value);

/* Writes everything added so far to `path`: a temporary file in the same
 * directory, fsync, rename over `path`, fsync the directory. On failure the
 * temporary file is removed and `path` is untouched. The writer stays
 * usable (commit again, add more). */
loom_error *safetensors_writer_commit(st_writer *w, const char *path);

void safetensors_writer_free(st_writer *w);

/* ---- reader ---- */

typedef struct st_file st_file;

typedef struct st_tensor_info {
    const char *name;       /* valid until safetensors_close */
    int32_t dtype;          /* loom_dtype, or ST_DTYPE_OTHER */
    const char *dtype_name; /* the file's dtype: "F32", "BF16", ... (static) */
    uint32_t elem_size;     /* bytes per element */
    uint32_t ndim;
    int64_t shape[LOOM_MAX_DIMS]; /* dims past ndim are 0 */
    /* nbytes bytes, valid until safetensors_close. The data section starts 8-byte
     * aligned, so a tensor is aligned for its type when the writer laid
     * tensors out largest element first (loom, the safetensors library);
     * for other files check (uintptr_t)data % elem_size or memcpy. */
    const void *data;
    uint64_t nbytes;
} st_tensor_info;

/* Opens and validates a file. The file is memory-mapped (copied only when
 * its data section is not 8-byte aligned); loom replaces files by rename and
 * never rewrites them in place, which keeps the mapping intact. max_bytes
 * caps the file size (0: no cap). The file in *out; on any error *out is
 * NULL and the error names the file: LOOM_E_NOT_FOUND (no such file),
 * LOOM_E_TOO_LARGE (over max_bytes or a limit of the format),
 * LOOM_E_INVALID (not a valid safetensors file), LOOM_E_INTERNAL. */
loom_error *safetensors_open(const char *path, uint64_t max_bytes, st_file **out);
/* The same from a file already open (taken: closed also on failure), for
 * a file opened through util/user_tree; `label` names it in errors. */
loom_error *safetensors_open_fd(int fd, const char *label, uint64_t max_bytes, st_file **out);

/* The same on memory: `data` is only read during the call (the tensors are
 * copied). `label` names the buffer in messages (NULL: "<buffer>"). */
loom_error *safetensors_open_buffer(const void *data, size_t len, const char *label, st_file **out);

/* Number of tensors. Index order is name order (byte-wise strcmp). */
uint32_t safetensors_count(const st_file *f);
/* Fills *out for tensor i. 0, or -1 when i is out of range. */
int safetensors_tensor(const st_file *f, uint32_t i, st_tensor_info *out);
/* Fills *out for the tensor called `name`. 0, or -1 when there is none. */
int safetensors_find(const st_file *f, const char *name, st_tensor_info *out);

/* A "__metadata__" value, or NULL. Valid until safetensors_close. */
const char *safetensors_metadata(const st_file *f, const char *key);
uint32_t safetensors_metadata_count(const st_file *f);
/* Entry i in key order. 0, or -1 when i is out of range. */
int safetensors_metadata_at(const st_file *f, uint32_t i, const char **key,
                   const char **value);

/* The file's label (path or buffer label) as given to safetensors_open*. */
const char *safetensors_label(const st_file *f);

void safetensors_close(st_file *f);

/* "F32", ... for a loom_dtype, or NULL. */
const char *safetensors_dtype_name(int32_t dtype);
/* Bytes per element of a loom_dtype, or 0. */
uint32_t safetensors_dtype_size(int32_t dtype);

#endif
