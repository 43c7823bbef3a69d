/* infer/model_service.c - see model_service.h: a service's life, its queue and submission. */
#include "infer/model_service_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

uint64_t model_service_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void model_service_call_free(call *c)
{
    v2_request_free(&c->v2);
    free(c);
}

void model_service_answer_error(call *c, int32_t code, const char *msg)
{
    model_service_answer a = {code, "text/plain", msg, strlen(msg)};
    c->done(c->ctx, &a);
    model_service_call_free(c);
}

/* Fails every call of a detached list. */
void model_service_fail_list(call *c, int32_t code, const char *msg)
{
    while (c) {
        call *next = c->next;
        model_service_answer_error(c, code, msg);
        c = next;
    }
}

call *model_service_take_queue_locked(model_service *r)
{
    call *all = r->head;
    r->head = r->tail = NULL;
    r->queued = 0;
    return all;
}


/* ---- the service's life ------------------------------------------------------ */

static model_service *model_service_new(const model_service_spec *spec, placement place)
{
    model_service *r = calloc(1, sizeof *r);
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
static void model_service_free(model_service *r)
{
    if (r->job_live)
        sched_service_end(r->sched, r->job);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->full);
    pthread_cond_destroy(&r->changed);
    free(r);
}

/* Waits, at most MODEL_SERVICE_SETTLE_MS, until the first instance has
 * its device (its kernel loading or serving), has failed, or waits for
 * the scheduler with a reason, so the start's reply can say which. */
static void settle(model_service *r)
{
    for (int waited = 0; waited < MODEL_SERVICE_SETTLE_MS * 1000; waited += DEVICE_POLL_US) {
        model_service_stats st;
        model_service_get_stats(r, &st);
        pthread_mutex_lock(&r->lock);
        int loading = 0;
        for (int i = 0; i < r->max_instances; i++)
            loading += r->inst[i].state == INST_STARTING;
        pthread_mutex_unlock(&r->lock);
        if (loading || st.serving_once || st.start_failed || st.waiting)
            return;
        usleep(DEVICE_POLL_US);
    }
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
static loom_error *choose_placement(const model_service_spec *spec, placement *out)
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

loom_error *model_service_start(const model_service_spec *spec, model_service **out)
{
    *out = NULL;
    placement place = PLACE_OWN_DEVICE;
    loom_error *bad = choose_placement(spec, &place);
    if (bad)
        return bad;
    model_service *r = model_service_new(spec, place);
    if (!r)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    snprintf(r->job, sizeof r->job, "model/%s", r->name);
    int min = 1, max = 1;
    if (place == PLACE_OWN_DEVICE) {
        /* At least one instance to start with: a service allowed none
         * serves once, then lets its device go when idle. */
        r->target = r->profile.kernel_min > 0 ? r->profile.kernel_min : 1;
        grants_range(r, r->target, &min, &max);
    }
    bad = place == PLACE_CPU_UNGRANTED ? NULL : grants_submit(r, min, max, place == PLACE_OWN_DEVICE);
    if (bad) {
        model_service_free(r);
        return loom_err_wrap(bad, "model \"%s\": its scheduler job", spec->name);
    }
    /* Instances on devices of their own start as the scheduler grants
     * them (the control thread); the others start here. */
    pthread_mutex_lock(&r->lock);
    int ok = place == PLACE_OWN_DEVICE || kernel_instance_spawn_locked(r, LOOM_DEVICE_CPU, 0) == 0;
    pthread_mutex_unlock(&r->lock);
    if (!ok || pthread_create(&r->control, NULL, autoscaler_main, r) != 0) {
        if (ok) {
            model_service_stop(r, 1);
            return loom_err(LOOM_E_INTERNAL, "cannot start the service's thread");
        }
        model_service_free(r);
        return loom_err(LOOM_E_INTERNAL, "cannot start a kernel instance's thread");
    }
    settle(r);
    *out = r;
    return NULL;
}

void model_service_stop(model_service *r, int force)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = 1;
    r->force = force;
    call *dropped = force ? model_service_take_queue_locked(r) : NULL;
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->full);
    pthread_mutex_unlock(&r->lock);
    char msg[160];
    snprintf(msg, sizeof msg, "model \"%s\" was stopped", r->name);
    model_service_fail_list(dropped, LOOM_E_UNAVAILABLE, msg);
    if (r->control)
        pthread_join(r->control, NULL);
    for (int i = 0; i < r->max_instances; i++)
        if (r->inst[i].state != INST_FREE)
            pthread_join(r->inst[i].thread, NULL);
    model_service_fail_list(model_service_take_queue_locked(r), LOOM_E_UNAVAILABLE, msg);
    model_service_free(r);
}

