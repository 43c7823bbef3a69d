/*
 * exec/exec_wake.c - the supervisor's wait between passes: it sleeps until
 * a launch-style worker exits (a pidfd per live worker turns readable), or
 * someone wakes it (an eventfd: a new exec, a stop), or the supervision
 * interval passes (the fallback, and what notices ended trainers). A
 * worker's exit is then reaped, its devices freed and the next pending exec
 * started at once instead of up to one interval later.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/exec_internal.h"

/* Workers watched by pidfd in one wait; more still end within the
 * supervision interval. */
#define WATCHED_MAX 256

void exec_wake_init(exec_service *es)
{
    es->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void exec_wake_close(exec_service *es)
{
    if (es->wake_fd >= 0)
        close(es->wake_fd);
    es->wake_fd = -1;
}

void exec_wake(exec_service *es)
{
    uint64_t one = 1;
    if (es->wake_fd >= 0 && write(es->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        return; /* the interval still comes */
}

/* pidfds of the live workers not yet reaped (a zombie keeps its pid, so
 * the pid is still this worker's). Call with es->lock. */
static int watch_workers_locked(exec_service *es, struct pollfd *fds, int room)
{
    int n = 0;
    for (running_exec *r = es->running; r && n < room; r = r->next)
        for (int i = 0; !r->pending && i < r->nworkers && n < room; i++) {
            if (r->workers[i].done || r->workers[i].pid <= 0)
                continue;
            int fd = (int)syscall(SYS_pidfd_open, r->workers[i].pid, 0);
            if (fd >= 0)
                fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
        }
    return n;
}

void exec_wait_for_change(exec_service *es, int timeout_ms)
{
    struct pollfd fds[WATCHED_MAX + 1];
    int n = 0;
    if (es->wake_fd >= 0)
        fds[n++] = (struct pollfd){.fd = es->wake_fd, .events = POLLIN};
    int first_pidfd = n;
    pthread_mutex_lock(&es->lock);
    n += watch_workers_locked(es, fds + n, WATCHED_MAX);
    pthread_mutex_unlock(&es->lock);
    if (poll(fds, (nfds_t)n, timeout_ms) > 0 && es->wake_fd >= 0 && fds[0].revents) {
        uint64_t count;
        if (read(es->wake_fd, &count, sizeof count) < 0 && errno != EAGAIN)
            count = 0; /* drained or not, the next poll says */
    }
    for (int i = first_pidfd; i < n; i++)
        close(fds[i].fd);
}
