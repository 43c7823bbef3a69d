/*
 * model.c - builds the layer stack with its shapes and parameter layout,
 * and runs forward and backward passes through the backend operations.
 */
#include "model.h"

#include <loom/abi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

#define INVALID LOOM_ERR_INVALID_ARGUMENT

static void plan_local_buffers(native_model *m);

static void format_shape(const int32_t *shape, int32_t ndim, char *out,
                         size_t outlen)
{
    if (ndim == 1)
        snprintf(out, outlen, "[%d]", (int)shape[0]);
    else
        snprintf(out, outlen, "[%d, %d, %d]", (int)shape[0], (int)shape[1],
                 (int)shape[2]);
}

static int64_t shape_size(const int32_t *shape, int32_t ndim)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

static int add_param(native_model *m, int layer, const char *what,
                     const int32_t *shape, int32_t ndim)
{
    native_param *p = &m->params[m->param_tensor_count];
    snprintf(p->name, sizeof p->name, "layers.%d.%s", layer, what);
    memcpy(p->shape, shape, (size_t)ndim * sizeof *shape);
    p->ndim = ndim;
    p->count = 1;
    for (int i = 0; i < ndim; i++)
        p->count *= shape[i];
    p->offset = m->param_count;
    m->param_count += p->count;
    return m->param_tensor_count++;
}

/* Works out one layer's output shape and parameters from its input shape. */
static int plan_layer(native_model *m, int index, char *err, size_t errlen)
{
    native_layer *l = &m->layers[index];
    const char *type = native_layer_type_name(l->spec.type);
    char in[48];
    format_shape(l->in_shape, l->in_ndim, in, sizeof in);
    l->weight = l->bias = -1;
    l->in_size = shape_size(l->in_shape, l->in_ndim);
    switch (l->spec.type) {
    case NATIVE_LAYER_DENSE: {
        if (l->in_ndim != 1)
            return native_err(err, errlen, INVALID,
                              "model.layers[%d] (dense): input has shape %s; add a "
                              "flatten layer before it",
                              index, in);
        int32_t w[2] = {l->spec.units, l->in_shape[0]};
        l->weight = add_param(m, index, "weight", w, 2);
        l->bias = add_param(m, index, "bias", &l->spec.units, 1);
        l->out_ndim = 1;
        l->out_shape[0] = l->spec.units;
        break;
    }
    case NATIVE_LAYER_CONV2D:
    case NATIVE_LAYER_MAXPOOL2D: {
        if (l->in_ndim != 3)
            return native_err(err, errlen, INVALID,
                              "model.layers[%d] (%s): expects a [channels, height, "
                              "width] input but gets %s (it cannot follow flatten "
                              "or dense)",
                              index, type, in);
        int32_t k = l->spec.kernel, s = l->spec.stride;
        int32_t pad = l->spec.type == NATIVE_LAYER_CONV2D ? l->spec.padding : 0;
        int32_t h = l->in_shape[1] + 2 * pad, w = l->in_shape[2] + 2 * pad;
        if (k > h || k > w)
            return native_err(err, errlen, INVALID,
                              "model.layers[%d] (%s): field 'kernel' %d is larger "
                              "than the %dx%d input (padding %d)",
                              index, type, (int)k, (int)l->in_shape[1],
                              (int)l->in_shape[2], (int)pad);
        int32_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
        l->out_ndim = 3;
        l->out_shape[1] = oh;
        l->out_shape[2] = ow;
        if (l->spec.type == NATIVE_LAYER_CONV2D) {
            int32_t wshape[4] = {l->spec.filters, l->in_shape[0], k, k};
            l->weight = add_param(m, index, "weight", wshape, 4);
            l->bias = add_param(m, index, "bias", &l->spec.filters, 1);
            l->out_shape[0] = l->spec.filters;
            l->conv = (nk_conv_geom){l->in_shape[0], l->in_shape[1], l->in_shape[2],
                                     k, s, pad, oh, ow};
            int64_t col = (int64_t)l->in_shape[0] * k * k * oh * ow;
            if (col > m->col_size)
                m->col_size = col;
        } else {
            l->out_shape[0] = l->in_shape[0];
            l->pool = (nk_pool_geom){l->in_shape[1], l->in_shape[2], k, s, oh, ow};
        }
        break;
    }
    case NATIVE_LAYER_FLATTEN:
        l->out_ndim = 1;
        l->out_shape[0] = (int32_t)l->in_size;
        break;
    case NATIVE_LAYER_RELU:
    case NATIVE_LAYER_DROPOUT:
        l->out_ndim = l->in_ndim;
        memcpy(l->out_shape, l->in_shape, sizeof l->out_shape);
        break;
    }
    l->out_size = shape_size(l->out_shape, l->out_ndim);
    return 0;
}

