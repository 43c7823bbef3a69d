/* tests/unit/user_tree/test_user_tree_uses.c - the host code that goes
 * through util/user_tree cannot be turned against files outside a job's
 * tree: a log trim with "stdout.trim" planted as a link to a root-only file
 * leaves that file alone; a log planted as a link is refused; the result
 * zip leaves links out (to files and folders, absolute and relative) and
 * carries nothing from outside; an atomic write's temporary file is never
 * a planted link. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "wait.h"
#include "util/fs.h"
#include "util/log_pump.h"
#include "util/tarball.h"

static char base[64], job[96], secret[128], outdir[128];
static const char secret_text[] = "root:the-administrator's-token\n";

static void put(const char *path, const char *text)
{
    CHECK_OK(fs_write_file_atomic(path, text, strlen(text), 0600));
}

static void plant(const char *target, const char *rel)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", job, rel);
    CHECK(symlink(target, at) == 0);
}

static void secret_untouched(void)
{
    char *text = NULL;
    CHECK_OK(fs_read_file(secret, 1 << 20, &text, NULL));
    CHECK_STR_EQ(text, secret_text);
    free(text);
}

/* A job plants log/stdout.trim -> the secret and prints past the limit:
 * the trim rewrites the log, not the secret. */
static void test_trim_through_link(void)
{
    char logdir[160];
    snprintf(logdir, sizeof logdir, "%s/log", job);
    CHECK_OK(fs_mkdir_p(logdir));
    plant(secret, "log/stdout.trim");
    log_pump *p = log_pump_create(4096);
    int fds[2];
    CHECK(p && pipe(fds) == 0);
    int root = open(job, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(loom_err_take(log_pump_add(p, fds[0], root, "log/stdout"), NULL, 0) == LOOM_OK);
    char line[64];
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(line, sizeof line, "the job chose this text %d\n", i);
        CHECK(write(fds[1], line, (size_t)n) == n);
    }
    close(fds[1]);
    WAIT_UNTIL(log_pump_streams(p) == 0, 30000); /* the pump reaches the pipe's end */
    CHECK(log_pump_streams(p) == 0);
    secret_untouched();
    char path[192];
    snprintf(path, sizeof path, "%s/stdout", logdir);
    size_t len = 0;
    char *text = NULL;
    CHECK_OK(fs_read_file(path, 1 << 20, &text, &len));
    CHECK(text && len <= 4096);
    CHECK_CONTAINS(text, "passed its limit of 4096 bytes");
    CHECK_CONTAINS(text, "the job chose this text 1999\n");
    free(text);
    /* The planted link is still a link, to the same place. */
    char target[256] = "";
    snprintf(path, sizeof path, "%s/stdout.trim", logdir);
    CHECK(readlink(path, target, sizeof target - 1) > 0);
    CHECK_STR_EQ(target, secret);
    /* A log that is itself a planted link is refused, not appended to. */
    plant(secret, "log/stderr");
    CHECK(pipe(fds) == 0);
    char msg[512];
    CHECK(loom_err_take(log_pump_add(p, fds[0], root, "log/stderr"), msg, sizeof msg) ==
          LOOM_E_FORBIDDEN);
    CHECK_CONTAINS(msg, "log/stderr");
    close(fds[1]);
    secret_untouched();
    close(root);
    log_pump_destroy(p, 100);
}

static int zip_has(const char *zip, size_t n, const char *what)
{
    return memmem(zip, n, what, strlen(what)) != NULL;
}

static int leave_out_hidden(const void *ctx, const char *rel, int is_dir)
{
    (void)ctx;
    return is_dir && strcmp(rel, "hidden") == 0;
}

/* The result zip: links to the secret and to a folder outside, absolute
 * and relative, are left out; the job's own files are in. */
static void test_zip_leaves_links_out(void)
{
    char path[192];
    snprintf(path, sizeof path, "%s/model.txt", job);
    put(path, "the job's own result\n");
    snprintf(path, sizeof path, "%s/hidden", job);
    CHECK_OK(fs_mkdir_p(path));
    snprintf(path, sizeof path, "%s/hidden/inside", job);
    put(path, "left out by the filter\n");
    plant(secret, "abs-file");
    plant("../outside/secret", "rel-file");
    plant(outdir, "abs-dir");
    plant("../outside/dir", "rel-dir");
    char *zip = NULL;
    size_t n = 0;
    char msg[512];
    CHECK(loom_err_take(tarball_zip_tree(job, leave_out_hidden, NULL, 1 << 20, &zip, &n), msg,
                        sizeof msg) == LOOM_OK);
    CHECK(zip != NULL);
    CHECK(zip && zip_has(zip, n, "model.txt"));
    CHECK(zip && zip_has(zip, n, "log/stdout")); /* the trimmed log, a file */
    CHECK(zip && !zip_has(zip, n, "the-administrator"));
    CHECK(zip && !zip_has(zip, n, "outside-file-content"));
    CHECK(zip && !zip_has(zip, n, "abs-file") && !zip_has(zip, n, "rel-file"));
    CHECK(zip && !zip_has(zip, n, "abs-dir") && !zip_has(zip, n, "rel-dir"));
    CHECK(zip && !zip_has(zip, n, "stdout.trim") && !zip_has(zip, n, "log/stderr"));
    CHECK(zip && !zip_has(zip, n, "hidden"));
    free(zip);
    secret_untouched();
    /* Over its limit: refused, naming it. */
    CHECK(loom_err_take(tarball_zip_tree(job, NULL, NULL, 64, &zip, &n), msg, sizeof msg) ==
          LOOM_E_TOO_LARGE);
    CHECK_CONTAINS(msg, "limit of 64 bytes");
}

/* fs_write_file_atomic's temporary file is new: a link planted under its
 * name (the host's pid is easy to learn) is removed, not written through. */
static void test_atomic_write_temp(void)
{
    char path[192], tmp[224];
    snprintf(path, sizeof path, "%s/val_dict_list.json", job);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    CHECK(symlink(secret, tmp) == 0);
    CHECK_OK(fs_write_file_atomic(path, "[]", 2, 0644));
    secret_untouched();
    char *text = NULL;
    CHECK_OK(fs_read_file(path, 100, &text, NULL));
    CHECK_STR_EQ(text, "[]");
    free(text);
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/loom-utree-uses-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    snprintf(job, sizeof job, "%s/job", base);
    snprintf(secret, sizeof secret, "%s/outside/secret", base);
    snprintf(outdir, sizeof outdir, "%s/outside/dir", base);
    CHECK_OK(fs_mkdir_p(job));
    CHECK_OK(fs_mkdir_p(outdir));
    put(secret, secret_text);
    char path[192];
    snprintf(path, sizeof path, "%s/file", outdir);
    put(path, "outside-file-content\n");
    test_trim_through_link();
    test_zip_leaves_links_out();
    test_atomic_write_temp();
    CHECK_OK(fs_rm_rf(base));
    return CHECK_DONE();
}
