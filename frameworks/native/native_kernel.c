/* native_kernel.c - see native_kernel.h. */
#include "native_kernel.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "errbuf.h"
#include "kserve_decode.h"
#include "model.h"
#include "spec.h"

/* One request's rows, at most (a batch holds many requests). */
#define KERNEL_MAX_ROWS 4096
#define SPEC_MAX ((long)16 << 20)
#define WEIGHTS_MAX ((long)2 << 30)

static const loom_host *host;

void native_kernel_set_host(const loom_host *h) { host = h; }

struct loom_kernel_model {
    native_spec spec;
    int32_t shape[3], ndim, classes;
    char *weights_file; /* the safetensors file's bytes */
    long weights_len;
};

struct loom_kernel_instance {
    loom_kernel_model *model;
    native_backend *be;
    native_model *net;
    float *x, *y;    /* the batch's inputs and logits, host side */
    int64_t rows_cap;
    char *out;       /* one answer's JSON */
    size_t out_cap;
    kserve_decoder decoder;
};

static loom_error *fail(int code, const char *fmt, const char *a, const char *b)
{
    return host->error_newf(code, fmt, a, b);
}

static char *read_file(const char *path, long max, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && n <= max && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = 0;
                *len = n;
            }
        }
    }
    fclose(f);
    return buf;
}

/* The spec file's name: model.json's attribute "model_spec", else edt.json
 * (what the trainer writes beside the weights). */
static void spec_name(const char *model_json, char *out, size_t len)
{
    snprintf(out, len, "edt.json");
    cJSON *m = cJSON_Parse(model_json ? model_json : "");
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(m, "attributes"))
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(a, "key");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "value");
        if (cJSON_IsString(k) && cJSON_IsString(v) && !strcmp(k->valuestring, "model_spec") &&
            !strchr(v->valuestring, '/'))
            snprintf(out, len, "%s", v->valuestring);
    }
    cJSON_Delete(m);
}

/* The input shape (the spec's "input") and the classes (the last dense
 * layer's units). */
static int model_shape(loom_kernel_model *m, char *err, size_t errlen)
{
    if (!m->spec.input_ndim)
        return native_err(err, errlen, LOOM_ERR_INVALID_ARGUMENT,
                          "the model spec has no \"input\" shape, which serving needs");
    memcpy(m->shape, m->spec.input, sizeof m->shape);
    m->ndim = m->spec.input_ndim;
    for (int32_t i = m->spec.layer_count - 1; i >= 0 && !m->classes; i--)
        if (m->spec.layers[i].type == NATIVE_LAYER_DENSE)
            m->classes = m->spec.layers[i].units;
    if (m->classes <= 0)
        return native_err(err, errlen, LOOM_ERR_INVALID_ARGUMENT,
                          "the model spec has no dense layer to give the classes");
    return 0;
}

static void unload_model(loom_kernel_model *m)
{
    native_spec_free(&m->spec);
    free(m->weights_file);
    free(m);
}

static loom_error *load_model(const loom_kernel_factory *self,
                              const loom_kernel_model_config *config, loom_kernel_model **out)
{
    (void)self;
    if (!config->weight_path)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "native kernel: model.json names no weight_path");
    loom_kernel_model *m = calloc(1, sizeof *m);
    if (!m)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "native kernel: out of memory");
    char name[128], path[4096], err[NATIVE_ERR_LEN];
    spec_name(config->model_json, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", config->model_dir, name);
    long len = 0;
    char *spec = read_file(path, SPEC_MAX, &len);
    if (!spec) {
        free(m);
        return fail(LOOM_ERR_NOT_FOUND, "native kernel: cannot read the model spec %s%s", path,
                    " (model.json attribute model_spec, default edt.json)");
    }
    int rc = native_spec_parse(spec, &m->spec, err, sizeof err);
    free(spec);
    if (rc) {
        free(m);
        return fail(rc, "native kernel: %s: %s", path, err);
    }
    if ((rc = model_shape(m, err, sizeof err)) ||
        !(m->weights_file = read_file(config->weight_path, WEIGHTS_MAX, &m->weights_len))) {
        unload_model(m);
        return rc ? fail(rc, "native kernel: %s: %s", path, err)
                  : fail(LOOM_ERR_NOT_FOUND, "native kernel: cannot read %s%s",
                         config->weight_path, "");
    }
    *out = m;
    return NULL;
}

