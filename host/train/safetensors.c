/*
 * train/safetensors.c - the safetensors writer and validating reader (see
 * safetensors.h). Depends on cJSON and POSIX only, so the fuzz target can
 * build this one file on its own.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "train/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "safetensors data is little-endian; this file assumes a little-endian host"
#endif

/* Tensor data is handed out 8-byte aligned; copies are made 64-byte aligned
 * so vector loads on them are happy too. */
#define ST_DATA_ALIGN 8
#define ST_COPY_ALIGN 64
/* The largest integer a JSON number (a double in cJSON) holds exactly. */
#define ST_MAX_JSON_INT 9007199254740992.0

/* ---- dtypes ---- */

typedef struct st_dtype_desc {
    const char *name;
    int32_t dtype; /* loom_dtype or ST_DTYPE_OTHER */
    uint32_t size;
} st_dtype_desc;

/* Every byte-sized dtype the format defines; loom's own five come first so
 * st_dtype_name finds them. Sub-byte ones (F4, F6_E2M3, F6_E3M2) are left
 * out on purpose: their sizes are not whole bytes per element. */
static const st_dtype_desc st_dtypes[] = {
    {"F32", LOOM_DTYPE_F32, 4},      {"F64", LOOM_DTYPE_F64, 8},
    {"I32", LOOM_DTYPE_I32, 4},      {"I64", LOOM_DTYPE_I64, 8},
    {"U8", LOOM_DTYPE_U8, 1},        {"BOOL", ST_DTYPE_OTHER, 1},
    {"I8", ST_DTYPE_OTHER, 1},       {"F8_E5M2", ST_DTYPE_OTHER, 1},
    {"F8_E4M3", ST_DTYPE_OTHER, 1},  {"F8_E8M0", ST_DTYPE_OTHER, 1},
    {"I16", ST_DTYPE_OTHER, 2},      {"U16", ST_DTYPE_OTHER, 2},
    {"F16", ST_DTYPE_OTHER, 2},      {"BF16", ST_DTYPE_OTHER, 2},
    {"U32", ST_DTYPE_OTHER, 4},      {"U64", ST_DTYPE_OTHER, 8},
    {"C64", ST_DTYPE_OTHER, 8},
};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

static const st_dtype_desc *dtype_by_loom(int32_t dtype)
{
    if (dtype == ST_DTYPE_OTHER)
        return NULL;
    for (size_t i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dtype == dtype)
            return &st_dtypes[i];
    return NULL;
}

static const st_dtype_desc *dtype_by_name(const char *name)
{
    for (size_t i = 0; i < ST_NDTYPES; i++)
        if (strcmp(st_dtypes[i].name, name) == 0)
            return &st_dtypes[i];
    return NULL;
}

const char *st_dtype_name(int32_t dtype)
{
    const st_dtype_desc *d = dtype_by_loom(dtype);
    return d ? d->name : NULL;
}

uint32_t st_dtype_size(int32_t dtype)
{
    const st_dtype_desc *d = dtype_by_loom(dtype);
    return d ? d->size : 0;
}

/* ---- small helpers ---- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* elem_size * product(shape) into *out; -1 when it does not fit 64 bits.
 * A zero dimension makes the count 0 however large the others are. */
static int byte_count(uint32_t elem_size, const int64_t *shape, uint32_t ndim,
                      uint64_t *out)
{
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *out = 0;
            return 0;
        }
    }
    uint64_t n = elem_size;
    for (uint32_t i = 0; i < ndim; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (d != 0 && n > UINT64_MAX / d)
            return -1;
        n *= d;
    }
    *out = n;
    return 0;
}

/* "[20, 20]" into buf (truncated if needed). */
static const char *format_shape(const int64_t *shape, uint32_t ndim, char *buf,
                                size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (uint32_t i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64,
                                 i ? ", " : "", shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
    return buf;
}

/* Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and
 * code points past U+10FFFF included), or len when all is well. */
static size_t utf8_invalid_at(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the 2nd byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return i;
        }
        if (len - i <= need)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t k = 2; k <= need; k++)
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
        i += need + 1;
    }
    return len;
}

static int utf8_valid_str(const char *s)
{
    size_t n = strlen(s);
    return utf8_invalid_at((const uint8_t *)s, n) == n;
}

/* ---- writer ---- */

