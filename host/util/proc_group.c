/* util/proc_group.c - see proc_group.h. */
#include "util/proc_group.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/log.h"

#define GROUP_KILL_WAIT_MS 2000
#define SWEEP_WAIT_MS 3000

static const char *const hier_name[PROC_GROUP_NHIER] = {"unified", "pids", "memory"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The host's parent folder in each hierarchy; "" when that one is unused. */
static char parent[PROC_GROUP_NHIER][PATH_MAX];
static char why_not[256] = "groups were not set up";
static unsigned long next_id;
static proc_group_limits defaults;

/* ---- small file helpers -------------------------------------------------- */

static int write_text(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The value after `key ` in a flat-keyed file (pids.events, memory.events,
 * memory.oom_control); -1 when absent. */
static long long keyed_value(const char *dir, const char *file, const char *key)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    long long v = -1;
    size_t klen = strlen(key);
    while (v < 0 && fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ' ')
            v = atoll(line + klen + 1);
    fclose(f);
    return v;
}

static void group_dir(int h, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%s", parent[h], name);
}

/* The host's own cgroup in a hierarchy: `controller` NULL for the unified
 * one ("0::/path"), else a v1 line listing it. */
static int own_cgroup(const char *controller, char *out, size_t outlen)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char line[PATH_MAX + 128];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = 0;
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!controller)
            found = !strcmp(line, "0") && !*ctrls;
        else
            for (char *save, *t = strtok_r((char *)ctrls, ",", &save); t && !found;
                 t = strtok_r(NULL, ",", &save))
                found = !strcmp(t, controller);
        if (found)
            snprintf(out, outlen, "%s", strcmp(path, "/") ? path : "");
    }
    fclose(f);
    return found ? 0 : -1;
}

/* ---- ending groups ------------------------------------------------------- */

/* How many processes a folder's cgroup.procs lists; with `kill_them`, each
 * is sent SIGKILL. */
static int listed(const char *dir, int kill_them)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1) {
        if (kill_them && pid > 0 && pid != (long)getpid())
            kill((pid_t)pid, SIGKILL);
        n++;
    }
    fclose(f);
    return n;
}

/* Ends the group `name` in every hierarchy: cgroup.kill where the unified
 * hierarchy has it (atomic, forks included); else pids.max 0 so nothing
 * forks, a freeze where there is one, and SIGKILL to every member until
 * none is left. Returns 1 when empty within wait_ms. */
