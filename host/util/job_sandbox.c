/* util/job_sandbox.c - see job_sandbox.h. */
#include "util/job_sandbox.h"
#include "util/fs.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/job_env.h"
#include "util/log.h"
#include "util/sandbox.h"

/* Not /tmp (a job gets its own, in its exec folder), not /home, /root,
 * /srv, /var or /dev/shm: whatever the host or other users keep there. */
const char *const job_sandbox_system_read[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    "/proc", "/sys", "/run/systemd/resolve", NULL};
const char *const job_sandbox_devices[] = {
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
    "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
    "/dev/nvidia-caps", "/dev/dri", NULL};

static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static int configured;
static job_sandbox_config config;
static char config_binary[PATH_MAX], config_install[PATH_MAX];

void job_sandbox_configure(const job_sandbox_config *cfg)
{
    pthread_mutex_lock(&config_lock);
    configured = cfg != NULL;
    if (cfg) {
        config = *cfg;
        if (cfg->loom_binary)
            snprintf(config_binary, sizeof config_binary, "%s", cfg->loom_binary);
        else
            fs_self_exe(config_binary, sizeof config_binary);
        config_install[0] = 0;
        if (cfg->install_dir)
            snprintf(config_install, sizeof config_install, "%s", cfg->install_dir);
        config.loom_binary = config_binary;
        config.install_dir = config_install;
    }
    pthread_mutex_unlock(&config_lock);
}

void job_sandbox_install_dir(char *out, size_t outlen)
{
    pthread_mutex_lock(&config_lock);
    int have = configured && config_install[0];
    if (have)
        snprintf(out, outlen, "%s", config_install);
    pthread_mutex_unlock(&config_lock);
    if (have)
        return;
    char exe[PATH_MAX];
    fs_self_exe(exe, sizeof exe);
    /* PREFIX/bin/loom -> PREFIX (the build tree has the same shape). */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (slash && slash != exe)
            *slash = 0;
    }
    snprintf(out, outlen, "%s", exe[0] == '/' ? exe : "/usr/local");
}

loom_error *job_sandbox_account(const char *user, int64_t user_id, uid_t *uid, gid_t *gid)
{
    pthread_mutex_lock(&config_lock);
    job_sandbox_config c = config;
    int on = configured && config.accounts;
    pthread_mutex_unlock(&config_lock);
    if (!on)
        return loom_err(LOOM_E_UNSUPPORTED, "jobs do not run under accounts of their own");
    int64_t id = user ? user_id : 0; /* no user: the plugin account */
    loom_error *e = id > 0 || !user ? NULL
                    : c.user_id ? c.user_id(c.user_ctx, user, &id)
                                : loom_err(LOOM_E_INTERNAL, "no user directory to map ids");
    if (e)
        return loom_err_wrap(e, "the account of a job");
    if (id < 0 || (uint64_t)id > (uint64_t)(c.uid_last - c.uid_first))
        return loom_err(LOOM_E_LIMIT,
                        "user %s: id %lld does not fit the job uid range %u-%u", user,
                        (long long)id, (unsigned)c.uid_first, (unsigned)c.uid_last);
    *uid = c.uid_first + (uid_t)id;
    *gid = (gid_t)*uid;
    return NULL;
}

loom_error *job_sandbox_plugin_account(uid_t *uid, gid_t *gid)
{
    return job_sandbox_account(NULL, 0, uid, gid);
}

/* ---- the confinement step's argv ----------------------------------------- */

typedef struct argv_builder {
    char **v;
    size_t n, cap;
    int failed;
} argv_builder;

static void push(argv_builder *b, const char *s)
{
    if (b->failed)
        return;
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char **grown = realloc(b->v, cap * sizeof *grown);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->v = grown;
        b->cap = cap;
    }
    b->v[b->n] = strdup(s);
    if (!b->v[b->n])
        b->failed = 1;
    else
        b->v[++b->n] = NULL;
}

static void push_all(argv_builder *b, const char *flag, const char *const *paths)
{
    for (const char *const *p = paths; p && *p; p++) {
        push(b, flag);
        push(b, *p);
    }
}

static void push_json_paths(argv_builder *b, const char *json)
{
    cJSON *list = json ? cJSON_Parse(json) : NULL, *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(item, "path");
        if (cJSON_IsString(path) && path->valuestring[0] == '/') {
            push(b, "--read");
            push(b, path->valuestring);
        }
    }
    cJSON_Delete(list);
}

