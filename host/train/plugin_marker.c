/* train/plugin_marker.c - see plugin_marker.h. */
#include "train/plugin_marker.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/user_tree.h"

#define MARKER_MAX 256

static void marker_path(const char *log_dir, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/plugin", log_dir);
}

int plugin_marker_open(const char *log_dir)
{
    char path[PATH_MAX];
    marker_path(log_dir, path, sizeof path);
    return open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

void plugin_marker_set(int fd, const char *what)
{
    if (fd < 0)
        return;
    /* One write at offset 0, ended by a NUL: the reader stops there. */
    char buf[MARKER_MAX];
    size_t n = what ? strlen(what) : 0;
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, what ? what : "", n);
    buf[n] = 0;
    if (pwrite(fd, buf, n + 1, 0) < 0)
        return; /* the marker is a hint; training goes on without it */
}

void plugin_marker_clear(const char *result_dir, const char *log_rel)
{
    char rel[PATH_MAX];
    marker_path(log_rel, rel, sizeof rel);
    loom_err_free(utree_unlink_in(result_dir, rel));
}

void plugin_marker_read(const char *result_dir, const char *log_rel, char *out, size_t outlen)
{
    char rel[PATH_MAX], buf[MARKER_MAX];
    out[0] = 0;
    marker_path(log_rel, rel, sizeof rel);
    int fd = -1;
    if (loom_err_take(utree_open_read_in(result_dir, rel, &fd), NULL, 0) != LOOM_OK)
        return;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = 0;
    snprintf(out, outlen, "%s", buf);
}
