/*
 * tests/unit/lua/test_lua_kinds.c - a valid Lua plugin of each kind driven
 * through the SDK vtables the bridge exposes, and the built-in python
 * launch adapter.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "lua_fakes.h"

static loom_launch_request make_request(uint32_t workers, const char *model_main)
{
    static const char *const args[] = {"--lr", "0.1"};
    static const char *const msd_env[] = {"MSD_A=1"};
    loom_launch_request r = {
        .struct_size = sizeof r,
        .num_workers = workers,
        .worker_device_num = 1,
        .master_port = 29500,
        .exec_id = "exec-7",
        .code_dir = "/tmp/code",
        .model_main = model_main,
        .data_dir = "/tmp/data",
        .result_dir = "/tmp/result",
        .log_dir = "/tmp/log",
        .device_type = "cpu",
        .master_addr = "127.0.0.1",
        .args = args,
        .arg_count = 2,
        .msd_env_count = 1,
        .msd_env = msd_env,
    };
    return r;
}

static void test_framework(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("framework_ok.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    const loom_registration *regs;
    CHECK(lua_plugin_registrations(p, &regs) == 1);
    CHECK(regs[0].kind == LOOM_KIND_FRAMEWORK);
    CHECK_STR_EQ(regs[0].name, "echo-launch");
    CHECK_STR_EQ(regs[0].version, "0.3");
    CHECK_STR_EQ(regs[0].description, "echoes the launch request");
    const loom_framework_factory *f = regs[0].factory;
    char verr[128];
    CHECK(validate(LOOM_KIND_FRAMEWORK, f, verr, sizeof verr) == 0);
    CHECK(f->style == LOOM_FRAMEWORK_LAUNCH);

    fake_launch sink;
    fake_launch_init(&sink);
    loom_launch_request req = make_request(2, "run.sh");
    loom_error *e = f->plan_launch(f, &req, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(sink.workers == 2);
    const fake_worker *w0 = &sink.worker[0], *w1 = &sink.worker[1];
    CHECK(w0->argc == 6);
    CHECK_STR_EQ(w0->argv[0], "sh");
    CHECK_STR_EQ(w0->argv[1], "run.sh");
    CHECK_STR_EQ(w0->argv[3], "exec-7");
    CHECK_STR_EQ(w0->argv[5], "0.1");
    /* map-form env: sorted, numbers converted */
    CHECK(w0->envc == 4);
    CHECK_STR_EQ(w0->env[0], "DEVICE=cpu");
    CHECK_STR_EQ(w0->env[1], "MASTER=127.0.0.1:29500");
    CHECK_STR_EQ(w0->env[2], "RANK=0");
    CHECK_STR_EQ(w0->env[3], "TWO=2");
    CHECK_STR_EQ(w0->cwd, "(null)");
    /* array-form env and a cwd */
    CHECK(w1->envc == 2);
    CHECK(worker_has_env(w1, "RANK=1"));
    CHECK(worker_has_env(w1, "MSD_A=1"));
    CHECK_STR_EQ(w1->cwd, "/tmp/data");

    /* the sink's own error comes back with its code and the worker */
    fake_launch_init(&sink);
    sink.fail_at = 1;
    e = f->plan_launch(f, &req, &sink.sink);
    CHECK(loom_err_code(e) == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(loom_err_message(e), "worker 1");
    CHECK_CONTAINS(loom_err_message(e), "no slot for worker 1");
    loom_err_free(e);
    lua_plugin_close(p);
}

static const double lr_choices[] = {0.1, 0.01, 0.001};
static const loom_param list_space[] = {
    {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_DOUBLE,
     .name = "lr", .choice_count = 3, .choice_doubles = lr_choices},
    {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_INT,
     .name = "index", .low = 1, .high = 10, .step = 1},
};
static const loom_search_option eta_option[] = {{"eta", "3"}};

static void observe_one(const loom_search_factory *f, loom_search_instance *inst,
                        fake_proposals *sink, uint64_t id, int32_t status, double loss,
                        int32_t expect_code)
{
    loom_value values[2] = {{.type = LOOM_VALUE_DOUBLE, .d = 0.1},
                            {.type = LOOM_VALUE_INT, .i = 1}};
    loom_metric metrics[] = {{"loss", loss}, {"accuracy", 0.9}};
    loom_observation obs = {.struct_size = sizeof obs, .status = status, .experiment_id = id,
                            .has_objective = 1, .objective = loss, .value_count = 2,
                            .values = values, .metric_count = 2, .metrics = metrics};
    loom_error *e = f->observe(inst, &obs, &sink->sink);
    CHECK_MSG(loom_err_code(e) == expect_code, "observe %llu: %s", (unsigned long long)id,
              loom_err_message(e));
    loom_err_free(e);
}

