/* fuzz_support.c - see fuzz_support.h. */
#include "fuzz_support.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[PATH_MAX];

char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        abort();
    if (size)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

static void remove_scratch(void)
{
    if (scratch[0])
        fuzz_remove_tree(scratch);
}

const char *fuzz_scratch_dir(void)
{
    if (scratch[0])
        return scratch;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    fuzz_path(scratch, sizeof scratch, "%s/loom-fuzz-XXXXXX", tmp);
    if (!mkdtemp(scratch)) {
        fprintf(stderr, "fuzz: cannot make a scratch directory under %s: %s\n", tmp,
                strerror(errno));
        abort();
    }
    atexit(remove_scratch);
    return scratch;
}

void fuzz_write_file(const char *path, const void *data, size_t size)
{
    /* A fresh file each time: truncating one in place makes ext4 flush it
     * on close (auto_da_alloc), which costs milliseconds per input. */
    if (unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "fuzz: cannot replace %s: %s\n", path, strerror(errno));
        abort();
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
            abort();
        }
        p += n;
        size -= (size_t)n;
    }
    close(fd);
}

void fuzz_make_dir(const char *path)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz: cannot make %s: %s\n", path, strerror(errno));
        abort();
    }
}

/* A directory extracted with mode 0 must be opened up before its entries
 * can be listed or removed; one that could not be read is only listed on
 * the next pass, hence the count. */
static int unreadable_seen;

static int open_up(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_DNR)
        unreadable_seen++;
    if (type == FTW_D || type == FTW_DNR)
        chmod(path, (st->st_mode & 07777) | 0700);
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    if (remove(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "fuzz: cannot remove %s: %s\n", path, strerror(errno));
        abort();
    }
    return 0;
}

void fuzz_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    for (int pass = 0; pass < 64; pass++) {
        unreadable_seen = 0;
        nftw(path, open_up, 16, FTW_PHYS);
        if (!unreadable_seen)
            break;
    }
    nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

void fuzz_path(char *out, size_t outlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= outlen) {
        fprintf(stderr, "fuzz: path too long (%s)\n", fmt);
        abort();
    }
}