static int kill_named(const char *name, unsigned wait_ms)
{
    char dir[PROC_GROUP_NHIER][PATH_MAX + 80];
    for (int h = 0; h < PROC_GROUP_NHIER; h++)
        if (parent[h][0])
            group_dir(h, name, dir[h], sizeof dir[h]);
    if (parent[PROC_GROUP_PIDS][0])
        write_text(dir[PROC_GROUP_PIDS], "pids.max", "0");
    int atomic = parent[PROC_GROUP_UNIFIED][0] &&
                 write_text(dir[PROC_GROUP_UNIFIED], "cgroup.kill", "1") == 0;
    if (!atomic && parent[PROC_GROUP_UNIFIED][0])
        write_text(dir[PROC_GROUP_UNIFIED], "cgroup.freeze", "1");
    int64_t deadline = time_mono_ms() + wait_ms;
    for (;;) {
        int left = 0;
        for (int h = 0; h < PROC_GROUP_NHIER; h++)
            if (parent[h][0])
                left += listed(dir[h], !atomic);
        if (left == 0)
            return 1;
        if (time_mono_ms() >= deadline)
            return 0;
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* Removes the group's folders, retrying while the last members' exits
 * settle. */
static int remove_named(const char *name, unsigned wait_ms)
{
    int64_t deadline = time_mono_ms() + wait_ms;
    int left = 0;
    for (int h = 0; h < PROC_GROUP_NHIER; h++) {
        if (!parent[h][0])
            continue;
        char dir[PATH_MAX + 80];
        group_dir(h, name, dir, sizeof dir);
        while (rmdir(dir) != 0 && errno == EBUSY && time_mono_ms() < deadline) {
            struct timespec pause = {0, 2 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        left += access(dir, F_OK) == 0;
    }
    return left == 0;
}

/* Ends and removes every group under the parent; returns how many. */
static int sweep(void)
{
    int ended = 0, primary = parent[PROC_GROUP_UNIFIED][0] ? PROC_GROUP_UNIFIED : PROC_GROUP_PIDS;
    for (int h = 0; h < PROC_GROUP_NHIER; h++) {
        DIR *d = parent[h][0] ? opendir(parent[h]) : NULL;
        struct dirent *ent;
        while (d && (ent = readdir(d))) {
            if (ent->d_type != DT_DIR || ent->d_name[0] == '.')
                continue;
            char name[sizeof ent->d_name];
            snprintf(name, sizeof name, "%s", ent->d_name);
            if (!kill_named(name, SWEEP_WAIT_MS))
                log_warn("process group %s/%s: members still alive after SIGKILL", parent[h],
                         name);
            ended += h == primary;
            if (!remove_named(name, SWEEP_WAIT_MS))
                log_warn("process group %s/%s: cannot remove: %s", parent[h], name,
                         strerror(errno));
        }
        if (d)
            closedir(d);
    }
    return ended;
}

/* ---- set-up -------------------------------------------------------------- */

/* The folder a hierarchy is mounted at beneath root, or -1 when it is not. */
static int mount_dir(const char *root, int h, char *out, size_t outlen)
{
    char probe[PATH_MAX];
    if (h == PROC_GROUP_UNIFIED) {
        snprintf(out, outlen, "%s/unified", root); /* hybrid */
        snprintf(probe, sizeof probe, "%s/cgroup.controllers", out);
        if (access(probe, F_OK) == 0)
            return 0;
        snprintf(out, outlen, "%s", root); /* cgroup v2 alone */
        snprintf(probe, sizeof probe, "%s/cgroup.controllers", out);
        return access(probe, F_OK) == 0 ? 0 : -1;
    }
    snprintf(out, outlen, "%s/%s", root, hier_name[h]);
    snprintf(probe, sizeof probe, "%s/cgroup.procs", out);
    return access(probe, F_OK) == 0 ? 0 : -1;
}

/* FNV-1a of the home's real path: one parent per home, so hosts with other
 * homes on the machine are never touched. */
static unsigned long long home_hash(const char *home)
{
    char real[PATH_MAX];
    const char *p = realpath(home, real) ? real : home;
    unsigned long long h = 1469598103934665603ULL;
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

int proc_group_setup(const char *home, const char *root)
{
    if (!root)
        root = getenv("LOOM_CGROUP_ROOT");
    if (!root || !*root)
        root = "/sys/fs/cgroup";
    pthread_mutex_lock(&lock);
    char name[32], first_error[200] = "";
    snprintf(name, sizeof name, "loom-%012llx", home_hash(home) & 0xffffffffffffULL);
    for (int h = 0; h < PROC_GROUP_NHIER; h++) {
        char mount[PATH_MAX], own[PATH_MAX] = "";
        parent[h][0] = 0;
        if (mount_dir(root, h, mount, sizeof mount) != 0 ||
            own_cgroup(h == PROC_GROUP_UNIFIED ? NULL : hier_name[h], own, sizeof own) != 0) {
            if (!first_error[0])
                snprintf(first_error, sizeof first_error, "no %s hierarchy under %s",
                         hier_name[h], root);
            continue;
        }
        /* Beneath the host's own group: limits above the host still hold. */
        snprintf(parent[h], sizeof parent[h], "%s%s/%s", mount, own, name);
        if (mkdir(parent[h], 0755) != 0 && errno != EEXIST) {
            if (!first_error[0])
                snprintf(first_error, sizeof first_error, "%.150s: %s", parent[h],
                         strerror(errno));
            parent[h][0] = 0;
        }
    }
    if (!parent[PROC_GROUP_UNIFIED][0] && !parent[PROC_GROUP_PIDS][0]) {
        /* Without either, nothing can list a group's members to end them. */
        snprintf(why_not, sizeof why_not, "%s", first_error[0] ? first_error : "no cgroupfs");
        for (int h = 0; h < PROC_GROUP_NHIER; h++)
            if (parent[h][0])
                rmdir(parent[h]);
        memset(parent, 0, sizeof parent);
        pthread_mutex_unlock(&lock);
        return 0;
    }
    why_not[0] = 0;
    /* cgroup v2 alone: the limits live in the unified group (best effort:
     * the host's own group must delegate the controllers). */
    if (!parent[PROC_GROUP_PIDS][0] || !parent[PROC_GROUP_MEMORY][0])
        write_text(parent[PROC_GROUP_UNIFIED], "cgroup.subtree_control", "+pids +memory");
    int ended = sweep();
    pthread_mutex_unlock(&lock);
    return ended;
}

int proc_group_available(void)
{
    pthread_mutex_lock(&lock);
    int on = parent[PROC_GROUP_UNIFIED][0] || parent[PROC_GROUP_PIDS][0];
    pthread_mutex_unlock(&lock);
    return on;
}

void proc_group_describe(char *out, size_t outlen)
{
    pthread_mutex_lock(&lock);
    const char *u = parent[PROC_GROUP_UNIFIED], *p = parent[PROC_GROUP_PIDS],
               *m = parent[PROC_GROUP_MEMORY];
    if (!u[0] && !p[0])
        snprintf(out, outlen,
                 "processes: no cgroups (%s): ended by process group only, so a job's "
                 "detached processes can outlive it; no process or memory limits",
                 why_not);
    else
        snprintf(out, outlen,
                 "processes: a cgroup per exec, kernel and plugin call under %s (%s); "
                 "limits: %s%s%s",
                 u[0] ? u : p, u[0] ? "cgroup.kill" : "SIGKILL to each member",
                 p[0] || u[0] ? "processes" : "", m[0] || u[0] ? ", memory" : "",
                 ", file size");
    pthread_mutex_unlock(&lock);
}

void proc_group_teardown(void)
{
    pthread_mutex_lock(&lock);
    sweep();
    for (int h = 0; h < PROC_GROUP_NHIER; h++)
        if (parent[h][0] && rmdir(parent[h]) != 0 && errno != ENOENT)
            log_warn("%s: cannot remove: %s", parent[h], strerror(errno));
    memset(parent, 0, sizeof parent);
    snprintf(why_not, sizeof why_not, "the host stopped");
    pthread_mutex_unlock(&lock);
}

/* ---- one group ----------------------------------------------------------- */

void proc_group_set_defaults(const proc_group_limits *limits)
{
    pthread_mutex_lock(&lock);
    defaults = *limits;
    pthread_mutex_unlock(&lock);
}

static loom_error *apply_limits(int h, const char *dir, const proc_group_limits *lim)
{
    char value[32];
    const char *file = NULL;
    if (lim->max_procs && (h == PROC_GROUP_PIDS || !parent[PROC_GROUP_PIDS][0])) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)lim->max_procs);
        file = "pids.max";
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof probe, "%s/%s", dir, file);
        if (access(probe, F_OK) == 0 && write_text(dir, file, value) != 0)
            return loom_err(LOOM_E_INTERNAL, "%s/%s: cannot set %s: %s", dir, file, value,
                            strerror(errno));
    }
    if (lim->max_memory_bytes && (h == PROC_GROUP_MEMORY || !parent[PROC_GROUP_MEMORY][0])) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)lim->max_memory_bytes);
        file = h == PROC_GROUP_MEMORY ? "memory.limit_in_bytes" : "memory.max";
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof probe, "%s/%s", dir, file);
        if (access(probe, F_OK) == 0 && write_text(dir, file, value) != 0)
            return loom_err(LOOM_E_INTERNAL, "%s/%s: cannot set %s: %s", dir, file, value,
                            strerror(errno));
    }
    return NULL;
}

