/* infer/v2_codec.c - see v2_codec.h: the tensor pack, the JSON answer and
 * the metadata (the request's decoder is v2_decode.c). */
#include "infer/v2_codec.h"
#include "plugin/dtype_names.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/v2_pack.h"
#include "plugin/ffi_call.h"

void v2_buf_free(v2_buf *b)
{
    free(b->data);
    *b = (v2_buf){0};
}

void v2_request_free(v2_request *r)
{
    if (r)
        v2_buf_free(&r->pack);
}

/* Room for `more` bytes past len, the whole within `limit`. */
static int reserve_within(v2_buf *b, size_t more, size_t limit)
{
    if (b->len > limit || more > limit - b->len)
        return -1;
    size_t need = b->len + more;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown)
        return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

int v2_buf_reserve(v2_buf *b, size_t more)
{
    return reserve_within(b, more, V2_PACK_MAX);
}

static v2_pack_entry *entry_at(char *pack, uint32_t i)
{
    return (v2_pack_entry *)(void *)(pack + V2_PACK_HEADER + (size_t)i * sizeof(v2_pack_entry));
}

/* ---- the pack ------------------------------------------------------------- */

/* Header, entries, names: what comes before the data. */
static size_t head_size(const char *const *names, uint32_t n)
{
    size_t at = V2_PACK_HEADER + (size_t)n * sizeof(v2_pack_entry);
    for (uint32_t i = 0; i < n; i++)
        at += strlen(names[i]) + 1;
    return V2_ALIGN(at);
}

static void write_head(char *dst, const char *const *names, const int32_t *dtypes, uint32_t n)
{
    uint32_t header[2] = {n, 0};
    memcpy(dst, header, sizeof header);
    size_t at = V2_PACK_HEADER + (size_t)n * sizeof(v2_pack_entry);
    for (uint32_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        v2_pack_entry *e = entry_at(dst, i);
        memset(e, 0, sizeof *e);
        e->dtype = dtypes[i];
        e->name_off = at;
        e->name_len = len;
        memcpy(dst + at, names[i], len + 1);
        at += len + 1;
    }
    memset(dst + at, 0, V2_ALIGN(at) - at);
}

int v2_pack_begin(v2_buf *b, const model_tensor *t, uint32_t n)
{
    const char *names[MODEL_TENSOR_LIMIT] = {0};
    int32_t dtypes[MODEL_TENSOR_LIMIT] = {0};
    for (uint32_t i = 0; i < n && i < MODEL_TENSOR_LIMIT; i++)
        names[i] = t[i].name, dtypes[i] = t[i].dtype;
    n = n < MODEL_TENSOR_LIMIT ? n : MODEL_TENSOR_LIMIT;
    b->len = 0;
    size_t head = head_size(names, n);
    if (v2_buf_reserve(b, head) != 0)
        return -1;
    write_head(b->data, names, dtypes, n);
    b->len = head;
    return 0;
}

void v2_pack_set_entry(v2_buf *b, int i, const int64_t *shape, uint32_t ndim, size_t data_from)
{
    v2_pack_entry *e = entry_at(b->data, (uint32_t)i);
    e->ndim = ndim;
    memcpy(e->shape, shape, ndim * sizeof *shape);
    e->data_off = V2_ALIGN(data_from);
    e->nbytes = b->len - e->data_off;
}

static const char *view_name(const loom_tensor_view *t)
{
    return t->name ? t->name : "";
}

size_t v2_pack_size(const loom_tensor_view *t, uint32_t n)
{
    size_t at = V2_PACK_HEADER + (size_t)n * sizeof(v2_pack_entry);
    for (uint32_t i = 0; i < n; i++)
        at += strlen(view_name(&t[i])) + 1;
    at = V2_ALIGN(at);
    for (uint32_t i = 0; i < n; i++)
        at += V2_ALIGN(t[i].nbytes);
    return at;
}

void v2_pack_write(char *dst, const loom_tensor_view *t, uint32_t n)
{
    const char *names[MODEL_TENSOR_LIMIT] = {0};
    int32_t dtypes[MODEL_TENSOR_LIMIT] = {0};
    n = n < MODEL_TENSOR_LIMIT ? n : MODEL_TENSOR_LIMIT; /* v2_views_check's limit */
    for (uint32_t i = 0; i < n; i++)
        names[i] = view_name(&t[i]), dtypes[i] = t[i].dtype;
    write_head(dst, names, dtypes, n);
    size_t at = head_size(names, n);
    for (uint32_t i = 0; i < n; i++) {
        v2_pack_entry *e = entry_at(dst, i);
        e->ndim = t[i].ndim;
        memcpy(e->shape, t[i].shape, t[i].ndim * sizeof t[i].shape[0]);
        e->data_off = at;
        e->nbytes = t[i].nbytes;
        if (t[i].nbytes)
            memcpy(dst + at, t[i].data, t[i].nbytes);
        memset(dst + at + t[i].nbytes, 0, V2_ALIGN(t[i].nbytes) - t[i].nbytes);
        at += V2_ALIGN(t[i].nbytes);
    }
}

