/*
 * tests/unit/lua/test_lua_append.c - what loom.append may write: only plain
 * file names, only in the logger's own folder (plugin_dir), and all of an
 * exec's plugins together at most LOOM_PLUGIN_WRITE_LIMIT bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "lua_fakes.h"

static char result[] = "/tmp/loom-lua-append-XXXXXX";

static long file_size(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static char *slurp(const char *path)
{
    static char text[256];
    FILE *f = fopen(path, "r");
    text[0] = 0;
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = 0;
        fclose(f);
    }
    return text;
}

/* Creates a logger of `script` with RESULT_DIR/plugins/<name>/ as its own
 * folder (or none) and returns the factory; *inst is set. */
static const loom_logger_factory *make(lua_plugin **p, const char *script, const char *name,
                                       int with_folder, loom_logger_instance **inst)
{
    char err[512] = "";
    *p = open_lua(script_path(script), NULL, err, sizeof err);
    CHECK_MSG(*p != NULL, "%s", err);
    const loom_logger_factory *f = *p ? find_factory(*p, LOOM_KIND_LOGGER, name) : NULL;
    static char own[512];
    snprintf(own, sizeof own, "%s/plugins/%s", result, name);
    mkdir(own, 0755);
    loom_logger_config config = {.struct_size = sizeof config, .log_dir = result,
                                 .config_json = "{}", .result_dir = result,
                                 .plugin_dir = with_folder ? own : NULL};
    *inst = NULL;
    loom_error *e = f ? f->create(f, &config, inst) : NULL;
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    return *inst ? f : NULL;
}

static void test_flood_stops_at_the_limit(void)
{
    setenv("LOOM_PLUGIN_WRITE_LIMIT", "3M", 1);
    lua_plugin *p;
    loom_logger_instance *inst;
    const loom_logger_factory *f = make(&p, "bad_append_flood.lua", "flooder", 1, &inst);
    loom_train_info info = {.struct_size = sizeof info, .exec_id = "x"};
    if (f) {
        loom_error *e = f->on_train_begin(inst, &info);
        CHECK(e != NULL);
        CHECK_CONTAINS(loom_err_message(e), "bad_append_flood.lua:");
        CHECK_CONTAINS(loom_err_message(e), "plugin write limit (3 MiB) is reached");
        loom_err_free(e);
        f->destroy(inst);
    }
    char own[512];
    snprintf(own, sizeof own, "%s/plugins/flooder", result);
    CHECK(file_size(own, "flood.txt") == 3l << 20);
    lua_plugin_close(p);
    /* A new instance (a restarted logger, another process) counts what
     * the exec's plugins already wrote. */
    f = make(&p, "bad_append_flood.lua", "flooder", 1, &inst);
    if (f) {
        loom_error *e = f->on_train_begin(inst, &info);
        CHECK_CONTAINS(loom_err_message(e), "is reached");
        loom_err_free(e);
        f->destroy(inst);
    }
    CHECK(file_size(own, "flood.txt") == 3l << 20);
    lua_plugin_close(p);
    unsetenv("LOOM_PLUGIN_WRITE_LIMIT");
}

static void test_host_files_are_out_of_reach(void)
{
    char path[512], log[512];
    snprintf(path, sizeof path, "%s/training.json", result);
    FILE *fp = fopen(path, "w");
    fputs("{\"real\": 1}", fp);
    fclose(fp);
    snprintf(log, sizeof log, "%s/log", result);
    mkdir(log, 0755);
    strcat(log, "/driver");
    mkdir(log, 0755);
    strcat(log, "/stdout");
    fp = fopen(log, "w");
    fputs("real\n", fp);
    fclose(fp);
    lua_plugin *p;
    loom_logger_instance *inst;
    const loom_logger_factory *f = make(&p, "bad_append_targets.lua", "targeter", 1, &inst);
    loom_train_info info = {.struct_size = sizeof info, .exec_id = "x"};
    loom_metric m = {"loss", 1};
    if (f) {
        loom_error *e = f->on_train_begin(inst, &info); /* its own training.json */
        CHECK_MSG(e == NULL, "%s", loom_err_message(e));
        loom_err_free(e);
        e = f->log_train_metrics(inst, &m, 1, 1, 1, 1);
        CHECK_CONTAINS(loom_err_message(e), "is not a plain file name");
        loom_err_free(e);
        e = f->on_train_end(inst, LOOM_TRAIN_FINISHED, "");
        CHECK_CONTAINS(loom_err_message(e), "'.hidden' is not a plain file name");
        loom_err_free(e);
        f->destroy(inst);
    }
    CHECK_STR_EQ(slurp(path), "{\"real\": 1}");
    CHECK_STR_EQ(slurp(log), "real\n");
    char own[512];
    snprintf(own, sizeof own, "%s/plugins/targeter/training.json", result);
    CHECK_STR_EQ(slurp(own), "{\"forged\": true}");
    lua_plugin_close(p);
}

static void test_no_folder_no_append(void)
{
    lua_plugin *p;
    loom_logger_instance *inst;
    const loom_logger_factory *f = make(&p, "bad_append_targets.lua", "targeter", 0, &inst);
    loom_train_info info = {.struct_size = sizeof info, .exec_id = "x"};
    if (f) {
        loom_error *e = f->on_train_begin(inst, &info);
        CHECK_CONTAINS(loom_err_message(e), "has no folder of its own");
        loom_err_free(e);
        f->destroy(inst);
    }
    lua_plugin_close(p);
}

int main(void)
{
    if (!mkdtemp(result))
        return 1;
    char plugins[512];
    snprintf(plugins, sizeof plugins, "%s/plugins", result);
    mkdir(plugins, 0755);
    test_flood_stops_at_the_limit();
    test_host_files_are_out_of_reach();
    test_no_folder_no_append();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", result);
    if (system(cmd) != 0)
        return 1;
    return CHECK_DONE();
}