/* splitmix64: deterministic initial weights from the seed. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int init_weights(native_model *m, uint64_t seed, char *err, size_t errlen)
{
    float *host = malloc((size_t)m->param_count * sizeof(float));
    if (!host)
        return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                          "cannot allocate %lld parameters", (long long)m->param_count);
    uint64_t state = seed;
    for (int i = 0; i < m->layer_count; i++) {
        const native_layer *l = &m->layers[i];
        if (l->weight < 0)
            continue;
        const native_param *w = &m->params[l->weight], *b = &m->params[l->bias];
        /* fan_in is everything but the output dimension. */
        double bound = 1.0 / sqrt((double)(w->count / w->shape[0]));
        for (int64_t j = 0; j < w->count; j++)
            host[w->offset + j] =
                (float)(((double)(next_random(&state) >> 11) * 0x1.0p-53 * 2 - 1) * bound);
        for (int64_t j = 0; j < b->count; j++)
            host[b->offset + j] =
                (float)(((double)(next_random(&state) >> 11) * 0x1.0p-53 * 2 - 1) * bound);
    }
    m->be->upload(m->be, m->weights, host, (size_t)m->param_count * sizeof(float));
    free(host);
    return 0;
}

int native_model_create(const native_spec *spec, const int32_t *in_shape,
                        int32_t in_ndim, int32_t classes, native_backend *be,
                        uint64_t seed, native_model **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    native_model *m = calloc(1, sizeof *m);
    if (!m)
        return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    m->be = be;
    m->layer_count = spec->layer_count;
    m->in_ndim = in_ndim;
    memcpy(m->in_shape, in_shape, (size_t)in_ndim * sizeof *in_shape);
    m->in_size = shape_size(in_shape, in_ndim);
    m->classes = classes;
    m->layers = calloc((size_t)m->layer_count, sizeof *m->layers);
    /* At most two parameter tensors per layer. */
    m->params = calloc((size_t)m->layer_count * 2, sizeof *m->params);
    m->act = calloc((size_t)m->layer_count + 1, sizeof *m->act);
    m->dact = calloc((size_t)m->layer_count + 1, sizeof *m->dact);
    int rc;
    if (!m->layers || !m->params || !m->act || !m->dact) {
        rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto fail;
    }
    int seen_params = 0;
    for (int i = 0; i < m->layer_count; i++) {
        native_layer *l = &m->layers[i];
        l->spec = spec->layers[i];
        const int32_t *prev_shape = i ? m->layers[i - 1].out_shape : m->in_shape;
        l->in_ndim = i ? m->layers[i - 1].out_ndim : m->in_ndim;
        memcpy(l->in_shape, prev_shape, sizeof l->in_shape);
        if ((rc = plan_layer(m, i, err, errlen)))
            goto fail;
        l->needs_input_grad = seen_params;
        seen_params |= l->weight >= 0;
    }
    plan_local_buffers(m);
    const native_layer *last = &m->layers[m->layer_count - 1];
    if (last->out_ndim != 1 || last->out_size != classes) {
        char shape[48];
        format_shape(last->out_shape, last->out_ndim, shape, sizeof shape);
        rc = native_err(err, errlen, INVALID,
                        "model.layers[%d] (%s): the last layer outputs %s but the "
                        "dataset has %d classes (end with a dense layer of %d units)",
                        m->layer_count - 1, native_layer_type_name(last->spec.type),
                        shape, (int)classes, (int)classes);
        goto fail;
    }
    if (m->param_count == 0) {
        rc = native_err(err, errlen, INVALID,
                        "model.layers: no layer has parameters (add a dense or "
                        "conv2d layer)");
        goto fail;
    }
    m->weights = be->alloc(be, (size_t)m->param_count * sizeof(float));
    m->grads = be->alloc(be, (size_t)m->param_count * sizeof(float));
    if (!m->weights || !m->grads) {
        rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                        "cannot allocate %lld parameters on the %s back end",
                        (long long)m->param_count, be->name);
        goto fail;
    }
    if ((rc = init_weights(m, seed, err, errlen)))
        goto fail;
    *out = m;
    return 0;
