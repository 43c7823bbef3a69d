/*
 * train/safetensors_write.c - the safetensors writer (see safetensors.h):
 * tensors referenced, laid out deterministically, committed atomically.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "train/safetensors_internal.h"
#include "util/fs.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- writer ---- */

typedef struct st_wtensor {
    char *name;
    const st_dtype_desc *dtype;
    uint32_t ndim;
    int64_t shape[LOOM_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
    uint64_t offset; /* in the data section; set by safetensors_writer_commit */
} st_wtensor;

struct st_writer {
    st_wtensor *tensors;
    uint32_t count, cap;
    st_wmeta *meta;
    uint32_t meta_count, meta_cap;
};

st_writer *safetensors_writer_new(void)
{
    return calloc(1, sizeof(st_writer));
}

void safetensors_writer_free(st_writer *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; i < w->count; i++)
        free(w->tensors[i].name);
    for (uint32_t i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->tensors);
    free(w->meta);
    free(w);
}

loom_error *safetensors_writer_add(st_writer *w, const char *name, int32_t dtype, const int64_t *shape,
                          uint32_t ndim, const void *data, uint64_t nbytes)
{
    if (!w || !name || !*name)
        return loom_err(LOOM_E_INVALID, "safetensors_writer_add: a tensor needs a non-empty name");
    if (!safetensors_utf8_valid_str(name))
        return loom_err(LOOM_E_INVALID, "tensor '%s': name is not valid UTF-8", name);
    if (strcmp(name, "__metadata__") == 0)
        return loom_err(LOOM_E_INVALID, "tensor '__metadata__': name is reserved for the metadata");
    const st_dtype_desc *dt = safetensors_dtype_by_loom(dtype);
    if (!dt)
        return loom_err(LOOM_E_INVALID, "tensor '%s': dtype %" PRId32 " is not a loom_dtype (F32, F64, I32, I64 or U8)",
                        name, dtype);
    if (ndim > LOOM_MAX_DIMS || (ndim > 0 && !shape))
        return loom_err(LOOM_E_INVALID, "tensor '%s': shape has %" PRIu32 " dimensions, at most %d supported",
                        name, ndim, LOOM_MAX_DIMS);
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return loom_err(LOOM_E_INVALID,
                            "tensor '%s': dimension %" PRIu32 " is negative (%" PRId64 ")", name, i,
                            shape[i]);
    }
    char shape_text[256];
    uint64_t need;
    if (safetensors_byte_count(dt->size, shape, ndim, &need) != 0)
        return loom_err(LOOM_E_INVALID, "tensor '%s': %s %s overflows a 64-bit byte count", name,
                        dt->name, safetensors_format_shape(shape, ndim, shape_text, sizeof shape_text));
    if (need != nbytes)
        return loom_err(LOOM_E_INVALID, "tensor '%s': %" PRIu64 " bytes given, %s %s needs %" PRIu64,
                        name, nbytes, dt->name, safetensors_format_shape(shape, ndim, shape_text, sizeof shape_text),
                        need);
    if (nbytes > 0 && !data)
        return loom_err(LOOM_E_INVALID, "tensor '%s': data is NULL for %" PRIu64 " bytes", name, nbytes);
    for (uint32_t i = 0; i < w->count; i++) {
        if (strcmp(w->tensors[i].name, name) == 0)
            return loom_err(LOOM_E_INVALID, "tensor '%s': added twice", name);
    }
    if (w->count == w->cap) {
        uint32_t cap = w->cap ? w->cap * 2 : 16;
        st_wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t)
            return loom_err(LOOM_E_INTERNAL, "tensor '%s': out of memory", name);
        w->tensors = t;
        w->cap = cap;
    }
    st_wtensor *t = &w->tensors[w->count];
    memset(t, 0, sizeof *t);
    t->name = safetensors_dup_str(name);
    if (!t->name)
        return loom_err(LOOM_E_INTERNAL, "tensor '%s': out of memory", name);
    t->dtype = dt;
    t->ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = nbytes;
    w->count++;
    return NULL;
}

loom_error *safetensors_writer_add_view(st_writer *w, const loom_tensor_view *view)
{
    if (!view)
        return loom_err(LOOM_E_INVALID, "safetensors_writer_add_view: view is NULL");
    if (view->on_device)
        return loom_err(LOOM_E_INVALID, "tensor '%s': data is in device memory; copy it to the host first",
                        view->name ? view->name : "(unnamed)");
    return safetensors_writer_add(w, view->name, view->dtype, view->shape, view->ndim, view->data,
                         view->nbytes);
}

