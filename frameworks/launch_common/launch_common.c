/* frameworks/launch_common/launch_common.c - see launch_common.h. */
#include "launch_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void add_owned(launch_strings *list, char *text)
{
    if (list->failed || !text) {
        list->failed = 1;
        free(text);
        return;
    }
    if (list->count == list->capacity) {
        uint32_t cap = list->capacity ? 2 * list->capacity : 8;
        char **grown = realloc(list->items, cap * sizeof *grown);
        if (!grown) {
            list->failed = 1;
            free(text);
            return;
        }
        list->items = grown;
        list->capacity = cap;
    }
    list->items[list->count++] = text;
}

void launch_strings_add(launch_strings *list, const char *text)
{
    add_owned(list, strdup(text ? text : ""));
}

void launch_strings_addf(launch_strings *list, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    add_owned(list, text);
}

void launch_strings_clear(launch_strings *list)
{
    for (uint32_t i = 0; i < list->count; i++)
        free(list->items[i]);
    list->count = 0;
    list->failed = 0;
}

void launch_strings_free(launch_strings *list)
{
    launch_strings_clear(list);
    free(list->items);
    list->items = NULL;
    list->capacity = 0;
}

loom_error *launch_find_main(const loom_host *host, const char *framework,
                             const loom_launch_request *request, char *buf,
                             size_t buflen, const char **path_out,
                             int *executable)
{
    const char *model_main = request->model_main;
    if (!model_main || !model_main[0])
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                "%s: --model-main is required: name the file "
                                "to run, relative to --model-dir", framework);
    if (model_main[0] != '/' && (!request->code_dir || !request->code_dir[0]))
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                "%s: the launch request has no code_dir to "
                                "find --model-main '%s' in", framework, model_main);

    char full[4096];
    int n = model_main[0] == '/'
                ? snprintf(full, sizeof full, "%s", model_main)
                : snprintf(full, sizeof full, "%s/%s", request->code_dir, model_main);
    if (n < 0 || (size_t)n >= sizeof full)
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                "%s: the path of --model-main '%s' is too long",
                                framework, model_main);
    struct stat st;
    if (stat(full, &st) != 0)
        return host->error_newf(LOOM_ERR_NOT_FOUND,
                                "%s: --model-main '%s' not found in the model "
                                "directory '%s': %s", framework, model_main,
                                request->code_dir ? request->code_dir : "/",
                                strerror(errno));
    if (!S_ISREG(st.st_mode))
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                "%s: --model-main '%s' is not a regular file",
                                framework, model_main);
    *executable = access(full, X_OK) == 0;

    /* "train.sh" alone would be looked up in PATH; "./train.sh" runs the
     * copy in the working directory (code_dir). */
    if (model_main[0] == '/' || strncmp(model_main, "./", 2) == 0) {
        *path_out = model_main;
    } else {
        n = snprintf(buf, buflen, "./%s", model_main);
        if (n < 0 || (size_t)n >= buflen)
            return host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                    "%s: --model-main '%s' is too long",
                                    framework, model_main);
        *path_out = buf;
    }
    return NULL;
}

uint32_t launch_worker_count(const loom_launch_request *request)
{
    return request->num_workers ? request->num_workers : 1;
}

static int same_node(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

launch_place launch_worker_place(const loom_launch_request *request, uint32_t rank)
{
    uint32_t workers = launch_worker_count(request);
    launch_place p = {rank, workers, 0};
    const char *const *nodes =
        LOOM_STRUCT_HAS(request, loom_launch_request, worker_nodes) ? request->worker_nodes : NULL;
    if (!nodes || rank >= workers)
        return p;
    p.local_rank = p.local_world_size = 0;
    for (uint32_t r = 0; r < workers; r++) {
        /* a node's ranks are consecutive: each change of node up to this
         * rank is one more node before its own */
        if (r > 0 && r <= rank && !same_node(nodes[r], nodes[r - 1]))
            p.node_rank++;
        if (same_node(nodes[r], nodes[rank])) {
            p.local_world_size++;
            p.local_rank += r < rank;
        }
    }
    return p;
}

loom_error *launch_plan_workers(const loom_host *host, const char *framework,
                                const loom_launch_request *request, const char *interpreter,
                                const char *program, launch_env_fn env_of, const void *data,
                                const loom_launch_sink *sink)
{
    uint32_t workers = launch_worker_count(request);
    launch_strings argv = {0}, env = {0};
    loom_error *err = NULL;
    for (uint32_t rank = 0; rank < workers && !err; rank++) {
        launch_strings_clear(&argv);
        launch_strings_clear(&env);
        if (interpreter)
            launch_strings_add(&argv, interpreter);
        launch_strings_add(&argv, program);
        for (uint32_t i = 0; i < request->arg_count; i++)
            launch_strings_add(&argv, request->args[i]);
        env_of(&env, rank, workers, data);
        if (argv.failed || env.failed) {
            err = host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED,
                                   "%s: out of memory planning workers", framework);
            break;
        }
        err = sink->add_worker(sink, (const char *const *)argv.items, argv.count,
                               (const char *const *)env.items, env.count, NULL);
    }
    launch_strings_free(&argv);
    launch_strings_free(&env);
    return err;
}
