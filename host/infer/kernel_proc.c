/* infer/kernel_proc.c - see kernel_proc.h. */
#include "infer/kernel_proc.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "infer/kernel_wire.h"
#include "plugin/plugin_wire.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/supervise.h"

#define STOP_GRACE_MS 2000u
#define MAX_ARGS (24 + 2 * 2 * MODEL_ENV_MAX)

struct kernel_proc {
    supervised child;
    char *arena; /* KERNEL_ARENA_SIZE, shared with the child */
    wire_buf frame;
    char *reply;
    size_t reply_cap;
    int spin; /* await an answer spinning first (see kernel_proc_spin) */
    int tensors;        /* requests are tensor packs (a v2 model) */
    int in_flight;      /* a batch was sent and not yet collected */
    uint32_t sent;      /* its size */
    uint8_t region;     /* the answer region it writes to */
};

size_t kernel_proc_batch_bytes(void) { return KERNEL_ARENA_REGION; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The READY frame's length, and the memfd riding with it (-1 when none). */
static loom_error *recv_ready_length(kernel_proc *k, uint32_t *len, int *fd, uint64_t deadline)
{
    *fd = -1;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            return loom_err(LOOM_E_DEADLINE, "the kernel did not load within its "
                            "kernel.connection_timeout");
        struct pollfd p = {.fd = k->child.fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0)
            break;
    }
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = len, .iov_len = sizeof *len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    ssize_t n = recvmsg(k->child.fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    if (n != (ssize_t)sizeof *len)
        return loom_err(LOOM_E_UNAVAILABLE, "the kernel process ended while loading");
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(fd, CMSG_DATA(c), sizeof(int));
    return NULL;
}

/* Sleeps until the child's answer is there (or the deadline passes). */
static loom_error *await_answer(kernel_proc *k, uint64_t deadline)
{
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            return loom_err(LOOM_E_DEADLINE, "the kernel did not answer in time");
        struct pollfd p = {.fd = k->child.fd, .events = POLLIN};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (r > 0 || (r < 0 && errno != EINTR))
            return NULL; /* readable, closed, or an error the read reports */
    }
}

void kernel_proc_spin(kernel_proc *k, int on) { k->spin = on; }

/* Reads one frame's payload into k->reply. */
static loom_error *recv_frame(kernel_proc *k, uint32_t len, uint64_t deadline)
{
    if (len < 9 || len > WIRE_MAX_FRAME)
        return loom_err(LOOM_E_INTERNAL, "the kernel process sent a frame of %u bytes", len);
    if (len > k->reply_cap) {
        char *grown = realloc(k->reply, len);
        if (!grown)
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        k->reply = grown;
        k->reply_cap = len;
    }
    return supervise_recv(&k->child, k->reply, len, deadline);
}

static int build_argv(const kernel_proc_spec *s, char **argv, char (*num)[32], char (*env)[1200])
{
    int n = 0;
    argv[n++] = (char *)s->binary;
    argv[n++] = "kernel";
    argv[n++] = "run";
    argv[n++] = "--dir";
    argv[n++] = (char *)s->model_dir;
    argv[n++] = "--runtime";
    argv[n++] = (char *)model_runtime_name(s->model->runtime);
    if (s->model->kernel_path[0]) {
        argv[n++] = "--kernel";
        argv[n++] = (char *)s->model->kernel_path;
    }
    if (s->model->weight_path[0]) {
        argv[n++] = "--weights";
        argv[n++] = (char *)s->model->weight_path;
    }
    snprintf(num[0], 32, "%d", s->device_kind);
    snprintf(num[1], 32, "%d", s->device_index);
    argv[n++] = "--device-kind";
    argv[n++] = num[0];
    argv[n++] = "--device-index";
    argv[n++] = num[1];
    int e = 0;
    for (int i = 0; i < s->model->nenv; i++, e++) {
        snprintf(env[e], 1200, "%s=%s", s->model->env[i].name, s->model->env[i].value);
        argv[n++] = "--env";
        argv[n++] = env[e];
    }
    for (int i = 0; i < s->nenv; i++, e++) {
        snprintf(env[e], 1200, "%s=%s", s->env[i].name, s->env[i].value);
        argv[n++] = "--env";
        argv[n++] = env[e];
    }
    argv[n] = NULL;
    return n;
}

