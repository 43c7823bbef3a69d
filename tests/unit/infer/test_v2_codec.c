/* test_v2_codec.c - the Open Inference Protocol v2 codec: requests decoded
 * against a model's declaration (every refusal names the input and what
 * was expected), the shorthand, nested data, the limits, the tensor pack
 * both ways, and the answer's and the metadata's JSON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "infer/v2_codec.h"

static model_spec *model;

static void declare(model_tensor *t, const char *name, int32_t dtype, uint32_t ndim,
                    const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dtype;
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
}

/* A model "m": inputs x FP64 [-1], idx INT32 [2, -1]; outputs y FP64 [-1],
 * z INT64 [1]; or with x alone (one_input). */
static void setup(int one_input)
{
    memset(model, 0, sizeof *model);
    snprintf(model->name, sizeof model->name, "m");
    model->protocol = MODEL_PROTOCOL_V2;
    declare(&model->inputs[0], "x", LOOM_DTYPE_F64, 1, (int64_t[]){-1});
    declare(&model->inputs[1], "idx", LOOM_DTYPE_I32, 2, (int64_t[]){2, -1});
    model->ninputs = one_input ? 1 : 2;
    declare(&model->outputs[0], "y", LOOM_DTYPE_F64, 1, (int64_t[]){-1});
    declare(&model->outputs[1], "z", LOOM_DTYPE_I64, 1, (int64_t[]){1});
    model->noutputs = 2;
}

static loom_error *decode(const char *body, v2_request *r)
{
    return v2_decode(model, body, strlen(body), r);
}

static void refused(const char *body, int code, const char *needle)
{
    v2_request r = {0};
    loom_error *e = decode(body, &r);
    CHECK_MSG(loom_err_code(e) == code, "%s: code %d (%s)", body, loom_err_code(e),
              e ? loom_err_message(e) : "accepted");
    CHECK_CONTAINS(loom_err_message(e), needle);
    loom_err_free(e);
    v2_request_free(&r);
}

static void decodes_both_inputs(void)
{
    setup(0);
    v2_request r = {0};
    /* datatype after data (read afterwards), nested data, an id, outputs */
    CHECK_OK(decode("{\"id\":\"r-1\",\"inputs\":[{\"name\":\"idx\",\"shape\":[2,2],"
                    "\"data\":[[1,-2],[3,2147483647]],\"datatype\":\"INT32\"},"
                    "{\"name\":\"x\",\"shape\":[3],\"datatype\":\"FP64\",\"data\":[1.5,-2,3e2],"
                    "\"parameters\":{\"a\":[1,{\"b\":null}]}}],\"outputs\":[{\"name\":\"z\"}],"
                    "\"parameters\":{}}", &r));
    CHECK(r.has_id && strcmp(r.id, "r-1") == 0);
    CHECK(r.outputs_wanted == 2u);
    loom_tensor_view v[MODEL_TENSOR_LIMIT];
    uint32_t n = 0;
    CHECK(v2_pack_read(r.pack.data, r.pack.len, v, MODEL_TENSOR_LIMIT, &n) == 0);
    CHECK(n == 2);
    /* in declared order, whatever the request's */
    CHECK_STR_EQ(v[0].name, "x");
    CHECK(v[0].dtype == LOOM_DTYPE_F64 && v[0].ndim == 1 && v[0].shape[0] == 3);
    CHECK(v[0].nbytes == 24 && ((double *)v[0].data)[0] == 1.5 &&
          ((double *)v[0].data)[1] == -2 && ((double *)v[0].data)[2] == 300);
    CHECK_STR_EQ(v[1].name, "idx");
    CHECK(v[1].ndim == 2 && v[1].shape[0] == 2 && v[1].shape[1] == 2 && v[1].nbytes == 16);
    int32_t *idx = v[1].data;
    CHECK(idx[0] == 1 && idx[1] == -2 && idx[2] == 3 && idx[3] == 2147483647);
    v2_request_free(&r);
}

