/*
 * spec.c - parses and checks the model JSON (see spec.h and README.md).
 * Every message names the field by its JSON path and says what was
 * expected, so a user can fix the file without reading this code.
 */
#include "spec.h"

#include <loom/abi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

#define INVALID LOOM_ERR_INVALID_ARGUMENT

static const char *const layer_names[] = {"dense", "conv2d", "max_pool2d",
                                          "relu", "dropout", "flatten"};
#define LAYER_TYPE_COUNT (int)(sizeof layer_names / sizeof layer_names[0])

const char *native_layer_type_name(native_layer_type type)
{
    return (int)type >= 0 && (int)type < LAYER_TYPE_COUNT ? layer_names[type]
                                                         : "unknown";
}

/* Reads an integer field. `min` is the smallest accepted value. */
static int get_int(const cJSON *obj, const char *field, const char *where,
                   int required, int32_t def, int32_t min, int32_t *out,
                   char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!item) {
        if (required)
            return native_err(err, errlen, INVALID, "%s: missing field '%s'",
                              where, field);
        *out = def;
        return 0;
    }
    double v = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!cJSON_IsNumber(item) || v != floor(v) || v < min || v > INT32_MAX)
        return native_err(err, errlen, INVALID,
                          "%s: field '%s' must be an integer >= %d", where,
                          field, (int)min);
    *out = (int32_t)v;
    return 0;
}

/* Reads a number field that must lie in [lo, hi] (hi_open: [lo, hi)). */
static int get_float(const cJSON *obj, const char *field, const char *where,
                     int required, double def, double lo, double hi,
                     int hi_open, float *out, char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!item) {
        if (required)
            return native_err(err, errlen, INVALID, "%s: missing field '%s'",
                              where, field);
        *out = (float)def;
        return 0;
    }
    double v = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!cJSON_IsNumber(item) || !(v >= lo) || v > hi || (hi_open && v >= hi))
        return native_err(err, errlen, INVALID,
                          "%s: field '%s' must be a number in [%g, %g%c", where,
                          field, lo, hi, hi_open ? ')' : ']');
    *out = (float)v;
    return 0;
}

/* Rejects fields a layer type does not know, so a typo ("unit") is caught
 * instead of silently falling back to a default. */
static int check_known_fields(const cJSON *obj, const char *const *known,
                              const char *where, char *err, size_t errlen)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        int found = 0;
        for (const char *const *k = known; *k; k++)
            if (strcmp(item->string, *k) == 0)
                found = 1;
        if (!found)
            return native_err(err, errlen, INVALID, "%s: unknown field '%s'",
                              where, item->string);
    }
    return 0;
}

