/* train/members_nodes.c - an elastic job's workers on Slurm nodes: each
 * starts on its device's node through srun (sched/slurm_step.h) as the
 * exec's account, and the members link a TCP ring per generation for
 * their collectives (comm.h's net back end), each listening at the
 * address its control connection came from. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "sched/slurm_step.h"
#include "train/coordinator_internal.h"
#include "util/job_sandbox.h"
#include "util/sandbox.h"
#include "util/spawn.h"

loom_error *train_spawn_on_node(edt_coordinator *c, uint32_t slot, int32_t device, char **argv,
                                char **envp, const job_sandbox_job *box, spawn_spec *spec,
                                pid_t *pid, char *node, size_t len)
{
    edt_job *j = &c->job;
    node[0] = 0;
    if (device < 0 || !j->device_node(j->ctx, device, node, len) || !node[0])
        return loom_err(LOOM_E_INTERNAL, "worker %u: device %d is on no known Slurm node", slot,
                        (int)device);
    uid_t uid;
    gid_t gid;
    loom_error *e = job_sandbox_account(j->user, j->user_id, &uid, &gid);
    if (e)
        return loom_err_wrap(e, "the account of %s's workers on Slurm nodes", j->user);
    /* srun starts the worker as the account already: the exec folder is
     * given to it here, as `loom confine` does on this machine. */
    if ((e = sandbox_chown_tree(j->result_dir, uid, gid)))
        return e;
    /* Confined on the node as on this machine (`loom confine`: Landlock,
     * its own TMPDIR), the account being srun's already. */
    char **confined = NULL;
    if ((e = job_sandbox_wrap(box, argv, &confined)))
        return e;
    slurm_step_spec s = {.node = node, .uid = uid, .gid = gid, .cpus = 1,
                         .gpus = train_is_gpu_job(c) ? 1 : 0, .exec_id = j->exec_id,
                         .slot = slot, .chdir = j->code_dir,
                         .argv = (const char *const *)(confined ? confined : argv)};
    e = slurm_step_spawn(&s, envp, spec, pid);
    job_sandbox_argv_free(confined);
    if (e)
        return loom_err_wrap(e, "worker %u on node %s", slot, node);
    train_driver_say(c, "worker %u starts on node %s", slot, node);
    return NULL;
}

void train_node_worker_lost(edt_coordinator *c, uint32_t slot, const char *why)
{
    edt_job *j = &c->job;
    const char *node = c->m.slots[slot].node;
    if (j->node_lost)
        j->node_lost(j->ctx, node, why);
    /* srun ended (killed), but a node cut off never heard it: the job
     * would hold the node's CPUs until Slurm gives the node up. */
    loom_error *e = slurm_step_cancel_worker(NULL, j->exec_id, slot);
    if (e)
        train_driver_say(c, "worker %u's Slurm job on node %s: %s", slot, node,
                         loom_err_message(e));
    loom_err_free(e);
}

loom_error *train_net_peer_of(edt_coordinator *c, uint32_t slot, const struct sockaddr_storage *from,
                              uint32_t port)
{
    msg_net_peer *p = &c->m.slots[slot].net;
    if (!port || port > 65535)
        return loom_err(LOOM_E_INVALID, "its hello gave no port for the ring (net_port)");
    if (from->ss_family != AF_INET && from->ss_family != AF_INET6)
        return loom_err(LOOM_E_INVALID, "its connection is not over TCP");
    const void *addr = from->ss_family == AF_INET6
                           ? (const void *)&((const struct sockaddr_in6 *)from)->sin6_addr
                           : (const void *)&((const struct sockaddr_in *)from)->sin_addr;
    if (!inet_ntop(from->ss_family, addr, p->address, sizeof p->address))
        return loom_err(LOOM_E_INTERNAL, "its address: %s", strerror(errno));
    p->slot = slot;
    p->port = port;
    return NULL;
}

void train_net_generation(edt_coordinator *c, const uint32_t *slots, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++)
        c->m.net_peers[r] = c->m.slots[slots[r]].net;
    c->m.nnet = n;
}

void train_node_worker_exited(edt_coordinator *c, uint32_t slot, int status)
{
    edt_job *j = &c->job;
    if (j->node_lost && slurm_step_lost_shared_dir(status))
        j->node_lost(j->ctx, c->m.slots[slot].node, SLURM_STEP_NO_SHARED_DIR_REASON);
}
