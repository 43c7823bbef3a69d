/* exec/exec_restart.c - what a new host does with the execs the last one
 * left unfinished: training execs resume from their newest checkpoint,
 * queued ones are queued again in their old order, and launch-style
 * programs (which a new host cannot re-attach to) are stopped. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"
#include "sched/slurm_step.h"
#include "util/error.h"
#include "util/log.h"

/* ---- restart reconciliation --------------------------------------------- */


typedef struct orphan_list {
    store_exec *items;
    int count, cap;
} orphan_list;

static void collect_unfinished(const store_exec *e, void *ctx)
{
    orphan_list *l = ctx;
    if (exec_state_is_final(e->state))
        return;
    if (l->count == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        store_exec *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = *e;
}

/* A training exec the host was running when it stopped: RECOVERING, back
 * to the scheduler, and the trainer resumes it from its newest checkpoint.
 * Returns 1 when it was taken over. */
static int resume_trainer(exec_service *es, store_exec *e)
{
    if (e->state == EXEC_STATE_PENDING)
        return 0; /* never started: queued again (requeue_pending) */
    registry_entry fw;
    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, e->framework, &fw) != 0)
        return 0;
    dlicmd d;
    loom_error *bad = fw.style == LOOM_FRAMEWORK_TRAINER ? dlicmd_parse(e->args, &d)
                                                         : loom_err(LOOM_E_UNSUPPORTED, "launch");
    if (bad) { /* not a trainer, or not one this host can read: not resumed */
        loom_err_free(bad);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        return 0;
    }
    char data_dir[PATH_MAX];
    running_exec *r = calloc(1, sizeof *r);
    edt_job *job = calloc(1, sizeof *job);
    loom_error *err = !r || !job ? loom_err(LOOM_E_INTERNAL, "out of memory")
                                 : exec_data_dir(es, &d, data_dir, sizeof data_dir);
    if (!err) /* a folder refused since it was submitted stays refused */
        err = trainer_prepare(es, e, &fw, &d, data_dir, job);
    if (!err) {
        r->rec = *e;
        r->job = job;
        r->elastic = 1;
        r->devices = (int)job->settings.engines;
        job->resume = 1;
        snprintf(r->framework, sizeof r->framework, "%s", fw.name);
        exec_set_state(es, &r->rec, EXEC_STATE_RECOVERING,
                       "the host restarted; resuming from the last checkpoint");
        pthread_mutex_lock(&es->lock);
        err = exec_enqueue_locked(es, r, &d);
        if (!err)
            exec_schedule_locked(es);
        pthread_mutex_unlock(&es->lock);
        if (!err)
            r = NULL;
        else
            job = NULL; /* freed with r */
    }
    if (err) {
        exec_set_state(es, e, EXEC_STATE_ERROR, loom_err_message(err));
        loom_err_free(err);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        if (r && r->job != job)
            free(job);
        exec_free_running(r);
    }
    dlicmd_free(&d);
    return 1;
}

/* An exec that waited in the queue when the host stopped: queued again
 * with the model directory it was submitted with. Call in submission
 * order, so the queue comes back in the order it had. */
static void requeue_pending(exec_service *es, store_exec *e)
{
    dlicmd d;
    registry_entry fw;
    loom_error *err = dlicmd_parse(e->args, &d);
    if (err) {
        exec_set_state(es, e, EXEC_STATE_ERROR, loom_err_message(err));
        loom_err_free(err);
        return;
    }
    running_exec *r = NULL;
    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, e->framework, &fw) != 0) {
        err = loom_err(LOOM_E_NOT_FOUND, "the host restarted and framework \"%s\" is no longer "
                                         "registered", e->framework);
    } else if (!(r = calloc(1, sizeof *r))) {
        err = loom_err(LOOM_E_INTERNAL, "out of memory");
    } else {
        r->rec = *e;
        snprintf(r->framework, sizeof r->framework, "%s", fw.name);
        exec_submission sub = {.user = e->user, .args = e->args, .request = &d};
        err = exec_prepare(es, &sub, &d, &fw, r, 1);
        pthread_mutex_lock(&es->lock);
        if (!err)
            err = exec_enqueue_locked(es, r, &d);
        if (!err)
            exec_set_state(es, &r->rec, EXEC_STATE_PENDING, "queued again after the host restarted");
        pthread_mutex_unlock(&es->lock);
    }
    if (err) {
        exec_set_state(es, e, EXEC_STATE_ERROR, loom_err_message(err));
        loom_err_free(err);
        if (r)
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        exec_free_running(r);
    }
    dlicmd_free(&d);
}

