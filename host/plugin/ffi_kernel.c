/*
 * plugin/ffi_kernel.c - the built-in "ffi" inference kernel: serves one
 * plain C function from a library in the model directory, called through
 * libffi (ffi_function.c), as a loom.kernel/1 factory.
 *
 * model.json (WMLA shape):
 *   "runtime": "ffi",
 *   "ffi": {"library": "libvecmath.so",        relative to the model dir
 *           "symbol": "scale_add",
 *           "signature": "int32(ptr f32 in x, i64 n, ptr f32 out y)",
 *           "output_size": "n"}                 "n" (default) or a number
 *
 * Mapping of one request, decided once at load_model:
 *   a v2 model's request (the default: the host decodes it, README
 *   "Serving") binds the input named after the `in` parameter (the only
 *   input, when there is one) to it, of the parameter's type, and answers
 *   the `out` buffer as one output tensor; a raw model's ("protocol":
 *   "raw") body {"inputs": [numbers...]}; the `in` pointer gets the inputs converted
 *   to its element type; every by-value integer parameter gets the input
 *   length; the `out` pointer gets a zeroed buffer of output_size elements
 *   (an `inout` pointer instead carries the inputs in and the outputs back);
 *   an integer return other than 0 fails the request with that code; the
 *   response is {"outputs": [...]}.
 * A bad request fails alone with LOOM_ERR_INVALID_ARGUMENT and a body
 * {"error": "..."}; the rest of the batch is served.
 */
#include "plugin/ffi_call.h"

#include <cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"
#include "util/log.h"

/* Bounds a numeric output_size so a typo cannot ask for gigabytes. */
#define FFI_KERNEL_MAX_OUTPUT_SIZE (1 << 24)
#define FFI_KERNEL_LOG "ffi"

typedef enum arg_role {
    ROLE_INPUT,  /* 'ptr T in': the request's inputs */
    ROLE_OUTPUT, /* 'ptr T out': zeroed, read back as outputs */
    ROLE_INOUT,  /* 'ptr T inout': inputs in, outputs back */
    ROLE_LENGTH  /* by-value integer: the number of inputs */
} arg_role;

struct loom_kernel_model {
    ffi_function *fn;
    char symbol[128];
    arg_role roles[FFI_SIG_MAX_ARGS];
    int input_arg;       /* index of the in (or inout) pointer */
    int output_arg;      /* index of the out (or inout) pointer */
    int64_t output_size; /* elements; -1 means "as many as the inputs" */
};

struct loom_kernel_instance {
    loom_kernel_model *model;
    /* Scratch buffers kept between batches so a request does not allocate
     * for its data once the sizes have been seen. */
    void *input;
    size_t input_cap;
    void *output;
    size_t output_cap;
    char *reply;
    size_t reply_cap;
};

/* ---- load_model -------------------------------------------------------- */

/* The whole file as a NUL-terminated string, or NULL with *error set. */
static char *read_text_file(const char *path, loom_error **error)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *error = loom_err(LOOM_ERR_NOT_FOUND, "ffi kernel: cannot open '%s': %s", path,
                          strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *grown = realloc(text, cap);
            if (!grown) {
                *error = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                                  "ffi kernel: out of memory reading '%s'", path);
                free(text);
                fclose(f);
                return NULL;
            }
            text = grown;
        }
        size_t got = fread(text + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        *error = loom_err(LOOM_ERR_UNAVAILABLE, "ffi kernel: cannot read '%s'", path);
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

/* A required non-empty string member of `obj`, or NULL with err set. */
static const char *json_string(const cJSON *obj, const char *key, char *err,
                               size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(item) || !item->valuestring[0]) {
        snprintf(err, errlen, "model.json: ffi.%s must be a non-empty string%s", key,
                 item ? "" : " (missing)");
        return NULL;
    }
    return item->valuestring;
}

