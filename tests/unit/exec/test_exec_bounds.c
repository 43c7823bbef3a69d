/*
 * tests/unit/exec/test_exec_bounds.c - the bounds on what an exec takes:
 * the log pump keeps a worker's log within its limit (the newest bytes and
 * a note of how many went), archives are refused past their entries and
 * bytes, and only the newest checkpoints and the best are kept.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "wait.h"
#include "train/checkpoint.h"
#include "util/fs.h"
#include "util/log_pump.h"
#include "util/tarball.h"

static char dir[64];

static void test_log_pump(void)
{
    log_pump *p = log_pump_create(4096);
    CHECK(p != NULL);
    int fds[2];
    CHECK(pipe(fds) == 0);
    char path[128];
    snprintf(path, sizeof path, "%s/stdout", dir);
    int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(loom_err_take(log_pump_add(p, fds[0], root, "stdout"), NULL, 0) == LOOM_OK);
    close(root);
    size_t total = 0;
    char line[64];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(line, sizeof line, "line %d of a job that talks\n", i);
        CHECK(write(fds[1], line, (size_t)n) == n);
        total += (size_t)n;
    }
    CHECK(write(fds[1], "last-line\n", 10) == 10);
    total += 10;
    close(fds[1]);
    /* Generous: a loaded machine may leave the pump's thread waiting. */
    WAIT_UNTIL(log_pump_streams(p) == 0, 30000);
    CHECK(log_pump_streams(p) == 0); /* the pipe's end closed its stream */
    size_t len = 0;
    char *text = NULL;
    CHECK_OK(fs_read_file(path, 1 << 20, &text, &len));
    CHECK(text != NULL);
    CHECK(len <= 4096);
    CHECK_CONTAINS(text, "[loom: this log passed its limit of 4096 bytes (loom serve --log-max-bytes)");
    CHECK(len >= 10 && memcmp(text + len - 10, "last-line\n", 10) == 0);
    /* The note counts what went at its trim: what it dropped and what
     * follows it (kept then, and whatever came since) is everything
     * written. */
    unsigned long long dropped = 0, kept = 0;
    const char *at = text ? strstr(text, "its first ") : NULL;
    CHECK(at && sscanf(at, "its first %llu bytes were dropped and the newest %llu", &dropped,
                       &kept) == 2);
    const char *body = text ? strchr(text, '\n') : NULL;
    size_t after = body ? (size_t)(text + len - (body + 1)) : 0;
    CHECK(body && after >= kept);
    CHECK(dropped + after == total);
    free(text);
    log_pump_destroy(p, 100);
}

static void test_archive_bounds(void)
{
    char src[96], dest[96], name[160];
    snprintf(src, sizeof src, "%s/model", dir);
    CHECK_OK(fs_mkdir_p(src));
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "%s/f%d", src, i);
        CHECK_OK(fs_write_file_atomic(name, "0123456789", 10, 0644));
    }
    char *tar = NULL;
    size_t tar_len = 0;
    CHECK(loom_err_take(tarball_pack_dir(src, &tar, &tar_len), NULL, 0) == LOOM_OK);
    char err[512];
    snprintf(dest, sizeof dest, "%s/few", dir);
    CHECK_OK(fs_mkdir_p(dest));
    tarball_limits few = {.max_bytes = 1 << 20, .max_entries = 10};
    CHECK(loom_err_take(tarball_unpack_bounded(tar, tar_len, dest, &few), err, sizeof err) ==
          LOOM_E_TOO_LARGE);
    CHECK_CONTAINS(err, "more than 10 entries");
    CHECK_CONTAINS(err, "--archive-max-entries");
    snprintf(dest, sizeof dest, "%s/small", dir);
    CHECK_OK(fs_mkdir_p(dest));
    tarball_limits small = {.max_bytes = 100, .max_entries = 1000};
    CHECK(loom_err_take(tarball_unpack_bounded(tar, tar_len, dest, &small), err, sizeof err) ==
          LOOM_E_TOO_LARGE);
    CHECK_CONTAINS(err, "limit of 100 bytes unpacked");
    snprintf(dest, sizeof dest, "%s/fits", dir);
    CHECK_OK(fs_mkdir_p(dest));
    tarball_limits fits = {.max_bytes = 300, .max_entries = 31};
    CHECK(loom_err_take(tarball_unpack_bounded(tar, tar_len, dest, &fits), err, sizeof err) ==
          LOOM_OK);
    snprintf(name, sizeof name, "%s/f29", dest);
    CHECK(fs_is_file(name));
    free(tar);
}

static int exists(const char *ckpt, int epoch)
{
    char path[160];
    snprintf(path, sizeof path, "%s/epoch-%d.safetensors", ckpt, epoch);
    return fs_is_file(path);
}

