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
 * driver's do (logger.h); 1.5 let the two arrays that were fixed grow:
 * loom_metrics gained `more` (room past LOOM_MAX_METRICS the host offers)
 * and loom_framework_factory gained state_tensor_count / state_tensor_get
 * (one view at a time, each with its own struct_size, so a later field in
 * loom_tensor_view changes no stride), and loom_proposal_sink gained
 * propose_experiment / stop_experiment, which follow the SDK's refusal rule
 * (loom.h); 1.6 gave inference kernels decoded tensors: loom_infer_request
 * gained input_count / inputs and respond_tensors (kernel.h), and
 * loom_dtype the Open Inference Protocol's other numeric types (BOOL, I8,
 * I16, U16, U32, U64); 1.7 told launch-style frameworks where each worker
 * runs when an exec spans nodes: loom_launch_request gained worker_nodes
 * (framework.h). A plugin built for minor N loads into any host with
 * minor >= N.
 */
#ifndef LOOM_ABI_H
#define LOOM_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_ABI_MAJOR 1
#define LOOM_ABI_MINOR 7

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

/* Metrics that fit in loom_metrics.items, the whole list before ABI 1.5. */
#define LOOM_MAX_METRICS 16

/* A list of metrics. Names must be valid for the lifetime of the instance
 * that filled it (string literals are fine).
 *
 * The first LOOM_MAX_METRICS live in `items` (`count` of them); since ABI
 * 1.5 the rest live in `more` (`more_count` of them), an array the host owns
 * with room for `more_capacity`. Whoever fills the list fills `items` first,
 * so an adapter or host built before 1.5 reads a correct, shorter list: the
 * first LOOM_MAX_METRICS. The filler may leave `more` NULL (no room past
 * items). Read and write through loom_metrics_total, loom_metrics_at and
 * loom_metrics_add, which check struct_size. */
typedef struct loom_metrics {
    uint32_t struct_size;
    uint32_t count;      /* entries used in items, <= LOOM_MAX_METRICS */
    loom_metric items[LOOM_MAX_METRICS];
    /* ABI 1.5 */
    loom_metric *more;       /* metric LOOM_MAX_METRICS + i is more[i] */
    uint32_t more_capacity;  /* entries `more` has room for */
    uint32_t more_count;     /* entries used in more, <= more_capacity */
} loom_metrics;

/* Entries past `items` the list can reach: 0 for a pre-1.5 list. */
static inline uint32_t loom_metrics_more_capacity(const loom_metrics *m)
{
    return LOOM_STRUCT_HAS(m, loom_metrics, more_count) && m->more ? m->more_capacity : 0;
}

/* How many metrics the list holds. */
static inline uint32_t loom_metrics_total(const loom_metrics *m)
{
    uint32_t n = m->count < LOOM_MAX_METRICS ? m->count : LOOM_MAX_METRICS;
    if (n == LOOM_MAX_METRICS && loom_metrics_more_capacity(m))
        n += m->more_count < m->more_capacity ? m->more_count : m->more_capacity;
    return n;
}

/* Metric i, i < loom_metrics_total(m). */
static inline const loom_metric *loom_metrics_at(const loom_metrics *m, uint32_t i)
{
    return i < LOOM_MAX_METRICS ? &m->items[i] : &m->more[i - LOOM_MAX_METRICS];
}

/* Appends one metric: LOOM_OK, or LOOM_ERR_RESOURCE_EXHAUSTED when the list
 * is full (then nothing changed). */
static inline int32_t loom_metrics_add(loom_metrics *m, const char *name, double value)
{
    loom_metric entry = {name, value};
    if (m->count < LOOM_MAX_METRICS) {
        m->items[m->count++] = entry;
        return LOOM_OK;
    }
    uint32_t room = loom_metrics_more_capacity(m);
    if (!room || m->more_count >= room)
        return LOOM_ERR_RESOURCE_EXHAUSTED;
    m->more[m->more_count++] = entry;
    return LOOM_OK;
}

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
    LOOM_DTYPE_U8 = 5,
    /* ABI 1.6: the rest of the Open Inference Protocol's numeric types.
     * BOOL is one byte per element, 0 or 1. */
    LOOM_DTYPE_BOOL = 6,
    LOOM_DTYPE_I8 = 7,
    LOOM_DTYPE_I16 = 8,
    LOOM_DTYPE_U16 = 9,
    LOOM_DTYPE_U32 = 10,
    LOOM_DTYPE_U64 = 11
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