static int parse_output_size(const cJSON *ffi, int64_t *out, char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(ffi, "output_size");
    if (!item || (cJSON_IsString(item) && strcmp(item->valuestring, "n") == 0)) {
        *out = -1;
        return 0;
    }
    if (cJSON_IsNumber(item)) {
        double v = item->valuedouble;
        if (v >= 1 && v <= FFI_KERNEL_MAX_OUTPUT_SIZE && v == (double)(int64_t)v) {
            *out = (int64_t)v;
            return 0;
        }
    }
    char *text = cJSON_PrintUnformatted(item);
    snprintf(err, errlen,
             "model.json: ffi.output_size must be \"n\" (as many outputs as inputs) "
             "or a whole number from 1 to %d, got %s",
             FFI_KERNEL_MAX_OUTPUT_SIZE, text ? text : "?");
    free(text);
    return -1;
}

static void describe_param(const ffi_signature *sig, int i, char *buf, size_t len)
{
    const ffi_sig_param *p = &sig->args[i];
    static const char *const dirs[] = {"", "ptr %s in", "ptr %s out", "ptr %s inout"};
    char type[32];
    if (p->dir == FFI_SIG_VALUE)
        snprintf(type, sizeof type, "%s", ffi_sig_type_name(p->type));
    else
        snprintf(type, sizeof type, dirs[p->dir], ffi_sig_type_name(p->type));
    if (p->name[0])
        snprintf(buf, len, "parameter %d ('%s', %s)", i + 1, p->name, type);
    else
        snprintf(buf, len, "parameter %d (%s)", i + 1, type);
}

/* Decides each parameter's role; refuses what a request cannot fill. */
static int map_signature(loom_kernel_model *m, const ffi_signature *sig,
                         const char *text, char *err, size_t errlen)
{
    if (sig->ret != FFI_SIG_void && !ffi_sig_type_is_integer(sig->ret)) {
        snprintf(err, errlen,
                 "model.json: ffi.signature '%s': return type %s cannot be mapped; the "
                 "ffi kernel reads an integer status (0 = success) or void",
                 text, ffi_sig_type_name(sig->ret));
        return -1;
    }
    int in = -1, out = -1, inout = -1;
    for (int i = 0; i < sig->nargs; i++) {
        const ffi_sig_param *p = &sig->args[i];
        char what[96];
        describe_param(sig, i, what, sizeof what);
        int *slot = NULL;
        const char *dir = NULL;
        switch (p->dir) {
        case FFI_SIG_VALUE:
            if (!ffi_sig_type_is_integer(p->type)) {
                snprintf(err, errlen,
                         "model.json: ffi.signature '%s': %s cannot be mapped; the ffi "
                         "kernel passes only the input length by value, to integer "
                         "parameters",
                         text, what);
                return -1;
            }
            m->roles[i] = ROLE_LENGTH;
            continue;
        case FFI_SIG_IN: slot = &in, dir = "in", m->roles[i] = ROLE_INPUT; break;
        case FFI_SIG_OUT: slot = &out, dir = "out", m->roles[i] = ROLE_OUTPUT; break;
        case FFI_SIG_INOUT:
            slot = &inout, dir = "inout", m->roles[i] = ROLE_INOUT;
            break;
        }
        if (*slot >= 0) {
            snprintf(err, errlen,
                     "model.json: ffi.signature '%s': %s is a second '%s' pointer "
                     "(parameter %d is the first); the ffi kernel maps a request to "
                     "exactly one",
                     text, what, dir, *slot + 1);
            return -1;
        }
        *slot = i;
    }
    if (inout >= 0 && (in >= 0 || out >= 0)) {
        snprintf(err, errlen,
                 "model.json: ffi.signature '%s': an 'inout' pointer cannot be combined "
                 "with 'in' or 'out' pointers",
                 text);
        return -1;
    }
    if (inout >= 0) {
        if (m->output_size >= 0) {
            snprintf(err, errlen,
                     "model.json: ffi.output_size must be \"n\" when the outputs come "
                     "back through the 'inout' pointer of signature '%s'",
                     text);
            return -1;
        }
        m->input_arg = m->output_arg = inout;
        return 0;
    }
    if (in < 0 || out < 0) {
        snprintf(err, errlen,
                 "model.json: ffi.signature '%s': no '%s' pointer; the ffi kernel needs "
                 "one 'ptr T in' for the inputs and one 'ptr T out' for the outputs (or "
                 "a single 'ptr T inout')",
                 text, in < 0 ? "in" : "out");
        return -1;
    }
    m->input_arg = in;
    m->output_arg = out;
    return 0;
}

