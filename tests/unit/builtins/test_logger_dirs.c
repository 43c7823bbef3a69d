/*
 * tests/unit/builtins/test_logger_dirs.c - loggers are told the exec's
 * result directory and get RESULT_DIR/plugins/<name>/, created by the host,
 * as their own folder; without a result directory they get neither.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "train/logger_set.h"

static char tmp[] = "/tmp/loom-logger-dirs-XXXXXX";

static void read_text(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
}

static void open_close(const char *log_dir, const char *result_dir)
{
    char json[1024];
    snprintf(json, sizeof json,
             "[{\"name\": \"result_dir_logger\", \"path\": \"%s/result_dir_logger.so\"}]",
             LOOM_TEST_PLUGIN_DIR);
    logger_set *s = logger_set_open(NULL, json, LOOM_LOGGER_DRIVER, 0, "exec-1", log_dir, result_dir);
    CHECK(s != NULL);
    logger_set_close(s);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    char log_dir[512], result_dir[512], seen[600], text[600], expected[600];
    snprintf(log_dir, sizeof log_dir, "%s/log/driver", tmp);
    snprintf(result_dir, sizeof result_dir, "%s/result", tmp);
    CHECK(mkdir(result_dir, 0755) == 0); /* an exec folder always exists */

    open_close(log_dir, result_dir);
    snprintf(seen, sizeof seen, "%s/plugins/result_dir_logger/seen.txt", result_dir);
    read_text(seen, text, sizeof text);
    snprintf(expected, sizeof expected, "%s\n", result_dir);
    CHECK_STR_EQ(text, expected);

    /* No result directory: no folder of its own, and nothing made for it. */
    char other[512];
    snprintf(other, sizeof other, "%s/other-log", tmp);
    open_close(other, NULL);
    snprintf(seen, sizeof seen, "%s/seen.txt", other);
    read_text(seen, text, sizeof text);
    CHECK_STR_EQ(text, "no folder\n");

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