fail:
    native_model_destroy(m);
    return rc;
}

static void release_working_memory(native_model *m)
{
    native_backend *be = m->be;
    for (int i = 0; i < m->layer_count; i++) {
        native_layer *l = &m->layers[i];
        be->release(be, l->argmax);
        l->argmax = NULL;
        if (l->spec.type != NATIVE_LAYER_FLATTEN) {
            be->release(be, m->act[i + 1]);
            be->release(be, m->dact[i + 1]);
        }
    }
    be->release(be, m->act[0]);
    memset(m->act, 0, (size_t)(m->layer_count + 1) * sizeof *m->act);
    memset(m->dact, 0, (size_t)(m->layer_count + 1) * sizeof *m->dact);
    be->release(be, m->col);
    be->release(be, m->dcol);
    be->release(be, m->labels);
    be->release(be, m->sample_ids);
    free(m->host_x);
    free(m->host_labels);
    m->col = m->dcol = m->host_x = NULL;
    m->labels = m->host_labels = NULL;
    m->sample_ids = NULL;
    m->capacity = 0;
}

void native_model_destroy(native_model *m)
{
    if (!m)
        return;
    if (m->act && m->dact && m->layers)
        release_working_memory(m);
    if (m->be) {
        m->be->release(m->be, m->weights);
        if (!m->grads_borrowed)
            m->be->release(m->be, m->grads);
    }
    free(m->layers);
    free(m->params);
    free(m->act);
    free(m->dact);
    free(m);
}

void native_model_borrow_grads(native_model *m, float *memory)
{
    if (!m->grads_borrowed)
        m->be->release(m->be, m->grads);
    m->grads = memory;
    m->grads_borrowed = 1;
}

/* Sizes the working memory for `rows` rows. A flatten layer's output and
 * output gradient alias its input's: it only renames the shape. dact[0],
 * the input's gradient, is never needed and stays NULL. */
static int ensure_capacity(native_model *m, int64_t rows, char *err, size_t errlen)
{
    if (rows <= m->capacity)
        return 0;
    release_working_memory(m);
    native_backend *be = m->be;
    int ok = 1;
#define BALLOC(n) (be->alloc(be, (size_t)(n)))
    m->act[0] = BALLOC(rows * m->in_size * sizeof(float));
    ok &= m->act[0] != NULL;
    for (int i = 0; i < m->layer_count; i++) {
        native_layer *l = &m->layers[i];
        size_t bytes = (size_t)(rows * l->out_size) * sizeof(float);
        if (l->spec.type == NATIVE_LAYER_FLATTEN) {
            m->act[i + 1] = m->act[i];
            m->dact[i + 1] = m->dact[i];
        } else {
            m->act[i + 1] = BALLOC(bytes);
            m->dact[i + 1] = BALLOC(bytes);
            ok &= m->act[i + 1] != NULL && m->dact[i + 1] != NULL;
        }
        if (l->spec.type == NATIVE_LAYER_MAXPOOL2D) {
            l->argmax = BALLOC(rows * l->out_size * sizeof(int32_t));
            ok &= l->argmax != NULL;
        }
    }
    if (m->col_size) {
        m->col = BALLOC(m->col_size * sizeof(float));
        m->dcol = BALLOC(m->col_size * sizeof(float));
        ok &= m->col && m->dcol;
    }
    m->labels = BALLOC(rows * sizeof(int32_t));
    m->sample_ids = BALLOC(rows * sizeof(uint64_t));
    m->host_x = malloc((size_t)(rows * m->in_size) * sizeof(float));
    m->host_labels = malloc((size_t)rows * sizeof(int32_t));
    ok &= m->labels && m->sample_ids && m->host_x && m->host_labels;
#undef BALLOC
    m->capacity = rows;
    if (!ok) {
        release_working_memory(m);
        return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                          "cannot allocate working memory for %lld rows on the %s "
                          "back end",
                          (long long)rows, be->name);
    }
    return 0;
}

