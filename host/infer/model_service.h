/*
 * infer/model_service.h - one started model service: a queue of requests, kernel
 * instances (each a `loom kernel run` child on one device of the service's
 * elastic scheduler job, "model/NAME"), dynamic batching and the autoscaler.
 *
 * Batching: an idle instance takes up to task_batch_size queued requests;
 * when fewer are queued and the batch size is above 1, it waits at most
 * MODEL_SERVICE_BATCH_WAIT_US for more, so low load pays at most that in latency.
 * Scaling, re-evaluated every schedule_interval: one instance more asked of
 * the scheduler while requests wait in the queue (up to kernel_max, or as
 * many as the plan grants for -1), one fewer once capacity has been spare
 * for kernel_delay_release_time (down to kernel_min; with 0, none, and the
 * next request starts one). The scheduler grants the instances above
 * kernel_min by fair share and priority, and takes them back the same way:
 * an instance whose device is taken back leaves after its batch. Faults: a request older
 * than task_execution_timeout is failed with a deadline error, queued or
 * running (a kernel past it is killed); a kernel that dies fails its batch,
 * naming how it died, and its instance starts a new one.
 */
#ifndef LOOM_INFER_MODEL_SERVICE_H
#define LOOM_INFER_MODEL_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infer/model_spec.h"
#include "sched/sched_service.h"
#include "util/error.h"

#define MODEL_SERVICE_BATCH_WAIT_US 1000
/* How long a start waits, at most, to tell whether its first instance got
 * a device, waits for one (and why) or failed. */
#define MODEL_SERVICE_SETTLE_MS 2000
/* Requests waiting in one service's queue, at most. */
#define MODEL_SERVICE_QUEUE_LIMIT 4096

/* The answer to one request. `body` is borrowed for the call. */
typedef struct model_service_answer {
    int32_t status; /* 0, or a loom code (the body is then the message) */
    const char *content_type;
    const char *body;
    size_t len;
} model_service_answer;

typedef void (*model_service_done_fn)(void *ctx, const model_service_answer *answer);

typedef struct model_service_spec {
    const char *name, *owner;
    const char *binary;    /* the loom binary */
    const char *model_dir; /* the deployed model */
    const char *work_dir;  /* where kernels may write; their output log */
    const model_spec *model;
    const model_profile *profile;
    sched_service *sched;
} model_service_spec;

typedef struct model_service model_service;

/* Starts kernel_min instances (at least one) and returns at once (once the first has its
 * device or the scheduler's reason, MODEL_SERVICE_SETTLE_MS at most): they
 * wait for their
 * devices and load their kernels in the background (the stats say how far
 * they are). Requests are refused until one serves; a kernel that fails to
 * load before any served makes the service give up (stats.start_failed,
 * the kernel's error in last_error) until it is stopped. */
loom_error *model_service_start(const model_service_spec *spec, model_service **out);
/* Stops: with `force`, queued requests fail at once; without, the queue is
 * served first (bounded by the execution timeout). In-flight batches end
 * or are killed; every request is answered before this returns. */
void model_service_stop(model_service *r, int force);

/* Queues a request: a v2 model's (model.json declares inputs) is decoded
 * here, once, into the tensors its kernel reads (a bad one is
 * LOOM_E_INVALID or LOOM_E_TOO_LARGE naming the input and what was
 * expected, v2_codec.h); a raw model's body that is not JSON is
 * LOOM_E_INVALID for .so and Lua kernels (the others refuse it
 * themselves). The answer to a v2 request is the JSON the host encodes
 * from the kernel's output tensors. `done` is called exactly
 * once, from another thread
 * (or from this one, before returning an error: then it is not called).
 * `body` must stay valid until `done`. */
loom_error *model_service_submit(model_service *r, const char *body, size_t len, model_service_done_fn done,
                          void *ctx);

typedef struct model_service_stats {
    int instances;  /* running (serving) */
    int target;     /* wanted by the autoscaler */
    int busy;
    size_t queued;
    uint64_t served, failed, restarts;
    int serving_once;  /* an instance has served since the start */
    int start_failed;  /* the kernel failed to load before any served */
    bool waiting;      /* no instance served yet and one waits for a device: */
    sched_reason wait_reason; /* the scheduler's reason */
    char last_error[256];
} model_service_stats;

void model_service_get_stats(model_service *r, model_service_stats *out);

#endif