static void refuses_bad_inputs(void)
{
    setup(0);
    const char *x = "{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP64\",\"data\":[1]}";
    char body[512];
    /* the second input, and what its refusal says */
    static const struct {
        const char *input, *says;
    } cases[] = {
        {"\"name\":\"idz\",\"shape\":[2,1],\"datatype\":\"INT32\",\"data\":[1,2]",
         "inputs[1]: no input is named \"idz\" (the model declares \"x\", \"idx\")"},
        {"\"name\":\"idx\",\"shape\":[2,1],\"datatype\":\"FP32\",\"data\":[1,2]",
         "inputs[1] (\"idx\"): datatype: expected INT32 (declared), got FP32"},
        {"\"name\":\"idx\",\"shape\":[2],\"datatype\":\"INT32\",\"data\":[1,2]",
         "inputs[1] (\"idx\"): shape: 1 dimensions, expected 2"},
        {"\"name\":\"idx\",\"shape\":[3,1],\"datatype\":\"INT32\",\"data\":[1,2,3]",
         "inputs[1] (\"idx\"): shape[0]: 3, expected 2 (declared)"},
        {"\"name\":\"idx\",\"shape\":[2,2],\"datatype\":\"INT32\",\"data\":[1,2,3]",
         "inputs[1] (\"idx\"): data: 3 elements, the shape holds 4"},
        {"\"name\":\"idx\",\"shape\":[2,1],\"datatype\":\"INT32\",\"data\":[1,2147483648]",
         "data[1]: expected whole numbers of INT32"},
        {"\"name\":\"idx\",\"shape\":[2,1],\"datatype\":\"INT32\",\"data\":[1,2.5]",
         "inputs[1] (\"idx\"): data[1]: expected whole numbers"},
        {"\"name\":\"idx\",\"shape\":[2,1],\"datatype\":\"INT32\",\"data\":[1,\"2\"]",
         "data[1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "{\"inputs\":[%s,{%s}]}", x, cases[i].input);
        refused(body, LOOM_E_INVALID, cases[i].says);
    }
    snprintf(body, sizeof body, "{\"inputs\":[%s]}", x);
    refused(body, LOOM_E_INVALID, "inputs: \"idx\" is missing");
    snprintf(body, sizeof body, "{\"inputs\":[%s,%s]}", x, x);
    refused(body, LOOM_E_INVALID, "inputs[1] (\"x\"): given twice");
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP16\",\"shape\":[1],\"data\":[1]}]}",
            LOOM_E_INVALID, "datatype \"FP16\": expected BOOL, UINT8");
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"data\":[1]}]}",
            LOOM_E_INVALID, "inputs[0] (\"x\"): shape: missing");
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[1]}]}",
            LOOM_E_INVALID, "inputs[0] (\"x\"): data: missing");
    refused("{\"inputs\":[{\"datatype\":\"FP64\",\"shape\":[1],\"data\":[1]}]}",
            LOOM_E_INVALID, "inputs[0]: name: missing");
    snprintf(body, sizeof body, "{\"inputs\":[%s],\"outputs\":[{\"name\":\"w\"}]}", x);
    refused(body, LOOM_E_INVALID, "outputs[0]: no output is named \"w\" (the model declares "
            "\"y\", \"z\")");
    refused("{\"inputs\":[1,2]}", LOOM_E_INVALID, "one input; this one declares 2");
    refused("not json", LOOM_E_INVALID, "body: not a v2 inference request: at byte 0");
    refused("{\"inputs\":[{\"name\":\"x\"", LOOM_E_INVALID, "not a v2 inference request");
    refused("{\"inputs\":[]} trailing", LOOM_E_INVALID, "the end of the body");
    refused("{\"inputs\":{}}", LOOM_E_INVALID, "inputs: expected an array");
}

static void refuses_past_limits(void)
{
    setup(1);
    /* 2^31 x 2^31 elements overflow 32 bits and pass the request limit */
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[2147483647],"
            "\"data\":[1]}]}", LOOM_E_TOO_LARGE, "exceed 67108864 bytes (the limit of one "
            "request)");
    model->inputs[0].ndim = 2;
    model->inputs[0].shape[1] = -1;
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[2147483647,"
            "2147483647],\"data\":[1]}]}", LOOM_E_TOO_LARGE, "(the limit of one request)");
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[99999999999],"
            "\"data\":[1]}]}", LOOM_E_INVALID, "shape[0]: expected a whole number from 0 to "
            "2147483647");
    refused("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[1,1,1,1,1,1,1,1,1],"
            "\"data\":[1]}]}", LOOM_E_INVALID, "more than 8 dimensions (the limit)");
    setup(1);
    char id[400];
    memset(id, 'a', sizeof id);
    id[sizeof id - 1] = 0;
    char body[600];
    snprintf(body, sizeof body, "{\"id\":\"%s\",\"inputs\":[1]}", id);
    refused(body, LOOM_E_TOO_LARGE, "id: 399 bytes, more than 256 (the limit)");
    /* nesting deeper than the limit */
    char deep[200] = "{\"inputs\":";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    strcat(deep, "1");
    for (int i = 0; i < 40; i++)
        strcat(deep, "]");
    strcat(deep, "}");
    refused(deep, LOOM_E_INVALID, "nested in arrays at most 32 deep");
    /* data larger than the request limit */
    size_t big = V2_PACK_MAX / 2 + 64;
    char *text = malloc(big * 2 + 64);
    size_t at = (size_t)sprintf(text, "{\"inputs\":[");
    for (size_t i = 0; i < V2_PACK_MAX / 8 + 8; i++)
        at += (size_t)sprintf(text + at, i ? ",0" : "0");
    strcpy(text + at, "]}");
    refused(text, LOOM_E_TOO_LARGE, "exceed 67108864 bytes");
    free(text);
}

