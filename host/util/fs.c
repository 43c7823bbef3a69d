/* util/fs.c - see fs.h. */
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The code an errno gives (see fs.h). */
static int32_t fs_code(int errnum)
{
    switch (errnum) {
    case ENOENT:
    case ENOTDIR: return LOOM_E_NOT_FOUND;
    case EEXIST: return LOOM_E_CONFLICT;
    case ENAMETOOLONG: return LOOM_E_INVALID;
    default: return LOOM_E_INTERNAL;
    }
}

/* An error for the failed `op` on path, from errno as it is now. */
static loom_error *fs_fail(const char *op, const char *path)
{
    int errnum = errno;
    return loom_err_sys(fs_code(errnum), errnum, "cannot %s %s", op, path);
}

static loom_error *fs_too_long(const char *path)
{
    return loom_err_sys(LOOM_E_INVALID, ENAMETOOLONG, "path %.64s... over PATH_MAX (%d)",
                        path, PATH_MAX);
}

loom_error *fs_mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return fs_too_long(path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return fs_fail("create directory", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return fs_fail("create directory", buf);
    if (!fs_is_dir(buf)) {
        errno = ENOTDIR;
        return fs_fail("create directory", buf);
    }
    return NULL;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

loom_error *fs_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? NULL : fs_fail("remove", path);
    return nftw(path, remove_entry, 32, FTW_DEPTH | FTW_PHYS) != 0 ? fs_fail("remove", path)
                                                                   : NULL;
}

loom_error *fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fs_fail("open", path);
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        loom_error *e = fs_fail("stat", path);
        fclose(f);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        fclose(f);
        return loom_err_sys(LOOM_E_INVALID, EINVAL, "cannot read %s: not a regular file", path);
    }
    if ((size_t)st.st_size > max_bytes) {
        fclose(f);
        return loom_err_sys(LOOM_E_TOO_LARGE, EFBIG, "cannot read %s: %lld bytes, over its limit of %zu",
                            path, (long long)st.st_size, max_bytes);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        fclose(f);
        return loom_err_sys(LOOM_E_INTERNAL, ENOMEM, "cannot read %s", path);
    }
    size_t n = fread(buf, 1, (size_t)st.st_size, f);
    loom_error *e = ferror(f) ? fs_fail("read", path) : NULL;
    fclose(f);
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

/* Opens path's temporary sibling as a new file (never one that is there
 * already, a link someone put in its place: an old one is removed first). */
static int open_new_temp(const char *tmp, int mode)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    return fd;
}

loom_error *fs_write_file_atomic(const char *path, const void *data, size_t len, int mode)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return fs_too_long(path);
    int fd = open_new_temp(tmp, mode);
    if (fd < 0)
        return fs_fail("create", tmp);
    errno = 0;
    if (fd_write_all(fd, data, len) != 0) {
        if (errno == 0)
            errno = EIO;
        loom_error *e = fs_fail("write", tmp);
        close(fd);
        unlink(tmp);
        return e;
    }
    const char *op = fsync(fd) != 0 ? "sync" : NULL;
    if (close(fd) != 0 && !op)
        op = "close";
    if (!op && rename(tmp, path) != 0)
        op = "rename into place";
    if (op) {
        loom_error *e = fs_fail(op, op[0] == 'r' ? path : tmp);
        unlink(tmp);
        return e;
    }
    return NULL;
}

loom_error *fs_copy_file(const char *src, const char *dst, int mode)
{
    size_t len;
    char *data;
    loom_error *e = fs_read_file(src, (size_t)1 << 31, &data, &len);
    if (!e)
        e = fs_write_file_atomic(dst, data, len, mode);
    free(data);
    return e;
}

int fs_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fs_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int64_t time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec time_after_ms(clockid_t clock, int64_t ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    int64_t ns = ts.tv_nsec + (ms % 1000) * 1000000;
    ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    return ts;
}

bool fs_self_exe(char *out, size_t outlen)
{
    ssize_t n = outlen > 1 ? readlink("/proc/self/exe", out, outlen - 1) : -1;
    if (outlen)
        out[n > 0 ? n : 0] = 0;
    return n > 0;
}

int fd_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        ssize_t n = write(fd, p, chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fd_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