static int parse_layer(const cJSON *obj, int index, native_layer_spec *layer,
                       char *err, size_t errlen)
{
    char where[64];
    snprintf(where, sizeof where, "model.layers[%d]", index);
    if (!cJSON_IsObject(obj))
        return native_err(err, errlen, INVALID, "%s: must be an object", where);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    if (!type)
        return native_err(err, errlen, INVALID, "%s: missing field 'type'", where);
    if (!cJSON_IsString(type))
        return native_err(err, errlen, INVALID, "%s: field 'type' must be a string",
                          where);
    int t = -1;
    for (int i = 0; i < LAYER_TYPE_COUNT; i++)
        if (strcmp(type->valuestring, layer_names[i]) == 0)
            t = i;
    if (t < 0)
        return native_err(err, errlen, INVALID,
                          "%s: unknown layer type '%s' (expected dense, conv2d, "
                          "max_pool2d, relu, dropout or flatten)",
                          where, type->valuestring);
    memset(layer, 0, sizeof *layer);
    layer->type = (native_layer_type)t;
    snprintf(where, sizeof where, "model.layers[%d] (%s)", index, layer_names[t]);

    int rc = 0;
    switch (layer->type) {
    case NATIVE_LAYER_DENSE: {
        static const char *const known[] = {"type", "units", NULL};
        if ((rc = check_known_fields(obj, known, where, err, errlen)) ||
            (rc = get_int(obj, "units", where, 1, 0, 1, &layer->units, err, errlen)))
            return rc;
        break;
    }
    case NATIVE_LAYER_CONV2D: {
        static const char *const known[] = {"type", "filters", "kernel",
                                            "stride", "padding", NULL};
        if ((rc = check_known_fields(obj, known, where, err, errlen)) ||
            (rc = get_int(obj, "filters", where, 1, 0, 1, &layer->filters, err, errlen)) ||
            (rc = get_int(obj, "kernel", where, 1, 0, 1, &layer->kernel, err, errlen)) ||
            (rc = get_int(obj, "stride", where, 0, 1, 1, &layer->stride, err, errlen)) ||
            (rc = get_int(obj, "padding", where, 0, 0, 0, &layer->padding, err, errlen)))
            return rc;
        break;
    }
    case NATIVE_LAYER_MAXPOOL2D: {
        static const char *const known[] = {"type", "kernel", "stride", NULL};
        if ((rc = check_known_fields(obj, known, where, err, errlen)) ||
            (rc = get_int(obj, "kernel", where, 1, 0, 1, &layer->kernel, err, errlen)) ||
            (rc = get_int(obj, "stride", where, 0, layer->kernel, 1, &layer->stride,
                          err, errlen)))
            return rc;
        break;
    }
    case NATIVE_LAYER_DROPOUT: {
        static const char *const known[] = {"type", "rate", NULL};
        if ((rc = check_known_fields(obj, known, where, err, errlen)) ||
            (rc = get_float(obj, "rate", where, 1, 0, 0, 1, 1, &layer->rate, err,
                            errlen)))
            return rc;
        break;
    }
    case NATIVE_LAYER_RELU:
    case NATIVE_LAYER_FLATTEN: {
        static const char *const known[] = {"type", NULL};
        if ((rc = check_known_fields(obj, known, where, err, errlen)))
            return rc;
        break;
    }
    }
    return 0;
}

static int parse_model(const cJSON *model, native_spec *spec, char *err,
                       size_t errlen)
{
    if (!cJSON_IsObject(model))
        return native_err(err, errlen, INVALID,
                          model ? "model: must be an object"
                                : "missing field 'model'");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(model, "input");
    if (input) {
        int n = cJSON_GetArraySize(input);
        if (!cJSON_IsArray(input) || n < 1 || n > NATIVE_MAX_INPUT_DIMS)
            return native_err(err, errlen, INVALID,
                              "model.input: must be an array of 1 to 3 positive "
                              "integers ([features] or [channels, height, width])");
        for (int i = 0; i < n; i++) {
            const cJSON *d = cJSON_GetArrayItem(input, i);
            if (!cJSON_IsNumber(d) || d->valuedouble < 1 ||
                d->valuedouble != floor(d->valuedouble) || d->valuedouble > INT32_MAX)
                return native_err(err, errlen, INVALID,
                                  "model.input[%d]: must be a positive integer", i);
            spec->input[i] = (int32_t)d->valuedouble;
        }
        /* [H, W] reads as one channel. */
        if (n == 2) {
            spec->input[2] = spec->input[1];
            spec->input[1] = spec->input[0];
            spec->input[0] = 1;
            n = 3;
        }
        spec->input_ndim = n;
    }
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(model, "layers");
    if (!layers)
        return native_err(err, errlen, INVALID, "model: missing field 'layers'");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0)
        return native_err(err, errlen, INVALID,
                          "model.layers: must be a non-empty array of layers");
    spec->layer_count = cJSON_GetArraySize(layers);
    spec->layers = calloc((size_t)spec->layer_count, sizeof *spec->layers);
    if (!spec->layers)
        return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    int i = 0;
    const cJSON *layer;
    cJSON_ArrayForEach(layer, layers)
    {
        int rc = parse_layer(layer, i, &spec->layers[i], err, errlen);
        if (rc)
            return rc;
        i++;
    }
    return 0;
}