static void shorthand(void)
{
    setup(1);
    v2_request r = {0};
    CHECK_OK(decode("{\"inputs\":[1.5,2,3]}", &r));
    loom_tensor_view v[MODEL_TENSOR_LIMIT];
    uint32_t n = 0;
    CHECK(v2_pack_read(r.pack.data, r.pack.len, v, MODEL_TENSOR_LIMIT, &n) == 0 && n == 1);
    CHECK(v[0].ndim == 1 && v[0].shape[0] == 3 && ((double *)v[0].data)[2] == 3);
    /* [2, -1] takes its variable dimension from the count, nested or not */
    declare(&model->inputs[0], "x", LOOM_DTYPE_U8, 2, (int64_t[]){2, -1});
    CHECK_OK(decode("{\"inputs\":[[1,2,3],[4,5,255]]}", &r));
    CHECK(v2_pack_read(r.pack.data, r.pack.len, v, MODEL_TENSOR_LIMIT, &n) == 0 && n == 1);
    CHECK(v[0].shape[0] == 2 && v[0].shape[1] == 3 && ((uint8_t *)v[0].data)[5] == 255);
    v2_request_free(&r);
    refused("{\"inputs\":[1,2,3]}", LOOM_E_INVALID, "3 numbers do not fill the shape declared "
            "for \"x\"");
    refused("{\"inputs\":[1,256]}", LOOM_E_INVALID, "data[1]: expected whole numbers of UINT8 "
            "(0 to 255) (this one is out of its range)");
    declare(&model->inputs[0], "x", LOOM_DTYPE_BOOL, 1, (int64_t[]){-1});
    CHECK_OK(decode("{\"inputs\":[true,false]}", &r));
    CHECK(v2_pack_read(r.pack.data, r.pack.len, v, MODEL_TENSOR_LIMIT, &n) == 0);
    CHECK(v[0].nbytes == 2 && ((char *)v[0].data)[0] == 1 && ((char *)v[0].data)[1] == 0);
    v2_request_free(&r);
    refused("{\"inputs\":[1]}", LOOM_E_INVALID, "expected true or false (BOOL)");
}

static void encodes_answers(void)
{
    setup(0);
    double y[3] = {1.5, -2, 0.25};
    int64_t z = -7;
    loom_tensor_view out[2] = {
        {.struct_size = sizeof out[0], .dtype = LOOM_DTYPE_F64, .ndim = 1, .shape = {3},
         .data = y, .nbytes = sizeof y},
        {.struct_size = sizeof out[0], .dtype = LOOM_DTYPE_I64, .ndim = 1, .shape = {1},
         .name = "zz", .data = &z, .nbytes = 8}};
    CHECK_OK(v2_views_check(out, 2));
    size_t size = v2_pack_size(out, 2);
    char *pack = aligned_alloc(8, (size + 7) & ~(size_t)7);
    v2_pack_write(pack, out, 2);
    v2_request req = {.id = "r\\\"1", .has_id = 1};
    v2_buf json = {0};
    CHECK_OK(v2_encode_answer(model, &req, pack, size, &json));
    char *text = strndup(json.data, json.len);
    CHECK_STR_EQ(text, "{\"model_name\":\"m\",\"id\":\"r\\\"1\",\"outputs\":[{\"name\":\"y\","
                 "\"datatype\":\"FP64\",\"shape\":[3],\"data\":[1.5,-2,0.25]},{\"name\":\"zz\","
                 "\"datatype\":\"INT64\",\"shape\":[1],\"data\":[-7]}]}");
    free(text);
    /* only the outputs asked for */
    req.outputs_wanted = 2u;
    req.has_id = 0;
    CHECK_OK(v2_encode_answer(model, &req, pack, size, &json));
    text = strndup(json.data, json.len);
    CHECK_STR_EQ(text, "{\"model_name\":\"m\",\"outputs\":[{\"name\":\"zz\",\"datatype\":"
                 "\"INT64\",\"shape\":[1],\"data\":[-7]}]}");
    free(text);
    /* the wrong number of outputs against the declaration */
    v2_pack_write(pack, out, 1);
    loom_error *e = v2_encode_answer(model, &req, pack, v2_pack_size(out, 1), &json);
    CHECK(loom_err_code(e) == LOOM_E_INTERNAL);
    CHECK_CONTAINS(loom_err_message(e), "model \"m\": the kernel answered 1 output, the model "
                   "declares 2");
    loom_err_free(e);
    /* a malformed pack is refused, not read past its end */
    e = v2_encode_answer(model, &req, pack, 12, &json);
    CHECK_CONTAINS(loom_err_message(e), "malformed");
    loom_err_free(e);
    free(pack);
    v2_buf_free(&json);
    /* views that do not add up */
    out[0].nbytes = 16;
    e = v2_views_check(out, 2);
    CHECK_CONTAINS(loom_err_message(e), "output 0 (\"\"): expected");
    loom_err_free(e);
}

