/*
 * backend_cuda.cu - the CUDA twin of backend_cpu.c: GEMM on cuBLAS, the
 * element-wise work as one-thread-per-index kernels that call the same
 * functions of kernels.h as the CPU loops. Built only when CMake found the
 * CUDA toolkit (LOOM_HAVE_CUDA), as the companion library native_cuda.so
 * that backend_cuda_loader.c opens on demand; it exports only
 * native_backend_cuda_create. All work goes to one stream; the first CUDA
 * or cuBLAS failure is kept and reported by check().
 */
#include "backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

struct cuda_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    float *row_scratch; /* device: per-row loss then correct flags */
    float *row_host;    /* host copy of the same */
    int64_t row_capacity;
    char error[256];
};

const int threads_per_block = 256;

inline unsigned blocks_for(int64_t n)
{
    return (unsigned)((n + threads_per_block - 1) / threads_per_block);
}

void record(native_backend *be, const char *what, const char *detail)
{
    cuda_ctx *ctx = (cuda_ctx *)be->ctx;
    if (ctx->error[0] == 0)
        snprintf(ctx->error, sizeof ctx->error, "cuda back end: %s: %s", what,
                 detail);
}

bool ok(native_backend *be, cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess)
        return true;
    record(be, what, cudaGetErrorString(rc));
    return false;
}

bool ok_blas(native_backend *be, cublasStatus_t rc, const char *what)
{
    if (rc == CUBLAS_STATUS_SUCCESS)
        return true;
    char code[32];
    snprintf(code, sizeof code, "cuBLAS status %d", (int)rc);
    record(be, what, code);
    return false;
}

cuda_ctx *ctx_of(native_backend *be) { return (cuda_ctx *)be->ctx; }

/* Launch checks go through cudaGetLastError right after the launch. */
#define LAUNCH(be, name, n, ...)                                               \
    do {                                                                       \
        if ((n) > 0) {                                                         \
            name<<<blocks_for(n), threads_per_block, 0, ctx_of(be)->stream>>>( \
                __VA_ARGS__);                                                  \
            ok(be, cudaGetLastError(), #name);                                 \
        }                                                                      \
    } while (0)

/* ---- kernels: each thread computes one index through kernels.h -------- */

__global__ void k_bias_add(int64_t n, float *y, const float *b, int64_t c, int64_t inner)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_bias_add(i, y, b, nk_bias_channel(i, c, inner));
}

__global__ void k_bias_grad(int64_t channels, const float *dy, float *db,
                            int64_t batch, int64_t inner)
{
    int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < channels)
        nk_bias_grad(c, dy, db, batch, channels, inner);
}

__global__ void k_relu_fwd(int64_t n, const float *x, float *y)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_relu_fwd(i, x, y);
}

__global__ void k_relu_bwd(int64_t n, const float *y, const float *dy, float *dx)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_relu_bwd(i, y, dy, dx);
}

__global__ void k_dropout(int64_t n, const float *x, float *y, int64_t per_sample,
                          const uint64_t *ids, float rate, uint64_t seed,
                          uint64_t epoch)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_dropout(i, x, y, per_sample, ids, rate, seed, epoch);
}

__global__ void k_im2col(int64_t n, const float *x, float *col, nk_conv_geom g)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_im2col(i, x, col, g);
}

__global__ void k_col2im(int64_t n, const float *col, float *x, nk_conv_geom g)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_col2im(i, col, x, g);
}

__global__ void k_maxpool_fwd(int64_t n, const float *x, float *y, int32_t *argmax,
                              nk_pool_geom g)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_maxpool_fwd(i, x, y, argmax, g);
}

__global__ void k_maxpool_bwd(int64_t n, const float *dy, const int32_t *argmax,
                              float *dx, nk_pool_geom g)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_maxpool_bwd(i, dy, argmax, dx, g);
}

__global__ void k_softmax_xent(int64_t batch, const float *logits, const int32_t *labels,
                               int32_t k, float scale, float *dlogits,
                               float *row_loss, float *row_correct)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r < batch)
        nk_softmax_xent_row(r, logits, labels, k, scale, dlogits, row_loss,
                            row_correct);
}

__global__ void k_sgd(int64_t n, float *p, const float *g, float *vel, float lr,
                      float momentum, float wd, int32_t nesterov)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_sgd(i, p, g, vel, lr, momentum, wd, nesterov);
}

__global__ void k_adam(int64_t n, float *p, const float *g, float *m, float *v,
                       float lr, float b1, float b2, float eps, float wd,
                       float bc1, float bc2)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        nk_adam(i, p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2);
}

