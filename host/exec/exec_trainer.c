/* exec/exec_trainer.c - execs of trainer-style frameworks: the training
 * spec and settings checked at submission, the elastic trainer started on
 * the devices the scheduler grants, and its end recorded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "train/checkpoint.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/user_tree.h"


/* The coordinator reports its state changes here, from its own thread. While
 * the host shuts down they are not recorded: the exec stays RUNNING in the
 * store and resumes from its last checkpoint when the host starts again. */
static void trainer_state_changed(void *ctx, const char *exec_id, exec_state state,
                                  const char *message)
{
    exec_service *es = ctx;
    pthread_mutex_lock(&es->lock);
    running_exec *r = es->stopping ? NULL : exec_find_running(es, exec_id);
    if (r && exec_state_is_final(state) && r->stop_requested && r->stop_error) {
        /* The host stopped it for a reason of its own (a limit). */
        state = EXEC_STATE_ERROR;
        message = r->stop_reason;
    } else if (r && r->stop_requested && state == EXEC_STATE_ERROR) {
        /* Stopped before its workers joined: the wait for them ends in an
         * error, but the stop is why. */
        state = EXEC_STATE_KILLED;
        message = "stopped by request";
    }
    if (r && exec_state_is_final(state)) {
        r->final_state = state;
        free(r->final_message);
        r->final_message = message ? strdup(message) : NULL;
    } else if (r) {
        exec_set_state(es, &r->rec, state, message);
    }
    pthread_mutex_unlock(&es->lock);
}

/* The model directory's JSON training spec. */
static loom_error *read_spec(const registry_entry *fw, const store_exec *rec, const dlicmd *d,
                             char *spec_path, size_t len, cJSON **out)
{
    const char *spec_name = d->model_main ? d->model_main : EDT_SPEC_DEFAULT;
    snprintf(spec_path, len, "%s/_submitted_code/%s", rec->result_dir, spec_name);
    /* On a restart the exec folder is the job's: read beneath it. */
    char rel[PATH_MAX], *text = NULL;
    snprintf(rel, sizeof rel, "_submitted_code/%s", spec_name);
    loom_err_free(utree_read_file_in(rec->result_dir, rel, 16u << 20, &text, NULL));
    if (!text)
        return loom_err(LOOM_E_INVALID,
                        "%s: the model directory has no training spec \"%s\" (name another with "
                        "--model-main)",
                        fw->name, spec_name);
    const char *end = NULL;
    cJSON *spec = cJSON_ParseWithOpts(text, &end, 1);
    if (!cJSON_IsObject(spec)) {
        loom_error *e = loom_err(LOOM_E_INVALID, "%s: malformed JSON near byte %ld (expected an object)",
                                 spec_name, spec ? 0L : (long)(end ? end - text : 0));
        free(text);
        cJSON_Delete(spec);
        return e;
    }
    free(text);
    *out = spec;
    return NULL;
}

/* A script's steps are PyTorch's, tens of ms each: rounds of this many ms
 * (EDT_ROUND_MS's default for them) keep the coordinator's round trip off
 * most steps, at the cost of a resize waiting up to one such round. */
#define PYSCRIPT_ROUND_MS 150

static int msd_env_sets(const dlicmd *d, const char *key)
{
    size_t n = strlen(key);
    for (int i = 0; i < d->msd_env_count; i++)
        if (!strncmp(d->msd_env[i], key, n) && d->msd_env[i][n] == '=')
            return 1;
    return 0;
}


/* edt_job.device_node: the Slurm node of a device the scheduler granted. */
static bool trainer_device_node(void *ctx, int32_t device, char *node, size_t len)
{
    exec_service *es = ctx;
    return sched_service_device_node(es->sched, device, node, len);
}

/* edt_job.node_lost: nothing goes to that node for a while. */
static void trainer_node_lost(void *ctx, const char *node, const char *why)
{
    exec_service *es = ctx;
    sched_service_keep_node_out(es->sched, node, why);
}

/* edt_job.device_released: the supervisor hands the device over at once
 * (a shrink's device reaches the job waiting for it without waiting out the
 * supervision interval). */
static void trainer_device_released(void *ctx)
{
    exec_wake((exec_service *)ctx);
}

