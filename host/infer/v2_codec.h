/*
 * infer/v2_codec.h - the Open Inference Protocol v2 (KServe v2, Triton) for
 * a model that declares its tensors: the JSON request decoded and checked
 * against the declaration into a tensor pack (the binary form a kernel
 * reads in place), and a kernel's output pack encoded as the JSON answer.
 * Pure: no I/O, no threads. sdk/doc/inference-protocol.md is the user's
 * description.
 *
 * Numbers are read straight from the text into the tensor's type (no
 * JSON tree for the data), so a large request costs one pass.
 *
 * The pack (host and kernel process share one layout, native byte order):
 *   u32 count, u32 zero,
 *   count x entry {i32 dtype, u32 ndim, u64 name_off, u64 name_len,
 *                  u64 data_off, u64 nbytes, i64 shape[LOOM_MAX_DIMS]},
 *   then names (NUL-terminated) and data, each data block 8-byte aligned;
 *   offsets from the pack's start.
 */
#ifndef LOOM_INFER_V2_CODEC_H
#define LOOM_INFER_V2_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "infer/model_spec.h"
#include "loom/abi.h"
#include "util/error.h"

/* A request "id", at most (bytes of its JSON text). */
#define V2_ID_MAX 256
/* One request's tensors, at most (the pack must fit the kernel's arena
 * region, 64 MiB). */
#define V2_PACK_MAX ((size_t)64 << 20)
/* One answer's JSON text, at most. */
#define V2_ANSWER_MAX ((size_t)256 << 20)
/* Nesting of a "data" array, at most. */
#define V2_DEPTH_MAX 32

/* A growable buffer. */
typedef struct v2_buf {
    char *data;
    size_t len, cap;
} v2_buf;

void v2_buf_free(v2_buf *b);

/* A decoded request. */
typedef struct v2_request {
    char id[V2_ID_MAX + 1]; /* the "id" string's JSON text, unquoted; "" when none */
    int has_id;
    uint32_t outputs_wanted; /* bit i: declared output i asked for; 0: every output */
    v2_buf pack;            /* the inputs, in declared order */
} v2_request;

void v2_request_free(v2_request *r);

/* Decodes `body` ({"id"?, "inputs": [{"name", "shape", "datatype", "data"
 * (flat or nested)}], "outputs"?: [{"name"}], "parameters"?}, or the
 * shorthand {"inputs": [numbers...]} for a one-input model) against the
 * model's declared inputs into out (cleared first; reused buffers keep
 * their memory). LOOM_E_INVALID names the input and what was expected;
 * LOOM_E_TOO_LARGE names the limit passed. */
loom_error *v2_decode(const model_spec *m, const char *body, size_t len, v2_request *out);

/* Checks a kernel's output views before they are packed: known dtypes,
 * at most LOOM_MAX_DIMS dimensions, host memory, nbytes = elements x
 * element size, at most MODEL_TENSOR_LIMIT of them. */
loom_error *v2_views_check(const loom_tensor_view *t, uint32_t n);
/* Bytes a pack of these tensors takes. */
size_t v2_pack_size(const loom_tensor_view *t, uint32_t n);
/* Writes the pack of n tensors into dst (v2_pack_size bytes, 8-aligned). */
void v2_pack_write(char *dst, const loom_tensor_view *t, uint32_t n);
/* Reads a pack of at most `max` tensors into views pointing into it
 * (names and data in place); -1 when it is malformed or holds more. */
int v2_pack_read(const char *pack, size_t len, loom_tensor_view *views, uint32_t max,
                 uint32_t *n);

/* The JSON answer {"model_name", "id"?, "outputs": [...]} for a kernel's
 * output pack, into out. The outputs' count must match the declared
 * outputs' when the model declares them (LOOM_E_INTERNAL naming the model
 * and both counts); an unnamed output takes its declared name; only the
 * outputs the request asked for are answered. */
loom_error *v2_encode_answer(const model_spec *m, const v2_request *req, const char *pack,
                             size_t len, v2_buf *out);

/* The model's metadata, {"name", "versions": [], "platform": "loom-RUNTIME",
 * "inputs": [...], "outputs": [...]}: the caller's. */
cJSON *v2_metadata(const model_spec *m);

#endif
