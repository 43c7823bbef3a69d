/* A confined child: it reads and writes inside what it was given, and every
 * attempt outside fails (Landlock); as root it becomes the given uid, owns
 * its write folder, and a link planted there does not give it what the
 * link points at. Without Landlock (old kernel), the Landlock checks are
 * reported as not run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../check.h"
#include "util/fs.h"
#include "util/sandbox.h"

static char root[64], inside[128], readonly[128], outside[128], secret[160], ro_file[160];

static void write_text(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror(path);
        close(fd);
    }
}

static int can_open(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static int can_list(const char *path)
{
    DIR *d = opendir(path);
    if (d)
        closedir(d);
    return d != NULL;
}

/* Runs in the child after sandbox_apply; its exit status is its failures. */
static int confined_checks(int landlock, int as_uid)
{
    char path[256];
    snprintf(path, sizeof path, "%s/made-inside", inside);
    CHECK(can_open(path, O_WRONLY | O_CREAT));
    CHECK(can_open(path, O_RDONLY));
    CHECK(unlink(path) == 0);
    snprintf(path, sizeof path, "%s/sub-%d", inside, as_uid);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(can_open(ro_file, O_RDONLY));
    CHECK(can_list(readonly));
    if (as_uid)
        CHECK(getuid() == (uid_t)as_uid && geteuid() == (uid_t)as_uid && getgid() == (gid_t)as_uid);
    if (!as_uid && geteuid() == 0) {
        /* Root without capabilities: another uid's private file stays
         * closed even where reading is allowed, and nothing comes back. */
        snprintf(path, sizeof path, "%s/others", readonly);
        CHECK(!can_open(path, O_RDONLY) && errno == EACCES);
        char status[8192] = "";
        FILE *f = fopen("/proc/self/status", "r"); /* its size reads as 0 */
        size_t n = f ? fread(status, 1, sizeof status - 1, f) : 0;
        status[n] = 0;
        if (f)
            fclose(f);
        CHECK_CONTAINS(status, "CapEff:\t0000000000000000");
        CHECK_CONTAINS(status, "CapBnd:\t0000000000000000");
    }
    if (landlock) {
        CHECK(!can_open(ro_file, O_WRONLY));
        CHECK(!can_open(ro_file, O_RDWR));
        CHECK(!can_open(secret, O_RDONLY));
        CHECK(!can_open(secret, O_WRONLY));
        CHECK(!can_list(outside));
        snprintf(path, sizeof path, "%s/new", outside);
        CHECK(!can_open(path, O_WRONLY | O_CREAT));
        CHECK(errno == EACCES);
        snprintf(path, sizeof path, "%s/new", readonly);
        CHECK(!can_open(path, O_WRONLY | O_CREAT));
        /* Through the planted link: the path resolves outside. */
        snprintf(path, sizeof path, "%s/link", inside);
        CHECK(!can_open(path, O_RDONLY));
        CHECK(!can_open(path, O_WRONLY));
        /* Nor by moving a file out, or a hard link in. */
        snprintf(path, sizeof path, "%s/hard", inside);
        CHECK(link(secret, path) != 0);
    }
    /* From ABI 6 the job cannot signal the host (its parent here). */
    if (landlock >= 6)
        CHECK(kill(getppid(), 0) != 0 && errno == EPERM);
    return check_failed;
}

static int run_confined(const sandbox_spec *spec, int landlock, int as_uid)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        check_passed = check_failed = 0;
        loom_error *e = sandbox_apply(spec);
        if (e) {
            fprintf(stderr, "sandbox_apply: %s\n", loom_err_message(e));
            _exit(100);
        }
        _exit(confined_checks(landlock, as_uid));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

int main(void)
{
    int abi = sandbox_landlock_abi();
    printf("Landlock ABI %d, %s\n", abi, geteuid() == 0 ? "root" : "not root");
    snprintf(root, sizeof root, "/tmp/loom-sandbox-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    chmod(root, 0755);
    snprintf(inside, sizeof inside, "%s/inside", root);
    snprintf(readonly, sizeof readonly, "%s/readonly", root);
    snprintf(outside, sizeof outside, "%s/outside", root);
    snprintf(secret, sizeof secret, "%s/secret", outside);
    snprintf(ro_file, sizeof ro_file, "%s/data", readonly);
    CHECK(mkdir(inside, 0755) == 0 && mkdir(readonly, 0755) == 0 && mkdir(outside, 0755) == 0);
    write_text(ro_file, "shared data\n", 0644);
    write_text(secret, "password hashes\n", 0600);
    char others[200];
    snprintf(others, sizeof others, "%s/others", readonly);
    write_text(others, "another user's\n", 0600);
    if (geteuid() == 0)
        CHECK(chown(others, 200777, 200777) == 0);
    char link_path[200];
    snprintf(link_path, sizeof link_path, "%s/link", inside);
    CHECK(symlink(secret, link_path) == 0);

    const char *reads[] = {readonly, "/usr", "/lib", "/lib64", "/proc", NULL};
    const char *writes[] = {inside, NULL};
    const char *devices[] = {"/dev/null", "/does/not/exist", NULL};
    sandbox_spec spec = {.read = reads, .write = writes, .device = devices};
    if (abi == 0)
        printf("NOT TESTED: no Landlock in this kernel; only the uid and no_new_privs parts run\n");
    CHECK_MSG(run_confined(&spec, abi, 0) == 0, "the confined child (same uid) failed checks");

    if (geteuid() == 0) {
        uid_t uid = 200123;
        sandbox_spec as_user = spec;
        as_user.switch_ids = 1;
        as_user.uid = uid;
        as_user.gid = uid;
        CHECK_MSG(run_confined(&as_user, abi, (int)uid) == 0,
                  "the confined child (uid %u) failed checks", (unsigned)uid);
        struct stat st;
        CHECK(stat(inside, &st) == 0 && st.st_uid == uid && (st.st_mode & 0777) == 0700);
        CHECK(lstat(link_path, &st) == 0 && st.st_uid == uid);
        /* The walk did not follow the link to the secret. */
        CHECK(stat(secret, &st) == 0 && st.st_uid == 0);
        /* Even without Landlock, the uid cannot read the root-only file. */
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            if (setgid(uid) != 0 || setuid(uid) != 0)
                _exit(100);
            _exit(can_open(secret, O_RDONLY) ? 1 : 0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    } else {
        printf("NOT TESTED: switching to a job uid (needs root)\n");
    }

    /* A missing write path is an error, named. */
    const char *missing[] = {"/nonexistent/loom-exec", NULL};
    sandbox_spec bad = {.write = missing};
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        loom_error *e = sandbox_apply(&bad);
        int named = e && strstr(loom_err_message(e), "/nonexistent/loom-exec") != NULL;
        loom_err_free(e);
        _exit(abi == 0 || named ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    CHECK_OK(fs_rm_rf(root));
    return CHECK_DONE();
}
