/*
 * bench_native.c - single-process training throughput of the native
 * adapter: the MLP 784-512-512-10 on Fashion-MNIST at batch 64, SGD with
 * momentum, driven through native.so's trainer calls exactly like a loom
 * worker with one member (zero_grad, forward_backward, apply). Prints
 * samples per second over about `--seconds` after a short warm-up.
 * `--spec FILE` trains another model spec (an edt.json) instead.
 *
 *   bench_native [--seconds S] [--batch B] [--data DIR] [--plugin PATH] [--spec FILE]
 */
#include <dlfcn.h>
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/host_api.h"
#include "util/fs.h"

static const char *spec_json =
    "{\"model\": {\"input\": [1, 28, 28], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 512}, {\"type\": \"relu\"},"
    " {\"type\": \"dense\", \"units\": 512}, {\"type\": \"relu\"},"
    " {\"type\": \"dense\", \"units\": 10}]},"
    " \"loss\": \"softmax_cross_entropy\","
    " \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9},"
    " \"dataset\": {\"format\": \"idx\","
    " \"train_images\": \"train-images-idx3-ubyte.gz\","
    " \"train_labels\": \"train-labels-idx1-ubyte.gz\"}, \"init_seed\": 1}";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int check(loom_error *e, const char *what)
{
    if (!e)
        return 0;
    fprintf(stderr, "bench_native: %s: %s\n", what, loom_err_message(e));
    loom_err_free(e);
    return -1;
}

int main(int argc, char **argv)
{
    double seconds = 5.0;
    uint32_t batch = 64;
    const char *data_dir = "/usr/share/datasets/fashion-mnist";
    const char *plugin_path = NATIVE_PLUGIN_PATH;
    const char *spec_path = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = (uint32_t)atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--data") == 0)
            data_dir = argv[i + 1];
        else if (strcmp(argv[i], "--plugin") == 0)
            plugin_path = argv[i + 1];
        else if (strcmp(argv[i], "--spec") == 0)
            spec_path = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--seconds S] [--batch B] [--data DIR] "
                            "[--plugin PATH] [--spec FILE]\n", argv[0]);
            return 2;
        }
    }
    void *dl = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "bench_native: %s\n", dlerror());
        return 1;
    }
    loom_module_entry_fn entry = (loom_module_entry_fn)dlsym(dl, LOOM_MODULE_ENTRY_SYMBOL);
    const loom_module *mod = entry ? entry() : NULL;
    loom_host *host = host_api_create("native");
    if (!mod || check(mod->init(host), "init"))
        return 1;
    const loom_framework_factory *f = mod->get_factory(LOOM_FRAMEWORK_FACTORY_ID);

    char *spec_text = NULL;
    if (spec_path && check(fs_read_file(spec_path, 16u << 20, &spec_text, NULL), "the spec"))
        return 1;
    loom_trainer_config cfg = {.struct_size = sizeof cfg, .seed = 1,
                               .device = {.struct_size = sizeof(loom_device),
                                          .kind = LOOM_DEVICE_CPU},
                               .spec_json = spec_text ? spec_text : spec_json,
                               .data_dir = data_dir};
    loom_framework_instance *inst = NULL;
    if (check(f->create(f, &cfg, &inst), "create"))
        return 1;
    uint64_t count = 0;
    if (check(f->dataset_size(inst, LOOM_SPLIT_TRAIN, &count), "dataset_size"))
        return 1;

    /* A shuffled epoch, like the host's sharder hands out. */
    uint64_t *perm = malloc(count * sizeof *perm);
    for (uint64_t i = 0; i < count; i++)
        perm[i] = i;
    srand(1);
    for (uint64_t i = count - 1; i > 0; i--) {
        uint64_t j = (uint64_t)rand() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    uint64_t steps_per_epoch = count / batch, step = 0;
    loom_metrics m = {.struct_size = sizeof m};
    double start = 0, loss = 0;
    uint64_t timed_steps = 0;
    const uint64_t warmup = 20;
    for (;;) {
        if (step == warmup)
            start = now();
        uint64_t at = (step % steps_per_epoch) * batch;
        loom_step_info info = {.struct_size = sizeof info,
                               .epoch = (uint32_t)(step / steps_per_epoch),
                               .epochs = 100, .iteration = step,
                               .steps_per_epoch = steps_per_epoch};
        if (check(f->zero_grad(inst), "zero_grad") ||
            check(f->forward_backward(inst, perm + at, batch, 1.0f, &m), "forward_backward") ||
            check(f->apply(inst, &info), "apply"))
            return 1;
        loss = m.items[0].value;
        step++;
        if (step > warmup) {
            timed_steps++;
            if (now() - start >= seconds)
                break;
        }
    }
    double elapsed = now() - start;
    printf("loom native: %.0f samples/s (%llu steps of %u in %.2f s, last loss %.3f)\n",
           (double)(timed_steps * batch) / elapsed, (unsigned long long)timed_steps,
           batch, elapsed, loss);
    f->destroy(inst);
    free(perm);
    free(spec_text);
    mod->deinit();
    host_api_release(host);
    dlclose(dl);
    return 0;
}