/* Floats per sample of act[k] and dact[k]. */
static int64_t act_size(const native_model *m, int k)
{
    return k ? m->layers[k - 1].out_size : m->in_size;
}

/* act[k] from row `first` of the chunk on; a sample-local buffer holds only
 * the rows of the current pass, from its start. */
static float *act_rows(const native_model *m, int k, int64_t first)
{
    int local = k > 0 && m->layers[k - 1].out_local;
    return m->act[k] + (local ? 0 : first * act_size(m, k));
}

/* The same for dact[k]; NULL for dact[0], which is never computed. */
static float *dact_rows(const native_model *m, int k, int64_t first)
{
    if (!m->dact[k])
        return NULL;
    int local = k > 0 && m->layers[k - 1].dout_local;
    return m->dact[k] + (local ? 0 : first * act_size(m, k));
}

/* A relu directly before a max_pool2d runs after it, on the pooled
 * elements (a quarter of them for 2x2 windows): relu and max commute, both
 * being monotone, and the gradients match bit for bit, because a window
 * whose maximum is not positive passes zero either way. The pair runs at
 * one layer's turn (the relu's going forward, the pool's going back); the
 * relu's output buffers hold the pooled values before relu and their
 * gradient. */
static int relu_before_pool(const native_model *m, int i)
{
    return i >= 0 && i + 1 < m->layer_count &&
           m->layers[i].spec.type == NATIVE_LAYER_RELU &&
           m->layers[i + 1].spec.type == NATIVE_LAYER_MAXPOOL2D;
}

/* r is the relu's index. */
static void relu_pool_forward(native_model *m, int r, int64_t first, int64_t rows)
{
    native_backend *be = m->be;
    const native_layer *pool = &m->layers[r + 1];
    float *pooled = act_rows(m, r + 1, first);
    be->maxpool_fwd(be, act_rows(m, r, first), pooled,
                    pool->argmax + first * pool->out_size, rows * pool->in_shape[0],
                    pool->pool);
    be->relu_fwd(be, pooled, act_rows(m, r + 2, first),
                 rows * pool->out_size);
}

static void relu_pool_backward(native_model *m, int r, int64_t first, int64_t rows)
{
    native_backend *be = m->be;
    const native_layer *pool = &m->layers[r + 1];
    if (!pool->needs_input_grad)
        return;
    float *dpooled = dact_rows(m, r + 1, first);
    be->relu_bwd(be, act_rows(m, r + 2, first), dact_rows(m, r + 2, first), dpooled,
                 rows * pool->out_size);
    be->maxpool_bwd(be, dpooled, pool->argmax + first * pool->out_size, dact_rows(m, r, first),
                    rows * pool->in_shape[0], pool->pool);
}

