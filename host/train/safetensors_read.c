/*
 * train/safetensors_read.c - the validating safetensors reader (see
 * safetensors.h): the whole file is checked before any tensor is handed
 * out.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "train/safetensors_internal.h"

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

void safetensors_close(st_file *f)
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
static loom_error *parse_tensor(const char *label, const cJSON *entry, st_rtensor *t,
                                uint64_t data_len)
{
    const char *name = t->name;
    if (!cJSON_IsObject(entry))
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': entry must be an object, got %s", label, name,
                        json_type_name(entry));
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
    if (!dtype || !shape || !offsets)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': missing \"%s\"", label, name,
                        !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (!cJSON_IsString(dtype))
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': \"dtype\" must be a string, got %s", label,
                        name, json_type_name(dtype));
    t->dtype = safetensors_dtype_by_name(dtype->valuestring);
    if (!t->dtype)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': unsupported dtype '%s' (expected F32, F64, I32, I64, U8 or another byte-sized safetensors dtype)",
                        label, name, dtype->valuestring);

    if (!cJSON_IsArray(shape))
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': \"shape\" must be an array of dimensions, got %s",
                        label, name, json_type_name(shape));
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > LOOM_MAX_DIMS)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': shape has %d dimensions, at most %d supported",
                        label, name, ndim, LOOM_MAX_DIMS);
    t->ndim = (uint32_t)ndim;
    int i = 0;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape) {
        uint64_t v;
        int negative;
        int bad = json_uint_value(dim, &v, &negative) != 0;
        if (bad && negative)
            return loom_err(LOOM_E_INVALID, "%s: tensor '%s': dimension %d is negative (%.17g)",
                            label, name, i, dim->valuedouble);
        if (bad)
            return loom_err(LOOM_E_INVALID,
                            "%s: tensor '%s': dimension %d must be a whole number between 0 and 2^53",
                            label, name, i);
        t->shape[i++] = (int64_t)v;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': \"data_offsets\" must be [begin, end]", label, name);
    uint64_t range[2];
    i = 0;
    const cJSON *off;
    cJSON_ArrayForEach(off, offsets) {
        int negative;
        if (json_uint_value(off, &range[i], &negative) != 0)
            return loom_err(LOOM_E_INVALID, "%s: tensor '%s': data_offsets[%d] must be a whole number between 0 and 2^53",
                        label, name, i);
        i++;
    }
    t->begin = range[0];
    t->end = range[1];
    if (t->begin > t->end)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begin after end",
                        label, name, t->begin, t->end);
    if (t->end > data_len)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] go past the data section (%" PRIu64 " bytes)",
                        label, name, t->begin, t->end, data_len);
    char shape_text[256];
    uint64_t need;
    if (safetensors_byte_count(t->dtype->size, t->shape, t->ndim, &need) != 0)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': %s %s overflows a 64-bit byte count", label, name,
                        t->dtype->name, safetensors_format_shape(t->shape, t->ndim, shape_text, sizeof shape_text));
    if (need != t->end - t->begin)
        return loom_err(LOOM_E_INVALID, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64 " bytes, %s %s needs %" PRIu64,
                        label, name, t->begin, t->end, t->end - t->begin, t->dtype->name,
                        safetensors_format_shape(t->shape, t->ndim, shape_text, sizeof shape_text), need);
    return NULL;
}

static loom_error *parse_metadata(const char *label, const cJSON *obj, st_file *f)
{
    if (!cJSON_IsObject(obj))
        return loom_err(LOOM_E_INVALID, "%s: \"__metadata__\" must be an object of strings, got %s", label,
                        json_type_name(obj));
    int n = cJSON_GetArraySize(obj);
    f->meta = calloc(n > 0 ? (size_t)n : 1, sizeof *f->meta);
    if (!f->meta)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        if (!cJSON_IsString(item))
            return loom_err(LOOM_E_INVALID, "%s: \"__metadata__\" value for '%s' must be a string, got %s",
                        label, item->string, json_type_name(item));
        st_wmeta *m = &f->meta[f->meta_count];
        m->key = safetensors_dup_str(item->string);
        m->value = safetensors_dup_str(item->valuestring);
        f->meta_count++; /* counted before the check so safetensors_close frees both */
        if (!m->key || !m->value)
            return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    }
    return NULL;
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
static loom_error *check_coverage(const char *label, const st_file *f, uint64_t data_len)
{
    const st_rtensor **by_offset = malloc((f->count ? f->count : 1) * sizeof *by_offset);
    if (!by_offset)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    for (uint32_t i = 0; i < f->count; i++)
        by_offset[i] = &f->tensors[i];
    qsort(by_offset, f->count, sizeof *by_offset, cmp_rtensor_offsets);
    uint64_t pos = 0;
    const st_rtensor *prev = NULL;
    loom_error *e = NULL;
    for (uint32_t i = 0; i < f->count && !e; i++) {
        const st_rtensor *t = by_offset[i];
        if (t->begin < pos)
            e = loom_err(LOOM_E_INVALID,
                         "%s: tensors '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64 ", %" PRIu64 "] overlap",
                         label, prev->name, prev->begin, prev->end, t->name, t->begin, t->end);
        else if (t->begin > pos)
            e = loom_err(LOOM_E_INVALID, "%s: data section bytes [%" PRIu64 ", %" PRIu64 ") belong to no tensor",
                         label, pos, t->begin);
        pos = t->end;
        prev = t;
    }
    if (!e && pos != data_len)
        e = loom_err(LOOM_E_INVALID, "%s: data section bytes [%" PRIu64 ", %" PRIu64 ") belong to no tensor",
                     label, pos, data_len);
    free(by_offset);
    return e;
}

