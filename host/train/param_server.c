/* train/param_server.c - ASYNC: a parameter server in the coordinator.
 *
 * The coordinator holds the model (an instance of the same adapter, in the
 * host) and its optimizer. Each worker gets a batch and the current weights,
 * sends back its gradient, and the server applies it unless it is staler
 * than EDT_MAX_STALENESS updates (then its samples go back to the pool).
 * Workers never wait for each other; they join and leave at any time. An
 * epoch ends when its samples are all taken and every batch handed out
 * came back. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "train/adapter.h"
#include "train/checkpoint.h"
#include "train/coordinator_internal.h"
#include "util/fs.h"
#include "util/user_tree.h"


typedef struct param_server {
    const loom_framework_factory *f;
    loom_framework_instance *inst;
    loom_tensor_view params, grads;
    loom_tensor_view *views; /* malloc'd, nviews of them */
    int32_t *roles;
    uint32_t nviews;
    uint64_t version;
    uint64_t stale;
} param_server;

static loom_error *ps_open(edt_coordinator *c, param_server *ps)
{
    const loom_framework_factory *f = ps->f = c->job.framework;
    if (!f)
        return loom_err(LOOM_E_UNSUPPORTED, "ASYNC needs the framework adapter loaded in the host");
    loom_error *e = adapter_check_trainer(f, "ASYNC: the framework adapter");
    if (e)
        return e;
    /* The spec is in the exec folder, the job's: read beneath it. */
    const char *rel = utree_rel_of(c->job.result_dir, c->job.spec_path);
    char *spec = NULL;
    e = rel ? utree_read_file_in(c->job.result_dir, rel, 16u << 20, &spec, NULL)
            : loom_err(LOOM_E_INVALID, "%s: not in the exec folder", c->job.spec_path);
    if (e)
        return loom_err_wrap(e, "the training spec");
    loom_trainer_config cfg = {
        .struct_size = sizeof cfg,
        .num_dataloader_threads = 1,
        .seed = c->job.settings.seed,
        .device = {.struct_size = sizeof(loom_device), .kind = LOOM_DEVICE_CPU},
        .spec_json = spec,
        .code_dir = c->job.code_dir,
        .data_dir = c->job.data_dir,
    };
    e = f->create(f, &cfg, &ps->inst);
    free(spec);
    ps->params.struct_size = ps->grads.struct_size = sizeof(loom_tensor_view);
    if (!e)
        e = f->buffers(ps->inst, &ps->params, &ps->grads);
    if (!e)
        e = adapter_state_tensors(f, ps->inst, &ps->views, &ps->roles, &ps->nviews);
    if (e)
        return loom_err_wrap(e, "parameter server");
    if (c->load_path[0]) {
        if ((e = checkpoint_load(c->load_path, ps->views, ps->nviews, NULL)) ||
            (e = adapter_state_loaded(f, ps->inst)))
            return e;
        c->load_path[0] = 0;
    }
    return NULL;
}

/* Hands a worker its next batch with the current weights. */
static void ps_assign(edt_coordinator *c, param_server *ps, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    uint32_t b = c->job.settings.batch_size;
    free(s->inflight);
    s->inflight = malloc(sizeof(uint64_t) * b);
    s->ninflight = s->inflight ? sampler_take(&c->pr.smp, s->inflight, b) : 0;
    if (s->ninflight == 0)
        return;
    train_start_epoch_clock(c);
    s->version = ps->version;
    uint32_t size = (uint32_t)s->ninflight;
    double scale = 1.0;
    msg m = {.kind = MSG_WORK,
             .u.work = {.version = ps->version, .epoch = c->pr.epoch,
                        .iteration = c->pr.iteration, .workers = train_count_in(c, SLOT_MEMBER),
                        .batch = {.samples = s->inflight, .sizes = &size, .scales = &scale,
                                  .count = 1}}};
    loom_error *e = train_slot_send(c, i, &m, ps->params.data, (size_t)ps->params.nbytes);
    if (e) {
        /* Its link took nothing for LOOM_HEARTBEAT_TIMEOUT_MS, or closed:
         * lost now (its samples go back), not after heartbeats it sent
         * before are read and waited out again. */
        char why[512];
        snprintf(why, sizeof why, "the weights could not be sent: %s", loom_err_message(e));
        loom_err_free(e);
        train_drop_slot(c, i, why);
    }
}

/* Members up to the target, no generations, no broadcast: a member leaves
 * only between two batches. Returns an error when the job cannot go on. */
