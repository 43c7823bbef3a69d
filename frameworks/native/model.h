/*
 * model.h - a feed-forward network (dense, conv2d, max_pool2d, relu,
 * dropout, flatten) ending in softmax cross-entropy, with all parameters in
 * one flat buffer and all gradients in another of the same layout. The math
 * runs on a native_backend, so the same model runs on CPU or CUDA.
 *
 * Tensor layouts follow PyTorch so checkpoints read naturally there: a
 * dense weight is [out, in], a conv2d weight [filters, channels, k, k],
 * activations are row-major [batch, ...] with images as [C, H, W].
 */
#ifndef NATIVE_MODEL_H
#define NATIVE_MODEL_H

#include <stdint.h>

#include "backend.h"
#include "dataset.h"
#include "spec.h"

/* Rows computed at once; longer batches are split (the result is the same,
 * only the memory for activations is bounded). */
#define NATIVE_MAX_CHUNK 256

/* CPU: samples per pass through a run of per-sample layers (model.c). */
#define NATIVE_RUN_ROWS 1

typedef struct native_param {
    char name[48];       /* "layers.0.weight" */
    int32_t shape[4];
    int32_t ndim;
    int64_t offset;      /* into the flat buffers, in floats */
    int64_t count;
} native_param;

typedef struct native_layer {
    native_layer_spec spec;
    int32_t in_shape[3], in_ndim;
    int32_t out_shape[3], out_ndim;
    int64_t in_size, out_size; /* floats per sample */
    int32_t weight, bias;      /* indices into model->params, -1 if none */
    int32_t needs_input_grad;  /* some earlier layer has parameters */
    nk_conv_geom conv;
    nk_pool_geom pool;
    int32_t *argmax;           /* max_pool2d: backend [capacity, out_size] */
    /* CPU: this layer's output (out_local) or its gradient (dout_local) is
     * needed only while the current samples pass through the run of
     * per-sample layers around it (model.c), so each pass reuses the
     * buffer's first rows, which stay in cache. */
    int32_t out_local, dout_local;
} native_layer;

typedef struct native_model {
    native_backend *be; /* borrowed */
    native_layer *layers;
    int32_t layer_count;
    int32_t in_shape[3], in_ndim;
    int64_t in_size;
    int32_t classes;

    native_param *params;
    int32_t param_tensor_count;
    int64_t param_count; /* floats in the flat buffers */
    float *weights;      /* backend: the flat parameter buffer */
    float *grads;        /* backend: the flat gradient buffer */
    int32_t grads_borrowed; /* grads is the host's memory: never released */

    /* Per-chunk working memory, sized for `capacity` rows. */
    int64_t capacity;
    float **act;         /* act[0] input, act[l + 1] output of layer l */
    float **dact;        /* gradients of the same */
    float *col, *dcol;   /* im2col scratch for one sample */
    int64_t col_size;
    int32_t *labels;     /* backend */
    uint64_t *sample_ids;/* backend */
    int64_t run_rows;    /* CPU: override of NATIVE_RUN_ROWS when > 0 */
    float *host_x;       /* host staging for collation */
    int32_t *host_labels;
} native_model;

/* Builds the model of `spec` for samples of `in_shape` (1-D [features] or
 * 3-D [C, H, W]) and `classes` classes, with parameters initialised like
 * PyTorch's defaults (uniform in +-1/sqrt(fan_in)) from `seed`. Shape errors
 * name the layer: "model.layers[3] (dense): ...". */
int native_model_create(const native_spec *spec, const int32_t *in_shape,
                        int32_t in_ndim, int32_t classes, native_backend *be,
                        uint64_t seed, native_model **out, char *err,
                        size_t errlen);
void native_model_destroy(native_model *m);
/* Moves the gradient buffer into `memory` (host memory of param_count
 * floats, zeroed, which the model uses but never frees): the host offered
 * it (loom_trainer_config.gradient_memory). CPU back end only. */
void native_model_borrow_grads(native_model *m, float *memory);

/* What one pass over a batch needs besides the data. */
typedef struct native_pass {
    int32_t train;        /* 1: dropout active and gradients accumulated */
    float loss_scale;     /* d(objective)/d(row loss), e.g. grad_scale/count */
    uint64_t dropout_seed;
    uint64_t dropout_epoch;
    /* Training, host memory only: told after each layer's backward, in the
     * pass's last chunk, that the byte range of the gradient buffer holding
     * that layer's parameters is final (loom_trainer_config.gradient_ready).
     * NULL: not told. */
    void (*grad_ready)(void *data, uint64_t offset, uint64_t nbytes);
    void *grad_ready_data;
} native_pass;

/* Forward (and, when training, backward) over `rows` <= capacity samples
 * given in host memory (`ids` are their dataset indices, for dropout).
 * Gradients are ADDED to m->grads. Adds the rows' loss and correct counts to
 * the sums. Grows the working memory first when needed. */
int native_model_run(native_model *m, const float *host_x,
                     const int32_t *host_labels, const uint64_t *ids,
                     int64_t rows, const native_pass *pass, double *loss_sum,
                     double *correct_sum, char *err, size_t errlen);

/* Inference: the forward pass (dropout off) over `rows` samples in host
 * memory; the last layer's outputs (logits, [rows, classes]) are copied to
 * host_out. */
int native_model_infer(native_model *m, const float *host_x, int64_t rows, float *host_out,
                       char *err, size_t errlen);

/* The same over dataset samples named by `indices` (checked against
 * ds->count), in chunks of NATIVE_MAX_CHUNK rows. Training adds
 * grad_scale * d(mean loss)/d(params) to m->grads. Returns mean loss and
 * accuracy. */
int native_model_run_dataset(native_model *m, const native_dataset *ds,
                             const char *split_name, const uint64_t *indices,
                             uint32_t count, int32_t train, float grad_scale,
                             uint64_t dropout_seed, uint64_t dropout_epoch,
                             double *mean_loss, double *accuracy, char *err,
                             size_t errlen);

/* Training with pass->grad_ready: the same, telling it after each layer's
 * backward in the last chunk which gradients are final. */
int native_model_train_dataset(native_model *m, const native_dataset *ds,
                               const uint64_t *indices, uint32_t count,
                               float grad_scale, const native_pass *hooks,
                               double *mean_loss, double *accuracy, char *err,
                               size_t errlen);

#endif