/* The header of the file in buf: its length checked against the file, its
 * bytes UTF-8 without control characters, one JSON value and nothing but
 * padding after it. The value goes to *root, its length to *header_len. */
static loom_error *parse_header(const char *label, const uint8_t *buf, size_t len,
                                uint64_t *header_len, cJSON **root)
{
    if (len < 8)
        return loom_err(LOOM_E_INVALID,
                        "%s: file too short: %zu bytes, a safetensors file starts with an 8-byte header length",
                        label, len);
    *header_len = 0;
    for (int i = 0; i < 8; i++)
        *header_len |= (uint64_t)buf[i] << (8 * i);
    if (*header_len > ST_MAX_HEADER_BYTES)
        return loom_err(LOOM_E_TOO_LARGE, "%s: header length %" PRIu64 " is over the %" PRIu64 "-byte limit",
                        label, *header_len, ST_MAX_HEADER_BYTES);
    if (*header_len > len - 8)
        return loom_err(LOOM_E_INVALID,
                        "%s: truncated: header says %" PRIu64 " bytes, file has %zu after the 8-byte length",
                        label, *header_len, len - 8);
    const uint8_t *header = buf + 8;
    size_t hlen = (size_t)*header_len;
    size_t bad = safetensors_utf8_invalid_at(header, hlen);
    if (bad < hlen)
        return loom_err(LOOM_E_INVALID, "%s: header is not valid UTF-8 (byte %zu)", label, bad);
    /* JSON allows no raw control characters, and a NUL would cut names short. */
    for (size_t i = 0; i < hlen; i++)
        if (header[i] < 0x20 && header[i] != '\t' && header[i] != '\n' && header[i] != '\r')
            return loom_err(LOOM_E_INVALID, "%s: header has a control character (0x%02x) at byte %zu",
                            label, header[i], i);
    /* cJSON gets a NUL-terminated copy, so no parser path can read past it. */
    char *text = malloc(hlen + 1);
    if (!text)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    memcpy(text, header, hlen);
    text[hlen] = 0;
    const char *end = NULL;
    loom_error *e = NULL;
    *root = cJSON_ParseWithLengthOpts(text, hlen, &end, 0);
    if (!*root) {
        size_t at = end && end >= text && end <= text + hlen ? (size_t)(end - text) : 0;
        e = loom_err(LOOM_E_INVALID, "%s: header is not valid JSON (at byte %zu)", label, at);
    }
    for (const char *p = end; *root && !e && p < text + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
            e = loom_err(LOOM_E_INVALID,
                         "%s: header has bytes after its JSON object (at byte %zu); only space padding may follow",
                         label, (size_t)(p - text));
    free(text);
    if (e) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return e;
}

/* The header's entries: tensors and "__metadata__", each once. */
static loom_error *parse_entries(st_file *f, const cJSON *root, uint64_t data_len)
{
    const char *label = f->label;
    if (!cJSON_IsObject(root))
        return loom_err(LOOM_E_INVALID, "%s: header must be a JSON object, got %s", label,
                        json_type_name(root));
    int members = cJSON_GetArraySize(root);
    f->tensors = calloc(members > 0 ? (size_t)members : 1, sizeof *f->tensors);
    if (!f->tensors)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    int seen_metadata = 0;
    loom_error *e;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (seen_metadata++)
                return loom_err(LOOM_E_INVALID, "%s: \"__metadata__\" appears twice", label);
            if ((e = parse_metadata(label, item, f)))
                return e;
            continue;
        }
        st_rtensor *t = &f->tensors[f->count];
        t->name = safetensors_dup_str(item->string);
        if (!t->name)
            return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
        f->count++;
        if ((e = parse_tensor(label, item, t, data_len)))
            return e;
    }
    qsort(f->tensors, f->count, sizeof *f->tensors, cmp_rtensor_name);
    for (uint32_t i = 1; i < f->count; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return loom_err(LOOM_E_INVALID, "%s: tensor '%s' appears twice", label, f->tensors[i].name);
    if (f->meta_count > 1) /* f->meta is NULL without metadata */
        qsort(f->meta, f->meta_count, sizeof *f->meta, cmp_meta_key);
    for (uint32_t i = 1; i < f->meta_count; i++)
        if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0)
            return loom_err(LOOM_E_INVALID, "%s: \"__metadata__\" key '%s' appears twice", label,
                            f->meta[i].key);
    return check_coverage(label, f, data_len);
}

