/* exec/exec_nodes.c - launch-style execs whose devices are on Slurm nodes:
 * the framework plans the workers again with each one's node (ranks on a
 * node consecutive, as the scheduler granted them), and each worker starts
 * as one Slurm job on its node through srun (sched/slurm_step.h), run by
 * the host under the loom user's account there. srun stays the host's
 * child for the worker's life: its exit status is the worker's, its
 * output the worker's log, and ending it ends the Slurm job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "sched/slurm_step.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/sandbox.h"
#include "util/spawn.h"

loom_error *exec_nodes_need_shared_dir(const exec_service *es, const char *id, const char *node)
{
    if (es->state_home[0])
        return NULL;
    return loom_err(LOOM_E_UNSUPPORTED,
                    "exec %s was given devices of Slurm node %s: its folder must be on a "
                    "folder every node mounts (loom serve --shared-dir DIR)",
                    id, node);
}

loom_error *exec_nodes_place(exec_service *es, running_exec *r, int ndev, int *on_nodes)
{
    *on_nodes = 0;
    char(*nodes)[SLURM_NODE_NAME_MAX] = calloc((size_t)(ndev > 0 ? ndev : 1), sizeof *nodes);
    if (!nodes)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    int n = sched_service_job_device_nodes(es->sched, r->rec.id, nodes, ndev);
    for (int i = 0; i < n && i < ndev; i++)
        *on_nodes |= nodes[i][0] != 0;
    int per = r->worker_device_num > 0 ? r->worker_device_num : 1;
    loom_error *e = *on_nodes ? exec_nodes_need_shared_dir(es, r->rec.id, nodes[0]) : NULL;
    if (!e && *on_nodes && n < r->plan.count * per)
        e = loom_err(LOOM_E_INTERNAL, "exec %s: %d device(s) for %d worker(s) of %d", r->rec.id,
                     n, r->plan.count, per);
    if (*on_nodes && !e) {
        strings_free(r->worker_nodes);
        r->worker_nodes = calloc((size_t)r->plan.count + 1, sizeof *r->worker_nodes);
        for (int w = 0; r->worker_nodes && w < r->plan.count; w++)
            r->worker_nodes[w] = strdup(nodes[w * per][0] ? nodes[w * per] : "");
        if (!r->worker_nodes)
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
        int planned = r->plan.count;
        if (!e)
            e = launch_plan_make(r, (const char *const *)r->worker_nodes);
        if (!e && r->plan.count != planned)
            e = loom_err(LOOM_E_INTERNAL,
                         "the framework planned %d worker(s) across nodes, %d on one machine",
                         r->plan.count, planned);
        if (e)
            e = loom_err_wrap(e, "planning exec %s's workers on their nodes", r->rec.id);
    }
    free(nodes);
    return e;
}

/* argv[0] as a path the node can run: absolute as it is, relative to the
 * worker's folder when it has a slash, else searched in the job's PATH
 * (util/job_env.h: the job's environment always sets one). */
static int absolute_program(const char *prog, const char *cwd, char *const *envp, char *out,
                            size_t len)
{
    if (prog[0] == '/')
        return snprintf(out, len, "%s", prog) < (int)len;
    if (strchr(prog, '/'))
        return snprintf(out, len, "%s/%s", cwd, prog) < (int)len;
    job_env_which(envp, prog, out, len);
    return out[0] != 0;
}

loom_error *exec_nodes_spawn(running_exec *r, int worker, char **envp, const char *cwd,
                             const job_sandbox_job *box, spawn_spec *spec, pid_t *pid)
{
    const store_exec *rec = &r->rec;
    uid_t uid;
    gid_t gid;
    loom_error *e = job_sandbox_account(rec->user, rec->user_id, &uid, &gid);
    if (e)
        return loom_err_wrap(e, "the account of %s's workers on Slurm nodes", rec->user);
    /* srun starts the worker as the account already: the exec folder is
     * given to it here, as `loom confine` does on this machine. */
    if (worker == 0 && (e = sandbox_chown_tree(rec->result_dir, uid, gid)))
        return e;
    char program[PATH_MAX];
    char **worker_argv = r->plan.workers[worker].argv;
    if (!absolute_program(worker_argv[0], cwd, envp, program, sizeof program))
        return loom_err(LOOM_E_INVALID, "worker %d: cannot find '%s' to run on node %s", worker,
                        worker_argv[0], r->worker_nodes[worker]);
    size_t nargs = 0;
    while (worker_argv[nargs])
        nargs++;
    const char **argv = calloc(nargs + 1, sizeof *argv);
    if (!argv)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    argv[0] = program;
    memcpy(argv + 1, worker_argv + 1, nargs * sizeof *argv); /* and its NULL */
    /* Confined on the node as on this machine (`loom confine`), the
     * account being srun's already. */
    char **confined = NULL;
    e = job_sandbox_wrap(box, (char *const *)argv, &confined);
    int per = r->worker_device_num > 0 ? r->worker_device_num : 1;
    slurm_step_spec s = {.node = r->worker_nodes[worker], .uid = uid, .gid = gid,
                         .cpus = (uint32_t)per, .gpus = r->gpu ? (uint32_t)per : 0,
                         .exec_id = rec->id, .slot = (uint32_t)worker, .chdir = cwd,
                         .argv = confined ? (const char *const *)confined : argv};
    if (!e)
        e = slurm_step_spawn(&s, envp, spec, pid);
    job_sandbox_argv_free(confined);
    free(argv);
    return e;
}
