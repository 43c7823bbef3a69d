/* sched/slurm_step_jobs.c - libslurm set up once per process, and the
 * Slurm jobs loom started, found and cancelled (see slurm_step.h). */
#include "sched/slurm_step.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef LOOM_HAVE_SLURM

int slurm_step_libslurm(void) { return 0; }

static loom_error *no_libslurm(const char *what)
{
    return loom_err(LOOM_E_UNSUPPORTED,
                    "%s: this loom was built without libslurm (install libslurm-dev and "
                    "rebuild: scripts/bootstrap)",
                    what);
}
loom_error *slurm_lib_acquire(const char *conf)
{
    (void)conf;
    return no_libslurm("Slurm");
}
void slurm_lib_release(void) {}
loom_error *slurm_step_leftovers(const char *conf, const slurm_step_filter *f,
                                 slurm_step_job **out, size_t *count)
{
    (void)conf, (void)f;
    *out = NULL;
    *count = 0;
    return no_libslurm("finding loom's Slurm jobs");
}
loom_error *slurm_step_cancel(const char *conf, uint32_t job_id)
{
    (void)conf;
    (void)job_id;
    return no_libslurm("cancelling a Slurm job");
}

#else

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned lib_users;

int slurm_step_libslurm(void) { return 1; }

loom_error *slurm_lib_acquire(const char *conf)
{
    pthread_mutex_lock(&lib_lock);
    if (lib_users) {
        lib_users++;
        pthread_mutex_unlock(&lib_lock);
        return NULL;
    }
    const char *path = conf && conf[0] ? conf : getenv("SLURM_CONF");
    if (!path || !path[0])
        path = "/etc/slurm/slurm.conf";
    /* libslurm exits the process on a configuration it cannot read: look first. */
    if (access(path, R_OK) != 0) {
        int err = errno;
        pthread_mutex_unlock(&lib_lock);
        return loom_err(LOOM_E_NOT_FOUND,
                        "Slurm: cannot read Slurm's configuration %s (%s): set SLURM_CONF "
                        "or --slurm-conf FILE",
                        path, strerror(err));
    }
    slurm_init(path);
    lib_users = 1;
    pthread_mutex_unlock(&lib_lock);
    return NULL;
}

void slurm_lib_release(void)
{
    pthread_mutex_lock(&lib_lock);
    if (lib_users && --lib_users == 0)
        slurm_fini();
    pthread_mutex_unlock(&lib_lock);
}

static loom_error *slurm_failure(const char *what)
{
    return loom_err(LOOM_E_UNAVAILABLE, "Slurm: %s: %s (is slurmctld running and reachable?)",
                    what, slurm_strerror(slurm_get_errno()));
}

/* A job's state for slurm_step_job, or NULL when it has ended. */
static const char *live_state(uint32_t state)
{
    if (state & JOB_COMPLETING)
        return "COMPLETING";
    switch (state & JOB_STATE_BASE) {
    case JOB_PENDING:
        return "PENDING";
    case JOB_RUNNING:
        return "RUNNING";
    case JOB_SUSPENDED:
        return "SUSPENDED";
    default:
        return NULL;
    }
}

/* Whether job `j` is one of loom's that `f` selects. */
static bool selected(const job_info_t *j, const slurm_step_filter *f)
{
    const char *p = SLURM_STEP_NAME_PREFIX;
    size_t plen = strlen(p);
    if (!j->name || strncmp(j->name, p, plen))
        return false;
    if (f && f->exec_id && f->exec_id[0]) {
        size_t elen = strlen(f->exec_id);
        if (strncmp(j->name + plen, f->exec_id, elen) || j->name[plen + elen] != ':')
            return false;
    }
    if (f && (f->uid_min || f->uid_max) && (j->user_id < f->uid_min || j->user_id > f->uid_max))
        return false;
    return live_state(j->job_state) != NULL;
}

static void describe(const job_info_t *j, slurm_step_job *out)
{
    memset(out, 0, sizeof *out);
    out->job_id = j->job_id;
    out->user_id = j->user_id;
    snprintf(out->name, sizeof out->name, "%s", j->name);
    snprintf(out->state, sizeof out->state, "%s", live_state(j->job_state));
    /* one node per job; a list is cut at its first name */
    if (j->nodes) {
        size_t n = strcspn(j->nodes, ",[");
        if (n < sizeof out->node)
            memcpy(out->node, j->nodes, n);
    }
}

loom_error *slurm_step_leftovers(const char *conf, const slurm_step_filter *f,
                                 slurm_step_job **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    loom_error *e = slurm_lib_acquire(conf);
    if (e)
        return e;
    job_info_msg_t *jobs = NULL;
    if (slurm_load_jobs(0, &jobs, SHOW_ALL) != SLURM_SUCCESS) {
        e = slurm_failure("reading the jobs");
        slurm_lib_release();
        return e;
    }
    slurm_step_job *found = NULL;
    size_t n = 0;
    for (uint32_t i = 0; !e && i < jobs->record_count; i++) {
        const job_info_t *j = &jobs->job_array[i];
        if (!selected(j, f))
            continue;
        if (n >= SLURM_STEP_LEFTOVERS_MAX) {
            e = loom_err(LOOM_E_LIMIT, "Slurm: more than %d jobs named %s",
                         SLURM_STEP_LEFTOVERS_MAX, SLURM_STEP_NAME_PREFIX);
            break;
        }
        slurm_step_job *grown = realloc(found, (n + 1) * sizeof *grown);
        if (!grown) {
            e = loom_err(LOOM_E_INTERNAL, "Slurm: out of memory reading the jobs");
            break;
        }
        found = grown;
        describe(j, &found[n++]);
    }
    slurm_free_job_info_msg(jobs);
    slurm_lib_release();
    if (e) {
        free(found);
        return e;
    }
    *out = found;
    *count = n;
    return NULL;
}

loom_error *slurm_step_cancel(const char *conf, uint32_t job_id)
{
    loom_error *e = slurm_lib_acquire(conf);
    if (e)
        return e;
    if (slurm_kill_job(job_id, SIGKILL, 0) != SLURM_SUCCESS) {
        int err = slurm_get_errno();
        if (err == ESLURM_INVALID_JOB_ID)
            e = loom_err(LOOM_E_NOT_FOUND, "Slurm: cancelling job %u: no such job", job_id);
        else if (err != ESLURM_ALREADY_DONE)
            e = loom_err(LOOM_E_UNAVAILABLE, "Slurm: cancelling job %u: %s", job_id,
                         slurm_strerror(err));
    }
    slurm_lib_release();
    return e;
}

#endif