/* Validates the whole file in buf and fills f's tensors and metadata; the
 * data section's offset goes to *data_off. */
static loom_error *parse_file(st_file *f, const uint8_t *buf, size_t len, uint64_t *data_off)
{
    uint64_t header_len = 0;
    cJSON *root = NULL;
    loom_error *e = parse_header(f->label, buf, len, &header_len, &root);
    if (e)
        return e;
    uint64_t data_len = (uint64_t)len - 8 - header_len;
    e = parse_entries(f, root, data_len);
    cJSON_Delete(root);
    if (e)
        return e;
    *data_off = 8 + header_len;
    f->data_len = data_len;
    return NULL;
}

static loom_error *file_new(const char *label, st_file **out)
{
    st_file *f = calloc(1, sizeof *f);
    if (f)
        f->label = safetensors_dup_str(label);
    if (!f || !f->label) {
        free(f);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", label);
    }
    *out = f;
    return NULL;
}

/* Points f->data at an aligned private copy of the data section. */
static loom_error *copy_data(st_file *f, const uint8_t *src)
{
    if (f->data_len == 0) {
        f->data = (const uint8_t *)st_empty_data;
        return NULL;
    }
    if (f->data_len > SIZE_MAX - ST_COPY_ALIGN)
        return loom_err(LOOM_E_TOO_LARGE, "%s: data section too large to copy", f->label);
    size_t size = ((size_t)f->data_len + ST_COPY_ALIGN - 1) & ~(size_t)(ST_COPY_ALIGN - 1);
    f->copy = aligned_alloc(ST_COPY_ALIGN, size);
    if (!f->copy)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory for %" PRIu64 " bytes of tensor data",
                        f->label, f->data_len);
    memcpy(f->copy, src, (size_t)f->data_len);
    f->data = f->copy;
    return NULL;
}

loom_error *safetensors_open_buffer(const void *data, size_t len, const char *label, st_file **out)
{
    *out = NULL;
    if (!label)
        label = "<buffer>";
    if (!data && len > 0)
        return loom_err(LOOM_E_INVALID, "%s: buffer is NULL", label);
    st_file *f = NULL;
    loom_error *e = file_new(label, &f);
    if (e)
        return e;
    uint64_t off;
    if ((e = parse_file(f, data, len, &off)) || (e = copy_data(f, (const uint8_t *)data + off))) {
        safetensors_close(f);
        return e;
    }
    *out = f;
    return NULL;
}

