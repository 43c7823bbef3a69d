/*
 * kernels.h - the element-wise math of the native adapter, written once.
 *
 * Each function computes one output element (or one row/channel) given its
 * index. The CPU back end (backend_cpu.c) calls them from plain loops; the
 * CUDA back end (backend_cuda.cu) calls them from one-thread-per-index
 * kernels. Because both compile this same body, the two back ends cannot
 * drift apart. Rules for code in here: no allocation, no globals, no library
 * calls beyond <math.h>, and every write goes to the element the index names
 * (reductions are written in "gather" form so no two indices race).
 */
#ifndef NATIVE_KERNELS_H
#define NATIVE_KERNELS_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define LOOM_HD __host__ __device__
#else
#define LOOM_HD
#endif

/* ---- geometry ---------------------------------------------------------- */

/* A square-kernel convolution over one sample laid out [C, H, W]. */
typedef struct nk_conv_geom {
    int32_t channels, height, width;
    int32_t kernel, stride, padding;
    int32_t out_height, out_width;
} nk_conv_geom;

/* Max pooling over `planes` independent [H, W] planes. */
typedef struct nk_pool_geom {
    int32_t height, width;
    int32_t kernel, stride;
    int32_t out_height, out_width;
} nk_pool_geom;

/* ---- bias -------------------------------------------------------------- */

/* y is [B, C, P] (P = 1 for dense layers, H*W for conv): element i belongs
 * to channel (i / P) % C. Callers that walk the layout in order (the CPU
 * loops) know the channel without dividing; the others ask here. */
static inline LOOM_HD int64_t nk_bias_channel(int64_t i, int64_t channels,
                                              int64_t inner)
{
    return (i / inner) % channels;
}

/* Adds element i's channel bias. */
static inline LOOM_HD void nk_bias_add(int64_t i, float *y, const float *b,
                                       int64_t channel)
{
    y[i] += b[channel];
}

/* The sum of v[0..n) in NK_SUM_LANES interleaved partial sums, folded
 * pairwise at the end: the order a vector unit adds in, so the CPU loop
 * vectorises (one running sum chains every add through the FPU's latency)
 * and the CUDA twin, running this same body, gets the same bits. */
#define NK_SUM_LANES 16
static inline LOOM_HD float nk_sum(const float *v, int64_t n)
{
    float lane[NK_SUM_LANES];
    for (int j = 0; j < NK_SUM_LANES; j++)
        lane[j] = 0.0f;
    int64_t p = 0;
    for (; p + NK_SUM_LANES <= n; p += NK_SUM_LANES)
        for (int j = 0; j < NK_SUM_LANES; j++)
            lane[j] += v[p + j];
    for (int j = 0; p + j < n; j++)
        lane[j] += v[p + j];
    for (int width = NK_SUM_LANES / 2; width > 0; width /= 2)
        for (int j = 0; j < width; j++)
            lane[j] += lane[j + width];
    return lane[0];
}

/* db[c] += sum over batch and inner positions of dy[:, c, :]. */
static inline LOOM_HD void nk_bias_grad(int64_t c, const float *dy, float *db,
                                        int64_t batch, int64_t channels,
                                        int64_t inner)
{
    float sum = 0.0f;
    for (int64_t b = 0; b < batch; b++)
        sum += nk_sum(dy + (b * channels + c) * inner, inner);
    db[c] += sum;
}

/* ---- relu -------------------------------------------------------------- */

