/*
 * test_ffi_kernel.c - the built-in "ffi" kernel: loads the example model
 * directory (libvecmath.so + model.json), serves batches where a bad request
 * fails alone, checks outputs numerically, and refuses at load_model what it
 * cannot map or may not open.
 *
 * usage: test_ffi_kernel <built ffi-vecmath model dir> /path/to/libffitest.so
 */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "plugin/ffi_call.h"
#include "plugin/host_api.h"

static const char *model_dir, *ffitest_lib;
static const loom_kernel_factory *factory;

/* A request plus what the kernel answered. */
typedef struct {
    loom_infer_request req;
    int answers;
    int32_t status;
    char body[4096];
} fake_request;

static loom_error *record_answer(loom_infer_request *request, int32_t status,
                                 const char *content_type, const uint8_t *body,
                                 uint64_t body_len)
{
    fake_request *f = request->host_data;
    if (f->answers++)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "request answered twice");
    CHECK_STR_EQ(content_type, "application/json");
    f->status = status;
    size_t n = body_len < sizeof f->body - 1 ? (size_t)body_len : sizeof f->body - 1;
    memcpy(f->body, body, n);
    f->body[n] = '\0';
    return NULL;
}

static void make_request(fake_request *f, uint64_t id, const char *body)
{
    memset(f, 0, sizeof *f);
    f->req.struct_size = sizeof f->req;
    f->req.id = id;
    f->req.content_type = "application/json";
    f->req.body = (const uint8_t *)body;
    f->req.body_len = body ? strlen(body) : 0;
    f->req.host_data = f;
    f->req.respond = record_answer;
}

static loom_kernel_model *load(const char *dir, const char *json, char *err, size_t errlen)
{
    loom_kernel_model_config cfg = {.struct_size = sizeof cfg, .model_dir = dir,
                                    .model_json = json};
    loom_kernel_model *model = NULL;
    loom_error *e = factory->load_model(factory, &cfg, &model);
    snprintf(err, errlen, "%s", e ? loom_err_message(e) : "");
    if (e) {
        CHECK(model == NULL);
        loom_err_free(e);
    }
    return model;
}

/* Runs each body as one request of a single batch on a fresh instance. */
static void run_batch(loom_kernel_model *model, const char *const *bodies, int n,
                      fake_request *out)
{
    loom_device cpu = {.struct_size = sizeof cpu, .kind = LOOM_DEVICE_CPU};
    loom_kernel_instance *inst = NULL;
    loom_error *e = factory->create_instance(model, &cpu, &inst);
    CHECK(e == NULL && inst != NULL);
    loom_err_free(e);
    if (!inst)
        return;
    loom_infer_request *reqs[16];
    for (int i = 0; i < n; i++) {
        make_request(&out[i], (uint64_t)i + 1, bodies[i]);
        reqs[i] = &out[i].req;
    }
    e = factory->execute(inst, reqs, (uint32_t)n);
    CHECK(e == NULL);
    loom_err_free(e);
    for (int i = 0; i < n; i++)
        CHECK_MSG(out[i].answers == 1, "request %d answered %d times", i, out[i].answers);
    factory->destroy_instance(inst);
}