static loom_error *ffi_load_model(const loom_kernel_factory *self,
                                  const loom_kernel_model_config *config,
                                  loom_kernel_model **out)
{
    (void)self;
    if (!out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: no output pointer");
    *out = NULL;
    if (!config || config->struct_size < offsetof(loom_kernel_model_config, model_json) +
                                             sizeof config->model_json)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "ffi kernel: model config missing or too small");
    if (!config->model_dir || !config->model_dir[0])
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: no model directory");

    char err[1024];
    char *owned_text = NULL;
    const char *text = config->model_json;
    if (!text) {
        char *path = NULL;
        if (asprintf(&path, "%s/model.json", config->model_dir) < 0)
            return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "ffi kernel: out of memory");
        loom_error *read_error = NULL;
        text = owned_text = read_text_file(path, &read_error);
        free(path);
        if (!text)
            return read_error;
    }
    cJSON *root = cJSON_Parse(text);
    free(owned_text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "ffi kernel: model.json in '%s' is not a JSON object",
                        config->model_dir);
    }

    loom_error *error = NULL;
    loom_kernel_model *m = calloc(1, sizeof *m);
    if (!m) {
        cJSON_Delete(root);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "ffi kernel: out of memory");
    }
    const cJSON *runtime = cJSON_GetObjectItemCaseSensitive(root, "runtime");
    if (runtime && !(cJSON_IsString(runtime) && strcmp(runtime->valuestring, "ffi") == 0)) {
        error = loom_err(LOOM_ERR_INVALID_ARGUMENT,
                         "ffi kernel: model.json: runtime must be \"ffi\", got %s",
                         cJSON_IsString(runtime) ? runtime->valuestring : "a non-string");
        goto done;
    }
    const cJSON *ffi = cJSON_GetObjectItemCaseSensitive(root, "ffi");
    if (!cJSON_IsObject(ffi)) {
        error = loom_err(LOOM_ERR_INVALID_ARGUMENT,
                         "ffi kernel: model.json: \"ffi\" must be an object with library, "
                         "symbol and signature");
        goto done;
    }
    const char *library = json_string(ffi, "library", err, sizeof err);
    const char *symbol = library ? json_string(ffi, "symbol", err, sizeof err) : NULL;
    const char *signature = symbol ? json_string(ffi, "signature", err, sizeof err) : NULL;
    if (!signature || parse_output_size(ffi, &m->output_size, err, sizeof err) != 0) {
        error = loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: %s", err);
        goto done;
    }
    snprintf(m->symbol, sizeof m->symbol, "%s", symbol);

    /* Map before opening, so an unusable signature is named without the
     * library being loaded at all. */
    ffi_signature sig;
    loom_error *bad = ffi_sig_parse(signature, &sig);
    if (bad) {
        error = loom_err(LOOM_E_INVALID, "ffi kernel: model.json: ffi.%s", loom_err_message(bad));
        loom_err_free(bad);
        goto done;
    }
    if (map_signature(m, &sig, signature, err, sizeof err) != 0) {
        error = loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: %s", err);
        goto done;
    }

    char *path = NULL;
    if (asprintf(&path, "%s%s%s", library[0] == '/' ? "" : config->model_dir,
                 library[0] == '/' ? "" : "/", library) < 0) {
        error = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "ffi kernel: out of memory");
        goto done;
    }
    const char *const allowed[] = {config->model_dir, NULL};
    error = ffi_function_open(path, symbol, signature, allowed, &m->fn);
    free(path);
    if (error) {
        loom_err_wrap(error, "ffi kernel: model.json: ffi");
        goto done;
    }
    log_msg(LOG_INFO, FFI_KERNEL_LOG, "loaded %s from %s in %s as %s", symbol, library,
            config->model_dir, signature);

done:
    cJSON_Delete(root);
    if (error) {
        ffi_function_close(m->fn);
        free(m);
        return error;
    }
    *out = m;
    return NULL;
}

static void ffi_unload_model(loom_kernel_model *model)
{
    if (!model)
        return;
    ffi_function_close(model->fn);
    free(model);
}