typedef struct st_wtensor {
    char *name;
    const st_dtype_desc *dtype;
    uint32_t ndim;
    int64_t shape[LOOM_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
    uint64_t offset; /* in the data section; set by st_writer_commit */
} st_wtensor;

typedef struct st_wmeta {
    char *key;
    char *value;
} st_wmeta;

struct st_writer {
    st_wtensor *tensors;
    uint32_t count, cap;
    st_wmeta *meta;
    uint32_t meta_count, meta_cap;
};

st_writer *st_writer_new(void)
{
    return calloc(1, sizeof(st_writer));
}

void st_writer_free(st_writer *w)
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

int st_writer_add(st_writer *w, const char *name, int32_t dtype,
                  const int64_t *shape, uint32_t ndim, const void *data,
                  uint64_t nbytes, char *err, size_t errlen)
{
    if (!w || !name || !*name) {
        set_err(err, errlen, "st_writer_add: a tensor needs a non-empty name");
        return -1;
    }
    if (!utf8_valid_str(name)) {
        set_err(err, errlen, "tensor '%s': name is not valid UTF-8", name);
        return -1;
    }
    if (strcmp(name, "__metadata__") == 0) {
        set_err(err, errlen, "tensor '__metadata__': name is reserved for the metadata");
        return -1;
    }
    const st_dtype_desc *dt = dtype_by_loom(dtype);
    if (!dt) {
        set_err(err, errlen, "tensor '%s': dtype %" PRId32 " is not a loom_dtype (F32, F64, I32, I64 or U8)",
                name, dtype);
        return -1;
    }
    if (ndim > LOOM_MAX_DIMS || (ndim > 0 && !shape)) {
        set_err(err, errlen, "tensor '%s': shape has %" PRIu32 " dimensions, at most %d supported",
                name, ndim, LOOM_MAX_DIMS);
        return -1;
    }
    for (uint32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            set_err(err, errlen, "tensor '%s': dimension %" PRIu32 " is negative (%" PRId64 ")",
                    name, i, shape[i]);
            return -1;
        }
    }
    char shape_text[256];
    uint64_t need;
    if (byte_count(dt->size, shape, ndim, &need) != 0) {
        set_err(err, errlen, "tensor '%s': %s %s overflows a 64-bit byte count", name,
                dt->name, format_shape(shape, ndim, shape_text, sizeof shape_text));
        return -1;
    }
    if (need != nbytes) {
        set_err(err, errlen, "tensor '%s': %" PRIu64 " bytes given, %s %s needs %" PRIu64,
                name, nbytes, dt->name, format_shape(shape, ndim, shape_text, sizeof shape_text),
                need);
        return -1;
    }
    if (nbytes > 0 && !data) {
        set_err(err, errlen, "tensor '%s': data is NULL for %" PRIu64 " bytes", name, nbytes);
        return -1;
    }
    for (uint32_t i = 0; i < w->count; i++) {
        if (strcmp(w->tensors[i].name, name) == 0) {
            set_err(err, errlen, "tensor '%s': added twice", name);
            return -1;
        }
    }
    if (w->count == w->cap) {
        uint32_t cap = w->cap ? w->cap * 2 : 16;
        st_wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t) {
            set_err(err, errlen, "tensor '%s': out of memory", name);
            return -1;
        }
        w->tensors = t;
        w->cap = cap;
    }
    st_wtensor *t = &w->tensors[w->count];
    memset(t, 0, sizeof *t);
    t->name = dup_str(name);
    if (!t->name) {
        set_err(err, errlen, "tensor '%s': out of memory", name);
        return -1;
    }
    t->dtype = dt;
    t->ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = nbytes;
    w->count++;
    return 0;
}

int st_writer_add_view(st_writer *w, const loom_tensor_view *view, char *err,
                       size_t errlen)
{
    if (!view) {
        set_err(err, errlen, "st_writer_add_view: view is NULL");
        return -1;
    }
    if (view->on_device) {
        set_err(err, errlen, "tensor '%s': data is in device memory; copy it to the host first",
                view->name ? view->name : "(unnamed)");
        return -1;
    }
    return st_writer_add(w, view->name, view->dtype, view->shape, view->ndim,
                         view->data, view->nbytes, err, errlen);
}

int st_writer_set_metadata(st_writer *w, const char *key, const char *value)
{
    if (!w || !key || !value || !utf8_valid_str(key) || !utf8_valid_str(value))
        return -1;
    char *v = dup_str(value);
    if (!v)
        return -1;
    for (uint32_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = v;
            return 0;
        }
    }
    char *k = dup_str(key);
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