/* Copies every parameter of the net from the safetensors file. */
static loom_error *load_weights(loom_kernel_model *m, native_backend *be, native_model *net)
{
    uint64_t hlen = 0;
    if (m->weights_len < 8)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT, "native kernel: weights: not safetensors");
    memcpy(&hlen, m->weights_file, 8);
    if (hlen > (uint64_t)m->weights_len - 8)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "native kernel: weights: the safetensors header overruns the file");
    cJSON *h = cJSON_ParseWithLength(m->weights_file + 8, (size_t)hlen);
    const char *data = m->weights_file + 8 + hlen;
    uint64_t data_len = (uint64_t)m->weights_len - 8 - hlen;
    loom_error *e = h ? NULL : host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                               "native kernel: weights: malformed header");
    for (int32_t i = 0; !e && i < net->param_tensor_count; i++) {
        const native_param *p = &net->params[i];
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(h, p->name);
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        double a = cJSON_GetNumberValue(cJSON_GetArrayItem(off, 0));
        double b = cJSON_GetNumberValue(cJSON_GetArrayItem(off, 1));
        if (!t || !cJSON_IsString(dt) || strcmp(dt->valuestring, "F32") || !(a >= 0) ||
            b - a != (double)p->count * 4 || b > (double)data_len)
            e = fail(LOOM_ERR_INVALID_ARGUMENT, "native kernel: weights: tensor '%s' is missing "
                     "or is not F32 of the model's shape%s", p->name, "");
        else
            be->upload(be, net->weights + p->offset, data + (uint64_t)a, (size_t)p->count * 4);
    }
    cJSON_Delete(h);
    return e;
}

static void destroy_instance(loom_kernel_instance *k)
{
    if (k->be) {
        native_model_destroy(k->net);
        k->be->destroy(k->be);
    }
    free(k->x);
    free(k->y);
    free(k->out);
    kserve_decoder_free(&k->decoder);
    free(k);
}

static loom_error *create_instance(loom_kernel_model *m, const loom_device *device,
                                   loom_kernel_instance **out)
{
    loom_kernel_instance *k = calloc(1, sizeof *k);
    if (!k)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "native kernel: out of memory");
    k->model = m;
    char err[NATIVE_ERR_LEN] = "out of memory";
    int rc = LOOM_ERR_RESOURCE_EXHAUSTED;
    k->be = device && device->kind == LOOM_DEVICE_CUDA
                ? native_backend_cuda_create(device->index, err, sizeof err)
                : native_backend_cpu_create();
    if (k->be)
        rc = native_model_create(&m->spec, m->shape, m->ndim, m->classes, k->be, 0, &k->net, err,
                                 sizeof err);
    if (!k->be || rc) {
        destroy_instance(k);
        return fail(rc ? rc : LOOM_ERR_UNAVAILABLE, "native kernel: %s%s", err, "");
    }
    loom_error *e = load_weights(m, k->be, k->net);
    if (e) {
        destroy_instance(k);
        return e;
    }
    *out = k;
    return NULL;
}

/* ---- execute --------------------------------------------------------------- */

static int reserve_rows(loom_kernel_instance *k, int64_t rows)
{
    if (rows <= k->rows_cap)
        return 0;
    float *x = realloc(k->x, (size_t)rows * (size_t)k->net->in_size * sizeof(float));
    if (x)
        k->x = x;
    float *y = realloc(k->y, (size_t)rows * (size_t)k->model->classes * sizeof(float));
    if (y)
        k->y = y;
    if (!x || !y)
        return -1;
    k->rows_cap = rows;
    return 0;
}

static int datatype_ok(const char *t)
{
    static const char *const ok[] = {"FP32", "FP64", "FP16", "INT8", "INT16", "INT32", "INT64",
                                     "UINT8", "UINT16", "UINT32", "UINT64", NULL};
    for (int i = 0; ok[i]; i++)
        if (!strcmp(t, ok[i]))
            return 1;
    return 0;
}

/* Reads one request's input into k->x from row `first`; *rows its count.
 * 0, or -1 with err saying what is wrong with it. */
