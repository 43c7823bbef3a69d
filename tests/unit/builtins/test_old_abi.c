/*
 * tests/unit/builtins/test_old_abi.c - plugins built against the frozen ABI
 * 1.0 headers (tests/plugins/old_abi) load through the registry and run
 * through the host's own callers without a call past their struct_size:
 * every slot beyond a declared end holds a poison function that aborts.
 * old_full declares every 1.0 entry (and they run), old_min only the
 * required ones (and the optional ones are skipped).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "plugin/registry.h"
#include "train/logger_set.h"

static char tmp[] = "/tmp/loom-old-abi-XXXXXX";

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

/* The host's logger path: logger_set loads the .so and calls every
 * callback the plugin declared. */
static void logger_runs(const char *name, const char *expected)
{
    char dir[512], json[1024], calls[512], text[512];
    snprintf(dir, sizeof dir, "%s/%s-logs", tmp, name);
    snprintf(json, sizeof json, "[{\"name\": \"%s\", \"path\": \"%s/%s.so\"}]", name,
             LOOM_TEST_PLUGIN_DIR, name);
    logger_set *s = logger_set_open(NULL, json, LOOM_LOGGER_WORKER, 0, "exec-1", dir, tmp);
    CHECK(s != NULL);
    loom_train_info info = {.struct_size = sizeof info, .epochs = 1, .workers = 1, .exec_id = "exec-1"};
    cJSON *metrics = cJSON_Parse("{\"loss\": 0.5}");
    logger_set_begin(s, &info);
    logger_set_train_json(s, metrics, 1, 0, 1);
    logger_set_test_json(s, metrics, 1, 0);
    logger_set_end(s, LOOM_TRAIN_FINISHED, "done");
    logger_set_close(s);
    cJSON_Delete(metrics);
    snprintf(calls, sizeof calls, "%s/old_abi_calls.txt", dir);
    read_text(calls, text, sizeof text);
    CHECK_STR_EQ(text, expected);
}

static char answer[16];
static loom_error *respond(loom_infer_request *req, int32_t status, const char *type,
                           const uint8_t *body, uint64_t len)
{
    (void)req, (void)status, (void)type;
    snprintf(answer, sizeof answer, "%.*s", (int)len, (const char *)body);
    return NULL;
}

static void kernel_runs(registry *r, const char *name)
{
    registry_entry e;
    CHECK(registry_acquire(r, LOOM_KIND_KERNEL, name, &e) == 0);
    const loom_kernel_factory *f = e.factory;
    loom_kernel_model_config cfg = {.struct_size = sizeof cfg, .model_dir = tmp, .model_json = "{}"};
    loom_kernel_model *model = NULL;
    loom_kernel_instance *inst = NULL;
    loom_device dev = {.struct_size = sizeof dev, .kind = LOOM_DEVICE_CPU};
    CHECK(f->load_model(f, &cfg, &model) == NULL);
    CHECK(f->create_instance(model, &dev, &inst) == NULL);
    loom_infer_request req = {.struct_size = sizeof req, .id = 1, .content_type = "text/plain",
                              .body = (const uint8_t *)"x", .body_len = 1, .respond = respond};
    loom_infer_request *batch[] = {&req};
    answer[0] = 0;
    CHECK(f->execute(inst, batch, 1) == NULL);
    CHECK_STR_EQ(answer, "old");
    f->destroy_instance(inst);
    f->unload_model(model);
    registry_release(r, LOOM_KIND_KERNEL, name);
}

static void framework_loads(registry *r, const char *name, int has_state_loaded)
{
    registry_entry e;
    CHECK(registry_acquire(r, LOOM_KIND_FRAMEWORK, name, &e) == 0);
    const loom_framework_factory *f = e.factory;
    CHECK_MSG((LOOM_OPTIONAL_ENTRY(f, loom_framework_factory, state_loaded) != NULL) == has_state_loaded,
              "%s: state_loaded", name);
    registry_release(r, LOOM_KIND_FRAMEWORK, name);
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    /* First, while no other registry holds the files: a library loaded
     * twice in one process shares its statics (the host table it keeps). */
    logger_runs("old_full", "create\non_train_begin\nlog_train_metrics\nlog_test_metrics\n"
                            "on_train_end\ndestroy\n");
    logger_runs("old_min", "create\ndestroy\n");

    registry *r = registry_create();
    const char *names[] = {"old_full", "old_min", "old_launch"};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.so", LOOM_TEST_PLUGIN_DIR, names[i]);
        loom_error *e = registry_load(r, path, "user", NULL, -1, 0);
        CHECK_MSG(e == NULL, "%s: %s", names[i], loom_err_message(e));
        loom_err_free(e);
    }
    /* The search kind moved to "loom.search/2" (a typed space instead of
     * JSON text): a 1.0 plugin's search/1 factory is no kind this host
     * knows, so old_full and old_min offer their other three kinds. */
    registry_entry list[16];
    CHECK(registry_list(r, -1, list, 16) == 7); /* 3 + 3 + 1 */
    registry_entry unused;
    CHECK(registry_acquire(r, LOOM_KIND_SEARCH, "old_full", &unused) != 0);
    {
        char path[512];
        snprintf(path, sizeof path, "%s/old_search.so", LOOM_TEST_PLUGIN_DIR);
        loom_error *e = registry_load(r, path, "user", NULL, -1, 0);
        CHECK(loom_err_code(e) == LOOM_E_UNSUPPORTED);
        CHECK_CONTAINS(loom_err_message(e), "offers only a loom.search/1 factory");
        CHECK_CONTAINS(loom_err_message(e), "loom.search/2");
        loom_err_free(e);
    }

    /* Refusals carry codes callers act on, not text to match. */
    struct {
        const char *file, *rename;
        int32_t code;
    } refusals[] = {
        {"old_full.so", NULL, LOOM_E_CONFLICT},           /* the same file again */
        {"good_thirdparty.so", "old_full", LOOM_E_CONFLICT}, /* a name taken */
        {"abi_major.so", NULL, LOOM_E_UNSUPPORTED},
        {"missing_entry.so", NULL, LOOM_E_INVALID},
        {"no_such_plugin.so", NULL, LOOM_E_NOT_FOUND},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", LOOM_TEST_PLUGIN_DIR, refusals[i].file);
        loom_error *e = registry_load(r, path, "user", refusals[i].rename, -1, 0);
        CHECK_MSG(loom_err_code(e) == refusals[i].code, "%s: code %d (%s)", refusals[i].file,
                  (int)loom_err_code(e), loom_err_message(e));
        loom_err_free(e);
    }
    CHECK(registry_list(r, -1, list, 16) == 7);
    loom_error *e = registry_remove(r, LOOM_KIND_LOGGER, "nobody");
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    loom_err_free(e);

    kernel_runs(r, "old_full");
    kernel_runs(r, "old_min");
    framework_loads(r, "old_full", 1);
    framework_loads(r, "old_min", 0);
    framework_loads(r, "old_launch", 0);

    registry_destroy(r);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
