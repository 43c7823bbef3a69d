/* infer/v2_decode.c - a v2 request read in one pass over its text (see
 * v2_decode in v2_codec.h): a small JSON reader that knows the request's
 * shape, numbers written straight into the pack in the declared type. */
#include "infer/v2_codec.h"
#include "plugin/dtype_names.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/v2_pack.h"

typedef struct dec {
    const char *p, *end, *start;
    const model_spec *m;
    v2_request *out;
    int seen[MODEL_TENSOR_LIMIT];
} dec;

/* One input object's fields as read. */
typedef struct input_fields {
    const char *name;
    size_t name_len;
    int decl;          /* index of the declared input, -1 before the name */
    int32_t dtype;     /* -1 before "datatype" */
    int has_shape;
    uint32_t ndim;
    int64_t shape[LOOM_MAX_DIMS];
    const char *data;  /* the data array's text, when read after the object */
    int64_t count;     /* elements read, -1 before */
} input_fields;

static void ws(dec *d)
{
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
        d->p++;
}

static loom_error *syntax(const dec *d, const char *expected)
{
    return loom_err(LOOM_E_INVALID, "body: not a v2 inference request: at byte %ld, expected %s",
                    (long)(d->p - d->start), expected);
}

static int eat(dec *d, char c)
{
    ws(d);
    if (d->p < d->end && *d->p == c) {
        d->p++;
        return 1;
    }
    return 0;
}

/* A string at d->p: its text between the quotes; *escaped when it holds a
 * backslash. -1 when there is none. */
static int string(dec *d, const char **s, size_t *n, int *escaped)
{
    ws(d);
    if (d->p >= d->end || *d->p != '"')
        return -1;
    const char *q = ++d->p;
    *escaped = 0;
    while (q < d->end && *q != '"') {
        if ((unsigned char)*q < 0x20)
            return -1;
        if (*q == '\\') {
            *escaped = 1;
            q++;
        }
        q++;
    }
    if (q >= d->end)
        return -1;
    *s = d->p;
    *n = (size_t)(q - d->p);
    d->p = q + 1;
    return 0;
}

static int is_number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Passes over any JSON value. */
static int skip_value(dec *d, int depth)
{
    ws(d);
    if (d->p >= d->end || depth > V2_DEPTH_MAX)
        return -1;
    const char *s;
    size_t n;
    int esc;
    char c = *d->p;
    if (c == '"')
        return string(d, &s, &n, &esc);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        d->p++;
        if (eat(d, close))
            return 0;
        do {
            if (c == '{' && (string(d, &s, &n, &esc) != 0 || !eat(d, ':')))
                return -1;
            if (skip_value(d, depth + 1) != 0)
                return -1;
        } while (eat(d, ','));
        return eat(d, close) ? 0 : -1;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t w = strlen(words[i]);
        if ((size_t)(d->end - d->p) >= w && memcmp(d->p, words[i], w) == 0) {
            d->p += w;
            return 0;
        }
    }
    const char *from = d->p;
    while (d->p < d->end && is_number_char(*d->p))
        d->p++;
    return d->p > from ? 0 : -1;
}

typedef loom_error *(*field_fn)(dec *d, const char *key, size_t key_len, void *arg);

/* Hands each field of the object whose '{' was just read to fn, d->p at
 * its value (fn reads the value); d->p ends past the '}'. */
static loom_error *each_field(dec *d, field_fn fn, void *arg)
{
    if (eat(d, '}'))
        return NULL;
    do {
        const char *k;
        size_t kn;
        int esc;
        if (string(d, &k, &kn, &esc) != 0 || !eat(d, ':'))
            return syntax(d, "a field name and ':'");
        loom_error *e = fn(d, k, kn, arg);
        if (e)
            return e;
    } while (eat(d, ','));
    return eat(d, '}') ? NULL : syntax(d, "',' or '}'");
}

static int key_is(const char *k, size_t n, const char *want)
{
    return strlen(want) == n && memcmp(k, want, n) == 0;
}

/* Where the input called `name` is declared, -1 when it is not. */
static int find_decl(const model_tensor *t, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(t[i].name) == len && memcmp(t[i].name, name, len) == 0)
            return i;
    return -1;
}

/* The declared names, "a, b", for a message. */
static const char *decl_names(const model_tensor *t, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s\"%s\"", i ? ", " : "", t[i].name);
    return buf;
}

