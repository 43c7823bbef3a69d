/* util/user_tree.c - see user_tree.h. */
#include "util/user_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fs.h"

#define RESOLVE_USER (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* Folders held open at once while removing a tree; deeper folders are
 * moved up to the top and removed on a later pass. */
#define REMOVE_DEPTH 32

/* An error for a failed call on rel, with errno as the call left it. */
static loom_error *fail(const char *what, const char *rel, int err)
{
    loom_error *e;
    const char *name = *rel ? rel : ".";
    switch (err) {
    case ENOSYS:
        e = loom_err(LOOM_E_UNSUPPORTED,
                     "%s: this kernel has no openat2 (Linux 5.6 or later is needed; a seccomp "
                     "filter may hide it), which the host needs to touch users' files safely",
                     name);
        break;
    case ELOOP:
    case EXDEV:
        e = loom_err(LOOM_E_FORBIDDEN,
                     "%s: refused to %s it: a symbolic link, \"..\" or an absolute path leads "
                     "out of its folder or through a link, which the host never follows in a "
                     "user's files",
                     name, what);
        break;
    case ENOENT:
        e = loom_err(LOOM_E_NOT_FOUND, "%s: no such file or folder", name);
        break;
    case EEXIST:
        e = loom_err(LOOM_E_CONFLICT, "%s: exists already", name);
        break;
    case ENOTDIR:
    case EISDIR:
    case ENXIO:
        e = loom_err(LOOM_E_INVALID, "%s: cannot %s it: %s", name, what, strerror(err));
        break;
    default:
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot %s it: %s", name, what, strerror(err));
    }
    errno = err;
    return e;
}

/* What no path in a user's tree may be: absolute, or with a ".."
 * component. 1 when rel is one of them. */
static int check_rel_quiet(const char *rel)
{
    if (rel[0] == '/')
        return 1;
    for (const char *p = rel; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 1;
        p += n + (p[n] == '/');
    }
    return 0;
}

/* Refuses those (openat2 refuses both too: this names the fault first). */
static loom_error *check_rel(const char *rel)
{
    return check_rel_quiet(rel) ? fail("resolve", rel, EXDEV) : NULL;
}

/* openat2 beneath root; the descriptor or -1 with errno. */
static int beneath(int root, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_USER,
    };
    /* EAGAIN: the kernel saw a rename race it could not rule out; a few
     * tries, not a loop a job could keep spinning. */
    int fd = -1;
    for (int tries = 0; tries < 8; tries++) {
        fd = (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof how);
        if (fd >= 0 || (errno != EINTR && errno != EAGAIN))
            break;
    }
    return fd;
}

/* True when rel's last component is a link (opened as itself: O_PATH |
 * O_NOFOLLOW), which O_DIRECTORY reports as ENOTDIR. */
static int last_is_link(int root, const char *rel)
{
    struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC, .resolve = RESOLVE_USER};
    int fd = (int)syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof how);
    struct stat st;
    int link = fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
    if (fd >= 0)
        close(fd);
    return link;
}

static loom_error *open_checked(int root, const char *rel, int flags, mode_t mode,
                                const char *what, int *out)
{
    loom_error *e = check_rel(rel);
    if (e)
        return e;
    int fd = beneath(root, rel, flags, mode);
    if (fd < 0 && errno == ENOTDIR && last_is_link(root, rel))
        errno = ELOOP;
    if (fd < 0)
        return fail(what, rel, errno);
    *out = fd;
    return NULL;
}

/* Keeps fd only when it is a regular file. */
static loom_error *regular_only(int fd, const char *rel, const char *what)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return fail(what, rel, err);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return loom_err(LOOM_E_INVALID, "%s: cannot %s it: not a regular file", rel, what);
    }
    return NULL;
}

loom_error *utree_root(const char *path, int *root)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        errno = ELOOP;
    if (fd < 0)
        return fail("open", path, errno);
    *root = fd;
    return NULL;
}

loom_error *utree_host_root(const char *path, int *root)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fail("open", path, errno);
    *root = fd;
    return NULL;
}

loom_error *utree_open_read(int root, const char *rel, int *fd)
{
    /* O_NONBLOCK: opening a planted FIFO must not wait for a writer. */
    int got = -1;
    loom_error *e = open_checked(root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, "read", &got);
    if (!e)
        e = regular_only(got, rel, "read");
    if (e)
        return e;
    fcntl(got, F_SETFL, fcntl(got, F_GETFL) & ~O_NONBLOCK);
    *fd = got;
    return NULL;
}

loom_error *utree_open_write(int root, const char *rel, mode_t mode, int *fd)
{
    int got = -1;
    loom_error *e = open_checked(root, rel, O_RDWR | O_CREAT | O_NONBLOCK | O_NOCTTY, mode,
                                 "write", &got);
    if (!e)
        e = regular_only(got, rel, "write");
    if (e)
        return e;
    fcntl(got, F_SETFL, fcntl(got, F_GETFL) & ~O_NONBLOCK);
    *fd = got;
    return NULL;
}

