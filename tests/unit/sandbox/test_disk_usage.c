/* The disk a job's RESULT_DIR takes (host/util/disk_usage.c): files and
 * folders beneath count, a link to a large file outside does not (links
 * are never followed), and the entry bound stops the walk and says so. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "util/disk_usage.h"
#include "util/fs.h"

/* Writes `mib` MiB of non-zero bytes (allocated, not sparse). */
static void write_mib(const char *path, int mib)
{
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; fd >= 0 && i < mib; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            break;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int main(void)
{
    char dir[] = "/tmp/loom-disk-usage-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char tree[600], path[700];
    snprintf(tree, sizeof tree, "%s/tree", dir);
    snprintf(path, sizeof path, "%s/tree/a/b", dir);
    CHECK_OK(fs_mkdir_p(path));
    snprintf(path, sizeof path, "%s/tree/a/b/two", dir);
    write_mib(path, 2);
    snprintf(path, sizeof path, "%s/tree/one", dir);
    write_mib(path, 1);
    snprintf(path, sizeof path, "%s/outside", dir);
    write_mib(path, 8);
    char link[700];
    snprintf(link, sizeof link, "%s/tree/a/to-outside", dir);
    CHECK(symlink(path, link) == 0);
    snprintf(link, sizeof link, "%s/tree/a/to-root", dir);
    CHECK(symlink("/", link) == 0);

    disk_usage u;
    CHECK(disk_usage_measure(tree, 1000, &u) == 0);
    CHECK_MSG(u.bytes >= (3u << 20) && u.bytes < (4u << 20),
              "%llu bytes: expected the 3 MiB beneath, not the 8 MiB a link points at",
              (unsigned long long)u.bytes);
    CHECK(u.entries == 6); /* a, a/b, a/b/two, one, two links */
    CHECK(!u.truncated);

    CHECK(disk_usage_measure(tree, 2, &u) == 0);
    CHECK(u.truncated);
    CHECK(u.entries == 2);

    CHECK(disk_usage_measure(link, 1000, &u) == -1); /* the top is not followed either */
    CHECK_OK(fs_rm_rf(dir));
    return CHECK_DONE();
}
