/*
 * test_native_plugin.c - native.so through the trainer contract, called like
 * the host's trainer calls it: every bad model JSON refused with a message
 * naming the layer and field, grad_scale and accumulation, the state
 * tensors' round trip into a fresh instance, denormals flushed inside the
 * adapter's calls (and only there), and short training runs (an
 * MLP and a CNN) on a generated dataset that must beat chance clearly.
 */
#include <float.h>
#include <math.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "../../check.h"
#include "native_test.h"

static plugin_handle plugin;
static char data_dir[256];

#define DATASET_JSON                                                           \
    "\"dataset\": {\"format\": \"idx\","                                       \
    " \"train_images\": \"train-images-idx3-ubyte.gz\","                       \
    " \"train_labels\": \"train-labels-idx1-ubyte.gz\","                       \
    " \"test_images\": \"t10k-images-idx3-ubyte.gz\","                         \
    " \"test_labels\": \"t10k-labels-idx1-ubyte.gz\"}"

#define SGD_JSON "\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9}"

#define MLP_LAYERS                                                             \
    "[{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 32},"           \
    " {\"type\": \"relu\"}, {\"type\": \"dropout\", \"rate\": 0.2},"            \
    " {\"type\": \"dense\", \"units\": 3}]"

static loom_framework_instance *make(const char *json)
{
    char msg[1024];
    loom_framework_instance *inst =
        create_instance(&plugin, json, "/nonexistent-code-dir", data_dir, msg,
                        sizeof msg, NULL);
    if (!inst)
        fprintf(stderr, "create failed: %s\n", msg);
    return inst;
}

/* Expects create() to fail with `code` and a message containing `needle`. */
static void expect_refused(const char *json, int32_t code, const char *needle)
{
    char msg[1024];
    int32_t got = 0;
    loom_framework_instance *inst = create_instance(
        &plugin, json, "/nonexistent-code-dir", data_dir, msg, sizeof msg, &got);
    CHECK(inst == NULL);
    if (inst)
        plugin.factory->destroy(inst);
    CHECK_MSG(got == code, "code %d, expected %d (%s)", (int)got, (int)code, msg);
    CHECK_CONTAINS(str(msg), needle);
}

static void test_bad_specs(void)
{
    expect_refused("{\"model\": ", LOOM_ERR_INVALID_ARGUMENT, "not valid JSON");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense2\", \"units\": 3}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[1]: unknown layer type 'dense2'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\"}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[1] (dense): missing field 'units'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"unit\": 3}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[1] (dense): unknown field 'unit'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3},"
                   " {\"type\": \"dense\", \"units\": 3}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[1] (conv2d): expects a [channels, height, width] "
                   "input but gets [64]");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"conv2d\", \"filters\": 2}]}, "
                   SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[0] (conv2d): missing field 'kernel'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"conv2d\", \"filters\": 2,"
                   " \"kernel\": 9}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[0] (conv2d): field 'kernel' 9 is larger than the 8x8 input");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"dense\", \"units\": 3}]}, "
                   SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[0] (dense): input has shape [1, 8, 8]; add a flatten");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 16}, {\"type\": \"relu\"},"
                   " {\"type\": \"dense\", \"units\": 5}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[3] (dense): the last layer outputs [5] but the "
                   "dataset has 3 classes");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"max_pool2d\", \"kernel\": 2}]}, "
                   SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "the last layer outputs [1, 4, 4]");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dropout\", \"rate\": 1.5},"
                   " {\"type\": \"dense\", \"units\": 3}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.layers[1] (dropout): field 'rate' must be a number in [0, 1)");
    expect_refused("{\"model\": {\"input\": [100], \"layers\": [{\"type\": \"dense\","
                   " \"units\": 3}]}, " SGD_JSON ", " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "model.input: 100 values per sample, but the training set's "
                   "samples have 64");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 3}]},"
                   " \"optimizer\": {\"type\": \"sgd\"}, " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT, "optimizer (sgd): missing field 'lr'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 3}]},"
                   " \"optimizer\": {\"type\": \"rmsprop\", \"lr\": 1}, " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT, "optimizer: unknown type 'rmsprop'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 3}]}, " SGD_JSON ","
                   " \"lr_schedule\": {\"type\": \"step\"}, " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT,
                   "lr_schedule (step): missing field 'step_size'");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 3}]}, " SGD_JSON ","
                   " \"dataset\": {\"format\": \"idx\", \"train_images\": \"nope.gz\","
                   " \"train_labels\": \"train-labels-idx1-ubyte.gz\"}}",
                   LOOM_ERR_NOT_FOUND,
                   "dataset.train_images: file 'nope.gz' not found");
    expect_refused("{\"model\": {\"layers\": [{\"type\": \"flatten\"},"
                   " {\"type\": \"dense\", \"units\": 3}]}, " SGD_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT, "missing field 'dataset'");

    /* A CUDA device is refused plainly on a machine without one. */
    const char *ok_json = "{\"model\": {\"layers\": " MLP_LAYERS "}, " SGD_JSON
                          ", " DATASET_JSON "}";
    loom_trainer_config cfg = trainer_config(ok_json, NULL, data_dir);
    cfg.device.kind = LOOM_DEVICE_CUDA;
    loom_framework_instance *inst = NULL;
    loom_error *e = plugin.factory->create(plugin.factory, &cfg, &inst);
    CHECK(e != NULL && inst == NULL);
    if (e) {
        CHECK(loom_err_code(e) == LOOM_ERR_UNAVAILABLE);
        CHECK_CONTAINS(loom_err_message(e), "CUDA");
        loom_err_free(e);
    }
}

