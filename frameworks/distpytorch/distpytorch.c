/*
 * frameworks/distpytorch/distpytorch.c - the "distPyTorch" framework:
 * torch.distributed's env:// rendezvous. N workers (--numWorker), each
 * `python3 MODEL_MAIN args...` with MASTER_ADDR and MASTER_PORT (the port
 * the host reserved for this exec), WORLD_SIZE and RANK, and as torchrun
 * sets them LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK (the node's number;
 * also NODE_RANK): on one machine LOCAL_RANK equals RANK; across nodes they
 * follow the host's placement (loom_launch_request.worker_nodes).
 */
#include <stdio.h>
#include <string.h>

#include "launch_common.h"

static const loom_host *dist_host;

/* torch.distributed's env:// variables; `data` is the request. */
static void dist_env(launch_strings *env, uint32_t rank, uint32_t workers, const void *data)
{
    const loom_launch_request *request = data;
    const char *master_addr = request->master_addr && request->master_addr[0]
                                  ? request->master_addr : "127.0.0.1";
    launch_strings_addf(env, "MASTER_ADDR=%s", master_addr);
    launch_strings_addf(env, "MASTER_PORT=%u", request->master_port);
    launch_place at = launch_worker_place(request, rank);
    launch_strings_addf(env, "WORLD_SIZE=%u", workers);
    launch_strings_addf(env, "RANK=%u", rank);
    launch_strings_addf(env, "LOCAL_RANK=%u", at.local_rank);
    launch_strings_addf(env, "LOCAL_WORLD_SIZE=%u", at.local_world_size);
    launch_strings_addf(env, "GROUP_RANK=%u", at.node_rank);
    launch_strings_addf(env, "NODE_RANK=%u", at.node_rank);
    /* Print lines as they come, so the host's log capture keeps up. */
    launch_strings_add(env, "PYTHONUNBUFFERED=1");
}

static loom_error *dist_plan_launch(const loom_framework_factory *self,
                                    const loom_launch_request *request,
                                    const loom_launch_sink *sink)
{
    (void)self;
    char buf[4096];
    const char *script;
    int executable;
    loom_error *err = launch_find_main(dist_host, "distPyTorch", request, buf,
                                       sizeof buf, &script, &executable);
    if (err)
        return err;
    if (request->master_port == 0 || request->master_port > 65535)
        return dist_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                     "distPyTorch: master_port %u is not a "
                                     "usable TCP port for MASTER_PORT",
                                     request->master_port);
    return launch_plan_workers(dist_host, "distPyTorch", request, "python3", script, dist_env,
                               request, sink);
}

static const loom_framework_factory dist_factory = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_LAUNCH,
    .plan_launch = dist_plan_launch,
};

static loom_error *dist_init(const loom_host *host)
{
    dist_host = host;
    return NULL;
}

static const void *dist_get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_FRAMEWORK_FACTORY_ID) == 0)
        return &dist_factory;
    return NULL;
}

static const loom_module dist_module = {
    LOOM_MODULE_HEADER,
    .id = "distPyTorch",
    .version = "1.0.0",
    .description = "torch.distributed launch: N python3 workers with "
                   "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, "
                   "LOCAL_WORLD_SIZE, GROUP_RANK",
    .init = dist_init,
    .get_factory = dist_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &dist_module;
}
