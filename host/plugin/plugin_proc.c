/* plugin/plugin_proc.c - see plugin_proc.h. */
#include "plugin/plugin_proc.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/user_tree.h"
#include "util/log_pump.h"
#include "util/supervise.h"

#define MAX_KEPT 4
/* The kill comes this much after the deadline, so that a Lua script's own
 * deadline (same length, in the child) reports first, with its line. */
#define KILL_GRACE_MS 500u
#define DEFAULT_MEMORY_BYTES ((uint64_t)1 << 30)
#define DEFAULT_CPU_SECONDS 3600u

struct plugin_proc {
    char *binary, *path, *name, *kind, *output, *write_dir, *owner;
    int64_t owner_id;
    char *read_dirs[PLUGIN_PROC_MAX_READ];
    unsigned deadline_ms, cpu_seconds, max_failures;
    uint64_t memory_bytes;
    supervised child;
    wire_buf kept[MAX_KEPT];
    int nkept;
    char *reply;
    size_t reply_cap;
    size_t payload_at, payload_len; /* the last good reply's payload */
    unsigned in_row, total;
    int disabled;
    char last_error[512];
};

/* ---- the children's output, bounded --------------------------------------- */

/* One pump for every child's output, made on first use; it lives as long
 * as the process (children started late in a shutdown still have it). */
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
static log_pump *output_pump;
static uint64_t output_limit = PLUGIN_PROC_DEFAULT_OUTPUT_BYTES;

void plugin_proc_set_output_limit(uint64_t max_bytes)
{
    pthread_mutex_lock(&output_lock);
    output_limit = max_bytes ? max_bytes : PLUGIN_PROC_DEFAULT_OUTPUT_BYTES;
    if (output_pump)
        log_pump_set_limit(output_pump, output_limit);
    pthread_mutex_unlock(&output_lock);
}

/* The write end of a pipe whose other end the pump appends to path; -1
 * (said in the host's log) when it cannot be had. */
static int bounded_output(const char *path)
{
    pthread_mutex_lock(&output_lock);
    if (!output_pump)
        output_pump = log_pump_create(output_limit);
    log_pump *pump = output_pump;
    pthread_mutex_unlock(&output_lock);
    int fds[2];
    if (!pump || pipe2(fds, O_CLOEXEC) != 0) {
        log_warn("plugin output %s: no pipe for it: %s", path,
                 pump ? strerror(errno) : "no log pump");
        return -1;
    }
    /* the output's folder (an exec's or a tuning task's) is opened as a
     * user tree's root: no link in it is followed */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    int root = -1;
    loom_error *e = NULL;
    if (!slash || slash == dir)
        e = loom_err(LOOM_E_INVALID, "%s: expected a file in a folder", path);
    else {
        *slash = 0;
        e = utree_root(dir, &root);
    }
    if (e)
        close(fds[0]);
    else
        e = log_pump_add(pump, fds[0], root, slash + 1); /* takes fds[0] */
    if (root >= 0)
        close(root);
    if (e) {
        log_warn("plugin output: %s", loom_err_message(e));
        loom_err_free(e);
        close(fds[1]);
        return -1;
    }
    return fds[1];
}

/* How an exchange ended. */
enum outcome { OK, PLUGIN_ERROR, PROCESS_FAILED };

plugin_proc *plugin_proc_new(const plugin_proc_spec *spec)
{
    plugin_proc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->binary = strdup(spec->binary);
    p->path = strdup(spec->plugin_path);
    p->name = strdup(spec->name);
    p->kind = strdup(spec->kind ? spec->kind : "logger");
    p->output = spec->output ? strdup(spec->output) : NULL;
    p->write_dir = spec->write_dir ? strdup(spec->write_dir) : NULL;
    p->owner = spec->owner ? strdup(spec->owner) : NULL;
    p->owner_id = spec->owner_id;
    for (int i = 0; spec->read_dirs && spec->read_dirs[i] && i < PLUGIN_PROC_MAX_READ; i++)
        if (!(p->read_dirs[i] = strdup(spec->read_dirs[i]))) {
            plugin_proc_free(p);
            return NULL;
        }
    p->deadline_ms = spec->deadline_ms ? spec->deadline_ms : PLUGIN_PROC_DEFAULT_DEADLINE_MS;
    p->memory_bytes = spec->memory_bytes ? spec->memory_bytes : DEFAULT_MEMORY_BYTES;
    p->cpu_seconds = spec->cpu_seconds ? spec->cpu_seconds : DEFAULT_CPU_SECONDS;
    p->max_failures = spec->max_failures ? spec->max_failures : PLUGIN_PROC_DEFAULT_MAX_FAILURES;
    p->child.pid = -1;
    p->child.fd = -1;
    if (!p->binary || !p->path || !p->name || !p->kind) {
        plugin_proc_free(p);
        return NULL;
    }
    return p;
}