static void test_call_errors(void)
{
    loom_framework_instance *inst = make(
        "{\"model\": {\"layers\": " MLP_LAYERS "}, " SGD_JSON ", " DATASET_JSON "}");
    CHECK(inst != NULL);
    if (!inst)
        return;
    uint64_t idx[2] = {3, 999};
    loom_metrics m = {.struct_size = sizeof m};
    loom_error *e = plugin.factory->forward_backward(inst, idx, 2, 1.0f, &m);
    CHECK(e && loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(err_text(e),
                   "sample index 999 is outside the training set (200 samples)");
    loom_err_free(e);
    e = plugin.factory->evaluate(inst, LOOM_SPLIT_TEST, idx, 2, &m);
    CHECK_CONTAINS(err_text(e), "outside the test set (60 samples)");
    loom_err_free(e);
    e = plugin.factory->forward_backward(inst, idx, 0, 1.0f, &m);
    CHECK(e && loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT);
    loom_err_free(e);
    uint64_t n = 0;
    CHECK(!failed(plugin.factory->dataset_size(inst, LOOM_SPLIT_TRAIN, &n)) && n == 200);
    CHECK(!failed(plugin.factory->dataset_size(inst, LOOM_SPLIT_TEST, &n)) && n == 60);
    plugin.factory->destroy(inst);
}

static float *grads_of(loom_framework_instance *inst, int64_t *len)
{
    loom_tensor_view p, g;
    if (failed(plugin.factory->buffers(inst, &p, &g)))
        return NULL;
    *len = g.shape[0];
    return g.data;
}

static double max_diff(const float *a, const float *b, int64_t n, double scale_b)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++)
        d = fmax(d, fabs(a[i] - scale_b * b[i]));
    return d;
}

/* Two half batches with grad_scale 0.5 add up to the full batch with 1, in
 * any order: what the host relies on for accumulation and sharding. */
static void test_grad_scale(void)
{
    loom_framework_instance *inst = make(
        "{\"model\": {\"layers\": " MLP_LAYERS "}, " SGD_JSON ", " DATASET_JSON "}");
    CHECK(inst != NULL);
    if (!inst)
        return;
    int64_t n = 0;
    float *g = grads_of(inst, &n);
    CHECK(g != NULL && n == 64 * 32 + 32 + 32 * 3 + 3);
    uint64_t idx[16];
    for (int i = 0; i < 16; i++)
        idx[i] = (uint64_t)(i * 7 + 1);
    loom_metrics m = {.struct_size = sizeof m};

    CHECK(!failed(plugin.factory->zero_grad(inst)));
    CHECK(!failed(plugin.factory->forward_backward(inst, idx, 16, 1.0f, &m)));
    CHECK(m.count == 2 && metric(&m, "loss") > 0 && metric(&m, "accuracy") >= 0);
    float *full = malloc((size_t)n * sizeof(float));
    memcpy(full, g, (size_t)n * sizeof(float));
    double norm = 0;
    for (int64_t i = 0; i < n; i++)
        norm = fmax(norm, fabs(full[i]));
    CHECK(norm > 1e-3);

    /* Halves, the second before the first and reversed inside. */
    uint64_t second[8];
    for (int i = 0; i < 8; i++)
        second[i] = idx[15 - i];
    CHECK(!failed(plugin.factory->zero_grad(inst)));
    CHECK(!failed(plugin.factory->forward_backward(inst, second, 8, 0.5f, &m)));
    CHECK(!failed(plugin.factory->forward_backward(inst, idx, 8, 0.5f, &m)));
    CHECK_MSG(max_diff(g, full, n, 1.0) < 1e-5 * fmax(1.0, norm),
              "accumulated halves differ by %g", max_diff(g, full, n, 1.0));

    /* Linear in grad_scale. */
    CHECK(!failed(plugin.factory->zero_grad(inst)));
    CHECK(!failed(plugin.factory->forward_backward(inst, idx, 16, 2.0f, &m)));
    CHECK(max_diff(g, full, n, 2.0) < 1e-5 * fmax(1.0, norm));

    /* zero_grad zeroes. */
    CHECK(!failed(plugin.factory->zero_grad(inst)));
    CHECK(max_diff(g, full, n, 0.0) == 0.0);
    free(full);
    plugin.factory->destroy(inst);
}