/* Maps the regular file open on fd, closed here (checked against
 * max_bytes and the format's minimum size). */
static loom_error *map_fd(int fd, const char *path, uint64_t max_bytes, void **map,
                          size_t *map_len)
{
    struct stat st;
    loom_error *e = NULL;
    uint64_t size = 0;
    if (fstat(fd, &st) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        e = loom_err(LOOM_E_INVALID, "%s: not a regular file", path);
    else if ((size = (uint64_t)st.st_size), max_bytes > 0 && size > max_bytes)
        e = loom_err(LOOM_E_TOO_LARGE, "%s: file is %" PRIu64 " bytes, over the limit of %" PRIu64,
                     path, size, max_bytes);
    else if (size < 8) /* also keeps mmap from seeing a zero length */
        e = loom_err(LOOM_E_INVALID,
                     "%s: file too short: %" PRIu64 " bytes, a safetensors file starts with an 8-byte header length",
                     path, size);
    else if (size > SIZE_MAX)
        e = loom_err(LOOM_E_TOO_LARGE, "%s: file too large to map", path);
    if (e) {
        close(fd);
        return e;
    }
    *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd); /* the mapping keeps the file alive */
    if (*map == MAP_FAILED)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot map: %s", path, strerror(map_errno));
    *map_len = (size_t)size;
    return NULL;
}

/* Validates the mapped file (owned from here on) into *out. */
static loom_error *open_mapped(const char *path, void *map, size_t size, st_file **out)
{
    loom_error *e;
    st_file *f = NULL;
    if ((e = file_new(path, &f))) {
        munmap(map, size);
        return e;
    }
    f->map = map;
    f->map_len = size;
    uint64_t off;
    if ((e = parse_file(f, map, size, &off))) {
        safetensors_close(f);
        return e;
    }
    if (off % ST_DATA_ALIGN == 0) {
        f->data = f->data_len > 0 ? (const uint8_t *)map + off : (const uint8_t *)st_empty_data;
    } else {
        /* A writer that did not pad its header: copy so every tensor is
         * aligned for its element type, then let the mapping go. */
        if ((e = copy_data(f, (const uint8_t *)map + off))) {
            safetensors_close(f);
            return e;
        }
        munmap(f->map, f->map_len);
        f->map = NULL;
    }
    *out = f;
    return NULL;
}

loom_error *safetensors_open(const char *path, uint64_t max_bytes, st_file **out)
{
    *out = NULL;
    if (!path || !*path)
        return loom_err(LOOM_E_INVALID, "safetensors_open: no path given");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INVALID, "%s: cannot open: %s",
                        path, strerror(errno));
    return safetensors_open_fd(fd, path, max_bytes, out);
}

loom_error *safetensors_open_fd(int fd, const char *label, uint64_t max_bytes, st_file **out)
{
    *out = NULL;
    void *map = NULL;
    size_t size = 0;
    loom_error *e = map_fd(fd, label, max_bytes, &map, &size);
    return e ? e : open_mapped(label, map, size, out);
}

uint32_t safetensors_count(const st_file *f)
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

int safetensors_tensor(const st_file *f, uint32_t i, st_tensor_info *out)
{
    if (!f || !out || i >= f->count)
        return -1;
    fill_info(f, &f->tensors[i], out);
    return 0;
}

int safetensors_find(const st_file *f, const char *name, st_tensor_info *out)
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

const char *safetensors_metadata(const st_file *f, const char *key)
{
    if (!f || !key || f->meta_count == 0)
        return NULL;
    st_wmeta probe = {.key = (char *)key};
    const st_wmeta *m = bsearch(&probe, f->meta, f->meta_count, sizeof *f->meta, cmp_meta_key);
    return m ? m->value : NULL;
}

uint32_t safetensors_metadata_count(const st_file *f)
{
    return f ? f->meta_count : 0;
}

int safetensors_metadata_at(const st_file *f, uint32_t i, const char **key, const char **value)
{
    if (!f || i >= f->meta_count)
        return -1;
    if (key)
        *key = f->meta[i].key;
    if (value)
        *value = f->meta[i].value;
    return 0;
}

const char *safetensors_label(const st_file *f)
{
    return f ? f->label : NULL;
}