static int write_all(int fd, const void *data, uint64_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        /* Large single writes are split: some kernels cap one write at 2 GiB. */
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)len;
        ssize_t n = write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (uint64_t)n;
    }
    return 0;
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
        dir = dup_str(".");
    else if (slash == path)
        dir = dup_str("/");
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

int st_writer_commit(st_writer *w, const char *path, char *err, size_t errlen)
{
    if (!w || !path || !*path) {
        set_err(err, errlen, "st_writer_commit: no path given");
        return -1;
    }
    /* order: the header's entries, by name; order + count: the data
     * section's layout, by element size then name. Both deterministic. */
    st_wtensor **order = malloc((w->count ? 2 * (size_t)w->count : 1) * sizeof *order);
    if (!order) {
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
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
            set_err(err, errlen, "%s: tensor data totals over 2^53 bytes", path);
            free(order);
            return -1;
        }
    }

    char *json = build_header(w, order);
    if (!json) {
        free(order);
        set_err(err, errlen, "%s: out of memory building the header", path);
        return -1;
    }
    size_t json_len = strlen(json);
    /* Pad with spaces so 8 + header length is a multiple of 8: the data
     * section, and every tensor readers map from it, starts aligned. */
    size_t header_len = (json_len + 7) & ~(size_t)7;
    if (header_len > ST_MAX_HEADER_BYTES) {
        set_err(err, errlen, "%s: header would be %zu bytes, over the %" PRIu64 "-byte limit readers accept",
                path, header_len, ST_MAX_HEADER_BYTES);
        free(json);
        free(order);
        return -1;
    }
    uint8_t *head = malloc(8 + header_len);
    if (!head) {
        set_err(err, errlen, "%s: out of memory", path);
        free(json);
        free(order);
        return -1;
    }
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
    memcpy(head + 8, json, json_len);
    memset(head + 8 + json_len, ' ', header_len - json_len);
    free(json);

    char tmp[4096];
    int fd = create_temp(path, tmp, sizeof tmp);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot create a temporary file next to it: %s", path,
                strerror(errno));
        free(head);
        free(order);
        return -1;
    }
    const char *step = "write";
    int rc = write_all(fd, head, 8 + header_len);
    for (uint32_t i = 0; i < w->count && rc == 0; i++)
        if (layout[i]->nbytes > 0)
            rc = write_all(fd, layout[i]->data, layout[i]->nbytes);
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
        set_err(err, errlen, "%s: %s of temporary file '%s' failed: %s", path, step, tmp,
                strerror(saved));
        return -1;
    }
    if (sync_parent_dir(path) != 0) {
        /* The file is in place and whole; only its durability across a power
         * cut is in doubt, which the caller should still hear about. */
        set_err(err, errlen, "%s: written, but syncing its directory failed: %s", path,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- reader ---- */

typedef struct st_rtensor {
    char *name;
    const st_dtype_desc *dtype;
    uint32_t ndim;
    int64_t shape[LOOM_MAX_DIMS];
    uint64_t begin, end; /* relative to the data section */
} st_rtensor;

struct st_file {
    char *label;
    st_rtensor *tensors; /* sorted by name */
    uint32_t count;
    st_wmeta *meta;      /* sorted by key */
    uint32_t meta_count;
    void *map;           /* the mmapped file, when data points into it */
    size_t map_len;
    void *copy;          /* aligned copy of the data section, otherwise */
    const uint8_t *data; /* the data section */
    uint64_t data_len;
};

/* Where data points when the data section is empty, so that data + 0 is
 * never arithmetic on NULL. */
static const uint64_t st_empty_data[1];

void st_close(st_file *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->count; i++)
        free(f->tensors[i].name);
    for (uint32_t i = 0; i < f->meta_count; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->tensors);
    free(f->meta);
    if (f->map)
        munmap(f->map, f->map_len);
    free(f->copy);
    free(f->label);
    free(f);
}

static const char *json_type_name(const cJSON *item)
{
    if (cJSON_IsObject(item))
        return "an object";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsNumber(item))
        return "a number";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNull(item))
        return "null";
    return "something else";
}

/* A JSON number that is a whole number in [0, 2^53]; -1 otherwise. On a
 * negative whole number *negative is set (for a better message). */
