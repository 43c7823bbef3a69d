/* tests/unit/user_tree/test_user_tree.c - util/user_tree refuses every way
 * out of a tree: planted links (absolute, relative through "..", to a file
 * and to a folder, as the last component and in the middle), a ".."
 * component, an absolute path, a /proc magic link; and nothing outside the
 * tree is read, written, created or removed while it refuses. Without
 * openat2 the calls fail naming it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util/fs.h"
#include "util/user_tree.h"

static char base[64], tree[96], outside[96], secret[128], outdir[128];

static void put(const char *path, const char *text)
{
    CHECK_OK(fs_write_file_atomic(path, text, strlen(text), 0644));
}

static int planted(const char *target, const char *rel)
{
    char at[256];
    snprintf(at, sizeof at, "%s/%s", tree, rel);
    return symlink(target, at);
}

/* The secret and the outside folder are as they were: not read into a
 * reply (the callers check), not written, not removed, nothing added. */
static void outside_untouched(void)
{
    size_t n = 0;
    char *text = NULL;
    CHECK_OK(fs_read_file(secret, 4096, &text, &n));
    CHECK_STR_EQ(text, "the administrator's token\n");
    free(text);
    CHECK(fs_is_dir(outdir));
    char extra[192];
    snprintf(extra, sizeof extra, "%s/made", outdir);
    CHECK(!fs_is_file(extra) && !fs_is_dir(extra));
    snprintf(extra, sizeof extra, "%s/kept", outdir);
    CHECK(fs_is_file(extra));
}

/* Every operation on rel is refused with `code`. */
static void refused(int root, const char *rel, int code)
{
    int fd = -1;
    char *text = NULL;
    DIR *d = NULL;
    char msg[512];
    int got = loom_err_take(utree_open_read(root, rel, &fd), msg, sizeof msg);
    CHECK_MSG(got == code, "read %s: %d %s", rel, got, msg);
    CHECK(fd == -1);
    CHECK(loom_err_take(utree_read_file(root, rel, 1 << 20, &text, NULL), NULL, 0) == code);
    CHECK(text == NULL);
    CHECK(loom_err_take(utree_open_write(root, rel, 0644, &fd), NULL, 0) == code);
    CHECK(loom_err_take(utree_list(root, rel, &d), NULL, 0) != LOOM_OK);
    CHECK(d == NULL);
    char made[256];
    snprintf(made, sizeof made, "%s/made", rel);
    CHECK(loom_err_take(utree_create(root, made, 0644, &fd), NULL, 0) != LOOM_OK);
    CHECK(loom_err_take(utree_mkdirs(root, made, 0755), NULL, 0) != LOOM_OK);
    CHECK(fd == -1);
    outside_untouched();
}

static void test_links_refused(int root)
{
    char msg[512];
    CHECK(planted(secret, "abs-file") == 0);           /* absolute, to a file */
    CHECK(planted(outdir, "abs-dir") == 0);            /* absolute, to a folder */
    CHECK(planted("../outside/secret", "rel-file") == 0); /* relative through ".." */
    CHECK(planted("../outside", "rel-dir") == 0);
    CHECK(planted("inner", "inner-link") == 0);        /* even one that stays inside */
    refused(root, "abs-file", LOOM_E_FORBIDDEN);
    refused(root, "rel-file", LOOM_E_FORBIDDEN);
    refused(root, "inner-link", LOOM_E_FORBIDDEN);
    refused(root, "abs-dir", LOOM_E_FORBIDDEN);
    refused(root, "rel-dir", LOOM_E_FORBIDDEN);
    /* A link in the middle of the path. */
    refused(root, "abs-dir/kept", LOOM_E_FORBIDDEN);
    refused(root, "rel-dir/kept", LOOM_E_FORBIDDEN);
    int fd = -1;
    CHECK(loom_err_take(utree_open_read(root, "abs-file", &fd), msg, sizeof msg) ==
          LOOM_E_FORBIDDEN);
    CHECK_CONTAINS(msg, "abs-file");
    CHECK_CONTAINS(msg, "symbolic link");
    CHECK(errno == ELOOP || errno == EXDEV);
    /* Creating over a planted link neither follows nor replaces it. */
    CHECK(loom_err_take(utree_create(root, "abs-file", 0644, &fd), NULL, 0) != LOOM_OK);
    CHECK(loom_err_take(utree_write_file(root, "abs-file", "x", 1, 0644), NULL, 0) == LOOM_OK);
    outside_untouched();
    /* A renamed-in link is never a way out either: rename moves the link. */
    CHECK(loom_err_take(utree_rename(root, "abs-dir", "moved"), NULL, 0) == LOOM_OK);
    refused(root, "moved/kept", LOOM_E_FORBIDDEN);
}