void job_sandbox_argv_free(char **argv)
{
    for (char **p = argv; p && *p; p++)
        free(*p);
    free(argv);
}

loom_error *job_sandbox_wrap(const job_sandbox_job *job, char *const *argv, char ***out)
{
    *out = NULL;
    pthread_mutex_lock(&config_lock);
    int on = configured, accounts = config.accounts;
    char binary[PATH_MAX];
    snprintf(binary, sizeof binary, "%s", config_binary);
    pthread_mutex_unlock(&config_lock);
    if (!on)
        return NULL;
    char install[PATH_MAX], ids[2][24], tmp[PATH_MAX + 8];
    job_sandbox_install_dir(install, sizeof install);
    argv_builder b = {0};
    push(&b, binary);
    push(&b, "confine");
    push(&b, "--system");
    const char *own[] = {job->exec_dir, NULL};
    push_all(&b, "--write", own);
    push_all(&b, "--write", job->write);
    const char *reads[] = {install, binary, job->data_dir, NULL};
    push_all(&b, "--read", reads);
    push_all(&b, "--read", job->read);
    push_json_paths(&b, job->read_json);
    if (job->exec_dir) {
        snprintf(tmp, sizeof tmp, "%s/tmp", job->exec_dir);
        push(&b, "--tmpdir");
        push(&b, tmp);
    }
    if (accounts) {
        uid_t uid;
        gid_t gid;
        loom_error *e = job_sandbox_account(job->user, job->user_id, &uid, &gid);
        if (e) {
            job_sandbox_argv_free(b.v);
            return e;
        }
        snprintf(ids[0], sizeof ids[0], "%u", (unsigned)uid);
        snprintf(ids[1], sizeof ids[1], "%u", (unsigned)gid);
        push(&b, "--uid");
        push(&b, ids[0]);
        push(&b, "--gid");
        push(&b, ids[1]);
    }
    push(&b, "--");
    for (char *const *a = argv; *a; a++)
        push(&b, *a);
    if (b.failed) {
        job_sandbox_argv_free(b.v);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    *out = b.v;
    return NULL;
}

loom_error *job_sandbox_confine_spec(const job_sandbox_job *job, spawn_spec *spec,
                                     job_sandbox_held *held)
{
    static char *const empty_env[] = {NULL};
    held->argv = NULL;
    held->env_fd = -1;
    char **wrapped = NULL;
    loom_error *e = job_sandbox_wrap(job, spec->argv, &wrapped);
    if (e || !wrapped)
        return e;
    /* `--env-fd N -- PROGRAM`: before the separator the wrap put. */
    size_t n = 0, sep = 0;
    for (char **a = wrapped; *a; a++, n++)
        if (!sep && !strcmp(*a, "--"))
            sep = n;
    char **argv = calloc(n + 3, sizeof *argv);
    int fd = argv ? job_env_to_fd(spec->envp) : -1;
    char *flag = strdup("--env-fd"), *num = malloc(16);
    if (!argv || fd < 0 || !flag || !num) {
        e = loom_err(LOOM_E_INTERNAL, "cannot hand the job its environment: %s",
                     strerror(errno ? errno : ENOMEM));
        if (fd >= 0)
            close(fd);
        free(argv);
        free(flag);
        free(num);
        job_sandbox_argv_free(wrapped);
        return e;
    }
    snprintf(num, 16, "%d", SPAWN_PASS_FD);
    memcpy(argv, wrapped, sep * sizeof *argv);
    argv[sep] = flag;
    argv[sep + 1] = num;
    memcpy(argv + sep + 2, wrapped + sep, (n - sep) * sizeof *argv);
    free(wrapped); /* its strings now belong to argv */
    held->argv = argv;
    held->env_fd = fd;
    spec->argv = argv;
    spec->envp = empty_env;
    spec->pass_fd = fd;
    return NULL;
}

void job_sandbox_release(job_sandbox_held *held)
{
    job_sandbox_argv_free(held->argv);
    held->argv = NULL;
    if (held->env_fd >= 0)
        close(held->env_fd);
    held->env_fd = -1;
}

/* ---- the state home ------------------------------------------------------ */

static loom_error *set_mode(const char *home, const char *name, mode_t mode, int required)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", home, name[0] ? "/" : "", name);
    struct stat st;
    if (lstat(path, &st) != 0 && !required)
        return NULL;
    if (chmod(path, mode) == 0)
        return NULL;
    if (required)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot set mode %04o: %s", path, (unsigned)mode,
                        strerror(errno));
    /* Another user's file in the home (say, root's credentials): the
     * home's own mode still hides it, and Landlock does from jobs. */
    log_warn("%s: cannot set mode %04o: %s", path, (unsigned)mode, strerror(errno));
    return NULL;
}