static loom_error *ffi_create_instance(loom_kernel_model *model, const loom_device *device,
                                       loom_kernel_instance **out)
{
    if (!model || !out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: no model or output pointer");
    *out = NULL;
    if (device && device->kind != LOOM_DEVICE_CPU)
        return loom_err(LOOM_ERR_UNSUPPORTED,
                        "ffi kernel: %s runs on the CPU only (device kind %d requested)",
                        model->symbol, (int)device->kind);
    loom_kernel_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "ffi kernel: out of memory");
    inst->model = model;
    *out = inst;
    return NULL;
}

static void ffi_destroy_instance(loom_kernel_instance *inst)
{
    if (!inst)
        return;
    free(inst->input);
    free(inst->output);
    free(inst->reply);
    free(inst);
}

/* ---- execute ------------------------------------------------------------ */

static void respond(loom_infer_request *req, int32_t status, const char *body)
{
    loom_error *e = req->respond(req, status, "application/json", (const uint8_t *)body,
                                 body ? strlen(body) : 0);
    if (e) {
        log_msg(LOG_WARN, FFI_KERNEL_LOG, "request %llu: answer refused: %s",
                (unsigned long long)req->id, loom_err_message(e));
        loom_err_free(e);
    }
}

static void respond_error(loom_infer_request *req, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void respond_error(loom_infer_request *req, int32_t status, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    cJSON *obj = cJSON_CreateObject();
    char *body = NULL;
    if (obj && cJSON_AddStringToObject(obj, "error", message))
        body = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    /* Without memory for JSON, the status alone still fails the request. */
    respond(req, status, body ? body : "{}");
    free(body);
}

/* Grows a scratch buffer to `size` bytes (at least one element, so a
 * pointer parameter is never NULL). */
static int reserve(void **buf, size_t *cap, size_t size)
{
    if (size <= *cap)
        return 0;
    void *grown = realloc(*buf, size);
    if (!grown)
        return -1;
    *buf = grown;
    *cap = size;
    return 0;
}

static const char *json_kind(const cJSON *item)
{
    if (cJSON_IsString(item))
        return "a string";
    if (cJSON_IsBool(item))
        return "a boolean";
    if (cJSON_IsNull(item))
        return "null";
    if (cJSON_IsArray(item))
        return "an array";
    if (cJSON_IsObject(item))
        return "an object";
    return "not a number";
}

/* {"outputs":[...]} in the instance's reply buffer. Written directly rather
 * than through cJSON, whose printer formats every number twice and scans it
 * back: that dominated the time of a large response. */
static const char *format_outputs(loom_kernel_instance *inst, ffi_sig_type type,
                                  const void *data, size_t count)
{
    static const char head[] = "{\"outputs\":[", tail[] = "]}";
    size_t need = sizeof head + count * (FFI_SIG_JSON_MAX + 1) + sizeof tail;
    void *buf = inst->reply;
    if (reserve(&buf, &inst->reply_cap, need) != 0)
        return NULL;
    inst->reply = buf;
    size_t elem = ffi_sig_type_size(type), at = sizeof head - 1;
    memcpy(inst->reply, head, at);
    for (size_t k = 0; k < count; k++) {
        if (k)
            inst->reply[at++] = ',';
        int n = ffi_sig_value_format_json(type, (const char *)data + k * elem,
                                          inst->reply + at, FFI_SIG_JSON_MAX);
        if (n < 0)
            return NULL;
        at += (size_t)n;
    }
    memcpy(inst->reply + at, tail, sizeof tail);
    return inst->reply;
}

/* {"inputs": [numbers...]} (a raw model's body) into the instance's input
 * buffer; *n the count. -1 when the request was answered (refused). */
static int read_json_inputs(loom_kernel_instance *inst, loom_infer_request *req,
                            ffi_sig_type in_type, size_t *n)
{
    const char *expected = "expected {\"inputs\": [numbers...]}";
    if (!req->body || req->body_len == 0) {
        respond_error(req, LOOM_ERR_INVALID_ARGUMENT, "request body is empty; %s", expected);
        return -1;
    }
    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)req->body, (size_t)req->body_len,
                                            &parse_end, 0);
    if (!root) {
        size_t at = parse_end ? (size_t)(parse_end - (const char *)req->body) : 0;
        respond_error(req, LOOM_ERR_INVALID_ARGUMENT,
                      "request body is not valid JSON (at byte %zu); %s", at, expected);
        return -1;
    }
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(root, "inputs");
    if (!cJSON_IsObject(root) || !cJSON_IsArray(inputs)) {
        respond_error(req, LOOM_ERR_INVALID_ARGUMENT, "request body has no \"inputs\" array; %s",
                      expected);
        cJSON_Delete(root);
        return -1;
    }
    *n = 0;
    for (const cJSON *it = inputs->child; it; it = it->next)
        (*n)++;
    size_t in_size = ffi_sig_type_size(in_type);
    if (reserve(&inst->input, &inst->input_cap, (*n ? *n : 1) * in_size) != 0) {
        respond_error(req, LOOM_ERR_RESOURCE_EXHAUSTED, "no memory for %zu inputs", *n);
        cJSON_Delete(root);
        return -1;
    }
    size_t i = 0;
    for (const cJSON *it = inputs->child; it; it = it->next, i++) {
        if (!cJSON_IsNumber(it)) {
            respond_error(req, LOOM_ERR_INVALID_ARGUMENT, "inputs[%zu] is %s, expected a number",
                          i, json_kind(it));
            cJSON_Delete(root);
            return -1;
        }
        if (ffi_sig_value_from_double(in_type, it->valuedouble,
                                      (char *)inst->input + i * in_size) != 0) {
            respond_error(req, LOOM_ERR_INVALID_ARGUMENT,
                          "inputs[%zu] = %.15g cannot be represented as %s", i,
                          it->valuedouble, ffi_sig_type_name(in_type));
            cJSON_Delete(root);
            return -1;
        }
    }
    cJSON_Delete(root);
    return 0;
}

