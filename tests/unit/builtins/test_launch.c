/*
 * tests/unit/builtins/test_launch.c - the launch-style frameworks command.so
 * and distPyTorch.so: their plans (argv, env, cwd per worker) captured by a
 * fake sink, and the refusals of a missing or unusable --model-main.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "builtin_plugin.h"

#define MAX_WORKERS 8
#define MAX_STRINGS 16

typedef struct recorded_worker {
    char *argv[MAX_STRINGS];
    uint32_t argc;
    char *env[MAX_STRINGS];
    uint32_t envc;
    int cwd_is_null;
} recorded_worker;

typedef struct recorder {
    recorded_worker workers[MAX_WORKERS];
    uint32_t count;
    uint32_t fail_at; /* refuse the add_worker call with this rank + 1; 0: never */
} recorder;

static loom_error *record_worker(const loom_launch_sink *sink,
                                 const char *const *argv, uint32_t argc,
                                 const char *const *env, uint32_t envc,
                                 const char *cwd)
{
    recorder *rec = sink->host_data;
    if (rec->fail_at && rec->count + 1 == rec->fail_at)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "sink refused worker %u", rec->count);
    if (rec->count == MAX_WORKERS || argc > MAX_STRINGS || envc > MAX_STRINGS)
        return loom_err(LOOM_ERR_INTERNAL, "recorder is full");
    recorded_worker *w = &rec->workers[rec->count++];
    for (uint32_t i = 0; i < argc; i++)
        w->argv[i] = strdup(argv[i]);
    for (uint32_t i = 0; i < envc; i++)
        w->env[i] = strdup(env[i]);
    w->argc = argc;
    w->envc = envc;
    w->cwd_is_null = cwd == NULL;
    return NULL;
}

static void recorder_reset(recorder *rec)
{
    for (uint32_t w = 0; w < rec->count; w++) {
        for (uint32_t i = 0; i < rec->workers[w].argc; i++)
            free(rec->workers[w].argv[i]);
        for (uint32_t i = 0; i < rec->workers[w].envc; i++)
            free(rec->workers[w].env[i]);
    }
    memset(rec, 0, sizeof *rec);
}

static const char *env_value(const recorded_worker *w, const char *key)
{
    size_t len = strlen(key);
    for (uint32_t i = 0; i < w->envc; i++)
        if (strncmp(w->env[i], key, len) == 0 && w->env[i][len] == '=')
            return w->env[i] + len + 1;
    return NULL;
}

static void write_file(const char *dir, const char *name, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("echo hello\n", f);
        fclose(f);
    }
    chmod(path, mode);
}

static loom_launch_request base_request(const char *code_dir)
{
    static const char *const args[] = {"--epochs", "5"};
    loom_launch_request r = {
        .struct_size = sizeof r,
        .num_workers = 1,
        .worker_device_num = 1,
        .master_port = 29500,
        .exec_id = "exec-1",
        .code_dir = code_dir,
        .data_dir = "/data",
        .result_dir = "/result",
        .log_dir = "/result/log",
        .device_type = "cpu",
        .master_addr = "127.0.0.1",
        .args = args,
        .arg_count = 2,
    };
    return r;
}

static void test_command(const char *code_dir)
{
    test_plugin tp = {0};
    const loom_framework_factory *f =
        test_plugin_open(&tp, COMMAND_PLUGIN, LOOM_FRAMEWORK_FACTORY_ID);
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_STR_EQ(tp.module->id, "command");
    CHECK(f->style == LOOM_FRAMEWORK_LAUNCH);
    CHECK(tp.module->get_factory(LOOM_SEARCH_FACTORY_ID) == NULL);

    recorder rec = {0};
    loom_launch_sink sink = {sizeof sink, &rec, record_worker};

    /* Three workers running the executable script directly. */
    loom_launch_request r = base_request(code_dir);
    r.model_main = "train.sh";
    r.num_workers = 3;
    loom_error *err = f->plan_launch(f, &r, &sink);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    CHECK(rec.count == 3);
    for (uint32_t i = 0; i < rec.count; i++) {
        recorded_worker *w = &rec.workers[i];
        CHECK(w->argc == 3);
        CHECK_STR_EQ(w->argv[0], "./train.sh");
        CHECK_STR_EQ(w->argv[1], "--epochs");
        CHECK_STR_EQ(w->argv[2], "5");
        char rank_text[8];
        snprintf(rank_text, sizeof rank_text, "%u", i);
        const char *rank = rank_text;
        CHECK_STR_EQ(env_value(w, "RANK"), rank);
        CHECK_STR_EQ(env_value(w, "WORLD_SIZE"), "3");
        CHECK(w->cwd_is_null);
    }
    recorder_reset(&rec);

    /* num_workers 0 means the default, one; a non-executable file runs
     * through /bin/sh. */
    r.num_workers = 0;
    r.model_main = "plain.sh";
    r.arg_count = 0;
    r.args = NULL;
    err = f->plan_launch(f, &r, &sink);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    CHECK(rec.count == 1);
    CHECK(rec.workers[0].argc == 2);
    CHECK_STR_EQ(rec.workers[0].argv[0], "/bin/sh");
    CHECK_STR_EQ(rec.workers[0].argv[1], "./plain.sh");
    recorder_reset(&rec);

    /* Refusals: no model_main, a missing file, a directory. */
    r.model_main = NULL;
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "--model-main is required");
    CHECK(rec.count == 0);
    loom_err_free(err);

    r.model_main = "missing.sh";
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(loom_err_message(err), "'missing.sh' not found");
    CHECK_CONTAINS(loom_err_message(err), code_dir);
    CHECK(rec.count == 0);
    loom_err_free(err);

    r.model_main = "subdir";
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "not a regular file");
    loom_err_free(err);

    /* An error from the sink stops the plan and comes back unchanged. */
    r.model_main = "train.sh";
    r.num_workers = 4;
    rec.fail_at = 2;
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_RESOURCE_EXHAUSTED);
    CHECK_CONTAINS(loom_err_message(err), "sink refused worker 1");
    CHECK(rec.count == 1);
    loom_err_free(err);
    recorder_reset(&rec);

    test_plugin_close(&tp);
}

