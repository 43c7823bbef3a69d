/*
 * backend_cpu.c - the CPU back end: GEMM on OpenBLAS, everything else as
 * plain loops over the shared element functions of kernels.h.
 */
#include "backend.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_ctx {
    float *row_scratch; /* per-row loss and correct flags for softmax_xent */
    int64_t row_capacity;
    float *ones;        /* a vector of 1s for column sums by GEMV */
    int64_t ones_capacity;
    int failed;
} cpu_ctx;

static void *cpu_alloc(native_backend *be, size_t bytes)
{
    (void)be;
    /* 64-byte alignment keeps OpenBLAS on its aligned paths. */
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (p)
        memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_release(native_backend *be, void *ptr)
{
    (void)be;
    free(ptr);
}

static void cpu_zero(native_backend *be, void *ptr, size_t bytes)
{
    (void)be;
    memset(ptr, 0, bytes);
}

static void cpu_copy(native_backend *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    if (dst != src)
        memcpy(dst, src, bytes);
}

static void cpu_gemm(native_backend *be, int trans_a, int trans_b, int m, int n,
                     int k, float alpha, const float *a, int lda, const float *b,
                     int ldb, float beta, float *c, int ldc)
{
    (void)be;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
                ldb, beta, c, ldc);
}

/* Walks [B, C, P] in order so the channel is known without dividing. */
static void cpu_bias_add(native_backend *be, float *restrict y,
                         const float *restrict bias, int64_t batch,
                         int64_t channels, int64_t inner)
{
    (void)be;
    if (inner == 1) { /* dense: vectorise along the row */
        for (int64_t r = 0; r < batch; r++)
            for (int64_t c = 0; c < channels; c++)
                nk_bias_add(r * channels + c, y, bias, c);
        return;
    }
    for (int64_t r = 0; r < batch; r++)
        for (int64_t c = 0; c < channels; c++) {
            int64_t base = (r * channels + c) * inner;
            for (int64_t p = 0; p < inner; p++)
                nk_bias_add(base + p, y, bias, c);
        }
}

static void cpu_bias_grad(native_backend *be, const float *dy, float *dbias,
                          int64_t batch, int64_t channels, int64_t inner)
{
    cpu_ctx *ctx = be->ctx;
    if (inner == 1 && batch <= INT32_MAX && channels <= INT32_MAX) {
        /* Dense layers: a column sum, dbias += dy^T * ones, which BLAS does
         * with contiguous reads where the per-channel loop would stride. */
        if (batch > ctx->ones_capacity) {
            float *grown = realloc(ctx->ones, (size_t)batch * sizeof(float));
            if (!grown) {
                ctx->failed = 1;
                return;
            }
            ctx->ones = grown;
            for (int64_t i = ctx->ones_capacity; i < batch; i++)
                ctx->ones[i] = 1.0f;
            ctx->ones_capacity = batch;
        }
        cblas_sgemv(CblasRowMajor, CblasTrans, (int)batch, (int)channels, 1.0f, dy,
                    (int)channels, ctx->ones, 1, 1.0f, dbias, 1);
        return;
    }
    for (int64_t c = 0; c < channels; c++)
        nk_bias_grad(c, dy, dbias, batch, channels, inner);
}

static void cpu_relu_fwd(native_backend *be, const float *restrict x,
                         float *restrict y, int64_t n)
{
    (void)be;
    for (int64_t i = 0; i < n; i++)
        nk_relu_fwd(i, x, y);
}

static void cpu_relu_bwd(native_backend *be, const float *restrict y,
                         const float *restrict dy, float *restrict dx, int64_t n)
{
    (void)be;
    for (int64_t i = 0; i < n; i++)
        nk_relu_bwd(i, y, dy, dx);
}

static void cpu_dropout(native_backend *be, const float *restrict x,
                        float *restrict y, int64_t n,
                        int64_t per_sample, const uint64_t *sample_ids,
                        float rate, uint64_t seed, uint64_t epoch)
{
    (void)be;
    for (int64_t i = 0; i < n; i++)
        nk_dropout(i, x, y, per_sample, sample_ids, rate, seed, epoch);
}

