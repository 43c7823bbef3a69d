/*
 * tests/unit/lua/test_lua_sandbox.c - bad scripts against the Lua bridge:
 * each is refused with a message naming the file and what is wrong, and
 * after each the bridge still loads and runs a good script.
 */
#include <unistd.h>
#include <sys/stat.h>

#include "../../check.h"
#include "lua_fakes.h"

/* Small limits keep the runaway cases fast. Each case tightens only the
 * limit it is about, so a loaded machine cannot turn a memory bomb into a
 * deadline (or the reverse). */
static const lua_plugin_limits short_deadline = {.deadline_ms = 200};
static const lua_plugin_limits small_memory = {.memory_bytes = 8u << 20};

/* The bridge still works: a good search loads, creates and proposes. */
static void check_still_works(const char *after)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("search_ok.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "after %s: %s", after, err);
    if (!p)
        return;
    const loom_search_factory *f = find_factory(p, LOOM_KIND_SEARCH, "list-search");
    static const double half[] = {0.5};
    static const loom_param space[] = {
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE, .type = LOOM_VALUE_DOUBLE,
         .name = "lr", .choice_count = 1, .choice_doubles = half},
        {.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE, .type = LOOM_VALUE_INT,
         .name = "index", .low = 1, .high = 9}};
    loom_search_config config = {
        .struct_size = sizeof config, .param_count = 2, .params = space,
        .objective_metric = "loss"};
    loom_search_instance *inst = NULL;
    loom_error *e = f ? f->create(f, &config, &inst) : NULL;
    CHECK_MSG(e == NULL && inst != NULL, "after %s: %s", after,
              loom_err_message(e));
    loom_err_free(e);
    if (inst) {
        fake_proposals sink;
        fake_proposals_init(&sink, 1);
        fake_proposals_space(&sink, space, 2);
        e = f->suggest(inst, 1, &sink.sink);
        CHECK_MSG(e == NULL && sink.count == 1, "after %s: %s", after,
                  loom_err_message(e));
        loom_err_free(e);
        f->destroy(inst);
    }
    lua_plugin_close(p);
}

/* Opens a script that must be refused; returns the message. */
static const char *open_fails_with(const char *name,
                                   const lua_plugin_limits *limits)
{
    static char err[1024];
    err[0] = 0;
    lua_plugin *p = open_lua(script_path(name), limits, err, sizeof err);
    CHECK_MSG(p == NULL, "%s was accepted", name);
    lua_plugin_close(p);
    const char *message = err;
    CHECK_CONTAINS(message, name); /* every message names the file */
    return message;
}

static const char *open_fails(const char *name)
{
    return open_fails_with(name, NULL);
}

static void test_load_time_errors(void)
{
    const char *m = open_fails("bad_syntax.lua");
    CHECK_CONTAINS(m, "bad_syntax.lua:3:");
    CHECK_CONTAINS(m, "unexpected symbol");
    check_still_works("a syntax error");

    m = open_fails("bad_runtime_load.lua");
    CHECK_CONTAINS(m, "bad_runtime_load.lua:2:");
    CHECK_CONTAINS(m, "attempt to index a nil value");
    check_still_works("a runtime error at load");

    m = open_fails("no_such_script.lua");
    CHECK_CONTAINS(m, "cannot open");
    check_still_works("a missing file");
}

static void test_limits_at_load(void)
{
    const char *m = open_fails_with("bad_loop_load.lua", &short_deadline);
    CHECK_CONTAINS(m, "bad_loop_load.lua:2:");
    CHECK_CONTAINS(m, "deadline exceeded (200 ms)");
    check_still_works("an endless loop at load");

    m = open_fails_with("bad_memory.lua", &small_memory);
    CHECK_CONTAINS(m, "memory limit exceeded (8 MiB)");
    check_still_works("a memory bomb at load");

    /* Known by the allocator's refusal, not by the words it ends with. */
    m = open_fails_with("bad_memory_caught.lua", &small_memory);
    CHECK_CONTAINS(m, "memory limit exceeded (8 MiB)");
    CHECK_CONTAINS(m, "gave up building the table");
    check_still_works("a memory bomb caught by the script");
}

