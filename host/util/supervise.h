/*
 * util/supervise.h - children the host runs code in and must survive: a
 * child started with one end of a socket pair as its fd 3, I/O on that
 * socket bounded by a wall-clock deadline, and a kill that always reaps.
 * The host never trusts such a child to exit or answer: every wait has a
 * deadline and every overrun ends in SIGKILL. Used by the plugin host
 * (plugin/plugin_proc.h); the worker supervision can share it.
 */
#ifndef LOOM_UTIL_SUPERVISE_H
#define LOOM_UTIL_SUPERVISE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"
#include "util/proc_group.h"

/* The fd a supervised child finds its socket on. */
#define SUPERVISE_CHILD_FD 3

typedef struct supervised {
    pid_t pid; /* -1 when not running */
    int fd;    /* the host's end of the socket, -1 when not running */
    /* Set before starting: the child runs in a process group of its own
     * (util/proc_group.h) named after `kind` ("plugin-host", "kernel";
     * NULL: "child") with these limits, ended with it. */
    const char *kind;
    proc_group_limits limits;
    proc_group group;
} supervised;

/* Starts argv (argv[0] a path) with stdin /dev/null, stdout and stderr
 * appended to `output` (NULL: inherited), a socket pair's other end as
 * SUPERVISE_CHILD_FD, in its own process group (and cgroup, where the host
 * has them), with the host's environment. */
loom_error *supervise_start(supervised *child, char *const argv[], const char *output);
/* The same with the environment envp instead of the host's. */
loom_error *supervise_start_env(supervised *child, char *const argv[], char *const envp[],
                                const char *output);

/* The same with stdout and stderr on output_fd (a pipe's write end, say;
 * the caller keeps and closes it). */
loom_error *supervise_start_fd(supervised *child, char *const argv[], char *const envp[],
                               int output_fd);

/* Writes all of buf, or fails: LOOM_E_DEADLINE past deadline_ns (a
 * CLOCK_MONOTONIC time), LOOM_E_UNAVAILABLE when the child closed its end. */
loom_error *supervise_send(supervised *child, const void *buf, size_t len, uint64_t deadline_ns);
/* Reads exactly len bytes, with the same failures. */
loom_error *supervise_recv(supervised *child, void *buf, size_t len, uint64_t deadline_ns);

/* SIGKILLs the child's process group and cgroup, reaps it, closes the socket, and
 * describes how it ended ("killed by signal 11 (Segmentation fault)") in
 * `how` when given. Safe on a child that is not running. */
void supervise_kill(supervised *child, char *how, size_t howlen);

/* Closes the host's end (the child's cue to finish), gives the child up to
 * grace_ms to exit, then kills it as supervise_kill does. */
void supervise_stop(supervised *child, unsigned grace_ms);

/* The CLOCK_MONOTONIC time `ms` from now, in ns. */
uint64_t supervise_deadline_in(unsigned ms);

/* Waits up to max_us for `fd` to become readable by polling without
 * sleeping. A call across the process boundary costs two wake-ups of a
 * sleeping process otherwise, each tens of microseconds on an idle
 * virtual machine; the side about to hear back (the host after a request,
 * the child after a reply, when calls come in bursts) spins a little first.
 * Returns 1 when readable (or closed), 0 when the time ran out. */
int supervise_spin_readable(int fd, unsigned max_us);
#define SUPERVISE_SPIN_US 200

/* In the child: lowers its priority (nice 10), caps its address space
 * (bytes, 0 = none) and CPU time (seconds, 0 = none). Returns 0, or -1 with errno. An address-space cap
 * is skipped in sanitizer builds, whose shadow memory needs terabytes of
 * address space. */
int supervise_limit_self(uint64_t address_space_bytes, unsigned cpu_seconds);

#endif