loom_error *trainer_prepare(exec_service *es, const store_exec *rec, const registry_entry *fw,
                            const dlicmd *d, const char *data_dir, edt_job *job)
{
    memset(job, 0, sizeof *job);
    int script = pyscript_is_script(d->model_main);
    cJSON *spec = NULL;
    loom_error *e = script ? pyscript_spec(fw, rec, d, job->spec_path, sizeof job->spec_path, &spec)
                           : read_spec(fw, rec, d, job->spec_path, sizeof job->spec_path, &spec);
    if (!e && script && d->sync_mode_async) {
        cJSON_Delete(spec);
        e = loom_err(LOOM_E_INVALID, "%s: --syncMode ASYNC runs a copy of the model in the host's "
                     "parameter server, and a script's Python runs only in its sandboxed workers: "
                     "use SYNC", fw->name);
    }
    if (e)
        return e;
    /* A script's arguments are its own, not the trainer's flags. */
    e = edt_settings_resolve(spec, d->num_worker_given ? d->num_worker : 0, script ? NULL : d->args,
                             script ? 0 : d->arg_count, d->msd_env, d->msd_env_count,
                             &job->settings);
    cJSON_Delete(spec);
    if (e)
        return loom_err_recode(e, LOOM_E_INVALID);
    if (script && !msd_env_sets(d, "EDT_ROUND_MS"))
        job->settings.round_ms = PYSCRIPT_ROUND_MS;
    job->settings.async = d->sync_mode_async;
    /* ASYNC keeps the model in a parameter server in the host, so it takes
     * loom's own adapters only: a user's adapter never runs here. */
    if (job->settings.async && !fw->factory)
        return loom_err(LOOM_E_INVALID,
                        "--syncMode ASYNC: framework %s is a user's plugin, and the parameter "
                        "server runs in the host, which loads only loom's built-in adapters "
                        "(use SYNC, the default, or a built-in adapter such as native)",
                        fw->name);
    job->framework = fw->factory;
    /* Without loggers named, the built-in jsonl one writes WMLA's
     * evaluation-metrics.txt for the driver and every worker. */
    registry_entry jsonl;
    if (!strcmp(job->settings.loggers_json, "[]") &&
        registry_acquire(es->reg, LOOM_KIND_LOGGER, "jsonl", &jsonl) == 0) {
        registry_release(es->reg, LOOM_KIND_LOGGER, "jsonl");
        free(job->settings.loggers_json);
        job->settings.loggers_json = strdup("[{\"name\": \"jsonl\", \"role\": \"both\"}]");
    }
    snprintf(job->exec_id, sizeof job->exec_id, "%s", rec->id);
    snprintf(job->user, sizeof job->user, "%s", rec->user);
    job->user_id = rec->user_id;
    snprintf(job->result_dir, sizeof job->result_dir, "%s", rec->result_dir);
    snprintf(job->code_dir, sizeof job->code_dir, "%s/_submitted_code", rec->result_dir);
    snprintf(job->data_dir, sizeof job->data_dir, "%s", data_dir);
    snprintf(job->framework_path, sizeof job->framework_path, "%s", fw->path);
    snprintf(job->framework_name, sizeof job->framework_name, "%s", fw->name);
    fs_self_exe(job->loom_binary, sizeof job->loom_binary);
    job->msd_env = pyscript_job_env(
        strings_copy((const char *const *)d->msd_env, (uint32_t)d->msd_env_count));
    job->reg = es->reg;
    /* loom serve --worker-link (validated there); unset: unix. */
    const char *link = getenv("LOOM_WORKER_LINK");
    snprintf(job->worker_link, sizeof job->worker_link, "%s", link ? link : "");
    pthread_mutex_lock(&es->lock);
    job->checkpoints_keep = es->limits.checkpoints_keep;
    pthread_mutex_unlock(&es->lock);
    job->on_state = trainer_state_changed;
    job->device_released = trainer_device_released;
    job->ctx = es;
    /* On Slurm every device is a node's: workers start there. */
    if (sched_service_on_slurm(es->sched)) {
        job->device_node = trainer_device_node;
        job->node_lost = trainer_node_lost;
    }
    return NULL;
}

