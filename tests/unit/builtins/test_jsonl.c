/*
 * tests/unit/builtins/test_jsonl.c - jsonl.so writes one parseable JSON
 * object per line to LOG_DIR/evaluation-metrics.txt, creating the folder,
 * appending across instances, and naming the file when it cannot open it.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../check.h"
#include "builtin_plugin.h"

static const loom_logger_factory *factory;

/* Reads the file's lines as JSON; returns how many there are (all must
 * parse) and fills lines[] up to max. */
static int read_lines(const char *path, cJSON **lines, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[4096];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        CHECK_MSG(strchr(buf, '\n') != NULL, "line %d is not newline-terminated", n);
        cJSON *line = cJSON_Parse(buf);
        CHECK_MSG(cJSON_IsObject(line), "line %d is not a JSON object: %s", n, buf);
        if (n < max)
            lines[n] = line;
        else
            cJSON_Delete(line);
        n++;
    }
    fclose(f);
    return n;
}

static double num(const cJSON *obj, const char *key)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static const char *str(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static loom_logger_instance *create(const char *log_dir, loom_error **err)
{
    loom_logger_config c = {
        .struct_size = sizeof c,
        .role = LOOM_LOGGER_DRIVER,
        .exec_id = "exec-7",
        .log_dir = log_dir,
        .config_json = "{}",
    };
    loom_logger_instance *inst = NULL;
    *err = factory->create(factory, &c, &inst);
    return inst;
}

int main(void)
{
    test_plugin tp = {0};
    factory = test_plugin_open(&tp, JSONL_PLUGIN, LOOM_LOGGER_FACTORY_ID);
    CHECK(factory != NULL);
    if (!factory)
        return CHECK_DONE();
    CHECK_STR_EQ(tp.module->id, "jsonl");

    char root[] = "/tmp/loom-test-jsonl-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char log_dir[256], path[320];
    snprintf(log_dir, sizeof log_dir, "%s/log/driver", root); /* not there yet */
    snprintf(path, sizeof path, "%s/evaluation-metrics.txt", log_dir);

    loom_error *err = NULL;
    loom_logger_instance *inst = create(log_dir, &err);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    if (!inst)
        return CHECK_DONE();

    loom_train_info info = {sizeof info, 5, 2, 64, 128, 0, "exec-7"};
    CHECK(factory->on_train_begin(inst, &info) == NULL);
    loom_metric train[2] = {{"loss", 0.75}, {"accuracy", 0.5}};
    CHECK(factory->log_train_metrics(inst, train, 2, 100, 1, 2) == NULL);
    /* A NaN loss and a metric named like a reserved key keep the line JSON. */
    loom_metric odd[2] = {{"loss", NAN}, {"epoch", 99}};
    CHECK(factory->log_train_metrics(inst, odd, 2, 101, 1, 2) == NULL);
    loom_metric test[1] = {{"accuracy", 0.875}};
    CHECK(factory->log_test_metrics(inst, test, 1, 200, 2) == NULL);
    CHECK(factory->on_train_end(inst, LOOM_TRAIN_FINISHED, "done \"ok\"") == NULL);

    /* Flushed per line: readable before the instance is destroyed. */
    cJSON *lines[8] = {0};
    int n = read_lines(path, lines, 8);
    CHECK(n == 5);
    if (n == 5) {
        CHECK_STR_EQ(str(lines[0], "event"), "train_begin");
        CHECK(num(lines[0], "epochs") == 5);
        CHECK(num(lines[0], "workers") == 2);
        CHECK(num(lines[0], "batch_size") == 64);
        CHECK(num(lines[0], "effective_batch_size") == 128);
        CHECK_STR_EQ(str(lines[0], "exec_id"), "exec-7");

        CHECK_STR_EQ(str(lines[1], "type"), "train");
        CHECK(num(lines[1], "iteration") == 100);
        CHECK(num(lines[1], "epoch") == 1);
        CHECK(num(lines[1], "workers") == 2);
        CHECK(num(lines[1], "loss") == 0.75);
        CHECK(num(lines[1], "accuracy") == 0.5);
        CHECK(num(lines[1], "time") > 1.0e9);

        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(lines[2], "loss")));
        CHECK(num(lines[2], "epoch") == 1);

        CHECK_STR_EQ(str(lines[3], "type"), "test");
        CHECK(num(lines[3], "iteration") == 200);
        CHECK(num(lines[3], "accuracy") == 0.875);

        CHECK_STR_EQ(str(lines[4], "event"), "train_end");
        CHECK_STR_EQ(str(lines[4], "status"), "finished");
        CHECK_STR_EQ(str(lines[4], "message"), "done \"ok\"");
    }
    for (int i = 0; i < 8; i++)
        cJSON_Delete(lines[i]);
    factory->destroy(inst);

    /* A second instance (a resumed job) appends. */
    inst = create(log_dir, &err);
    CHECK(err == NULL && inst != NULL);
    if (inst) {
        CHECK(factory->on_train_end(inst, LOOM_TRAIN_KILLED, NULL) == NULL);
        factory->destroy(inst);
    }
    cJSON *more[8] = {0};
    CHECK(read_lines(path, more, 8) == 6);
    CHECK_STR_EQ(str(more[5], "status"), "killed");
    for (int i = 0; i < 8; i++)
        cJSON_Delete(more[i]);

    /* Refusals name what is wrong. */
    inst = create(NULL, &err);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "log_dir");
    loom_err_free(err);
    char blocked[320];
    snprintf(blocked, sizeof blocked, "%s/evaluation-metrics.txt", log_dir);
    inst = create(blocked, &err); /* a file where a folder should be */
    CHECK(loom_err_code(err) == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(loom_err_message(err), blocked);
    loom_err_free(err);

    unlink(path);
    rmdir(log_dir);
    snprintf(log_dir, sizeof log_dir, "%s/log", root);
    rmdir(log_dir);
    rmdir(root);
    test_plugin_close(&tp);
    return CHECK_DONE();
}
