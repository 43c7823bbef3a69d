/*
 * tests/unit/safetensors/test_tensor_stage.c - the host copies a worker
 * makes of its state tensors for checkpoints: pull and push copy both ways,
 * a checkpoint written from one stage restores through another, and a
 * device view that cannot be copied (no GPU, or no CUDA in the build) is a
 * clear error, never a crash.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "sched/sched.h"
#include "train/checkpoint.h"
#include "train/tensor_stage.h"
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
#include "util/cuda_dl.h"
#endif

static loom_tensor_view f32_view(const char *name, float *data, int64_t n)
{
    loom_tensor_view v = {.struct_size = sizeof v, .dtype = LOOM_DTYPE_F32, .ndim = 1,
                          .name = name, .data = data, .nbytes = (uint64_t)n * sizeof(float)};
    v.shape[0] = n;
    return v;
}

int main(void)
{
    char err[512] = "";
    float w[6] = {1, 2, 3, 4, 5, 6}, m[3] = {-1, -2, -3};
    loom_tensor_view views[2] = {f32_view("fc.weight", w, 6), f32_view("sgd.v.fc.weight", m, 3)};
    int32_t roles[2] = {LOOM_TENSOR_PARAMETER, LOOM_TENSOR_OPTIMIZER};

    tensor_stage st;
    CHECK(tensor_stage_init(&st, views, 2) == NULL);
    CHECK(st.count == 2);
    CHECK(st.host[0].data != w && st.host[0].nbytes == sizeof w);
    CHECK_STR_EQ(st.host[1].name, "sgd.v.fc.weight");
    CHECK(tensor_stage_pull(&st, views) == NULL);
    CHECK(memcmp(st.host[0].data, w, sizeof w) == 0 && memcmp(st.host[1].data, m, sizeof m) == 0);

    /* A checkpoint from the stage restores through another stage. */
    char dir[] = "/tmp/loom-stage-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[sizeof dir + 32];
    snprintf(path, sizeof path, "%s/epoch-1.safetensors", dir);
    CHECK_MSG(loom_err_take(checkpoint_save(path, st.host, roles, st.count, 0, NULL), err, sizeof err) == LOOM_OK, "%s", err);
    float w2[6] = {0}, m2[3] = {0};
    loom_tensor_view other[2] = {f32_view("fc.weight", w2, 6), f32_view("sgd.v.fc.weight", m2, 3)};
    tensor_stage st2;
    CHECK(tensor_stage_init(&st2, other, 2) == NULL);
    CHECK_MSG(loom_err_take(checkpoint_load(path, st2.host, st2.count, NULL), err, sizeof err) == LOOM_OK, "%s", err);
    CHECK(w2[0] == 0); /* nothing reaches the views before the push */
    CHECK(tensor_stage_push(&st2, other) == NULL);
    CHECK(memcmp(w2, w, sizeof w) == 0 && memcmp(m2, m, sizeof m) == 0);
    unlink(path);
    rmdir(dir);

    /* Device memory without a usable GPU: refused by name. */
    if (sched_cuda_device_count() == 0) {
        loom_tensor_view dev = views[0];
        dev.on_device = 1;
        float out[6];
        err[0] = 0;
        int32_t code = loom_err_take(tensor_copy_to_host(out, &dev), err, sizeof err);
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
        /* The runtime is opened on demand: a CUDA error when it is
         * installed, else a message naming it (tests/cuda_hidden.sh). */
        const cuda_runtime_api *rt;
        loom_error *missing = cuda_runtime_load(&rt);
        CHECK_CONTAINS(err, missing ? "the CUDA runtime cannot be loaded (tried libcudart.so"
                                    : "from the GPU: CUDA error");
        CHECK(code == (missing ? LOOM_E_UNAVAILABLE : LOOM_E_INTERNAL));
        loom_err_free(missing);
#else
        CHECK_CONTAINS(err, "built without CUDA");
        CHECK(code == LOOM_E_UNSUPPORTED);
#endif
        err[0] = 0;
        CHECK(loom_err_take(tensor_copy_from_host(&dev, out), err, sizeof err) != LOOM_OK);
        CHECK(err[0] != 0);
    }
    tensor_stage_free(&st);
    tensor_stage_free(&st2);
    CHECK(st.host == NULL && st.count == 0);
    return CHECK_DONE();
}