/* A v2 request's decoded input bound to the `in` parameter: the tensor of
 * its name (the only one when the model has one input) into the
 * instance's input buffer. -1 when the request was answered (refused). */
static int read_tensor_inputs(loom_kernel_instance *inst, loom_infer_request *req,
                              const ffi_sig_param *param, size_t *n)
{
    const char *name = param->name[0] ? param->name : "input";
    const loom_tensor_view *t = NULL;
    for (uint32_t i = 0; i < req->input_count && !t; i++)
        if (req->inputs[i].name && strcmp(req->inputs[i].name, name) == 0)
            t = &req->inputs[i];
    if (!t && req->input_count == 1)
        t = &req->inputs[0];
    if (!t) {
        respond_error(req, LOOM_ERR_INVALID_ARGUMENT, "no input named \"%s\" (the parameter "
                      "the function takes its data by)", name);
        return -1;
    }
    if (t->dtype != ffi_sig_type_dtype(param->type)) {
        respond_error(req, LOOM_ERR_INVALID_ARGUMENT, "input \"%s\": its datatype is not the "
                      "parameter's %s", t->name, ffi_sig_type_name(param->type));
        return -1;
    }
    size_t in_size = ffi_sig_type_size(param->type);
    *n = (size_t)(t->nbytes / in_size);
    if (reserve(&inst->input, &inst->input_cap, t->nbytes ? (size_t)t->nbytes : 1) != 0) {
        respond_error(req, LOOM_ERR_RESOURCE_EXHAUSTED, "no memory for %zu inputs", *n);
        return -1;
    }
    if (t->nbytes)
        memcpy(inst->input, t->data, (size_t)t->nbytes);
    return 0;
}

/* The outputs answered as one tensor (a v2 model's) or {"outputs": [...]}. */
static void answer_outputs(loom_kernel_instance *inst, loom_infer_request *req, int tensors,
                           ffi_sig_type out_type, const void *output, size_t m_out)
{
    if (tensors) {
        loom_tensor_view view = {.struct_size = sizeof view,
                                 .dtype = ffi_sig_type_dtype(out_type), .ndim = 1,
                                 .shape = {(int64_t)m_out}, .data = (void *)output,
                                 .nbytes = m_out * ffi_sig_type_size(out_type)};
        loom_error *e = req->respond_tensors(req, &view, 1);
        if (e) {
            log_msg(LOG_WARN, FFI_KERNEL_LOG, "request %llu: answer refused: %s",
                    (unsigned long long)req->id, loom_err_message(e));
            loom_err_free(e);
        }
        return;
    }
    const char *body = format_outputs(inst, out_type, output, m_out);
    if (!body) {
        respond_error(req, LOOM_ERR_RESOURCE_EXHAUSTED, "no memory for the response");
        return;
    }
    respond(req, 0, body);
}

