/* infer/model_spec_tensors.c - model.json's declared inputs and outputs
 * (see model_spec_tensors in model_spec.h). */
#include "infer/model_spec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plugin/dtype_names.h"
#include "plugin/ffi_call.h"

/* One declaration {"name", "datatype", "shape"} of `field`[i]. */
static loom_error *read_tensor(const cJSON *item, const char *field, int i, model_tensor *t)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "datatype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    if (!cJSON_IsObject(item) || !cJSON_IsString(name) || !name->valuestring[0] ||
        strlen(name->valuestring) >= MODEL_TENSOR_NAME_MAX || strpbrk(name->valuestring, "\"\\"))
        return loom_err(LOOM_E_INVALID, "model.json: %s[%d]: expected {\"name\": 1-%d characters "
                        "without quotes or backslashes, \"datatype\", \"shape\"}", field, i,
                        MODEL_TENSOR_NAME_MAX - 1);
    snprintf(t->name, sizeof t->name, "%s", name->valuestring);
    t->dtype = cJSON_IsString(type) ? dtype_parse(type->valuestring,
                                                        strlen(type->valuestring)) : -1;
    if (t->dtype < 0)
        return loom_err(LOOM_E_INVALID, "model.json: %s[%d] (\"%s\"): datatype: expected "
                        DTYPE_NAME_LIST, field, i, t->name);
    int n = cJSON_GetArraySize(shape);
    if (!cJSON_IsArray(shape) || n > LOOM_MAX_DIMS)
        return loom_err(LOOM_E_INVALID, "model.json: %s[%d] (\"%s\"): shape: expected an array "
                        "of at most %d dimensions", field, i, t->name, LOOM_MAX_DIMS);
    t->ndim = (uint32_t)n;
    for (int d = 0; d < n; d++) {
        double v = cJSON_GetArrayItem(shape, d)->valuedouble;
        if (!cJSON_IsNumber(cJSON_GetArrayItem(shape, d)) || v != floor(v) || v < -1 ||
            v > (double)INT32_MAX)
            return loom_err(LOOM_E_INVALID, "model.json: %s[%d] (\"%s\"): shape[%d]: expected -1 "
                            "(any size) or a whole number from 0 to %d", field, i, t->name, d,
                            INT32_MAX);
        t->shape[d] = (int64_t)v;
    }
    return NULL;
}

static loom_error *read_tensors(const cJSON *root, const char *field, model_tensor *out, int *n)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, field);
    *n = 0;
    if (!a || cJSON_IsNull(a))
        return NULL;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > MODEL_TENSOR_LIMIT)
        return loom_err(LOOM_E_INVALID, "model.json: %s: expected an array of at most %d "
                        "{\"name\", \"datatype\", \"shape\"}", field, MODEL_TENSOR_LIMIT);
    const cJSON *item;
    cJSON_ArrayForEach(item, a) {
        loom_error *e = read_tensor(item, field, *n, &out[*n]);
        if (e)
            return e;
        for (int k = 0; k < *n; k++)
            if (strcmp(out[k].name, out[*n].name) == 0)
                return loom_err(LOOM_E_INVALID, "model.json: %s: \"%s\" is declared twice",
                                field, out[k].name);
        (*n)++;
    }
    return NULL;
}

/* An ffi model's signature pointer as a declared tensor. */
static void ffi_tensor(const ffi_sig_param *p, const char *fallback, int64_t size,
                       model_tensor *t)
{
    snprintf(t->name, sizeof t->name, "%s", p->name[0] ? p->name : fallback);
    t->dtype = ffi_sig_type_dtype(p->type);
    t->ndim = 1;
    t->shape[0] = size;
}

/* The declared input an ffi model's `in` parameter binds to (by its name,
 * or the only one) must be of the parameter's type. */
