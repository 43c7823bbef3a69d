/* infer/grants.c - a model service as one elastic scheduler job
 * ("model/NAME", kind kernel, in the deployer's plan): its instances follow
 * the job's grant the way an elastic trainer's workers do (exec.c's
 * carry_out_grants_locked). One instance per device granted and ready; an
 * instance whose device the scheduler took back leaves once the batch it
 * holds is answered (the requests still queued stay in the shared queue for
 * the others), and the devices no instance is on any more are handed back,
 * so the job they were granted to starts on them. The autoscaler sets the
 * job's maximum (r->target); fair share and priority decide the rest. */
#include "infer/model_service_internal.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

void grants_range(const model_service *r, int target, int *min, int *max)
{
    /* An elastic job's minimum is at least one device: a service allowed
     * none (kernel_min 0) ends its job instead, when it wants none. A
     * minimum above the host's devices would never start: the service
     * serves on what there is. */
    int devices = (int)sched_service_device_count(r->sched);
    *max = target > 0 ? target : 1;
    *min = r->profile.kernel_min > 0 ? r->profile.kernel_min : 1;
    if (*min > devices && devices > 0)
        *min = devices;
    if (*min > *max)
        *min = *max;
}

loom_error *grants_submit(model_service *r, int min, int max, int elastic)
{
    char plan[80];
    snprintf(plan, sizeof plan, "/%s", r->owner);
    sched_job_spec js = {.id = r->job, .plan = plan, .kind = SCHED_JOB_KERNEL,
                         .elastic = elastic != 0, .min_devices = min, .max_devices = max,
                         .user = r->owner, .wait_if_too_large = true,
                         /* kernel.gpu "no": CPU slots where there are both */
                         .pool = strcmp(r->profile.gpu, "no") == 0 ? SCHED_POOL_CPU
                                                                   : SCHED_POOL_GPU};
    loom_error *e = sched_service_submit(r->sched, &js);
    if (e)
        return e;
    pthread_mutex_lock(&r->lock);
    r->job_live = 1;
    r->job_min = min;
    r->job_max = max;
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* A scaled-to-zero service whose job the scheduler refused: the requests
 * waiting for it fail with the reason, and the next one tries again. */
static void refused(model_service *r, loom_error *e)
{
    char msg[sizeof r->last_error];
    snprintf(msg, sizeof msg, "model \"%s\": no instance could start: %s", r->name,
             loom_err_message(e));
    loom_err_free(e);
    log_warn("%s", msg);
    pthread_mutex_lock(&r->lock);
    r->target = 0;
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    call *stranded = model_service_take_queue_locked(r);
    pthread_mutex_unlock(&r->lock);
    model_service_fail_list(stranded, LOOM_E_UNAVAILABLE, msg);
}

/* The job's range follows the autoscaler's target; a service scaled to
 * zero submits its job again. Returns whether the job is live. */
static int follow_target(model_service *r, int target)
{
    int min, max;
    grants_range(r, target, &min, &max);
    pthread_mutex_lock(&r->lock);
    int live = r->job_live, same = min == r->job_min && max == r->job_max;
    pthread_mutex_unlock(&r->lock);
    loom_error *e = NULL;
    if (!live && target > 0 && (e = grants_submit(r, min, max, 1))) {
        refused(r, e);
        return 0;
    }
    if (live && target > 0 && !same) {
        e = sched_service_set_range(r->sched, r->job, min, max);
        if (!e) {
            pthread_mutex_lock(&r->lock);
            r->job_min = min;
            r->job_max = max;
            pthread_mutex_unlock(&r->lock);
        }
    }
    if (e) {
        log_warn("model \"%s\": job %s to [%d, %d] device(s): %s", r->name, r->job, min, max,
                 loom_err_message(e));
        loom_err_free(e);
    }
    pthread_mutex_lock(&r->lock);
    live = r->job_live;
    pthread_mutex_unlock(&r->lock);
    return live;
}

static int holds(const int32_t *index, int n, int32_t device)
{
    for (int k = 0; k < n; k++)
        if (index[k] == device)
            return 1;
    return 0;
}

/* Instances leave the devices not in ready[] (all of them when the service
 * wants none) and start on those without one; held[] gets the devices an
 * instance is still on. Call with r->lock; returns how many are held. */
static int follow_devices_locked(model_service *r, const int32_t *ready, int n, int32_t kind,
                                 int target, int32_t *held)
{
    int nheld = 0, woken = 0;
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        if (in->state == INST_FREE || in->state == INST_DONE)
            continue;
        if (!in->retire && (target == 0 || !holds(ready, n, in->device_index))) {
            in->retire = woken = 1;
            log_info("model \"%s\": device %d %s: its instance leaves after its batch", r->name,
                     in->device_index, target ? "taken back by the scheduler" : "no longer wanted");
        }
        held[nheld++] = in->device_index;
    }
    if (woken) {
        pthread_cond_broadcast(&r->work);
        pthread_cond_broadcast(&r->full);
    }
    for (int k = 0; target > 0 && !r->start_failed && !r->stopping && k < n; k++)
        if (!holds(held, nheld, ready[k]) && kernel_instance_spawn_locked(r, kind, ready[k]) == 0)
            held[nheld++] = ready[k];
    return nheld;
}

/* Devices of a Slurm node are another machine's: an instance started on
 * one would run here by mistake. The service fails as a kernel that does
 * not load does (no device held until stopped), saying why. Returns
 * whether that happened. */
static int granted_elsewhere(model_service *r)
{
    char node[64];
    if (!sched_service_job_node(r->sched, r->job, node, sizeof node))
        return 0;
    char msg[sizeof r->last_error];
    snprintf(msg, sizeof msg, "model \"%s\" was given devices of Slurm node %s: serving on "
             "Slurm nodes is not supported yet", r->name, node);
    log_warn("%s", msg);
    pthread_mutex_lock(&r->lock);
    r->start_failed = 1;
    r->target = 0;
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    call *stranded = model_service_take_queue_locked(r);
    pthread_mutex_unlock(&r->lock);
    model_service_fail_list(stranded, LOOM_E_UNSUPPORTED, msg);
    return 1;
}

void grants_follow(model_service *r)
{
    pthread_mutex_lock(&r->lock);
    int target = r->stopping ? 0 : r->target;
    pthread_mutex_unlock(&r->lock);
    if (!follow_target(r, target))
        return;
    int32_t ready[MODEL_KERNEL_LIMIT], held[MODEL_KERNEL_LIMIT], kind = LOOM_DEVICE_CPU;
    int total = 0;
    int n = sched_service_job_grant(r->sched, r->job, ready, MODEL_KERNEL_LIMIT, &kind, &total);
    n = n < 0 ? 0 : n > MODEL_KERNEL_LIMIT ? MODEL_KERNEL_LIMIT : n;
    if (n > 0 && granted_elsewhere(r))
        n = 0;
    pthread_mutex_lock(&r->lock);
    int nheld = follow_devices_locked(r, ready, n, kind, target, held);
    int end = target == 0 && nheld == 0;
    if (end)
        r->job_live = 0;
    pthread_mutex_unlock(&r->lock);
    if (end) {
        sched_service_end(r->sched, r->job); /* scaled to zero: no device held */
        log_info("model \"%s\": no instance left: its devices are free", r->name);
        return;
    }
    sched_service_handed_back(r->sched, r->job, held, nheld);
}