/* Every top-level entry of the state home and its mode (README's table):
 * jobs under accounts of their own reach what they need by name and list
 * nothing; the rest is the host's alone. Folders are made when missing, so
 * no service creates one with a wider mode first. */
static const struct home_entry {
    const char *name;
    mode_t mode;
    int folder;
    int jobs_reach; /* under the files' root (--shared-dir), not the home */
} home_entries[] = {
    {"loom.db", 0600, 0, 0}, {"loom.db-wal", 0600, 0, 0}, {"loom.db-shm", 0600, 0, 0},
    {"loom.db-journal", 0600, 0, 0}, {"loom.db-reserve", 0600, 0, 0}, {"loom.log", 0600, 0, 0},
    {"loom.lock", 0600, 0, 0}, {"credentials", 0600, 0, 0}, {"host", 0600, 0, 0},
    {"execs", 0711, 1, 1},      /* each exec's folder: 0700, its user's account */
    {"plugins", 0711, 1, 1},    /* a job reads the plugin file it runs, by name */
    {"data", 0755, 1, 1},       /* the data store every job may read */
    {"models", 0711, 1, 1},     /* a kernel reaches its own model (job_sandbox_share) */
    /* each task's and optimizer's folder: group its owner's account, 0750
     * (job_sandbox_share), an optimizer published 0755 */
    {"hpo", 0711, 1, 1},        {"algorithms", 0711, 1, 1}, {"uploads", 0700, 1, 0},
};

loom_error *job_sandbox_secure_home(const char *home, const char *files, int accounts)
{
    int apart = files && strcmp(files, home) != 0;
    files = apart ? files : home;
    /* With the job files elsewhere, no job needs to pass through the home. */
    loom_error *e = set_mode(home, "", accounts && !apart ? 0711 : 0700, 1);
    if (!e && apart)
        e = set_mode(files, "", accounts ? 0711 : 0700, 1);
    char dir[PATH_MAX];
    for (size_t i = 0; !e && i < sizeof home_entries / sizeof *home_entries; i++) {
        const struct home_entry *h = &home_entries[i];
        const char *root = h->jobs_reach ? files : home;
        snprintf(dir, sizeof dir, "%s/%s", root, h->name);
        if (h->folder && mkdir(dir, h->mode) != 0 && errno != EEXIST)
            return loom_err(LOOM_E_INTERNAL, "%s: cannot create: %s", dir, strerror(errno));
        e = set_mode(root, h->name, h->mode, 0);
    }
    snprintf(dir, sizeof dir, "%s/plugins", files);
    DIR *d = e ? NULL : opendir(dir);
    struct dirent *ent;
    /* A job's uid reads the one plugin file it runs, by name. */
    while (d && !e && (ent = readdir(d)))
        if (ent->d_name[0] != '.')
            e = set_mode(dir, ent->d_name, 0644, 0);
    if (d)
        closedir(d);
    /* Tuning tasks' and optimizers' folders are their owners' alone until a
     * task shares one again (an optimizer published is opened to all then):
     * an older home's wider ones are closed to others now. */
    static const char *const owned[] = {"hpo", "algorithms"};
    for (size_t i = 0; !e && i < sizeof owned / sizeof *owned; i++) {
        snprintf(dir, sizeof dir, "%s/%s", files, owned[i]);
        d = opendir(dir);
        while (d && (ent = readdir(d))) {
            struct stat st;
            if (ent->d_name[0] != '.' &&
                fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISDIR(st.st_mode) && (st.st_mode & 0007))
                e = set_mode(dir, ent->d_name, st.st_mode & 0770, 0);
        }
        if (d)
            closedir(d);
    }
    return e;
}

