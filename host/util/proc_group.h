/* util/proc_group.h - a container of processes (a cgroup) for each thing
 * the host starts that runs someone's code: an exec's workers, a kernel
 * instance, a plugin-host child, a search process. A child enters its group
 * before its first instruction (util/spawn.h writes its pid into the
 * group's cgroup.procs between fork and exec), so whatever it forks, double
 * forks or detaches with setsid stays inside, and ending the group ends
 * them all.
 *
 * Groups live under one parent of the host's, `loom-<hash of the home>`,
 * beneath the host's own cgroup in each hierarchy used: the unified one
 * (cgroup v2: cgroup.kill) and the v1 `pids` and `memory` controllers
 * (limits). A host that starts finds its parent's groups left by a run that
 * crashed and ends them; a host that stops ends every group. Where no
 * hierarchy is writable (not root, no cgroupfs) groups are inactive and
 * processes are ended by process group only, as proc_group_describe says.
 */
#ifndef LOOM_UTIL_PROC_GROUP_H
#define LOOM_UTIL_PROC_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The hierarchies a group may have a folder in. */
enum { PROC_GROUP_UNIFIED, PROC_GROUP_PIDS, PROC_GROUP_MEMORY, PROC_GROUP_NHIER };

/* Limits applied to a group; 0 leaves one unset. */
typedef struct proc_group_limits {
    uint64_t max_procs;        /* processes and threads (pids.max) */
    uint64_t max_memory_bytes; /* memory.limit_in_bytes (v1) or memory.max */
} proc_group_limits;

typedef struct proc_group {
    int active;                     /* 0: no cgroup (not set up, or unavailable) */
    char name[64];                  /* the folder's name under the parent */
    int procs_fd[PROC_GROUP_NHIER]; /* each folder's cgroup.procs, -1 when absent */
    proc_group_limits limits;       /* what was applied */
} proc_group;

/* A group that is not active, for initialising structs. */
#define PROC_GROUP_NONE                                                                    \
    {                                                                                      \
        .active = 0, .procs_fd = { -1, -1, -1 }                                            \
    }

/* Sets up the host's parent for `home` beneath cgroupfs at `root` (NULL:
 * /sys/fs/cgroup, or $LOOM_CGROUP_ROOT), ending and removing the groups a
 * previous run left under it. Returns how many were ended; groups stay
 * inactive when no hierarchy is writable (proc_group_describe says why). */
int proc_group_setup(const char *home, const char *root);

/* Whether groups are made (setup found a writable hierarchy). */
int proc_group_available(void);

/* One line for the start-up message on what containment processes get. */
void proc_group_describe(char *out, size_t outlen);

/* Ends every group under the host's parent and removes them and the parent
 * (the host's clean shutdown). Groups are inactive afterwards. */
void proc_group_teardown(void);

/* The limits a group made without limits of its own gets (none until
 * set). */
void proc_group_set_defaults(const proc_group_limits *limits);

/* Makes a group named `kind-N` (N unique in this run) with limits (NULL:
 * the defaults). With groups unavailable, *g is made inactive and nothing fails. */
loom_error *proc_group_create(proc_group *g, const char *kind, const proc_group_limits *limits);

/* In a forked child before exec: moves the calling process into g.
 * Async-signal-safe. Returns 0, or -1 with errno. */
int proc_group_enter(const proc_group *g);

/* Ends every process in g (cgroup.kill where the unified hierarchy has it,
 * else no more forks and SIGKILL to each member until none is left) and
 * waits up to `wait_ms` for it to be empty. Returns 1 when it is. */
int proc_group_kill(proc_group *g, unsigned wait_ms);

/* How many processes g holds now (-1 when unknown: inactive). */
int proc_group_count(const proc_group *g);

/* Whether g's memory limit was hit (the kernel refused or reclaimed:
 * memory.failcnt or the OOM killer's count), for naming the limit when a
 * job ends by a kill. */
int proc_group_memory_exceeded(const proc_group *g);
/* Whether a fork in g was refused by its process limit (pids.events). */
int proc_group_procs_exceeded(const proc_group *g);

/* Kills g as proc_group_kill does, removes its folders and closes it;
 * inactive afterwards. A folder that cannot be removed yet is left for the
 * shutdown or the next start. Safe on an inactive group. */
void proc_group_destroy(proc_group *g);

#endif