loom_error *trainer_continue_from(exec_service *es, const store_exec *rec, const char *from,
                                  edt_job *job)
{
    store_exec src;
    pthread_mutex_lock(&es->lock);
    loom_error *e = store_exec_get(es->st, from, &src);
    pthread_mutex_unlock(&es->lock);
    if (e || src.user_id != rec->user_id) {
        loom_err_free(e);
        return loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\" to continue from", from);
    }
    char dir[PATH_MAX + 16], found[PATH_MAX], to[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s/checkpoint", src.result_dir);
    int epoch;
    if (checkpoint_find_latest(dir, found, sizeof found, &epoch, NULL, NULL, 0) != 0)
        return NULL; /* nothing saved: from scratch */
    /* Both exec folders are the user's: copied beneath them, following no
     * link (util/user_tree). */
    snprintf(to, sizeof to, "checkpoint/epoch-%d.safetensors", epoch);
    e = utree_mkdirs_in(rec->result_dir, "checkpoint", 0755);
    if (!e)
        e = utree_copy_file_in(src.result_dir, to, rec->result_dir, to, 0644);
    if (e)
        return loom_err_wrap(e, "cannot copy the checkpoint of exec %s", from);
    /* Its validations up to that epoch: the job appends the next ones. */
    char *text = NULL;
    loom_err_free(utree_read_file_in(src.result_dir, "val_dict_list.json", 16u << 20, &text,
                                     NULL));
    cJSON *list = text ? cJSON_Parse(text) : NULL, *kept = cJSON_CreateArray();
    free(text);
    for (cJSON *entry = cJSON_IsArray(list) ? list->child : NULL; entry && kept; entry = entry->next)
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(entry, "step")) <= epoch)
            cJSON_AddItemToArray(kept, cJSON_Duplicate(entry, 1));
    cJSON_Delete(list);
    text = kept ? cJSON_PrintUnformatted(kept) : NULL;
    cJSON_Delete(kept);
    e = text ? utree_write_file_in(rec->result_dir, "val_dict_list.json", text, strlen(text), 0644)
             : loom_err(LOOM_E_INTERNAL, "out of memory");
    free(text);
    if (e)
        return e;
    job->resume = 1;
    return NULL;
}

loom_error *trainer_start(exec_service *es, running_exec *r, const int32_t *devices, int count,
                          int32_t kind)
{
    /* The exec's limits, shown by exec view; each worker's cgroup gets the
     * process limit and its part of the memory (one slot's share, or the
     * exec's --job-max-memory over its most workers), and no file may grow
     * past the disk limit, which the supervisor measures as for launch
     * execs (exec_check_disk). */
    exec_job_limits one;
    uint32_t most = r->job->settings.engines ? r->job->settings.engines : 1;
    exec_job_limits_for(es, &r->rec, count, &r->limits);
    exec_job_limits_for(es, &r->rec, 1, &one);
    r->job->worker_max_procs = r->limits.max_procs;
    r->job->worker_max_memory_bytes =
        r->limits.memory_is_share ? one.max_memory_bytes : r->limits.max_memory_bytes / most;
    r->job->worker_max_file_bytes = r->limits.max_disk_bytes;
    r->job->initial_workers = (uint32_t)count;
    r->job->device_kind = kind;
    r->job->ndevices = count > 0 && count <= EDT_MAX_WORKERS ? (uint32_t)count : 0;
    memcpy(r->job->devices, devices, sizeof(int32_t) * r->job->ndevices);
    loom_error *e = edt_start(r->job, &r->edt);
    strings_free(r->job->msd_env); /* edt_start copied it */
    edt_settings_free(&r->job->settings);
    free(r->job);
    r->job = NULL;
    return e;
}

void trainer_ended(exec_service *es, running_exec *r)
{
    cJSON *summary = edt_describe(r->edt);
    char *text = summary ? cJSON_PrintUnformatted(summary) : NULL;
    loom_error *e = text ? utree_write_file_in(r->rec.result_dir, TRAINER_SUMMARY, text,
                                               strlen(text), 0644)
                         : NULL;
    if (e)
        log_warn("exec %s: cannot keep the training summary: %s", r->rec.id,
                 loom_err_message(e));
    loom_err_free(e);
    free(text);
    cJSON_Delete(summary);
    edt_free(r->edt);
    r->edt = NULL;
    registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
    if (exec_state_is_final(r->final_state))
        exec_set_state(es, &r->rec, r->final_state, r->final_message);
}