loom_error *utree_open_append(int root, const char *rel, mode_t mode, int *fd)
{
    int got = -1;
    loom_error *e = utree_open_write(root, rel, mode, &got);
    if (!e && (fcntl(got, F_SETFL, fcntl(got, F_GETFL) | O_APPEND) != 0 ||
               lseek(got, 0, SEEK_END) < 0)) {
        e = fail("open", rel, errno);
        close(got);
    }
    if (!e)
        *fd = got;
    return e;
}

loom_error *utree_create(int root, const char *rel, mode_t mode, int *fd)
{
    return open_checked(root, rel, O_WRONLY | O_CREAT | O_EXCL, mode, "create", fd);
}

loom_error *utree_open_dir(int root, const char *rel, int *fd)
{
    return open_checked(root, rel, O_RDONLY | O_DIRECTORY, 0, "open the folder", fd);
}

loom_error *utree_list(int root, const char *rel, DIR **out)
{
    int fd;
    loom_error *e = utree_open_dir(root, rel, &fd);
    if (e)
        return e;
    DIR *d = fdopendir(fd);
    if (!d) {
        int err = errno;
        close(fd);
        return fail("list", rel, err);
    }
    *out = d;
    return NULL;
}

/* Splits rel into its folder (opened beneath root into *dir) and its last
 * name (into base); a last name of "", "." or ".." is refused. */
static loom_error *open_parent(int root, const char *rel, int *dir, char *base, size_t baselen)
{
    loom_error *e = check_rel(rel);
    if (e)
        return e;
    char parent[PATH_MAX];
    size_t n = strlen(rel);
    while (n > 1 && rel[n - 1] == '/')
        n--;
    if (n >= sizeof parent)
        return fail("resolve", rel, ENAMETOOLONG);
    memcpy(parent, rel, n);
    parent[n] = 0;
    char *slash = strrchr(parent, '/');
    const char *last = slash ? slash + 1 : parent;
    if (!*last || strcmp(last, ".") == 0 || strlen(last) >= baselen)
        return fail("resolve", rel, EINVAL);
    snprintf(base, baselen, "%s", last);
    if (slash)
        *slash = 0;
    else
        parent[0] = 0;
    return utree_open_dir(root, parent, dir);
}

loom_error *utree_mkdirs(int root, const char *rel, mode_t mode)
{
    loom_error *e = check_rel(rel);
    if (e)
        return e;
    int at = dup(root);
    if (at < 0)
        return fail("open the folder", rel, errno);
    for (const char *p = rel; *p && !e;) {
        size_t n = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            e = fail("make", rel, ENAMETOOLONG);
            break;
        }
        memcpy(name, p, n);
        name[n] = 0;
        p += n + (p[n] == '/');
        if (n == 0 || strcmp(name, ".") == 0)
            continue;
        if (mkdirat(at, name, mode) != 0 && errno != EEXIST) {
            e = fail("make", rel, errno);
            break;
        }
        int next = beneath(at, name, O_RDONLY | O_DIRECTORY, 0);
        if (next < 0 && errno == ENOTDIR && last_is_link(at, name))
            errno = ELOOP;
        if (next < 0)
            e = fail("make", rel, errno);
        close(at);
        at = next;
    }
    if (at >= 0)
        close(at);
    return e;
}

loom_error *utree_unlink(int root, const char *rel)
{
    int dir;
    char base[NAME_MAX + 1];
    loom_error *e = open_parent(root, rel, &dir, base, sizeof base);
    if (e)
        return loom_err_code(e) == LOOM_E_NOT_FOUND ? (loom_err_free(e), NULL) : e;
    if (unlinkat(dir, base, 0) != 0 && errno != ENOENT)
        e = fail("remove", rel, errno);
    close(dir);
    return e;
}

loom_error *utree_rename(int root, const char *from, const char *to)
{
    int fdir, tdir;
    char fbase[NAME_MAX + 1], tbase[NAME_MAX + 1];
    loom_error *e = open_parent(root, from, &fdir, fbase, sizeof fbase);
    if (e)
        return e;
    e = open_parent(root, to, &tdir, tbase, sizeof tbase);
    if (!e) {
        if (renameat(fdir, fbase, tdir, tbase) != 0)
            e = fail("rename", from, errno);
        close(tdir);
    }
    close(fdir);
    return e;
}

/* Empties the folder dir (a descriptor the caller owns): files and links
 * are unlinked, folders emptied and removed. At REMOVE_DEPTH a folder is
 * moved up to `top` under a fresh name instead, and *again set, so the
 * caller makes another pass. */
