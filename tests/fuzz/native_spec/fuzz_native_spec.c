/*
 * fuzz_native_spec.c - libFuzzer target for the native adapter's training
 * spec (the model JSON of frameworks/native/README.md), which users write
 * and submit with every native job. The input, as a string, goes through
 * native_spec_parse; a refusal must say why, an accepted spec must keep the
 * documented ranges (a non-empty layer list, dropout rates in [0, 1), a
 * finite learning rate) and the learning-rate schedule must stay finite
 * over a few epochs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "spec.h"

static void check_spec(const native_spec *spec)
{
    if (spec->layer_count < 1 || !spec->layers || !spec->root)
        abort();
    if (spec->input_ndim < 0 || spec->input_ndim > NATIVE_MAX_INPUT_DIMS)
        abort();
    for (int32_t i = 0; i < spec->layer_count; i++) {
        const native_layer_spec *l = &spec->layers[i];
        if (l->type == NATIVE_LAYER_DROPOUT && !(l->rate >= 0.0f && l->rate < 1.0f))
            abort();
        if (l->type == NATIVE_LAYER_DENSE && l->units < 1)
            abort();
    }
    if (!(spec->optimizer.lr >= 0.0f) || !isfinite(spec->optimizer.lr))
        abort();
    for (uint32_t epoch = 0; epoch < 4; epoch++)
        if (!isfinite(native_schedule_lr(spec, epoch, 4, (uint64_t)epoch * 10, 10)))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    char err[1024];
    err[0] = '\0';
    native_spec spec;
    if (native_spec_parse(text, &spec, err, sizeof err) == 0) {
        check_spec(&spec);
        native_spec_free(&spec);
    } else if (!err[0]) {
        abort();
    }
    free(text);
    return 0;
}
