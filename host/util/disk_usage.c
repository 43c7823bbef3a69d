/* util/disk_usage.c - see disk_usage.h. */
#include "util/disk_usage.h"
#include "util/user_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64

static void walk(int dfd, int depth, uint64_t max_entries, disk_usage *u)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        if (u->entries >= max_entries) {
            u->truncated = 1;
            break;
        }
        u->entries++;
        struct stat st;
        if (fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        u->bytes += (uint64_t)st.st_blocks * 512u;
        if (!S_ISDIR(st.st_mode))
            continue;
        if (depth + 1 >= MAX_DEPTH) {
            u->truncated = 1;
            continue;
        }
        int sub = openat(dirfd(d), ent->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (sub >= 0)
            walk(sub, depth + 1, max_entries, u);
    }
    closedir(d);
}

int disk_usage_measure(const char *dir, uint64_t max_entries, disk_usage *out)
{
    memset(out, 0, sizeof *out);
    int fd = -1; /* the exec folder is the job's: its root opened as a user tree's */
    loom_error *e = utree_root(dir, &fd);
    if (e) {
        errno = loom_err_code(e) == LOOM_E_NOT_FOUND ? ENOENT : EACCES;
        loom_err_free(e);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0)
        out->bytes = (uint64_t)st.st_blocks * 512u;
    walk(fd, 0, max_entries, out);
    return 0;
}