loom_error *proc_group_create(proc_group *g, const char *kind, const proc_group_limits *limits)
{
    memset(g, 0, sizeof *g);
    for (int h = 0; h < PROC_GROUP_NHIER; h++)
        g->procs_fd[h] = -1;
    pthread_mutex_lock(&lock);
    if (!parent[PROC_GROUP_UNIFIED][0] && !parent[PROC_GROUP_PIDS][0]) {
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    snprintf(g->name, sizeof g->name, "%.40s-%lu", kind, ++next_id);
    for (char *c = g->name; *c; c++) /* a folder's name, whatever the kind says */
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            *c = '_';
    g->limits = limits ? *limits : defaults;
    loom_error *e = NULL;
    for (int h = 0; h < PROC_GROUP_NHIER && !e; h++) {
        if (!parent[h][0])
            continue;
        char dir[PATH_MAX + 80], procs[PATH_MAX + 96];
        group_dir(h, g->name, dir, sizeof dir);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            e = loom_err(LOOM_E_INTERNAL, "cannot make the process group %s: %s", dir,
                         strerror(errno));
            break;
        }
        e = apply_limits(h, dir, &g->limits);
        snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
        g->procs_fd[h] = e ? -1 : open(procs, O_WRONLY | O_CLOEXEC);
        if (!e && g->procs_fd[h] < 0)
            e = loom_err(LOOM_E_INTERNAL, "%s: %s", procs, strerror(errno));
    }
    g->active = 1;
    pthread_mutex_unlock(&lock);
    if (e)
        proc_group_destroy(g);
    return e;
}