int safetensors_writer_set_metadata(st_writer *w, const char *key, const char *value)
{
    if (!w || !key || !value || !safetensors_utf8_valid_str(key) || !safetensors_utf8_valid_str(value))
        return -1;
    char *v = safetensors_dup_str(value);
    if (!v)
        return -1;
    for (uint32_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = v;
            return 0;
        }
    }
    char *k = safetensors_dup_str(key);
    if (!k) {
        free(v);
        return -1;
    }
    if (w->meta_count == w->meta_cap) {
        uint32_t cap = w->meta_cap ? w->meta_cap * 2 : 8;
        st_wmeta *m = realloc(w->meta, cap * sizeof *m);
        if (!m) {
            free(k);
            free(v);
            return -1;
        }
        w->meta = m;
        w->meta_cap = cap;
    }
    w->meta[w->meta_count].key = k;
    w->meta[w->meta_count].value = v;
    w->meta_count++;
    return 0;
}

static int cmp_wtensor_ptr(const void *a, const void *b)
{
    const st_wtensor *x = *(const st_wtensor *const *)a;
    const st_wtensor *y = *(const st_wtensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Data layout order: larger elements first, then name. Every size is a
 * power of two, so each tensor then starts at a multiple of its element
 * size (the safetensors library lays files out the same way). */
static int cmp_wtensor_layout(const void *a, const void *b)
{
    const st_wtensor *x = *(const st_wtensor *const *)a;
    const st_wtensor *y = *(const st_wtensor *const *)b;
    if (x->dtype->size != y->dtype->size)
        return x->dtype->size > y->dtype->size ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_wmeta_ptr(const void *a, const void *b)
{
    const st_wmeta *x = *(const st_wmeta *const *)a;
    const st_wmeta *y = *(const st_wmeta *const *)b;
    return strcmp(x->key, y->key);
}

/* A JSON integer printed exactly: cJSON would print a double, which turns
 * into exponent notation past 1e15 and that strict readers refuse. */
static cJSON *json_uint(uint64_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, v);
    return cJSON_CreateRaw(text);
}

/* The header JSON, entries in `order` (name order; offsets already set), or
 * NULL when out of memory. */
static char *build_header(const st_writer *w, st_wtensor *const *order)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    int ok = 1;
    if (w->meta_count > 0) {
        st_wmeta **mo = malloc(w->meta_count * sizeof *mo);
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        ok = mo && meta;
        if (ok) {
            for (uint32_t i = 0; i < w->meta_count; i++)
                mo[i] = &w->meta[i];
            qsort(mo, w->meta_count, sizeof *mo, cmp_wmeta_ptr);
            for (uint32_t i = 0; i < w->meta_count && ok; i++)
                ok = cJSON_AddStringToObject(meta, mo[i]->key, mo[i]->value) != NULL;
        }
        free(mo);
    }
    for (uint32_t i = 0; i < w->count && ok; i++) {
        const st_wtensor *t = order[i];
        cJSON *entry = cJSON_AddObjectToObject(root, t->name);
        cJSON *shape = entry ? cJSON_CreateArray() : NULL;
        cJSON *offsets = shape ? cJSON_CreateArray() : NULL;
        ok = entry && shape && offsets &&
             cJSON_AddStringToObject(entry, "dtype", t->dtype->name) != NULL;
        if (shape && !cJSON_AddItemToObject(entry, "shape", shape)) {
            cJSON_Delete(shape);
            ok = 0;
        }
        if (offsets && !cJSON_AddItemToObject(entry, "data_offsets", offsets)) {
            cJSON_Delete(offsets);
            ok = 0;
        }
        for (uint32_t d = 0; d < t->ndim && ok; d++)
            ok = cJSON_AddItemToArray(shape, json_uint((uint64_t)t->shape[d]));
        if (ok)
            ok = cJSON_AddItemToArray(offsets, json_uint(t->offset)) &&
                 cJSON_AddItemToArray(offsets, json_uint(t->offset + t->nbytes));
    }
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

/* Creates a fresh temporary file next to `path` (O_EXCL, mode 0666 less the
 * umask, like any new file). Its name goes into tmp. fd or -1 (errno). */
static int create_temp(const char *path, char *tmp, size_t tmplen)
{
    static atomic_uint counter;
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned n = atomic_fetch_add(&counter, 1);
        if ((size_t)snprintf(tmp, tmplen, "%s.tmp.%ld.%u", path, (long)getpid(), n) >= tmplen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* fsync the directory holding `path`, so the rename itself is durable. */
static int sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash)
        dir = safetensors_dup_str(".");
    else if (slash == path)
        dir = safetensors_dup_str("/");
    else {
        size_t n = (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = 0;
        }
    }
    if (!dir)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

loom_error *safetensors_writer_commit(st_writer *w, const char *path)
{
    if (!w || !path || !*path)
        return loom_err(LOOM_E_INVALID, "safetensors_writer_commit: no path given");
    /* order: the header's entries, by name; order + count: the data
     * section's layout, by element size then name. Both deterministic. */
    st_wtensor **order = malloc((w->count ? 2 * (size_t)w->count : 1) * sizeof *order);
    if (!order)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    st_wtensor **layout = order + w->count;
    for (uint32_t i = 0; i < w->count; i++)
        order[i] = layout[i] = &w->tensors[i];
    qsort(order, w->count, sizeof *order, cmp_wtensor_ptr);
    qsort(layout, w->count, sizeof *layout, cmp_wtensor_layout);
    uint64_t offset = 0;
    for (uint32_t i = 0; i < w->count; i++) {
        layout[i]->offset = offset;
        offset += layout[i]->nbytes;
        /* Offsets are JSON numbers, exact only up to 2^53 for readers that
         * parse them as doubles (this one among them). */
        if (offset > (uint64_t)ST_MAX_JSON_INT) {
            free(order);
            return loom_err(LOOM_E_TOO_LARGE, "%s: tensor data totals over 2^53 bytes", path);
        }
    }

    char *json = build_header(w, order);
    if (!json) {
        free(order);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory building the header", path);
    }
    size_t json_len = strlen(json);
    /* Pad with spaces so 8 + header length is a multiple of 8: the data
     * section, and every tensor readers map from it, starts aligned. */
    size_t header_len = (json_len + 7) & ~(size_t)7;
    if (header_len > ST_MAX_HEADER_BYTES) {
        free(json);
        free(order);
        return loom_err(LOOM_E_TOO_LARGE,
                        "%s: header would be %zu bytes, over the %" PRIu64 "-byte limit readers accept",
                        path, header_len, ST_MAX_HEADER_BYTES);
    }
    uint8_t *head = malloc(8 + header_len);
    if (!head) {
        free(json);
        free(order);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    }
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
    memcpy(head + 8, json, json_len);
    memset(head + 8 + json_len, ' ', header_len - json_len);
    free(json);

    char tmp[4096];
    int fd = create_temp(path, tmp, sizeof tmp);
    if (fd < 0) {
        loom_error *e = loom_err(LOOM_E_INTERNAL, "%s: cannot create a temporary file next to it: %s",
                                 path, strerror(errno));
        free(head);
        free(order);
        return e;
    }
    const char *step = "write";
    int rc = fd_write_all(fd, head, 8 + header_len);
    for (uint32_t i = 0; i < w->count && rc == 0; i++)
        if (layout[i]->nbytes > 0)
            rc = fd_write_all(fd, layout[i]->data, layout[i]->nbytes);
    if (rc == 0) {
        step = "fsync";
        rc = fsync(fd);
    }
    int saved = errno;
    if (close(fd) != 0 && rc == 0) {
        step = "close";
        rc = -1;
        saved = errno;
    }
    if (rc == 0) {
        step = "rename";
        rc = rename(tmp, path);
        saved = errno;
    }
    free(head);
    free(order);
    if (rc != 0) {
        unlink(tmp);
        return loom_err(LOOM_E_INTERNAL, "%s: %s of temporary file '%s' failed: %s", path, step, tmp,
                        strerror(saved));
    }
    if (sync_parent_dir(path) != 0) {
        /* The file is in place and whole; only its durability across a power
         * cut is in doubt, which the caller should still hear about. */
        return loom_err(LOOM_E_INTERNAL, "%s: written, but syncing its directory failed: %s", path,
                        strerror(errno));
    }
    return NULL;
}

