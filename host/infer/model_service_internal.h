/*
 * infer/model_service_internal.h - what the parts of one model service
 * share: its queue of calls, its kernel instances and their states. The
 * service's life, queue and submission are model_service.c; batching.c
 * gathers queued requests into a kernel's batches and answers them;
 * kernel_instance.c runs one instance (its device, its kernel process,
 * restarts); autoscaler.c is the control thread (deadlines in the queue,
 * one instance more or fewer).
 */
#ifndef LOOM_INFER_MODEL_SERVICE_INTERNAL_H
#define LOOM_INFER_MODEL_SERVICE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "infer/kernel_proc.h"
#include "infer/model_service.h"
#include "infer/v2_codec.h"

#define CONTROL_TICK_US 10000
#define DEVICE_POLL_US 20000
#define RESTART_BACKOFF_US 500000
/* A deadline for a batch of a service without task_execution_timeout. */
#define NO_TIMEOUT_NS (24ull * 3600 * 1000000000ull)

typedef struct call {
    const char *body; /* the client's, or (v2) the decoded tensors' pack */
    size_t len;
    v2_request v2;    /* a v2 model's request: its id, outputs, pack */
    uint64_t deadline_ns; /* 0: none */
    model_service_done_fn done;
    void *ctx;
    struct call *next;
} call;

typedef enum inst_state {
    INST_FREE = 0, /* no thread */
    INST_WAITING,  /* for a device from the scheduler */
    INST_STARTING, /* its kernel is loading */
    INST_READY,
    INST_BUSY,
    INST_DONE /* its thread ended: join it */
} inst_state;

typedef struct instance {
    struct model_service *r;
    pthread_t thread;
    inst_state state;
    int retire;
    unsigned seq;
    int32_t device_kind, device_index; /* PLACE_OWN_DEVICE: the device granted */
} instance;

/* Where a service's instances run (kernel.gpu against the inventory). */
typedef enum placement {
    PLACE_OWN_DEVICE = 0, /* one instance per device the service's elastic
                           * job is granted (grants.c) */
    PLACE_SHARED_GPU,     /* all hold the one GPU of the service's shared job */
    PLACE_CPU_UNGRANTED   /* "no" where the scheduler hands out only GPUs */
} placement;

struct model_service {
    char name[MODEL_NAME_MAX], owner[64];
    char binary[PATH_MAX], model_dir[PATH_MAX], work_dir[PATH_MAX], output[PATH_MAX + 16];
    model_spec model;
    model_profile profile;
    sched_service *sched;
    int max_instances;
    placement place;
    /* The service's scheduler job ("model/NAME"): PLACE_OWN_DEVICE, elastic,
     * one device per instance; PLACE_SHARED_GPU, the one GPU of them all. */
    char job[128];
    int job_live;          /* submitted and not ended */
    int job_min, job_max;  /* its range as last set */
    int target;            /* PLACE_OWN_DEVICE: the instances the autoscaler wants */

    pthread_mutex_t lock;
    pthread_cond_t work;    /* a request queued, or stop/retire */
    pthread_cond_t full;    /* a batch's worth queued, or stop/retire: one
                             * signal per batch, not per request, for the
                             * instance gathering one */
    pthread_cond_t changed; /* an instance changed state */
    call *head, *tail;
    size_t queued;
    instance inst[MODEL_KERNEL_LIMIT];
    unsigned seq;
    int stopping, force;
    int ready_once, start_failed;
    uint64_t spare_since_ns, next_scale_ns;
    uint64_t served, failed, restarts;
    char last_error[256];
    pthread_t control;
};

/* A batch on its way through one instance's kernel. */
typedef struct batch {
    call *calls[MODEL_BATCH_LIMIT];
    kernel_task tasks[MODEL_BATCH_LIMIT];
    uint32_t n;
    uint64_t deadline_ns;
    v2_buf json; /* a v2 answer being encoded: reused batch after batch */
} batch;

/* model_service.c */
uint64_t model_service_now_ns(void);
void model_service_call_free(call *c);
/* Answers a call with an error and frees it. */
void model_service_answer_error(call *c, int32_t code, const char *msg);
/* Fails every call of a detached list. */
void model_service_fail_list(call *c, int32_t code, const char *msg);
/* Detaches the whole queue. Call with r->lock. */
call *model_service_take_queue_locked(model_service *r);

/* batching.c: serves until told to leave (0) or the kernel fails (-1). */
int batching_serve(model_service *r, instance *in, kernel_proc *k, batch *two);

/* kernel_instance.c: starts one more instance (r->lock held; 0 or -1) on
 * the device given (PLACE_OWN_DEVICE; ignored otherwise). */
int kernel_instance_spawn_locked(model_service *r, int32_t kind, int32_t index);
/* Live instances: not ended, and not leaving when `counting_retired` is 0.
 * Call with r->lock. */
int kernel_instance_count_locked(const model_service *r, int counting_retired);

/* grants.c: the service's elastic job and the instances following its
 * grant. Submits r->job with [min, max] (max >= 1; elastic only when
 * asked). */
loom_error *grants_submit(model_service *r, int min, int max, int elastic);
/* One pass, without r->lock: the job's range follows r->target, an
 * instance starts on each device granted and ready, one whose device was
 * taken back leaves (after its batch), and the devices left are handed
 * back; with target 0 and no instance left, the job ends. */
void grants_follow(model_service *r);
/* The job's range for `target` instances. */
void grants_range(const model_service *r, int target, int *min, int *max);

/* autoscaler.c: the control thread's body (arg: the service). */
void *autoscaler_main(void *arg);

#endif