/* Layer i over rows [first, first + rows) of the chunk. */
static void layer_forward(native_model *m, int i, int64_t first, int64_t rows,
                          const native_pass *pass)
{
    if (relu_before_pool(m, i)) {
        relu_pool_forward(m, i, first, rows);
        return;
    }
    if (relu_before_pool(m, i - 1))
        return;
    native_backend *be = m->be;
    native_layer *l = &m->layers[i];
    const float *x = act_rows(m, i, first);
    float *y = act_rows(m, i + 1, first);
    int64_t n_out = rows * l->out_size;
    switch (l->spec.type) {
    case NATIVE_LAYER_DENSE: {
        const float *w = m->weights + m->params[l->weight].offset;
        const float *b = m->weights + m->params[l->bias].offset;
        int out = l->spec.units, in = (int)l->in_size;
        be->gemm(be, 0, 1, (int)rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
        be->bias_add(be, y, b, rows, out, 1);
        break;
    }
    case NATIVE_LAYER_CONV2D: {
        const float *w = m->weights + m->params[l->weight].offset;
        const float *b = m->weights + m->params[l->bias].offset;
        int filters = l->spec.filters;
        int ckk = l->conv.channels * l->conv.kernel * l->conv.kernel;
        int plane = l->conv.out_height * l->conv.out_width;
        for (int64_t s = 0; s < rows; s++) {
            be->im2col(be, x + s * l->in_size, m->col, l->conv);
            be->gemm(be, 0, 0, filters, plane, ckk, 1.0f, w, ckk, m->col, plane,
                     0.0f, y + s * l->out_size, plane);
        }
        be->bias_add(be, y, b, rows, filters, plane);
        break;
    }
    case NATIVE_LAYER_MAXPOOL2D:
        be->maxpool_fwd(be, x, y, l->argmax + first * l->out_size,
                        rows * l->in_shape[0], l->pool);
        break;
    case NATIVE_LAYER_RELU:
        be->relu_fwd(be, x, y, n_out);
        break;
    case NATIVE_LAYER_DROPOUT:
        /* Evaluation: rate 0 keeps every element, i.e. a copy. */
        be->dropout(be, x, y, n_out, l->out_size, m->sample_ids + first,
                    pass->train ? l->spec.rate : 0.0f, pass->dropout_seed,
                    pass->dropout_epoch);
        break;
    case NATIVE_LAYER_FLATTEN:
        break;
    }
}

/* Layer i's backward over rows [first, first + rows) of the chunk. */
static void layer_backward(native_model *m, int i, int64_t first, int64_t rows,
                           const native_pass *pass)
{
    if (relu_before_pool(m, i - 1)) {
        relu_pool_backward(m, i - 1, first, rows);
        return;
    }
    if (relu_before_pool(m, i))
        return;
    native_backend *be = m->be;
    native_layer *l = &m->layers[i];
    const float *x = act_rows(m, i, first), *y = act_rows(m, i + 1, first);
    const float *dy = dact_rows(m, i + 1, first);
    float *dx = dact_rows(m, i, first); /* NULL for i = 0 */
    int need_dx = l->needs_input_grad;
    int64_t n_out = rows * l->out_size;
    switch (l->spec.type) {
    case NATIVE_LAYER_DENSE: {
        const native_param *wp = &m->params[l->weight], *bp = &m->params[l->bias];
        int out = l->spec.units, in = (int)l->in_size;
        be->gemm(be, 1, 0, out, in, (int)rows, 1.0f, dy, out, x, in, 1.0f,
                 m->grads + wp->offset, in);
        be->bias_grad(be, dy, m->grads + bp->offset, rows, out, 1);
        if (need_dx)
            be->gemm(be, 0, 0, (int)rows, in, out, 1.0f, dy, out,
                     m->weights + wp->offset, in, 0.0f, dx, in);
        break;
    }
    case NATIVE_LAYER_CONV2D: {
        const native_param *wp = &m->params[l->weight], *bp = &m->params[l->bias];
        int filters = l->spec.filters;
        int ckk = l->conv.channels * l->conv.kernel * l->conv.kernel;
        int plane = l->conv.out_height * l->conv.out_width;
        be->bias_grad(be, dy, m->grads + bp->offset, rows, filters, plane);
        for (int64_t s = 0; s < rows; s++) {
            const float *dys = dy + s * l->out_size;
            /* Recomputed rather than kept from the forward pass: one sample's
             * columns instead of the whole batch's. */
            be->im2col(be, x + s * l->in_size, m->col, l->conv);
            be->gemm(be, 0, 1, filters, ckk, plane, 1.0f, dys, plane, m->col,
                     plane, 1.0f, m->grads + wp->offset, ckk);
            if (need_dx) {
                be->gemm(be, 1, 0, ckk, plane, filters, 1.0f,
                         m->weights + wp->offset, ckk, dys, plane, 0.0f, m->dcol,
                         plane);
                be->col2im(be, m->dcol, dx + s * l->in_size, l->conv);
            }
        }
        break;
    }
    case NATIVE_LAYER_MAXPOOL2D:
        if (need_dx)
            be->maxpool_bwd(be, dy, l->argmax + first * l->out_size, dx,
                            rows * l->in_shape[0], l->pool);
        break;
    case NATIVE_LAYER_RELU:
        if (need_dx)
            be->relu_bwd(be, y, dy, dx, n_out);
        break;
    case NATIVE_LAYER_DROPOUT:
        if (need_dx)
            be->dropout(be, dy, dx, n_out, l->out_size, m->sample_ids + first,
                        l->spec.rate, pass->dropout_seed, pass->dropout_epoch);
        break;
    case NATIVE_LAYER_FLATTEN:
        break;
    }
}

/* Layer i's parameters' gradients are final: their byte range. */
static void report_final_grads(const native_model *m, int i, const native_pass *pass)
{
    const native_layer *l = &m->layers[i];
    if (l->spec.type != NATIVE_LAYER_DENSE && l->spec.type != NATIVE_LAYER_CONV2D)
        return;
    const native_param *wp = &m->params[l->weight], *bp = &m->params[l->bias];
    int64_t lo = wp->offset < bp->offset ? wp->offset : bp->offset;
    int64_t hi_w = wp->offset + wp->count, hi_b = bp->offset + bp->count;
    int64_t hi = hi_w > hi_b ? hi_w : hi_b;
    pass->grad_ready(pass->grad_ready_data, (uint64_t)lo * sizeof(float),
                     (uint64_t)(hi - lo) * sizeof(float));
}

/* Consecutive layers that work on each sample alone (all but dense) form a
 * run. On the CPU a run goes a few samples at a time through all its
 * layers, so those samples' activations stay in cache from one layer to the
 * next instead of the whole chunk's going out to memory after each layer;
 * the result differs only in the order gradients are summed. Dense layers,
 * and every layer on a device (where a launch per sample would cost more
 * than it saves), take the chunk at once. */
static int is_batch_layer(const native_model *m, int i)
{
    return m->be->on_device || m->layers[i].spec.type == NATIVE_LAYER_DENSE;
}

static int run_end(const native_model *m, int start)
{
    int end = start + 1;
    if (!is_batch_layer(m, start))
        while (end < m->layer_count && !is_batch_layer(m, end))
            end++;
    return end;
}

static int run_start(const native_model *m, int end)
{
    int start = end - 1;
    if (!is_batch_layer(m, start))
        while (start > 0 && !is_batch_layer(m, start - 1))
            start--;
    return start;
}

/* Whether the backward pass reads act[k] (1 <= k < layer_count): as the
 * input of a conv2d or dense, or as the output of a relu (before a pool,
 * the relu's output sits after the pool: act[k + 1]). */
static int read_backward(const native_model *m, int k)
{
    native_layer_type next = m->layers[k].spec.type;
    if (next == NATIVE_LAYER_CONV2D || next == NATIVE_LAYER_DENSE)
        return 1;
    if (relu_before_pool(m, k - 1))
        return 0;
    return m->layers[k - 1].spec.type == NATIVE_LAYER_RELU || relu_before_pool(m, k - 2);
}

/* Marks the buffers strictly inside a CPU run (act[k], dact[k] for
 * start < k < end) that no other pass needs: every gradient, and the
 * activations the backward pass does not read. A flatten's output is its
 * input's buffer, so the two are local only together. */
static void plan_local_buffers(native_model *m)
{
    for (int start = 0, end; start < m->layer_count; start = end) {
        end = run_end(m, start);
        for (int k = start + 1; k < end; k++) {
            m->layers[k - 1].dout_local = 1;
            m->layers[k - 1].out_local = !read_backward(m, k);
        }
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 1; i < m->layer_count; i++) {
            native_layer *l = &m->layers[i], *prev = &m->layers[i - 1];
            if (l->spec.type != NATIVE_LAYER_FLATTEN)
                continue;
            int out = l->out_local && prev->out_local;
            int dout = l->dout_local && prev->dout_local;
            changed |= out != l->out_local || out != prev->out_local ||
                       dout != l->dout_local || dout != prev->dout_local;
            l->out_local = prev->out_local = out;
            l->dout_local = prev->dout_local = dout;
        }
    }
}