static loom_error *wait_ready(kernel_proc *k, unsigned timeout_ms)
{
    uint64_t deadline = supervise_deadline_in(timeout_ms);
    uint32_t len = 0;
    int fd = -1;
    loom_error *e = recv_ready_length(k, &len, &fd, deadline);
    if (!e)
        e = recv_frame(k, len, deadline);
    if (e) {
        if (fd >= 0)
            close(fd);
        return e;
    }
    wire_reader r = {.p = k->reply, .left = len};
    uint8_t status = wire_get_u8(&r);
    int32_t code = wire_get_i32(&r);
    const char *message = wire_get_str(&r);
    if (status != 0 || r.bad || fd < 0) {
        if (fd >= 0)
            close(fd);
        return loom_err(code ? code : LOOM_E_INTERNAL, "%s",
                        message && !r.bad ? message : "the kernel process sent a malformed reply");
    }
    k->arena = mmap(NULL, KERNEL_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (k->arena == MAP_FAILED) {
        k->arena = NULL;
        return loom_err(LOOM_E_INTERNAL, "cannot map the kernel's arena: %s", strerror(errno));
    }
    return NULL;
}

loom_error *kernel_proc_start(const kernel_proc_spec *spec, kernel_proc **out)
{
    *out = NULL;
    kernel_proc *k = calloc(1, sizeof *k);
    if (!k)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    k->child.pid = -1;
    k->child.fd = -1;
    k->child.kind = "kernel";
    k->spin = 1;
    k->tensors = spec->model->protocol == MODEL_PROTOCOL_V2;
    char *argv[MAX_ARGS], num[2][32];
    char(*env)[1200] = calloc(2 * MODEL_ENV_MAX, 1200);
    if (!env) {
        free(k);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    build_argv(spec, argv, num, env);
    /* A registered kernel's file lies outside the model (HOME/plugins/). */
    const char *read[] = {spec->model_dir,
                          spec->model->kernel_path[0] ? spec->model->kernel_path : NULL, NULL};
    job_sandbox_job box = {.user = spec->user, .exec_dir = spec->work_dir, .read = read};
    char **confined = NULL;
    /* A job's environment (util/job_env.h), not the host's; the model's
     * variables come as --env. */
    char **envp = job_env_build(spec->work_dir, NULL, 0);
    loom_error *e = envp ? job_sandbox_wrap(&box, argv, &confined)
                         : loom_err(LOOM_E_INTERNAL, "out of memory");
    if (!e)
        e = supervise_start_env(&k->child, confined ? confined : argv, envp, spec->output);
    job_sandbox_argv_free(confined);
    job_env_free(envp);
    free(env);
    if (!e)
        e = wait_ready(k, spec->start_timeout_ms);
    if (e) {
        kernel_proc_stop(k);
        return e;
    }
    *out = k;
    return NULL;
}

void kernel_proc_stop(kernel_proc *k)
{
    if (!k)
        return;
    supervise_stop(&k->child, STOP_GRACE_MS);
    if (k->arena)
        munmap(k->arena, KERNEL_ARENA_SIZE);
    wire_free(&k->frame);
    free(k->reply);
    free(k);
}

static loom_error *read_done(kernel_proc *k, kernel_task *tasks, uint32_t n, uint32_t len)
{
    wire_reader r = {.p = k->reply, .left = len};
    uint8_t status = wire_get_u8(&r);
    uint32_t count = wire_get_u32(&r);
    if (r.bad || status != 0 || count != n)
        return loom_err(LOOM_E_INTERNAL, "the kernel process answered %u of %u requests", count, n);
    for (uint32_t i = 0; i < n; i++) {
        kernel_task *t = &tasks[i];
        t->status = wire_get_i32(&r);
        const char *type = wire_get_str(&r);
        uint64_t off = wire_get_u64(&r), alen = wire_get_u64(&r);
        if (r.bad || off > KERNEL_ARENA_REGION || alen > KERNEL_ARENA_REGION - off)
            return loom_err(LOOM_E_INTERNAL, "the kernel process sent a malformed answer");
        kernel_content_type_set(t->content_type, type);
        t->answer = k->arena + (1 + (size_t)k->region) * KERNEL_ARENA_REGION + off;
        t->answer_len = (size_t)alen;
    }
    return NULL;
}

/* After a failed exchange: the child is killed, and the error says how. */
static loom_error *child_failed(kernel_proc *k, loom_error *e)
{
    char how[128] = "";
    int late = loom_err_code(e) == LOOM_E_DEADLINE;
    supervise_kill(&k->child, how, sizeof how);
    k->in_flight = 0;
    loom_error *why = late ? loom_err(LOOM_E_DEADLINE, "the kernel did not answer within "
                                      "task_execution_timeout: its process was killed")
                           : loom_err(LOOM_E_UNAVAILABLE, "the kernel process failed (%s%s%s)",
                                      loom_err_message(e), how[0] ? "; " : "", how);
    loom_err_free(e);
    return why;
}

loom_error *kernel_proc_send(kernel_proc *k, const kernel_task *tasks, uint32_t n,
                             uint64_t deadline_ns)
{
    if (n == 0 || n > KERNEL_BATCH_MAX)
        return loom_err(LOOM_E_INVALID, "a batch holds 1 to %d requests", KERNEL_BATCH_MAX);
    if (k->in_flight)
        return loom_err(LOOM_E_CONFLICT, "a batch is already in flight: collect it first");
    /* The other answer region than the last batch's, whose answers the
     * caller may still be handing out. */
    uint8_t region = (uint8_t)(k->region ^ 1);
    wire_buf *f = &k->frame; /* its buffer is reused batch after batch */
    wire_begin(f);
    wire_put_u8(f, KERNEL_OP_EXECUTE);
    wire_put_u8(f, region);
    wire_put_u8(f, (uint8_t)k->tensors);
    wire_put_u32(f, n);
    size_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        off = (off + 7) & ~(size_t)7; /* a pack's data aligned for its type */
        if (off > KERNEL_ARENA_REGION || tasks[i].len > KERNEL_ARENA_REGION - off)
            return loom_err(LOOM_E_TOO_LARGE, "a batch's bodies exceed %zu bytes",
                            KERNEL_ARENA_REGION);
        memcpy(k->arena + off, tasks[i].body, tasks[i].len);
        wire_put_u64(f, off);
        wire_put_u64(f, tasks[i].len);
        off += tasks[i].len;
    }
    if (wire_finish(f) != 0)
        return loom_err(LOOM_E_INTERNAL, "cannot build the batch frame");
    loom_error *e = supervise_send(&k->child, f->data, f->len, deadline_ns);
    if (e)
        return child_failed(k, e);
    k->in_flight = 1;
    k->sent = n;
    k->region = region;
    return NULL;
}

loom_error *kernel_proc_collect(kernel_proc *k, kernel_task *tasks, uint32_t n,
                                uint64_t deadline_ns)
{
    if (!k->in_flight || k->sent != n)
        return loom_err(LOOM_E_CONFLICT, "no batch of %u requests is in flight", n);
    uint32_t len = 0;
    loom_error *e = k->spin ? NULL : await_answer(k, deadline_ns);
    if (!e)
        e = supervise_recv(&k->child, &len, sizeof len, deadline_ns);
    if (!e)
        e = recv_frame(k, len, deadline_ns);
    if (!e)
        e = read_done(k, tasks, n, len);
    if (e)
        return child_failed(k, e);
    k->in_flight = 0;
    return NULL;
}

loom_error *kernel_proc_execute(kernel_proc *k, kernel_task *tasks, uint32_t n,
                                uint64_t deadline_ns)
{
    loom_error *e = kernel_proc_send(k, tasks, n, deadline_ns);
    return e ? e : kernel_proc_collect(k, tasks, n, deadline_ns);
}
