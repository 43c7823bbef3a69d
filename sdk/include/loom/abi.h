/*
 * loom/abi.h - versions, the ABI tag, status codes and the small value types
 * every plugin kind shares.
 *
 * Rules that hold for every struct in the SDK:
 *  - it starts with `uint32_t struct_size`, filled by whoever creates it, so
 *    either side can tell which fields the other knows about;
 *  - fields are only ever appended (a new field means a new ABI minor);
 *  - integers are fixed width, enums are plain integers with explicit values;
 *  - strings are UTF-8, NUL-terminated and borrowed for the duration of the
 *    call unless a comment says otherwise;
 *  - a field named `reserved` must be zero: the host refuses a factory table
 *    whose reserved field is not, and always zeroes the ones it fills, so a
 *    later minor can give them a meaning.
 *
 * Every function pointer carries a tag:
 *   [thread: ...]  which thread calls it and what may run at the same time;
 *   [owns: ...]    who owns what crosses the call and for how long.
 * "One at a time per instance" means the host never calls one instance from
 * two threads at once, so a plugin needs no locks for its own state.
 *
 * Versions: ABI 1.0 is the first release; 1.1 added loom_logger_config's
 * result_dir and plugin_dir; 1.2 added loom_trainer_config's
 * gradient_ready and gradient_ready_data (reduce while backward runs); 1.3
 * added its gradient_memory and gradient_memory_data (the gradient buffer in
 * memory the host offers, reduced in place) and loom_framework_factory's
 * job_metrics (the job's mean metrics over every worker, for loggers an
 * adapter runs itself); 1.4 changed no struct: worker logger instances hear
 * on_train_begin and log_test_metrics too, and count epochs from 1 as the
 * driver's do (logger.h). A plugin built for minor N loads into any host
 * with minor >= N.
 */
#ifndef LOOM_ABI_H
#define LOOM_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_ABI_MAJOR 1
#define LOOM_ABI_MINOR 4

/* Symbol visibility for the one function a plugin exports. */
#if defined(__GNUC__)
#define LOOM_EXPORT __attribute__((visibility("default")))
#else
#define LOOM_EXPORT
#endif

/* The ABI tag is baked in by the plugin's own compiler: "loom", pointer size,
 * byte order, size of `long` (LP64 vs LLP64), then a zero. The host compares
 * it byte for byte with its own, so a plugin built for another platform is
 * refused by name rather than crashing. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LOOM_ABI_BYTE_ORDER 'B'
#else
#define LOOM_ABI_BYTE_ORDER 'L'
#endif
#define LOOM_ABI_TAG_SIZE 8
#define LOOM_ABI_TAG_INIT                                                       \
    {'l', 'o', 'o', 'm', (char)('0' + sizeof(void *)), LOOM_ABI_BYTE_ORDER,      \
     (char)('0' + sizeof(long)), 0}

/* True when `p`, a struct of `type` that starts with `uint32_t struct_size`,
 * was built large enough to contain `field`. Every reader of a struct that
 * crossed the boundary checks this before reading an entry added after 1.0,
 * optional callbacks included: a plugin built against an older, smaller
 * struct has nothing there. */
#define LOOM_STRUCT_HAS(p, type, field)                                         \
    ((p) != NULL && (size_t)(p)->struct_size >=                                 \
                        offsetof(type, field) + sizeof(((type *)0)->field))

/* Status codes carried by loom_error. 0 is never an error code. */
typedef enum loom_code {
    LOOM_OK = 0,
    LOOM_ERR_INVALID_ARGUMENT = 1,
    LOOM_ERR_NOT_FOUND = 2,
    LOOM_ERR_UNAVAILABLE = 3,
    LOOM_ERR_UNSUPPORTED = 4,
    LOOM_ERR_INTERNAL = 5,
    LOOM_ERR_DEADLINE_EXCEEDED = 6,
    LOOM_ERR_RESOURCE_EXHAUSTED = 7,
    LOOM_ERR_ALREADY_EXISTS = 8
} loom_code;

/* An error object. Opaque: only the host creates, reads and frees it, through
 * the loom_host table, so one allocator owns it. A fallible SDK call returns
 * `loom_error *`: NULL means success; otherwise ownership passes to the
 * caller, who frees it with loom_host.error_free. */
typedef struct loom_error loom_error;

/* One named scalar. `name` must stay valid until the call that hands the
 * metric over returns. */
typedef struct loom_metric {
    const char *name;
    double value;
} loom_metric;

/* Maximum metrics one call reports; fixed so no allocation crosses the ABI. */
#define LOOM_MAX_METRICS 16

/* A fixed-capacity list of metrics filled by a plugin. Names must be valid
 * for the lifetime of the instance that filled it (string literals are fine). */
typedef struct loom_metrics {
    uint32_t struct_size;
    uint32_t count;
    loom_metric items[LOOM_MAX_METRICS];
} loom_metrics;

typedef enum loom_device_kind {
    LOOM_DEVICE_CPU = 0,
    LOOM_DEVICE_CUDA = 1
} loom_device_kind;

/* The device an instance runs on. For CUDA, `index` is the ordinal as seen
 * by the process (after CUDA_VISIBLE_DEVICES). */
typedef struct loom_device {
    uint32_t struct_size;
    int32_t kind;   /* loom_device_kind */
    int32_t index;
    int32_t reserved; /* zero */
} loom_device;

typedef enum loom_dtype {
    LOOM_DTYPE_F32 = 1,
    LOOM_DTYPE_F64 = 2,
    LOOM_DTYPE_I32 = 3,
    LOOM_DTYPE_I64 = 4,
    LOOM_DTYPE_U8 = 5
} loom_dtype;

#define LOOM_MAX_DIMS 8

/* A view of a tensor owned by a plugin instance. `data` stays valid until the
 * instance is destroyed or its shapes change; `on_device` says whether it is
 * device memory (a CUDA pointer on the instance's device, which the host
 * reads and writes with the CUDA runtime) or host memory. */
typedef struct loom_tensor_view {
    uint32_t struct_size;
    int32_t dtype;      /* loom_dtype */
    uint32_t ndim;
    uint32_t on_device; /* 0: host memory, 1: device memory */
    int64_t shape[LOOM_MAX_DIMS];
    const char *name;   /* e.g. "fc1.weight", "adam.m.fc1.weight" */
    void *data;
    uint64_t nbytes;
} loom_tensor_view;

#ifdef __cplusplus
}
#endif
#endif