/* Rows per pass through a run: the whole chunk for a single layer. */
static int64_t run_step(const native_model *m, int start, int end, int64_t rows)
{
    if (end - start == 1 || is_batch_layer(m, start))
        return rows;
    return m->run_rows > 0 ? m->run_rows : NATIVE_RUN_ROWS;
}

static void forward_layers(native_model *m, int64_t rows, const native_pass *pass)
{
    for (int start = 0, end; start < m->layer_count; start = end) {
        end = run_end(m, start);
        int64_t step = run_step(m, start, end, rows);
        for (int64_t first = 0; first < rows; first += step) {
            int64_t n = rows - first < step ? rows - first : step;
            for (int i = start; i < end; i++)
                layer_forward(m, i, first, n, pass);
        }
    }
}

static void backward_layers(native_model *m, int64_t rows, const native_pass *pass)
{
    for (int end = m->layer_count, start; end > 0; end = start) {
        start = run_start(m, end);
        int64_t step = run_step(m, start, end, rows);
        for (int64_t first = 0; first < rows; first += step) {
            int64_t n = rows - first < step ? rows - first : step;
            for (int i = end - 1; i >= start; i--)
                layer_backward(m, i, first, n, pass);
        }
        if (pass->grad_ready)
            for (int i = end - 1; i >= start; i--)
                report_final_grads(m, i, pass);
    }
}