/* The output columns [lo, hi) of kernel column kj whose input column
 * ox * stride - padding + kj falls inside the image; the others read the
 * zero padding. */
static void conv_valid_columns(int32_t kj, nk_conv_geom g, int32_t *lo, int32_t *hi)
{
    int32_t first = g.padding - kj;               /* ox * stride >= first */
    int32_t last = g.width - 1 + g.padding - kj;  /* ox * stride <= last */
    int32_t l = first <= 0 ? 0 : (first + g.stride - 1) / g.stride;
    int32_t h = last < 0 ? 0 : last / g.stride + 1;
    if (h > g.out_width)
        h = g.out_width;
    if (l > h)
        l = h;
    *lo = l;
    *hi = h;
}

/* im2col's row (c, ki, kj) when the output is as wide as the input with
 * stride 1 ("same" padding): its in-image rows are one contiguous stretch
 * of the input shifted by kj - padding, so one copy moves them all; then
 * the few entries that read the padding at each row's ends, which that
 * copy filled from the neighbouring row, become zeros. */
static void im2col_same_row(const float *x, float *dst, int32_t c, int32_t ki,
                            int32_t kj, nk_conv_geom g)
{
    int32_t w = g.width, lo, hi;
    conv_valid_columns(kj, g, &lo, &hi);
    int32_t oy_lo = g.padding - ki > 0 ? g.padding - ki : 0;
    int32_t oy_hi = g.height + g.padding - ki < g.out_height ? g.height + g.padding - ki
                                                             : g.out_height;
    if (oy_hi <= oy_lo || hi <= lo) {
        memset(dst, 0, sizeof(float) * (size_t)g.out_height * (size_t)w);
        return;
    }
    memset(dst, 0, sizeof(float) * (size_t)oy_lo * (size_t)w);
    memset(dst + (int64_t)oy_hi * w, 0, sizeof(float) * (size_t)(g.out_height - oy_hi) * (size_t)w);
    /* Entry j of the row reads input element shift + j. Copied from the
     * first row's first in-image entry to the last row's last, so every
     * read stays inside the channel's plane. */
    int64_t shift = ((int64_t)c * g.height - g.padding + ki) * w + kj - g.padding;
    int64_t from = (int64_t)oy_lo * w + lo, to = (int64_t)(oy_hi - 1) * w + hi;
    memcpy(dst + from, x + shift + from, sizeof(float) * (size_t)(to - from));
    for (int32_t oy = oy_lo; oy < oy_hi; oy++) {
        float *row = dst + (int64_t)oy * w;
        for (int32_t ox = 0; ox < lo; ox++)
            row[ox] = 0.0f;
        for (int32_t ox = hi; ox < w; ox++)
            row[ox] = 0.0f;
    }
}

/* The same mapping as nk_im2col (which the CUDA twin runs per element),
 * walked row by row with the padding cut off each row's ends, so the
 * middle is a plain (stride 1: contiguous) copy: per element, nk_im2col's
 * index arithmetic costs six 64-bit divisions. test_native_grad holds the
 * two to the same bits. */
static void cpu_im2col(native_backend *be, const float *x, float *col,
                       nk_conv_geom g)
{
    (void)be;
    int64_t plane = (int64_t)g.out_height * g.out_width;
    int same = g.stride == 1 && g.out_width == g.width;
    for (int32_t c = 0; c < g.channels; c++)
        for (int32_t ki = 0; ki < g.kernel; ki++)
            for (int32_t kj = 0; kj < g.kernel; kj++) {
                float *dst = col + (((int64_t)c * g.kernel + ki) * g.kernel + kj) * plane;
                if (same) {
                    im2col_same_row(x, dst, c, ki, kj, g);
                    continue;
                }
                int32_t lo, hi;
                conv_valid_columns(kj, g, &lo, &hi);
                for (int32_t oy = 0; oy < g.out_height; oy++, dst += g.out_width) {
                    int32_t iy = oy * g.stride - g.padding + ki;
                    if (iy < 0 || iy >= g.height) {
                        memset(dst, 0, sizeof(float) * (size_t)g.out_width);
                        continue;
                    }
                    /* Input column of ox: ox * stride + shift, inside the
                     * row for every ox in [lo, hi). */
                    const float *src = x + ((int64_t)c * g.height + iy) * g.width;
                    int32_t shift = kj - g.padding;
                    /* The padded ends are a column or two: a loop, not memset. */
                    for (int32_t ox = 0; ox < lo; ox++)
                        dst[ox] = 0.0f;
                    if (g.stride == 1)
                        memcpy(dst + lo, src + lo + shift, sizeof(float) * (size_t)(hi - lo));
                    else
                        for (int32_t ox = lo; ox < hi; ox++)
                            dst[ox] = src[ox * g.stride + shift];
                    for (int32_t ox = hi; ox < g.out_width; ox++)
                        dst[ox] = 0.0f;
                }
            }
}

