/*
 * kserve_decode.h - the KServe v2 / Triton JSON request the native kernel
 * serves ({"inputs": [{"name", "shape", "datatype", "data"}]}), decoded
 * without a cJSON node per number.
 *
 * An image is hundreds of numbers, and cJSON makes (and frees) a node for
 * each: for a small model that costs more than the forward pass. So the
 * numeric arrays under a "data" key are read straight from the text, in
 * the one pass that finds them (a strict JSON number check, then the
 * value), and cJSON parses the rest: a
 * copy of the body in which each such array holds only its own index ([k],
 * padded with spaces). The whole structure is still checked by cJSON, and
 * inputs[0].data, parsed as [k], names the text it came from. Bodies this
 * cannot decode so (a key written with escapes, too many arrays) take
 * cJSON's way whole: same answers, slower.
 */
#ifndef LOOM_NATIVE_KSERVE_DECODE_H
#define LOOM_NATIVE_KSERVE_DECODE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* A decoder keeps its copy buffer from one request to the next. */
typedef struct kserve_decoder {
    char *copy;
    size_t cap;
    float *values; /* the numbers of the arrays read from the text */
    size_t values_cap;
} kserve_decoder;

typedef struct kserve_input {
    cJSON *root;            /* the request (numeric data arrays stubbed) */
    const cJSON *input;     /* inputs[0], or NULL */
    const cJSON *shape, *datatype, *data; /* its fields, NULL when absent */
    const float *values;    /* fast: inputs[0].data's numbers, read already */
    int64_t nvalues;
} kserve_input;

/* Parses `body`; -1 when it is not JSON (out->root NULL). The fields of
 * inputs[0] are found, not checked. */
int kserve_parse(kserve_decoder *d, const char *body, size_t len, kserve_input *out);
/* Writes the numbers of inputs[0].data (nested arrays flattened, in
 * order) to x, at most `limit`; *n gets how many. -1 when data holds
 * something other than numbers and arrays or more than `limit`. */
int kserve_read_data(const kserve_input *in, float *x, int64_t limit, int64_t *n);
void kserve_input_free(kserve_input *in);
void kserve_decoder_free(kserve_decoder *d);

#endif