/* ---- the operations table --------------------------------------------- */

void *cu_alloc(native_backend *be, size_t bytes)
{
    void *p = NULL;
    if (!ok(be, cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc"))
        return NULL;
    if (!ok(be, cudaMemsetAsync(p, 0, bytes, ctx_of(be)->stream), "cudaMemset")) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

void cu_release(native_backend *be, void *ptr)
{
    if (ptr)
        ok(be, cudaFree(ptr), "cudaFree");
}

void cu_zero(native_backend *be, void *ptr, size_t bytes)
{
    ok(be, cudaMemsetAsync(ptr, 0, bytes, ctx_of(be)->stream), "cudaMemset");
}

void cu_upload(native_backend *be, void *dst, const void *src, size_t bytes)
{
    ok(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                           ctx_of(be)->stream),
       "upload");
}

/* Synchronous: the caller reads the host copy right after. */
void cu_download(native_backend *be, void *dst, const void *src, size_t bytes)
{
    cuda_ctx *ctx = ctx_of(be);
    if (ok(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream),
           "download"))
        ok(be, cudaStreamSynchronize(ctx->stream), "download");
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
 * operands and the M/N sizes, keep the leading dimensions. */
void cu_gemm(native_backend *be, int trans_a, int trans_b, int m, int n, int k,
             float alpha, const float *a, int lda, const float *b, int ldb,
             float beta, float *c, int ldc)
{
    ok_blas(be,
            cublasSgemm(ctx_of(be)->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                        trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b,
                        ldb, a, lda, &beta, c, ldc),
            "cublasSgemm");
}

void cu_bias_add(native_backend *be, float *y, const float *bias, int64_t batch,
                 int64_t channels, int64_t inner)
{
    int64_t n = batch * channels * inner;
    LAUNCH(be, k_bias_add, n, n, y, bias, channels, inner);
}

void cu_bias_grad(native_backend *be, const float *dy, float *dbias, int64_t batch,
                  int64_t channels, int64_t inner)
{
    LAUNCH(be, k_bias_grad, channels, channels, dy, dbias, batch, inner);
}

void cu_relu_fwd(native_backend *be, const float *x, float *y, int64_t n)
{
    LAUNCH(be, k_relu_fwd, n, n, x, y);
}

void cu_relu_bwd(native_backend *be, const float *y, const float *dy, float *dx,
                 int64_t n)
{
    LAUNCH(be, k_relu_bwd, n, n, y, dy, dx);
}

void cu_dropout(native_backend *be, const float *x, float *y, int64_t n,
                int64_t per_sample, const uint64_t *ids, float rate,
                uint64_t seed, uint64_t epoch)
{
    LAUNCH(be, k_dropout, n, n, x, y, per_sample, ids, rate, seed, epoch);
}

void cu_im2col(native_backend *be, const float *x, float *col, nk_conv_geom g)
{
    int64_t n = (int64_t)g.channels * g.kernel * g.kernel * g.out_height * g.out_width;
    LAUNCH(be, k_im2col, n, n, x, col, g);
}

void cu_col2im(native_backend *be, const float *col, float *x, nk_conv_geom g)
{
    int64_t n = (int64_t)g.channels * g.height * g.width;
    LAUNCH(be, k_col2im, n, n, col, x, g);
}

void cu_maxpool_fwd(native_backend *be, const float *x, float *y, int32_t *argmax,
                    int64_t planes, nk_pool_geom g)
{
    int64_t n = planes * g.out_height * g.out_width;
    LAUNCH(be, k_maxpool_fwd, n, n, x, y, argmax, g);
}

void cu_maxpool_bwd(native_backend *be, const float *dy, const int32_t *argmax,
                    float *dx, int64_t planes, nk_pool_geom g)
{
    int64_t n = planes * g.height * g.width;
    LAUNCH(be, k_maxpool_bwd, n, n, dy, argmax, dx, g);
}

void cu_softmax_xent(native_backend *be, const float *logits, const int32_t *labels,
                     int64_t batch, int32_t classes, float scale, float *dlogits,
                     double *loss_sum, double *correct_sum)
{
    cuda_ctx *ctx = ctx_of(be);
    *loss_sum = 0.0;
    *correct_sum = 0.0;
    if (batch > ctx->row_capacity) {
        cudaFree(ctx->row_scratch);
        free(ctx->row_host);
        ctx->row_scratch = NULL;
        ctx->row_host = (float *)malloc((size_t)batch * 2 * sizeof(float));
        ctx->row_capacity = 0;
        if (!ctx->row_host) {
            record(be, "softmax_xent", "out of host memory");
            return;
        }
        if (!ok(be, cudaMalloc((void **)&ctx->row_scratch,
                               (size_t)batch * 2 * sizeof(float)),
                "cudaMalloc"))
            return;
        ctx->row_capacity = batch;
    }
    float *row_loss = ctx->row_scratch, *row_correct = ctx->row_scratch + batch;
    LAUNCH(be, k_softmax_xent, batch, batch, logits, labels, classes, scale,
           dlogits, row_loss, row_correct);
    cu_download(be, ctx->row_host, ctx->row_scratch, (size_t)batch * 2 * sizeof(float));
    if (ctx->error[0])
        return;
    double loss = 0.0, correct = 0.0;
    for (int64_t r = 0; r < batch; r++) {
        loss += ctx->row_host[r];
        correct += ctx->row_host[batch + r];
    }
    *loss_sum = loss;
    *correct_sum = correct;
}

void cu_sgd(native_backend *be, float *p, const float *g, float *vel, int64_t n,
            float lr, float momentum, float wd, int32_t nesterov)
{
    LAUNCH(be, k_sgd, n, n, p, g, vel, lr, momentum, wd, nesterov);
}

void cu_adam(native_backend *be, float *p, const float *g, float *m, float *v,
             int64_t n, float lr, float b1, float b2, float eps, float wd,
             float bc1, float bc2)
{
    LAUNCH(be, k_adam, n, n, p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2);
}

int cu_check(native_backend *be, char *msg, size_t msglen)
{
    cuda_ctx *ctx = ctx_of(be);
    if (!ctx->error[0])
        ok(be, cudaStreamSynchronize(ctx->stream), "cudaStreamSynchronize");
    if (!ctx->error[0])
        return 0;
    if (msg && msglen)
        snprintf(msg, msglen, "%s", ctx->error);
    return -1;
}

void cu_destroy(native_backend *be)
{
    if (!be)
        return;
    cuda_ctx *ctx = ctx_of(be);
    if (ctx) {
        cudaFree(ctx->row_scratch);
        free(ctx->row_host);
        if (ctx->blas)
            cublasDestroy(ctx->blas);
        if (ctx->stream)
            cudaStreamDestroy(ctx->stream);
        free(ctx);
    }
    free(be);
}

} // namespace

extern "C" __attribute__((visibility("default"))) native_backend *
native_backend_cuda_create(int index, char *err, size_t errlen)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || index < 0 || index >= count) {
        snprintf(err, errlen,
                 "CUDA device %d is not available (%d device(s) visible%s%s)",
                 index, rc == cudaSuccess ? count : 0,
                 rc == cudaSuccess ? "" : ": ",
                 rc == cudaSuccess ? "" : cudaGetErrorString(rc));
        return NULL;
    }
    native_backend *be = (native_backend *)calloc(1, sizeof(*be));
    cuda_ctx *ctx = (cuda_ctx *)calloc(1, sizeof(*ctx));
    if (!be || !ctx) {
        free(be);
        free(ctx);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ctx->device = index;
    be->ctx = ctx;
    if ((rc = cudaSetDevice(index)) != cudaSuccess ||
        (rc = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) !=
            cudaSuccess) {
        snprintf(err, errlen, "CUDA device %d: %s", index, cudaGetErrorString(rc));
        cu_destroy(be);
        return NULL;
    }
    if (cublasCreate(&ctx->blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(ctx->blas, ctx->stream) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "CUDA device %d: cannot create a cuBLAS handle", index);
        cu_destroy(be);
        return NULL;
    }
    be->name = "cuda";
    be->on_device = 1;
    be->alloc = cu_alloc;
    be->release = cu_release;
    be->zero = cu_zero;
    be->upload = cu_upload;
    be->download = cu_download;
    be->gemm = cu_gemm;
    be->bias_add = cu_bias_add;
    be->bias_grad = cu_bias_grad;
    be->relu_fwd = cu_relu_fwd;
    be->relu_bwd = cu_relu_bwd;
    be->dropout = cu_dropout;
    be->im2col = cu_im2col;
    be->col2im = cu_col2im;
    be->maxpool_fwd = cu_maxpool_fwd;
    be->maxpool_bwd = cu_maxpool_bwd;
    be->softmax_xent = cu_softmax_xent;
    be->sgd = cu_sgd;
    be->adam = cu_adam;
    be->check = cu_check;
    be->destroy = cu_destroy;
    return be;
}