static loom_error *async_membership(edt_coordinator *c)
{
    int32_t granted[MAX_SLOTS];
    uint32_t ngranted;
    uint32_t target = train_current_grant(c, granted, &ngranted);
    train_release_revoked(c, granted, ngranted);
    train_start_workers(c, target, granted, ngranted);
    uint32_t members = train_count_in(c, SLOT_MEMBER);
    uint32_t coming = train_count_in(c, SLOT_STARTING) + train_count_in(c, SLOT_READY);
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (s->state == SLOT_READY && members < target) {
            train_make_member(c, i, granted, ngranted);
            members++;
        } else if (s->state == SLOT_MEMBER && members > target && s->ninflight == 0) {
            train_send_exit(c, i, "leaving: the job was resized", 0);
            members--;
        }
    }
    if (members == 0 && coming == 0 && c->pr.epoch < c->job.settings.epochs)
        return loom_err(LOOM_E_UNAVAILABLE, "every worker died; the job cannot go on");
    if (c->m.failing[0])
        return loom_err(LOOM_E_LIMIT, "%s", c->m.failing);
    if (c->m.deaths_since_progress > 2 * c->m.nslots + 2)
        return loom_err(LOOM_E_LIMIT, "workers keep dying: %u lost without a step done",
                        c->m.deaths_since_progress);
    return NULL;
}

/* Validation in the host, on the server's own model. */
static loom_error *ps_validate(edt_coordinator *c, param_server *ps)
{
    uint64_t n = c->m.ntest;
    uint64_t *idx = malloc(sizeof(uint64_t) * n);
    if (!idx)
        return loom_err(LOOM_E_INTERNAL, "validation: out of memory");
    for (uint64_t k = 0; k < n; k++)
        idx[k] = k;
    adapter_metrics m;
    adapter_metrics_init(&m);
    loom_error *e = ps->f->evaluate(ps->inst, LOOM_SPLIT_TEST, idx, (uint32_t)n, &m.list);
    free(idx);
    if (e)
        return loom_err_wrap(e, "validation");
    cJSON *metrics = cJSON_CreateObject();
    for (uint32_t k = 0, total = loom_metrics_total(&m.list); k < total; k++)
        if (loom_metrics_at(&m.list, k)->name)
            cJSON_AddNumberToObject(metrics, loom_metrics_at(&m.list, k)->name,
                                    loom_metrics_at(&m.list, k)->value);
    train_record_validation(c, metrics, n);
    return NULL;
}

static void ps_checkpoint(edt_coordinator *c, param_server *ps)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/checkpoint/epoch-%u.safetensors", c->job.result_dir, c->pr.epoch);
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "epoch", c->pr.epoch);
    cJSON_AddNumberToObject(meta, "iteration", (double)c->pr.iteration);
    loom_error *e = checkpoint_save(path, ps->views, ps->roles, ps->nviews, 0, meta);
    if (!e)
        checkpoint_saved(c, path);
    else
        train_driver_say(c, "checkpoint failed: %s", loom_err_message(e));
    loom_err_free(e);
    cJSON_Delete(meta);
}

static loom_error *ps_finish(edt_coordinator *c, param_server *ps)
{
    char path[PATH_MAX + 64];
    loom_err_free(utree_mkdirs_in(c->job.result_dir, "model", 0755)); /* the job's folder */
    snprintf(path, sizeof path, "%s/model/model.safetensors", c->job.result_dir);
    loom_error *e = checkpoint_save(path, ps->views, ps->roles, ps->nviews, 1, NULL);
    if (e)
        return e;
    train_save_model_spec(c);
    train_driver_say(c, "finished: model in %s/model (%llu stale gradient(s) dropped)",
               c->job.result_dir, (unsigned long long)ps->stale);
    return NULL;
}

/* At an epoch boundary (everything handed out came back): record the
 * epoch, validate and checkpoint as asked. Returns 1 when training
 * finished, 0 to go on, -1 with *err. */
static int ps_epoch_boundary(edt_coordinator *c, param_server *ps, loom_error **err)
{
    size_t inflight = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        inflight += c->m.slots[i].ninflight;
    if (sampler_remaining(&c->pr.smp) != 0 || inflight != 0 ||
        c->pr.epoch >= c->job.settings.epochs)
        return 0;
    train_end_epoch(c);
    if (c->pr.pending_validate && c->m.ntest && (*err = ps_validate(c, ps)))
        return -1;
    c->pr.pending_validate = 0;
    if (c->pr.pending_checkpoint)
        ps_checkpoint(c, ps);
    c->pr.pending_checkpoint = 0;
    if (c->pr.epoch < c->job.settings.epochs)
        return 0;
    *err = ps_finish(c, ps);
    return *err ? -1 : 1;
}

/* A gradient of n samples counts n / effective batch size of a step: the
 * job's learning rate means per effective batch, as in synchronous
 * training, whose step averages the workers' batches. Applied as it is,
 * with 2 workers each sample would move the weights twice as far as there
 * (and the staleness adds momentum of its own): ASYNC trained 2 points
 * worse after 3 epochs of the MLP. */