static int json_uint_value(const cJSON *item, uint64_t *out, int *negative)
{
    *negative = 0;
    if (!cJSON_IsNumber(item))
        return -1;
    double d = item->valuedouble;
    if (!isfinite(d) || floor(d) != d)
        return -1;
    if (d < 0) {
        *negative = 1;
        return -1;
    }
    if (d > ST_MAX_JSON_INT)
        return -1;
    *out = (uint64_t)d;
    return 0;
}

/* Parses one tensor entry into *t (name already set). */
static int parse_tensor(const char *label, const cJSON *entry, st_rtensor *t,
                        uint64_t data_len, char *err, size_t errlen)
{
    const char *name = t->name;
    if (!cJSON_IsObject(entry)) {
        set_err(err, errlen, "%s: tensor '%s': entry must be an object, got %s", label, name,
                json_type_name(entry));
        return -1;
    }
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!dtype || !shape || !offsets) {
        set_err(err, errlen, "%s: tensor '%s': missing \"%s\"", label, name,
                !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
        return -1;
    }
    if (!cJSON_IsString(dtype)) {
        set_err(err, errlen, "%s: tensor '%s': \"dtype\" must be a string, got %s", label,
                name, json_type_name(dtype));
        return -1;
    }
    t->dtype = dtype_by_name(dtype->valuestring);
    if (!t->dtype) {
        set_err(err, errlen, "%s: tensor '%s': unsupported dtype '%s' (expected F32, F64, I32, I64, U8 or another byte-sized safetensors dtype)",
                label, name, dtype->valuestring);
        return -1;
    }

    if (!cJSON_IsArray(shape)) {
        set_err(err, errlen, "%s: tensor '%s': \"shape\" must be an array of dimensions, got %s",
                label, name, json_type_name(shape));
        return -1;
    }
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > LOOM_MAX_DIMS) {
        set_err(err, errlen, "%s: tensor '%s': shape has %d dimensions, at most %d supported",
                label, name, ndim, LOOM_MAX_DIMS);
        return -1;
    }
    t->ndim = (uint32_t)ndim;
    int i = 0;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape) {
        uint64_t v;
        int negative;
        if (json_uint_value(dim, &v, &negative) != 0) {
            if (negative)
                set_err(err, errlen, "%s: tensor '%s': dimension %d is negative (%.17g)",
                        label, name, i, dim->valuedouble);
            else
                set_err(err, errlen, "%s: tensor '%s': dimension %d must be a whole number between 0 and 2^53",
                        label, name, i);
            return -1;
        }
        t->shape[i++] = (int64_t)v;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2) {
        set_err(err, errlen, "%s: tensor '%s': \"data_offsets\" must be [begin, end]", label, name);
        return -1;
    }
    uint64_t range[2];
    i = 0;
    const cJSON *off;
    cJSON_ArrayForEach(off, offsets) {
        int negative;
        if (json_uint_value(off, &range[i], &negative) != 0) {
            set_err(err, errlen, "%s: tensor '%s': data_offsets[%d] must be a whole number between 0 and 2^53",
                    label, name, i);
            return -1;
        }
        i++;
    }
    t->begin = range[0];
    t->end = range[1];
    if (t->begin > t->end) {
        set_err(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begin after end",
                label, name, t->begin, t->end);
        return -1;
    }
    if (t->end > data_len) {
        set_err(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] go past the data section (%" PRIu64 " bytes)",
                label, name, t->begin, t->end, data_len);
        return -1;
    }
    char shape_text[256];
    uint64_t need;
    if (byte_count(t->dtype->size, t->shape, t->ndim, &need) != 0) {
        set_err(err, errlen, "%s: tensor '%s': %s %s overflows a 64-bit byte count", label, name,
                t->dtype->name, format_shape(t->shape, t->ndim, shape_text, sizeof shape_text));
        return -1;
    }
    if (need != t->end - t->begin) {
        set_err(err, errlen, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " bytes, %s %s needs %" PRIu64,
                label, name, t->begin, t->end, t->end - t->begin, t->dtype->name,
                format_shape(t->shape, t->ndim, shape_text, sizeof shape_text), need);
        return -1;
    }
    return 0;
}