int native_model_run(native_model *m, const float *host_x,
                     const int32_t *host_labels, const uint64_t *ids,
                     int64_t rows, const native_pass *pass, double *loss_sum,
                     double *correct_sum, char *err, size_t errlen)
{
    int rc = ensure_capacity(m, rows, err, errlen);
    if (rc)
        return rc;
    for (int64_t r = 0; r < rows; r++)
        if (host_labels[r] < 0 || host_labels[r] >= m->classes)
            return native_err(err, errlen, INVALID,
                              "sample %llu has label %d but the model has %d "
                              "classes",
                              (unsigned long long)ids[r], (int)host_labels[r],
                              (int)m->classes);
    native_backend *be = m->be;
    be->upload(be, m->act[0], host_x, (size_t)(rows * m->in_size) * sizeof(float));
    be->upload(be, m->labels, host_labels, (size_t)rows * sizeof(int32_t));
    be->upload(be, m->sample_ids, ids, (size_t)rows * sizeof(uint64_t));
    forward_layers(m, rows, pass);
    double loss = 0, correct = 0;
    be->softmax_xent(be, m->act[m->layer_count], m->labels, rows, m->classes,
                     pass->loss_scale, pass->train ? m->dact[m->layer_count] : NULL,
                     &loss, &correct);
    if (pass->train)
        backward_layers(m, rows, pass);
    *loss_sum += loss;
    *correct_sum += correct;
    return 0;
}

