/* sched/slurm_step_spawn.c - starting a worker on its Slurm node: the
 * worker's command behind a guard that checks the node reaches its folder,
 * srun's command line (slurm_step.c), and srun started as the host's child
 * with the worker's environment, which srun exports by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_step.h"
#include "util/spawn.h"

/* The names of envp's entries, NULL-terminated, into names (each a copy);
 * false when out of memory or over the limit. */
static bool export_names(char *const *envp, char **names, size_t cap)
{
    size_t n = 0;
    for (; envp[n]; n++) {
        const char *eq = strchr(envp[n], '=');
        if (n + 1 >= cap || !eq || !(names[n] = strndup(envp[n], (size_t)(eq - envp[n]))))
            return false;
    }
    names[n] = NULL;
    return true;
}

/* $1 the worker's folder, then its program and arguments. Slurm runs a
 * step in /tmp when its folder is missing on the node: the guard says so
 * instead, with a status of its own. */
#define NODE_GUARD_TEXT(status)                                                              \
    "cd \"$1\" 2>/dev/null || { echo \"loom: node $(hostname) cannot reach $1: the shared " \
    "folder is not mounted there\" >&2; exit " #status "; }; shift; exec \"$@\""
#define NODE_GUARD_OF(status) NODE_GUARD_TEXT(status)
#define NODE_GUARD NODE_GUARD_OF(SLURM_STEP_NO_SHARED_DIR)

/* srun's own environment: the worker's values (exported by name) and
 * Slurm's configuration, as the host was given it. */
static loom_error *start_srun(char **srun, char *const *envp, spawn_spec *spec, pid_t *pid)
{
    const char *conf = getenv("SLURM_CONF");
    size_t n = 0;
    while (envp[n])
        n++;
    char **srun_env = calloc(n + 2, sizeof *srun_env);
    if (!srun_env)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    char conf_entry[4096 + 16];
    memcpy(srun_env, envp, n * sizeof *srun_env);
    if (conf && snprintf(conf_entry, sizeof conf_entry, "SLURM_CONF=%s", conf) <
                    (int)sizeof conf_entry)
        srun_env[n] = conf_entry;
    spec->argv = srun;
    spec->envp = srun_env;
    spec->cwd = "/";
    loom_error *e = spawn_process(spec, pid);
    free(srun_env);
    return e;
}

loom_error *slurm_step_spawn(const slurm_step_spec *s, char *const *envp, spawn_spec *spec,
                             pid_t *pid)
{
    char *names[SLURM_STEP_EXPORTS_MAX + 1] = {0};
    loom_error *e = NULL;
    size_t nargs = 0;
    while (s->argv && s->argv[nargs])
        nargs++;
    if (!nargs || s->argv[0][0] != '/' || !s->chdir)
        return loom_err(LOOM_E_INVALID, "a worker on node %s: expected an absolute program and "
                        "a folder", s->node ? s->node : "?");
    if (!export_names(envp, names, sizeof names / sizeof *names))
        e = loom_err(LOOM_E_LIMIT, "slot %u: more than %d environment entries for a Slurm node",
                     s->slot, SLURM_STEP_EXPORTS_MAX);
    const char **guarded = e ? NULL : calloc(nargs + 6, sizeof *guarded);
    if (!e && !guarded)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    char **srun = NULL;
    if (!e) {
        const char *guard[] = {"/bin/sh", "-c", NODE_GUARD, "loom-worker", s->chdir};
        memcpy(guarded, guard, sizeof guard);
        memcpy(guarded + 5, s->argv, (nargs + 1) * sizeof *guarded); /* and its NULL */
        slurm_step_spec wrapped = *s;
        wrapped.argv = guarded;
        wrapped.exports = (const char *const *)names;
        e = slurm_step_argv(&wrapped, &srun);
    }
    free(guarded);
    if (!e)
        e = start_srun(srun, envp, spec, pid);
    slurm_step_argv_free(srun);
    for (size_t i = 0; names[i]; i++)
        free(names[i]);
    return e;
}

loom_error *slurm_step_cancel_worker(const char *conf, const char *exec_id, uint32_t slot)
{
    char name[128];
    loom_error *e = slurm_step_job_name(exec_id, slot, name, sizeof name);
    slurm_step_job *jobs = NULL;
    size_t n = 0;
    if (!e)
        e = slurm_step_leftovers(conf, &(slurm_step_filter){.exec_id = exec_id}, &jobs, &n);
    for (size_t k = 0; !e && k < n; k++)
        if (!strcmp(jobs[k].name, name)) {
            e = slurm_step_cancel(conf, jobs[k].job_id);
            if (e && loom_err_code(e) == LOOM_E_NOT_FOUND) { /* it ended meanwhile */
                loom_err_free(e);
                e = NULL;
            }
        }
    free(jobs);
    return e;
}