void plugin_proc_free(plugin_proc *p)
{
    if (!p)
        return;
    /* Closing the socket tells the child to destroy the instance (loggers
     * flush there) and exit. */
    supervise_stop(&p->child, p->deadline_ms);
    for (int i = 0; i < p->nkept; i++)
        wire_free(&p->kept[i]);
    free(p->reply);
    free(p->binary);
    free(p->path);
    free(p->name);
    free(p->kind);
    free(p->output);
    free(p->write_dir);
    free(p->owner);
    for (int i = 0; i < PLUGIN_PROC_MAX_READ; i++)
        free(p->read_dirs[i]);
    free(p);
}

static loom_error *start_child(plugin_proc *p)
{
    char memory[32], cpu[32], deadline[32];
    snprintf(memory, sizeof memory, "%" PRIu64, p->memory_bytes);
    snprintf(cpu, sizeof cpu, "%u", p->cpu_seconds);
    snprintf(deadline, sizeof deadline, "%u", p->deadline_ms);
    char *argv[] = {p->binary, "plugin-host", "--kind", p->kind, "--name", p->name,
                    "--path", p->path, "--memory-bytes", memory, "--cpu-seconds", cpu,
                    "--deadline-ms", deadline, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, NULL, NULL, NULL};
    int n = 14;
    if (p->write_dir) {
        argv[n++] = "--write";
        argv[n++] = p->write_dir;
    }
    for (int i = 0; i < PLUGIN_PROC_MAX_READ && p->read_dirs[i]; i++) {
        argv[n++] = "--read";
        argv[n++] = p->read_dirs[i];
    }
    p->child.kind = "plugin-host";
    /* Confined as a job of its owner's: what it reads besides the system. */
    const char *reads[PLUGIN_PROC_MAX_READ + 2] = {p->path};
    for (int i = 0; i < PLUGIN_PROC_MAX_READ && p->read_dirs[i]; i++)
        reads[1 + i] = p->read_dirs[i];
    job_sandbox_job job = {.user = p->owner, .user_id = p->owner_id, .exec_dir = p->write_dir,
                           .read = reads};
    char **confined = NULL;
    /* A job's clean environment; of the host's, only the administrator's
     * bound on what Lua plugins write. */
    const char *limit = getenv("LOOM_PLUGIN_WRITE_LIMIT");
    char limit_var[128];
    snprintf(limit_var, sizeof limit_var, "LOOM_PLUGIN_WRITE_LIMIT=%.80s", limit ? limit : "");
    char *const host_vars[] = {limit ? limit_var : NULL, NULL};
    char *const *const layers[] = {host_vars};
    char **envp = job_env_build(p->write_dir ? p->write_dir : "/", layers, 1);
    loom_error *e = envp ? job_sandbox_wrap(&job, argv, &confined)
                         : loom_err(LOOM_E_INTERNAL, "out of memory");
    int out = !e && p->output ? bounded_output(p->output) : -1;
    if (!e && p->output && out < 0)
        e = loom_err(LOOM_E_INTERNAL, "no bounded output for %s", p->output);
    if (!e)
        e = supervise_start_fd(&p->child, confined ? confined : argv, envp, out);
    if (out >= 0)
        close(out);
    job_sandbox_argv_free(confined);
    job_env_free(envp);
    return e;
}

/* One request and its reply. On PLUGIN_ERROR *err is the plugin's error;
 * on PROCESS_FAILED the child is gone and *err says how. */
