/* daemon/isolation.c - what the host's jobs may see (util/job_sandbox.h):
 * configured at start from the serve options, with an OS account per loom
 * user when the host runs as root, and the state home's modes set to match. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/proc_group.h"

static loom_error *user_id(void *ctx, const char *user, int64_t *id)
{
    return auth_user_id((auth_service *)ctx, user, id);
}

loom_error *loomd_isolate_jobs(loomd *d, const loomd_options *opt)
{
    unsigned first = opt->job_uid_first ? opt->job_uid_first : JOB_UID_FIRST_DEFAULT;
    unsigned last = opt->job_uid_last ? opt->job_uid_last : JOB_UID_LAST_DEFAULT;
    job_sandbox_config cfg = {.accounts = geteuid() == 0 && !opt->no_job_accounts,
                              .uid_first = first, .uid_last = last,
                              .user_id = user_id, .user_ctx = d->api.auth};
    /* Never jobs as root for want of a path: refused, saying what to do. */
    int apart = strcmp(d->api.files, d->api.home) != 0;
    loom_error *unreachable = cfg.accounts ? job_sandbox_reachable(d->api.files) : NULL;
    if (unreachable) {
        loom_error *e = loom_err(LOOM_E_INVALID,
                                 "%s %s: jobs run under accounts of their own, which cannot "
                                 "reach it: %s; give a %s they can pass through%s or let others "
                                 "search that folder (chmod o+x)",
                                 apart ? "--shared-dir" : "home", d->api.files,
                                 loom_err_message(unreachable), apart ? "folder" : "home",
                                 apart ? "" : " (as root the default is /var/lib/loom)");
        loom_err_free(unreachable);
        return e;
    }
    job_sandbox_configure(&cfg);
    loom_error *e = job_sandbox_secure_home(d->api.home, d->api.files, cfg.accounts);
    if (e)
        return e;
    char line[512];
    int complete = job_sandbox_describe(d->api.home, line, sizeof line);
    if (complete)
        log_info("%s", line);
    else
        log_warn("%s", line);
    /* Each exec, kernel and plugin call in a cgroup of its own; what a run
     * that crashed left is ended first. */
    int ended = proc_group_setup(d->api.home, NULL);
    if (ended)
        log_warn("ended %d process group(s) a previous run of this home left", ended);
    proc_group_describe(line, sizeof line);
    if (proc_group_available())
        log_info("%s", line);
    else
        log_warn("%s", line);
    if (!complete && opt->require_isolation)
        return loom_err(LOOM_E_UNAVAILABLE, "--require-isolation: %s", line);
    return NULL;
}