static int parse_metadata(const char *label, const cJSON *obj, st_file *f, char *err,
                          size_t errlen)
{
    if (!cJSON_IsObject(obj)) {
        set_err(err, errlen, "%s: \"__metadata__\" must be an object of strings, got %s", label,
                json_type_name(obj));
        return -1;
    }
    int n = cJSON_GetArraySize(obj);
    f->meta = calloc(n > 0 ? (size_t)n : 1, sizeof *f->meta);
    if (!f->meta) {
        set_err(err, errlen, "%s: out of memory", label);
        return -1;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        if (!cJSON_IsString(item)) {
            set_err(err, errlen, "%s: \"__metadata__\" value for '%s' must be a string, got %s",
                    label, item->string, json_type_name(item));
            return -1;
        }
        st_wmeta *m = &f->meta[f->meta_count];
        m->key = dup_str(item->string);
        m->value = dup_str(item->valuestring);
        f->meta_count++; /* counted before the check so st_close frees both */
        if (!m->key || !m->value) {
            set_err(err, errlen, "%s: out of memory", label);
            return -1;
        }
    }
    return 0;
}

static int cmp_rtensor_name(const void *a, const void *b)
{
    return strcmp(((const st_rtensor *)a)->name, ((const st_rtensor *)b)->name);
}

static int cmp_meta_key(const void *a, const void *b)
{
    return strcmp(((const st_wmeta *)a)->key, ((const st_wmeta *)b)->key);
}

