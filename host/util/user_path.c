/* util/user_path.c - see user_path.h. */
#include "util/user_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int user_path_text_ok(const char *rel)
{
    if (!rel || !rel[0] || rel[0] == '/')
        return 0;
    for (const char *s = rel; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return 0;
        s += n;
        s += *s == '/';
    }
    return 1;
}

int user_path_resolve(const char *dir, const char *rel, int want_file, char *out, size_t len)
{
    if (!user_path_text_ok(rel)) {
        errno = EXDEV;
        return -1;
    }
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
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