static enum outcome exchange(plugin_proc *p, const wire_buf *req, loom_error **err)
{
    uint64_t deadline = supervise_deadline_in(p->deadline_ms + KILL_GRACE_MS);
    uint32_t len = 0;
    loom_error *e = supervise_send(&p->child, req->data, req->len, deadline);
    if (!e)
        e = supervise_recv(&p->child, &len, sizeof len, deadline);
    if (!e && (len < 9 || len > WIRE_MAX_FRAME))
        e = loom_err(LOOM_E_INTERNAL, "it answered a frame of %u bytes", len);
    if (!e && len > p->reply_cap) {
        char *grown = realloc(p->reply, len);
        if (!grown)
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
        else
            p->reply = grown, p->reply_cap = len;
    }
    if (!e)
        e = supervise_recv(&p->child, p->reply, len, deadline);
    if (e) {
        char how[128];
        int late = loom_err_code(e) == LOOM_E_DEADLINE;
        supervise_kill(&p->child, how, sizeof how);
        *err = late ? loom_err(LOOM_E_DEADLINE,
                               "no answer within %u ms: its process was killed", p->deadline_ms)
                    : loom_err(LOOM_E_UNAVAILABLE, "its process failed (%s%s%s)",
                               loom_err_message(e), how[0] ? "; " : "", how);
        loom_err_free(e);
        return PROCESS_FAILED;
    }
    wire_reader r = {.p = p->reply, .left = len};
    uint8_t status = wire_get_u8(&r);
    int32_t code = wire_get_i32(&r);
    const char *message = wire_get_str(&r);
    if (status == 0 && !r.bad) {
        p->payload_at = len - r.left;
        p->payload_len = r.left;
        return OK;
    }
    *err = loom_err(code ? code : LOOM_E_INTERNAL, "%s",
                    message ? message : "(a malformed reply)");
    return PLUGIN_ERROR;
}

/* A new child, set up again by the kept requests. */
static loom_error *restart(plugin_proc *p)
{
    loom_error *e = start_child(p);
    for (int i = 0; !e && i < p->nkept; i++) {
        if (exchange(p, &p->kept[i], &e) == PLUGIN_ERROR) {
            e = loom_err_wrap(e, "setting it up again");
            supervise_kill(&p->child, NULL, 0);
        }
    }
    return e;
}

static void keep_request(plugin_proc *p, const wire_buf *req)
{
    if (p->nkept == MAX_KEPT)
        return;
    wire_buf *copy = &p->kept[p->nkept];
    copy->data = malloc(req->len);
    if (!copy->data)
        return;
    memcpy(copy->data, req->data, req->len);
    copy->len = copy->cap = req->len;
    p->nkept++;
}

/* Counts a failure that is the plugin's process's (or a limit's) fault. */
static void count_failure(plugin_proc *p, const char *message)
{
    p->in_row++;
    p->total++;
    snprintf(p->last_error, sizeof p->last_error, "%s", message);
    if (p->in_row >= p->max_failures) {
        p->disabled = 1;
        supervise_kill(&p->child, NULL, 0);
    }
}

loom_error *plugin_proc_call(plugin_proc *p, const char *what, const wire_buf *request, int keep)
{
    if (p->disabled)
        return loom_err(LOOM_E_UNAVAILABLE, "%s '%s' %s: disabled after %u failures in a row",
                        p->kind, p->name, what, p->in_row);
    p->payload_len = 0;
    loom_error *e = p->child.pid < 0 ? restart(p) : NULL;
    enum outcome how = e ? PROCESS_FAILED : exchange(p, request, &e);
    if (how == OK) {
        p->in_row = 0;
        if (keep)
            keep_request(p, request);
        return NULL;
    }
    int code = loom_err_code(e);
    e = loom_err_wrap(e, "%s '%s' %s", p->kind, p->name, what);
    if (how == PROCESS_FAILED || code == LOOM_E_DEADLINE || code == LOOM_E_LIMIT)
        count_failure(p, loom_err_message(e));
    return e;
}

wire_reader plugin_proc_reply(const plugin_proc *p)
{
    return (wire_reader){.p = p->reply ? p->reply + p->payload_at : NULL, .left = p->payload_len};
}

unsigned plugin_proc_failures_in_row(const plugin_proc *p) { return p->in_row; }
unsigned plugin_proc_failures_total(const plugin_proc *p) { return p->total; }
const char *plugin_proc_last_error(const plugin_proc *p) { return p->last_error; }
int plugin_proc_disabled(const plugin_proc *p) { return p->disabled; }
unsigned plugin_proc_max_failures(const plugin_proc *p) { return p->max_failures; }