static void test_checkpoints_kept(void)
{
    cJSON *losses = cJSON_Parse("[{\"step\":1,\"loss\":0.5,\"accuracy\":0.1},"
                                "{\"step\":2,\"loss\":0.3,\"accuracy\":0.2},"
                                "{\"step\":3,\"loss\":0.4,\"accuracy\":0.9}]");
    CHECK(checkpoint_best_epoch(losses) == 2); /* the lowest loss */
    cJSON *accuracy = cJSON_Parse("[{\"step\":1,\"accuracy\":0.1},{\"step\":2,\"accuracy\":0.7},"
                                  "{\"step\":3,\"accuracy\":0.4}]");
    CHECK(checkpoint_best_epoch(accuracy) == 2);
    cJSON *none = cJSON_Parse("[{\"step\":1,\"top5\":0.1}]");
    CHECK(checkpoint_best_epoch(none) == -1);
    cJSON_Delete(losses);
    cJSON_Delete(accuracy);
    cJSON_Delete(none);

    char ckpt[96], path[160];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint", dir);
    CHECK_OK(fs_mkdir_p(ckpt));
    for (int e = 1; e <= 201; e++) {
        snprintf(path, sizeof path, "%s/epoch-%d.safetensors", ckpt, e);
        CHECK_OK(fs_write_file_atomic(path, "x", 1, 0644));
    }
    snprintf(path, sizeof path, "%s/model.safetensors", ckpt);
    CHECK_OK(fs_write_file_atomic(path, "x", 1, 0644));
    CHECK(checkpoint_prune(ckpt, 3, 7) == 197);
    CHECK(exists(ckpt, 201) && exists(ckpt, 200) && exists(ckpt, 199));
    CHECK(exists(ckpt, 7));   /* the best */
    CHECK(!exists(ckpt, 198) && !exists(ckpt, 1) && !exists(ckpt, 100));
    CHECK(fs_is_file(path)); /* not a checkpoint: left alone */
    CHECK(checkpoint_prune(ckpt, 3, -1) == 1);
    CHECK(!exists(ckpt, 7));
    CHECK(checkpoint_prune(ckpt, 0, -1) == 0); /* 0 keeps all */

    /* A job that made its checkpoint folder a link to a folder outside:
     * the prune removes nothing there (it followed the link before). */
    char outside[96], job[96], link[128];
    snprintf(outside, sizeof outside, "%s/outside", dir);
    snprintf(job, sizeof job, "%s/job", dir);
    CHECK_OK(fs_mkdir_p(outside));
    CHECK_OK(fs_mkdir_p(job));
    for (int e = 1; e <= 5; e++) {
        snprintf(path, sizeof path, "%s/epoch-%d.safetensors", outside, e);
        CHECK_OK(fs_write_file_atomic(path, "x", 1, 0644));
    }
    snprintf(link, sizeof link, "%s/checkpoint", job);
    CHECK(symlink(outside, link) == 0);
    CHECK(checkpoint_prune(link, 1, -1) == 0);
    for (int e = 1; e <= 5; e++)
        CHECK(exists(outside, e));
}

/* A resume picks the newest checkpoint that reads back whole; one that the
 * job made a link (to another user's checkpoint) is skipped, not read. */
static void test_checkpoint_link_skipped(void)
{
    float w[4] = {1, 2, 3, 4};
    loom_tensor_view v = {.struct_size = sizeof v, .dtype = LOOM_DTYPE_F32, .ndim = 1,
                          .shape = {4}, .name = "w", .data = w, .nbytes = sizeof w};
    int32_t role = LOOM_TENSOR_PARAMETER;
    char ckpt[96], other[96], path[192], found[256] = "", why[1024];
    snprintf(ckpt, sizeof ckpt, "%s/resume/checkpoint", dir);
    snprintf(other, sizeof other, "%s/someone-else", dir);
    CHECK_OK(fs_mkdir_p(ckpt));
    CHECK_OK(fs_mkdir_p(other));
    cJSON *meta = cJSON_Parse("{\"epoch\": 3}");
    snprintf(path, sizeof path, "%s/epoch-3.safetensors", ckpt);
    CHECK(loom_err_take(checkpoint_save(path, &v, &role, 1, 0, meta), NULL, 0) == LOOM_OK);
    snprintf(path, sizeof path, "%s/epoch-9.safetensors", other);
    CHECK(loom_err_take(checkpoint_save(path, &v, &role, 1, 0, meta), NULL, 0) == LOOM_OK);
    cJSON_Delete(meta);
    char link[192];
    snprintf(link, sizeof link, "%s/epoch-9.safetensors", ckpt);
    CHECK(symlink(path, link) == 0);
    int epoch = -1;
    cJSON *got = NULL;
    CHECK(checkpoint_find_latest(ckpt, found, sizeof found, &epoch, &got, why, sizeof why) == 0);
    CHECK(epoch == 3);
    CHECK_CONTAINS(found, "/resume/checkpoint/epoch-3.safetensors");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(got, "epoch")) == 3);
    CHECK_CONTAINS(why, "epoch-9.safetensors");
    cJSON_Delete(got);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/loom-bounds-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_log_pump();
    test_archive_bounds();
    test_checkpoints_kept();
    test_checkpoint_link_skipped();
    CHECK_OK(fs_rm_rf(dir));
    return CHECK_DONE();
}