static void execute_one(loom_kernel_instance *inst, loom_infer_request *req)
{
    const loom_kernel_model *m = inst->model;
    const ffi_signature *sig = ffi_function_signature(m->fn);
    const ffi_sig_type in_type = sig->args[m->input_arg].type;
    const ffi_sig_type out_type = sig->args[m->output_arg].type;
    int tensors = LOOM_STRUCT_HAS(req, loom_infer_request, respond_tensors) &&
                  req->input_count > 0 && req->respond_tensors;
    size_t n = 0;
    if ((tensors ? read_tensor_inputs(inst, req, &sig->args[m->input_arg], &n)
                 : read_json_inputs(inst, req, in_type, &n)) != 0)
        return;
    size_t m_out = m->output_size < 0 ? n : (size_t)m->output_size;
    size_t out_size = ffi_sig_type_size(out_type);
    int shared = m->input_arg == m->output_arg;
    if (!shared && reserve(&inst->output, &inst->output_cap, (m_out ? m_out : 1) * out_size) != 0) {
        respond_error(req, LOOM_ERR_RESOURCE_EXHAUSTED, "no memory for %zu outputs", m_out);
        return;
    }

    /* Every argument lives in its own slot; args[] points at the slots. */
    ffi_sig_value values[FFI_SIG_MAX_ARGS];
    void *pointers[FFI_SIG_MAX_ARGS];
    void *args[FFI_SIG_MAX_ARGS];
    void *output = shared ? inst->input : inst->output;
    if (!shared)
        memset(output, 0, m_out * out_size);
    for (int a = 0; a < sig->nargs; a++) {
        switch (m->roles[a]) {
        case ROLE_INPUT:
        case ROLE_INOUT: pointers[a] = inst->input, args[a] = &pointers[a]; break;
        case ROLE_OUTPUT: pointers[a] = inst->output, args[a] = &pointers[a]; break;
        case ROLE_LENGTH:
            if (ffi_sig_value_from_double(sig->args[a].type, (double)n, &values[a]) != 0) {
                char what[96];
                describe_param(sig, a, what, sizeof what);
                respond_error(req, LOOM_ERR_INVALID_ARGUMENT,
                              "%zu inputs: the length does not fit %s of %s", n, what,
                              m->symbol);
                return;
            }
            args[a] = &values[a];
            break;
        }
    }

    int64_t status = 0;
    ffi_function_call(m->fn, args, sig->ret == FFI_SIG_void ? NULL : &status);
    if (status != 0) {
        respond_error(req, LOOM_ERR_INTERNAL, "%s returned %lld (0 means success)", m->symbol,
                      (long long)status);
        return;
    }

    answer_outputs(inst, req, tensors, out_type, output, m_out);
}

static loom_error *ffi_execute(loom_kernel_instance *inst,
                               loom_infer_request *const *requests, uint32_t count)
{
    if (!inst || (!requests && count))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "ffi kernel: no instance or requests");
    for (uint32_t r = 0; r < count; r++) {
        loom_infer_request *req = requests[r];
        /* A request the host could not answer through is skipped; the host
         * fails whatever is left unanswered. */
        if (!req || !req->respond)
            continue;
        execute_one(inst, req);
    }
    return NULL;
}

static const loom_kernel_factory ffi_factory = {
    .struct_size = sizeof(loom_kernel_factory),
    .load_model = ffi_load_model,
    .unload_model = ffi_unload_model,
    .create_instance = ffi_create_instance,
    .destroy_instance = ffi_destroy_instance,
    .execute = ffi_execute,
};

const loom_kernel_factory *ffi_kernel_factory(void)
{
    return &ffi_factory;
}
