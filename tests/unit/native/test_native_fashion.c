/*
 * test_native_fashion.c - a short real training run: an MLP on a
 * 2,000-sample slice of Fashion-MNIST through native.so's trainer calls.
 * The loss must drop and test accuracy must clearly beat chance (10%).
 * Skipped (exit 77) when the dataset is not installed.
 */
#include <math.h>

#include "../../check.h"
#include "native_test.h"

#define FASHION_DIR "/usr/share/datasets/fashion-mnist"
#define SLICE 2000
#define TEST_SLICE 1000
#define BATCH 32

static const char *spec_json =
    "{\"model\": {\"input\": [1, 28, 28], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 128}, {\"type\": \"relu\"},"
    " {\"type\": \"dense\", \"units\": 10}]},"
    " \"loss\": \"softmax_cross_entropy\","
    " \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9},"
    " \"dataset\": {\"format\": \"idx\","
    " \"train_images\": \"train-images-idx3-ubyte.gz\","
    " \"train_labels\": \"train-labels-idx1-ubyte.gz\","
    " \"test_images\": \"t10k-images-idx3-ubyte.gz\","
    " \"test_labels\": \"t10k-labels-idx1-ubyte.gz\"}, \"init_seed\": 1}";

int main(void)
{
    if (access(FASHION_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("skipped: Fashion-MNIST is not installed in " FASHION_DIR
               " (the CI script installs it)\n");
        return 77;
    }
    plugin_handle plugin;
    if (plugin_open(&plugin) != 0) {
        CHECK(!"native.so loads");
        return CHECK_DONE();
    }
    char msg[1024];
    loom_framework_instance *inst = create_instance(&plugin, spec_json, NULL,
                                                    FASHION_DIR, msg, sizeof msg, NULL);
    CHECK_MSG(inst != NULL, "%s", msg);
    if (!inst) {
        plugin_close(&plugin);
        return CHECK_DONE();
    }
    const loom_framework_factory *f = plugin.factory;
    uint64_t n = 0;
    CHECK(!failed(f->dataset_size(inst, LOOM_SPLIT_TRAIN, &n)) && n == 60000);

    uint64_t idx[SLICE];
    loom_metrics m = {.struct_size = sizeof m};
    double first_epoch = 0, last_epoch = 0;
    uint64_t iteration = 0;
    const uint32_t epochs = 3, steps = SLICE / BATCH;
    for (uint32_t e = 0; e < epochs; e++) {
        uint32_t s = 77 + e;
        for (uint64_t i = 0; i < SLICE; i++)
            idx[i] = i;
        for (uint64_t i = SLICE - 1; i > 0; i--) {
            uint64_t j = lcg_next(&s) % (i + 1), t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        double sum = 0;
        for (uint32_t st = 0; st < steps; st++) {
            loom_step_info info = {.struct_size = sizeof info, .epoch = e,
                                   .epochs = epochs, .iteration = iteration++,
                                   .steps_per_epoch = steps};
            CHECK(!failed(f->zero_grad(inst)));
            CHECK(!failed(f->forward_backward(inst, idx + st * BATCH, BATCH, 1.0f, &m)));
            CHECK(!failed(f->apply(inst, &info)));
            sum += metric(&m, "loss");
        }
        last_epoch = sum / steps;
        if (e == 0)
            first_epoch = last_epoch;
    }
    for (uint64_t i = 0; i < TEST_SLICE; i++)
        idx[i] = i;
    CHECK(!failed(f->evaluate(inst, LOOM_SPLIT_TEST, idx, TEST_SLICE, &m)));
    double acc = metric(&m, "accuracy");
    printf("fashion-mnist slice: train loss %.3f -> %.3f, test loss %.3f, accuracy %.3f\n",
           first_epoch, last_epoch, metric(&m, "loss"), acc);
    CHECK(last_epoch < 0.75 * first_epoch);
    CHECK_MSG(acc > 0.65, "test accuracy %.3f (chance is 0.10)", acc);
    f->destroy(inst);
    plugin_close(&plugin);
    return CHECK_DONE();
}