/* The Slurm jobs the last host started for the execs it left (`left`, the
 * pending ones aside), stopped or resumed (their srun is gone with it, or
 * lives on elsewhere): cancelled, so that nothing runs
 * on a node unaccounted for. Only jobs named after one of those execs:
 * another host's jobs on the same cluster are not this one's to end. */
static void cancel_slurm_leftovers(exec_service *es, const store_exec *left, int n)
{
    if (n == 0 || !sched_service_on_slurm(es->sched))
        return;
    slurm_step_job *jobs = NULL;
    size_t count = 0;
    loom_error *e = slurm_step_leftovers(NULL, &(slurm_step_filter){0}, &jobs, &count);
    if (e) {
        log_warn("Slurm jobs the last host left: %s", loom_err_message(e));
        loom_err_free(e);
        return;
    }
    for (size_t k = 0; k < count; k++) {
        const char *id = jobs[k].name + strlen(SLURM_STEP_NAME_PREFIX);
        const char *end = strrchr(id, ':');
        for (int i = 0; end && i < n; i++) {
            if (left[i].state == EXEC_STATE_PENDING || /* never started: no workers */
                strlen(left[i].id) != (size_t)(end - id) ||
                strncmp(left[i].id, id, (size_t)(end - id)) != 0)
                continue;
            loom_error *c = slurm_step_cancel(NULL, jobs[k].job_id);
            if (c)
                log_warn("exec %s: cannot cancel Slurm job %u: %s", left[i].id,
                         jobs[k].job_id, loom_err_message(c));
            else
                log_info("exec %s: cancelled Slurm job %u (%s) the last host left", left[i].id,
                         jobs[k].job_id, jobs[k].name);
            loom_err_free(c);
            break;
        }
    }
    free(jobs);
}

static int by_creation(const void *a, const void *b)
{
    const store_exec *x = a, *y = b;
    return (x->created_at > y->created_at) - (x->created_at < y->created_at);
}

void exec_reconcile(exec_service *es)
{
    orphan_list l = {0};
    loom_error *err = store_exec_each(es->st, collect_unfinished, &l);
    if (err)
        log_error("execs left by the last host: %s", loom_err_message(err));
    loom_err_free(err);
    if (l.count > 1)
        qsort(l.items, (size_t)l.count, sizeof *l.items, by_creation);
    /* Their workers from before (on Slurm nodes, jobs of their own) are
     * not this host's: first gone, then a resumed trainer starts new ones
     * under the same names. */
    cancel_slurm_leftovers(es, l.items, l.count);
    for (int i = 0; i < l.count; i++) {
        store_exec *e = &l.items[i];
        if (e->state == EXEC_STATE_PENDING || resume_trainer(es, e))
            continue;
        /* A launch-style program cannot be re-attached to: the previous host
         * was its parent. Stop what is left of it rather than leave it
         * running unsupervised. */
        if (e->pgid > 0)
            kill(-e->pgid, SIGKILL);
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the host restarted while this exec was %s; its workers were stopped",
                 exec_state_text(e->state));
        e->pgid = 0;
        exec_set_state(es, e, EXEC_STATE_ERROR, msg);
    }
    /* Then the queue, oldest first: the scheduler sees it in its old order
     * and gives the same head job the same reservation. */
    for (int i = 0; i < l.count; i++)
        if (l.items[i].state == EXEC_STATE_PENDING)
            requeue_pending(es, &l.items[i]);
    free(l.items);
}