/* A v2 model's request is decoded here, once, into the tensors its kernel
 * reads. A raw .so or Lua kernel may take the body as it is (an echo would
 * hand non-JSON back), so it is checked to be JSON; the ffi and native
 * kernels parse theirs and refuse what is not their JSON, so the host
 * spares the big inputs a second parse. */
static loom_error *check_body(const model_service *r, call *c, const char *body, size_t len)
{
    if (r->model.protocol == MODEL_PROTOCOL_V2) {
        loom_error *e = v2_decode(&r->model, body, len, &c->v2);
        c->body = c->v2.pack.data;
        c->len = c->v2.pack.len;
        return e ? loom_err_wrap(e, "model \"%s\"", r->name) : NULL;
    }
    if (r->model.runtime != MODEL_RUNTIME_SO && r->model.runtime != MODEL_RUNTIME_LUA)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(body, len);
    cJSON_Delete(j);
    return j ? NULL : loom_err(LOOM_E_INVALID, "body: expected a JSON request for model "
                               "\"%s\"", r->name);
}

loom_error *model_service_submit(model_service *r, const char *body, size_t len, model_service_done_fn done, void *ctx)
{
    call *c = calloc(1, sizeof *c);
    if (!c)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    *c = (call){.body = body, .len = len, .done = done, .ctx = ctx};
    loom_error *bad = check_body(r, c, body, len);
    if (bad) {
        model_service_call_free(c);
        return bad;
    }
    if (r->profile.execution_timeout_s > 0)
        c->deadline_ns = model_service_now_ns() + (uint64_t)(r->profile.execution_timeout_s * 1e9);
    pthread_mutex_lock(&r->lock);
    loom_error *e = NULL;
    if (r->stopping)
        e = loom_err(LOOM_E_UNAVAILABLE, "model \"%s\" is stopping", r->name);
    else if (r->start_failed)
        e = loom_err(LOOM_E_UNAVAILABLE, "model \"%s\" failed to start: %s", r->name,
                     r->last_error);
    else if (!r->ready_once)
        e = loom_err(LOOM_E_UNAVAILABLE, "model \"%s\" is starting: no kernel instance serves "
                     "it yet; try again shortly (loom model view %s)", r->name, r->name);
    else if (r->queued >= MODEL_SERVICE_QUEUE_LIMIT)
        e = loom_err(LOOM_E_RATE_LIMITED, "model \"%s\": %d requests already wait (the queue's "
                     "limit): retry later", r->name, MODEL_SERVICE_QUEUE_LIMIT);
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
        model_service_call_free(c);
    return e;
}

/* The scheduler job an instance waits on for its device, if one waits.
 * Call with r->lock. */
static int waiting_job_locked(const model_service *r, char *job, size_t len)
{
    for (int i = 0; i < r->max_instances; i++) {
        const instance *in = &r->inst[i];
        if (in->state != INST_WAITING || in->retire || r->place != PLACE_SHARED_GPU)
            continue;
        snprintf(job, len, "%s", r->job);
        return 1;
    }
    /* Its own devices: the service's job waits while no instance has one. */
    if (r->place == PLACE_OWN_DEVICE && r->job_live && !kernel_instance_count_locked(r, 1)) {
        snprintf(job, len, "%s", r->job);
        return 1;
    }
    return 0;
}

void model_service_get_stats(model_service *r, model_service_stats *out)
{
    memset(out, 0, sizeof *out);
    char job[128];
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        out->instances += in->state == INST_READY || in->state == INST_BUSY;
        out->busy += in->state == INST_BUSY;
    }
    out->target = r->place == PLACE_OWN_DEVICE ? r->target : kernel_instance_count_locked(r, 0);
    out->queued = r->queued;
    out->served = r->served;
    out->failed = r->failed;
    out->restarts = r->restarts;
    out->serving_once = r->ready_once;
    out->start_failed = r->start_failed;
    snprintf(out->last_error, sizeof out->last_error, "%s", r->last_error);
    int waits = !r->ready_once && waiting_job_locked(r, job, sizeof job);
    pthread_mutex_unlock(&r->lock);
    /* The scheduler has a lock of its own: asked without the service's. */
    if (waits)
        out->waiting = sched_service_pending_reason(r->sched, job, &out->wait_reason);
}
