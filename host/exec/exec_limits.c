/* exec/exec_limits.c - what an exec's processes may take: the
 * limits computed from the administrator's settings (its plan's max_procs,
 * max_memory, max_disk where a plan up the tree sets them, else loom serve
 * --job-max-procs, --job-max-memory, --job-max-disk), the disk its
 * RESULT_DIR takes, measured by the supervisor, and the words that name a
 * limit when one ended the exec. Processes and memory are enforced by the
 * exec's cgroups (util/proc_group.h), each file's size by RLIMIT_FSIZE. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "util/disk_usage.h"
#include "util/fs.h"
#include "util/log.h"

/* How often one exec's RESULT_DIR is measured, and how many entries a
 * measurement looks at (about 0.1 s of fstatat). */
#define DISK_CHECK_MS 1000
#define DISK_MAX_ENTRIES 200000

/* The plan exec `rec` runs in, as recorded; a record from before plans
 * were kept: its --consumer, else "/USER" (the root's limits apply to one
 * whose words no longer parse). */
static void record_plan(const store_exec *rec, char *plan, size_t len)
{
    if (rec->plan[0]) {
        snprintf(plan, len, "%s", rec->plan);
        return;
    }
    dlicmd d;
    loom_error *e = dlicmd_parse(rec->args, &d);
    if (!e) {
        exec_submission owner = {.user = rec->user};
        e = exec_plan_of(&owner, &d, plan, len);
        dlicmd_free(&d);
    }
    if (e)
        snprintf(plan, len, "/");
    loom_err_free(e);
}

void exec_job_limits_for(exec_service *es, const store_exec *rec, int ndev, exec_job_limits *out)
{
    char plan[256];
    record_plan(rec, plan, sizeof plan);
    const uint64_t host[SCHED_LIMITS] = {
        [SCHED_LIMIT_PROCS] = es->limits.job_max_procs,
        [SCHED_LIMIT_MEMORY] = es->limits.job_max_memory_bytes,
        [SCHED_LIMIT_DISK] = es->limits.job_max_disk_bytes};
    sched_job_limits set;
    sched_service_plan_limits(es->sched, plan, host, &set);
    *out = (exec_job_limits){.max_procs = set.value[SCHED_LIMIT_PROCS],
                             .max_memory_bytes = set.value[SCHED_LIMIT_MEMORY],
                             .max_disk_bytes = set.value[SCHED_LIMIT_DISK]};
    memcpy(out->plan, set.from, sizeof out->plan);
    out->memory_is_share = out->max_memory_bytes == 0;
    if (!out->memory_is_share)
        return;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t machine = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    size_t slots = sched_service_device_count(es->sched);
    uint64_t share = slots ? machine / slots * (uint64_t)(ndev > 0 ? ndev : 1) : machine;
    out->max_memory_bytes = share < machine ? share : machine;
}

void exec_limit_source(const exec_job_limits *l, int which, char *out, size_t len)
{
    if (l->plan[which][0])
        snprintf(out, len, "plan %s", l->plan[which]);
    else
        snprintf(out, len, "loom serve %s", sched_limit_infos[which].serve_flag);
}

/* "20 GiB", "300 MiB", "4096 bytes": the unit that shows it whole. */
void exec_size_text(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    if (u < 2 && bytes >= (1u << 20)) /* not a whole count: MiB, rounded */
        snprintf(out, outlen, "%.1f MiB", (double)bytes / (u ? 1024.0 : 1048576.0));
    else
        snprintf(out, outlen, "%" PRIu64 " %s", bytes, units[u]);
}

void exec_limit_note(const running_exec *r, char *msg, size_t len)
{
    size_t used = strlen(msg);
    char size[32], source[300];
    if (r->over_memory && used < len) {
        exec_size_text(r->limits.max_memory_bytes, size, sizeof size);
        exec_limit_source(&r->limits, SCHED_LIMIT_MEMORY, source, sizeof source);
        used += (size_t)snprintf(msg + used, len - used,
                                 "%sits processes went over the memory limit, %s (%s)",
                                 used ? "; " : "", size, source);
    }
    if (r->procs_refused && used < len) {
        exec_limit_source(&r->limits, SCHED_LIMIT_PROCS, source, sizeof source);
        snprintf(msg + used, len - used,
                 "%sforks were refused at the process limit, %" PRIu64
                 " processes and threads (%s)",
                 used ? "; " : "", r->limits.max_procs, source);
    }
}

/* Stops an exec whose RESULT_DIR went over its disk limit. Call with
 * es->lock. */
static void stop_over_disk(exec_service *es, running_exec *r, uint64_t bytes)
{
    char took[32], limit[32], source[300];
    exec_size_text(bytes, took, sizeof took);
    exec_size_text(r->limits.max_disk_bytes, limit, sizeof limit);
    exec_limit_source(&r->limits, SCHED_LIMIT_DISK, source, sizeof source);
    snprintf(r->stop_reason, sizeof r->stop_reason,
             "RESULT_DIR took %s, over the disk limit of %s (%s)", took, limit, source);
    log_warn("exec %s: %s", r->rec.id, r->stop_reason);
    r->stop_requested = 1;
    r->stop_error = 1;
    r->kill_at_ms = time_mono_ms();
    if (r->edt) { /* the trainer ends its workers and says ERROR (exec_trainer) */
        edt_stop(r->edt);
        return;
    }
    if (r->rec.pgid > 0)
        kill(-r->rec.pgid, SIGKILL);
    proc_group_kill(&r->group, 0);
    exec_wake(es);
}

void exec_check_disk(exec_service *es)
{
    char id[sizeof ((store_exec *)0)->id], dir[PATH_MAX];
    uint64_t limit = 0;
    int64_t now = time_mono_ms();
    pthread_mutex_lock(&es->lock);
    for (running_exec *r = es->running; r && !limit; r = r->next)
        if (!r->pending && (r->edt || r->nworkers > 0) && !r->stop_requested &&
            r->limits.max_disk_bytes && now - r->disk_checked_ms >= DISK_CHECK_MS) {
            r->disk_checked_ms = now;
            limit = r->limits.max_disk_bytes;
            snprintf(id, sizeof id, "%s", r->rec.id);
            snprintf(dir, sizeof dir, "%s", r->rec.result_dir);
        }
    pthread_mutex_unlock(&es->lock);
    if (!limit)
        return;
    /* Outside the lock: the walk is bounded, but not free. */
    disk_usage u;
    if (disk_usage_measure(dir, DISK_MAX_ENTRIES, &u) != 0 || u.bytes <= limit)
        return;
    pthread_mutex_lock(&es->lock);
    running_exec *r = exec_find_running(es, id);
    if (r && !r->stop_requested)
        stop_over_disk(es, r, u.bytes);
    pthread_mutex_unlock(&es->lock);
}
