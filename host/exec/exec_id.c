/* exec/exec_id.c - naming a new exec and claiming its folder, and the
 * per-user bound on queued execs. An id is "USER-MILLIS-SEQ" with the user
 * name shortened to EXEC_ID_USER_MAX characters, so every id fits the
 * 64-byte id fields whole; the creator's full name is recorded beside it.
 * An id is used only once the host has checked that no exec, running or
 * stored, has it and has created its folder itself (mkdir, not "make if
 * missing"), so a submission that fails later removes only what it made. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "exec/exec_internal.h"
#include "plugin/plugin_proc.h"
#include "util/fs.h"
#include "util/log.h"

/* Characters of the user name kept in an id: with "-", 13 digits of
 * milliseconds, "-" and 10 of sequence, 57 characters at most. */
#define EXEC_ID_USER_MAX 32
/* Ids tried before giving up (each collision means another host or a clock
 * gone backwards made that id already). */
#define EXEC_ID_TRIES 64

void exec_service_set_limits(exec_service *es, const exec_limits *l)
{
    exec_limits v = l ? *l : (exec_limits){0};
    if (v.max_queued_per_user <= 0)
        v.max_queued_per_user = EXEC_DEFAULT_MAX_QUEUED_PER_USER;
    if (v.archive_max_bytes == 0)
        v.archive_max_bytes = EXEC_DEFAULT_ARCHIVE_MAX_BYTES;
    if (v.archive_max_entries == 0)
        v.archive_max_entries = EXEC_DEFAULT_ARCHIVE_MAX_ENTRIES;
    if (v.checkpoints_keep <= 0)
        v.checkpoints_keep = EXEC_DEFAULT_CHECKPOINTS_KEEP;
    if (v.log_max_bytes == 0)
        v.log_max_bytes = EXEC_DEFAULT_LOG_MAX_BYTES;
    if (v.job_max_procs == 0)
        v.job_max_procs = EXEC_DEFAULT_JOB_MAX_PROCS;
    if (v.job_max_disk_bytes == 0)
        v.job_max_disk_bytes = EXEC_DEFAULT_JOB_MAX_DISK_BYTES;
    /* Kernel instances, loom workers and plugin calls: the same process
     * limit, and the administrator's memory limit when one is set. */
    proc_group_set_defaults(&(proc_group_limits){.max_procs = v.job_max_procs,
                                                 .max_memory_bytes = v.job_max_memory_bytes});
    pthread_mutex_lock(&es->lock);
    es->limits = v;
    pthread_mutex_unlock(&es->lock);
    if (es->logs)
        log_pump_set_limit(es->logs, v.log_max_bytes);
    /* Plugins' and search algorithms' output is bounded like job logs. */
    plugin_proc_set_output_limit(v.log_max_bytes);
}

loom_error *exec_check_queue_bound(exec_service *es, const char *user, int64_t user_id)
{
    int queued = 0;
    pthread_mutex_lock(&es->lock);
    int bound = es->limits.max_queued_per_user;
    for (const running_exec *r = es->running; r; r = r->next)
        queued += r->pending && r->rec.user_id == user_id;
    pthread_mutex_unlock(&es->lock);
    if (queued < bound)
        return NULL;
    return loom_err(LOOM_E_LIMIT,
                    "queued execs: user %s already has %d waiting for devices, the limit "
                    "(loom serve --max-queued-execs); stop one or wait for one to start",
                    user, queued);
}

/* Whether an exec of this id exists, running or stored. Call with es->lock. */
static int id_taken(exec_service *es, const char *id)
{
    if (exec_find_running(es, id))
        return 1;
    store_exec rec;
    loom_error *e = store_exec_get(es->st, id, &rec);
    int taken = loom_err_code(e) != LOOM_E_NOT_FOUND;
    loom_err_free(e);
    return taken;
}

loom_error *exec_claim_id(exec_service *es, const char *user, store_exec *rec)
{
    char execs[PATH_MAX];
    if ((size_t)snprintf(execs, sizeof execs, "%s/execs", es->home) >= sizeof execs)
        return loom_err(LOOM_E_INTERNAL, "home %s: path over PATH_MAX", es->home);
    loom_error *made = fs_mkdir_p(execs);
    if (made)
        return loom_err_recode(made, LOOM_E_INTERNAL);
    int ulen = (int)strnlen(user, EXEC_ID_USER_MAX);
    for (int attempt = 0; attempt < EXEC_ID_TRIES; attempt++) {
        pthread_mutex_lock(&es->lock);
        unsigned seq = ++es->seq;
        int n = snprintf(rec->id, sizeof rec->id, "%.*s-%lld-%u", ulen, user,
                         (long long)time_now_ms(), seq);
        int taken = n < 0 || (size_t)n >= sizeof rec->id || id_taken(es, rec->id);
        pthread_mutex_unlock(&es->lock);
        if (taken)
            continue;
        n = snprintf(rec->result_dir, sizeof rec->result_dir, "%s/%s", execs, rec->id);
        if (n < 0 || (size_t)n >= sizeof rec->result_dir)
            return loom_err(LOOM_E_INTERNAL, "exec folder: %s/%s is longer than %zu bytes", execs,
                            rec->id, sizeof rec->result_dir - 1);
        if (mkdir(rec->result_dir, 0700) == 0)
            return NULL;
        if (errno != EEXIST)
            return loom_err(LOOM_E_INTERNAL, "cannot create %s: %s", rec->result_dir,
                            strerror(errno));
        log_warn("exec folder %s exists without its exec: not reused", rec->result_dir);
    }
    rec->id[0] = rec->result_dir[0] = '\0';
    return loom_err(LOOM_E_INTERNAL, "no free exec id after %d tries", EXEC_ID_TRIES);
}