static inline LOOM_HD void nk_relu_fwd(int64_t i, const float *x, float *y)
{
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* Uses the output: y > 0 exactly where x > 0. Both loads happen before
 * the select so the CPU loop vectorises instead of branching on the data. */
static inline LOOM_HD void nk_relu_bwd(int64_t i, const float *y,
                                       const float *dy, float *dx)
{
    float g = dy[i], out = y[i];
    dx[i] = out > 0.0f ? g : 0.0f;
}

/* ---- dropout ----------------------------------------------------------- */

/* splitmix64's finaliser: a good 64-bit mix, cheap on both back ends. */
static inline LOOM_HD uint64_t nk_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform in [0, 1) that depends only on (seed, epoch, sample, element),
 * never on which worker holds the sample or where it sits in the batch, so
 * training gives the same result however the host shards the data. */
static inline LOOM_HD float nk_dropout_uniform(uint64_t seed, uint64_t epoch,
                                               uint64_t sample, uint64_t elem)
{
    uint64_t h = nk_mix64(seed ^ nk_mix64(epoch ^ nk_mix64(sample ^
                                                           nk_mix64(elem))));
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* y = x * mask / (1 - rate). The same call with (dy, dx) is the backward
 * pass, because the mask is recomputed from the same inputs. `per_sample` is
 * the element count of one sample, `sample_ids` the dataset index of each
 * batch row. */
static inline LOOM_HD void nk_dropout(int64_t i, const float *x, float *y,
                                      int64_t per_sample,
                                      const uint64_t *sample_ids, float rate,
                                      uint64_t seed, uint64_t epoch)
{
    int64_t row = i / per_sample;
    float u = nk_dropout_uniform(seed, epoch, sample_ids[row],
                                 (uint64_t)(i % per_sample));
    y[i] = u >= rate ? x[i] / (1.0f - rate) : 0.0f;
}

/* ---- convolution helpers ----------------------------------------------- */

/* col is [C*k*k, Ho*Wo] for one sample; i indexes col. */
static inline LOOM_HD void nk_im2col(int64_t i, const float *x, float *col,
                                     nk_conv_geom g)
{
    int64_t plane = (int64_t)g.out_height * g.out_width;
    int64_t row = i / plane, pos = i % plane;
    int32_t c = (int32_t)(row / (g.kernel * g.kernel));
    int32_t ki = (int32_t)(row / g.kernel % g.kernel);
    int32_t kj = (int32_t)(row % g.kernel);
    int32_t oy = (int32_t)(pos / g.out_width), ox = (int32_t)(pos % g.out_width);
    int32_t iy = oy * g.stride - g.padding + ki;
    int32_t ix = ox * g.stride - g.padding + kj;
    col[i] = (iy >= 0 && iy < g.height && ix >= 0 && ix < g.width)
                 ? x[((int64_t)c * g.height + iy) * g.width + ix]
                 : 0.0f;
}

/* The adjoint of im2col, in gather form: i indexes x ([C, H, W]) and sums
 * every col entry that im2col copied from it. Overwrites x[i]. */
static inline LOOM_HD void nk_col2im(int64_t i, const float *col, float *x,
                                     nk_conv_geom g)
{
    int32_t c = (int32_t)(i / ((int64_t)g.height * g.width));
    int32_t iy = (int32_t)(i / g.width % g.height);
    int32_t ix = (int32_t)(i % g.width);
    int64_t plane = (int64_t)g.out_height * g.out_width;
    float sum = 0.0f;
    for (int32_t ki = 0; ki < g.kernel; ki++) {
        int32_t ty = iy + g.padding - ki; /* = oy * stride */
        if (ty < 0 || ty % g.stride != 0 || ty / g.stride >= g.out_height)
            continue;
        int32_t oy = ty / g.stride;
        for (int32_t kj = 0; kj < g.kernel; kj++) {
            int32_t tx = ix + g.padding - kj;
            if (tx < 0 || tx % g.stride != 0 || tx / g.stride >= g.out_width)
                continue;
            int32_t ox = tx / g.stride;
            int64_t row = ((int64_t)c * g.kernel + ki) * g.kernel + kj;
            sum += col[row * plane + (int64_t)oy * g.out_width + ox];
        }
    }
    x[i] = sum;
}

/* ---- max pooling ------------------------------------------------------- */

/* The winner of output (oy, ox)'s window in one input plane: its offset in
 * the plane (the first of equal maxima). Both back ends' forward passes. */
static inline LOOM_HD int32_t nk_maxpool_window(const float *in, int32_t oy, int32_t ox,
                                                nk_pool_geom g)
{
    int32_t best = (oy * g.stride) * g.width + ox * g.stride;
    for (int32_t ki = 0; ki < g.kernel; ki++)
        for (int32_t kj = 0; kj < g.kernel; kj++) {
            int32_t at = (oy * g.stride + ki) * g.width + ox * g.stride + kj;
            if (in[at] > in[best])
                best = at;
        }
    return best;
}

/* i indexes the output ([planes, Ho, Wo]); argmax gets the winning input
 * offset within the plane, for the backward pass. */
static inline LOOM_HD void nk_maxpool_fwd(int64_t i, const float *x, float *y,
                                          int32_t *argmax, nk_pool_geom g)
{
    int64_t out_plane = (int64_t)g.out_height * g.out_width;
    int64_t p = i / out_plane, pos = i % out_plane;
    int32_t oy = (int32_t)(pos / g.out_width), ox = (int32_t)(pos % g.out_width);
    const float *in = x + p * g.height * g.width;
    int32_t best = nk_maxpool_window(in, oy, ox, g);
    y[i] = in[best];
    argmax[i] = best;
}

/* Gather form: i indexes the input ([planes, H, W]); sums dy of every output
 * window whose maximum was this element. Overwrites dx[i]. */
static inline LOOM_HD void nk_maxpool_bwd(int64_t i, const float *dy,
                                          const int32_t *argmax, float *dx,
                                          nk_pool_geom g)
{
    int64_t in_plane = (int64_t)g.height * g.width;
    int64_t p = i / in_plane;
    int32_t at = (int32_t)(i % in_plane);
    int32_t iy = at / g.width, ix = at % g.width;
    int64_t out_base = p * g.out_height * g.out_width;
    /* Output rows whose window [oy*s, oy*s+k) contains iy. */
    int32_t oy_lo = iy - g.kernel + 1 > 0 ? (iy - g.kernel + 1 + g.stride - 1) / g.stride : 0;
    int32_t oy_hi = iy / g.stride;
    int32_t ox_lo = ix - g.kernel + 1 > 0 ? (ix - g.kernel + 1 + g.stride - 1) / g.stride : 0;
    int32_t ox_hi = ix / g.stride;
    float sum = 0.0f;
    for (int32_t oy = oy_lo; oy <= oy_hi && oy < g.out_height; oy++)
        for (int32_t ox = ox_lo; ox <= ox_hi && ox < g.out_width; ox++) {
            int64_t o = out_base + (int64_t)oy * g.out_width + ox;
            if (argmax[o] == at)
                sum += dy[o];
        }
    dx[i] = sum;
}

/* ---- softmax cross-entropy --------------------------------------------- */

/* One batch row r of logits [B, K]: writes the row's loss and whether its
 * argmax is the label; when dlogits is not NULL writes
 * scale * (softmax - onehot) into that row. */
static inline LOOM_HD void nk_softmax_xent_row(int64_t r, const float *logits,
                                               const int32_t *labels, int32_t k,
                                               float scale, float *dlogits,
                                               float *row_loss,
                                               float *row_correct)
{
    const float *z = logits + r * k;
    int32_t arg = 0;
    for (int32_t j = 1; j < k; j++)
        if (z[j] > z[arg])
            arg = j;
    float max = z[arg];
    float sum = 0.0f;
    for (int32_t j = 0; j < k; j++)
        sum += expf(z[j] - max);
    int32_t y = labels[r];
    row_loss[r] = logf(sum) - (z[y] - max);
    row_correct[r] = arg == y ? 1.0f : 0.0f;
    if (dlogits) {
        float *d = dlogits + r * k;
        float inv = 1.0f / sum;
        for (int32_t j = 0; j < k; j++)
            d[j] = scale * (expf(z[j] - max) * inv - (j == y ? 1.0f : 0.0f));
    }
}

/* ---- optimizers (PyTorch's update rules) ------------------------------- */

/* SGD with momentum: v = mu*v + g; p -= lr*v (nesterov: p -= lr*(g + mu*v)).
 * weight_decay adds wd*p to the gradient first. */
static inline LOOM_HD void nk_sgd(int64_t i, float *p, const float *grad,
                                  float *velocity, float lr, float momentum,
                                  float weight_decay, int32_t nesterov)
{
    float g = grad[i] + weight_decay * p[i];
    if (momentum != 0.0f) {
        float v = momentum * velocity[i] + g;
        velocity[i] = v;
        g = nesterov ? g + momentum * v : v;
    }
    p[i] -= lr * g;
}

/* Adam: m, v are the moment estimates; bc1 = 1 - beta1^t, bc2 = 1 - beta2^t
 * for the step t being taken. */
static inline LOOM_HD void nk_adam(int64_t i, float *p, const float *grad,
                                   float *m, float *v, float lr, float beta1,
                                   float beta2, float eps, float weight_decay,
                                   float bc1, float bc2)
{
    float g = grad[i] + weight_decay * p[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * g;
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
}

#endif
