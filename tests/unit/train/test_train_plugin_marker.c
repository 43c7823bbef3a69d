/* The plugin marker: what a worker wrote before it was SIGKILLed inside a
 * plugin is read back by name; a cleared or emptied marker reads as none;
 * a long name is cut, not overrun; a marker the job made a link is not
 * followed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "train/plugin_marker.h"

int main(void)
{
    char dir[] = "/tmp/loom-marker-XXXXXX", got[512];
    CHECK(mkdtemp(dir) != NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = plugin_marker_open(dir);
        plugin_marker_set(fd, "worker logger plugin first");
        plugin_marker_set(fd, NULL);
        plugin_marker_set(fd, "worker logger plugin crash");
        raise(SIGKILL);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK_STR_EQ(got, "worker logger plugin crash");

    int fd = plugin_marker_open(dir);
    CHECK(fd >= 0);
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK_STR_EQ(got, "");
    char long_name[1000];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    plugin_marker_set(fd, long_name);
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK(strlen(got) > 100 && strlen(got) < sizeof long_name - 1);
    plugin_marker_set(fd, "");
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK_STR_EQ(got, "");
    close(fd);

    plugin_marker_clear(dir, ".");
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK_STR_EQ(got, "");

    /* A job that replaced its marker with a link to a file it cannot read
     * learns nothing of it through the coordinator's message. */
    char secret[64], link[64];
    snprintf(secret, sizeof secret, "%s.secret", dir);
    FILE *f = fopen(secret, "w");
    CHECK(f && fputs("the administrator's token", f) >= 0);
    if (f)
        fclose(f);
    snprintf(link, sizeof link, "%s/plugin", dir);
    CHECK(symlink(secret, link) == 0);
    plugin_marker_read(dir, ".", got, sizeof got);
    CHECK_STR_EQ(got, "");
    plugin_marker_clear(dir, ".");
    CHECK(access(secret, F_OK) == 0); /* the link went, not its target */
    CHECK(unlink(secret) == 0);
    rmdir(dir);
    return CHECK_DONE();
}
