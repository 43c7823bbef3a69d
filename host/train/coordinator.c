/* train/coordinator.c - see coordinator.h: the public calls and the
 * coordinator's thread, which prepares the job (shared memory, control
 * socket, loggers, the resume point), starts the first workers, hands over
 * to the synchronous rounds (sync_round.c) or the parameter server
 * (param_server.c), and ends the job. See coordinator_internal.h for how
 * the work is divided. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/coordinator_internal.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/job_sandbox.h"
#include "util/user_tree.h"

void train_driver_say(edt_coordinator *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (c->driver_out) {
        fprintf(c->driver_out, "%s\n", line);
        fflush(c->driver_out);
    }
    log_info("exec %s: %s", c->job.exec_id, line);
}

static void set_state(edt_coordinator *c, exec_state state, const char *message)
{
    if (c->job.on_state)
        c->job.on_state(c->job.ctx, c->job.exec_id, state, message);
}

uint32_t train_current_target(edt_coordinator *c)
{
    pthread_mutex_lock(&c->ctl.lock);
    uint32_t t = c->ctl.target;
    pthread_mutex_unlock(&c->ctl.lock);
    return t;
}

int train_stop_asked(edt_coordinator *c)
{
    pthread_mutex_lock(&c->ctl.lock);
    int stop = c->ctl.stop_requested;
    pthread_mutex_unlock(&c->ctl.lock);
    return stop;
}

uint32_t train_current_grant(edt_coordinator *c, int32_t *granted, uint32_t *ngranted)
{
    pthread_mutex_lock(&c->ctl.lock);
    uint32_t t = c->ctl.target;
    *ngranted = c->ctl.ngranted;
    memcpy(granted, c->ctl.granted, sizeof(int32_t) * c->ctl.ngranted);
    pthread_mutex_unlock(&c->ctl.lock);
    return t;
}

void train_publish_held(edt_coordinator *c)
{
    int32_t held[MAX_SLOTS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].device >= 0 && c->m.slots[i].pid > 0)
            held[n++] = c->m.slots[i].device;
    pthread_mutex_lock(&c->ctl.lock);
    memcpy(c->ctl.held, held, sizeof(int32_t) * n);
    c->ctl.nheld = n;
    pthread_mutex_unlock(&c->ctl.lock);
}

uint32_t edt_devices_held(edt_coordinator *c, int32_t *out, uint32_t cap)
{
    pthread_mutex_lock(&c->ctl.lock);
    uint32_t n = c->ctl.nheld < cap ? c->ctl.nheld : cap;
    memcpy(out, c->ctl.held, sizeof(int32_t) * n);
    pthread_mutex_unlock(&c->ctl.lock);
    return n;
}

/* ---- the thread --------------------------------------------------------- */

/* Workers load loggers by path: the names resolved through the registry. */
static void resolve_worker_loggers(edt_coordinator *c)
{
    edt_job *j = &c->job;
    cJSON *list = cJSON_Parse(j->settings.loggers_json ? j->settings.loggers_json : "[]");
    cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        registry_entry e;
        if (cJSON_IsString(name) && j->reg &&
            registry_acquire(j->reg, LOOM_KIND_LOGGER, name->valuestring, &e) == 0) {
            registry_release(j->reg, LOOM_KIND_LOGGER, name->valuestring);
            cJSON_DeleteItemFromObjectCaseSensitive(item, "path");
            cJSON_AddStringToObject(item, "path", e.path);
        }
    }
    char *text = cJSON_PrintUnformatted(list);
    snprintf(c->loggers_for_workers, sizeof c->loggers_for_workers, "%s", text ? text : "[]");
    free(text);
    cJSON_Delete(list);
}

