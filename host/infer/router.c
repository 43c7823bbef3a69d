/* infer/router.c - see router.h. */
#include "infer/router.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "infer/kernel_proc.h"
#include "util/log.h"

#define CONTROL_TICK_US 10000
#define DEVICE_POLL_US 20000
#define RESTART_BACKOFF_US 500000
/* A deadline for a batch of a service without task_execution_timeout. */
#define NO_TIMEOUT_NS (24ull * 3600 * 1000000000ull)

typedef struct call {
    const char *body;
    size_t len;
    uint64_t deadline_ns; /* 0: none */
    router_done_fn done;
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
    struct router *r;
    pthread_t thread;
    inst_state state;
    int retire;
    unsigned seq;
} instance;

/* Where a service's instances run (kernel.gpu against the inventory). */
typedef enum placement {
    PLACE_OWN_DEVICE = 0, /* each instance holds one scheduler device of its own */
    PLACE_SHARED_GPU,     /* all hold the one GPU of the service's shared job */
    PLACE_CPU_UNGRANTED   /* "no" where the scheduler hands out only GPUs */
} placement;

struct router {
    char name[MODEL_NAME_MAX], owner[64];
    char binary[PATH_MAX], model_dir[PATH_MAX], work_dir[PATH_MAX], output[PATH_MAX + 16];
    model_spec model;
    model_profile profile;
    sched_service *sched;
    int max_instances;
    placement place;
    char shared_job[128]; /* PLACE_SHARED_GPU: the job holding the GPU */

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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void answer_error(call *c, int32_t code, const char *msg)
{
    router_answer a = {code, "text/plain", msg, strlen(msg)};
    c->done(c->ctx, &a);
    free(c);
}

/* Fails every call of a detached list. */
static void fail_list(call *c, int32_t code, const char *msg)
{
    while (c) {
        call *next = c->next;
        answer_error(c, code, msg);
        c = next;
    }
}

static call *take_queue_locked(router *r)
{
    call *all = r->head;
    r->head = r->tail = NULL;
    r->queued = 0;
    return all;
}

/* ---- one batch ------------------------------------------------------------ */

/* The kernel's answer to one call; a JSON type whose body is not JSON is
 * the kernel's fault and is reported as such. */
static void deliver(router *r, call *c, const kernel_task *t)
{
    router_answer a = {t->status, t->content_type, t->answer, t->answer_len};
    if (t->status == 0 && strncmp(t->content_type, "application/json", 16) == 0) {
        cJSON *j = cJSON_ParseWithLength(t->answer, t->answer_len);
        if (!j) {
            char msg[160];
            snprintf(msg, sizeof msg, "model \"%s\": the kernel returned invalid output (its "
                     "answer is declared application/json but is not JSON)", r->name);
            answer_error(c, LOOM_E_INTERNAL, msg);
            return;
        }
        cJSON_Delete(j);
    }
    c->done(c->ctx, &a);
    free(c);
}

/* A batch on its way through one instance's kernel. */
typedef struct batch {
    call *calls[MODEL_BATCH_LIMIT];
    kernel_task tasks[MODEL_BATCH_LIMIT];
    uint32_t n;
    uint64_t deadline_ns;
} batch;

/* Fails a batch whose kernel process is gone. */
static void fail_batch(router *r, batch *b, loom_error *e)
{
    char msg[400];
    snprintf(msg, sizeof msg, "model \"%s\": %s", r->name, loom_err_message(e));
    int32_t code = loom_err_code(e);
    loom_err_free(e);
    pthread_mutex_lock(&r->lock);
    r->failed += b->n;
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    pthread_mutex_unlock(&r->lock);
    log_warn("%s; its batch of %u failed, the instance restarts", msg, b->n);
    for (uint32_t i = 0; i < b->n; i++)
        answer_error(b->calls[i], code, msg);
    b->n = 0;
}

/* Hands a batch to the kernel; -1 when its process is gone (the batch
 * failed). */
static int send_batch(router *r, kernel_proc *k, batch *b)
{
    b->deadline_ns = now_ns() + NO_TIMEOUT_NS;
    for (uint32_t i = 0; i < b->n; i++) {
        b->tasks[i] = (kernel_task){.body = b->calls[i]->body, .len = b->calls[i]->len};
        if (b->calls[i]->deadline_ns && b->calls[i]->deadline_ns < b->deadline_ns)
            b->deadline_ns = b->calls[i]->deadline_ns;
    }
    loom_error *e = kernel_proc_send(k, b->tasks, b->n, b->deadline_ns);
    if (e) {
        fail_batch(r, b, e);
        return -1;
    }
    return 0;
}

/* Answers a collected batch's calls. */
static void deliver_batch(router *r, batch *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        deliver(r, b->calls[i], &b->tasks[i]);
    pthread_mutex_lock(&r->lock);
    r->served += b->n;
    pthread_mutex_unlock(&r->lock);
    b->n = 0;
}

static int should_leave_locked(router *r, instance *in)
{
    if (r->stopping)
        return r->force || !r->head;
    return in->retire;
}

/* Up to the batch size of the calls queued now, without waiting (0 when
 * none). Call with r->lock. */
static uint32_t take_queued_locked(router *r, call **out)
{
    uint32_t want = (uint32_t)r->profile.batch_size;
    uint32_t n = 0;
    size_t bytes = 0;
    while (r->head && n < want && (n == 0 || bytes + r->head->len <= kernel_proc_batch_bytes())) {
        call *c = r->head;
        r->head = c->next;
        if (!r->head)
            r->tail = NULL;
        r->queued--;
        bytes += c->len;
        c->next = NULL;
        out[n++] = c;
    }
    return n;
}

/* Up to the batch size of queued calls into out (at least one): waits
 * briefly for more when fewer are queued. Returns 0 when the instance is
 * to leave. Call with r->lock. */
static uint32_t take_batch_locked(router *r, instance *in, call **out)
{
    while (!r->head && !should_leave_locked(r, in))
        pthread_cond_wait(&r->work, &r->lock);
    if (should_leave_locked(r, in))
        return 0;
    uint32_t want = (uint32_t)r->profile.batch_size;
    if (want > 1 && r->queued < want) {
        uint64_t until = now_ns() + ROUTER_BATCH_WAIT_US * 1000ull;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
                          ROUTER_BATCH_WAIT_US * 1000ull;
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        while (r->queued < want && !r->stopping && !in->retire && now_ns() < until)
            if (pthread_cond_timedwait(&r->full, &r->lock, &ts) == ETIMEDOUT)
                break;
        if (!r->head)
            return take_batch_locked(r, in, out);
    }
    return take_queued_locked(r, out);
}


/* Whether to await the kernel's answer spinning first: with requests still
 * queued the machine is busy, and a core spent spinning is one the HTTP
 * threads and the kernel lack; a quiet service spins and answers sooner.
 * Call with r->lock. */
static int quiet_locked(router *r, uint32_t n)
{
    return !r->head && (n == 1 || n * 4 <= (uint32_t)r->profile.batch_size);
}

/* Serves until told to leave (0) or the kernel fails (-1). Two batches
 * overlap: once the kernel has answered one, the next goes to it before the
 * first's answers go out, when a full batch is queued by then (sending part
 * of one early made batches smaller and cost more than it saved), so the
 * kernel works while the host's threads reply. */
static int serve(router *r, instance *in, kernel_proc *k, batch *two)
{
    batch *cur = &two[0], *next = &two[1];
    for (;;) {
        if (!cur->n) {
            pthread_mutex_lock(&r->lock);
            in->state = INST_READY;
            cur->n = take_batch_locked(r, in, cur->calls);
            if (cur->n)
                in->state = INST_BUSY;
            int quiet = quiet_locked(r, cur->n);
            pthread_mutex_unlock(&r->lock);
            if (!cur->n)
                return 0;
            kernel_proc_spin(k, quiet);
            if (send_batch(r, k, cur) != 0)
                return -1;
        }
        loom_error *e = kernel_proc_collect(k, cur->tasks, cur->n, cur->deadline_ns);
        if (e) {
            fail_batch(r, cur, e);
            return -1;
        }
        pthread_mutex_lock(&r->lock);
        next->n = should_leave_locked(r, in) || r->queued < (size_t)r->profile.batch_size
                      ? 0 : take_queued_locked(r, next->calls);
        int quiet = quiet_locked(r, next->n);
        pthread_mutex_unlock(&r->lock);
        int failed = 0;
        if (next->n) {
            kernel_proc_spin(k, quiet);
            failed = send_batch(r, k, next) != 0;
        }
        deliver_batch(r, cur);
        if (failed)
            return -1;
        batch *t = cur;
        cur = next;
        next = t;
    }
}

/* ---- an instance ------------------------------------------------------------ */

static void set_state(router *r, instance *in, inst_state s)
{
    pthread_mutex_lock(&r->lock);
    in->state = s;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

/* Records why an instance could not serve. While no instance serves, the
 * queued requests fail with that reason instead of waiting for one that
 * may never come (a service without task_execution_timeout would hang). */
static void note_failure(router *r, loom_error *e, const char *what)
{
    char msg[sizeof r->last_error];
    snprintf(msg, sizeof msg, "%s: %s", what, loom_err_message(e));
    pthread_mutex_lock(&r->lock);
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    if (!r->ready_once)
        r->start_failed = 1;
    int serving = 0;
    for (int i = 0; i < r->max_instances; i++)
        serving += r->inst[i].state == INST_READY || r->inst[i].state == INST_BUSY;
    call *stranded = serving ? NULL : take_queue_locked(r);
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    log_warn("model \"%s\": %s", r->name, msg);
    loom_err_free(e);
    char answer[sizeof msg + 80];
    snprintf(answer, sizeof answer, "model \"%s\": no kernel instance can serve: %s", r->name,
             msg);
    fail_list(stranded, LOOM_E_UNAVAILABLE, answer);
}

static int leaving(router *r, instance *in)
{
    pthread_mutex_lock(&r->lock);
    int leave = in->retire || r->stopping;
    pthread_mutex_unlock(&r->lock);
    return leave;
}

/* Waits for the scheduler's device: 0 with its kind and index, -1 when
 * the instance is to leave first. */
static int wait_device(router *r, instance *in, const char *job, int32_t *kind, int32_t *index)
{
    for (;;) {
        int32_t slot;
        if (leaving(r, in))
            return -1;
        if (sched_service_job_devices(r->sched, job, &slot, 1, index, kind) > 0)
            return 0;
        usleep(DEVICE_POLL_US);
    }
}

/* The device an instance serves on: 0 with its kind and index, -1 when
 * the instance is to leave first. */
static int instance_device(router *r, instance *in, const char *job, int32_t *kind,
                           int32_t *index)
{
    switch (r->place) {
    case PLACE_CPU_UNGRANTED:
        *kind = LOOM_DEVICE_CPU;
        *index = 0;
        return leaving(r, in) ? -1 : 0;
    case PLACE_SHARED_GPU:
        return wait_device(r, in, r->shared_job, kind, index);
    default:
        return wait_device(r, in, job, kind, index);
    }
}

/* Submits the scheduler job holding the device(s) of `job` (one device). */
static loom_error *submit_device_job(router *r, const char *job)
{
    char plan[80];
    snprintf(plan, sizeof plan, "/%s", r->owner);
    sched_job_spec js = {.id = job, .plan = plan, .kind = SCHED_JOB_KERNEL, .max_devices = 1,
                         .min_devices = 1, .user = r->owner, .wait_if_too_large = true};
    return sched_service_submit(r->sched, &js);
}

static void *instance_main(void *arg)
{
    instance *in = arg;
    router *r = in->r;
    char job[128];
    snprintf(job, sizeof job, "kernel/%s/%u", r->name, in->seq);
    batch *two = calloc(2, sizeof *two); /* too large for a thread's stack */
    if (!two) {
        note_failure(r, loom_err(LOOM_E_INTERNAL, "out of memory"), "a kernel instance");
        set_state(r, in, INST_DONE);
        return NULL;
    }
    int own_job = r->place == PLACE_OWN_DEVICE;
    loom_error *e = own_job ? submit_device_job(r, job) : NULL;
    if (e) {
        note_failure(r, e, "no device for a kernel instance");
        free(two);
        set_state(r, in, INST_DONE);
        return NULL;
    }
    int32_t kind = LOOM_DEVICE_CPU, index = 0;
    while (instance_device(r, in, job, &kind, &index) == 0) {
        set_state(r, in, INST_STARTING);
        kernel_proc_spec ks = {.binary = r->binary, .model_dir = r->model_dir,
                               .work_dir = r->work_dir, .user = r->owner, .output = r->output,
                               .model = &r->model, .env = r->profile.env,
                               .nenv = r->profile.nenv, .device_kind = kind,
                               .device_index = index,
                               .start_timeout_ms = (unsigned)(r->profile.connection_timeout_s * 1000)};
        kernel_proc *k = NULL;
        e = kernel_proc_start(&ks, &k);
        if (e) {
            note_failure(r, e, "the kernel could not start");
            set_state(r, in, INST_WAITING);
            usleep(RESTART_BACKOFF_US);
            continue;
        }
        pthread_mutex_lock(&r->lock);
        r->ready_once = 1;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        int rc = serve(r, in, k, two);
        kernel_proc_stop(k);
        if (rc == 0)
            break;
        pthread_mutex_lock(&r->lock);
        r->restarts++;
        in->state = INST_WAITING;
        pthread_mutex_unlock(&r->lock);
    }
    if (own_job)
        sched_service_end(r->sched, job);
    free(two);
    set_state(r, in, INST_DONE);
    return NULL;
}

/* Starts one more instance. Call with r->lock; 0 or -1. */
static int spawn_locked(router *r)
{
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        if (in->state != INST_FREE)
            continue;
        in->r = r;
        in->retire = 0;
        in->seq = r->seq++;
        in->state = INST_WAITING;
        if (pthread_create(&in->thread, NULL, instance_main, in) != 0) {
            in->state = INST_FREE;
            return -1;
        }
        return 0;
    }
    return -1;
}

/* ---- the control thread: deadlines in the queue, scaling ------------------ */

static call *expire_locked(router *r, uint64_t now)
{
    call *expired = NULL, **link = &r->head, *prev = NULL;
    while (*link) {
        call *c = *link;
        if (c->deadline_ns && c->deadline_ns <= now) {
            *link = c->next;
            r->queued--;
            c->next = expired;
            expired = c;
        } else {
            prev = c;
            link = &c->next;
        }
    }
    r->tail = prev;
    return expired;
}

static void reap_locked(router *r)
{
    for (int i = 0; i < r->max_instances; i++)
        if (r->inst[i].state == INST_DONE) {
            pthread_mutex_unlock(&r->lock);
            pthread_join(r->inst[i].thread, NULL);
            pthread_mutex_lock(&r->lock);
            r->inst[i].state = INST_FREE;
        }
}

static void scale_locked(router *r, uint64_t now)
{
    int active = 0, serving = 0, busy = 0, idle = -1;
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        if (in->state == INST_FREE || in->state == INST_DONE || in->retire)
            continue;
        active++;
        serving += in->state == INST_READY || in->state == INST_BUSY;
        busy += in->state == INST_BUSY;
        if (in->state == INST_READY || (idle < 0 && in->state == INST_WAITING))
            idle = i;
    }
    if (r->head || busy >= serving)
        r->spare_since_ns = now;
    if (active < r->profile.kernel_min) {
        spawn_locked(r);
        return;
    }
    if (now < r->next_scale_ns)
        return;
    r->next_scale_ns = now + (uint64_t)(r->profile.schedule_interval_s * 1e9);
    if (r->head && active < r->max_instances) {
        spawn_locked(r);
        log_info("model \"%s\": %zu request(s) queued: one more instance (%d)", r->name,
                 r->queued, active + 1);
    } else if (active > r->profile.kernel_min && idle >= 0 &&
               now - r->spare_since_ns >= (uint64_t)(r->profile.delay_release_s * 1e9)) {
        r->inst[idle].retire = 1;
        r->spare_since_ns = now;
        pthread_cond_broadcast(&r->work);
        pthread_cond_broadcast(&r->full);
        log_info("model \"%s\": capacity spare: one instance fewer (%d)", r->name, active - 1);
    }
}