static int parse_optimizer(const cJSON *opt, native_optimizer_spec *o, char *err,
                           size_t errlen)
{
    if (!cJSON_IsObject(opt))
        return native_err(err, errlen, INVALID,
                          opt ? "optimizer: must be an object"
                              : "missing field 'optimizer'");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(opt, "type");
    if (!cJSON_IsString(type))
        return native_err(err, errlen, INVALID,
                          "optimizer: %s field 'type' (\"sgd\" or \"adam\")",
                          type ? "expected a string in" : "missing");
    int rc;
    int nesterov = 0;
    if (strcmp(type->valuestring, "sgd") == 0) {
        o->type = NATIVE_OPT_SGD;
        static const char *const known[] = {"type", "lr", "momentum", "nesterov",
                                            "weight_decay", NULL};
        if ((rc = check_known_fields(opt, known, "optimizer (sgd)", err, errlen)) ||
            (rc = get_float(opt, "momentum", "optimizer (sgd)", 0, 0, 0, 1, 1,
                            &o->momentum, err, errlen)))
            return rc;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(opt, "nesterov");
        if (n && !cJSON_IsBool(n))
            return native_err(err, errlen, INVALID,
                              "optimizer (sgd): field 'nesterov' must be true or false");
        nesterov = cJSON_IsTrue(n);
    } else if (strcmp(type->valuestring, "adam") == 0) {
        o->type = NATIVE_OPT_ADAM;
        static const char *const known[] = {"type", "lr", "beta1", "beta2", "eps",
                                            "weight_decay", NULL};
        if ((rc = check_known_fields(opt, known, "optimizer (adam)", err, errlen)) ||
            (rc = get_float(opt, "beta1", "optimizer (adam)", 0, 0.9, 0, 1, 1,
                            &o->beta1, err, errlen)) ||
            (rc = get_float(opt, "beta2", "optimizer (adam)", 0, 0.999, 0, 1, 1,
                            &o->beta2, err, errlen)) ||
            (rc = get_float(opt, "eps", "optimizer (adam)", 0, 1e-8, 0, 1, 0,
                            &o->eps, err, errlen)))
            return rc;
    } else {
        return native_err(err, errlen, INVALID,
                          "optimizer: unknown type '%s' (expected \"sgd\" or \"adam\")",
                          type->valuestring);
    }
    o->nesterov = nesterov;
    const char *where = o->type == NATIVE_OPT_SGD ? "optimizer (sgd)" : "optimizer (adam)";
    if ((rc = get_float(opt, "lr", where, 1, 0, 0, 1e3, 0, &o->lr, err, errlen)) ||
        (rc = get_float(opt, "weight_decay", where, 0, 0, 0, 1, 0, &o->weight_decay,
                        err, errlen)))
        return rc;
    return 0;
}

static int parse_schedule(const cJSON *s, native_schedule_spec *out, char *err,
                          size_t errlen)
{
    out->type = NATIVE_SCHEDULE_CONSTANT;
    out->gamma = 0.1f;
    if (!s)
        return 0;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (!cJSON_IsObject(s) || !cJSON_IsString(type))
        return native_err(err, errlen, INVALID,
                          "lr_schedule: expected an object with a string field "
                          "'type' (\"constant\", \"step\" or \"cosine\")");
    int rc;
    if (strcmp(type->valuestring, "constant") == 0) {
        out->type = NATIVE_SCHEDULE_CONSTANT;
    } else if (strcmp(type->valuestring, "step") == 0) {
        out->type = NATIVE_SCHEDULE_STEP;
        if ((rc = get_int(s, "step_size", "lr_schedule (step)", 1, 0, 1,
                          &out->step_size, err, errlen)) ||
            (rc = get_float(s, "gamma", "lr_schedule (step)", 0, 0.1, 0, 1, 0,
                            &out->gamma, err, errlen)))
            return rc;
    } else if (strcmp(type->valuestring, "cosine") == 0) {
        out->type = NATIVE_SCHEDULE_COSINE;
        if ((rc = get_float(s, "min_lr", "lr_schedule (cosine)", 0, 0, 0, 1e3, 0,
                            &out->min_lr, err, errlen)))
            return rc;
    } else {
        return native_err(err, errlen, INVALID,
                          "lr_schedule: unknown type '%s' (expected \"constant\", "
                          "\"step\" or \"cosine\")",
                          type->valuestring);
    }
    return 0;
}