/* Entries at rows' padded ends a one-stretch col2im row sets aside. */
#define COL2IM_SAVED_MAX 512

/* col2im's row (c, ki, kj) with "same" padding and stride 1, the adjoint
 * of im2col_same_row: one add over the contiguous stretch. The entries at
 * each row's padded ends land, in that stretch, on the neighbouring row's
 * end elements, which no other entry of this row touches; their values are
 * set aside before and put back after, so every element gets exactly the
 * sum the row-by-row loop gives, in the same order. Returns 0 when the
 * padded ends are too many to set aside (the caller walks rows). */
static int col2im_same_row(const float *restrict src, float *restrict x, int32_t c,
                           int32_t ki, int32_t kj, nk_conv_geom g)
{
    int32_t w = g.width, lo, hi;
    conv_valid_columns(kj, g, &lo, &hi);
    int32_t oy_lo = g.padding - ki > 0 ? g.padding - ki : 0;
    int32_t oy_hi = g.height + g.padding - ki < g.out_height ? g.height + g.padding - ki
                                                             : g.out_height;
    if (oy_hi <= oy_lo || hi <= lo)
        return 1;
    int64_t ends = (int64_t)(oy_hi - oy_lo - 1) * (w - (hi - lo));
    if (ends > COL2IM_SAVED_MAX)
        return 0;
    int64_t shift = ((int64_t)c * g.height - g.padding + ki) * w + kj - g.padding;
    int64_t from = (int64_t)oy_lo * w + lo, to = (int64_t)(oy_hi - 1) * w + hi;
    float saved[COL2IM_SAVED_MAX];
    int n = 0;
    /* Between two rows' in-image stretches: [hi, w) of one, [0, lo) of the next. */
    for (int32_t oy = oy_lo; oy + 1 < oy_hi; oy++)
        for (int64_t j = (int64_t)oy * w + hi; j < (int64_t)(oy + 1) * w + lo; j++)
            saved[n++] = x[shift + j];
    float *dst = x + shift;
    for (int64_t j = from; j < to; j++)
        dst[j] += src[j];
    n = 0;
    for (int32_t oy = oy_lo; oy + 1 < oy_hi; oy++)
        for (int64_t j = (int64_t)oy * w + hi; j < (int64_t)(oy + 1) * w + lo; j++)
            x[shift + j] = saved[n++];
    return 1;
}

/* The adjoint of cpu_im2col in scatter form (nk_col2im gathers, for the
 * GPU, where scattering would race): zero x, then add every column entry
 * that did not read padding back where im2col took it from. */