static void scale_gradient(edt_coordinator *c, param_server *ps, size_t n)
{
    float factor = (float)((double)n / c->job.settings.effective_batch_size);
    float *g = ps->grads.data;
    size_t count = (size_t)(ps->grads.nbytes / sizeof(float));
    if (factor == 1.0f)
        return;
    for (size_t k = 0; k < count; k++)
        g[k] *= factor;
}

/* A worker's gradient: applied unless too stale; its samples count then,
 * or go back to the pool. Returns an error only when the server failed. */
static loom_error *ps_take_gradient(edt_coordinator *c, param_server *ps, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    int64_t deadline = time_mono_ms() + c->job.settings.step_timeout_ms;
    msg reply;
    loom_error *e = train_msg_recv(s->fd, deadline, &reply);
    if (!e && reply.kind == MSG_HEARTBEAT) { /* the gradient comes later */
        train_msg_free(&reply);
        train_heard(c, i);
        return NULL;
    }
    if (!e && reply.kind != MSG_REPLY)
        e = loom_err(LOOM_E_INVALID, "a %s message where a reply was due", train_msg_kind_name(reply.kind));
    if (!e)
        e = train_msg_recv_blob(s->fd, &reply, ps->grads.data, (size_t)ps->grads.nbytes, deadline);
    if (e) {
        char why[512];
        if (loom_err_code(e) == LOOM_E_UNAVAILABLE)
            snprintf(why, sizeof why, "its control connection closed (the process died)");
        else
            snprintf(why, sizeof why, "its reply was not read: %s", loom_err_message(e));
        loom_err_free(e);
        train_msg_free(&reply);
        train_drop_slot(c, i, why);
        return NULL;
    }
    s->awaiting = 0;
    train_heard(c, i);
    int ok = reply.u.reply.ok;
    if (ok && ps->version - s->version > c->job.settings.max_staleness) {
        ps->stale++;
        ok = 0;
    }
    if (ok) {
        scale_gradient(c, ps, s->ninflight);
        loom_step_info si = {.struct_size = sizeof si, .epoch = c->pr.epoch,
                             .epochs = c->job.settings.epochs, .iteration = c->pr.iteration,
                             .steps_per_epoch = c->pr.steps_per_epoch};
        if ((e = ps->f->apply(ps->inst, &si))) {
            train_msg_free(&reply);
            return loom_err_wrap(e, "parameter server");
        }
        ps->version++;
        c->pr.iteration++;
        train_note_progress(c);
        sampler_commit(&c->pr.smp, s->inflight, s->ninflight);
        train_add_metrics(c, reply.u.reply.train, s->ninflight);
    } else {
        sampler_give_back(&c->pr.smp, s->inflight, s->ninflight);
    }
    s->ninflight = 0;
    train_msg_free(&reply);
    return NULL;
}

/* Idle members get work; gradients that arrived are taken. */
static loom_error *ps_exchange(edt_coordinator *c, param_server *ps)
{
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER && c->m.slots[i].ninflight == 0 &&
            sampler_remaining(&c->pr.smp) > 0)
            ps_assign(c, ps, i);
    struct pollfd fds[MAX_SLOTS];
    uint32_t who[MAX_SLOTS], n = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER && c->m.slots[i].ninflight) {
            fds[n] = (struct pollfd){.fd = c->m.slots[i].fd, .events = POLLIN};
            who[n++] = i;
        }
    if (n == 0) {
        train_accept_hellos(c, 50);
        return NULL;
    }
    if (poll(fds, n, 50) <= 0)
        return NULL;
    for (uint32_t k = 0; k < n; k++) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        loom_error *e = ps_take_gradient(c, ps, who[k]);
        if (e)
            return e;
    }
    train_update_snapshot(c, 0);
    return NULL;
}

edt_end train_run_async(edt_coordinator *c, loom_error **err)
{
    param_server ps;
    memset(&ps, 0, sizeof ps);
    edt_end end = EDT_END_ERROR;
    if ((*err = ps_open(c, &ps)))
        goto out;
    train_driver_say(c, "ASYNC: a parameter server in the host; gradients staler than %u updates are dropped",
               c->job.settings.max_staleness);
    for (;;) {
        if (train_stop_asked(c)) {
            end = EDT_END_KILLED;
            *err = loom_err(LOOM_E_UNAVAILABLE, "stopped by request");
            break;
        }
        train_reap(c);
        train_keep_alive(c);
        train_accept_hellos(c, 0);
        if ((*err = async_membership(c)))
            break;
        int r = ps_epoch_boundary(c, &ps, err);
        if (r != 0) {
            end = r > 0 ? EDT_END_FINISHED : EDT_END_ERROR;
            break;
        }
        if ((*err = ps_exchange(c, &ps)))
            break;
    }
out:
    if (ps.inst)
        ps.f->destroy(ps.inst);
    free(ps.views);
    free(ps.roles);
    return end;
}