static void *control_main(void *arg)
{
    router *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        uint64_t now = now_ns();
        call *expired = expire_locked(r, now);
        reap_locked(r);
        if (!r->stopping)
            scale_locked(r, now);
        pthread_mutex_unlock(&r->lock);
        char msg[160];
        snprintf(msg, sizeof msg, "model \"%s\": the request waited longer than "
                 "task_execution_timeout (%g s)", r->name, r->profile.execution_timeout_s);
        fail_list(expired, LOOM_E_DEADLINE, msg);
        usleep(CONTROL_TICK_US);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* ---- the service's life ------------------------------------------------------ */

static router *router_new(const router_spec *spec, placement place)
{
    router *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->place = place;
    snprintf(r->name, sizeof r->name, "%s", spec->name);
    snprintf(r->owner, sizeof r->owner, "%s", spec->owner);
    snprintf(r->binary, sizeof r->binary, "%s", spec->binary);
    snprintf(r->model_dir, sizeof r->model_dir, "%s", spec->model_dir);
    snprintf(r->work_dir, sizeof r->work_dir, "%s", spec->work_dir);
    snprintf(r->output, sizeof r->output, "%s/kernel.log", spec->work_dir);
    r->model = *spec->model;
    r->profile = *spec->profile;
    r->sched = spec->sched;
    /* One host serves every replica: `replica` groups of kernel_min to
     * kernel_max instances are that many times the instances (the profile's
     * check keeps the product within MODEL_KERNEL_LIMIT). */
    r->profile.kernel_min *= r->profile.replica;
    if (r->profile.kernel_max > 0)
        r->profile.kernel_max *= r->profile.replica;
    /* kernel_max -1: as many as the plan can give, one device each; instances
     * that hold no device of their own are bounded by the cores instead. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int devices = r->place == PLACE_OWN_DEVICE ? (int)sched_service_device_count(spec->sched)
                                               : (int)(cores > 0 ? cores : 1);
    r->max_instances = r->profile.kernel_max > 0 ? r->profile.kernel_max
                       : devices < MODEL_KERNEL_LIMIT ? (devices > 0 ? devices : 1)
                                                      : MODEL_KERNEL_LIMIT;
    if (r->max_instances < r->profile.kernel_min)
        r->max_instances = r->profile.kernel_min;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->full, NULL);
    pthread_cond_init(&r->changed, NULL);
    return r;
}

/* After its instances have ended. */
static void router_free(router *r)
{
    if (r->shared_job[0])
        sched_service_end(r->sched, r->shared_job);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->full);
    pthread_cond_destroy(&r->changed);
    free(r);
}

/* Waits until an instance serves, its kernel fails to load, or the
 * start-up bound passes. */
static loom_error *wait_first(router *r)
{
    uint64_t bound_ns = (uint64_t)(r->profile.connection_timeout_s * 1e9);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + bound_ns;
    ts.tv_sec = (time_t)(abs_ns / 1000000000u);
    ts.tv_nsec = (long)(abs_ns % 1000000000u);
    loom_error *e = NULL;
    pthread_mutex_lock(&r->lock);
    while (!r->ready_once && !r->start_failed)
        if (pthread_cond_timedwait(&r->changed, &r->lock, &ts) == ETIMEDOUT)
            break;
    if (r->start_failed)
        e = loom_err(LOOM_E_INVALID, "model \"%s\": %s", r->name, r->last_error);
    else if (!r->ready_once)
        e = loom_err(LOOM_E_UNAVAILABLE, "model \"%s\": no kernel instance was serving within "
                     "kernel.connection_timeout (%g s): the scheduler has granted no device "
                     "(see `loom slots`), or the kernel is slow to load", r->name,
                     r->profile.connection_timeout_s);
    pthread_mutex_unlock(&r->lock);
    return e;
}

/* The kind of device the scheduler hands out here (all of one kind). */
static int32_t inventory_kind(sched_service *ss)
{
    sched_slot_view *slots = NULL;
    size_t n = 0;
    int32_t kind = LOOM_DEVICE_CPU;
    loom_error *e = sched_service_slots(ss, &slots, &n);
    if (!e && n > 0)
        kind = slots[0].kind;
    loom_err_free(e);
    free(slots);
    return kind;
}

/* kernel.gpu against this host: "no" takes CPU slots (or, where the
 * scheduler hands out GPUs alone, no device: the CPU beside the jobs);
 * "exclusive" one GPU per instance; "shared" one GPU for the service. */
static loom_error *choose_placement(const router_spec *spec, placement *out)
{
    const char *gpu = spec->profile->gpu;
    int has_gpus = inventory_kind(spec->sched) != LOOM_DEVICE_CPU;
    if (strcmp(gpu, "no") == 0) {
        *out = has_gpus ? PLACE_CPU_UNGRANTED : PLACE_OWN_DEVICE;
        return NULL;
    }
    if (!has_gpus)
        return loom_err(LOOM_E_INVALID, "model \"%s\": kernel.gpu \"%s\": this host has no GPU "
                        "(its scheduler hands out CPU slots); set kernel.gpu to \"no\" to serve "
                        "on them", spec->name, gpu);
    *out = strcmp(gpu, "shared") == 0 ? PLACE_SHARED_GPU : PLACE_OWN_DEVICE;
    return NULL;
}

loom_error *router_start(const router_spec *spec, router **out)
{
    *out = NULL;
    placement place = PLACE_OWN_DEVICE;
    loom_error *bad = choose_placement(spec, &place);
    if (bad)
        return bad;
    router *r = router_new(spec, place);
    if (!r)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    if (place == PLACE_SHARED_GPU) {
        snprintf(r->shared_job, sizeof r->shared_job, "kernel/%s/shared", r->name);
        bad = submit_device_job(r, r->shared_job);
        if (bad) {
            r->shared_job[0] = '\0';
            router_free(r);
            return loom_err_wrap(bad, "model \"%s\": the shared GPU", spec->name);
        }
    }
    pthread_mutex_lock(&r->lock);
    int ok = spawn_locked(r) == 0;
    pthread_mutex_unlock(&r->lock);
    if (!ok || pthread_create(&r->control, NULL, control_main, r) != 0) {
        if (ok) {
            router_stop(r, 1);
            return loom_err(LOOM_E_INTERNAL, "cannot start the service's thread");
        }
        router_free(r);
        return loom_err(LOOM_E_INTERNAL, "cannot start a kernel instance's thread");
    }
    loom_error *e = wait_first(r);
    if (e) {
        router_stop(r, 1);
        return e;
    }
    *out = r;
    return NULL;
}

void router_stop(router *r, int force)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    r->force = force;
    call *dropped = force ? take_queue_locked(r) : NULL;
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->full);
    pthread_mutex_unlock(&r->lock);
    char msg[160];
    snprintf(msg, sizeof msg, "model \"%s\" was stopped", r->name);
    fail_list(dropped, LOOM_E_UNAVAILABLE, msg);
    if (r->control)
        pthread_join(r->control, NULL);
    for (int i = 0; i < r->max_instances; i++)
        if (r->inst[i].state != INST_FREE)
            pthread_join(r->inst[i].thread, NULL);
    fail_list(take_queue_locked(r), LOOM_E_UNAVAILABLE, msg);
    router_free(r);
}