loom_error *v2_views_check(const loom_tensor_view *t, uint32_t n)
{
    if (n > MODEL_TENSOR_LIMIT)
        return loom_err(LOOM_E_INVALID, "%u outputs, more than %d (the limit)", n,
                        MODEL_TENSOR_LIMIT);
    for (uint32_t i = 0; i < n; i++) {
        size_t size = dtype_size(t[i].dtype);
        uint64_t want = size;
        int ok = size && t[i].ndim <= LOOM_MAX_DIMS && !t[i].on_device;
        for (uint32_t k = 0; ok && k < t[i].ndim; k++) {
            ok = t[i].shape[k] >= 0 && t[i].shape[k] <= (int64_t)V2_PACK_MAX &&
                 (!t[i].shape[k] || want <= V2_PACK_MAX / (uint64_t)t[i].shape[k]);
            want *= ok ? (uint64_t)t[i].shape[k] : 0;
        }
        if (!ok || want != t[i].nbytes || (want && !t[i].data))
            return loom_err(LOOM_E_INVALID, "output %u (\"%s\"): expected a known dtype, at most "
                            "%d dimensions of host memory and nbytes = elements x element size "
                            "(%llu), got %llu", i, view_name(&t[i]), LOOM_MAX_DIMS,
                            (unsigned long long)want, (unsigned long long)t[i].nbytes);
    }
    return NULL;
}

int v2_pack_read(const char *pack, size_t len, loom_tensor_view *views, uint32_t max,
                 uint32_t *n)
{
    uint32_t header[2];
    if (len < V2_PACK_HEADER || ((uintptr_t)pack & 7))
        return -1;
    memcpy(header, pack, sizeof header);
    if (header[0] > max || header[0] > (len - V2_PACK_HEADER) / sizeof(v2_pack_entry))
        return -1;
    for (uint32_t i = 0; i < header[0]; i++) {
        const v2_pack_entry *e = entry_at((char *)pack, i);
        size_t size = dtype_size(e->dtype);
        if (!size || e->ndim > LOOM_MAX_DIMS || e->name_off > len || e->name_len >= len - e->name_off ||
            pack[e->name_off + e->name_len] != '\0' || (e->data_off & 7) || e->data_off > len ||
            e->nbytes > len - e->data_off || e->nbytes % size)
            return -1;
        uint64_t count = 1;
        for (uint32_t k = 0; k < e->ndim; k++) {
            if (e->shape[k] < 0 || (e->shape[k] && count > len / (uint64_t)e->shape[k]))
                return -1;
            count *= (uint64_t)e->shape[k];
        }
        if (count * size != e->nbytes)
            return -1;
        loom_tensor_view *v = &views[i];
        *v = (loom_tensor_view){.struct_size = sizeof *v, .dtype = e->dtype, .ndim = e->ndim,
                                .name = pack + e->name_off, .data = (char *)pack + e->data_off,
                                .nbytes = e->nbytes};
        memcpy(v->shape, e->shape, sizeof v->shape);
    }
    *n = header[0];
    return 0;
}

/* ---- the answer ---------------------------------------------------------- */

