/*
 * loom/kernel.h - inference kernels ("loom.kernel/1"), shaped like Triton's
 * backends: a model is loaded once, instances are created on devices, and
 * each instance executes batches of requests.
 *
 * The host's model services call kernels (README.md, "Serving"): a model
 * directory's model.json names the kernel (runtime "so" with kernel_path a
 * plugin of this kind, "lua", "ffi" or "native"), and each instance runs in
 * its own `loom kernel run` process, one instance per process, so an
 * instance's calls all come from that process's one thread. A request's
 * body and inputs point into memory shared with the host: read them during
 * execute, never keep the pointers.
 *
 * Two request shapes (sdk/doc/inference-protocol.md):
 *  - a model whose model.json declares "inputs" speaks the Open Inference
 *    Protocol v2 (KServe v2, Triton): the host decodes and checks the JSON
 *    request against the declaration, and the kernel gets the tensors
 *    (`inputs`, in declared order; `body` NULL, body_len 0). It answers
 *    with respond_tensors, which the host encodes as the v2 answer, or with
 *    respond (an error, or a body of its own);
 *  - a raw model (no declared inputs, or "protocol": "raw") gets the body
 *    as the client sent it, and input_count 0.
 *
 * Threading: the host never calls one instance from two threads at once.
 * load_model/unload_model and create/destroy of one model happen on the
 * same thread.
 */
#ifndef LOOM_KERNEL_H
#define LOOM_KERNEL_H

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_kernel_model loom_kernel_model;       /* plugin's */
typedef struct loom_kernel_instance loom_kernel_instance; /* plugin's */

/* Borrowed for the duration of load_model(). */
typedef struct loom_kernel_model_config {
    uint32_t struct_size;
    uint32_t reserved;       /* zero */
    const char *model_dir;   /* the deployed model directory */
    const char *model_json;  /* the text of its model.json */
    const char *weight_path; /* absolute path of weight_path, or NULL */
} loom_kernel_model_config;

/* One request of a batch. Borrowed for the duration of execute(). */
typedef struct loom_infer_request loom_infer_request;
struct loom_infer_request {
    uint32_t struct_size;
    uint32_t reserved;        /* zero */
    uint64_t id;
    const char *content_type; /* e.g. "application/json" */
    const uint8_t *body;
    uint64_t body_len;
    void *host_data;
    /* Answers the request. status is 0 (success) or a loom_code; `body` is
     * copied. With a non-zero status the body is the error's message: plain
     * text, or a JSON object whose "error" string is the message. Each request must be answered exactly once before execute()
     * returns: the host fails an unanswered request with an internal error,
     * and a second answer returns an error. [thread: the thread running
     * execute] [owns: every argument borrowed; the host copies the body] */
    loom_error *(*respond)(loom_infer_request *request, int32_t status,
                           const char *content_type, const uint8_t *body,
                           uint64_t body_len);
    /* ABI 1.6 (check with LOOM_STRUCT_HAS before reading). */
    /* The decoded inputs of a v2 model's request, in the order model.json
     * declares them (0 and NULL for a raw model). Each view's name is the
     * declared name, dtype a loom_dtype, shape the request's (checked
     * against the declaration), data host memory (on_device 0) of nbytes
     * = elements x element size, aligned for its type. */
    uint32_t input_count;
    uint32_t reserved2; /* zero */
    const loom_tensor_view *inputs;
    /* Answers the request with output tensors: the host answers the
     * client {"model_name", "id"?, "outputs": [{"name", "datatype",
     * "shape", "data"}]}. A view with a NULL or empty name takes the name
     * of the declared output at its position. When model.json declares
     * outputs, `count` must equal their number: otherwise the request
     * fails with an internal error naming the model and both counts. Each
     * view: a loom_dtype, at most LOOM_MAX_DIMS dimensions, host memory,
     * nbytes = elements x element size; at most 16 views. A view that is
     * not so fails the request with an internal error naming it, which is
     * also returned. The same exactly-once rule as respond (one or the
     * other).
     * [thread: the thread running execute] [owns: every argument
     * borrowed; the host copies the tensors] */
    loom_error *(*respond_tensors)(loom_infer_request *request,
                                   const loom_tensor_view *outputs,
                                   uint32_t count);
};

typedef struct loom_kernel_factory {
    uint32_t struct_size;
    uint32_t reserved; /* zero */
    /* All required. */
    /* [thread: the model's thread] [owns: config borrowed; *out the
     * plugin's until unload_model] */
    loom_error *(*load_model)(const struct loom_kernel_factory *self,
                              const loom_kernel_model_config *config,
                              loom_kernel_model **out);
    /* [thread: the model's thread, after every instance is destroyed]
     * [owns: takes model] */
    void (*unload_model)(loom_kernel_model *model);
    /* [thread: the model's thread] [owns: device borrowed; *out the
     * plugin's until destroy_instance; the model outlives it] */
    loom_error *(*create_instance)(loom_kernel_model *model,
                                   const loom_device *device,
                                   loom_kernel_instance **out);
    /* [thread: the model's thread] [owns: takes inst] */
    void (*destroy_instance)(loom_kernel_instance *inst);
    /* Executes a batch. An error return fails every request not yet
     * answered with that error. [thread: one at a time per instance]
     * [owns: requests borrowed until execute returns; answer them through
     * respond before returning] */
    loom_error *(*execute)(loom_kernel_instance *inst,
                           loom_infer_request *const *requests,
                           uint32_t count);
} loom_kernel_factory;

#ifdef __cplusplus
}
#endif
#endif