/* A .so or Lua kernel may take the body as it is (an echo would hand
 * non-JSON back); the ffi and native kernels parse it themselves and refuse
 * what is not their JSON, so the host spares the big inputs a second
 * parse. */
static loom_error *check_body(const router *r, const char *body, size_t len)
{
    if (r->model.runtime != MODEL_RUNTIME_SO && r->model.runtime != MODEL_RUNTIME_LUA)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(body, len);
    cJSON_Delete(j);
    return j ? NULL : loom_err(LOOM_E_INVALID, "body: expected a JSON request for model "
                               "\"%s\"", r->name);
}

loom_error *router_submit(router *r, const char *body, size_t len, router_done_fn done, void *ctx)
{
    loom_error *bad = check_body(r, body, len);
    if (bad)
        return bad;
    call *c = calloc(1, sizeof *c);
    if (!c)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    *c = (call){.body = body, .len = len, .done = done, .ctx = ctx};
    if (r->profile.execution_timeout_s > 0)
        c->deadline_ns = now_ns() + (uint64_t)(r->profile.execution_timeout_s * 1e9);
    pthread_mutex_lock(&r->lock);
    loom_error *e = NULL;
    if (r->stopping)
        e = loom_err(LOOM_E_UNAVAILABLE, "model \"%s\" is stopping", r->name);
    else if (r->queued >= ROUTER_QUEUE_LIMIT)
        e = loom_err(LOOM_E_RATE_LIMITED, "model \"%s\": %d requests already wait (the queue's "
                     "limit): retry later", r->name, ROUTER_QUEUE_LIMIT);
    if (!e) {
        if (r->tail)
            r->tail->next = c;
        else
            r->head = c;
        r->tail = c;
        r->queued++;
        pthread_cond_signal(&r->work); /* no system call when no instance idles */
        if (r->queued >= (size_t)r->profile.batch_size)
            pthread_cond_signal(&r->full);
    }
    pthread_mutex_unlock(&r->lock);
    if (e)
        free(c);
    return e;
}

void router_get_stats(router *r, router_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        out->instances += in->state == INST_READY || in->state == INST_BUSY;
        out->busy += in->state == INST_BUSY;
        out->target += in->state != INST_FREE && in->state != INST_DONE && !in->retire;
    }
    out->queued = r->queued;
    out->served = r->served;
    out->failed = r->failed;
    out->restarts = r->restarts;
    snprintf(out->last_error, sizeof out->last_error, "%s", r->last_error);
    pthread_mutex_unlock(&r->lock);
}