int proc_group_enter(const proc_group *g)
{
    for (int h = 0; g && g->active && h < PROC_GROUP_NHIER; h++)
        if (g->procs_fd[h] >= 0 && write(g->procs_fd[h], "0", 1) != 1)
            return -1;
    return 0;
}

int proc_group_kill(proc_group *g, unsigned wait_ms)
{
    if (!g->active)
        return 1;
    pthread_mutex_lock(&lock);
    int empty = kill_named(g->name, wait_ms);
    pthread_mutex_unlock(&lock);
    return empty;
}

int proc_group_count(const proc_group *g)
{
    if (!g->active)
        return -1;
    pthread_mutex_lock(&lock);
    char dir[PATH_MAX + 80];
    group_dir(parent[PROC_GROUP_UNIFIED][0] ? PROC_GROUP_UNIFIED : PROC_GROUP_PIDS, g->name, dir,
              sizeof dir);
    int n = listed(dir, 0);
    pthread_mutex_unlock(&lock);
    return n;
}

/* A counter in the hierarchy that holds the limit, else the unified one. */
static long long group_counter(const proc_group *g, int h, const char *file, const char *key)
{
    if (!g->active)
        return -1;
    pthread_mutex_lock(&lock);
    char dir[PATH_MAX + 80];
    int where = parent[h][0] ? h : PROC_GROUP_UNIFIED;
    long long v = -1;
    if (parent[where][0]) {
        group_dir(where, g->name, dir, sizeof dir);
        v = keyed_value(dir, where == h ? file : h == PROC_GROUP_MEMORY ? "memory.events"
                                                                        : "pids.events",
                        key);
    }
    pthread_mutex_unlock(&lock);
    return v;
}

int proc_group_memory_exceeded(const proc_group *g)
{
    return g->limits.max_memory_bytes &&
           group_counter(g, PROC_GROUP_MEMORY, "memory.oom_control", "oom_kill") > 0;
}

int proc_group_procs_exceeded(const proc_group *g)
{
    return g->limits.max_procs && group_counter(g, PROC_GROUP_PIDS, "pids.events", "max") > 0;
}

void proc_group_destroy(proc_group *g)
{
    if (!g->active)
        return;
    pthread_mutex_lock(&lock);
    if (!kill_named(g->name, GROUP_KILL_WAIT_MS))
        log_warn("process group %s: members still alive after SIGKILL", g->name);
    if (!remove_named(g->name, GROUP_KILL_WAIT_MS))
        log_warn("process group %s: cannot remove it yet: %s", g->name, strerror(errno));
    pthread_mutex_unlock(&lock);
    for (int h = 0; h < PROC_GROUP_NHIER; h++) {
        if (g->procs_fd[h] >= 0)
            close(g->procs_fd[h]);
        g->procs_fd[h] = -1;
    }
    g->active = 0;
}