static int empty_dir(int dir, int top, int depth, unsigned *moved, int *again)
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(d); /* the dup shares its offset with dir: an earlier pass left it at the end */
    int rc = 0;
    struct dirent *ent;
    while (rc == 0 && (errno = 0, ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = errno == ENOENT ? 0 : -1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc = unlinkat(dir, name, 0) != 0 && errno != ENOENT ? -1 : 0;
            continue;
        }
        if (depth >= REMOVE_DEPTH) {
            char aside[64];
            snprintf(aside, sizeof aside, ".loom-removing-%u-%ld", (*moved)++, (long)getpid());
            rc = renameat(dir, name, top, aside);
            *again = 1;
            continue;
        }
        int sub = beneath(dir, name, O_RDONLY | O_DIRECTORY, 0);
        if (sub < 0) {
            rc = errno == ENOENT ? 0 : -1;
            continue;
        }
        rc = empty_dir(sub, top, depth + 1, moved, again);
        close(sub);
        if (rc == 0 && unlinkat(dir, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
            rc = -1;
    }
    if (rc == 0 && errno != 0 && !ent)
        rc = -1;
    int saved = errno;
    closedir(d);
    errno = saved;
    return rc;
}

/* Empties dir completely, pass after pass while folders were moved up. */
static int empty_all(int dir)
{
    unsigned moved = 0;
    int again = 1, rc = 0;
    while (rc == 0 && again) {
        again = 0;
        rc = empty_dir(dir, dir, 0, &moved, &again);
    }
    return rc;
}

loom_error *utree_remove_all(int root, const char *rel)
{
    loom_error *e = check_rel(rel);
    if (e)
        return e;
    int dir = beneath(root, rel, O_RDONLY | O_DIRECTORY, 0);
    if (dir < 0 && errno == ENOENT)
        return NULL;
    if (dir < 0 && errno == ENOTDIR)
        return utree_unlink(root, rel);
    if (dir < 0)
        return fail("remove", rel, errno);
    int rc = empty_all(dir);
    int err = errno;
    close(dir);
    if (rc != 0)
        return fail("remove", rel, err);
    if (!*rel || strcmp(rel, ".") == 0)
        return NULL;
    int parent;
    char base[NAME_MAX + 1];
    if ((e = open_parent(root, rel, &parent, base, sizeof base)) != NULL)
        return e;
    if (unlinkat(parent, base, AT_REMOVEDIR) != 0 && errno != ENOENT)
        e = fail("remove", rel, errno);
    close(parent);
    return e;
}

loom_error *utree_read_file(int root, const char *rel, size_t max, char **out, size_t *len)
{
    int fd;
    loom_error *e = utree_open_read(root, rel, &fd);
    if (e)
        return e;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        e = fail("read", rel, errno);
    } else if ((uint64_t)st.st_size > max) {
        errno = EFBIG;
        e = loom_err(LOOM_E_TOO_LARGE, "%s: %lld bytes, more than the %zu read at most", rel,
                     (long long)st.st_size, max);
    }
    char *buf = e ? NULL : malloc((size_t)st.st_size + 1);
    if (!e && !buf)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    size_t n = 0;
    while (!e && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            e = fail("read", rel, errno);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (e) {
        free(buf);
        return e;
    }
    buf[n] = 0;
    if (len)
        *len = n;
    *out = buf;
    return NULL;
}

/* Writes rel as a new file beside it (rel.loom-new: a leftover or planted
 * entry of that name is removed, not opened), filled by fill(fd, ctx),
 * then renamed over rel: a reader sees the old or the new file. */
static loom_error *replace_file(int root, const char *rel, mode_t mode,
                                int (*fill)(int fd, const void *ctx), const void *ctx)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.loom-new", rel) >= (int)sizeof tmp)
        return fail("write", rel, ENAMETOOLONG);
    int fd = -1;
    loom_error *e = utree_unlink(root, tmp);
    if (!e)
        e = utree_create(root, tmp, mode, &fd);
    if (e)
        return e;
    if (fill(fd, ctx) != 0 || fsync(fd) != 0)
        e = fail("write", tmp, errno);
    if (close(fd) != 0 && !e)
        e = fail("write", tmp, errno);
    if (!e)
        e = utree_rename(root, tmp, rel);
    if (e)
        loom_err_free(utree_unlink(root, tmp));
    return e;
}

typedef struct bytes {
    const void *data;
    size_t len;
} bytes;

static int fill_bytes(int fd, const void *ctx)
{
    const bytes *b = ctx;
    return fd_write_all(fd, b->data, b->len);
}

loom_error *utree_write_file(int root, const char *rel, const void *data, size_t len,
                             mode_t mode)
{
    bytes b = {data, len};
    return replace_file(root, rel, mode, fill_bytes, &b);
}