static void test_search(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("search_ok.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    const loom_search_factory *f = find_factory(p, LOOM_KIND_SEARCH, "list-search");
    CHECK(f != NULL);
    if (!f) {
        lua_plugin_close(p);
        return;
    }
    char verr[128];
    CHECK(validate(LOOM_KIND_SEARCH, f, verr, sizeof verr) == 0);
    CHECK(f->save_state != NULL && f->load_state != NULL);

    loom_search_config config = {
        .struct_size = sizeof config, .maximize = 0, .max_experiments = 3,
        .max_parallel = 2, .seed = 42, .objective_metric = "loss",
        .param_count = 2, .params = list_space, .option_count = 1, .options = eta_option};
    loom_search_instance *a = NULL;
    loom_error *e = f->create(f, &config, &a);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (!a) {
        lua_plugin_close(p);
        return;
    }

    fake_proposals sink;
    fake_proposals_init(&sink, 100);
    fake_proposals_space(&sink, list_space, 2);
    e = f->suggest(a, 2, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(sink.count == 2);
    CHECK_STR_EQ(sink.configs[0], "{\"lr\":0.1,\"index\":1}");
    CHECK_STR_EQ(sink.configs[1], "{\"lr\":0.01,\"index\":2}");
    CHECK(sink.budgets[0] == 1 && sink.budgets[1] == 2); /* propose's budget */
    CHECK(!sink.finished);

    /* a refused proposal comes back as nil: the script does not advance */
    fake_proposals refusing;
    fake_proposals_init(&refusing, 1);
    fake_proposals_space(&refusing, list_space, 2);
    refusing.refuse = 1;
    e = f->suggest(a, 1, &refusing.sink);
    CHECK(e == NULL);
    loom_err_free(e);

    /* observe gets the values and metrics as tables, and may stop others */
    observe_one(f, a, &sink, 100, LOOM_EXPERIMENT_FINISHED, 0.25, 0);
    CHECK(sink.stops == 0);
    observe_one(f, a, &sink, 101, LOOM_EXPERIMENT_FINISHED, 2.5, 0);
    CHECK(sink.stops == 1 && sink.stopped == 102);
    observe_one(f, a, &sink, 101, 7, 0.5, LOOM_ERR_INVALID_ARGUMENT);

    char *state = NULL;
    e = f->save_state(a, &state);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(state != NULL);
    CHECK_CONTAINS(state, "\"next\":3");
    CHECK_CONTAINS(state, "\"loss\":0.25");
    CHECK_CONTAINS(state, "\"lr\":0.1");
    CHECK_CONTAINS(state, "\"accuracy\":0.9");
    CHECK_CONTAINS(state, "\"eta\":\"3\"");
    CHECK_CONTAINS(state, "\"status\":\"FINISHED\"");
    f->destroy(a);

    /* a second instance, restored from the state, carries on */
    loom_search_instance *b = NULL;
    e = f->create(f, &config, &b);
    CHECK(e == NULL);
    loom_err_free(e);
    if (b && state) {
        e = f->load_state(b, state);
        CHECK_MSG(e == NULL, "%s", loom_err_message(e));
        loom_err_free(e);
        char *again = NULL;
        e = f->save_state(b, &again);
        CHECK(e == NULL);
        loom_err_free(e);
        CHECK_STR_EQ(again, state);
        free(again);
        fake_proposals_init(&sink, 200);
        fake_proposals_space(&sink, list_space, 2);
        e = f->suggest(b, 5, &sink.sink);
        CHECK(e == NULL);
        loom_err_free(e);
        CHECK(sink.count == 1);
        CHECK_STR_EQ(sink.configs[0], "{\"lr\":0.001,\"index\":3}");
        CHECK(sink.finished);
    }
    if (b)
        f->destroy(b);
    free(state);
    lua_plugin_close(p);
}

/* A proposal the space cannot hold is refused by the bridge, naming the
 * parameter: missing, unknown, not a number, not an integer, not a choice. */
static void test_search_bad_points(void)
{
    static const char *const acts[] = {"relu", "tanh"};
    static const loom_param space[] = {
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_DOUBLE,
         .name = "lr", .low = 0, .high = 1},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_INT,
         .name = "width", .low = 1, .high = 64},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_STRING,
         .name = "act", .choice_count = 2, .choice_strings = acts}};
    struct {
        const char *name, *expect;
    } cases[] = {
        {"missing", "the point has no value for 'width'"},
        {"unknown", "'depth' is not a parameter of the space"},
        {"number", "'lr' must be a number (got string)"},
        {"integer", "'width' must be an integer (got 8.5)"},
        {"choice", "'act' must be one of its string choices (got \"gelu\")"},
    };
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("bad_propose.lua"), NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    const loom_search_factory *f = p ? find_factory(p, LOOM_KIND_SEARCH, "bad-points") : NULL;
    for (size_t i = 0; f && i < sizeof cases / sizeof *cases; i++) {
        loom_search_option option = {"case", cases[i].name};
        loom_search_config config = {.struct_size = sizeof config, .param_count = 3,
                                     .params = space, .option_count = 1, .options = &option};
        loom_search_instance *inst = NULL;
        loom_error *e = f->create(f, &config, &inst);
        CHECK_MSG(e == NULL, "%s", loom_err_message(e));
        loom_err_free(e);
        fake_proposals sink;
        fake_proposals_init(&sink, 1);
        fake_proposals_space(&sink, space, 3);
        e = inst ? f->suggest(inst, 1, &sink.sink) : NULL;
        CHECK_MSG(e != NULL && sink.count == 0, "case %s was proposed", cases[i].name);
        CHECK_CONTAINS(loom_err_message(e), cases[i].expect);
        loom_err_free(e);
        if (inst)
            f->destroy(inst);
    }
    lua_plugin_close(p);
}

