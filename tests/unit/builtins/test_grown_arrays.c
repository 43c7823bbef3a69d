/*
 * tests/unit/builtins/test_grown_arrays.c - ABI 1.5's growable arrays
 * through the trainer's own readers (train/adapter.h): grown_arrays.so
 * (built against today's SDK) reports more metrics than LOOM_MAX_METRICS and
 * more state tensors than the host once had room for, one view at a time;
 * old_full.so (built against the ABI 1.0 headers, poison past its tables)
 * still hands its metrics in `items` and its tensors through the array form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "plugin/registry.h"
#include "train/adapter.h"

static char tmp[] = "/tmp/loom-grown-XXXXXX";

static loom_framework_instance *create(const loom_framework_factory *f)
{
    loom_trainer_config cfg = {.struct_size = sizeof cfg, .code_dir = tmp, .data_dir = tmp,
                               .device = {.struct_size = sizeof(loom_device)}};
    loom_framework_instance *inst = NULL;
    CHECK(f->create(f, &cfg, &inst) == NULL);
    CHECK(inst != NULL);
    return inst;
}

/* The adapter's state tensors through the trainer's reader: `expected` of
 * them, the first the parameter "weight". */
static uint32_t state_tensors(const loom_framework_factory *f, loom_framework_instance *inst,
                              uint32_t expected, loom_tensor_view **views, int32_t **roles)
{
    uint32_t n = 0;
    loom_error *err = adapter_state_tensors(f, inst, views, roles, &n);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    CHECK(n == expected);
    CHECK(n > 0 && !strcmp((*views)[0].name, "weight") && (*roles)[0] == LOOM_TENSOR_PARAMETER);
    return n;
}

static void grown(registry *r)
{
    registry_entry e;
    CHECK(registry_acquire(r, LOOM_KIND_FRAMEWORK, "grown_arrays", &e) == 0);
    const loom_framework_factory *f = e.factory;
    CHECK(adapter_check_trainer(f, "grown_arrays.so") == NULL); /* no state_tensors: the pair */
    loom_framework_instance *inst = create(f);

    loom_tensor_view *views;
    int32_t *roles;
    uint32_t n = state_tensors(f, inst, 300, &views, &roles);
    CHECK(views[0].shape[0] == 4);
    int intact = 1;
    for (uint32_t i = 1; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "counter.%u", i - 1);
        /* each view kept the host's struct_size: nothing of the adapter's
         * later, larger view spilled into its neighbour */
        intact &= views[i].struct_size == sizeof(loom_tensor_view) && views[i].name &&
                  !strcmp(views[i].name, name) && roles[i] == LOOM_TENSOR_OPTIMIZER &&
                  views[i].nbytes == sizeof(float);
    }
    CHECK(intact);
    free(views);
    free(roles);

    /* Metrics past LOOM_MAX_METRICS land in the room the host offers. */
    adapter_metrics m;
    adapter_metrics_init(&m);
    uint64_t idx[2] = {0, 1};
    CHECK(f->forward_backward(inst, idx, 2, 0.5f, &m.list) == NULL);
    CHECK(loom_metrics_total(&m.list) == 20);
    CHECK(m.list.count == LOOM_MAX_METRICS && m.list.more_count == 4);
    CHECK_STR_EQ(loom_metrics_at(&m.list, 0)->name, "loss");
    CHECK_STR_EQ(loom_metrics_at(&m.list, 19)->name, "m19");
    CHECK(loom_metrics_at(&m.list, 19)->value == 19.0);

    /* A list without room (as a host before 1.5 built it) holds the first
     * LOOM_MAX_METRICS, and loom_metrics_add says it is full. */
    loom_metrics old = {.struct_size = (uint32_t)offsetof(loom_metrics, more)};
    CHECK(f->evaluate(inst, LOOM_SPLIT_TEST, idx, 2, &old) == NULL);
    CHECK(loom_metrics_total(&old) == LOOM_MAX_METRICS);
    CHECK(loom_metrics_add(&old, "extra", 1) == LOOM_ERR_RESOURCE_EXHAUSTED);

    /* The host's list fills to ADAPTER_MAX_METRICS, then refuses. */
    adapter_metrics full;
    adapter_metrics_init(&full);
    int added = 0;
    while (loom_metrics_add(&full.list, "x", 1) == LOOM_OK)
        added++;
    CHECK(added == ADAPTER_MAX_METRICS);

    /* The job's metrics reach the adapter whole. */
    loom_step_info step = {.struct_size = sizeof step, .epochs = 1};
    CHECK(adapter_job_metrics(f, inst, LOOM_SPLIT_TRAIN, &m.list, &step, 1) == NULL);
    char path[512], text[128] = "";
    snprintf(path, sizeof path, "%s/grown_arrays_calls.txt", tmp);
    FILE *in = fopen(path, "r");
    CHECK(in != NULL);
    if (in) {
        CHECK(fgets(text, sizeof text, in) != NULL);
        fclose(in);
    }
    CHECK_STR_EQ(text, "job_metrics 20 last m19\n");

    f->destroy(inst);
    registry_release(r, LOOM_KIND_FRAMEWORK, "grown_arrays");
}

/* A plugin built before 1.5: the array form and `items` only. */
static void old(registry *r)
{
    registry_entry e;
    CHECK(registry_acquire(r, LOOM_KIND_FRAMEWORK, "old_full", &e) == 0);
    const loom_framework_factory *f = e.factory;
    loom_framework_instance *inst = create(f);
    loom_tensor_view *views;
    int32_t *roles;
    state_tensors(f, inst, 1, &views, &roles);
    free(views);
    free(roles);
    adapter_metrics m;
    adapter_metrics_init(&m);
    uint64_t idx[1] = {0};
    CHECK(f->forward_backward(inst, idx, 1, 1.0f, &m.list) == NULL);
    CHECK(loom_metrics_total(&m.list) == 1);
    CHECK_STR_EQ(loom_metrics_at(&m.list, 0)->name, "loss");
    f->destroy(inst);
    registry_release(r, LOOM_KIND_FRAMEWORK, "old_full");
}

int main(void)
{
    CHECK(mkdtemp(tmp) != NULL);
    registry *r = registry_create();
    const char *names[] = {"grown_arrays", "old_full"};
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.so", LOOM_TEST_PLUGIN_DIR, names[i]);
        loom_error *e = registry_load(r, path, "user", NULL, -1, 0);
        CHECK_MSG(e == NULL, "%s: %s", names[i], loom_err_message(e));
        loom_err_free(e);
    }
    grown(r);
    old(r);
    registry_destroy(r);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