static void test_dotdot_and_absolute(int root)
{
    refused(root, "../outside/secret", LOOM_E_FORBIDDEN);
    refused(root, "inner/../../outside/secret", LOOM_E_FORBIDDEN);
    refused(root, "inner/..", LOOM_E_FORBIDDEN);
    refused(root, secret, LOOM_E_FORBIDDEN);
    CHECK(loom_err_take(utree_unlink(root, "../outside/secret"), NULL, 0) == LOOM_E_FORBIDDEN);
    CHECK(loom_err_take(utree_remove_all(root, "../outside"), NULL, 0) == LOOM_E_FORBIDDEN);
    CHECK(loom_err_take(utree_rename(root, "inner/file", "../outside/made"), NULL, 0) ==
          LOOM_E_FORBIDDEN);
    outside_untouched();
}

static void test_magic_link(void)
{
    /* /proc/self/exe and /proc/self/fd/N are magic links: refused even with
     * /proc/self as the root. */
    int proc;
    char self[32];
    snprintf(self, sizeof self, "/proc/%d", (int)getpid());
    CHECK(loom_err_take(utree_root(self, &proc), NULL, 0) == LOOM_OK);
    int fd = -1;
    CHECK(loom_err_take(utree_open_read(proc, "exe", &fd), NULL, 0) == LOOM_E_FORBIDDEN);
    CHECK(loom_err_take(utree_open_read(proc, "fd/0", &fd), NULL, 0) == LOOM_E_FORBIDDEN);
    CHECK(loom_err_take(utree_open_dir(proc, "cwd", &fd), NULL, 0) == LOOM_E_FORBIDDEN);
    CHECK(fd == -1);
    close(proc);
}

static void test_fifo_and_folder(int root)
{
    char at[256];
    snprintf(at, sizeof at, "%s/fifo", tree);
    CHECK(mkfifo(at, 0600) == 0);
    int fd = -1;
    /* Refused at once, not after waiting for a writer. */
    CHECK(loom_err_take(utree_open_read(root, "fifo", &fd), NULL, 0) == LOOM_E_INVALID);
    CHECK(loom_err_take(utree_open_read(root, "inner", &fd), NULL, 0) == LOOM_E_INVALID);
    CHECK(fd == -1);
}

