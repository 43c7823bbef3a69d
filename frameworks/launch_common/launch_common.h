/*
 * frameworks/launch_common/launch_common.h - what the launch-style
 * frameworks (command, distPyTorch) share: checking --model-main, building
 * the argv/env string lists and planning one worker per rank through the
 * host's launch sink.
 */
#ifndef LOOM_LAUNCH_COMMON_H
#define LOOM_LAUNCH_COMMON_H

#include <loom/loom.h>

/* A growable list of owned strings. After an allocation failure `failed` is
 * set and further adds do nothing, so callers check once at the end. */
typedef struct launch_strings {
    char **items;
    uint32_t count, capacity;
    int failed;
} launch_strings;

void launch_strings_add(launch_strings *list, const char *text);
void launch_strings_addf(launch_strings *list, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Frees the strings but keeps the list usable (count = 0). */
void launch_strings_clear(launch_strings *list);
void launch_strings_free(launch_strings *list);

/* Checks that request->model_main is given and names a regular file in
 * request->code_dir (or an absolute path). On success sets *path_out to the
 * path to put in argv (a borrowed pointer into request->model_main, or
 * "./"-prefixed into `buf`, so the program is not searched in PATH) and
 * *executable to whether it has an execute bit for us. `framework` prefixes
 * the error messages. */
loom_error *launch_find_main(const loom_host *host, const char *framework,
                             const loom_launch_request *request, char *buf,
                             size_t buflen, const char **path_out,
                             int *executable);

/* The number of workers a request asks for: num_workers, at least 1. */
uint32_t launch_worker_count(const loom_launch_request *request);

/* Where a rank runs among the exec's nodes (request->worker_nodes, ABI
 * 1.7, whose ranks on one node are consecutive): its rank on its node, how
 * many ranks that node runs, and the node's number (nodes numbered in rank
 * order). On one machine (no worker_nodes): rank, every worker and 0. */
typedef struct launch_place {
    uint32_t local_rank, local_world_size, node_rank;
} launch_place;
launch_place launch_worker_place(const loom_launch_request *request, uint32_t rank);

/* Adds a framework's own variables for one worker to `env`. */
typedef void (*launch_env_fn)(launch_strings *env, uint32_t rank, uint32_t workers,
                              const void *data);

/* One worker per rank: argv is `interpreter` (when not NULL), `program`
 * and the request's arguments; env is what env_of adds for the rank
 * (called with `data`). Returns the sink's error, or
 * LOOM_ERR_RESOURCE_EXHAUSTED prefixed with `framework` when memory ran
 * out. */
loom_error *launch_plan_workers(const loom_host *host, const char *framework,
                                const loom_launch_request *request, const char *interpreter,
                                const char *program, launch_env_fn env_of, const void *data,
                                const loom_launch_sink *sink);

#endif