static void cpu_col2im(native_backend *be, const float *col, float *x,
                       nk_conv_geom g)
{
    (void)be;
    int64_t plane = (int64_t)g.out_height * g.out_width;
    int same = g.stride == 1 && g.out_width == g.width;
    memset(x, 0, sizeof(float) * (size_t)g.channels * (size_t)g.height * (size_t)g.width);
    for (int32_t c = 0; c < g.channels; c++)
        for (int32_t ki = 0; ki < g.kernel; ki++)
            for (int32_t kj = 0; kj < g.kernel; kj++) {
                const float *src = col + (((int64_t)c * g.kernel + ki) * g.kernel + kj) * plane;
                if (same && col2im_same_row(src, x, c, ki, kj, g))
                    continue;
                int32_t lo, hi;
                conv_valid_columns(kj, g, &lo, &hi);
                for (int32_t oy = 0; oy < g.out_height; oy++, src += g.out_width) {
                    int32_t iy = oy * g.stride - g.padding + ki;
                    if (iy < 0 || iy >= g.height)
                        continue;
                    int32_t shift = kj - g.padding;
                    float *restrict dst = x + ((int64_t)c * g.height + iy) * g.width;
                    const float *restrict from = src;
                    if (g.stride == 1)
                        for (int32_t ox = lo; ox < hi; ox++)
                            dst[ox + shift] += from[ox];
                    else
                        for (int32_t ox = lo; ox < hi; ox++)
                            dst[ox * g.stride + shift] += from[ox];
                }
            }
}

/* The common 2x2 window with stride 2: nk_maxpool_window's comparisons in
 * its order (the first of equal maxima wins), written as selects, because
 * on real data the branch on which element is larger is a coin toss the
 * predictor loses. */
static void maxpool2_fwd_plane(const float *restrict in, float *restrict y,
                               int32_t *restrict argmax, nk_pool_geom g)
{
    for (int32_t oy = 0; oy < g.out_height; oy++) {
        const float *top = in + (int64_t)(2 * oy) * g.width, *bottom = top + g.width;
        int32_t row_at = 2 * oy * g.width;
        for (int32_t ox = 0; ox < g.out_width; ox++) {
            float a = top[2 * ox], b = top[2 * ox + 1];
            float c = bottom[2 * ox], d = bottom[2 * ox + 1];
            int32_t at = row_at + 2 * ox;
            float best = a;
            int32_t best_at = at;
            best_at = b > best ? at + 1 : best_at;
            best = b > best ? b : best;
            best_at = c > best ? at + g.width : best_at;
            best = c > best ? c : best;
            best_at = d > best ? at + g.width + 1 : best_at;
            best = d > best ? d : best;
            y[ox] = best;
            argmax[ox] = best_at;
        }
        y += g.out_width;
        argmax += g.out_width;
    }
}

/* nk_maxpool_fwd's mapping walked plane by plane and row by row, with the
 * same window body: per element, its index arithmetic costs 64-bit
 * divisions, which made max-pooling most of a CNN step on the CPU. */
static void cpu_maxpool_fwd(native_backend *be, const float *x, float *y,
                            int32_t *argmax, int64_t planes, nk_pool_geom g)
{
    (void)be;
    int64_t in_plane = (int64_t)g.height * g.width;
    int64_t out_plane = (int64_t)g.out_height * g.out_width;
    if (g.kernel == 2 && g.stride == 2) {
        for (int64_t p = 0; p < planes; p++)
            maxpool2_fwd_plane(x + p * in_plane, y + p * out_plane,
                               argmax + p * out_plane, g);
        return;
    }
    for (int64_t p = 0; p < planes; p++) {
        const float *in = x + p * in_plane;
        for (int32_t oy = 0; oy < g.out_height; oy++)
            for (int32_t ox = 0; ox < g.out_width; ox++, y++, argmax++) {
                int32_t best = nk_maxpool_window(in, oy, ox, g);
                *y = in[best];
                *argmax = best;
            }
    }
}

/* The adjoint in scatter form (nk_maxpool_bwd gathers, for the GPU, where
 * scattering would race): zero dx, then add each output's gradient to its
 * window's winner. Outputs are visited in ascending order, the order the
 * gather sums in, so both give the same bits. */
static void cpu_maxpool_bwd(native_backend *be, const float *dy,
                            const int32_t *argmax, float *dx, int64_t planes,
                            nk_pool_geom g)
{
    (void)be;
    int64_t in_plane = (int64_t)g.height * g.width;
    int64_t out_plane = (int64_t)g.out_height * g.out_width;
    memset(dx, 0, sizeof(float) * (size_t)(planes * in_plane));
    for (int64_t p = 0; p < planes; p++, dx += in_plane)
        for (int64_t o = 0; o < out_plane; o++, dy++, argmax++)
            dx[*argmax] += *dy;
}