static loom_error *ffi_check_input(const model_spec *m, const ffi_sig_param *p)
{
    const char *name = p->name[0] ? p->name : "input";
    const model_tensor *t = NULL;
    for (int i = 0; i < m->ninputs && !t; i++)
        if (strcmp(m->inputs[i].name, name) == 0)
            t = &m->inputs[i];
    if (!t && m->ninputs == 1)
        t = &m->inputs[0];
    if (!t)
        return loom_err(LOOM_E_INVALID, "model.json: inputs: none is named \"%s\", the ffi "
                        "signature's input parameter (declare it, or one input alone)", name);
    if (t->dtype != ffi_sig_type_dtype(p->type))
        return loom_err(LOOM_E_INVALID, "model.json: inputs: \"%s\" is %s, the ffi signature's "
                        "parameter takes %s (expected %s)", t->name, dtype_name(t->dtype),
                        ffi_sig_type_name(p->type), dtype_name(ffi_sig_type_dtype(p->type)));
    return NULL;
}

/* An ffi model's inputs and outputs, from its signature unless declared
 * (then its input is checked against the signature). */
static loom_error *ffi_tensors(const cJSON *root, model_spec *out)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "ffi");
    const cJSON *sig_text = cJSON_GetObjectItemCaseSensitive(f, "signature");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "output_size");
    ffi_signature sig;
    loom_error *e = ffi_sig_parse(cJSON_IsString(sig_text) ? sig_text->valuestring : "", &sig);
    if (e) { /* the ffi check names it */
        loom_err_free(e);
        return NULL;
    }
    int declared = out->ninputs || out->noutputs;
    for (int i = 0; declared && i < sig.nargs; i++)
        if (sig.args[i].dir == FFI_SIG_IN || sig.args[i].dir == FFI_SIG_INOUT)
            return ffi_check_input(out, &sig.args[i]);
    int64_t out_size = cJSON_IsNumber(size) ? (int64_t)size->valuedouble : -1;
    for (int i = 0; !declared && i < sig.nargs; i++) {
        const ffi_sig_param *p = &sig.args[i];
        if ((p->dir == FFI_SIG_IN || p->dir == FFI_SIG_INOUT) &&
            out->ninputs < 1)
            ffi_tensor(p, "input", -1, &out->inputs[out->ninputs++]);
        if ((p->dir == FFI_SIG_OUT || p->dir == FFI_SIG_INOUT) && out->noutputs < 1)
            ffi_tensor(p, "output", out_size, &out->outputs[out->noutputs++]);
    }
    return NULL;
}

loom_error *model_spec_tensors(const cJSON *root, model_spec *out)
{
    const cJSON *proto = cJSON_GetObjectItemCaseSensitive(root, "protocol");
    int raw = 0;
    if (proto && !cJSON_IsNull(proto)) {
        const char *p = cJSON_IsString(proto) ? proto->valuestring : "";
        if (strcmp(p, "raw") != 0 && strcmp(p, "v2") != 0)
            return loom_err(LOOM_E_INVALID, "model.json: protocol: expected \"v2\" (the Open "
                            "Inference Protocol, decoded by the host) or \"raw\" (the body as "
                            "it is)");
        raw = strcmp(p, "raw") == 0;
    }
    loom_error *e = read_tensors(root, "inputs", out->inputs, &out->ninputs);
    if (!e)
        e = read_tensors(root, "outputs", out->outputs, &out->noutputs);
    if (e)
        return e;
    if (out->runtime == MODEL_RUNTIME_NATIVE && (out->ninputs || out->noutputs))
        return loom_err(LOOM_E_INVALID, "model.json: inputs: runtime \"native\" decodes its "
                        "own v2 requests (its shapes come from its training); declare none");
    if (out->runtime == MODEL_RUNTIME_FFI && (e = ffi_tensors(root, out)) != NULL)
        return e;
    if (!raw && !out->ninputs && proto && !cJSON_IsNull(proto))
        return loom_err(LOOM_E_INVALID, "model.json: protocol \"v2\" needs declared inputs "
                        "(\"inputs\": [{\"name\", \"datatype\", \"shape\"}])");
    out->protocol = !raw && out->ninputs ? MODEL_PROTOCOL_V2 : MODEL_PROTOCOL_RAW;
    return NULL;
}
