/*
 * test_st_commit.c - atomic commits and the file reader: an existing file
 * is replaced whole, no temporary file is left behind on success or
 * failure, a write that fails half way (file size limit) leaves the old file
 * intact, and safetensors_open names the file in every refusal.
 */
#include "check.h"
#include "st_test_util.h"
#include "train/safetensors.h"

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

static int write_checkpoint(const char *path, float fill, size_t count, char *err, size_t errlen)
{
    float *w = malloc(count * sizeof *w);
    for (size_t i = 0; i < count; i++)
        w[i] = fill + (float)i;
    int64_t shape[1] = {(int64_t)count};
    st_writer *wr = safetensors_writer_new();
    int rc = st_test_add(wr, "w", LOOM_DTYPE_F32, shape, 1, w, count * sizeof *w, err, errlen);
    if (rc == 0)
        rc = safetensors_writer_set_metadata(wr, "fill", fill == 1.0f ? "one" : "two");
    if (rc == 0)
        rc = st_test_commit(wr, path, err, errlen);
    safetensors_writer_free(wr);
    free(w);
    return rc;
}

/* The checkpoint at path holds `count` floats starting at `fill`. */
static int holds(const char *path, float fill, size_t count)
{
    char err[512];
    st_file *f = st_test_open(path, 0, err, sizeof err);
    if (!f) {
        fprintf(stderr, "%s\n", err);
        return 0;
    }
    st_tensor_info info;
    int ok = safetensors_count(f) == 1 && safetensors_find(f, "w", &info) == 0 &&
             info.nbytes == count * sizeof(float);
    for (size_t i = 0; ok && i < count; i++)
        ok = ((const float *)info.data)[i] == fill + (float)i;
    safetensors_close(f);
    return ok;
}

static void test_replace(const char *dir)
{
    char path[4200], err[512], name[256];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    /* A large old file, then a smaller new one: nothing of the old remains. */
    CHECK_MSG(write_checkpoint(path, 1.0f, 10000, err, sizeof err) == 0, "%s", err);
    CHECK(holds(path, 1.0f, 10000));
    struct stat before;
    CHECK(stat(path, &before) == 0);
    CHECK_MSG(write_checkpoint(path, 2.0f, 10, err, sizeof err) == 0, "%s", err);
    CHECK(holds(path, 2.0f, 10));
    struct stat after;
    CHECK(stat(path, &after) == 0);
    CHECK(after.st_size < 200 && after.st_size < before.st_size);
    /* A new inode: the file was renamed into place, not rewritten. */
    CHECK(after.st_ino != before.st_ino);
    /* Only the checkpoint itself is in the directory. */
    CHECK(st_test_count_entries(dir, name, sizeof name) == 1);
    CHECK_STR_EQ(name, "ckpt.safetensors");
    /* New files get the usual permissions (0666 less the umask), not 0600. */
    mode_t mask = umask(022);
    umask(mask);
    CHECK((after.st_mode & 0777) == (0666 & ~mask));
}

static void test_missing_directory(const char *dir)
{
    char path[4200], sub[4200], err[512];
    snprintf(sub, sizeof sub, "%s/nope", dir);
    snprintf(path, sizeof path, "%s/ckpt.safetensors", sub);
    CHECK(write_checkpoint(path, 1.0f, 4, err, sizeof err) == -1);
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, "cannot create a temporary file next to it: No such file or directory");
    struct stat st;
    CHECK(stat(sub, &st) != 0); /* nothing created */
    CHECK(st_test_count_entries(dir, NULL, 0) == 1);
}

/* rename onto a directory fails after the data was written: the temporary
 * file must still go away. */
static void test_failed_rename(const char *dir)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/adir", dir);
    CHECK(mkdir(path, 0755) == 0);
    CHECK(write_checkpoint(path, 1.0f, 4, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "rename of temporary file");
    CHECK_CONTAINS(err, path);
    char inner[4200];
    CHECK(st_test_count_entries(dir, NULL, 0) == 2); /* ckpt + adir, no temp */
    snprintf(inner, sizeof inner, "%s", path);
    CHECK(st_test_count_entries(inner, NULL, 0) == 0);
    rmdir(path);
}