static int cmp_rtensor_offsets(const void *a, const void *b)
{
    const st_rtensor *x = *(const st_rtensor *const *)a;
    const st_rtensor *y = *(const st_rtensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The data section must be tiled exactly: tensors in offset order, each
 * starting where the previous one ended, the last ending at data_len. That
 * one rule refuses overlaps, gaps and trailing bytes alike. */
static int check_coverage(const char *label, const st_file *f, uint64_t data_len, char *err,
                          size_t errlen)
{
    const st_rtensor **by_offset = malloc((f->count ? f->count : 1) * sizeof *by_offset);
    if (!by_offset) {
        set_err(err, errlen, "%s: out of memory", label);
        return -1;
    }
    for (uint32_t i = 0; i < f->count; i++)
        by_offset[i] = &f->tensors[i];
    qsort(by_offset, f->count, sizeof *by_offset, cmp_rtensor_offsets);
    uint64_t pos = 0;
    const st_rtensor *prev = NULL;
    int rc = 0;
    for (uint32_t i = 0; i < f->count && rc == 0; i++) {
        const st_rtensor *t = by_offset[i];
        if (t->begin < pos) {
            set_err(err, errlen, "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64 ", %" PRIu64 "] overlap",
                    label, prev->name, prev->begin, prev->end, t->name, t->begin, t->end);
            rc = -1;
        } else if (t->begin > pos) {
            set_err(err, errlen, "%s: data section bytes [%" PRIu64 ", %" PRIu64 ") belong to no tensor",
                    label, pos, t->begin);
            rc = -1;
        }
        pos = t->end;
        prev = t;
    }
    if (rc == 0 && pos != data_len) {
        set_err(err, errlen, "%s: data section bytes [%" PRIu64 ", %" PRIu64 ") belong to no tensor",
                label, pos, data_len);
        rc = -1;
    }
    free(by_offset);
    return rc;
}

/* Validates the whole file in buf and fills f's tensors and metadata; the
 * data section's offset goes to *data_off. 0 or -1 (message in err). */
static int parse_file(st_file *f, const uint8_t *buf, size_t len, uint64_t *data_off,
                      char *err, size_t errlen)
{
    const char *label = f->label;
    if (len < 8) {
        set_err(err, errlen, "%s: file too short: %zu bytes, a safetensors file starts with an 8-byte header length",
                label, len);
        return -1;
    }
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++)
        header_len |= (uint64_t)buf[i] << (8 * i);
    if (header_len > ST_MAX_HEADER_BYTES) {
        set_err(err, errlen, "%s: header length %" PRIu64 " is over the %" PRIu64 "-byte limit",
                label, header_len, ST_MAX_HEADER_BYTES);
        return -1;
    }
    if (header_len > len - 8) {
        set_err(err, errlen, "%s: truncated: header says %" PRIu64 " bytes, file has %zu after the 8-byte length",
                label, header_len, len - 8);
        return -1;
    }
    const uint8_t *header = buf + 8;
    size_t hlen = (size_t)header_len;
    size_t bad = utf8_invalid_at(header, hlen);
    if (bad < hlen) {
        set_err(err, errlen, "%s: header is not valid UTF-8 (byte %zu)", label, bad);
        return -1;
    }
    /* JSON allows no raw control characters, and a NUL would cut names short. */
    for (size_t i = 0; i < hlen; i++) {
        if (header[i] < 0x20 && header[i] != '\t' && header[i] != '\n' && header[i] != '\r') {
            set_err(err, errlen, "%s: header has a control character (0x%02x) at byte %zu", label,
                    header[i], i);
            return -1;
        }
    }
    /* cJSON gets a NUL-terminated copy, so no parser path can read past it. */
    char *text = malloc(hlen + 1);
    if (!text) {
        set_err(err, errlen, "%s: out of memory", label);
        return -1;
    }
    memcpy(text, header, hlen);
    text[hlen] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, hlen, &end, 0);
    if (!root) {
        size_t at = end && end >= text && end <= text + hlen ? (size_t)(end - text) : 0;
        set_err(err, errlen, "%s: header is not valid JSON (at byte %zu)", label, at);
        free(text);
        return -1;
    }
    for (const char *p = end; p < text + hlen; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            set_err(err, errlen, "%s: header has bytes after its JSON object (at byte %zu); only space padding may follow",
                    label, (size_t)(p - text));
            cJSON_Delete(root);
            free(text);
            return -1;
        }
    }
    free(text);

    int rc = -1;
    uint64_t data_len = (uint64_t)len - 8 - header_len;
    if (!cJSON_IsObject(root)) {
        set_err(err, errlen, "%s: header must be a JSON object, got %s", label,
                json_type_name(root));
        goto done;
    }
    int members = cJSON_GetArraySize(root);
    f->tensors = calloc(members > 0 ? (size_t)members : 1, sizeof *f->tensors);
    if (!f->tensors) {
        set_err(err, errlen, "%s: out of memory", label);
        goto done;
    }
    int seen_metadata = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (seen_metadata++) {
                set_err(err, errlen, "%s: \"__metadata__\" appears twice", label);
                goto done;
            }
            if (parse_metadata(label, item, f, err, errlen) != 0)
                goto done;
            continue;
        }
        st_rtensor *t = &f->tensors[f->count];
        t->name = dup_str(item->string);
        if (!t->name) {
            set_err(err, errlen, "%s: out of memory", label);
            goto done;
        }
        f->count++;
        if (parse_tensor(label, item, t, data_len, err, errlen) != 0)
            goto done;
    }
    qsort(f->tensors, f->count, sizeof *f->tensors, cmp_rtensor_name);
    for (uint32_t i = 1; i < f->count; i++) {
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0) {
            set_err(err, errlen, "%s: tensor '%s' appears twice", label, f->tensors[i].name);
            goto done;
        }
    }
    if (f->meta_count > 1) /* f->meta is NULL without metadata */
        qsort(f->meta, f->meta_count, sizeof *f->meta, cmp_meta_key);
    for (uint32_t i = 1; i < f->meta_count; i++) {
        if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0) {
            set_err(err, errlen, "%s: \"__metadata__\" key '%s' appears twice", label,
                    f->meta[i].key);
            goto done;
        }
    }
    if (check_coverage(label, f, data_len, err, errlen) != 0)
        goto done;
    *data_off = 8 + header_len;
    f->data_len = data_len;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

static st_file *file_new(const char *label, char *err, size_t errlen)
{
    st_file *f = calloc(1, sizeof *f);
    if (f)
        f->label = dup_str(label);
    if (!f || !f->label) {
        free(f);
        set_err(err, errlen, "%s: out of memory", label);
        return NULL;
    }
    return f;
}

/* Points f->data at an aligned private copy of the data section. */
static int copy_data(st_file *f, const uint8_t *src, char *err, size_t errlen)
{
    if (f->data_len == 0) {
        f->data = (const uint8_t *)st_empty_data;
        return 0;
    }
    if (f->data_len > SIZE_MAX - ST_COPY_ALIGN) {
        set_err(err, errlen, "%s: data section too large to copy", f->label);
        return -1;
    }
    size_t size = ((size_t)f->data_len + ST_COPY_ALIGN - 1) & ~(size_t)(ST_COPY_ALIGN - 1);
    f->copy = aligned_alloc(ST_COPY_ALIGN, size);
    if (!f->copy) {
        set_err(err, errlen, "%s: out of memory for %" PRIu64 " bytes of tensor data", f->label,
                f->data_len);
        return -1;
    }
    memcpy(f->copy, src, (size_t)f->data_len);
    f->data = f->copy;
    return 0;
}

