/* util/fs: each helper's error names the operation and the path, keeps
 * the errno, and its code follows it (ENOENT: not found); a file over the
 * read limit is "too large" naming the limit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util/fs.h"

static char base[] = "/tmp/loom-fs-errors-XXXXXX";

static void read_errors(void)
{
    char path[600], *text = (char *)"untouched";
    snprintf(path, sizeof path, "%s/missing.json", base);
    loom_error *e = fs_read_file(path, 100, &text, NULL);
    CHECK(text == NULL);
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    CHECK(loom_err_errno(e) == ENOENT);
    CHECK_CONTAINS(loom_err_message(e), path);
    loom_err_free(e);

    snprintf(path, sizeof path, "%s/big", base);
    CHECK_OK(fs_write_file_atomic(path, "0123456789", 10, 0644));
    e = fs_read_file(path, 9, &text, NULL);
    CHECK(text == NULL);
    CHECK(loom_err_code(e) == LOOM_E_TOO_LARGE);
    CHECK_CONTAINS(loom_err_message(e), "limit of 9");
    loom_err_free(e);
    size_t len = 0;
    CHECK_OK(fs_read_file(path, 10, &text, &len));
    CHECK(len == 10);
    CHECK_STR_EQ(text, "0123456789");
    free(text);

    e = fs_read_file(base, 100, &text, NULL); /* a folder */
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    CHECK_CONTAINS(loom_err_message(e), "not a regular file");
    loom_err_free(e);
}

static void write_errors(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/no-such-dir/out.json", base);
    loom_error *e = fs_write_file_atomic(path, "{}", 2, 0644);
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    CHECK(loom_err_errno(e) == ENOENT);
    CHECK_CONTAINS(loom_err_message(e), "cannot create ");
    CHECK_CONTAINS(loom_err_message(e), "/no-such-dir/out.json");
    loom_err_free(e);

    char src[600];
    snprintf(src, sizeof src, "%s/missing", base);
    e = fs_copy_file(src, path, 0644);
    CHECK(loom_err_errno(e) == ENOENT);
    CHECK_CONTAINS(loom_err_message(e), src);
    loom_err_free(e);
}

static void dir_errors(void)
{
    char file[600], under[700];
    snprintf(file, sizeof file, "%s/plain", base);
    CHECK_OK(fs_write_file_atomic(file, "x", 1, 0644));
    snprintf(under, sizeof under, "%s/sub", file);
    loom_error *e = fs_mkdir_p(under); /* a file where a folder should be */
    CHECK(loom_err_errno(e) == ENOTDIR);
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    CHECK_CONTAINS(loom_err_message(e), "cannot create directory ");
    CHECK_CONTAINS(loom_err_message(e), under);
    loom_err_free(e);
    e = fs_mkdir_p(file); /* the path itself is a file */
    CHECK(loom_err_errno(e) == ENOTDIR);
    loom_err_free(e);

    char deep[700];
    snprintf(deep, sizeof deep, "%s/a/b/c", base);
    CHECK_OK(fs_mkdir_p(deep));
    CHECK(fs_is_dir(deep));
    CHECK_OK(fs_mkdir_p(deep)); /* there already */
    snprintf(deep, sizeof deep, "%s/a", base);
    CHECK_OK(fs_rm_rf(deep));
    CHECK(!fs_is_dir(deep));
    CHECK_OK(fs_rm_rf(deep)); /* gone already: no error */

    char long_path[5000];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = 0;
    e = fs_mkdir_p(long_path);
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    CHECK(loom_err_errno(e) == ENAMETOOLONG);
    loom_err_free(e);
}

/* A deadline N ms from now: carried into the seconds, on the clock asked. */
static void deadlines(void)
{
    int64_t before = time_mono_ms();
    struct timespec at = time_after_ms(CLOCK_MONOTONIC, 2999);
    int64_t ms = (int64_t)at.tv_sec * 1000 + at.tv_nsec / 1000000;
    CHECK(at.tv_nsec >= 0 && at.tv_nsec < 1000000000L);
    CHECK(ms >= before + 2999 && ms <= time_mono_ms() + 2999);
    at = time_after_ms(CLOCK_REALTIME, 0);
    CHECK(at.tv_nsec < 1000000000L && (int64_t)at.tv_sec * 1000 <= time_now_ms());
}

int main(void)
{
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    read_errors();
    write_errors();
    dir_errors();
    deadlines();
    CHECK_OK(fs_rm_rf(base));
    return CHECK_DONE();
}
