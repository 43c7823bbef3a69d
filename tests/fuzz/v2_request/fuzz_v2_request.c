/*
 * fuzz_v2_request.c - libFuzzer target for the host's Open Inference
 * Protocol v2 decoder (host/infer/v2_codec.h), which reads every v2
 * model's request body before any kernel sees it. The input is decoded
 * against a model declaring x FP64 [-1] and idx INT32 [2, -1]. A refusal
 * must carry a message and an invalid or too-large code; an accepted
 * request's pack must read back with both inputs as declared (shapes
 * within the declaration, nbytes = elements x size), and encode as an
 * answer.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "infer/v2_codec.h"

static model_spec *model(void)
{
    static model_spec *m;
    if (m)
        return m;
    m = calloc(1, sizeof *m);
    strcpy(m->name, "fuzz");
    m->protocol = MODEL_PROTOCOL_V2;
    m->ninputs = 2;
    m->inputs[0] = (model_tensor){.name = "x", .dtype = LOOM_DTYPE_F64, .ndim = 1, .shape = {-1}};
    m->inputs[1] = (model_tensor){.name = "idx", .dtype = LOOM_DTYPE_I32, .ndim = 2,
                                  .shape = {2, -1}};
    return m;
}

static void check_pack(const model_spec *m, const v2_request *r)
{
    loom_tensor_view v[MODEL_TENSOR_LIMIT];
    uint32_t n = 0;
    if (v2_pack_read(r->pack.data, r->pack.len, v, MODEL_TENSOR_LIMIT, &n) != 0 ||
        n != (uint32_t)m->ninputs)
        abort();
    for (uint32_t i = 0; i < n; i++) {
        const model_tensor *t = &m->inputs[i];
        if (strcmp(v[i].name, t->name) != 0 || v[i].dtype != t->dtype || v[i].ndim != t->ndim)
            abort();
        for (uint32_t k = 0; k < t->ndim; k++)
            if (t->shape[k] >= 0 && v[i].shape[k] != t->shape[k])
                abort();
    }
    /* the inputs as the kernel's outputs: an answer always encodes */
    size_t size = v2_pack_size(v, n);
    char *out = aligned_alloc(8, (size + 7) & ~(size_t)7);
    v2_pack_write(out, v, n);
    v2_buf json = {0};
    loom_error *e = v2_encode_answer(m, r, out, size, &json);
    if (e)
        abort();
    v2_buf_free(&json);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const model_spec *m = model();
    v2_request r;
    memset(&r, 0, sizeof r);
    loom_error *e = v2_decode(m, (const char *)data, size, &r);
    if (e) {
        int32_t code = loom_err_code(e);
        const char *message = loom_err_message(e);
        if ((code != LOOM_E_INVALID && code != LOOM_E_TOO_LARGE) || !message || !message[0])
            abort();
        loom_err_free(e);
    } else {
        check_pack(m, &r);
    }
    v2_request_free(&r);
    return 0;
}
