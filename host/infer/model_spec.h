/*
 * infer/model_spec.h - a model directory's model.json and a service's
 * profile, read and checked with WMLA's fields and rules. Pure functions:
 * no host, no plugin code (a kernel is loaded only in `loom kernel run` and
 * in `loom model check`). Every refusal names the file, the field and what
 * was expected.
 */
#ifndef LOOM_INFER_MODEL_SPEC_H
#define LOOM_INFER_MODEL_SPEC_H

#include <limits.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "loom/abi.h"
#include "util/error.h"

#define MODEL_NAME_MAX 64
#define MODEL_JSON_MAX ((size_t)1 << 20)
#define MODEL_ENV_MAX 32
/* The most instances one service runs, whatever its kernel_max. */
#define MODEL_KERNEL_LIMIT 64
#define MODEL_BATCH_LIMIT 1024

/* How the kernel is written (model.json "runtime"). */
typedef enum model_runtime {
    MODEL_RUNTIME_SO = 0,     /* a loom.kernel/1 plugin (.so) */
    MODEL_RUNTIME_LUA = 1,    /* a Lua script registering a kernel */
    MODEL_RUNTIME_FFI = 2,    /* a plain C function called through libffi */
    MODEL_RUNTIME_NATIVE = 3, /* the built-in kernel for a model loom trained */
    /* A kernel registered with the host (`loom kernel add`), named by
     * "runtime": the host resolves the name to the registered file (then
     * served as so or lua) at deploy and at start. */
    MODEL_RUNTIME_REGISTERED = 4
} model_runtime;

const char *model_runtime_name(model_runtime r);

typedef struct model_env {
    char name[128];
    char value[1024];
} model_env;

/* Tensors one model declares, inputs and outputs each, at most. */
#define MODEL_TENSOR_LIMIT 16
#define MODEL_TENSOR_NAME_MAX 64

/* How requests reach the kernel (README.md, "Serving"). */
typedef enum model_protocol {
    MODEL_PROTOCOL_RAW = 0, /* the body as the client sent it */
    MODEL_PROTOCOL_V2 = 1   /* Open Inference Protocol v2, decoded by the host */
} model_protocol;

/* One declared tensor: model.json {"name", "datatype", "shape"}. */
typedef struct model_tensor {
    char name[MODEL_TENSOR_NAME_MAX];
    int32_t dtype; /* loom_dtype */
    uint32_t ndim; /* <= LOOM_MAX_DIMS */
    int64_t shape[LOOM_MAX_DIMS]; /* -1: any size */
} model_tensor;

typedef struct model_spec {
    char name[MODEL_NAME_MAX];
    char tag[64];
    model_runtime runtime;
    char kernel_name[MODEL_NAME_MAX]; /* runtime "NAME": the registered kernel's name */
    char kernel_path[PATH_MAX]; /* absolute, inside the directory; "" when none (native:
                                 * the host sets the native adapter's .so) */
    char weight_path[PATH_MAX]; /* absolute, inside the directory; "" when none */
    model_env env[MODEL_ENV_MAX]; /* mk_environments */
    int nenv;
    model_protocol protocol;
    int ninputs, noutputs; /* declared (noutputs 0: not declared) */
    model_tensor inputs[MODEL_TENSOR_LIMIT], outputs[MODEL_TENSOR_LIMIT];
} model_spec;

/* Reads DIR/model.json and checks it: name (1-63 of [A-Za-z0-9_.-]),
 * runtime (so, lua, ffi, native, or a registered kernel's name, which
 * this reads without a host: kernel_name), kernel_path (required for so
 * and lua; a file inside DIR; refused with a registered kernel's name,
 * whose file the host holds), weight_path (a file inside DIR when given; required
 * for native), attributes [{key, value}], mk_environments [{name, value}],
 * ffi {library, symbol, signature} for ffi. *json_out (may be NULL) gets
 * the file's text (caller frees). */
loom_error *model_spec_read(const char *dir, model_spec *out, char **json_out);

/* model.json's "protocol", "inputs" and "outputs" into out (runtime
 * already set): a model declaring inputs speaks v2 unless "protocol" is
 * "raw"; an ffi model's inputs and outputs are its signature's `in` and
 * `out` pointers (named after the parameters, "input"/"output" when
 * unnamed) unless declared; a native model decodes its own requests and
 * declares none. Datatypes are the Open Inference Protocol's numeric
 * ones (BOOL, UINT8..UINT64, INT8..INT64, FP32, FP64), shapes whole
 * numbers >= 0 or -1 (any size), at most LOOM_MAX_DIMS of them. */
loom_error *model_spec_tensors(const cJSON *root, model_spec *out);

/* A service's profile (profile.json), with WMLA's defaults for what it
 * leaves out. */
typedef struct model_profile {
    int replica;
    int kernel_min, kernel_max;   /* kernel_max -1: as many as the plan gives */
    double delay_release_s;       /* kernel_delay_release_time */
    double schedule_interval_s;
    double execution_timeout_s;   /* task_execution_timeout; -1: none */
    int batch_size;               /* task_batch_size */
    double connection_timeout_s;  /* kernel.connection_timeout: start-up bound */
    char gpu[16];                 /* no, shared, exclusive */
    model_env env[MODEL_ENV_MAX]; /* kernel.envs */
    int nenv;
} model_profile;

/* The profile a model gets at deploy: WMLA's defaults, named after it. The
 * JSON is the caller's. */
cJSON *model_profile_default_json(const char *name);

/* Checks a profile (a JSON object) and reads it into out. Unknown fields
 * are allowed: the caller keeps the JSON whole. `source` names it in
 * errors ("profile.json"). */
loom_error *model_profile_parse(const cJSON *json, const char *source, model_profile *out);
/* `patch` merged into `profile` in place: each field given replaces the
 * one there (objects merge field by field), every other field keeps its
 * value. A field neither the profile's (WMLA's own, or one `profile`
 * already has) nor an object's known field is refused, naming it; nothing
 * is changed then. */
loom_error *model_profile_merge(cJSON *profile, const cJSON *patch, const char *source);

#endif