static loom_error *prepare(edt_coordinator *c)
{
    edt_job *j = &c->job;
    c->m.nslots = j->settings.engines;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        c->m.slots[i].fd = -1;
    /* Names unique per host process and exec. */
    snprintf(c->m.shm_name, sizeof c->m.shm_name, "/loom-%d-%.60s", (int)getpid(), j->exec_id);
    snprintf(c->m.ctl_name, sizeof c->m.ctl_name, "loom-edt-%d-%.60s", (int)getpid(), j->exec_id);
    for (char *p = c->m.shm_name + 1; *p; p++)
        if (*p == '/')
            *p = '_';
    /* Each worker's gradient buffer lives in its slot's region (reduced in
     * place); the regions are sparse, so the bound costs address space
     * only. A larger buffer stays in the adapter and goes through staging. */
    comm_shm_config cfg = {.max_ranks = c->m.nslots, .max_buffer_bytes = (uint64_t)1 << 34,
                           .gradient_region_bytes = EDT_GRADIENT_REGION_BYTES};
    shm_unlink(c->m.shm_name);
    train_link link;
    loom_error *e = train_link_parse(j->worker_link, &link);
    if (!e)
        e = comm_shm_create(c->m.shm_name, &cfg, &c->m.seg);
    /* The exec's secret, which its workers prove they hold on either link
     * (handed to them in their environment, never on the wire). */
    if (!e)
        e = train_secret_new(c->m.secret);
    c->m.tcp = link.tcp;
    c->m.tls = link.tls;
    c->m.net = j->device_node != NULL;
    /* Workers on other nodes must reach the coordinator at an address of
     * this machine's they can route to, which only the site knows. */
    if (!e && c->m.net && (!link.tcp || train_link_on_any_address(&link)))
        e = loom_err(LOOM_E_UNSUPPORTED,
                     "exec %s runs on Slurm nodes, whose workers reach this host over TCP: start "
                     "loom serve with --worker-link tcp:ADDR or tls:ADDR, ADDR this host's "
                     "address on the nodes' network", j->exec_id);
    if (!e && link.tcp)
        e = train_msg_listen_tcp(&link, &c->m.listen_fd, c->m.ctl_name, sizeof c->m.ctl_name);
    else if (!e)
        e = train_msg_listen(c->m.ctl_name, &c->m.listen_fd);
    if (!e)
        e = train_beats_start(c);
    if (e)
        return e;
    /* The Unix socket is abstract (any local process may connect): only
     * the uid the workers run as is heard (members.c's
     * train_accept_hellos). */
    gid_t gid;
    loom_error *no_account = job_sandbox_account(j->user, j->user_id, &c->m.worker_uid, &gid);
    if (no_account)
        c->m.worker_uid = geteuid(); /* no accounts: the host's own user */
    loom_err_free(no_account);
    /* The exec folder is the job's: made and opened beneath it, never by
     * path (util/user_tree). The model folder is made before the workers
     * start, so a worker under its user's own uid is given it too (where it
     * saves the final model). */
    int out = -1;
    e = utree_mkdirs_in(j->result_dir, "log/driver", 0755);
    if (!e)
        e = utree_mkdirs_in(j->result_dir, "checkpoint", 0755);
    if (!e)
        e = utree_mkdirs_in(j->result_dir, "model", 0755);
    if (!e)
        e = utree_open_append_in(j->result_dir, "log/driver/stdout", 0644, &out);
    if (e)
        return e;
    c->driver_out = fdopen(out, "a");
    if (!c->driver_out)
        close(out);
    if (c->m.tcp)
        train_driver_say(c, "workers reach the coordinator over %s at %s",
                         c->m.tls ? "TLS (TLS 1.3 keyed by the exec's secret)" : "TCP",
                         c->m.ctl_name + 4);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log/driver", j->result_dir);
    c->driver_loggers =
        logger_set_open_owned(j->user, j->user_id, j->reg,
                              j->settings.loggers_json, LOOM_LOGGER_DRIVER, 0, j->exec_id, path,
                              j->result_dir);
    resolve_worker_loggers(c);
    c->pr.epochs_done = cJSON_CreateArray();
    c->pr.val_list = cJSON_CreateArray();
    return NULL;
}

/* Resuming: the newest checkpoint that reads back whole. */
static void find_resume_point(edt_coordinator *c)
{
    char dir[PATH_MAX + 16], skipped[2048];
    snprintf(dir, sizeof dir, "%s/checkpoint", c->job.result_dir);
    int epoch;
    cJSON *meta = NULL;
    if (checkpoint_find_latest(dir, c->load_path, sizeof c->load_path, &epoch, &meta, skipped,
                               sizeof skipped) != 0) {
        c->load_path[0] = 0;
        train_driver_say(c, "no usable checkpoint%s%s: starting from the beginning",
                   skipped[0] ? "; refused: " : "", skipped);
        return;
    }
    if (skipped[0])
        train_driver_say(c, "refused: %s", skipped);
    c->pr.epoch = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "epoch"));
    c->pr.iteration = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "iteration"));
    cJSON_Delete(meta);
    /* The val_dict_list so far, so the file stays whole. */
    char *text = NULL;
    loom_err_free(utree_read_file_in(c->job.result_dir, "val_dict_list.json", 16u << 20, &text,
                                     NULL));
    cJSON *old = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (cJSON_IsArray(old)) {
        cJSON_Delete(c->pr.val_list);
        c->pr.val_list = old;
        train_note_val_list_file(c);
    } else {
        cJSON_Delete(old);
    }
    train_driver_say(c, "resuming from %s (epoch %u done)", c->load_path, c->pr.epoch);
}