#define MAX_VIEWS 64

static void train_steps(loom_framework_instance *inst, int steps, uint64_t first)
{
    uint64_t idx[10];
    loom_metrics m = {.struct_size = sizeof m};
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < 10; i++)
            idx[i] = (first + (uint64_t)s * 10 + (uint64_t)i) % 200;
        loom_step_info info = {.struct_size = sizeof info, .epoch = 1, .epochs = 3,
                               .iteration = (uint64_t)s, .steps_per_epoch = 20};
        CHECK(!failed(plugin.factory->zero_grad(inst)));
        CHECK(!failed(plugin.factory->forward_backward(inst, idx, 10, 1.0f, &m)));
        CHECK(!failed(plugin.factory->apply(inst, &info)));
    }
}

/* Saves every state tensor, writes them into a differently initialised
 * instance, and checks both then compute the same thing. */
static void test_state_round_trip(void)
{
    const char *adam_a =
        "{\"model\": {\"layers\": " MLP_LAYERS "}, \"optimizer\": {\"type\": \"adam\","
        " \"lr\": 0.01}, \"init_seed\": 1, " DATASET_JSON "}";
    const char *adam_b =
        "{\"model\": {\"layers\": " MLP_LAYERS "}, \"optimizer\": {\"type\": \"adam\","
        " \"lr\": 0.01}, \"init_seed\": 2, " DATASET_JSON "}";
    loom_framework_instance *a = make(adam_a), *b = make(adam_b);
    CHECK(a && b);
    if (!a || !b)
        return;
    train_steps(a, 3, 0);

    loom_tensor_view va[MAX_VIEWS], vb[MAX_VIEWS];
    int32_t ra[MAX_VIEWS], rb[MAX_VIEWS];
    uint32_t na = 0, nb = 0, needed = 0;
    CHECK(!failed(plugin.factory->state_tensors(a, va, ra, 2, &needed)));
    CHECK(needed == 4 * 3 + 2); /* 4 parameter tensors x (param, m, v) + 2 counters */
    CHECK(!failed(plugin.factory->state_tensors(a, va, ra, MAX_VIEWS, &na)));
    CHECK(!failed(plugin.factory->state_tensors(b, vb, rb, MAX_VIEWS, &nb)));
    CHECK(na == needed && nb == na);
    CHECK_STR_EQ(va[0].name, "layers.1.weight");
    CHECK(ra[0] == LOOM_TENSOR_PARAMETER && va[0].ndim == 2 && va[0].shape[0] == 32 &&
          va[0].shape[1] == 64 && va[0].dtype == LOOM_DTYPE_F32);
    CHECK_STR_EQ(va[3].name, "layers.4.bias");
    CHECK_STR_EQ(va[4].name, "optim.exp_avg.layers.1.weight");
    CHECK(ra[4] == LOOM_TENSOR_OPTIMIZER);
    CHECK_STR_EQ(va[8].name, "optim.exp_avg_sq.layers.1.weight");
    CHECK_STR_EQ(va[na - 2].name, "optim.step");
    CHECK(va[na - 2].dtype == LOOM_DTYPE_I64 && *(int64_t *)va[na - 2].data == 3);
    CHECK_STR_EQ(va[na - 1].name, "train.dropout_epoch");

    /* Parameter views are windows into the flat buffer. */
    loom_tensor_view params, grads;
    CHECK(!failed(plugin.factory->buffers(a, &params, &grads)));
    CHECK(va[0].data == params.data);
    CHECK((char *)va[1].data == (char *)params.data + va[0].nbytes);

    /* Before loading the instances differ; after, they agree bit for bit. */
    CHECK(memcmp(va[0].data, vb[0].data, va[0].nbytes) != 0);
    for (uint32_t i = 0; i < na; i++) {
        CHECK(va[i].nbytes == vb[i].nbytes && strcmp(va[i].name, vb[i].name) == 0);
        memcpy(vb[i].data, va[i].data, va[i].nbytes);
    }
    CHECK(!failed(plugin.factory->state_loaded(b)));
    train_steps(a, 2, 50);
    train_steps(b, 2, 50);
    for (uint32_t i = 0; i < na; i++)
        CHECK_MSG(memcmp(va[i].data, vb[i].data, va[i].nbytes) == 0,
                  "state tensor %s differs after loading", va[i].name);
    loom_metrics ma = {.struct_size = sizeof ma}, mb = {.struct_size = sizeof mb};
    uint64_t idx[60];
    for (int i = 0; i < 60; i++)
        idx[i] = (uint64_t)i;
    CHECK(!failed(plugin.factory->evaluate(a, LOOM_SPLIT_TEST, idx, 60, &ma)));
    CHECK(!failed(plugin.factory->evaluate(b, LOOM_SPLIT_TEST, idx, 60, &mb)));
    CHECK(metric(&ma, "loss") == metric(&mb, "loss"));

    /* A negative step counter written by mistake is refused. */
    *(int64_t *)vb[nb - 2].data = -1;
    loom_error *e = plugin.factory->state_loaded(b);
    CHECK_CONTAINS(err_text(e), "optim.step");
    loom_err_free(e);
    plugin.factory->destroy(a);
    plugin.factory->destroy(b);
}