st_file *st_open_buffer(const void *data, size_t len, const char *label, char *err,
                        size_t errlen)
{
    if (!label)
        label = "<buffer>";
    if (!data && len > 0) {
        set_err(err, errlen, "%s: buffer is NULL", label);
        return NULL;
    }
    st_file *f = file_new(label, err, errlen);
    if (!f)
        return NULL;
    uint64_t off;
    if (parse_file(f, data, len, &off, err, errlen) != 0 ||
        copy_data(f, (const uint8_t *)data + off, err, errlen) != 0) {
        st_close(f);
        return NULL;
    }
    return f;
}

st_file *st_open(const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
    if (!path || !*path) {
        set_err(err, errlen, "st_open: no path given");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (max_bytes > 0 && size > max_bytes) {
        set_err(err, errlen, "%s: file is %" PRIu64 " bytes, over the limit of %" PRIu64, path,
                size, max_bytes);
        close(fd);
        return NULL;
    }
    if (size < 8) { /* also keeps mmap from seeing a zero length */
        set_err(err, errlen, "%s: file too short: %" PRIu64 " bytes, a safetensors file starts with an 8-byte header length",
                path, size);
        close(fd);
        return NULL;
    }
    if (size > SIZE_MAX) {
        set_err(err, errlen, "%s: file too large to map", path);
        close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping keeps the file alive */
    if (map == MAP_FAILED) {
        set_err(err, errlen, "%s: cannot map: %s", path, strerror(map_errno));
        return NULL;
    }
    st_file *f = file_new(path, err, errlen);
    if (!f) {
        munmap(map, (size_t)size);
        return NULL;
    }
    f->map = map;
    f->map_len = (size_t)size;
    uint64_t off;
    if (parse_file(f, map, (size_t)size, &off, err, errlen) != 0) {
        st_close(f);
        return NULL;
    }
    if (off % ST_DATA_ALIGN == 0) {
        f->data = f->data_len > 0 ? (const uint8_t *)map + off : (const uint8_t *)st_empty_data;
    } else {
        /* A writer that did not pad its header: copy so every tensor is
         * aligned for its element type, then let the mapping go. */
        if (copy_data(f, (const uint8_t *)map + off, err, errlen) != 0) {
            st_close(f);
            return NULL;
        }
        munmap(f->map, f->map_len);
        f->map = NULL;
    }
    return f;
}

uint32_t st_count(const st_file *f)
{
    return f ? f->count : 0;
}

static void fill_info(const st_file *f, const st_rtensor *t, st_tensor_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype->dtype;
    out->dtype_name = t->dtype->name;
    out->elem_size = t->dtype->size;
    out->ndim = t->ndim;
    for (uint32_t i = 0; i < t->ndim; i++)
        out->shape[i] = t->shape[i];
    out->data = f->data + t->begin;
    out->nbytes = t->end - t->begin;
}

int st_tensor(const st_file *f, uint32_t i, st_tensor_info *out)
{
    if (!f || !out || i >= f->count)
        return -1;
    fill_info(f, &f->tensors[i], out);
    return 0;
}

int st_find(const st_file *f, const char *name, st_tensor_info *out)
{
    if (!f || !name || !out || f->count == 0)
        return -1;
    st_rtensor key = {.name = (char *)name};
    const st_rtensor *t = bsearch(&key, f->tensors, f->count, sizeof *f->tensors,
                                  cmp_rtensor_name);
    if (!t)
        return -1;
    fill_info(f, t, out);
    return 0;
}

const char *st_metadata(const st_file *f, const char *key)
{
    if (!f || !key || f->meta_count == 0)
        return NULL;
    st_wmeta probe = {.key = (char *)key};
    const st_wmeta *m = bsearch(&probe, f->meta, f->meta_count, sizeof *f->meta, cmp_meta_key);
    return m ? m->value : NULL;
}

uint32_t st_metadata_count(const st_file *f)
{
    return f ? f->meta_count : 0;
}

int st_metadata_at(const st_file *f, uint32_t i, const char **key, const char **value)
{
    if (!f || i >= f->meta_count)
        return -1;
    if (key)
        *key = f->meta[i].key;
    if (value)
        *value = f->meta[i].value;
    return 0;
}

const char *st_label(const st_file *f)
{
    return f ? f->label : NULL;
}