/* Everything before the first round: the job's files and sockets, the
 * resume point, the first workers and their data set, the sampler. */
static loom_error *begin_training(edt_coordinator *c)
{
    edt_job *j = &c->job;
    loom_error *e = prepare(c);
    if (e)
        return e;
    if (j->resume)
        find_resume_point(c);
    train_driver_say(c, "training: %u epoch(s), batch %u per worker, effective batch %u, up to %u worker(s), "
                  "starting %u", j->settings.epochs, j->settings.batch_size,
               j->settings.effective_batch_size, j->settings.engines, train_current_target(c));
    int32_t granted[MAX_SLOTS];
    uint32_t ngranted;
    uint32_t target = train_current_grant(c, granted, &ngranted);
    train_start_workers(c, target, granted, ngranted);
    train_update_snapshot(c, 0);
    if ((e = train_wait_for_first_workers(c)))
        return e;
    if (j->settings.batch_size > c->m.ntrain)
        return loom_err(LOOM_E_INVALID, "the batch size %u is larger than the data set (%llu samples)",
                        j->settings.batch_size, (unsigned long long)c->m.ntrain);
    if (sampler_init(&c->pr.smp, c->m.ntrain, j->settings.seed) != 0)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    c->pr.sampler_ready = 1;
    sampler_begin_epoch(&c->pr.smp, c->pr.epoch);
    c->pr.steps_per_epoch = (c->m.ntrain + j->settings.effective_batch_size - 1) /
                            j->settings.effective_batch_size;
    c->pr.epoch_started_ms = time_mono_ms();
    if ((e = recovery_begin(c)))
        return e;
    set_state(c, EXEC_STATE_RUNNING, NULL);
    loom_train_info info = {.struct_size = sizeof info, .epochs = j->settings.epochs,
                            .workers = train_current_target(c), .batch_size = j->settings.batch_size,
                            .effective_batch_size = j->settings.effective_batch_size,
                            .exec_id = j->exec_id};
    logger_set_begin(c->driver_loggers, &info);
    return NULL;
}

static void *run(void *arg)
{
    static const exec_state state[] = {[EDT_END_ERROR] = EXEC_STATE_ERROR,
                                       [EDT_END_KILLED] = EXEC_STATE_KILLED,
                                       [EDT_END_FINISHED] = EXEC_STATE_FINISHED};
    static const int32_t logger_status[] = {[EDT_END_ERROR] = LOOM_TRAIN_FAILED,
                                            [EDT_END_KILLED] = LOOM_TRAIN_KILLED,
                                            [EDT_END_FINISHED] = LOOM_TRAIN_FINISHED};
    edt_coordinator *c = arg;
    edt_end end = EDT_END_ERROR;
    loom_error *e = begin_training(c);
    if (!e)
        end = c->job.settings.async ? train_run_async(c, &e) : train_run_sync(c, &e);
    c->pr.finished = end == EDT_END_FINISHED;
    train_update_snapshot(c, 1);
    char err[1024] = "";
    if (end != EDT_END_FINISHED)
        loom_err_take(e, err, sizeof err);
    else
        loom_err_free(e);
    train_finish_workers(c, end == EDT_END_FINISHED ? "finished" : "the job ended");
    recovery_end(c);
    logger_set_end(c->driver_loggers, logger_status[end], err);
    if (err[0])
        train_driver_say(c, "%s: %s", exec_state_text(state[end]), err);
    train_update_snapshot(c, 1);
    set_state(c, state[end], err[0] ? err : NULL);
    pthread_mutex_lock(&c->ctl.lock);
    c->ctl.done = 1;
    pthread_mutex_unlock(&c->ctl.lock);
    return NULL;
}

/* ---- the public side ---------------------------------------------------- */

