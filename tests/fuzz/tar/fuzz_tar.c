/*
 * fuzz_tar.c - libFuzzer target for model-directory archives, which arrive
 * with every exec submission and model deployment. The input is unpacked
 * with tarball_unpack into a fresh directory box/dest inside a directory of
 * its own; afterwards nothing may exist outside dest (the walk starts two
 * levels up, so an entry that climbed out shows up), and no symbolic link
 * inside dest may resolve to a place outside it (tarball.h: "no links that
 * lead out"). A refusal must say why. Then dest is removed for the next
 * input.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_support.h"
#include "util/tarball.h"

/* Small enough to keep the target fast, large enough for real entries. */
#define FUZZ_TAR_MAX_BYTES (1u << 20)

static char root[PATH_MAX], box[PATH_MAX], dest[PATH_MAX], dest_real[PATH_MAX];
static size_t dest_real_len;

static int inside_dest(const char *path)
{
    return strncmp(path, dest_real, dest_real_len) == 0 &&
           (path[dest_real_len] == '/' || path[dest_real_len] == '\0');
}

/* Everything below root must be root itself, box, or inside dest. */
static int check_contained(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    if (strcmp(path, root) == 0 || strcmp(path, box) == 0 ||
        (strncmp(path, dest, strlen(dest)) == 0 &&
         (path[strlen(dest)] == '/' || path[strlen(dest)] == '\0')))
        return 0;
    fprintf(stderr, "fuzz_tar: '%s' was written outside the extraction directory %s\n", path,
            dest);
    abort();
}

/* A link inside dest that resolves must resolve inside dest. */
static int check_link(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_SL || !S_ISLNK(st->st_mode))
        return 0;
    char resolved[PATH_MAX];
    if (!realpath(path, resolved))
        return 0; /* dangling or a loop: leads nowhere */
    if (!inside_dest(resolved)) {
        fprintf(stderr, "fuzz_tar: symbolic link '%s' leads out of the extraction directory %s, "
                "to '%s'\n", path + strlen(dest) + 1, dest_real, resolved);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        fuzz_path(root, sizeof root, "%s/tar", fuzz_scratch_dir());
        fuzz_path(box, sizeof box, "%s/box", root);
        fuzz_path(dest, sizeof dest, "%s/dest", box);
        fuzz_make_dir(root);
        fuzz_make_dir(box);
    }
    fuzz_make_dir(dest);
    if (!realpath(dest, dest_real))
        abort();
    dest_real_len = strlen(dest_real);

    /* A refusal must say why. */
    loom_error *err = tarball_unpack(data, size, dest, FUZZ_TAR_MAX_BYTES);
    if (err && !loom_err_message(err)[0])
        abort();
    loom_err_free(err);
    /* Whether or not it succeeded, a partial extraction must be contained. */
    nftw(root, check_contained, 16, FTW_PHYS);
    nftw(dest, check_link, 16, FTW_PHYS);
    fuzz_remove_tree(dest);
    return 0;
}