/* Each type's values as JSON, the widest ones included. */
static void encodes_types(void)
{
    setup(0);
    model->noutputs = 0;
    char flags[2] = {1, 0};
    uint8_t bytes[2] = {0, 255};
    int32_t ints[2] = {INT32_MIN, INT32_MAX};
    uint64_t big[1] = {UINT64_MAX};
    float f[2] = {-1.17549435e-38f, 0.5f};
    double d[2] = {-2.2250738585072014e-308, 1.0 / 3};
    loom_tensor_view out[6] = {
        {.dtype = LOOM_DTYPE_BOOL, .ndim = 1, .shape = {2}, .data = flags, .nbytes = 2},
        {.dtype = LOOM_DTYPE_U8, .ndim = 1, .shape = {2}, .data = bytes, .nbytes = 2},
        {.dtype = LOOM_DTYPE_I32, .ndim = 1, .shape = {2}, .data = ints, .nbytes = 8},
        {.dtype = LOOM_DTYPE_U64, .ndim = 0, .data = big, .nbytes = 8},
        {.dtype = LOOM_DTYPE_F32, .ndim = 1, .shape = {2}, .data = f, .nbytes = 8},
        {.dtype = LOOM_DTYPE_F64, .ndim = 1, .shape = {2}, .data = d, .nbytes = 16}};
    CHECK_OK(v2_views_check(out, 6));
    size_t size = v2_pack_size(out, 6);
    char *pack = aligned_alloc(8, (size + 7) & ~(size_t)7);
    v2_pack_write(pack, out, 6);
    v2_buf json = {0};
    CHECK_OK(v2_encode_answer(model, NULL, pack, size, &json));
    char *text = strndup(json.data, json.len);
    CHECK_CONTAINS(text, "\"datatype\":\"BOOL\",\"shape\":[2],\"data\":[true,false]");
    CHECK_CONTAINS(text, "\"datatype\":\"UINT8\",\"shape\":[2],\"data\":[0,255]");
    CHECK_CONTAINS(text, "\"data\":[-2147483648,2147483647]");
    CHECK_CONTAINS(text, "\"datatype\":\"UINT64\",\"shape\":[],\"data\":[18446744073709551615]");
    CHECK_CONTAINS(text, "\"data\":[-1.17549435e-38,0.5]");
    CHECK_CONTAINS(text, "\"data\":[-2.2250738585072014e-308,0.33333333333333331]");
    free(text);
    free(pack);
    /* 9 million UINT8 (9 MB, 18 MB of JSON) fit the answer's limit */
    size_t n = 9000000;
    loom_tensor_view many = {.dtype = LOOM_DTYPE_U8, .ndim = 1, .shape = {(int64_t)n},
                             .data = calloc(n, 1), .nbytes = n};
    size = v2_pack_size(&many, 1);
    pack = aligned_alloc(8, (size + 7) & ~(size_t)7);
    v2_pack_write(pack, &many, 1);
    CHECK_OK(v2_encode_answer(model, NULL, pack, size, &json));
    CHECK(json.len > 2 * n);
    free(many.data);
    free(pack);
    v2_buf_free(&json);
}

static void metadata(void)
{
    setup(0);
    model->runtime = MODEL_RUNTIME_LUA;
    cJSON *meta = v2_metadata(model);
    char *text = cJSON_PrintUnformatted(meta);
    cJSON_Delete(meta);
    CHECK_STR_EQ(text, "{\"name\":\"m\",\"versions\":[],\"platform\":\"loom-lua\",\"inputs\":["
                 "{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[-1]},{\"name\":\"idx\","
                 "\"datatype\":\"INT32\",\"shape\":[2,-1]}],\"outputs\":[{\"name\":\"y\","
                 "\"datatype\":\"FP64\",\"shape\":[-1]},{\"name\":\"z\",\"datatype\":\"INT64\","
                 "\"shape\":[1]}]}");
    free(text);
}

int main(void)
{
    model = calloc(1, sizeof *model);
    decodes_both_inputs();
    refuses_bad_inputs();
    refuses_past_limits();
    shorthand();
    encodes_answers();
    encodes_types();
    metadata();
    free(model);
    return CHECK_DONE();
}