/* The trainer's loop over a shuffled epoch; returns the epoch's mean loss. */
static double run_epoch(loom_framework_instance *inst, uint32_t epoch, uint32_t epochs,
                        uint64_t train_count, uint32_t batch, uint64_t *iteration)
{
    uint64_t *perm = malloc(train_count * sizeof *perm);
    for (uint64_t i = 0; i < train_count; i++)
        perm[i] = i;
    uint32_t s = 1234 + epoch;
    for (uint64_t i = train_count - 1; i > 0; i--) {
        uint64_t j = lcg_next(&s) % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    uint64_t steps = train_count / batch;
    double loss = 0;
    loom_metrics m = {.struct_size = sizeof m};
    for (uint64_t st = 0; st < steps; st++) {
        loom_step_info info = {.struct_size = sizeof info, .epoch = epoch, .epochs = epochs,
                               .iteration = (*iteration)++, .steps_per_epoch = steps};
        CHECK(!failed(plugin.factory->zero_grad(inst)));
        CHECK(!failed(plugin.factory->forward_backward(inst, perm + st * batch, batch,
                                                       1.0f, &m)));
        CHECK(!failed(plugin.factory->apply(inst, &info)));
        loss += metric(&m, "loss");
    }
    free(perm);
    return loss / (double)steps;
}

static void train_and_check(const char *label, const char *json, uint32_t epochs)
{
    loom_framework_instance *inst = make(json);
    CHECK(inst != NULL);
    if (!inst)
        return;
    uint64_t train_n = 0, test_n = 0, iteration = 0;
    CHECK(!failed(plugin.factory->dataset_size(inst, LOOM_SPLIT_TRAIN, &train_n)));
    CHECK(!failed(plugin.factory->dataset_size(inst, LOOM_SPLIT_TEST, &test_n)));
    double first = 0, last = 0;
    for (uint32_t e = 0; e < epochs; e++) {
        last = run_epoch(inst, e, epochs, train_n, 20, &iteration);
        if (e == 0)
            first = last;
    }
    uint64_t *idx = malloc(test_n * sizeof *idx);
    for (uint64_t i = 0; i < test_n; i++)
        idx[i] = i;
    loom_metrics m = {.struct_size = sizeof m};
    CHECK(!failed(plugin.factory->evaluate(inst, LOOM_SPLIT_TEST, idx, (uint32_t)test_n, &m)));
    double acc = metric(&m, "accuracy");
    printf("%s: train loss %.3f -> %.3f, test loss %.3f, test accuracy %.3f\n", label,
           first, last, metric(&m, "loss"), acc);
    CHECK_MSG(last < 0.5 * first, "%s: loss %.3f -> %.3f", label, first, last);
    CHECK_MSG(acc > 0.8, "%s: test accuracy %.3f (chance is 0.33)", label, acc);
    free(idx);
    plugin.factory->destroy(inst);
}

static void test_training(void)
{
    train_and_check("mlp",
                    "{\"model\": {\"input\": [1, 8, 8], \"layers\": " MLP_LAYERS "}, "
                    "\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9}, "
                    "\"lr_schedule\": {\"type\": \"cosine\"}, " DATASET_JSON "}",
                    6);
    train_and_check("cnn",
                    "{\"model\": {\"layers\": [{\"type\": \"conv2d\", \"filters\": 4,"
                    " \"kernel\": 3, \"padding\": 1}, {\"type\": \"relu\"},"
                    " {\"type\": \"max_pool2d\", \"kernel\": 2}, {\"type\": \"flatten\"},"
                    " {\"type\": \"dense\", \"units\": 3}]},"
                    " \"optimizer\": {\"type\": \"adam\", \"lr\": 0.01}, " DATASET_JSON "}",
                    6);
}

/* The momentum buffer's value after one SGD step (momentum 0.5, no
 * gradient) from FLT_MIN: half of it is subnormal. */
static float momentum_after_step(const char *flush)
{
    char json[1024];
    snprintf(json, sizeof json,
             "{\"model\": {\"layers\": " MLP_LAYERS "}, \"optimizer\": {\"type\": \"sgd\","
             " \"lr\": 0.1, \"momentum\": 0.5}, %s " DATASET_JSON "}",
             flush);
    loom_framework_instance *inst = make(json);
    CHECK(inst != NULL);
    if (!inst)
        return -1;
    loom_tensor_view v[MAX_VIEWS];
    int32_t roles[MAX_VIEWS];
    uint32_t n = 0;
    float out = -1;
    CHECK(!failed(plugin.factory->state_tensors(inst, v, roles, MAX_VIEWS, &n)));
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, "optim.momentum_buffer.layers.1.weight")) {
            float *m = v[i].data;
            for (int64_t k = 0; k < v[i].shape[0] * v[i].shape[1]; k++)
                m[k] = FLT_MIN;
            CHECK(!failed(plugin.factory->zero_grad(inst)));
            loom_step_info si = {.struct_size = sizeof si, .epochs = 1, .steps_per_epoch = 1};
            CHECK(!failed(plugin.factory->apply(inst, &si)));
            out = m[0];
        }
    plugin.factory->destroy(inst);
    return out;
}