/* True when `body` is {"outputs": expected[0..n)} within float precision. */
static int outputs_are(const char *body, const double *expected, int n)
{
    cJSON *root = cJSON_Parse(body);
    const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    int ok = cJSON_IsArray(outputs) && cJSON_GetArraySize(outputs) == n;
    for (int i = 0; ok && i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(outputs, i);
        ok = cJSON_IsNumber(v) && fabs(v->valuedouble - expected[i]) <= 1e-6 * (1 + fabs(expected[i]));
    }
    if (!ok)
        fprintf(stderr, "unexpected outputs: %s\n", body);
    cJSON_Delete(root);
    return ok;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void test_example_model(void)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s/model.json", model_dir);
    char *json = read_file(path);
    CHECK(json != NULL);
    loom_kernel_model *model = load(model_dir, json, err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    free(json);
    if (!model)
        return;

    /* One batch of three; the malformed one fails alone. */
    const char *batch[] = {"{\"inputs\": [1, 2.5, -3]}", "{\"inputs\": [1, ",
                           "{\"inputs\": [0, 100, 0.25]}"};
    fake_request r[3];
    run_batch(model, batch, 3, r);
    CHECK(r[0].status == 0);
    CHECK(outputs_are(r[0].body, (const double[]){3, 6, -5}, 3));
    CHECK(r[1].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(r[1].body, "request body is not valid JSON");
    CHECK_CONTAINS(r[1].body, "{\\\"inputs\\\": [numbers...]}");
    CHECK(r[2].status == 0);
    CHECK(outputs_are(r[2].body, (const double[]){1, 201, 1.5}, 3));

    /* Every kind of bad request fails alone, with a message saying why. */
    const char *bad[] = {
        "{\"inputs\": [1, \"a\"]}", "{\"inputs\": 5}", "[1, 2]", "",
        "{\"inputs\": [1e39]}", "{\"inputs\": [3e38]}", "{\"inputs\": []}",
        "{\"inputs\": [true]}", "{\"input\": [1]}", "{\"inputs\": [-0.5]}"};
    fake_request b[10];
    run_batch(model, bad, 10, b);
    CHECK(b[0].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[0].body, "inputs[1] is a string, expected a number");
    CHECK(b[1].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[1].body, "no \\\"inputs\\\" array");
    CHECK(b[2].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[2].body, "no \\\"inputs\\\" array");
    CHECK(b[3].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[3].body, "request body is empty");
    CHECK(b[4].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[4].body, "inputs[0] = 1e+39 cannot be represented as f32");
    /* 2 * 3e38 + 1 overflows a float: scale_add's own failure code. */
    CHECK(b[5].status == LOOM_ERR_INTERNAL);
    CHECK_CONTAINS(b[5].body, "scale_add returned 2 (0 means success)");
    CHECK(b[6].status == 0);
    CHECK_STR_EQ(b[6].body, "{\"outputs\":[]}");
    CHECK(b[7].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(b[7].body, "inputs[0] is a boolean");
    CHECK(b[8].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK(b[9].status == 0);
    CHECK(outputs_are(b[9].body, (const double[]){0}, 1));

    /* GPU instances are refused by name. */
    loom_device gpu = {.struct_size = sizeof gpu, .kind = LOOM_DEVICE_CUDA};
    loom_kernel_instance *inst = NULL;
    loom_error *e = factory->create_instance(model, &gpu, &inst);
    CHECK(e != NULL && loom_err_code(e) == LOOM_ERR_UNSUPPORTED && inst == NULL);
    CHECK_CONTAINS(loom_err_message(e), "CPU only");
    loom_err_free(e);
    factory->unload_model(model);

    /* Without model_json text the kernel reads model.json itself. */
    model = load(model_dir, NULL, err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    if (model) {
        const char *one[] = {"{\"inputs\": [4]}"};
        fake_request o[1];
        run_batch(model, one, 1, o);
        CHECK(o[0].status == 0 && outputs_are(o[0].body, (const double[]){9}, 1));
        factory->unload_model(model);
    }
}

static void test_fixed_output_size(void)
{
    char err[1024];
    loom_kernel_model *model = load(
        model_dir,
        "{\"runtime\": \"ffi\", \"ffi\": {\"library\": \"libvecmath.so\", \"symbol\": "
        "\"sum_mean\", \"signature\": \"int32(ptr f64 in, i64, ptr f64 out)\", "
        "\"output_size\": 2}}",
        err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    if (!model)
        return;
    const char *bodies[] = {"{\"inputs\": [1, 2, 3, 4.5]}", "{\"inputs\": [-1]}"};
    fake_request r[2];
    run_batch(model, bodies, 2, r);
    CHECK(r[0].status == 0 && outputs_are(r[0].body, (const double[]){10.5, 2.625}, 2));
    CHECK(r[1].status == 0 && outputs_are(r[1].body, (const double[]){-1, -1}, 2));
    factory->unload_model(model);
}

/* model.json with the given ffi members must be refused with `frag`. */
static void refused(const char *dir, const char *ffi_members, const char *frag1,
                    const char *frag2)
{
    char json[2048], err[1024];
    snprintf(json, sizeof json, "{\"runtime\": \"ffi\", \"ffi\": {%s}}", ffi_members);
    loom_kernel_model *model = load(dir, json, err, sizeof err);
    CHECK_MSG(model == NULL, "accepted: %s", json);
    if (model)
        factory->unload_model(model);
    const char *message = err;
    CHECK_CONTAINS(message, frag1);
    if (frag2)
        CHECK_CONTAINS(message, frag2);
}

#define LIB "\"library\": \"libvecmath.so\", "

static void test_load_refusals(void)
{
    /* Signatures the kernel cannot map onto a request. */
    refused(model_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 in a, ptr f32 "
                "in b, i64 n, ptr f32 out y)\"",
            "parameter 2 ('b', ptr f32 in) is a second 'in' pointer", "(parameter 1 is the first)");
    refused(model_dir, LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 in x, i64 n)\"",
            "no 'out' pointer", NULL);
    refused(model_dir, LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(i64 n, ptr f32 out y)\"",
            "no 'in' pointer", NULL);
    refused(model_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 in x, f32 s, ptr "
                "f32 out y)\"",
            "parameter 2 ('s', f32) cannot be mapped", "only the input length");
    refused(model_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"f64(ptr f32 in x, i64 n, ptr "
                "f32 out y)\"",
            "return type f64 cannot be mapped", NULL);
    refused(model_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 inout x, ptr f32 "
                "in y, i64 n)\"",
            "an 'inout' pointer cannot be combined", NULL);
    refused(model_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"void(ptr f32 inout x, i64 n)\", "
                "\"output_size\": 3",
            "ffi.output_size must be \"n\" when the outputs come back through the 'inout'",
            NULL);
    refused(model_dir, LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f16 in x)\"",
            "ffi.signature 'int32(ptr f16 in x)': unknown type", "found 'f16'");

    /* Members missing or of the wrong shape. */
    refused(model_dir, "\"symbol\": \"scale_add\", \"signature\": \"i32()\"",
            "ffi.library must be a non-empty string (missing)", NULL);
    refused(model_dir, LIB "\"symbol\": 3, \"signature\": \"i32()\"",
            "ffi.symbol must be a non-empty string", NULL);
    refused(model_dir, LIB "\"symbol\": \"scale_add\"", "ffi.signature must be a non-empty string",
            NULL);
    const char *sizes[] = {"\"m\"", "0", "-1", "1.5", "1e12"};
    const char *shown[] = {"got \"m\"", "got 0", "got -1", "got 1.5", "got 1000000000000"};
    for (int i = 0; i < 5; i++) {
        char members[512];
        snprintf(members, sizeof members,
                 LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 in x, i64 "
                     "n, ptr f32 out y)\", \"output_size\": %s",
                 sizes[i]);
        refused(model_dir, members, "ffi.output_size must be \"n\"", shown[i]);
    }

    /* A missing symbol, a library outside the model directory. */
    refused(model_dir,
            LIB "\"symbol\": \"no_such\", \"signature\": \"int32(ptr f32 in x, i64 n, ptr f32 "
                "out y)\"",
            "symbol 'no_such' not found", "libvecmath.so");
    char members[4096];
    snprintf(members, sizeof members,
             "\"library\": \"%s\", \"symbol\": \"fail_on_negative\", \"signature\": "
             "\"int32(ptr i32 in x, i64 n, ptr i32 out y)\"",
             ffitest_lib);
    refused(model_dir, members, "is outside the allowed directories", model_dir);
    /* The same library named relative to the model directory, climbing out
     * of it with "..". */
    snprintf(members, sizeof members,
             "\"library\": \"../../../../../../../../../../..%s\", \"symbol\": "
             "\"fail_on_negative\", \"signature\": \"int32(ptr i32 in x, i64 n, ptr i32 "
             "out y)\"",
             ffitest_lib);
    refused(model_dir, members, "is outside the allowed directories", "resolved to");

    /* Not an ffi model, or no JSON object at all. */
    char err[1024];
    const char *message = err;
    CHECK(load(model_dir, "{\"runtime\": \"native\", \"ffi\": {}}", err, sizeof err) == NULL);
    CHECK_CONTAINS(message, "runtime must be \"ffi\", got native");
    CHECK(load(model_dir, "{\"runtime\": \"ffi\"}", err, sizeof err) == NULL);
    CHECK_CONTAINS(message, "\"ffi\" must be an object");
    CHECK(load(model_dir, "not json", err, sizeof err) == NULL);
    CHECK_CONTAINS(message, "is not a JSON object");
}

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int ok = in && out;
    char buf[8192];
    size_t got;
    while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, got, out) == got;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* A model directory of its own holding a copy of the test library: an
 * inout pointer, a narrow length parameter, u8 elements, a failure code. */
static void test_own_model_dir(void)
{
    char tmpl[] = "/tmp/loom-ffik-XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir)
        return;
    char lib[256], link_dir[256], link[512], err[1024];
    snprintf(lib, sizeof lib, "%s/libffitest.so", dir);
    CHECK(copy_file(ffitest_lib, lib) == 0);

    loom_kernel_model *model = load(dir,
        "{\"runtime\": \"ffi\", \"ffi\": {\"library\": \"libffitest.so\", \"symbol\": "
        "\"square_inplace\", \"signature\": \"void(ptr f32 inout x, i64 n)\"}}",
        err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    if (model) {
        const char *bodies[] = {"{\"inputs\": [1.5, -2, 3]}", "{\"inputs\": [\"x\"]}"};
        fake_request r[2];
        run_batch(model, bodies, 2, r);
        CHECK(r[0].status == 0 && outputs_are(r[0].body, (const double[]){2.25, 4, 9}, 3));
        CHECK(r[1].status == LOOM_ERR_INVALID_ARGUMENT);
        factory->unload_model(model);
    }

    model = load(dir,
        "{\"runtime\": \"ffi\", \"ffi\": {\"library\": \"libffitest.so\", \"symbol\": "
        "\"copy_u8\", \"signature\": \"i32(ptr u8 in x, i8 n, ptr u8 out y)\"}}",
        err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    if (model) {
        static char long_body[1024];
        int at = snprintf(long_body, sizeof long_body, "{\"inputs\": [");
        for (int i = 0; i < 200; i++)
            at += snprintf(long_body + at, sizeof long_body - (size_t)at, "%s1", i ? "," : "");
        snprintf(long_body + at, sizeof long_body - (size_t)at, "]}");
        const char *bodies[] = {"{\"inputs\": [1, 2, 254]}", long_body,
                                "{\"inputs\": [256]}", "{\"inputs\": [7]}"};
        fake_request r[4];
        run_batch(model, bodies, 4, r);
        CHECK(r[0].status == 0 && outputs_are(r[0].body, (const double[]){2, 3, 255}, 3));
        CHECK(r[1].status == LOOM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(r[1].body, "200 inputs: the length does not fit parameter 2 ('n', i8)");
        CHECK(r[2].status == LOOM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(r[2].body, "inputs[0] = 256 cannot be represented as u8");
        CHECK(r[3].status == 0 && outputs_are(r[3].body, (const double[]){8}, 1));
        factory->unload_model(model);
    }

    model = load(dir,
        "{\"runtime\": \"ffi\", \"ffi\": {\"library\": \"libffitest.so\", \"symbol\": "
        "\"fail_on_negative\", \"signature\": \"int32(ptr i32 in x, i64 n, ptr i32 out y)\"}}",
        err, sizeof err);
    CHECK_MSG(model != NULL, "%s", err);
    if (model) {
        const char *bodies[] = {"{\"inputs\": [5, -1]}", "{\"inputs\": [5, 6]}"};
        fake_request r[2];
        run_batch(model, bodies, 2, r);
        CHECK(r[0].status == LOOM_ERR_INTERNAL);
        CHECK_CONTAINS(r[0].body, "fail_on_negative returned -7");
        CHECK(r[1].status == 0 && outputs_are(r[1].body, (const double[]){5, 6}, 2));
        factory->unload_model(model);
    }

    /* A model directory whose library is a symlink to one elsewhere. */
    snprintf(link_dir, sizeof link_dir, "%s/linked", dir);
    snprintf(link, sizeof link, "%s/libvecmath.so", link_dir);
    char target[4200];
    snprintf(target, sizeof target, "%s/libvecmath.so", model_dir);
    CHECK(mkdir(link_dir, 0755) == 0);
    CHECK(symlink(target, link) == 0);
    refused(link_dir,
            LIB "\"symbol\": \"scale_add\", \"signature\": \"int32(ptr f32 in x, i64 n, ptr "
                "f32 out y)\"",
            "is outside the allowed directories", "resolved to");

    unlink(link);
    rmdir(link_dir);
    unlink(lib);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s <ffi-vecmath model dir> <libffitest.so>\n", argv[0]);
        return 2;
    }
    static char dir_buf[4096], lib_buf[4096];
    if (!realpath(argv[1], dir_buf) || !realpath(argv[2], lib_buf)) {
        fprintf(stderr, "%s: cannot resolve '%s' or '%s'\n", argv[0], argv[1], argv[2]);
        return 2;
    }
    model_dir = dir_buf;
    ffitest_lib = lib_buf;
    factory = ffi_kernel_factory();
    char err[256];
    CHECK(loom_err_take(loom_factory_validate(LOOM_KIND_KERNEL, factory), err, sizeof err) == LOOM_OK);
    test_example_model();
    test_fixed_output_size();
    test_load_refusals();
    test_own_model_dir();
    return CHECK_DONE();
}
