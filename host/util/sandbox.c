/* util/sandbox.c - see sandbox.h. */
#include "util/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's Landlock interface is stable; Debian's headers may be older
 * than the running kernel, so the pieces used here are spelled out. */
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_ABI1_ALL ((1ULL << 13) - 1) /* execute .. make_sym */
#define LL_FS_REFER (1ULL << 13)          /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)       /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)      /* ABI 5 */
#define LL_SCOPE_SIGNAL (1ULL << 1)       /* ABI 6 */

/* What a rule on a file (not a directory) may grant. */
#define LL_FILE_RIGHTS \
    (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

int sandbox_landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
}

/* ---- giving a tree to the job's account -------------------------------- */

/* dirfd is open on a directory already given away; its entries follow. The
 * walk goes through file descriptors opened with O_NOFOLLOW, so a link the
 * job planted never leads the walk (running as root) out of the tree. */
static loom_error *chown_entries(int dirfd, const char *shown, uid_t uid, gid_t gid, int depth)
{
    if (depth > 128) {
        close(dirfd);
        return loom_err(LOOM_E_LIMIT, "%s: more than 128 levels of folders", shown);
    }
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return loom_err(LOOM_E_INTERNAL, "%s: cannot list: %s", shown, strerror(errno));
    }
    loom_error *e = NULL;
    struct dirent *ent;
    while (!e && (ent = readdir(d))) {
        const char *n = ent->d_name;
        if (!strcmp(n, ".") || !strcmp(n, ".."))
            continue;
        if (fchownat(dirfd, n, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != ENOENT) {
            e = loom_err(LOOM_E_INTERNAL, "%s/%s: cannot change the owner: %s", shown, n,
                         strerror(errno));
            break;
        }
        int sub = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
            e = chown_entries(sub, shown, uid, gid, depth + 1);
    }
    closedir(d);
    return e;
}

loom_error *sandbox_chown_tree(const char *path, uid_t uid, gid_t gid)
{
    if (fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
        return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INTERNAL,
                        "%s: cannot change the owner: %s", path, strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL; /* a file (or a link): done */
    /* The job's own folder: only its account (and root) may list it. */
    if (fchmod(fd, 0700) != 0) {
        int saved = errno;
        close(fd);
        return loom_err(LOOM_E_INTERNAL, "%s: cannot set mode 0700: %s", path, strerror(saved));
    }
    return chown_entries(fd, path, uid, gid, 0);
}

/* ---- Landlock ----------------------------------------------------------- */

static uint64_t handled_fs(int abi)
{
    uint64_t h = LL_FS_ABI1_ALL;
    if (abi >= 2)
        h |= LL_FS_REFER;
    if (abi >= 3)
        h |= LL_FS_TRUNCATE;
    if (abi >= 5)
        h |= LL_FS_IOCTL_DEV;
    return h;
}

/* Adds a rule granting `rights` beneath path. Missing paths are skipped
 * unless required. */
static loom_error *add_rule(int ruleset, const char *path, uint64_t rights, int required)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (!required && (errno == ENOENT || errno == ENOTDIR))
            return NULL;
        return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INTERNAL, "%s: %s", path,
                        strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        rights &= LL_FILE_RIGHTS;
    struct ll_path_beneath_attr rule = {.allowed_access = rights, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    if (rc != 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot add the Landlock rule: %s", path,
                        strerror(saved));
    return NULL;
}

static loom_error *add_rules(int ruleset, const char *const *paths, uint64_t rights, int required)
{
    for (const char *const *p = paths; p && *p; p++) {
        loom_error *e = add_rule(ruleset, *p, rights, required);
        if (e)
            return e;
    }
    return NULL;
}

/* Builds the ruleset (before the ids change, so paths only root may open
 * can still be named); returns its descriptor in *out. */
static loom_error *landlock_ruleset(const sandbox_spec *s, int abi, int *out)
{
    uint64_t handled = handled_fs(abi);
    struct ll_ruleset_attr attr = {.handled_access_fs = handled,
                                   .scoped = abi >= 6 ? LL_SCOPE_SIGNAL : 0};
    /* Older kernels want the structure only as long as they know it. */
    size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0)
        return loom_err(LOOM_E_INTERNAL, "cannot create a Landlock ruleset: %s", strerror(errno));
    uint64_t rd = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    uint64_t dev = LL_FS_READ_FILE | LL_FS_WRITE_FILE | (handled & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
    loom_error *e = add_rules(fd, s->read, rd, 0);
    if (!e)
        e = add_rules(fd, s->write, handled, 1);
    if (!e)
        e = add_rules(fd, s->device, dev, 0);
    if (e) {
        close(fd);
        return e;
    }
    *out = fd;
    return NULL;
}

static loom_error *switch_ids(const sandbox_spec *s)
{
    if (setgroups(0, NULL) != 0 || setresgid(s->gid, s->gid, s->gid) != 0 ||
        setresuid(s->uid, s->uid, s->uid) != 0)
        return loom_err(LOOM_E_FORBIDDEN, "cannot become uid %u gid %u: %s", (unsigned)s->uid,
                        (unsigned)s->gid, strerror(errno));
    if (getuid() != s->uid || geteuid() != s->uid || getegid() != s->gid)
        return loom_err(LOOM_E_INTERNAL, "still not uid %u after setresuid", (unsigned)s->uid);
    return NULL;
}

/* Root that stays root (no account to switch to) keeps uid 0 but no
 * capability: none now, and none from any exec (the bounding set), so it
 * cannot load modules, trace, or pass file permissions. */
static loom_error *drop_capabilities(void)
{
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
            break; /* past the kernel's last capability */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &head, none) != 0)
        return loom_err(LOOM_E_INTERNAL, "cannot drop capabilities: %s", strerror(errno));
    return NULL;
}

loom_error *sandbox_apply(const sandbox_spec *s)
{
    if (s->switch_ids)
        for (const char *const *p = s->write; p && *p; p++) {
            loom_error *e = sandbox_chown_tree(*p, s->uid, s->gid);
            if (e)
                return e;
        }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return loom_err(LOOM_E_INTERNAL, "cannot set no_new_privs: %s", strerror(errno));
    int abi = sandbox_landlock_abi(), ruleset = -1;
    if (abi > 0) {
        loom_error *e = landlock_ruleset(s, abi, &ruleset);
        if (e)
            return e;
    }
    loom_error *e = s->switch_ids ? switch_ids(s) : geteuid() == 0 ? drop_capabilities() : NULL;
    if (!e && ruleset >= 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
        e = loom_err(LOOM_E_INTERNAL, "cannot enforce the Landlock ruleset: %s", strerror(errno));
    if (ruleset >= 0)
        close(ruleset);
    return e;
}