static void test_sandbox_refusals(void)
{
    const char *m = open_fails("bad_os.lua");
    CHECK_CONTAINS(m, "bad_os.lua:1:");
    CHECK_CONTAINS(m, "global 'os'");
    CHECK(access("/tmp/loom-lua-should-not-exist", F_OK) != 0);
    check_still_works("os.execute");

    m = open_fails("bad_io.lua");
    CHECK_CONTAINS(m, "bad_io.lua:1:");
    CHECK_CONTAINS(m, "global 'io'");
    check_still_works("io.open");

    m = open_fails("bad_require.lua");
    CHECK_CONTAINS(m, "bad_require.lua:1:");
    CHECK_CONTAINS(m, "global 'require'");
    check_still_works("require");

    m = open_fails("bad_dofile.lua");
    CHECK_CONTAINS(m, "global 'dofile'");
    check_still_works("dofile");

    m = open_fails("bad_binary.lua");
    CHECK_CONTAINS(m, "bad_binary.lua:2:");
    CHECK_CONTAINS(m, "binary chunk");
    check_still_works("a binary chunk");

    /* finalizers run with hooks off, so no deadline could stop one */
    m = open_fails("bad_gc.lua");
    CHECK_CONTAINS(m, "bad_gc.lua:2:");
    CHECK_CONTAINS(m, "__gc metamethods are not allowed");
    check_still_works("a __gc metamethod");

    m = open_fails("bad_gc_stop.lua");
    CHECK_CONTAINS(m, "bad_gc_stop.lua:1:");
    CHECK_CONTAINS(m, "invalid option 'stop'");
    check_still_works("stopping the collector");
}

static void test_registration_errors(void)
{
    const char *m = open_fails("bad_nothing.lua");
    CHECK_CONTAINS(m, "registers nothing");
    check_still_works("a script registering nothing");

    m = open_fails("bad_duplicate.lua");
    CHECK_CONTAINS(m, "bad_duplicate.lua:3:");
    CHECK_CONTAINS(m, "duplicate search name 'twice'");
    check_still_works("a duplicate name");

    m = open_fails("bad_name.lua");
    CHECK_CONTAINS(m, "bad_name.lua:1:");
    CHECK_CONTAINS(m, "invalid name 'no spaces/allowed'");
    check_still_works("a bad name");

    m = open_fails("bad_missing_function.lua");
    CHECK_CONTAINS(m, "bad_missing_function.lua:1:");
    CHECK_CONTAINS(m, "missing required function 'observe'");
    check_still_works("a missing function");

    m = open_fails("bad_kernel_no_execute.lua");
    CHECK_CONTAINS(m, "missing required function 'execute' (or WMLA's 'on_task_invoke')");
    check_still_works("a kernel that executes nothing");

    m = open_fails("bad_misspelt_callback.lua");
    CHECK_CONTAINS(m, "bad_misspelt_callback.lua:1:");
    CHECK_CONTAINS(m, "loom.register_logger 'typo': unknown key 'log_train_metric'");
    CHECK_CONTAINS(m, "log_train_metrics"); /* the list of what is expected */
    check_still_works("a misspelt callback");

    m = open_fails("bad_unknown_key.lua");
    CHECK_CONTAINS(m, "loom.register_search 'extra': unknown key 'max_parallel'");
    check_still_works("an unknown key");

    m = open_fails("bad_trainer.lua");
    CHECK_CONTAINS(m, "style 'trainer' is not available");
    check_still_works("a trainer-style script");
}

static loom_search_instance *create_search(lua_plugin *p, const char *name,
                                           const loom_search_factory **out)
{
    *out = find_factory(p, LOOM_KIND_SEARCH, name);
    CHECK(*out != NULL);
    if (!*out)
        return NULL;
    loom_search_config config = {.struct_size = sizeof config};
    loom_search_instance *inst = NULL;
    loom_error *e = (*out)->create(*out, &config, &inst);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    return inst;
}