static void test_distpytorch(const char *code_dir)
{
    test_plugin tp = {0};
    const loom_framework_factory *f =
        test_plugin_open(&tp, DISTPYTORCH_PLUGIN, LOOM_FRAMEWORK_FACTORY_ID);
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_STR_EQ(tp.module->id, "distPyTorch");
    CHECK(f->style == LOOM_FRAMEWORK_LAUNCH);

    recorder rec = {0};
    loom_launch_sink sink = {sizeof sink, &rec, record_worker};
    loom_launch_request r = base_request(code_dir);
    r.model_main = "ddp_train.py";
    r.num_workers = 2;
    r.master_port = 29511;
    r.master_addr = "10.0.0.5";
    loom_error *err = f->plan_launch(f, &r, &sink);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    CHECK(rec.count == 2);
    for (uint32_t i = 0; i < rec.count; i++) {
        recorded_worker *w = &rec.workers[i];
        CHECK(w->argc == 4);
        CHECK_STR_EQ(w->argv[0], "python3");
        CHECK_STR_EQ(w->argv[1], "./ddp_train.py");
        CHECK_STR_EQ(w->argv[2], "--epochs");
        CHECK_STR_EQ(w->argv[3], "5");
        char rank_text[8];
        snprintf(rank_text, sizeof rank_text, "%u", i);
        const char *rank = rank_text;
        CHECK_STR_EQ(env_value(w, "MASTER_ADDR"), "10.0.0.5");
        CHECK_STR_EQ(env_value(w, "MASTER_PORT"), "29511");
        CHECK_STR_EQ(env_value(w, "WORLD_SIZE"), "2");
        CHECK_STR_EQ(env_value(w, "RANK"), rank);
        CHECK_STR_EQ(env_value(w, "LOCAL_RANK"), rank);
        CHECK(w->cwd_is_null);
    }
    recorder_reset(&rec);

    /* Across nodes (ABI 1.7): ranks 0-1 on node1, 2 on node2, as torchrun
     * numbers them per node. */
    const char *nodes[] = {"node1", "node1", "node2"};
    r.num_workers = 3;
    r.worker_nodes = nodes;
    err = f->plan_launch(f, &r, &sink);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    CHECK(rec.count == 3);
    if (rec.count == 3) {
        static const char *const want[3][4] = {
            {"0", "2", "0", "3"}, {"1", "2", "0", "3"}, {"0", "1", "1", "3"}};
        for (uint32_t i = 0; i < 3; i++) {
            recorded_worker *w = &rec.workers[i];
            CHECK_STR_EQ(env_value(w, "LOCAL_RANK"), want[i][0]);
            CHECK_STR_EQ(env_value(w, "LOCAL_WORLD_SIZE"), want[i][1]);
            CHECK_STR_EQ(env_value(w, "GROUP_RANK"), want[i][2]);
            CHECK_STR_EQ(env_value(w, "NODE_RANK"), want[i][2]);
            CHECK_STR_EQ(env_value(w, "WORLD_SIZE"), want[i][3]);
        }
    }
    recorder_reset(&rec);
    /* A plugin of an older minor (struct_size before worker_nodes): one node. */
    r.struct_size = offsetof(loom_launch_request, worker_nodes);
    err = f->plan_launch(f, &r, &sink);
    CHECK(err == NULL && rec.count == 3);
    if (rec.count == 3)
        CHECK_STR_EQ(env_value(&rec.workers[2], "LOCAL_RANK"), "2");
    recorder_reset(&rec);
    r.struct_size = sizeof r;
    r.worker_nodes = NULL;

    /* No master_addr given: loopback. */
    r.master_addr = NULL;
    r.num_workers = 1;
    err = f->plan_launch(f, &r, &sink);
    CHECK(err == NULL);
    CHECK(rec.count == 1 && rec.count && env_value(&rec.workers[0], "MASTER_ADDR") &&
          strcmp(env_value(&rec.workers[0], "MASTER_ADDR"), "127.0.0.1") == 0);
    recorder_reset(&rec);

    r.model_main = NULL;
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "distPyTorch: --model-main is required");
    loom_err_free(err);

    r.model_main = "nope.py";
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(loom_err_message(err), "'nope.py' not found");
    loom_err_free(err);

    r.model_main = "ddp_train.py";
    r.master_port = 0;
    err = f->plan_launch(f, &r, &sink);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "MASTER_PORT");
    loom_err_free(err);
    CHECK(rec.count == 0);

    test_plugin_close(&tp);
}

int main(void)
{
    char code_dir[] = "/tmp/loom-test-launch-XXXXXX";
    CHECK(mkdtemp(code_dir) != NULL);
    write_file(code_dir, "train.sh", 0755);
    write_file(code_dir, "plain.sh", 0644);
    write_file(code_dir, "ddp_train.py", 0644);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/subdir", code_dir);
    mkdir(sub, 0755);

    test_command(code_dir);
    test_distpytorch(code_dir);

    const char *names[] = {"train.sh", "plain.sh", "ddp_train.py"};
    for (size_t i = 0; i < 3; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", code_dir, names[i]);
        unlink(path);
    }
    rmdir(sub);
    rmdir(code_dir);
    return CHECK_DONE();
}
