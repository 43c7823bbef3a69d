/* exec/exec.c - see exec.h. One lock guards the running list and the store.
 * An exec is submitted (checked, stored), waits for devices (PENDING) until
 * the scheduler grants them, runs (launch-style processes, or the elastic
 * trainer that the scheduler also grows and shrinks), and ends. A
 * supervisor thread reaps processes, notices ended trainers and runs the
 * scheduler. */
#include "exec/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "sched/slurm_step.h"
#include "plugin/launch_remote.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/rendezvous_port.h"
#include "util/tarball.h"
#include "util/user_tree.h"

#define STOP_GRACE_MS 5000
#define SUPERVISE_INTERVAL_US 50000
#define MAX_DECISIONS 4096
#define MAX_DEVICES EXEC_MAX_DEVICES

void exec_set_state(exec_service *es, store_exec *rec, exec_state state, const char *message)
{
    rec->state = state;
    if (message)
        snprintf(rec->message, sizeof rec->message, "%s", message);
    if (state == EXEC_STATE_RUNNING && !rec->started_at)
        rec->started_at = time_now_ms();
    if (exec_state_is_final(state))
        rec->ended_at = time_now_ms();
    loom_error *e = store_exec_update(es->st, rec);
    if (e)
        log_error("exec %s: cannot record state %s: %s", rec->id, exec_state_text(state),
                  loom_err_message(e));
    loom_err_free(e);
    log_info("exec %s: %s%s%s", rec->id, exec_state_text(state), message ? ": " : "", message ? message : "");
}

running_exec *exec_find_running(exec_service *es, const char *id)
{
    for (running_exec *r = es->running; r; r = r->next)
        if (strcmp(r->rec.id, id) == 0)
            return r;
    return NULL;
}

void exec_free_running(running_exec *r)
{
    if (!r)
        return;
    launch_plan_free(&r->plan);
    strings_free(r->launch_in.args);
    strings_free(r->worker_nodes);
    free(r->launch_in.model_main);
    strings_free(r->msd_env);
    free(r->workers);
    proc_group_destroy(&r->group);
    free(r->final_message);
    if (r->job) {
        strings_free(r->job->msd_env);
        edt_settings_free(&r->job->settings);
        free(r->job);
    }
    free(r);
}