int native_model_infer(native_model *m, const float *host_x, int64_t rows, float *host_out,
                       char *err, size_t errlen)
{
    int rc = ensure_capacity(m, rows, err, errlen);
    if (rc)
        return rc;
    native_backend *be = m->be;
    native_pass pass = {.train = 0};
    be->upload(be, m->act[0], host_x, (size_t)(rows * m->in_size) * sizeof(float));
    forward_layers(m, rows, &pass);
    be->download(be, host_out, m->act[m->layer_count], (size_t)(rows * m->classes) * sizeof(float));
    return 0;
}

static int run_dataset(native_model *m, const native_dataset *ds, const char *split_name,
                       const uint64_t *indices, uint32_t count, int32_t train,
                       float grad_scale, const native_pass *hooks, double *mean_loss,
                       double *accuracy, char *err, size_t errlen);

int native_model_run_dataset(native_model *m, const native_dataset *ds,
                             const char *split_name, const uint64_t *indices,
                             uint32_t count, int32_t train, float grad_scale,
                             uint64_t dropout_seed, uint64_t dropout_epoch,
                             double *mean_loss, double *accuracy, char *err,
                             size_t errlen)
{
    native_pass hooks = {.dropout_seed = dropout_seed, .dropout_epoch = dropout_epoch};
    return run_dataset(m, ds, split_name, indices, count, train, grad_scale, &hooks,
                       mean_loss, accuracy, err, errlen);
}

int native_model_train_dataset(native_model *m, const native_dataset *ds,
                               const uint64_t *indices, uint32_t count,
                               float grad_scale, const native_pass *hooks,
                               double *mean_loss, double *accuracy, char *err,
                               size_t errlen)
{
    return run_dataset(m, ds, "training", indices, count, 1, grad_scale, hooks, mean_loss,
                       accuracy, err, errlen);
}

static int run_dataset(native_model *m, const native_dataset *ds, const char *split_name,
                       const uint64_t *indices, uint32_t count, int32_t train,
                       float grad_scale, const native_pass *hooks, double *mean_loss,
                       double *accuracy, char *err, size_t errlen)
{
    if (count == 0 || !indices)
        return native_err(err, errlen, INVALID, "no samples named (count is 0)");
    for (uint32_t i = 0; i < count; i++)
        if (indices[i] >= ds->count)
            return native_err(err, errlen, INVALID,
                              "sample index %llu is outside the %s set (%llu "
                              "samples)",
                              (unsigned long long)indices[i], split_name,
                              (unsigned long long)ds->count);
    if (ds->sample_size != m->in_size)
        return native_err(err, errlen, INVALID,
                          "the %s set's samples have %lld values but the model "
                          "takes %lld",
                          split_name, (long long)ds->sample_size,
                          (long long)m->in_size);
    int64_t chunk = count < NATIVE_MAX_CHUNK ? count : NATIVE_MAX_CHUNK;
    int rc = ensure_capacity(m, chunk, err, errlen);
    if (rc)
        return rc;
    native_pass pass = {.train = train,
                        .loss_scale = grad_scale / (float)count,
                        .dropout_seed = hooks->dropout_seed,
                        .dropout_epoch = hooks->dropout_epoch};
    double loss = 0, correct = 0;
    for (uint32_t start = 0; start < count; start += (uint32_t)chunk) {
        int64_t rows = count - start < chunk ? count - start : chunk;
        /* Gradients are final only in the last chunk's backward. */
        if (train && start + rows >= count) {
            pass.grad_ready = hooks->grad_ready;
            pass.grad_ready_data = hooks->grad_ready_data;
        }
        for (int64_t r = 0; r < rows; r++)
            ds->get(ds, indices[start + r], m->host_x + r * m->in_size,
                    &m->host_labels[r]);
        if ((rc = native_model_run(m, m->host_x, m->host_labels, indices + start,
                                   rows, &pass, &loss, &correct, err, errlen)))
            return rc;
    }
    *mean_loss = loss / count;
    *accuracy = correct / count;
    return 0;
}