static void test_flush_denormals(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* Control bits only: the low six are sticky exception flags. */
    unsigned before = _mm_getcsr() & 0xffc0u;
    CHECK_MSG(momentum_after_step("") == 0.0f, "denormals are flushed by default");
    CHECK_MSG(momentum_after_step("\"flush_denormals\": true,") == 0.0f, "flushed when asked");
    float kept = momentum_after_step("\"flush_denormals\": false,");
    CHECK_MSG(kept == FLT_MIN * 0.5f && kept != 0.0f, "kept subnormal when not flushing: %g", kept);
    CHECK_MSG((_mm_getcsr() & 0xffc0u) == before, "the caller's MXCSR is restored");
    /* This thread still computes subnormals. */
    volatile float tiny = FLT_MIN;
    CHECK(tiny * 0.5f != 0.0f);
#endif
    expect_refused("{\"model\": {\"layers\": " MLP_LAYERS "}, " SGD_JSON ","
                   " \"flush_denormals\": 1, " DATASET_JSON "}",
                   LOOM_ERR_INVALID_ARGUMENT, "flush_denormals: must be true or false");
}

int main(void)
{
    if (plugin_open(&plugin) != 0) {
        CHECK(!"native.so loads");
        return CHECK_DONE();
    }
    CHECK_STR_EQ(plugin.module->id, "native");
    CHECK(plugin.factory->style == LOOM_FRAMEWORK_TRAINER);
    tmpdir_make(data_dir, sizeof data_dir);
    write_bars_dataset(data_dir, "train", 200, 42, 1);
    write_bars_dataset(data_dir, "t10k", 60, 43, 1);
    test_bad_specs();
    test_call_errors();
    test_grad_scale();
    test_state_round_trip();
    test_flush_denormals();
    test_training();
    tmpdir_remove(data_dir);
    plugin_close(&plugin);
    return CHECK_DONE();
}