loom_error *job_sandbox_share(const char *dir, const char *user, int64_t user_id)
{
    uid_t uid;
    gid_t gid;
    int accounts = 0;
    pthread_mutex_lock(&config_lock);
    accounts = configured && config.accounts;
    pthread_mutex_unlock(&config_lock);
    loom_error *e = accounts ? job_sandbox_account(user, user_id, &uid, &gid) : NULL;
    if (!e && accounts && lchown(dir, (uid_t)-1, gid) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot give it to gid %u: %s", dir, (unsigned)gid,
                     strerror(errno));
    if (!e && chmod(dir, accounts ? 0750 : 0700) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot set its mode: %s", dir, strerror(errno));
    return e;
}

/* Whether path lies beneath (or is) dir. */
static int beneath(const char *path, const char *dir);

loom_error *job_sandbox_files_dir_valid(const char *dir, const char *home)
{
    char real[PATH_MAX], real_home[PATH_MAX];
    struct stat st;
    if (dir[0] != '/')
        return loom_err(LOOM_E_INVALID, "--shared-dir %s: expected an absolute path", dir);
    if (!realpath(dir, real) || stat(real, &st) != 0)
        return loom_err(LOOM_E_INVALID,
                        "--shared-dir %s: %s (it is not made here: mount the shared file "
                        "system there first)", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return loom_err(LOOM_E_INVALID, "--shared-dir %s: not a directory", dir);
    if (st.st_uid != geteuid() || (st.st_mode & 0022))
        return loom_err(LOOM_E_INVALID,
                        "--shared-dir %s: owned by uid %u, mode %04o: expected this host's "
                        "user (uid %u) as its owner and writable by no one else", dir,
                        (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
    if (realpath(home, real_home) && (beneath(real, real_home) || beneath(real_home, real)))
        return loom_err(LOOM_E_INVALID,
                        "--shared-dir %s: the home %s lies %s it: expected a folder apart "
                        "from the home, whose state nodes must not see", dir, home,
                        beneath(real, real_home) ? "around" : "beneath");
    return NULL;
}

loom_error *job_sandbox_reachable(const char *home)
{
    char path[PATH_MAX];
    if (!realpath(home, path))
        return loom_err_sys(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INTERNAL, errno, "%s",
                            home);
    /* Each folder above the home (the home itself gets 0711). */
    for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/')) {
        *slash = 0;
        const char *dir = path[0] ? path : "/";
        struct stat st;
        if (stat(dir, &st) != 0)
            return loom_err_sys(LOOM_E_INTERNAL, errno, "%s", dir);
        if (!(st.st_mode & S_IXOTH))
            return loom_err(LOOM_E_FORBIDDEN, "%s (mode %04o) keeps other users out", dir,
                            (unsigned)(st.st_mode & 07777));
        if (!path[0])
            break;
    }
    return NULL;
}

/* ---- what the host says at start ----------------------------------------- */

/* Whether path lies beneath (or is) dir. */
static int beneath(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

int job_sandbox_describe(const char *home, char *out, size_t outlen)
{
    int abi = sandbox_landlock_abi();
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.release, sizeof u.release, "?");
    char install[PATH_MAX], real_home[PATH_MAX];
    job_sandbox_install_dir(install, sizeof install);
    if (!realpath(home, real_home))
        snprintf(real_home, sizeof real_home, "%s", home);
    const char *exposed = beneath(real_home, install) ? install : NULL;
    for (const char *const *p = job_sandbox_system_read; !exposed && *p; p++)
        if (beneath(real_home, *p))
            exposed = *p;
    pthread_mutex_lock(&config_lock);
    int accounts = configured && config.accounts;
    unsigned first = config.uid_first, last = config.uid_last;
    pthread_mutex_unlock(&config_lock);
    int used = snprintf(out, outlen, "jobs: ");
    if (abi > 0)
        used += snprintf(out + used, outlen - (size_t)used, "Landlock ABI %d", abi);
    else
        used += snprintf(out + used, outlen - (size_t)used,
                         "no Landlock (kernel %s): jobs can reach this home", u.release);
    if (exposed && abi > 0)
        used += snprintf(out + used, outlen - (size_t)used,
                         " (but the home lies beneath %s, which jobs may read)", exposed);
    if (accounts)
        snprintf(out + used, outlen - (size_t)used, "; a uid per user from %u-%u", first, last);
    else if (geteuid() != 0)
        snprintf(out + used, outlen - (size_t)used,
                 "; run as this host's user (not root: no accounts of their own)");
    else {
        loom_error *unreachable = job_sandbox_reachable(home);
        snprintf(out + used, outlen - (size_t)used, "; run as root, no accounts of their own: %s",
                 unreachable ? loom_err_message(unreachable) : "--job-uid-range none");
        loom_err_free(unreachable);
    }
    return abi > 0 && !exposed && (accounts || geteuid() != 0);
}
