/* util/supervise.c - see supervise.h. */
#include "util/supervise.h"
#include "util/spawn.h"
#include "util/user_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#if defined(__SANITIZE_ADDRESS__)
#define SUPERVISE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SUPERVISE_SANITIZED 1
#endif
#endif

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t supervise_deadline_in(unsigned ms)
{
    return now_ns() + (uint64_t)ms * 1000000u;
}

loom_error *supervise_start(supervised *child, char *const argv[], const char *output)
{
    return supervise_start_env(child, argv, environ, output);
}

static loom_error *start(supervised *child, char *const argv[], char *const envp[],
                         const char *output, int output_fd);

loom_error *supervise_start_env(supervised *child, char *const argv[], char *const envp[],
                                const char *output)
{
    return start(child, argv, envp, output, -1);
}

loom_error *supervise_start_fd(supervised *child, char *const argv[], char *const envp[],
                               int output_fd)
{
    return start(child, argv, envp, NULL, output_fd);
}

static loom_error *start(supervised *child, char *const argv[], char *const envp[],
                         const char *output, int output_fd)
{
    child->pid = -1;
    child->fd = -1;
    /* The output is often in a user's tree (an exec or tuning folder): the
     * host opens it through util/user_tree, not the child by path; or the
     * caller hands a descriptor (a pipe to the log pump). */
    int out = -1;
    loom_error *e = output ? utree_open_append_path(output, 0644, &out) : NULL;
    if (e)
        return loom_err_wrap(e, "cannot start %s: its output", argv[0]);
    int to = out >= 0 ? out : output_fd;
    int own = child->limits.max_procs || child->limits.max_memory_bytes;
    e = proc_group_create(&child->group, child->kind ? child->kind : "child",
                          own ? &child->limits : NULL);
    int sv[2] = {-1, -1};
    if (!e && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        proc_group_destroy(&child->group);
        e = loom_err(LOOM_E_INTERNAL, "cannot make a socket pair: %s", strerror(errno));
    }
    if (e) {
        if (out >= 0)
            close(out);
        return loom_err_wrap(e, "%s", argv[0]);
    }
    spawn_spec spec = {.argv = argv, .envp = envp, .stdout_fd = to > 0 ? to : 0,
                       .stderr_fd = to > 0 ? to : 0, .pgid = 0, .pass_fd = sv[1],
                       .group = &child->group};
    pid_t pid = -1;
    e = spawn_process(&spec, &pid);
    close(sv[1]);
    if (out >= 0)
        close(out);
    if (e) {
        close(sv[0]);
        proc_group_destroy(&child->group);
        loom_error *why = loom_err(LOOM_E_UNAVAILABLE, "%s", loom_err_message(e));
        loom_err_free(e);
        return why;
    }
    child->pid = pid;
    child->fd = sv[0];
    return NULL;
}

/* Waits until the socket is ready for `events` or the deadline passes. */
static loom_error *wait_ready(supervised *child, short events, uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline_ns)
            return loom_err(LOOM_E_DEADLINE, "no answer within the deadline");
        uint64_t left_ms = (deadline_ns - now + 999999u) / 1000000u;
        struct pollfd p = {.fd = child->fd, .events = events};
        int n = poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms);
        if (n > 0)
            return NULL;
        if (n < 0 && errno != EINTR)
            return loom_err(LOOM_E_INTERNAL, "poll: %s", strerror(errno));
    }
}

loom_error *supervise_send(supervised *child, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(child->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            loom_error *e = wait_ready(child, POLLOUT, deadline_ns);
            if (e)
                return e;
            continue;
        }
        return loom_err(LOOM_E_UNAVAILABLE, "the process closed its socket (%s)",
                        n < 0 ? strerror(errno) : "short write");
    }
    return NULL;
}

int supervise_spin_readable(int fd, unsigned max_us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0)
            return 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 >= (long)max_us)
            return 0;
    }
}

loom_error *supervise_recv(supervised *child, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(child->fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return loom_err(LOOM_E_UNAVAILABLE, "the process closed its socket");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (supervise_spin_readable(child->fd, SUPERVISE_SPIN_US))
                continue;
            loom_error *e = wait_ready(child, POLLIN, deadline_ns);
            if (e)
                return e;
            continue;
        }
        return loom_err(LOOM_E_UNAVAILABLE, "reading from the process: %s", strerror(errno));
    }
    return NULL;
}

void supervise_kill(supervised *child, char *how, size_t howlen)
{
    if (how && howlen)
        how[0] = 0;
    if (child->fd >= 0)
        close(child->fd);
    child->fd = -1;
    if (child->pid <= 0) {
        proc_group_destroy(&child->group);
        return;
    }
    kill(-child->pid, SIGKILL); /* its group: nothing it forked survives */
    kill(child->pid, SIGKILL);
    int status = 0;
    pid_t r;
    do
        r = waitpid(child->pid, &status, 0);
    while (r < 0 && errno == EINTR);
    child->pid = -1;
    proc_group_destroy(&child->group); /* what it detached from its process group */
    if (!how || r < 0)
        return;
    if (WIFSIGNALED(status))
        snprintf(how, howlen, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(how, howlen, "exited with status %d", WEXITSTATUS(status));
}

void supervise_stop(supervised *child, unsigned grace_ms)
{
    if (child->fd >= 0)
        close(child->fd);
    child->fd = -1;
    uint64_t deadline = supervise_deadline_in(grace_ms);
    while (child->pid > 0) {
        int status;
        pid_t r = waitpid(child->pid, &status, WNOHANG);
        if (r == child->pid || (r < 0 && errno != EINTR)) {
            kill(-child->pid, SIGKILL); /* anything it left in its group */
            child->pid = -1;
            proc_group_destroy(&child->group);
            return;
        }
        if (now_ns() >= deadline)
            break;
        struct timespec pause = {0, 1000000}; /* 1 ms */
        nanosleep(&pause, NULL);
    }
    supervise_kill(child, NULL, 0);
}

int supervise_limit_self(uint64_t address_space_bytes, unsigned cpu_seconds)
{
    /* Below the host: a spinning plugin must not slow the host's answers. */
    if (setpriority(PRIO_PROCESS, 0, 10) != 0)
        return -1;
#ifndef SUPERVISE_SANITIZED
    if (address_space_bytes) {
        struct rlimit as = {address_space_bytes, address_space_bytes};
        if (setrlimit(RLIMIT_AS, &as) != 0)
            return -1;
    }
#else
    (void)address_space_bytes;
#endif
    if (cpu_seconds) {
        /* SIGXCPU at the soft limit, SIGKILL one second later. */
        struct rlimit cpu = {cpu_seconds, (rlim_t)cpu_seconds + 1};
        if (setrlimit(RLIMIT_CPU, &cpu) != 0)
            return -1;
    }
    return 0;
}
