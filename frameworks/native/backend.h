/*
 * backend.h - where the native adapter's tensors live and how they are
 * computed: one table of operations with a CPU implementation (OpenBLAS +
 * the loops in backend_cpu.c) and a CUDA twin (cuBLAS + kernels in
 * backend_cuda.cu). The model code (model.c) only talks to this table, so
 * the same model runs on either.
 *
 * Pointers passed to the operations are "backend memory" (host memory on
 * CPU, device memory on CUDA) unless the name says host. Operations do not
 * report errors one by one: like CUDA's own sticky error, the first failure
 * is remembered and check() returns it, which the adapter calls once per
 * entry point.
 */
#ifndef NATIVE_BACKEND_H
#define NATIVE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct native_backend native_backend;

struct native_backend {
    const char *name; /* "cpu" or "cuda" */
    int on_device;    /* 1: buffers are device memory */
    void *ctx;        /* the implementation's own state */

    /* Memory. alloc returns zeroed memory or NULL. */
    void *(*alloc)(native_backend *be, size_t bytes);
    void (*release)(native_backend *be, void *ptr);
    void (*zero)(native_backend *be, void *ptr, size_t bytes);
    void (*upload)(native_backend *be, void *dst, const void *host_src, size_t bytes);
    void (*download)(native_backend *be, void *host_dst, const void *src, size_t bytes);

    /* Row-major C = alpha * op(A) op(B) + beta * C, op(A) is M x K. */
    void (*gemm)(native_backend *be, int trans_a, int trans_b, int m, int n,
                 int k, float alpha, const float *a, int lda, const float *b,
                 int ldb, float beta, float *c, int ldc);

    void (*bias_add)(native_backend *be, float *y, const float *bias,
                     int64_t batch, int64_t channels, int64_t inner);
    void (*bias_grad)(native_backend *be, const float *dy, float *dbias,
                      int64_t batch, int64_t channels, int64_t inner);
    void (*relu_fwd)(native_backend *be, const float *x, float *y, int64_t n);
    void (*relu_bwd)(native_backend *be, const float *y, const float *dy,
                     float *dx, int64_t n);
    /* sample_ids is backend memory holding one uint64 per batch row. */
    void (*dropout)(native_backend *be, const float *x, float *y, int64_t n,
                    int64_t per_sample, const uint64_t *sample_ids, float rate,
                    uint64_t seed, uint64_t epoch);
    void (*im2col)(native_backend *be, const float *x, float *col, nk_conv_geom g);
    void (*col2im)(native_backend *be, const float *col, float *x, nk_conv_geom g);
    void (*maxpool_fwd)(native_backend *be, const float *x, float *y,
                        int32_t *argmax, int64_t planes, nk_pool_geom g);
    void (*maxpool_bwd)(native_backend *be, const float *dy,
                        const int32_t *argmax, float *dx, int64_t planes,
                        nk_pool_geom g);
    /* labels is backend memory; dlogits may be NULL (evaluation). Sums of
     * the rows' losses and correct predictions come back in host doubles. */
    void (*softmax_xent)(native_backend *be, const float *logits,
                         const int32_t *labels, int64_t batch, int32_t classes,
                         float scale, float *dlogits, double *loss_sum,
                         double *correct_sum);
    void (*sgd)(native_backend *be, float *p, const float *g, float *velocity,
                int64_t n, float lr, float momentum, float weight_decay,
                int32_t nesterov);
    void (*adam)(native_backend *be, float *p, const float *g, float *m,
                 float *v, int64_t n, float lr, float beta1, float beta2,
                 float eps, float weight_decay, float bc1, float bc2);

    /* 0 when every operation so far succeeded; otherwise -1 with the first
     * failure described in `msg`. */
    int (*check)(native_backend *be, char *msg, size_t msglen);
    void (*destroy)(native_backend *be);
};

/* The CPU back end. Pins OpenBLAS to one thread unless OPENBLAS_NUM_THREADS
 * is set (one worker per core: two BLAS pools on two cores fight). */
native_backend *native_backend_cpu_create(void);

/* The CUDA back end on device `index`; NULL with a message in `err` when the
 * plugin was built without CUDA or the device cannot be used. */
native_backend *native_backend_cuda_create(int index, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
