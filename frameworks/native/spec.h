/*
 * spec.h - the native adapter's job description (the model JSON documented
 * in README.md), parsed and checked field by field. Shapes are checked later,
 * when the model is built against the dataset (model.c).
 */
#ifndef NATIVE_SPEC_H
#define NATIVE_SPEC_H

#include <cjson/cJSON.h>
#include <stdint.h>

typedef enum native_layer_type {
    NATIVE_LAYER_DENSE = 0,
    NATIVE_LAYER_CONV2D = 1,
    NATIVE_LAYER_MAXPOOL2D = 2,
    NATIVE_LAYER_RELU = 3,
    NATIVE_LAYER_DROPOUT = 4,
    NATIVE_LAYER_FLATTEN = 5
} native_layer_type;

/* "dense", "conv2d", ... */
const char *native_layer_type_name(native_layer_type type);

typedef struct native_layer_spec {
    native_layer_type type;
    int32_t units;   /* dense */
    int32_t filters; /* conv2d */
    int32_t kernel;  /* conv2d, max_pool2d */
    int32_t stride;  /* conv2d (default 1), max_pool2d (default kernel) */
    int32_t padding; /* conv2d (default 0) */
    float rate;      /* dropout, in [0, 1) */
} native_layer_spec;

typedef enum native_optimizer_type {
    NATIVE_OPT_SGD = 0,
    NATIVE_OPT_ADAM = 1
} native_optimizer_type;

typedef struct native_optimizer_spec {
    native_optimizer_type type;
    float lr;
    float momentum; /* sgd */
    int32_t nesterov;
    float beta1, beta2, eps; /* adam */
    float weight_decay;
} native_optimizer_spec;

typedef enum native_schedule_type {
    NATIVE_SCHEDULE_CONSTANT = 0,
    NATIVE_SCHEDULE_STEP = 1,
    NATIVE_SCHEDULE_COSINE = 2
} native_schedule_type;

typedef struct native_schedule_spec {
    native_schedule_type type;
    int32_t step_size; /* step: epochs between decays */
    float gamma;       /* step: factor per decay */
    float min_lr;      /* cosine: the floor reached at the end */
} native_schedule_spec;

#define NATIVE_MAX_INPUT_DIMS 3

typedef struct native_spec {
    int32_t input[NATIVE_MAX_INPUT_DIMS]; /* optional; input_ndim 0 if absent */
    int32_t input_ndim;
    native_layer_spec *layers;
    int32_t layer_count;
    native_optimizer_spec optimizer;
    native_schedule_spec schedule;
    uint64_t init_seed;
    int32_t has_init_seed;
    int32_t flush_denormals; /* "flush_denormals", default true (fpmode.h) */
    cJSON *root;          /* the whole document (owned) */
    const cJSON *dataset; /* root's "dataset" object */
} native_spec;

/* Parses `json` into `out`. Returns 0 (LOOM_OK) or a loom_code with a
 * message naming the field, e.g. "model.layers[2] (dense): missing field
 * 'units'". On failure `out` needs no cleanup. */
int native_spec_parse(const char *json, native_spec *out, char *err,
                      size_t errlen);
void native_spec_free(native_spec *spec);

/* The learning rate for the step described, following the schedule. */
float native_schedule_lr(const native_spec *spec, uint32_t epoch,
                         uint32_t epochs, uint64_t iteration,
                         uint64_t steps_per_epoch);

#endif