loom_error *edt_start(edt_job *job, edt_coordinator **out)
{
    *out = NULL;
    edt_coordinator *c = calloc(1, sizeof *c);
    if (!c)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    c->job = *job;
    job->settings.loggers_json = NULL; /* taken over */
    size_t n = 0;
    while (job->msd_env && job->msd_env[n])
        n++;
    c->job.msd_env = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; c->job.msd_env && i < n; i++)
        c->job.msd_env[i] = strdup(job->msd_env[i]);
    c->m.listen_fd = -1;
    for (uint32_t i = 0; i < MAX_SLOTS; i++)
        c->m.slots[i].device = -1;
    edt_control *ctl = &c->ctl;
    ctl->resize_latency_ms = -1;
    ctl->target = job->initial_workers ? job->initial_workers : job->settings.engines;
    if (job->ndevices) {
        ctl->target = job->ndevices;
        ctl->ngranted = job->ndevices < MAX_SLOTS ? job->ndevices : MAX_SLOTS;
        memcpy(ctl->granted, job->devices, sizeof(int32_t) * ctl->ngranted);
    }
    if (ctl->target > job->settings.engines)
        ctl->target = job->settings.engines;
    pthread_mutex_init(&ctl->lock, NULL);
    pthread_mutex_init(&c->beats.lock, NULL);
    train_update_snapshot(c, 0);
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        edt_free(c);
        return loom_err(LOOM_E_UNAVAILABLE, "cannot start the coordinator thread");
    }
    c->thread_started = 1;
    *out = c;
    return NULL;
}

loom_error *edt_set_devices(edt_coordinator *c, const int32_t *devices, uint32_t count)
{
    if (count < 1 || count > c->job.settings.engines)
        return loom_err(LOOM_E_INVALID, "devices: expected 1 to %u (the job's engines), got %u",
                        c->job.settings.engines, count);
    for (uint32_t k = 0; k < count; k++)
        if (devices[k] < 0 || train_device_in(devices[k], devices, k))
            return loom_err(LOOM_E_INVALID, "devices: device %d is negative or named twice",
                            devices[k]);
    edt_control *ctl = &c->ctl;
    pthread_mutex_lock(&ctl->lock);
    if (count != ctl->target) {
        ctl->resize_requested_ms = time_mono_ms();
        ctl->measuring_resize = count > ctl->target ? 1 : 0;
        ctl->target = count;
    }
    ctl->ngranted = count;
    memcpy(ctl->granted, devices, sizeof(int32_t) * count);
    pthread_mutex_unlock(&ctl->lock);
    return NULL;
}

void edt_stop(edt_coordinator *c)
{
    pthread_mutex_lock(&c->ctl.lock);
    c->ctl.stop_requested = 1;
    pthread_mutex_unlock(&c->ctl.lock);
}

int edt_done(edt_coordinator *c)
{
    pthread_mutex_lock(&c->ctl.lock);
    int d = c->ctl.done;
    pthread_mutex_unlock(&c->ctl.lock);
    return d;
}

cJSON *edt_describe(edt_coordinator *c)
{
    pthread_mutex_lock(&c->ctl.lock);
    cJSON *o = cJSON_Duplicate(c->ctl.snapshot, 1);
    pthread_mutex_unlock(&c->ctl.lock);
    return o;
}

void edt_free(edt_coordinator *c)
{
    if (!c)
        return;
    if (c->thread_started)
        pthread_join(c->thread, NULL);
    train_beats_stop(c);
    pthread_mutex_destroy(&c->beats.lock);
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        if (c->m.slots[i].fd >= 0)
            close(c->m.slots[i].fd);
        free(c->m.slots[i].inflight);
        train_msg_free(&c->m.slots[i].reply);
    }
    if (c->m.listen_fd >= 0)
        close(c->m.listen_fd);
    if (c->m.seg)
        comm_shm_destroy(c->m.seg);
    if (c->pr.sampler_ready)
        sampler_free(&c->pr.smp);
    sampler_free(&c->rc.smp);
    logger_set_close(c->driver_loggers);
    if (c->driver_out)
        fclose(c->driver_out);
    cJSON_Delete(c->ctl.snapshot);
    cJSON_Delete(c->pr.epochs_done);
    cJSON_Delete(c->pr.val_list);
    cJSON_Delete(c->pr.last_test);
    cJSON_Delete(c->job_metrics_doc);
    for (char **e = c->job.msd_env; e && *e; e++)
        free(*e);
    free(c->job.msd_env);
    edt_settings_free(&c->job.settings);
    sodium_memzero(c->m.secret, sizeof c->m.secret);
    pthread_mutex_destroy(&c->ctl.lock);
    free(c);
}

int edt_sweep_stale_segments(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid;
        /* Our names: "loom-<host pid>-<exec id>" (see prepare()). */
        if (sscanf(de->d_name, "loom-%d-", &pid) != 1 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char name[300];
        snprintf(name, sizeof name, "/%s", de->d_name);
        if (shm_unlink(name) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