static void unlink_running(exec_service *es, running_exec *r)
{
    for (running_exec **pp = &es->running; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

/* Whether `owner` (EXEC_ADMIN: anyone) may see an exec of user `user_id`.
 * By id, not name: a user made again under a removed user's name is
 * someone else. */
int exec_visible(int64_t owner, int64_t user_id)
{
    return owner == EXEC_ADMIN || owner == user_id;
}

/* Finds an exec `owner` may see: a running one in *r, else its stored
 * record in *rec. Returns 0 when there is none (for that owner). Call with
 * es->lock. */
int exec_lookup(exec_service *es, int64_t owner, const char *id, running_exec **r,
                  store_exec *rec)
{
    *r = exec_find_running(es, id);
    if (*r)
        return exec_visible(owner, (*r)->rec.user_id);
    loom_error *e = store_exec_get(es->st, id, rec);
    int found = !e && exec_visible(owner, rec->user_id);
    loom_err_free(e);
    return found;
}

/* ---- scheduling --------------------------------------------------------- */

/* Starts a pending exec on the devices granted to it. Call with es->lock. */
static void start_granted_locked(exec_service *es, running_exec *r, const int32_t *index, int n,
                                 int32_t kind)
{
    char node[64];
    loom_error *err = NULL;
    /* (a launch-style exec is checked when its workers are placed) */
    if (r->job && sched_service_job_node(es->sched, r->rec.id, node, sizeof node))
        err = exec_nodes_need_shared_dir(es, r->rec.id, node);
    if (!err)
        err = r->job ? trainer_start(es, r, index, n, kind) : launch_start(es, r, index, n);
    r->pending = 0;
    if (err) {
        /* Ends at the next supervision with its reason. */
        exec_set_state(es, &r->rec, EXEC_STATE_ERROR, loom_err_message(err));
        loom_err_free(err);
        r->stop_requested = 1;
        return;
    }
    /* A trainer's workers still have to start and join: LAUNCHING until
     * the trainer reports RUNNING (one resumed after a host restart stays
     * RECOVERING until then). A launch's workers run already. */
    if (!r->edt)
        exec_set_state(es, &r->rec, EXEC_STATE_RUNNING, NULL);
    else if (r->rec.state != EXEC_STATE_RECOVERING)
        exec_set_state(es, &r->rec, EXEC_STATE_LAUNCHING, NULL);
    memcpy(r->given, index, sizeof(int32_t) * (size_t)n);
    r->ngiven = n;
}

/* Carries out the scheduler's books: a pending exec starts once every
 * device granted to it is free of the job it was taken from (a shrinking
 * trainer's worker leaves only at its next step boundary), and a running
 * trainer is given exactly the devices ready for it. Call with es->lock. */
static void carry_out_grants_locked(exec_service *es)
{
    static int32_t index[MAX_DEVICES];
    for (running_exec *r = es->running; r; r = r->next) {
        int32_t kind = LOOM_DEVICE_CPU;
        int total;
        int ready = sched_service_job_grant(es->sched, r->rec.id, index, MAX_DEVICES, &kind, &total);
        if (total <= 0 || r->stop_requested)
            continue;
        ready = ready > MAX_DEVICES ? MAX_DEVICES : ready;
        if (r->pending) {
            if (ready == total)
                start_granted_locked(es, r, index, ready, kind);
            continue;
        }
        if (!r->edt || ready <= 0 ||
            (ready == r->ngiven && !memcmp(index, r->given, sizeof(int32_t) * (size_t)ready)))
            continue;
        char why[512];
        if (loom_err_take(edt_set_devices(r->edt, index, (uint32_t)ready), why, sizeof why)) {
            log_warn("exec %s: resize to %d refused: %s", r->rec.id, ready, why);
            continue;
        }
        log_info("exec %s: now on %d device(s)", r->rec.id, ready);
        memcpy(r->given, index, sizeof(int32_t) * (size_t)ready);
        r->ngiven = ready;
    }
}

/* Runs the scheduler and carries out its decisions: pending execs start on
 * the devices granted, running trainers grow or shrink. Call with es->lock. */
void exec_schedule_locked(exec_service *es)
{
    static sched_action actions[MAX_DECISIONS];
    size_t n = sched_service_decide(es->sched, actions, MAX_DECISIONS);
    for (size_t i = 0; i < n && i < MAX_DECISIONS; i++)
        if (actions[i].old_count > 0 && actions[i].new_count != actions[i].old_count)
            log_info("exec %s: scheduler moves it from %d to %d device(s)", actions[i].job_id,
                     actions[i].old_count, actions[i].new_count);
    carry_out_grants_locked(es);
}

/* Trainers report which devices their processes are still on, so devices
 * taken from them are handed over once their workers have left. Call with
 * es->lock. */
static void collect_handbacks_locked(exec_service *es)
{
    int32_t held[MAX_DEVICES < 1024 ? MAX_DEVICES : 1024];
    for (running_exec *r = es->running; r; r = r->next)
        if (r->edt) {
            uint32_t n = edt_devices_held(r->edt, held, sizeof held / sizeof *held);
            sched_service_handed_back(es->sched, r->rec.id, held, (int)n);
        }
}

/* The nearest plan from `plan` up to the root whose cap is below `need`:
 * its path into out and its cap into *cap; false when there is none. */
static bool capping_plan(sched_service *ss, const char *plan, int need, char *out, size_t len,
                         int *cap)
{
    char path[256];
    snprintf(path, sizeof path, "%s", plan);
    for (;;) {
        sched_plan_view v;
        loom_error *e = sched_service_plan(ss, path, &v);
        if (!e && v.cap_devices > 0 && need > v.cap_devices) {
            snprintf(out, len, "%s", v.path);
            *cap = v.cap_devices;
            return true;
        }
        loom_err_free(e);
        char *slash = strrchr(path, '/');
        if (!slash || strcmp(path, "/") == 0)
            return false;
        slash[slash == path] = '\0'; /* "/p" goes up to "/" */
    }
}

/* A fixed exec the scheduler says can never start (`e`, LOOM_E_LIMIT),
 * explained in the submitter's words (the exec and the dlicmd flag), not
 * the scheduler's. Takes `e`. */
static loom_error *too_large(sched_service *ss, loom_error *e, const char *id, const char *plan,
                             int devices)
{
    size_t host_devices = sched_service_device_count(ss);
    char capped[256];
    int cap = 0;
    if ((size_t)devices > host_devices) {
        loom_err_free(e);
        return loom_err(LOOM_E_LIMIT,
                        "exec %s needs %d device(s) and the host has %zu: it could never start "
                        "(add --queue-if-too-large true to queue it until devices are added)",
                        id, devices, host_devices);
    }
    if (capping_plan(ss, plan, devices, capped, sizeof capped, &cap)) {
        loom_err_free(e);
        return loom_err(LOOM_E_LIMIT,
                        "exec %s needs %d device(s) and plan %s is capped at %d: it could never "
                        "start (add --queue-if-too-large true to queue it until the cap is raised)",
                        id, devices, capped, cap);
    }
    return e;
}

/* Hands an exec to the scheduler and to the running list, pending until
 * the scheduler grants its devices. Call with es->lock. */
loom_error *exec_plan_of(const exec_submission *sub, const dlicmd *d, char *plan, size_t len)
{
    int n = d->consumer ? snprintf(plan, len, "%s", d->consumer)
                        : snprintf(plan, len, "/%s", sub->user);
    if (n < 0 || (size_t)n >= len)
        return loom_err(LOOM_E_INVALID, "--consumer: a plan path is at most %zu characters",
                        len - 1);
    return NULL;
}

loom_error *exec_enqueue_locked(exec_service *es, running_exec *r, const dlicmd *d)
{
    char plan[256];
    exec_submission owner = {.user = r->rec.user};
    loom_error *bad = exec_plan_of(&owner, d, plan, sizeof plan);
    if (bad)
        return bad;
    sched_job_spec spec = {
        .id = r->rec.id,
        .plan = plan,
        .kind = SCHED_JOB_TRAINING,
        .elastic = r->elastic,
        .min_devices = 1,
        .max_devices = r->devices,
        .priority = d->priority,
        .wait_if_too_large = d->queue_if_too_large,
        /* Inside a shared plan, users are served fairly between them. */
        .user = r->rec.user,
        /* --workerDeviceType: GPUs or CPU slots where there are both */
        .pool = d->device_type == DEVICE_KIND_GPU ? SCHED_POOL_GPU : SCHED_POOL_CPU,
    };
    loom_error *e = sched_service_submit(es->sched, &spec);
    if (loom_err_code(e) == LOOM_E_LIMIT && !r->elastic)
        e = too_large(es->sched, e, r->rec.id, plan, r->devices);
    if (e)
        return e;
    r->pending = 1;
    r->next = es->running;
    es->running = r;
    return NULL;
}

/* ---- supervision -------------------------------------------------------- */

/* Why worker i, which ended with status `st` other than 0, failed: into
 * msg. A node that could not reach the exec's folder is kept out. */
static void describe_worker_failure(exec_service *es, running_exec *r, int i, int st, char *msg,
                                    size_t len)
{
    if (slurm_step_lost_shared_dir(st) && r->worker_nodes) {
        /* nothing more is placed there for a while */
        snprintf(msg, len, "worker %d: node %s cannot reach the exec's folder (the shared "
                 "folder is not mounted there); the node is kept out of the inventory for a "
                 "while", i, r->worker_nodes[i]);
        sched_service_keep_node_out(es->sched, r->worker_nodes[i],
                                    SLURM_STEP_NO_SHARED_DIR_REASON);
    } else if (WIFEXITED(st)) {
        snprintf(msg, len, "worker %d exited with status %d (its output: loom exec logs %s "
                 "--worker %d --stderr)", i, WEXITSTATUS(st), r->rec.id, i);
    } else if (WIFSIGNALED(st)) {
        char source[300];
        exec_limit_source(&r->limits, SCHED_LIMIT_DISK, source, sizeof source);
        snprintf(msg, len, "worker %d was killed by signal %d%s%s%s", i, WTERMSIG(st),
                 WTERMSIG(st) == SIGXFSZ ? ": a file reached the size limit (" : "",
                 WTERMSIG(st) == SIGXFSZ ? source : "", WTERMSIG(st) == SIGXFSZ ? ")" : "");
    }
}

static int worker_failed(const worker *w)
{
    return w->done && !(WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0);
}

/* A launch-style exec whose workers all ended. */
static void finish_launch(exec_service *es, running_exec *r)
{
    char msg[512] = "";
    exec_state state = EXEC_STATE_FINISHED;
    if (r->stop_requested) {
        state = r->stop_error ? EXEC_STATE_ERROR : EXEC_STATE_KILLED;
        snprintf(msg, sizeof msg, "%s", r->stop_reason[0] ? r->stop_reason : "stopped by request");
    } else {
        for (int i = 0; i < r->nworkers; i++)
            if (worker_failed(&r->workers[i])) {
                state = EXEC_STATE_ERROR;
                describe_worker_failure(es, r, i, r->workers[i].status, msg, sizeof msg);
                break;
            }
    }
    if (r->stop_requested || msg[0]) /* it failed or was stopped: did a limit do it? */
        exec_limit_note(r, msg, sizeof msg);
    r->rec.pgid = 0;
    exec_set_state(es, &r->rec, state, msg);
}

/* One worker failed while others still run: as torchrun and WMLA do, the
 * others are stopped (a DDP rank would otherwise wait for the failed one
 * until its own timeout, half an hour) and the exec ends in ERROR naming
 * the worker that failed. */
static void stop_after_worker_failed(exec_service *es, running_exec *r, int64_t now)
{
    for (int i = 0; i < r->nworkers; i++) {
        if (!worker_failed(&r->workers[i]))
            continue;
        char why[300] = "";
        describe_worker_failure(es, r, i, r->workers[i].status, why, sizeof why);
        snprintf(r->stop_reason, sizeof r->stop_reason, "%s; the other workers were stopped",
                 why);
        log_info("exec %s: %s", r->rec.id, r->stop_reason);
        r->stop_requested = 1;
        r->stop_error = 1;
        r->kill_at_ms = now + STOP_GRACE_MS;
        if (r->rec.pgid > 0)
            kill(-r->rec.pgid, SIGTERM);
        return;
    }
}

/* Returns 1 when the exec has ended and was removed. */
static int supervise_exec(exec_service *es, running_exec *r, int64_t now)
{
    if (r->pending)
        return 0;
    if (r->edt) {
        if (!edt_done(r->edt))
            return 0;
        trainer_ended(es, r);
    } else if (r->nworkers == 0) {
        /* Failed to start: its state says why. */
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
    } else {
        int alive = 0;
        for (int i = 0; i < r->nworkers; i++) {
            worker *w = &r->workers[i];
            if (w->done)
                continue;
            pid_t got = waitpid(w->pid, &w->status, WNOHANG);
            if (got == w->pid || (got < 0 && errno == ECHILD))
                w->done = 1;
            else
                alive++;
        }
        if (alive && !r->stop_requested)
            stop_after_worker_failed(es, r, now);
        if (alive && r->stop_requested && now >= r->kill_at_ms) {
            kill(-r->rec.pgid, SIGKILL);
            proc_group_kill(&r->group, 0);
        }
        if (alive)
            return 0;
        /* The workers are gone: so is whatever they left running. Which
         * limits bit is read first: the counters go with the group. */
        r->over_memory = proc_group_memory_exceeded(&r->group);
        r->procs_refused = proc_group_procs_exceeded(&r->group);
        proc_group_destroy(&r->group);
        finish_launch(es, r);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
    }
    sched_service_end(es->sched, r->rec.id);
    unlink_running(es, r);
    exec_free_running(r);
    return 1;
}

static void supervise_once(exec_service *es)
{
    pthread_mutex_lock(&es->lock);
    int64_t now = time_mono_ms();
    for (running_exec *r = es->running, *next; r; r = next) {
        next = r->next;
        supervise_exec(es, r, now);
    }
    /* Freed devices, expired hysteresis: the scheduler decides again. */
    collect_handbacks_locked(es);
    if (!es->stopping)
        exec_schedule_locked(es);
    pthread_mutex_unlock(&es->lock);
}

static void *supervisor(void *arg)
{
    exec_service *es = arg;
    for (;;) {
        pthread_mutex_lock(&es->lock);
        int stopping = es->stopping;
        pthread_mutex_unlock(&es->lock);
        if (stopping)
            break;
        supervise_once(es);
        exec_check_disk(es);
        store_retry(es->st); /* state changes a full disk kept waiting */
        exec_wait_for_change(es, es->supervise_ms);
    }
    return NULL;
}

exec_service *exec_service_create(store *st, registry *reg, sched_service *sched,
                                  const char *home)
{
    exec_service *es = calloc(1, sizeof *es);
    if (!es)
        return NULL;
    es->st = st;
    es->reg = reg;
    es->sched = sched;
    snprintf(es->home, sizeof es->home, "%s", home);
    pthread_mutex_init(&es->lock, NULL);
    es->logs = log_pump_create(EXEC_DEFAULT_LOG_MAX_BYTES);
    if (!es->logs) {
        pthread_mutex_destroy(&es->lock);
        free(es);
        return NULL;
    }
    exec_service_set_limits(es, NULL);
    exec_wake_init(es);
    /* The fallback interval, longer only to show in a test that exits are
     * noticed without it. */
    const char *interval = getenv("LOOM_EXEC_SUPERVISE_MS");
    es->supervise_ms = interval ? atoi(interval) : 0;
    if (es->supervise_ms < 1 || es->supervise_ms > 600000)
        es->supervise_ms = SUPERVISE_INTERVAL_US / 1000;
    return es;
}

void exec_service_start(exec_service *es)
{
    exec_reconcile(es);
    if (pthread_create(&es->thread, NULL, supervisor, es) == 0)
        es->thread_started = 1;
}

void exec_service_destroy(exec_service *es)
{
    if (!es)
        return;
    int64_t deadline = time_mono_ms() + STOP_GRACE_MS;
    pthread_mutex_lock(&es->lock);
    es->stopping = 1;
    exec_wake(es);
    for (running_exec *r = es->running; r; r = r->next) {
        if (r->edt) {
            edt_stop(r->edt);
        } else if (!r->pending && r->nworkers && !r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = deadline;
            snprintf(r->stop_reason, sizeof r->stop_reason, "stopped because the host shut down");
            kill(-r->rec.pgid, SIGTERM);
        }
    }
    pthread_mutex_unlock(&es->lock);
    if (es->thread_started)
        pthread_join(es->thread, NULL);
    /* Trainers stop at their next step, and pending execs are left as they
     * are: both stay in the store unfinished and are taken up again when
     * the host starts. Their state changes are not recorded now. */
    for (running_exec *r = es->running, *next; r; r = next) {
        next = r->next;
        if (r->edt) {
            edt_free(r->edt);
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
            if (exec_state_is_final(r->final_state)) /* it ended before the supervisor saw it */
                exec_set_state(es, &r->rec, r->final_state, r->final_message);
        } else if (r->pending) {
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        } else {
            continue;
        }
        unlink_running(es, r);
        r->edt = NULL;
        exec_free_running(r);
    }
    /* Launch-style workers get the stop grace, then SIGKILL. */
    while (es->running && time_mono_ms() < deadline + 2000) {
        pthread_mutex_lock(&es->lock);
        for (running_exec *r = es->running, *next; r; r = next) {
            next = r->next;
            supervise_exec(es, r, time_mono_ms());
        }
        pthread_mutex_unlock(&es->lock);
        if (es->running)
            usleep(SUPERVISE_INTERVAL_US);
    }
    while (es->running) { /* unkillable workers: record and let go */
        running_exec *r = es->running;
        es->running = r->next;
        exec_set_state(es, &r->rec, EXEC_STATE_KILLED, "the host shut down; workers did not exit");
        exec_free_running(r);
    }
    log_pump_destroy(es->logs, 1000); /* what the workers wrote last */
    exec_wake_close(es);
    pthread_mutex_destroy(&es->lock);
    free(es);
}

/* ---- submission --------------------------------------------------------- */

/* The exec folder is the job's: removed beneath its parent, following no
 * link it planted (util/user_tree). */
static void remove_exec_dir(const char *dir)
{
    loom_error *e = utree_delete(dir);
    if (e)
        log_warn("cannot remove the exec folder: %s", loom_err_message(e));
    loom_err_free(e);
}

/* Checks the submission against the framework and prepares how it will
 * run, without storing anything. */
loom_error *exec_prepare(exec_service *es, const exec_submission *sub, dlicmd *d,
                           const registry_entry *fw, running_exec *r, int code_ready)
{
    store_exec *rec = &r->rec;
    exec_wmla_devices(es, d);
    if (d->device_type == DEVICE_KIND_GPU &&
        sched_service_kind_count(es->sched, LOOM_DEVICE_CUDA) == 0)
        return loom_err(LOOM_E_INVALID, "--workerDeviceType gpu: this host has no GPU "
                                        "(its inventory holds none)");
    if (d->model_main && !utree_name_ok(d->model_main))
        return loom_err(LOOM_E_INVALID,
                        "--model-main \"%s\": expected a path relative to the model directory, "
                        "without \"..\"",
                        d->model_main);
    if (d->model_dir && !sub->archive && !sub->archive_path && !code_ready)
        return loom_err(LOOM_E_INVALID, "--model-dir given but the request carries no model "
                                        "directory (a tar in the 'file' part)");
    snprintf(r->code_dir, sizeof r->code_dir, "%s/_submitted_code", rec->result_dir);
    snprintf(r->log_dir, sizeof r->log_dir, "%s/log", rec->result_dir);
    loom_error *e = exec_data_dir(es, d, r->data_dir, sizeof r->data_dir);
    if (e)
        return e;
    /* On a restart the exec folder is the job's: its folders are made
     * beneath it (util/user_tree). */
    e = utree_mkdirs_in(rec->result_dir, "_submitted_code", 0755);
    if (!e)
        e = utree_mkdirs_in(rec->result_dir, "log", 0755);
    if (e)
        return loom_err_wrap(e, "cannot create the exec's folders");
    pthread_mutex_lock(&es->lock);
    tarball_limits bounds = {.max_bytes = es->limits.archive_max_bytes,
                             .max_entries = es->limits.archive_max_entries};
    pthread_mutex_unlock(&es->lock);
    e = code_ready          ? NULL
        : sub->archive_path ? tarball_unpack_file_bounded(sub->archive_path, r->code_dir, &bounds)
        : sub->archive      ? tarball_unpack_bounded(sub->archive, sub->archive_len, r->code_dir,
                                                     &bounds)
                            : NULL;
    if (!e && !code_ready && (sub->archive || sub->archive_path)) /* once, unpacked */
        e = exec_model_layout(r->code_dir, d->model_dir);
    if (e)
        return loom_err_wrap(e, "model directory");
    if (d->model_main) {
        char main_path[PATH_MAX];
        if (utree_resolve_named(r->code_dir, d->model_main, 1, main_path, sizeof main_path) != 0)
            return loom_err(LOOM_E_INVALID, "--model-main \"%s\": %s", d->model_main,
                            errno == EXDEV ? "expected a path relative to the model directory, "
                                             "without \"..\""
                                           : "no such file in the model directory");
    }
    if (fw->style == LOOM_FRAMEWORK_TRAINER) {
        r->job = calloc(1, sizeof *r->job);
        if (!r->job)
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        e = trainer_prepare(es, rec, fw, d, r->data_dir, r->job);
        if (!e && sub->continue_from)
            e = trainer_continue_from(es, rec, sub->continue_from, r->job);
        if (e) {
            free(r->job);
            r->job = NULL;
            return e;
        }
        r->elastic = 1;
        r->devices = (int)r->job->settings.engines;
        rec->num_workers = r->devices;
        return NULL;
    }
    /* Ask the adapter for the processes before anything is stored: a plan
     * it refuses is the submitter's error (LOOM_E_INVALID), not a failed exec. */
    launch_inputs *in = &r->launch_in;
    snprintf(in->fw_path, sizeof in->fw_path, "%s", fw->path);
    snprintf(in->fw_name, sizeof in->fw_name, "%s", fw->name);
    in->args = strings_copy((const char *const *)d->args, (uint32_t)d->arg_count);
    in->nargs = (uint32_t)d->arg_count;
    in->model_main = d->model_main ? strdup(d->model_main) : NULL;
    in->num_workers = (uint32_t)d->num_worker;
    in->worker_device_num = (uint32_t)d->worker_device_num;
    in->master_port = (uint32_t)rendezvous_port_pick();
    in->device_type = device_kind_text(d->device_type); /* the SDK's words */
    if (!in->args || (d->model_main && !in->model_main))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    r->msd_env = strings_copy((const char *const *)d->msd_env, (uint32_t)d->msd_env_count);
    e = launch_plan_make(r, NULL);
    if (!e && r->plan.count == 0)
        e = loom_err(LOOM_E_INVALID, "the framework planned no worker");
    if (e) {
        /* What the adapter could not find is in the submission (a file, a
         * flag): the submitter's to fix. */
        int32_t code = loom_err_code(e);
        return loom_err_recode(e, /* already names the framework */
                               code == LOOM_E_INVALID || code == LOOM_E_NOT_FOUND ? LOOM_E_INVALID
                                                                                 : LOOM_E_INTERNAL);
    }
    r->worker_device_num = d->worker_device_num;
    r->gpu = d->device_type == DEVICE_KIND_GPU;
    rec->num_workers = r->plan.count;
    r->devices = r->plan.count * d->worker_device_num;
    return NULL;
}

loom_error *exec_submit(exec_service *es, const exec_submission *sub, char *id, size_t idlen)
{
    dlicmd *d = sub->request;
    const char *args = sub->args ? sub->args : "";
    if (strlen(args) > EXEC_ARGS_MAX)
        return loom_err(LOOM_E_INVALID, "args: %zu bytes, longer than the limit of %zu",
                        strlen(args), EXEC_ARGS_MAX);
    /* The plan and the queue bound before anything is made. */
    char plan[256];
    loom_error *err = exec_plan_of(sub, d, plan, sizeof plan);
    if (!err)
        err = sched_service_plan_admits(es->sched, plan, sub->user, sub->user_id, sub->is_admin);
    if (!err)
        err = exec_check_queue_bound(es, sub->user, sub->user_id);
    registry_entry fw;
    int wmla = 0;
    const char *framework = dlicmd_framework_name(d->exec_start, &wmla);
    if (!err && registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, framework, &fw) != 0)
        err = exec_framework_missing(d->exec_start, framework, wmla);
    if (err) {
        return err;
    }
    running_exec *r = calloc(1, sizeof *r);
    err = r ? exec_claim_id(es, sub->user, &r->rec) : loom_err(LOOM_E_INTERNAL, "out of memory");
    if (err) {
        free(r);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        return err;
    }
    store_exec *rec = &r->rec;
    snprintf(rec->user, sizeof rec->user, "%s", sub->user);
    rec->user_id = sub->user_id;
    snprintf(rec->framework, sizeof rec->framework, "%s", fw.name);
    snprintf(r->framework, sizeof r->framework, "%s", fw.name);
    snprintf(rec->args, sizeof rec->args, "%s", args);
    snprintf(rec->plan, sizeof rec->plan, "%s", plan);
    rec->created_at = time_now_ms();
    rec->state = EXEC_STATE_SUBMITTED;

    err = exec_prepare(es, sub, d, &fw, r, 0);
    /* The scheduler accepts or refuses the job before anything is stored:
     * one too large for this host is the submitter's error. */
    pthread_mutex_lock(&es->lock);
    if (!err)
        err = exec_enqueue_locked(es, r, d);
    if (!err && (err = store_exec_insert(es->st, rec)) != NULL) {
        sched_service_end(es->sched, rec->id);
        unlink_running(es, r);
        err = loom_err_recode(err, LOOM_E_INTERNAL);
    }
    if (!err) {
        exec_set_state(es, rec, EXEC_STATE_PENDING, NULL);
        exec_schedule_locked(es);
        exec_wake(es); /* its first worker is watched from now on */
        snprintf(id, idlen, "%s", rec->id);
        exec_note_warnings(es, rec->id, sub, d);
    }
    pthread_mutex_unlock(&es->lock);
    if (err) {
        /* The folder exec_claim_id made, and only that one. */
        remove_exec_dir(rec->result_dir);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        exec_free_running(r);
    }
    return err;
}

loom_error *exec_stop(exec_service *es, int64_t owner, const char *id)
{
    pthread_mutex_lock(&es->lock);
    loom_error *err = NULL;
    store_exec rec;
    running_exec *r = NULL;
    if (!exec_lookup(es, owner, id, &r, &rec)) {
        err = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    } else if (r && r->pending) {
        /* Never started: it ends here. */
        sched_service_end(es->sched, id);
        exec_set_state(es, &r->rec, EXEC_STATE_KILLED, "stopped by request before it started");
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        unlink_running(es, r);
        exec_free_running(r);
    } else if (r && r->edt) {
        r->stop_requested = 1;
        edt_stop(r->edt);
    } else if (r) {
        if (!r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = time_mono_ms() + STOP_GRACE_MS;
            if (r->rec.pgid > 0)
                kill(-r->rec.pgid, SIGTERM);
        }
    } else if (!exec_state_is_final(rec.state)) {
        /* Recorded as running, yet nothing of it runs here (its end was
         * never recorded): settle it instead of refusing for good. */
        exec_set_state(es, &rec, EXEC_STATE_KILLED, "stopped by request; its processes had already ended");
    } else {
        err = loom_err(LOOM_E_CONFLICT, "exec \"%s\" is already %s", id,
                       exec_state_text(rec.state));
    }
    pthread_mutex_unlock(&es->lock);
    return err;
}

loom_error *exec_resize(exec_service *es, int64_t owner, const char *id, int workers)
{
    pthread_mutex_lock(&es->lock);
    loom_error *err = NULL;
    store_exec rec;
    running_exec *r = NULL;
    if (!exec_lookup(es, owner, id, &r, &rec)) {
        err = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    } else if (r && r->elastic) {
        if (workers < 1 || workers > r->devices) {
            err = loom_err(LOOM_E_INVALID, "workers: expected 1 to %d (the job's engines), got %d",
                           r->devices, workers);
        } else {
            /* The job asks for at most `workers`; the scheduler grants what
             * the other jobs leave. */
            err = sched_service_set_range(es->sched, id, 1, workers);
            if (!err)
                exec_schedule_locked(es);
        }
    } else if (r) {
        err = loom_err(LOOM_E_CONFLICT,
                       "exec \"%s\" runs a launch-style framework (%s); only elastic training "
                       "jobs resize",
                       id, r->framework);
    } else {
        err = loom_err(LOOM_E_CONFLICT, "exec \"%s\" is %s", id, exec_state_text(rec.state));
    }
    pthread_mutex_unlock(&es->lock);
    return err;
}

/* Deletes the record of a final exec. On a disk full even for the store's
 * reserve, the folder the user asked to delete goes first and gives the
 * record room. Call with es->lock; sets *folder_gone when it went. */
static loom_error *delete_record_locked(exec_service *es, const store_exec *rec, int *folder_gone)
{
    loom_error *err = store_exec_delete(es->st, rec->id);
    if (err && loom_err_code(err) == LOOM_E_LIMIT) {
        loom_err_free(err);
        remove_exec_dir(rec->result_dir);
        *folder_gone = 1;
        err = store_exec_delete(es->st, rec->id);
    }
    if (err)
        err = loom_err_recode(loom_err_wrap(err, "cannot delete exec \"%s\"", rec->id),
                              LOOM_E_INTERNAL);
    return err;
}

loom_error *exec_delete(exec_service *es, int64_t owner, const char *id)
{
    pthread_mutex_lock(&es->lock);
    store_exec rec;
    running_exec *r = NULL;
    loom_error *err = NULL;
    int folder_gone = 0;
    if (!exec_lookup(es, owner, id, &r, &rec))
        err = loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    else if (r || !exec_state_is_final(rec.state))
        err = loom_err(LOOM_E_CONFLICT, "exec \"%s\" is %s; stop it first", id,
                       exec_state_text(r ? r->rec.state : rec.state));
    else
        err = delete_record_locked(es, &rec, &folder_gone);
    pthread_mutex_unlock(&es->lock);
    /* Its folder goes outside the lock: a large one takes seconds, and the
     * record is already gone, so nothing else reaches it. */
    if (!err && !folder_gone)
        remove_exec_dir(rec.result_dir);
    return err;
}