static void cpu_softmax_xent(native_backend *be, const float *logits,
                             const int32_t *labels, int64_t batch,
                             int32_t classes, float scale, float *dlogits,
                             double *loss_sum, double *correct_sum)
{
    cpu_ctx *ctx = be->ctx;
    if (batch > ctx->row_capacity) {
        float *grown = realloc(ctx->row_scratch, (size_t)batch * 2 * sizeof(float));
        if (!grown) {
            ctx->failed = 1;
            return;
        }
        ctx->row_scratch = grown;
        ctx->row_capacity = batch;
    }
    float *row_loss = ctx->row_scratch, *row_correct = ctx->row_scratch + batch;
    for (int64_t r = 0; r < batch; r++)
        nk_softmax_xent_row(r, logits, labels, classes, scale, dlogits,
                            row_loss, row_correct);
    double loss = 0.0, correct = 0.0;
    for (int64_t r = 0; r < batch; r++) {
        loss += row_loss[r];
        correct += row_correct[r];
    }
    *loss_sum = loss;
    *correct_sum = correct;
}

static void cpu_sgd(native_backend *be, float *restrict p, const float *restrict g,
                    float *restrict velocity, int64_t n, float lr, float momentum,
                    float weight_decay, int32_t nesterov)
{
    (void)be;
    /* Separate loops per variant so each vectorises without branches. */
    if (momentum == 0.0f)
        for (int64_t i = 0; i < n; i++)
            nk_sgd(i, p, g, velocity, lr, 0.0f, weight_decay, 0);
    else if (!nesterov)
        for (int64_t i = 0; i < n; i++)
            nk_sgd(i, p, g, velocity, lr, momentum, weight_decay, 0);
    else
        for (int64_t i = 0; i < n; i++)
            nk_sgd(i, p, g, velocity, lr, momentum, weight_decay, 1);
}

static void cpu_adam(native_backend *be, float *restrict p, const float *restrict g,
                     float *restrict m, float *restrict v, int64_t n, float lr, float beta1, float beta2,
                     float eps, float weight_decay, float bc1, float bc2)
{
    (void)be;
    for (int64_t i = 0; i < n; i++)
        nk_adam(i, p, g, m, v, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
}

static int cpu_check(native_backend *be, char *msg, size_t msglen)
{
    cpu_ctx *ctx = be->ctx;
    if (!ctx->failed)
        return 0;
    if (msg && msglen)
        strncpy(msg, "cpu back end: out of memory", msglen - 1), msg[msglen - 1] = 0;
    return -1;
}

static void cpu_destroy(native_backend *be)
{
    if (!be)
        return;
    cpu_ctx *ctx = be->ctx;
    free(ctx->row_scratch);
    free(ctx->ones);
    free(ctx);
    free(be);
}

native_backend *native_backend_cpu_create(void)
{
    native_backend *be = calloc(1, sizeof(*be));
    cpu_ctx *ctx = calloc(1, sizeof(*ctx));
    if (!be || !ctx) {
        free(be);
        free(ctx);
        return NULL;
    }
    /* One worker per core: unless the operator chose a count, keep BLAS to
     * the calling thread so two workers' thread pools do not fight. */
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
    *be = (native_backend){
        .name = "cpu",
        .on_device = 0,
        .ctx = ctx,
        .alloc = cpu_alloc,
        .release = cpu_release,
        .zero = cpu_zero,
        .upload = cpu_copy,
        .download = cpu_copy,
        .gemm = cpu_gemm,
        .bias_add = cpu_bias_add,
        .bias_grad = cpu_bias_grad,
        .relu_fwd = cpu_relu_fwd,
        .relu_bwd = cpu_relu_bwd,
        .dropout = cpu_dropout,
        .im2col = cpu_im2col,
        .col2im = cpu_col2im,
        .maxpool_fwd = cpu_maxpool_fwd,
        .maxpool_bwd = cpu_maxpool_bwd,
        .softmax_xent = cpu_softmax_xent,
        .sgd = cpu_sgd,
        .adam = cpu_adam,
        .check = cpu_check,
        .destroy = cpu_destroy,
    };
    return be;
}