static int read_input(loom_kernel_instance *k, const loom_infer_request *r, int64_t first,
                      int64_t *rows, char *err, size_t errlen)
{
    int64_t in_size = k->net->in_size;
    kserve_input in;
    kserve_parse(&k->decoder, (const char *)r->body, (size_t)r->body_len, &in);
    int rc = -1;
    int64_t total = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, in.shape) total *= cJSON_IsNumber(d) && d->valuedouble >= 1 ? (int64_t)d->valuedouble : 0;
    if (!in.root || !in.input || !cJSON_IsArray(in.shape) || !cJSON_GetArraySize(in.shape) ||
        !cJSON_IsArray(in.data))
        snprintf(err, errlen, "expected {\"inputs\": [{\"name\", \"shape\", \"datatype\", "
                 "\"data\"}]} (KServe v2 JSON)");
    else if (in.datatype && (!cJSON_IsString(in.datatype) || !datatype_ok(in.datatype->valuestring)))
        snprintf(err, errlen, "inputs[0].datatype: expected FP32, FP64 or an integer type");
    else if (total <= 0 || total % in_size || total / in_size > KERNEL_MAX_ROWS)
        snprintf(err, errlen, "inputs[0].shape: holds %lld values; the model takes rows of %lld "
                 "(at most %d rows)", (long long)total, (long long)in_size, KERNEL_MAX_ROWS);
    else if (reserve_rows(k, first + total / in_size) != 0)
        snprintf(err, errlen, "out of memory");
    else {
        int64_t n = 0;
        int bad = kserve_read_data(&in, k->x + first * in_size, total, &n);
        if (bad || n != total)
            snprintf(err, errlen, "inputs[0].data: expected %lld numbers (the shape's), got "
                     "%s", (long long)total, bad ? "more, or something else" : "fewer");
        else
            rc = 0, *rows = total / in_size;
    }
    kserve_input_free(&in);
    return rc;
}

static int grow_out(loom_kernel_instance *k, size_t need)
{
    if (need <= k->out_cap)
        return 0;
    char *grown = realloc(k->out, need);
    if (!grown)
        return -1;
    k->out = grown;
    k->out_cap = need;
    return 0;
}

/* {"outputs": [logits, label]} for rows [first, first + rows). */
static loom_error *answer(loom_kernel_instance *k, loom_infer_request *r, int64_t first,
                          int64_t rows)
{
    int32_t c = k->model->classes;
    if (grow_out(k, (size_t)(rows * c * 18 + rows * 12 + 256)) != 0)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "native kernel: out of memory");
    char *p = k->out;
    p += sprintf(p, "{\"outputs\":[{\"name\":\"logits\",\"shape\":[%lld,%d],\"datatype\":"
                 "\"FP32\",\"data\":[", (long long)rows, (int)c);
    for (int64_t i = 0; i < rows * c; i++) {
        float v = k->y[first * c + i];
        p += isfinite(v) ? sprintf(p, "%s%.6g", i ? "," : "", v) : sprintf(p, "%snull", i ? "," : "");
    }
    p += sprintf(p, "]},{\"name\":\"label\",\"shape\":[%lld],\"datatype\":\"INT64\",\"data\":[",
                 (long long)rows);
    for (int64_t i = 0; i < rows; i++) {
        const float *row = k->y + (first + i) * c;
        int32_t best = 0;
        for (int32_t j = 1; j < c; j++)
            if (row[j] > row[best])
                best = j;
        p += sprintf(p, "%s%d", i ? "," : "", (int)best);
    }
    p += sprintf(p, "]}]}");
    return r->respond(r, LOOM_OK, "application/json", (const uint8_t *)k->out,
                      (uint64_t)(p - k->out));
}

static loom_error *execute(loom_kernel_instance *k, loom_infer_request *const *requests,
                           uint32_t count)
{
    int64_t *first = calloc(count ? count : 1, sizeof *first);
    int64_t *rows = calloc(count ? count : 1, sizeof *rows);
    if (!first || !rows) {
        free(first);
        free(rows);
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "native kernel: out of memory");
    }
    int64_t total = 0;
    loom_error *e = NULL;
    for (uint32_t i = 0; i < count && !e; i++) {
        char err[256];
        first[i] = total;
        if (read_input(k, requests[i], total, &rows[i], err, sizeof err) != 0) {
            rows[i] = -1;
            e = requests[i]->respond(requests[i], LOOM_ERR_INVALID_ARGUMENT, "text/plain",
                                     (const uint8_t *)err, strlen(err));
        } else {
            total += rows[i];
        }
    }
    char err[NATIVE_ERR_LEN];
    if (!e && total > 0 && native_model_infer(k->net, k->x, total, k->y, err, sizeof err) != 0)
        e = fail(LOOM_ERR_INTERNAL, "native kernel: %s%s", err, "");
    for (uint32_t i = 0; i < count && !e; i++)
        if (rows[i] > 0)
            e = answer(k, requests[i], first[i], rows[i]);
    free(first);
    free(rows);
    return e;
}

static const loom_kernel_factory factory = {
    .struct_size = sizeof(loom_kernel_factory),
    .load_model = load_model,
    .unload_model = unload_model,
    .create_instance = create_instance,
    .destroy_instance = destroy_instance,
    .execute = execute,
};

const loom_kernel_factory *native_kernel_factory(void) { return &factory; }
