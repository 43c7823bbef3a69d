/* plugin/launch_remote.c - see launch_remote.h. */
#include "plugin/launch_remote.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_proc.h"

static void put_strings(wire_buf *b, const char *const *v, uint32_t n)
{
    wire_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++)
        wire_put_str(b, v[i]);
}

/* A string list from the frame: a malloc'd array pointing into it. */
static const char **get_strings(wire_reader *r, uint32_t *n)
{
    *n = wire_get_u32(r);
    if (r->bad || *n > LAUNCH_REMOTE_MAX_STRINGS) {
        r->bad = 1;
        *n = 0;
        return NULL;
    }
    const char **v = calloc(*n + 1, sizeof *v);
    if (!v) {
        r->bad = 1;
        *n = 0;
        return NULL;
    }
    for (uint32_t i = 0; i < *n; i++)
        v[i] = wire_get_str(r);
    return v;
}

static void put_request(wire_buf *b, const loom_launch_request *q)
{
    wire_put_u8(b, WIRE_LAUNCH_PLAN);
    wire_put_u32(b, q->num_workers);
    wire_put_u32(b, q->worker_device_num);
    wire_put_u32(b, q->master_port);
    const char *s[] = {q->exec_id, q->code_dir,    q->model_main, q->data_dir,
                       q->result_dir, q->log_dir, q->device_type, q->master_addr};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++)
        wire_put_str(b, s[i]);
    put_strings(b, q->args, q->arg_count);
    put_strings(b, q->msd_env, q->msd_env_count);
    /* ABI 1.7: each worker's node, or none (one machine) */
    put_strings(b, q->worker_nodes, q->worker_nodes ? q->num_workers : 0);
}

/* ---- the child's side ---------------------------------------------------- */

typedef struct wire_sink {
    loom_launch_sink sink;
    wire_buf *out;
    uint32_t count;
} wire_sink;

static loom_error *sink_add_worker(const loom_launch_sink *sink, const char *const *argv,
                                   uint32_t argc, const char *const *env, uint32_t envc,
                                   const char *cwd)
{
    wire_sink *w = (wire_sink *)sink;
    if (w->count >= LAUNCH_REMOTE_MAX_WORKERS)
        return loom_err(LOOM_E_LIMIT, "a launch plan holds at most %u workers",
                        LAUNCH_REMOTE_MAX_WORKERS);
    if (argc > LAUNCH_REMOTE_MAX_STRINGS || envc > LAUNCH_REMOTE_MAX_STRINGS)
        return loom_err(LOOM_E_LIMIT, "worker %u: at most %u arguments and environment entries",
                        w->count, LAUNCH_REMOTE_MAX_STRINGS);
    wire_put_u8(w->out, 1); /* one more worker */
    put_strings(w->out, argv, argc);
    put_strings(w->out, env, envc);
    wire_put_str(w->out, cwd);
    w->count++;
    return w->out->failed ? loom_err(LOOM_E_INTERNAL, "out of memory") : NULL;
}

loom_error *launch_plan_serve(const loom_framework_factory *f, wire_reader *r, wire_buf *out)
{
    loom_launch_request q = {.struct_size = sizeof q};
    q.num_workers = wire_get_u32(r);
    q.worker_device_num = wire_get_u32(r);
    q.master_port = wire_get_u32(r);
    const char **s[] = {&q.exec_id, &q.code_dir,    &q.model_main, &q.data_dir,
                        &q.result_dir, &q.log_dir, &q.device_type, &q.master_addr};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++)
        *s[i] = wire_get_str(r);
    const char **args = get_strings(r, &q.arg_count);
    const char **env = get_strings(r, &q.msd_env_count);
    uint32_t nnodes;
    const char **nodes = get_strings(r, &nnodes);
    q.args = args;
    q.msd_env = env;
    q.worker_nodes = nnodes ? nodes : NULL;
    loom_error *e = NULL;
    if (!r->bad && nnodes && nnodes != q.num_workers)
        e = loom_err(LOOM_E_INVALID, "a launch request names %u workers' nodes for %u workers",
                     nnodes, q.num_workers);
    else if (!r->bad) {
        wire_sink w = {.sink = {.struct_size = sizeof w.sink, .add_worker = sink_add_worker},
                       .out = out};
        w.sink.host_data = &w;
        e = f->plan_launch ? f->plan_launch(f, &q, &w.sink)
                           : loom_err(LOOM_E_UNSUPPORTED, "the framework plans no launch");
        wire_put_u8(out, 0); /* the end of the plan */
    }
    free(args);
    free(env);
    free(nodes);
    return e;
}

/* ---- the host's side ------------------------------------------------------ */

static loom_error *replay(wire_reader *r, const loom_launch_sink *sink)
{
    loom_error *e = NULL;
    while (!e && !r->bad && wire_get_u8(r) == 1) {
        uint32_t argc, envc;
        const char **argv = get_strings(r, &argc);
        const char **env = get_strings(r, &envc);
        const char *cwd = wire_get_str(r);
        if (!r->bad)
            e = sink->add_worker(sink, argv, argc, env, envc, cwd);
        free(argv);
        free(env);
    }
    if (!e && r->bad)
        e = loom_err(LOOM_E_INTERNAL, "a malformed launch plan came back");
    return e;
}

loom_error *launch_plan_remote(const launch_remote_spec *spec, const loom_launch_request *req,
                               const loom_launch_sink *sink)
{
    plugin_proc_spec ps = {.binary = spec->binary,
                           .plugin_path = spec->plugin_path,
                           .name = spec->name,
                           .kind = "framework",
                           .output = spec->output,
                           .deadline_ms = spec->deadline_ms,
                           .owner = spec->owner,
                           .owner_id = spec->owner_id,
                           .write_dir = spec->exec_dir,
                           .max_failures = 1};
    plugin_proc *p = plugin_proc_new(&ps);
    if (!p)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    wire_buf b = {0};
    wire_begin(&b);
    put_request(&b, req);
    loom_error *e = wire_finish(&b) == 0
                        ? plugin_proc_call(p, "plan_launch", &b, 0)
                        : loom_err(LOOM_E_LIMIT, "framework '%s': the launch request is too large",
                                   spec->name);
    if (!e) {
        wire_reader r = plugin_proc_reply(p);
        e = replay(&r, sink);
    }
    wire_free(&b);
    plugin_proc_free(p);
    return e;
}