loom_error *utree_delete(const char *path)
{
    char parent[PATH_MAX];
    if (snprintf(parent, sizeof parent, "%s", path) >= (int)sizeof parent)
        return fail("remove", path, ENAMETOOLONG);
    char *slash = strrchr(parent, '/');
    if (!slash || !slash[1])
        return loom_err(LOOM_E_INVALID, "%s: expected an absolute path to a folder", path);
    *slash = 0;
    int root;
    loom_error *e = utree_root(*parent ? parent : "/", &root);
    if (e)
        return loom_err_code(e) == LOOM_E_NOT_FOUND ? (loom_err_free(e), NULL) : e;
    e = utree_remove_all(root, slash + 1);
    close(root);
    return loom_err_wrap(e, "%s", path);
}

/* Opens dir as a root for one call: `call` runs with `root` set. */
#define WITH_ROOT(dir, call)                                                   \
    do {                                                                       \
        int root;                                                              \
        loom_error *opened = utree_root(dir, &root);                           \
        if (opened)                                                            \
            return opened;                                                     \
        loom_error *done = (call);                                             \
        close(root);                                                           \
        return done;                                                           \
    } while (0)

loom_error *utree_mkdirs_in(const char *dir, const char *rel, mode_t mode)
{
    WITH_ROOT(dir, utree_mkdirs(root, rel, mode));
}

loom_error *utree_read_file_in(const char *dir, const char *rel, size_t max, char **out,
                               size_t *len)
{
    WITH_ROOT(dir, utree_read_file(root, rel, max, out, len));
}

loom_error *utree_write_file_in(const char *dir, const char *rel, const void *data, size_t len,
                                mode_t mode)
{
    WITH_ROOT(dir, utree_write_file(root, rel, data, len, mode));
}

loom_error *utree_open_write_in(const char *dir, const char *rel, mode_t mode, int *fd)
{
    WITH_ROOT(dir, utree_open_write(root, rel, mode, fd));
}

loom_error *utree_open_append_in(const char *dir, const char *rel, mode_t mode, int *fd)
{
    WITH_ROOT(dir, utree_open_append(root, rel, mode, fd));
}

loom_error *utree_open_read_in(const char *dir, const char *rel, int *fd)
{
    WITH_ROOT(dir, utree_open_read(root, rel, fd));
}

loom_error *utree_unlink_in(const char *dir, const char *rel)
{
    WITH_ROOT(dir, utree_unlink(root, rel));
}

loom_error *utree_open_append_path(const char *path, mode_t mode, int *fd)
{
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return fail("open", path, ENAMETOOLONG);
    char *slash = strrchr(dir, '/');
    if (!slash || !slash[1])
        return loom_err(LOOM_E_INVALID, "%s: expected the full path of a file", path);
    *slash = 0;
    loom_error *e = utree_open_append_in(*dir ? dir : "/", slash + 1, mode, fd);
    return e ? loom_err_wrap(e, "%s", path) : NULL;
}

/* Copies what is left of the descriptor *ctx to fd. 0 or -1 (errno). */
static int fill_copy(int fd, const void *ctx)
{
    int in = *(const int *)ctx;
    char buf[65536];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return (int)r;
        if (fd_write_all(fd, buf, (size_t)r) != 0)
            return -1;
    }
}

loom_error *utree_copy_file_in(const char *from_dir, const char *from, const char *to_dir,
                               const char *to, mode_t mode)
{
    int in = -1, root = -1;
    loom_error *e = utree_open_read_in(from_dir, from, &in);
    if (!e)
        e = utree_root(to_dir, &root);
    if (!e)
        e = replace_file(root, to, mode, fill_copy, &in);
    if (in >= 0)
        close(in);
    if (root >= 0)
        close(root);
    return e;
}

const char *utree_rel_of(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (strncmp(path, dir, n) != 0 || path[n] != '/')
        return NULL;
    return path + n + 1;
}

int utree_name_ok(const char *rel)
{
    return rel && rel[0] && !check_rel_quiet(rel);
}

int utree_resolve_named(const char *dir, const char *rel, int want_file, char *out, size_t len)
{
    if (!utree_name_ok(rel)) {
        errno = EXDEV;
        return -1;
    }
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    /* Links inside the tree are the user's own: followed, never out. */
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof how);
    int saved = errno;
    close(dfd);
    if (fd < 0) {
        errno = saved;
        return -1;
    }
    struct stat st;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    ssize_t n = fstat(fd, &st) == 0 ? readlink(self, out, len) : -1;
    saved = n < 0 ? errno : (size_t)n >= len ? ENAMETOOLONG
                          : want_file && S_ISDIR(st.st_mode) ? EISDIR
                          : want_file && !S_ISREG(st.st_mode) ? EINVAL : 0;
    close(fd);
    if (saved) {
        errno = saved;
        return -1;
    }
    out[n] = 0;
    return 0;
}