static void test_callback_errors(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("bad_callback.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    const loom_search_factory *f = NULL;
    loom_search_instance *inst = p ? create_search(p, "broken", &f) : NULL;
    if (inst) {
        fake_proposals sink;
        fake_proposals_init(&sink, 1);
        loom_error *e = f->suggest(inst, 1, &sink.sink);
        CHECK(loom_err_code(e) == LOOM_ERR_INTERNAL);
        CHECK_CONTAINS(loom_err_message(e), "lua search 'broken' suggest");
        CHECK_CONTAINS(loom_err_message(e), "bad_callback.lua:6:");
        /* The file's name, never the folder the host keeps it in. */
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", script_path("bad_callback.lua"));
        *strrchr(folder, '/') = 0;
        CHECK(strstr(loom_err_message(e), folder) == NULL);
        CHECK_CONTAINS(loom_err_message(e), "attempt to index a nil value");
        loom_err_free(e);

        /* error{code=, message=} picks the loom_code and is the script's
         * answer: its message alone (the log has the position) */
        loom_observation failed = {.struct_size = sizeof failed, .experiment_id = 5,
                                   .status = LOOM_EXPERIMENT_FAILED};
        e = f->observe(inst, &failed, &sink.sink);
        CHECK(loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT);
        CHECK(strstr(loom_err_message(e), "bad_callback.lua:9:") == NULL);
        CHECK_CONTAINS(loom_err_message(e), "observe: experiment 5 is unknown");
        loom_err_free(e);
        f->destroy(inst);
    }
    inst = p ? create_search(p, "stale", &f) : NULL;
    if (inst) {
        fake_proposals sink;
        fake_proposals_init(&sink, 1);
        loom_error *e = f->suggest(inst, 1, &sink.sink);
        CHECK_CONTAINS(loom_err_message(e), "bad_callback.lua:19:");
        CHECK_CONTAINS(loom_err_message(e),
                       "registration is only allowed while the script is loading");
        loom_err_free(e);
        /* the sink it kept died with that suggest call */
        loom_observation done = {.struct_size = sizeof done, .experiment_id = 1};
        e = f->observe(inst, &done, &sink.sink);
        CHECK_CONTAINS(loom_err_message(e), "bad_callback.lua:22:");
        CHECK_CONTAINS(loom_err_message(e), "only valid while suggest runs");
        loom_err_free(e);
        CHECK(sink.count == 0);
        f->destroy(inst);
    }
    lua_plugin_close(p);
    check_still_works("a runtime error in a callback");

    p = open_lua(script_path("bad_loop_callback.lua"), &short_deadline, err,
                        sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    inst = p ? create_search(p, "spinner", &f) : NULL;
    if (inst) {
        fake_proposals sink;
        fake_proposals_init(&sink, 1);
        loom_error *e = f->suggest(inst, 1, &sink.sink);
        CHECK(loom_err_code(e) == LOOM_ERR_DEADLINE_EXCEEDED);
        CHECK_CONTAINS(loom_err_message(e), "deadline exceeded (200 ms)");
        CHECK_CONTAINS(loom_err_message(e), "bad_loop_callback.lua:");
        loom_err_free(e);
        /* the instance is still usable: observe runs under a new deadline */
        loom_observation done = {.struct_size = sizeof done, .experiment_id = 1};
        e = f->observe(inst, &done, &sink.sink);
        CHECK_MSG(e == NULL, "%s", loom_err_message(e));
        loom_err_free(e);
        f->destroy(inst);
    }
    lua_plugin_close(p);
    check_still_works("an endless loop in a callback");
}

static void test_memory_in_callback(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("bad_memory_callback.lua"),
                                    &small_memory, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    const loom_kernel_factory *f = p ? find_factory(p, LOOM_KIND_KERNEL, "hoarder")
                                     : NULL;
    loom_kernel_model_config config = {.struct_size = sizeof config,
                                       .model_dir = "/tmp"};
    loom_kernel_model *model = NULL;
    loom_error *e = f ? f->load_model(f, &config, &model) : NULL;
    CHECK(e == NULL);
    loom_err_free(e);
    loom_kernel_instance *inst = NULL;
    if (model) {
        e = f->create_instance(model, NULL, &inst);
        loom_err_free(e);
    }
    if (inst) {
        fake_request r;
        fake_request_init(&r, 1, "{}");
        loom_infer_request *batch[1] = {&r.r};
        e = f->execute(inst, batch, 1);
        CHECK(loom_err_code(e) == LOOM_ERR_RESOURCE_EXHAUSTED);
        CHECK_CONTAINS(loom_err_message(e), "memory limit exceeded (8 MiB)");
        CHECK_CONTAINS(loom_err_message(e), "bad_memory_callback.lua");
        loom_err_free(e);
        CHECK(r.answers == 0);
        f->destroy_instance(inst);
    }
    if (model)
        f->unload_model(model);
    lua_plugin_close(p);
    check_still_works("a memory bomb in a callback");
}

static void test_append_escape(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("bad_append.lua"), NULL, err,
                                    sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    const loom_logger_factory *f = p ? find_factory(p, LOOM_KIND_LOGGER, "escaper")
                                     : NULL;
    /* log_dir is a folder of a fresh one, so "../x" names a path nothing
     * else on the machine makes */
    char top[] = "/tmp/loom-lua-append-XXXXXX", dir[64];
    CHECK(mkdtemp(top) != NULL);
    snprintf(dir, sizeof dir, "%s/log", top);
    CHECK(mkdir(dir, 0700) == 0);
    loom_logger_config config = {.struct_size = sizeof config, .log_dir = dir,
                                 .config_json = "{}", .result_dir = dir, .plugin_dir = dir};
    loom_logger_instance *inst = NULL;
    loom_error *e = f ? f->create(f, &config, &inst) : NULL;
    CHECK(e == NULL);
    loom_err_free(e);
    if (inst) {
        loom_train_info info = {.struct_size = sizeof info, .exec_id = "x"};
        e = f->on_train_begin(inst, &info);
        CHECK(e != NULL);
        CHECK_CONTAINS(loom_err_message(e), "bad_append.lua:4:");
        CHECK_CONTAINS(loom_err_message(e), "'../x' is not a plain file name");
        loom_err_free(e);
        f->destroy(inst);
    }
    char escaped[64];
    snprintf(escaped, sizeof escaped, "%s/../x", dir);
    CHECK(access(escaped, F_OK) != 0);
    rmdir(dir);
    rmdir(top);
    lua_plugin_close(p);
    check_still_works("loom.append outside log_dir");
}

/* An xpcall whose body and handler both loop: the handler of the error
 * the deadline raised is skipped, so the call ends at its deadline (an
 * unguarded one would never return). */
static void test_xpcall_handler_loop(void)
{
    char err[512] = "";
    lua_plugin *p = open_lua(script_path("bad_xpcall_loop.lua"), &short_deadline, err, sizeof err);
    CHECK_MSG(p != NULL, "%s", err);
    const loom_logger_factory *f = p ? find_factory(p, LOOM_KIND_LOGGER, "bad_xpcall_loop") : NULL;
    loom_logger_config config = {.struct_size = sizeof config, .log_dir = "/tmp",
                                 .config_json = "{}"};
    loom_logger_instance *inst = NULL;
    loom_error *e = f ? f->create(f, &config, &inst) : NULL;
    CHECK(e == NULL);
    loom_err_free(e);
    if (inst) {
        loom_metric m = {"loss", 1};
        e = f->log_train_metrics(inst, &m, 1, 1, 1, 1);
        CHECK(loom_err_code(e) == LOOM_ERR_DEADLINE_EXCEEDED);
        CHECK_CONTAINS(loom_err_message(e), "deadline exceeded");
        loom_err_free(e);
        f->destroy(inst);
    }
    lua_plugin_close(p);
    check_still_works("an xpcall handler that loops");
}

int main(void)
{
    test_load_time_errors();
    test_limits_at_load();
    test_sandbox_refusals();
    test_registration_errors();
    test_callback_errors();
    test_memory_in_callback();
    test_append_escape();
    test_xpcall_handler_loop();
    return CHECK_DONE();
}