static void test_kernel(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("kernel_ok.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    const loom_kernel_factory *f = find_factory(p, LOOM_KIND_KERNEL, "scale");
    CHECK(f != NULL);
    char verr[128];
    CHECK(f && validate(LOOM_KIND_KERNEL, f, verr, sizeof verr) == 0);
    loom_kernel_model_config config = {.struct_size = sizeof config,
                                       .model_dir = "/tmp/model",
                                       .model_json = "{\"scale\": 3}"};
    loom_kernel_model *model = NULL;
    loom_error *e = f ? f->load_model(f, &config, &model) : NULL;
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (!model) {
        lua_plugin_close(p);
        return;
    }
    loom_device cpu = {.struct_size = sizeof cpu, .kind = LOOM_DEVICE_CPU};
    loom_kernel_instance *inst = NULL;
    e = f->create_instance(model, &cpu, &inst);
    CHECK(e == NULL);
    loom_err_free(e);

    fake_request r[3];
    fake_request_init(&r[0], 11, "{\"x\": 2}");
    fake_request_init(&r[1], 12, "not json");
    fake_request_init(&r[2], 13, "{\"x\": 0.5}");
    loom_infer_request *batch[3] = {&r[0].r, &r[1].r, &r[2].r};
    e = f->execute(inst, batch, 3);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    for (int i = 0; i < 3; i++)
        CHECK(r[i].answers == 1);
    CHECK(r[0].status == 0);
    CHECK_STR_EQ(r[0].content_type, "application/json");
    CHECK_CONTAINS(r[0].body, "\"y\":6");
    CHECK_CONTAINS(r[0].body, "\"id\":11");
    CHECK(r[1].status == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_STR_EQ(r[1].content_type, "text/plain");
    CHECK_CONTAINS(r[1].body, "expected {\"x\": number}");
    CHECK(r[2].status == 0);
    CHECK_CONTAINS(r[2].body, "\"y\":1.5");

    /* answering twice is the host's error, reported with its code */
    e = f->execute(inst, batch, 1);
    CHECK(loom_err_code(e) == LOOM_ERR_ALREADY_EXISTS);
    CHECK_CONTAINS(loom_err_message(e), "responding to request 1");
    loom_err_free(e);

    f->destroy_instance(inst);
    f->unload_model(model);
    lua_plugin_close(p);
}

static char *read_all(const char *path)
{
    static char text[4096];
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static void test_logger(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("logger_ok.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    /* one script, two kinds under one name */
    CHECK(lua_plugin_registrations(p, NULL) == 2);
    CHECK(find_factory(p, LOOM_KIND_SEARCH, "lines") != NULL);
    const loom_logger_factory *f = find_factory(p, LOOM_KIND_LOGGER, "lines");
    CHECK(f != NULL);
    if (!f) {
        lua_plugin_close(p);
        return;
    }
    CHECK(f->on_train_begin && f->log_train_metrics && f->on_train_end);
    CHECK(f->log_test_metrics == NULL); /* the script left it out */

    /* As under an exec: RESULT_DIR/plugins/NAME, so the write limit counts
     * only this test's plugin folders, not whatever else is in /tmp. */
    char root[] = "/tmp/loom-lua-logger-XXXXXX", plugins[64], dir[80];
    CHECK(mkdtemp(root) != NULL);
    snprintf(plugins, sizeof plugins, "%s/plugins", root);
    snprintf(dir, sizeof dir, "%s/logger", plugins);
    CHECK(mkdir(plugins, 0700) == 0 && mkdir(dir, 0700) == 0);
    loom_logger_config config = {.struct_size = sizeof config,
                                 .role = LOOM_LOGGER_WORKER, .rank = 1,
                                 .exec_id = "exec-9", .log_dir = "/nonexistent",
                                 .config_json = "{\"tag\":\"t\"}",
                                 .result_dir = root, .plugin_dir = dir};
    loom_logger_instance *inst = NULL;
    loom_error *e = f->create(f, &config, &inst);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (inst) {
        loom_train_info info = {.struct_size = sizeof info, .epochs = 5,
                                .workers = 2, .batch_size = 64,
                                .effective_batch_size = 128,
                                .exec_id = "exec-9"};
        e = f->on_train_begin(inst, &info);
        CHECK_MSG(e == NULL, "%s", loom_err_message(e));
        loom_err_free(e);
        loom_metric m = {"loss", 0.5};
        e = f->log_train_metrics(inst, &m, 1, 40, 1, 2);
        CHECK(e == NULL);
        loom_err_free(e);
        e = f->on_train_end(inst, LOOM_TRAIN_FINISHED, "done");
        CHECK(e == NULL);
        loom_err_free(e);
        f->destroy(inst);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    CHECK_STR_EQ(read_all(path), "worker1:t begin epochs=5 workers=2\n"
                                 "train it=40 epoch=1 workers=2 loss=0.50\n"
                                 "end FINISHED done\n");
    unlink(path);
    rmdir(dir);
    rmdir(plugins);
    rmdir(root);
    lua_plugin_close(p);
}

static void test_python_adapter(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(PYTHON_ADAPTER_PATH, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    if (!p)
        return;
    const loom_framework_factory *f = find_factory(p, LOOM_KIND_FRAMEWORK, "python");
    CHECK(f != NULL);
    if (!f) {
        lua_plugin_close(p);
        return;
    }
    fake_launch sink;
    fake_launch_init(&sink);
    loom_launch_request req = make_request(2, "train.py");
    loom_error *e = f->plan_launch(f, &req, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(sink.workers == 2);
    for (int rank = 0; rank < 2 && rank < sink.workers; rank++) {
        const fake_worker *w = &sink.worker[rank];
        CHECK(w->argc == 4);
        CHECK_STR_EQ(w->argv[0], "python3");
        CHECK_STR_EQ(w->argv[1], "train.py");
        CHECK_STR_EQ(w->argv[2], "--lr");
        CHECK_STR_EQ(w->argv[3], "0.1");
        char kv[32];
        snprintf(kv, sizeof kv, "RANK=%d", rank);
        CHECK(worker_has_env(w, kv));
        snprintf(kv, sizeof kv, "LOCAL_RANK=%d", rank);
        CHECK(worker_has_env(w, kv));
        CHECK(worker_has_env(w, "WORLD_SIZE=2"));
        CHECK(worker_has_env(w, "MASTER_ADDR=127.0.0.1"));
        CHECK(worker_has_env(w, "MASTER_PORT=29500"));
        CHECK_STR_EQ(w->cwd, "(null)"); /* the code directory */
    }

    /* Across nodes (ABI 1.7): ranks 0-1 on n1, 2 on n2. */
    fake_launch_init(&sink);
    req = make_request(3, "train.py");
    const char *nodes[] = {"n1", "n1", "n2"};
    req.worker_nodes = nodes;
    e = f->plan_launch(f, &req, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(sink.workers == 3);
    if (sink.workers == 3) {
        CHECK(worker_has_env(&sink.worker[1], "LOCAL_RANK=1"));
        CHECK(worker_has_env(&sink.worker[1], "LOCAL_WORLD_SIZE=2"));
        CHECK(worker_has_env(&sink.worker[1], "NODE_RANK=0"));
        CHECK(worker_has_env(&sink.worker[2], "LOCAL_RANK=0"));
        CHECK(worker_has_env(&sink.worker[2], "LOCAL_WORLD_SIZE=1"));
        CHECK(worker_has_env(&sink.worker[2], "NODE_RANK=1"));
    }

    fake_launch_init(&sink);
    req = make_request(1, NULL);
    e = f->plan_launch(f, &req, &sink.sink);
    CHECK(e != NULL);
    CHECK(loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT);
    /* The script's answer alone: no position, no install folder. */
    CHECK_CONTAINS(loom_err_message(e), "--model-main is required for the python framework");
    CHECK(strstr(loom_err_message(e), "python.lua:") == NULL);
    CHECK(strchr(loom_err_message(e), '/') == NULL);
    loom_err_free(e);
    CHECK(sink.workers == 0);
    lua_plugin_close(p);
}

int main(void)
{
    test_framework();
    test_search();
    test_search_bad_points();
    test_kernel();
    test_logger();
    test_python_adapter();
    return CHECK_DONE();
}