static loom_error *bad_input(int i, const model_tensor *decl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static loom_error *bad_input(int i, const model_tensor *decl, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (decl)
        return loom_err(LOOM_E_INVALID, "inputs[%d] (\"%s\"): %s", i, decl->name, what);
    return loom_err(LOOM_E_INVALID, "inputs[%d]: %s", i, what);
}

/* The data array at d->p, in the declared input's type, appended to the
 * pack; the element count into *count. */
static loom_error *read_data(dec *d, int i, int decl, int64_t *count)
{
    const model_tensor *t = &d->m->inputs[decl];
    v2_number_reader r = {.p = d->p, .end = d->end, .dtype = t->dtype, .pack = &d->out->pack};
    int rc = v2_read_numbers(&r);
    d->p = r.p;
    *count = r.count;
    if (rc == V2_READ_TOO_LARGE)
        return loom_err(LOOM_E_TOO_LARGE, "inputs[%d] (\"%s\"): data: the request's tensors "
                        "exceed %zu bytes (the limit of one request)", i, t->name, V2_PACK_MAX);
    if (rc != 0)
        return bad_input(i, t, "data[%lld]: expected %s%s, nested in arrays at most %d deep",
                         (long long)r.count, v2_number_expected(t->dtype),
                         rc == V2_READ_RANGE ? " (this one is out of its range)" : "",
                         V2_DEPTH_MAX);
    return NULL;
}

static loom_error *read_shape(dec *d, int i, input_fields *f)
{
    const model_tensor *t = f->decl >= 0 ? &d->m->inputs[f->decl] : NULL;
    f->has_shape = 1;
    f->ndim = 0;
    if (!eat(d, '['))
        return bad_input(i, t, "shape: expected an array of whole numbers");
    if (eat(d, ']'))
        return NULL;
    do {
        ws(d);
        const char *from = d->p;
        int64_t v = 0;
        while (d->p < d->end && *d->p >= '0' && *d->p <= '9' && v <= INT32_MAX)
            v = v * 10 + (*d->p++ - '0');
        if (d->p == from || v > INT32_MAX)
            return bad_input(i, t, "shape[%u]: expected a whole number from 0 to %d",
                             f->ndim, INT32_MAX);
        if (f->ndim == LOOM_MAX_DIMS)
            return bad_input(i, t, "shape: more than %d dimensions (the limit)", LOOM_MAX_DIMS);
        f->shape[f->ndim++] = v;
    } while (eat(d, ','));
    return eat(d, ']') ? NULL : bad_input(i, t, "shape: expected an array of whole numbers");
}

typedef struct input_at {
    int i;
    input_fields *f;
} input_at;

/* One field of input i's object. */
static loom_error *input_field(dec *d, const char *k, size_t kn, void *arg)
{
    int i = ((input_at *)arg)->i;
    input_fields *f = ((input_at *)arg)->f;
    if (key_is(k, kn, "name") || key_is(k, kn, "datatype")) {
        const char *v;
        size_t vn;
        int escaped;
        if (string(d, &v, &vn, &escaped) != 0 || escaped)
            return bad_input(i, NULL, "%.*s: expected a string without escapes", (int)kn, k);
        if (k[0] == 'n') {
            f->name = v, f->name_len = vn;
            f->decl = find_decl(d->m->inputs, d->m->ninputs, v, vn);
        } else if ((f->dtype = dtype_parse(v, vn)) < 0) {
            return bad_input(i, NULL, "datatype \"%.*s\": expected " DTYPE_NAME_LIST,
                             (int)(vn < 32 ? vn : 32), v);
        }
        return NULL;
    }
    if (key_is(k, kn, "shape"))
        return read_shape(d, i, f);
    ws(d);
    if (key_is(k, kn, "data") && f->decl >= 0 && f->dtype >= 0 && f->count < 0 &&
        f->dtype == d->m->inputs[f->decl].dtype && !d->seen[f->decl])
        return read_data(d, i, f->decl, &f->count);
    if (key_is(k, kn, "data"))
        f->data = d->p; /* read once the name and datatype are known */
    return skip_value(d, 0) == 0 ? NULL : syntax(d, "a JSON value");
}

/* Elements a shape holds; -1 past the limit. */
static int64_t elements(const int64_t *shape, uint32_t ndim, size_t elem)
{
    int64_t n = 1;
    for (uint32_t k = 0; k < ndim; k++) {
        if (shape[k] && n > (int64_t)(V2_PACK_MAX / elem) / shape[k])
            return -1;
        n *= shape[k];
    }
    return (uint64_t)n * elem > V2_PACK_MAX ? -1 : n;
}

/* The fields of input i against its declaration. */
static loom_error *check_input(dec *d, int i, input_fields *f)
{
    const model_spec *m = d->m;
    char names[512];
    if (!f->name)
        return bad_input(i, NULL, "name: missing (the model declares %s)",
                         decl_names(m->inputs, m->ninputs, names, sizeof names));
    if (f->decl < 0)
        return bad_input(i, NULL, "no input is named \"%.*s\" (the model declares %s)",
                         (int)(f->name_len < 64 ? f->name_len : 64), f->name,
                         decl_names(m->inputs, m->ninputs, names, sizeof names));
    const model_tensor *t = &m->inputs[f->decl];
    if (d->seen[f->decl])
        return bad_input(i, t, "given twice");
    if (f->dtype < 0 || f->dtype != t->dtype)
        return bad_input(i, t, "datatype: expected %s (declared), got %s",
                         dtype_name(t->dtype),
                         f->dtype < 0 ? "none" : dtype_name(f->dtype));
    if (!f->has_shape)
        return bad_input(i, t, "shape: missing");
    if (f->ndim != t->ndim)
        return bad_input(i, t, "shape: %u dimensions, expected %u (declared)", f->ndim, t->ndim);
    for (uint32_t k = 0; k < t->ndim; k++)
        if (t->shape[k] >= 0 && f->shape[k] != t->shape[k])
            return bad_input(i, t, "shape[%u]: %lld, expected %lld (declared)", k,
                             (long long)f->shape[k], (long long)t->shape[k]);
    int64_t want = elements(f->shape, f->ndim, dtype_size(t->dtype));
    if (want < 0)
        return loom_err(LOOM_E_TOO_LARGE, "inputs[%d] (\"%s\"): shape: its elements exceed %zu "
                        "bytes (the limit of one request)", i, t->name, V2_PACK_MAX);
    if (f->count < 0 && f->data) {
        const char *resume = d->p;
        d->p = f->data;
        loom_error *e = read_data(d, i, f->decl, &f->count);
        d->p = resume;
        if (e)
            return e;
    }
    if (f->count < 0)
        return bad_input(i, t, "data: missing");
    if (f->count != want)
        return bad_input(i, t, "data: %lld elements, the shape holds %lld", (long long)f->count,
                         (long long)want);
    return NULL;
}

static loom_error *read_input(dec *d, int i)
{
    input_fields f = {.decl = -1, .dtype = -1, .count = -1};
    size_t data_at = d->out->pack.len;
    input_at at = {i, &f};
    loom_error *e = each_field(d, input_field, &at);
    if (!e)
        e = check_input(d, i, &f);
    if (e)
        return e;
    d->seen[f.decl] = 1;
    v2_pack_set_entry(&d->out->pack, f.decl, f.shape, f.ndim, data_at);
    return NULL;
}

/* The shorthand's shape: the declared one, its one -1 (if any) taken from
 * the count. */
static loom_error *shorthand_shape(const model_tensor *t, int64_t count, int64_t *shape)
{
    int64_t fixed = 1;
    int var = -1;
    for (uint32_t k = 0; k < t->ndim; k++) {
        if (t->shape[k] < 0 && var >= 0)
            return loom_err(LOOM_E_INVALID, "inputs: the shorthand [numbers...] cannot tell the "
                            "shape of \"%s\" (two dimensions of any size): send {\"name\", "
                            "\"shape\", \"datatype\", \"data\"}", t->name);
        if (t->shape[k] < 0)
            var = (int)k;
        else
            fixed *= t->shape[k];
        shape[k] = t->shape[k];
    }
    if (var >= 0 && fixed > 0 && count % fixed == 0)
        shape[var] = count / fixed;
    else if (var >= 0 && !(fixed == 0 && count == 0))
        var = -2;
    if (var == -2 || (var == -1 && fixed != count))
        return loom_err(LOOM_E_INVALID, "inputs: %lld numbers do not fill the shape declared for "
                        "\"%s\"", (long long)count, t->name);
    return NULL;
}

/* {"inputs": [numbers...]}: the one declared input's data. */
static loom_error *read_shorthand(dec *d)
{
    const model_spec *m = d->m;
    if (m->ninputs != 1)
        return loom_err(LOOM_E_INVALID, "inputs: the shorthand [numbers...] is for a model with "
                        "one input; this one declares %d: send [{\"name\", \"shape\", "
                        "\"datatype\", \"data\"}, ...]", m->ninputs);
    int64_t count, shape[LOOM_MAX_DIMS];
    size_t data_at = d->out->pack.len;
    loom_error *e = read_data(d, 0, 0, &count);
    if (!e && m->inputs[0].ndim == 0 && count != 1)
        e = loom_err(LOOM_E_INVALID, "inputs: \"%s\" is a scalar, got %lld numbers",
                     m->inputs[0].name, (long long)count);
    if (!e && m->inputs[0].ndim)
        e = shorthand_shape(&m->inputs[0], count, shape);
    if (e)
        return e;
    d->seen[0] = 1;
    v2_pack_set_entry(&d->out->pack, 0, shape, m->inputs[0].ndim, data_at);
    return NULL;
}

static loom_error *read_inputs(dec *d)
{
    if (!eat(d, '['))
        return loom_err(LOOM_E_INVALID, "inputs: expected an array of {\"name\", \"shape\", "
                        "\"datatype\", \"data\"}");
    ws(d);
    if (d->p < d->end && *d->p != '{' && *d->p != ']') {
        d->p--; /* the '[' opens the shorthand's data */
        return read_shorthand(d);
    }
    if (eat(d, ']'))
        return NULL;
    int i = 0;
    do {
        if (!eat(d, '{'))
            return bad_input(i, NULL, "expected an object {\"name\", \"shape\", \"datatype\", "
                             "\"data\"}");
        loom_error *e = read_input(d, i++);
        if (e)
            return e;
    } while (eat(d, ','));
    return eat(d, ']') ? NULL : syntax(d, "',' or ']' closing inputs");
}

typedef struct output_name {
    const char *v;
    size_t vn;
} output_name;

/* One field of an "outputs" entry: its name kept, the rest passed over. */
static loom_error *output_field(dec *d, const char *k, size_t kn, void *arg)
{
    output_name *o = arg;
    int esc;
    if (key_is(k, kn, "name") ? string(d, &o->v, &o->vn, &esc) != 0 : skip_value(d, 0) != 0)
        return syntax(d, "a JSON value");
    return NULL;
}

/* "outputs": [{"name"}]: which declared outputs to answer. */
static loom_error *read_outputs(dec *d)
{
    const model_spec *m = d->m;
    if (!eat(d, '['))
        return loom_err(LOOM_E_INVALID, "outputs: expected an array of {\"name\"}");
    if (eat(d, ']'))
        return NULL;
    int i = 0;
    do {
        output_name o = {NULL, 0};
        if (!eat(d, '{'))
            return loom_err(LOOM_E_INVALID, "outputs[%d]: expected {\"name\"}", i);
        loom_error *e = each_field(d, output_field, &o);
        if (e)
            return e;
        const char *v = o.v;
        size_t vn = o.vn;
        int at = v ? find_decl(m->outputs, m->noutputs, v, vn) : -1;
        char names[512];
        if (at < 0)
            return loom_err(LOOM_E_INVALID, "outputs[%d]: no output is named \"%.*s\" (the "
                            "model declares %s)", i, (int)(vn < 64 ? vn : 64), v ? v : "",
                            m->noutputs ? decl_names(m->outputs, m->noutputs, names, sizeof names)
                                        : "none");
        d->out->outputs_wanted |= 1u << at;
        i++;
    } while (eat(d, ','));
    return eat(d, ']') ? NULL : syntax(d, "',' or ']' closing outputs");
}

static loom_error *read_id(dec *d)
{
    const char *v;
    size_t n;
    int esc;
    if (string(d, &v, &n, &esc) != 0)
        return loom_err(LOOM_E_INVALID, "id: expected a string");
    if (n > V2_ID_MAX)
        return loom_err(LOOM_E_TOO_LARGE, "id: %zu bytes, more than %d (the limit)", n,
                        V2_ID_MAX);
    memcpy(d->out->id, v, n); /* its JSON text: echoed back as it came */
    d->out->id[n] = '\0';
    d->out->has_id = 1;
    return NULL;
}

/* One field of the request. */
static loom_error *request_field(dec *d, const char *k, size_t kn, void *arg)
{
    int *inputs = arg;
    if (key_is(k, kn, "inputs") && !*inputs) {
        *inputs = 1;
        return read_inputs(d);
    }
    if (key_is(k, kn, "outputs"))
        return read_outputs(d);
    if (key_is(k, kn, "id"))
        return read_id(d);
    return skip_value(d, 0) == 0 ? NULL : syntax(d, "a JSON value");
}

static loom_error *read_request(dec *d)
{
    if (!eat(d, '{'))
        return syntax(d, "a JSON object {\"inputs\": [...]}");
    int inputs = 0;
    loom_error *e = each_field(d, request_field, &inputs);
    if (e)
        return e;
    ws(d);
    if (d->p != d->end)
        return syntax(d, "the end of the body");
    char names[512];
    for (int i = 0; i < d->m->ninputs; i++)
        if (!d->seen[i])
            return loom_err(LOOM_E_INVALID, "inputs: \"%s\" is missing (the model declares %s)",
                            d->m->inputs[i].name,
                            decl_names(d->m->inputs, d->m->ninputs, names, sizeof names));
    return NULL;
}

loom_error *v2_decode(const model_spec *m, const char *body, size_t len, v2_request *out)
{
    out->id[0] = '\0';
    out->has_id = 0;
    out->outputs_wanted = 0;
    dec d = {.p = body, .end = body + len, .start = body, .m = m, .out = out};
    if (v2_pack_begin(&out->pack, m->inputs, (uint32_t)m->ninputs) != 0)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    return read_request(&d);
}