/* A write that fails half way (RLIMIT_FSIZE stands in for a full disk or a
 * crash mid-write): the old checkpoint stays whole, no temp file remains. */
static void test_failed_write(const char *dir)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    CHECK(holds(path, 2.0f, 10));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN); /* get EFBIG instead of dying */
        struct rlimit lim = {.rlim_cur = 4096, .rlim_max = 4096};
        setrlimit(RLIMIT_FSIZE, &lim);
        int rc = write_checkpoint(path, 1.0f, 100000, err, sizeof err);
        int ok = rc == -1 && strstr(err, "write of temporary file") != NULL &&
                 strstr(err, "File too large") != NULL;
        if (!ok)
            fprintf(stderr, "child: rc %d, err \"%s\"\n", rc, err);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(holds(path, 2.0f, 10));
    CHECK(st_test_count_entries(dir, NULL, 0) == 1);
}

static void test_open_errors(const char *dir)
{
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/missing.safetensors", dir);
    CHECK(st_test_open(path, 0, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, "cannot open: No such file or directory");
    CHECK(st_test_code == LOOM_E_NOT_FOUND);

    CHECK(st_test_open(dir, 0, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "not a regular file");

    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    CHECK(st_test_open(path, 100, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "bytes, over the limit of 100");
    CHECK(st_test_code == LOOM_E_TOO_LARGE);
    st_file *f = st_test_open(path, 1 << 20, err, sizeof err);
    CHECK_MSG(f != NULL, "%s", err);
    safetensors_close(f);

    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    CHECK(st_test_write(path, "\x05\0\0", 3) == 0);
    CHECK(st_test_open(path, 0, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "short.safetensors: file too short: 3 bytes");
    CHECK(st_test_code == LOOM_E_INVALID);
    CHECK(st_test_write(path, "", 0) == 0);
    CHECK(st_test_open(path, 0, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "file too short: 0 bytes");

    /* The example from the format's own documentation of a bad size. */
    static const char bad[] = "{\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[20,20],\"data_offsets\":[0,400]}}";
    uint8_t buf[8 + sizeof bad - 1 + 400] = {0};
    buf[0] = (uint8_t)(sizeof bad - 1);
    memcpy(buf + 8, bad, sizeof bad - 1);
    CHECK(st_test_write(path, buf, sizeof buf) == 0);
    CHECK(st_test_open(path, 0, err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "short.safetensors: tensor 'fc1.weight': data_offsets [0, 400] hold 400 bytes, F32 [20, 20] needs 1600");
    unlink(path);
}

/* A file whose header was not padded: the data section is not 8-aligned in
 * the file, and the reader still hands out aligned tensors. */
static void test_unaligned_file(const char *dir)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/unaligned.safetensors", dir);
    static const char json[] = "{\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    size_t hlen = sizeof json - 1;
    CHECK(hlen % 8 != 0);
    double values[2] = {3.25, -1e-7};
    uint8_t buf[256];
    memset(buf, 0, 8);
    buf[0] = (uint8_t)hlen;
    memcpy(buf + 8, json, hlen);
    memcpy(buf + 8 + hlen, values, sizeof values);
    CHECK(st_test_write(path, buf, 8 + hlen + sizeof values) == 0);
    st_file *f = st_test_open(path, 0, err, sizeof err);
    CHECK_MSG(f != NULL, "%s", err);
    st_tensor_info info;
    if (f && safetensors_find(f, "d", &info) == 0) {
        CHECK((uintptr_t)info.data % 8 == 0);
        CHECK(memcmp(info.data, values, sizeof values) == 0);
        CHECK(((const double *)info.data)[0] == 3.25);
    }
    safetensors_close(f);
    unlink(path);
}

int main(void)
{
    char dir[4096];
    if (st_test_mkdtemp(dir, sizeof dir) != 0) {
        perror("mkdtemp");
        return 1;
    }
    test_replace(dir);
    test_missing_directory(dir);
    test_failed_rename(dir);
    test_failed_write(dir);
    test_open_errors(dir);
    test_unaligned_file(dir);
    st_test_rmdir(dir);
    return CHECK_DONE();
}