static int put(v2_buf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap && reserve_within(b, n, V2_ANSWER_MAX) != 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static int puts_(v2_buf *b, const char *s) { return put(b, s, strlen(s)); }

/* About the longest JSON text of one element of a type ("-2147483648",
 * "-2.2250738585072014e-308", "false"): room reserved at once, checked
 * element by element all the same. */
static size_t json_width(int32_t dtype)
{
    switch (dtype) {
    case LOOM_DTYPE_BOOL: return 5;
    case LOOM_DTYPE_U8: return 3;
    case LOOM_DTYPE_I8: return 4;
    case LOOM_DTYPE_U16: return 5;
    case LOOM_DTYPE_I16: return 6;
    case LOOM_DTYPE_U32: return 10;
    case LOOM_DTYPE_I32: return 11;
    case LOOM_DTYPE_F32: return 18;
    default: return 24; /* 64-bit integers (20) and FP64 */
    }
}

static int put_data(v2_buf *b, const loom_tensor_view *t)
{
    size_t size = dtype_size(t->dtype), count = size ? t->nbytes / size : 0;
    size_t each = json_width(t->dtype) + 1; /* and a comma */
    ffi_sig_type type = ffi_sig_type_of_dtype(t->dtype);
    if (count > V2_ANSWER_MAX / each ||
        reserve_within(b, count * each + FFI_SIG_JSON_MAX + 2, V2_ANSWER_MAX) != 0)
        return -1;
    b->data[b->len++] = '[';
    for (size_t k = 0; k < count; k++) {
        const char *v = (const char *)t->data + k * size;
        /* an element is handed FFI_SIG_JSON_MAX bytes, its comma and the ']' */
        if (b->cap - b->len < FFI_SIG_JSON_MAX + 2 &&
            reserve_within(b, FFI_SIG_JSON_MAX + 2, V2_ANSWER_MAX) != 0)
            return -1;
        if (k)
            b->data[b->len++] = ',';
        if (t->dtype == LOOM_DTYPE_BOOL) {
            const char *word = *v ? "true" : "false";
            memcpy(b->data + b->len, word, strlen(word));
            b->len += strlen(word);
            continue;
        }
        int w = ffi_sig_value_format_json(type, v, b->data + b->len, FFI_SIG_JSON_MAX);
        if (w < 0)
            return -1;
        b->len += (size_t)w;
    }
    b->data[b->len++] = ']';
    return 0;
}

static int put_output(v2_buf *b, const loom_tensor_view *t, const char *name, int first)
{
    char head[MODEL_TENSOR_NAME_MAX * 2 + 64];
    snprintf(head, sizeof head, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[",
             first ? "" : ",", name, dtype_name(t->dtype));
    if (puts_(b, head) != 0)
        return -1;
    for (uint32_t k = 0; k < t->ndim; k++) {
        char dim[32];
        snprintf(dim, sizeof dim, "%s%lld", k ? "," : "", (long long)t->shape[k]);
        if (puts_(b, dim) != 0)
            return -1;
    }
    return puts_(b, "],\"data\":") || put_data(b, t) || puts_(b, "}") ? -1 : 0;
}

/* An output's name for the answer: its own when it has one it may keep
 * (quotes and backslashes would need escaping), else the declared one. */
static const char *output_name(const model_spec *m, const loom_tensor_view *t, uint32_t i,
                               char *buf)
{
    const char *name = t->name && t->name[0] ? t->name : NULL;
    if (!name && (int)i < m->noutputs)
        return m->outputs[i].name;
    if (!name || strpbrk(name, "\"\\") || strlen(name) >= MODEL_TENSOR_NAME_MAX) {
        snprintf(buf, MODEL_TENSOR_NAME_MAX, "output%u", i);
        return buf;
    }
    return name;
}

loom_error *v2_encode_answer(const model_spec *m, const v2_request *req, const char *pack,
                             size_t len, v2_buf *out)
{
    loom_tensor_view t[MODEL_TENSOR_LIMIT];
    uint32_t n = 0;
    out->len = 0;
    if (v2_pack_read(pack, len, t, MODEL_TENSOR_LIMIT, &n) != 0)
        return loom_err(LOOM_E_INTERNAL, "model \"%s\": the kernel's output tensors are "
                        "malformed", m->name);
    if (m->noutputs && n != (uint32_t)m->noutputs)
        return loom_err(LOOM_E_INTERNAL, "model \"%s\": the kernel answered %u output%s, the "
                        "model declares %d", m->name, n, n == 1 ? "" : "s", m->noutputs);
    char head[MODEL_NAME_MAX + V2_ID_MAX + 64];
    snprintf(head, sizeof head, "{\"model_name\":\"%s\"%s%s%s,\"outputs\":[", m->name,
             req && req->has_id ? ",\"id\":\"" : "", req && req->has_id ? req->id : "",
             req && req->has_id ? "\"" : "");
    int failed = puts_(out, head);
    int first = 1;
    for (uint32_t i = 0; !failed && i < n; i++) {
        if (req && req->outputs_wanted && !(i < 32 && (req->outputs_wanted >> i) & 1))
            continue;
        char buf[MODEL_TENSOR_NAME_MAX];
        failed = put_output(out, &t[i], output_name(m, &t[i], i, buf), first);
        first = 0;
    }
    if (failed || puts_(out, "]}") != 0)
        return loom_err(LOOM_E_TOO_LARGE, "model \"%s\": the answer exceeds %zu bytes (the "
                        "limit of one answer's JSON)", m->name, V2_ANSWER_MAX);
    return NULL;
}

/* ---- the metadata -------------------------------------------------------- */

static cJSON *tensor_list(const model_tensor *t, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t[i].name);
        cJSON_AddStringToObject(o, "datatype", dtype_name(t[i].dtype));
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (uint32_t k = 0; k < t[i].ndim; k++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[k]));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

cJSON *v2_metadata(const model_spec *m)
{
    cJSON *o = cJSON_CreateObject();
    /* a registered kernel by its name: what the model.json's runtime says */
    char platform[MODEL_NAME_MAX + 16];
    if (m->kernel_name[0])
        snprintf(platform, sizeof platform, "loom-kernel:%s", m->kernel_name);
    else
        snprintf(platform, sizeof platform, "loom-%s", model_runtime_name(m->runtime));
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddArrayToObject(o, "versions");
    cJSON_AddStringToObject(o, "platform", platform);
    cJSON_AddItemToObject(o, "inputs", tensor_list(m->inputs, m->ninputs));
    cJSON_AddItemToObject(o, "outputs", tensor_list(m->outputs, m->noutputs));
    return o;
}
