/*
 * frameworks/command/command.c - the "command" framework: launch any program.
 * One worker per --numWorker (default 1), each running --model-main from the
 * model directory with the arguments after `--`: directly when the file is
 * executable, through /bin/sh otherwise (a script copied without its mode).
 * Workers also get RANK and WORLD_SIZE so a program can split its work, and
 * LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK for its node's share (across
 * nodes, loom_launch_request.worker_nodes).
 */
#include <stdio.h>
#include <string.h>

#include "launch_common.h"

static const loom_host *command_host;

static void command_env(launch_strings *env, uint32_t rank, uint32_t workers, const void *data)
{
    launch_place at = launch_worker_place(data, rank);
    launch_strings_addf(env, "RANK=%u", rank);
    launch_strings_addf(env, "WORLD_SIZE=%u", workers);
    launch_strings_addf(env, "LOCAL_RANK=%u", at.local_rank);
    launch_strings_addf(env, "LOCAL_WORLD_SIZE=%u", at.local_world_size);
    launch_strings_addf(env, "NODE_RANK=%u", at.node_rank);
}

static loom_error *command_plan_launch(const loom_framework_factory *self,
                                       const loom_launch_request *request,
                                       const loom_launch_sink *sink)
{
    (void)self;
    char buf[4096];
    const char *program;
    int executable;
    loom_error *err = launch_find_main(command_host, "command", request, buf,
                                       sizeof buf, &program, &executable);
    if (err)
        return err;
    return launch_plan_workers(command_host, "command", request, executable ? NULL : "/bin/sh",
                               program, command_env, request, sink);
}

static const loom_framework_factory command_factory = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_LAUNCH,
    .plan_launch = command_plan_launch,
};

static loom_error *command_init(const loom_host *host)
{
    command_host = host;
    return NULL;
}

static const void *command_get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_FRAMEWORK_FACTORY_ID) == 0)
        return &command_factory;
    return NULL;
}

static const loom_module command_module = {
    LOOM_MODULE_HEADER,
    .id = "command",
    .version = "1.0.0",
    .description = "Launch any program: one process per worker running "
                   "--model-main with the arguments after --",
    .init = command_init,
    .get_factory = command_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &command_module;
}