static void test_ordinary_use(int root)
{
    char *text = NULL;
    size_t n = 0;
    CHECK(loom_err_take(utree_mkdirs(root, "a/b/c", 0755), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(utree_mkdirs(root, "a/b/c", 0755), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(utree_write_file(root, "a/b/c/f", "hello", 5, 0644), NULL, 0) ==
          LOOM_OK);
    CHECK(loom_err_take(utree_read_file(root, "a/b/c/f", 100, &text, &n), NULL, 0) == LOOM_OK);
    CHECK(n == 5);
    CHECK_STR_EQ(text, "hello");
    free(text);
    CHECK(loom_err_take(utree_read_file(root, "a/b/c/f", 4, &text, &n), NULL, 0) ==
          LOOM_E_TOO_LARGE);
    int fd = -1;
    CHECK(loom_err_take(utree_create(root, "a/b/c/f", 0644, &fd), NULL, 0) == LOOM_E_CONFLICT);
    CHECK(loom_err_take(utree_open_read(root, "a/missing", &fd), NULL, 0) == LOOM_E_NOT_FOUND);
    DIR *d = NULL;
    CHECK(loom_err_take(utree_list(root, "a/b/c", &d), NULL, 0) == LOOM_OK);
    int names = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        names += strcmp(e->d_name, "f") == 0;
    if (d)
        closedir(d);
    CHECK(names == 1);
    CHECK(loom_err_take(utree_unlink(root, "a/b/c/f"), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(utree_unlink(root, "a/b/c/f"), NULL, 0) == LOOM_OK); /* gone: fine */
}

/* A file the host names by full path (a child's output): neither it nor
 * its folder may be a link; a plain one is appended to. */
static void test_append_path(void)
{
    char path[256];
    int fd = -1;
    snprintf(path, sizeof path, "%s/rel-file", tree);
    CHECK(loom_err_take(utree_open_append_path(path, 0644, &fd), NULL, 0) == LOOM_E_FORBIDDEN);
    snprintf(path, sizeof path, "%s/rel-dir/made", tree);
    char msg[512];
    int code = loom_err_take(utree_open_append_path(path, 0644, &fd), msg, sizeof msg);
    CHECK_MSG(code == LOOM_E_FORBIDDEN, "%d %s", code, msg);
    CHECK(fd == -1);
    outside_untouched();
    snprintf(path, sizeof path, "%s/inner/out.log", tree);
    for (int i = 0; i < 2; i++) {
        CHECK(loom_err_take(utree_open_append_path(path, 0644, &fd), NULL, 0) == LOOM_OK);
        CHECK(fd >= 0 && write(fd, "line\n", 5) == 5);
        if (fd >= 0)
            close(fd);
    }
    char *text = NULL;
    CHECK_OK(fs_read_file(path, 100, &text, NULL));
    CHECK_STR_EQ(text, "line\nline\n");
    free(text);
}

/* A kernel without openat2 (a seccomp filter says ENOSYS, as Linux before
 * 5.6 does): the call fails, says which call is missing, and opens
 * nothing. In a child, which the filter stays with. */
static void test_no_openat2(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            _exit(2);
        int root, fd = -1;
        char msg[512];
        if (loom_err_take(utree_root(tree, &root), NULL, 0) != LOOM_OK)
            _exit(3);
        int code_got = loom_err_take(utree_open_read(root, "inner/out.log", &fd), msg, sizeof msg);
        _exit(code_got == LOOM_E_UNSUPPORTED && fd == -1 && strstr(msg, "openat2") ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* A deep tree with links to the outside at every level goes whole, and
 * the outside stays. */
static void test_remove_all(int root)
{
    char rel[8192] = "deep";
    CHECK(loom_err_take(utree_mkdirs(root, rel, 0755), NULL, 0) == LOOM_OK);
    for (int i = 0; i < 100; i++) {
        char link[8300];
        snprintf(link, sizeof link, "%s/%s/out", tree, rel);
        CHECK(symlink(outdir, link) == 0);
        strcat(rel, "/d");
        CHECK(loom_err_take(utree_mkdirs(root, rel, 0755), NULL, 0) == LOOM_OK);
    }
    char msg[512];
    int code = loom_err_take(utree_remove_all(root, "deep"), msg, sizeof msg);
    CHECK_MSG(code == LOOM_OK, "%s", msg);
    char at[256];
    snprintf(at, sizeof at, "%s/deep", tree);
    CHECK(!fs_is_dir(at));
    outside_untouched();
    /* The whole tree by path, links and all. */
    CHECK(loom_err_take(utree_delete(tree), NULL, 0) == LOOM_OK);
    CHECK(!fs_is_dir(tree));
    outside_untouched();
    CHECK(loom_err_take(utree_delete(tree), NULL, 0) == LOOM_OK); /* gone: fine */
}

/* A path a user names (utree_resolve_named): links that stay inside the
 * tree are followed, one leading out fails as EXDEV whether or not its
 * target exists (no existence oracle), and only inside is ENOENT told. */
static void test_resolve_named(void)
{
    char path[PATH_MAX], at[256], want[PATH_MAX];
    snprintf(at, sizeof at, "%s/inner/model.bin", tree);
    put(at, "weights\n");
    CHECK(planted("inner/model.bin", "named-in") == 0);
    CHECK(planted(secret, "named-out") == 0);
    CHECK(planted("../outside/no-such-file", "named-missing-out") == 0);
    CHECK(realpath(at, want) != NULL);
    CHECK(utree_resolve_named(tree, "named-in", 1, path, sizeof path) == 0);
    CHECK_STR_EQ(path, want);
    CHECK(utree_resolve_named(tree, "named-out", 1, path, sizeof path) != 0 && errno == EXDEV);
    CHECK(utree_resolve_named(tree, "named-missing-out", 1, path, sizeof path) != 0 &&
          errno == EXDEV);
    CHECK(utree_resolve_named(tree, "../outside/secret", 1, path, sizeof path) != 0 &&
          errno == EXDEV);
    CHECK(utree_resolve_named(tree, secret, 1, path, sizeof path) != 0 && errno == EXDEV);
    CHECK(utree_resolve_named(tree, "inner/none", 1, path, sizeof path) != 0 &&
          errno == ENOENT);
    CHECK(utree_resolve_named(tree, "inner", 1, path, sizeof path) != 0 && errno == EISDIR);
    CHECK(utree_resolve_named(tree, "inner", 0, path, sizeof path) == 0);
    CHECK(!utree_name_ok("") && !utree_name_ok("a/../b") && !utree_name_ok("/a"));
    CHECK(utree_name_ok("a/b..c") && utree_name_ok("./a"));
    outside_untouched();
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/loom-utree-XXXXXX");
    if (!mkdtemp(base))
        return 1;
    snprintf(tree, sizeof tree, "%s/tree", base);
    snprintf(outside, sizeof outside, "%s/outside", base);
    snprintf(secret, sizeof secret, "%s/secret", outside);
    snprintf(outdir, sizeof outdir, "%s/dir", outside);
    CHECK_OK(fs_mkdir_p(tree));
    CHECK_OK(fs_mkdir_p(outdir));
    char inner[160], kept[192];
    snprintf(inner, sizeof inner, "%s/inner", tree);
    CHECK_OK(fs_mkdir_p(inner));
    put(secret, "the administrator's token\n");
    snprintf(kept, sizeof kept, "%s/kept", outdir);
    put(kept, "kept\n");
    int root = -1;
    CHECK(loom_err_take(utree_root(tree, &root), NULL, 0) == LOOM_OK);
    test_links_refused(root);
    test_dotdot_and_absolute(root);
    test_magic_link();
    test_fifo_and_folder(root);
    test_ordinary_use(root);
    test_append_path();
    test_no_openat2();
    test_resolve_named();
    test_remove_all(root);
    close(root);
    /* The root itself may not be a link either. */
    char msg[512];
    char link_root[128];
    snprintf(link_root, sizeof link_root, "%s/link-root", base);
    CHECK(symlink(outside, link_root) == 0);
    int code = loom_err_take(utree_root(link_root, &root), msg, sizeof msg);
    CHECK_MSG(code == LOOM_E_FORBIDDEN, "%d %s", code, msg);
    CHECK_OK(fs_rm_rf(base));
    return CHECK_DONE();
}
