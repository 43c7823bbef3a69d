/*
 * tests/unit/lua/test_lua_templates.c - the Lua templates the SDK installs
 * (sdk/template/template_*.lua, one per kind) load and do what their
 * comments say, driven through the SDK vtables like any plugin.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "lua_fakes.h"

static lua_plugin *open_template(const char *kind, const void **factory, loom_kind k)
{
    char path[512], err[512] = "", name[64];
    snprintf(path, sizeof path, "%s/template_%s.lua", LUA_TEMPLATE_DIR, kind);
    lua_plugin *p = open_lua(path, NULL, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    snprintf(name, sizeof name, "lua_template_%s", kind);
    *factory = p ? find_factory(p, k, name) : NULL;
    CHECK_MSG(*factory != NULL, "%s registers no %s", path, name);
    char verr[256];
    CHECK_MSG(*factory && validate(k, *factory, verr, sizeof verr) == 0, "%s", verr);
    return p;
}

static void test_framework(void)
{
    const loom_framework_factory *f;
    lua_plugin *p = open_template("framework", (const void **)&f, LOOM_KIND_FRAMEWORK);
    if (!f)
        goto out;
    fake_launch sink;
    fake_launch_init(&sink);
    loom_launch_request req = {.struct_size = sizeof req, .num_workers = 2, .model_main = "main.sh",
                               .exec_id = "e", .code_dir = "/tmp"};
    loom_error *e = f->plan_launch(f, &req, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(sink.workers == 2);
    CHECK_STR_EQ(sink.worker[1].argv[1], "main.sh");
    CHECK(worker_has_env(&sink.worker[1], "RANK=1") && worker_has_env(&sink.worker[1], "WORLD_SIZE=2"));
out:
    lua_plugin_close(p);
}

static void test_search(void)
{
    const loom_search_factory *f;
    lua_plugin *p = open_template("search", (const void **)&f, LOOM_KIND_SEARCH);
    if (!f)
        goto out;
    static const char *const optimizers[] = {"sgd", "adam"};
    static const loom_param space[] = {
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_DOUBLE,
         .name = "lr", .low = -2, .high = -1, .log_base = 10},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_INT,
         .name = "width", .low = 16, .high = 32},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_STRING,
         .name = "optimizer", .choice_count = 2, .choice_strings = optimizers}};
    static const loom_search_option count[] = {{"count", "2"}};
    loom_search_config c = {
        .struct_size = sizeof c, .seed = 7, .objective_metric = "loss",
        .param_count = 3, .params = space, .option_count = 1, .options = count};
    loom_search_instance *inst = NULL;
    loom_error *e = f->create(f, &c, &inst);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    fake_proposals sink;
    fake_proposals_init(&sink, 1);
    fake_proposals_space(&sink, space, 3);
    if (!e)
        e = f->suggest(inst, 5, &sink.sink);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    CHECK(sink.count == 2 && sink.finished);
    cJSON *point = cJSON_Parse(sink.configs[0]);
    double lr = cJSON_GetNumberValue(cJSON_GetObjectItem(point, "lr"));
    double width = cJSON_GetNumberValue(cJSON_GetObjectItem(point, "width"));
    const char *opt = cJSON_GetStringValue(cJSON_GetObjectItem(point, "optimizer"));
    CHECK_MSG(lr >= 0.01 && lr <= 0.1, "lr %g", lr);
    CHECK_MSG(width >= 16 && width <= 32 && width == (int)width, "width %g", width);
    CHECK(opt && (strcmp(opt, "sgd") == 0 || strcmp(opt, "adam") == 0));
    cJSON_Delete(point);
    loom_metric m = {.name = "loss", .value = 0.5};
    loom_value values[3] = {{.type = LOOM_VALUE_DOUBLE, .d = 0.05},
                            {.type = LOOM_VALUE_INT, .i = 20},
                            {.type = LOOM_VALUE_STRING, .s = "sgd"}};
    loom_observation obs = {.struct_size = sizeof obs, .experiment_id = 1, .has_objective = 1,
                            .objective = 0.5, .value_count = 3, .values = values,
                            .metric_count = 1, .metrics = &m};
    if (!e)
        e = f->observe(inst, &obs, &sink.sink);
    char *state = NULL;
    if (!e)
        e = f->save_state(inst, &state);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    CHECK_CONTAINS(state, "\"best\":0.5");
    CHECK_CONTAINS(state, "\"proposed\":2");
    if (!e)
        e = f->load_state(inst, state);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    free(state);
    if (inst)
        f->destroy(inst);
out:
    lua_plugin_close(p);
}

static void test_kernel(void)
{
    const loom_kernel_factory *f;
    lua_plugin *p = open_template("kernel", (const void **)&f, LOOM_KIND_KERNEL);
    if (!f)
        goto out;
    loom_kernel_model_config c = {.struct_size = sizeof c, .model_dir = "/tmp",
                                  .model_json = "{\"name\": \"m1\"}"};
    loom_kernel_model *model = NULL;
    loom_kernel_instance *inst = NULL;
    loom_device dev = {.struct_size = sizeof dev};
    loom_error *e = f->load_model(f, &c, &model);
    if (!e)
        e = f->create_instance(model, &dev, &inst);
    fake_request req;
    fake_request_init(&req, 1, "hi");
    loom_infer_request *batch[] = {&req.r};
    if (!e)
        e = f->execute(inst, batch, 1);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(req.answers == 1 && req.status == 0);
    CHECK_CONTAINS(req.body, "\"echo\":\"hi\"");
    CHECK_CONTAINS(req.body, "\"model\":\"m1\"");
    if (inst)
        f->destroy_instance(inst);
    if (model)
        f->unload_model(model);
out:
    lua_plugin_close(p);
}

static void test_logger(void)
{
    const loom_logger_factory *f;
    lua_plugin *p = open_template("logger", (const void **)&f, LOOM_KIND_LOGGER);
    /* As under an exec: RESULT_DIR/plugins/NAME, so the write limit counts
     * only this test's plugin folders, not whatever else is in /tmp. */
    char root[] = "/tmp/loom-lua-template-XXXXXX", plugins[64], dir[80];
    if (!f || !mkdtemp(root))
        goto out;
    snprintf(plugins, sizeof plugins, "%s/plugins", root);
    snprintf(dir, sizeof dir, "%s/logger", plugins);
    if (mkdir(plugins, 0700) != 0 || mkdir(dir, 0700) != 0)
        goto out;
    loom_logger_config c = {.struct_size = sizeof c, .role = LOOM_LOGGER_DRIVER, .exec_id = "e",
                            .log_dir = dir, .config_json = "{}", .result_dir = root,
                            .plugin_dir = dir};
    loom_logger_instance *inst = NULL;
    loom_error *e = f->create(f, &c, &inst);
    loom_train_info info = {.struct_size = sizeof info, .epochs = 3, .workers = 2, .exec_id = "e"};
    loom_metric m = {.name = "loss", .value = 0.25};
    if (!e)
        e = f->on_train_begin(inst, &info);
    if (!e)
        e = f->log_train_metrics(inst, &m, 1, 10, 0, 2);
    if (!e)
        e = f->on_train_end(inst, LOOM_TRAIN_FINISHED, "");
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (inst)
        f->destroy(inst);
    char path[600], text[512] = "";
    snprintf(path, sizeof path, "%s/lua_template.log", dir);
    FILE *fp = fopen(path, "r");
    if (fp) {
        text[fread(text, 1, sizeof text - 1, fp)] = 0;
        fclose(fp);
        unlink(path);
    }
    CHECK_STR_EQ(text, "driver/0 begin epochs=3 workers=2\ndriver/0 train iteration=10 loss=0.25\n"
                       "driver/0 end FINISHED\n");
    rmdir(dir);
    rmdir(plugins);
    rmdir(root);
out:
    lua_plugin_close(p);
}

int main(void)
{
    test_framework();
    test_search();
    test_kernel();
    test_logger();
    return CHECK_DONE();
}