static int parse_root(native_spec *spec, char *err, size_t errlen)
{
    const cJSON *root = spec->root;
    int rc = parse_model(cJSON_GetObjectItemCaseSensitive(root, "model"), spec,
                         err, errlen);
    if (rc)
        return rc;
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(root, "loss");
    if (loss && (!cJSON_IsString(loss) ||
                 strcmp(loss->valuestring, "softmax_cross_entropy") != 0))
        return native_err(err, errlen, INVALID,
                          "loss: unsupported value (the native adapter offers "
                          "\"softmax_cross_entropy\")");
    if ((rc = parse_optimizer(cJSON_GetObjectItemCaseSensitive(root, "optimizer"),
                              &spec->optimizer, err, errlen)) ||
        (rc = parse_schedule(cJSON_GetObjectItemCaseSensitive(root, "lr_schedule"),
                             &spec->schedule, err, errlen)))
        return rc;
    if (spec->schedule.type == NATIVE_SCHEDULE_COSINE &&
        spec->schedule.min_lr > spec->optimizer.lr)
        return native_err(err, errlen, INVALID,
                          "lr_schedule (cosine): min_lr %g exceeds optimizer.lr %g",
                          spec->schedule.min_lr, spec->optimizer.lr);
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(root, "init_seed");
    if (seed) {
        if (!cJSON_IsNumber(seed) || seed->valuedouble < 0 ||
            seed->valuedouble != floor(seed->valuedouble) || seed->valuedouble > 9.0e15)
            return native_err(err, errlen, INVALID,
                              "init_seed: must be a non-negative integer");
        spec->init_seed = (uint64_t)seed->valuedouble;
        spec->has_init_seed = 1;
    }
    const cJSON *flush = cJSON_GetObjectItemCaseSensitive(root, "flush_denormals");
    if (flush && !cJSON_IsBool(flush))
        return native_err(err, errlen, INVALID, "flush_denormals: must be true or false");
    spec->flush_denormals = !flush || cJSON_IsTrue(flush);
    spec->dataset = cJSON_GetObjectItemCaseSensitive(root, "dataset");
    if (!cJSON_IsObject(spec->dataset))
        return native_err(err, errlen, INVALID,
                          spec->dataset ? "dataset: must be an object"
                                        : "missing field 'dataset'");
    return 0;
}

int native_spec_parse(const char *json, native_spec *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json)
        return native_err(err, errlen, INVALID, "no model JSON (spec_json is NULL)");
    out->root = cJSON_Parse(json);
    if (!out->root) {
        const char *at = cJSON_GetErrorPtr();
        return native_err(err, errlen, INVALID,
                          "model JSON is not valid JSON (error near byte %ld: "
                          "\"%.20s\")",
                          at ? (long)(at - json) : -1L, at ? at : "");
    }
    if (!cJSON_IsObject(out->root)) {
        native_spec_free(out);
        return native_err(err, errlen, INVALID, "model JSON must be an object");
    }
    int rc = parse_root(out, err, errlen);
    if (rc)
        native_spec_free(out);
    return rc;
}

void native_spec_free(native_spec *spec)
{
    if (!spec)
        return;
    free(spec->layers);
    cJSON_Delete(spec->root);
    memset(spec, 0, sizeof *spec);
}

float native_schedule_lr(const native_spec *spec, uint32_t epoch,
                         uint32_t epochs, uint64_t iteration,
                         uint64_t steps_per_epoch)
{
    const native_schedule_spec *s = &spec->schedule;
    float lr = spec->optimizer.lr;
    switch (s->type) {
    case NATIVE_SCHEDULE_STEP:
        return lr * powf(s->gamma, (float)(epoch / (uint32_t)s->step_size));
    case NATIVE_SCHEDULE_COSINE: {
        /* Per step when the host says how many steps there are, else per
         * epoch. */
        double progress;
        if (epochs > 0 && steps_per_epoch > 0)
            progress = (double)iteration / ((double)epochs * (double)steps_per_epoch);
        else if (epochs > 0)
            progress = (double)epoch / epochs;
        else
            return lr;
        if (progress > 1.0)
            progress = 1.0;
        return s->min_lr + 0.5f * (lr - s->min_lr) *
                               (float)(1.0 + cos(3.14159265358979323846 * progress));
    }
    case NATIVE_SCHEDULE_CONSTANT:
    default:
        return lr;
    }
}
