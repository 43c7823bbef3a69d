/* store/disk_reserve.c - see disk_reserve_internal.h. */
#include "store/disk_reserve_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/log.h"

/* Allocates the file's blocks (not a sparse file: that would free nothing).
 * Returns 0, or an errno. */
static int make_reserve(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST ? 0 : errno;
    int err = posix_fallocate(fd, 0, STORE_RESERVE_BYTES);
    close(fd);
    if (err)
        unlink(path);
    return err;
}

void disk_reserve_open(disk_reserve *r, const char *db_path)
{
    snprintf(r->path, sizeof r->path, "%s-reserve", db_path);
    r->next_try_ms = 0;
    int err = make_reserve(r->path);
    if (err)
        log_warn("store: cannot keep %d MiB of room for the database (%s): %s; a full disk may "
                 "hold state changes in memory until it has room again",
                 STORE_RESERVE_BYTES >> 20, r->path, strerror(err));
}

int disk_reserve_release(disk_reserve *r)
{
    if (unlink(r->path) != 0)
        return 0;
    r->next_try_ms = time_mono_ms() + STORE_RESERVE_RETRY_MS;
    log_warn("store: the disk holding the host's state is full: its reserve (%d MiB) is in use; "
             "free space there",
             STORE_RESERVE_BYTES >> 20);
    return 1;
}

int disk_reserve_held(const disk_reserve *r) { return access(r->path, F_OK) == 0; }

void disk_reserve_restore(disk_reserve *r)
{
    int64_t now = time_mono_ms();
    if (now < r->next_try_ms)
        return;
    r->next_try_ms = now + STORE_RESERVE_RETRY_MS;
    if (disk_reserve_held(r))
        return;
    char dir[sizeof r->path];
    snprintf(dir, sizeof dir, "%s", r->path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = 0; /* the root */
    else if (slash)
        *slash = 0;
    struct statvfs fs;
    if (statvfs(slash ? dir : ".", &fs) != 0)
        return;
    if ((uint64_t)fs.f_bavail * fs.f_frsize < 2ull * STORE_RESERVE_BYTES)
        return;
    if (make_reserve(r->path) == 0)
        log_info("store: the disk has room again; the database's reserve is back");
}
