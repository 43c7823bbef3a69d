/* The trainer reads a framework adapter's table only as far as its
 * struct_size: an adapter built against an older, smaller table gets no
 * call through what lies past its end, and a table missing a required
 * entry is refused with the entry's name. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/adapter.h"

static int state_loaded_calls;

static loom_error *count_state_loaded(loom_framework_instance *inst)
{
    (void)inst;
    state_loaded_calls++;
    return NULL;
}

static loom_error *create(const loom_framework_factory *self, const loom_trainer_config *config,
                          loom_framework_instance **out)
{
    (void)self, (void)config, (void)out;
    return NULL;
}
static void destroy(loom_framework_instance *inst) { (void)inst; }
static loom_error *dataset_size(loom_framework_instance *inst, int32_t split, uint64_t *count)
{
    (void)inst, (void)split, (void)count;
    return NULL;
}
static loom_error *buffers(loom_framework_instance *inst, loom_tensor_view *p, loom_tensor_view *g)
{
    (void)inst, (void)p, (void)g;
    return NULL;
}
static loom_error *zero_grad(loom_framework_instance *inst)
{
    (void)inst;
    return NULL;
}
static loom_error *forward_backward(loom_framework_instance *inst, const uint64_t *idx, uint32_t n,
                                    float scale, loom_metrics *out)
{
    (void)inst, (void)idx, (void)n, (void)scale, (void)out;
    return NULL;
}
static loom_error *apply(loom_framework_instance *inst, const loom_step_info *step)
{
    (void)inst, (void)step;
    return NULL;
}
static loom_error *evaluate(loom_framework_instance *inst, int32_t split, const uint64_t *idx,
                            uint32_t n, loom_metrics *out)
{
    (void)inst, (void)split, (void)idx, (void)n, (void)out;
    return NULL;
}
static loom_error *state_tensors(loom_framework_instance *inst, loom_tensor_view *views,
                                 int32_t *roles, uint32_t cap, uint32_t *count)
{
    (void)inst, (void)views, (void)roles, (void)cap, (void)count;
    return NULL;
}

static loom_framework_factory full_table(void)
{
    return (loom_framework_factory){
        .struct_size = sizeof(loom_framework_factory), .style = LOOM_FRAMEWORK_TRAINER,
        .create = create, .destroy = destroy, .dataset_size = dataset_size, .buffers = buffers,
        .zero_grad = zero_grad, .forward_backward = forward_backward, .apply = apply,
        .evaluate = evaluate, .state_tensors = state_tensors, .state_loaded = count_state_loaded};
}

static void test_state_loaded(void)
{
    loom_framework_factory f = full_table();
    CHECK(adapter_state_loaded(&f, NULL) == NULL);
    CHECK(state_loaded_calls == 1);
    /* An older table ends before state_loaded: the bytes there (here a
     * valid pointer, in a real plugin whatever follows) are not an entry. */
    f.struct_size = (uint32_t)offsetof(loom_framework_factory, state_loaded);
    CHECK(adapter_state_loaded(&f, NULL) == NULL);
    CHECK(state_loaded_calls == 1);
    CHECK(adapter_check_trainer(&f, "old.so") == NULL); /* optional: still a trainer */
    f = full_table();
    f.state_loaded = NULL;
    CHECK(adapter_state_loaded(&f, NULL) == NULL);
    CHECK(state_loaded_calls == 1);
}

static void test_required_entries(void)
{
    char err[256];
    loom_framework_factory f = full_table();
    CHECK(adapter_check_trainer(&f, "full.so") == NULL);
    f.struct_size = (uint32_t)offsetof(loom_framework_factory, evaluate);
    CHECK(loom_err_take(adapter_check_trainer(&f, "short.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "short.so: the trainer-style adapter has no 'evaluate'");
    f = full_table();
    f.zero_grad = NULL;
    CHECK(loom_err_take(adapter_check_trainer(&f, "nozero.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "no 'zero_grad'");
    f = full_table();
    f.style = LOOM_FRAMEWORK_LAUNCH;
    CHECK(loom_err_take(adapter_check_trainer(&f, "launch.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "launch.so is not a trainer-style framework adapter");
    f = full_table();
    f.struct_size = (uint32_t)offsetof(loom_framework_factory, style);
    CHECK(loom_err_take(adapter_check_trainer(&f, "tiny.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
    CHECK(loom_err_take(adapter_check_trainer(NULL, "none.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
}

/* An adapter built before 1.5 with more tensors than the host's first
 * guess: it reports the number needed, and is asked again with that room. */
#define MANY_VIEWS 100
static int array_calls;
static loom_error *many_state_tensors(loom_framework_instance *inst, loom_tensor_view *views,
                                      int32_t *roles, uint32_t cap, uint32_t *count)
{
    (void)inst;
    array_calls++;
    *count = MANY_VIEWS;
    for (uint32_t i = 0; i < cap && i < MANY_VIEWS; i++) {
        views[i].name = "t";
        views[i].nbytes = i;
        roles[i] = LOOM_TENSOR_OTHER;
    }
    return NULL;
}

static void test_array_form_grows(void)
{
    loom_framework_factory f = full_table();
    f.state_tensors = many_state_tensors;
    f.struct_size = (uint32_t)offsetof(loom_framework_factory, state_tensor_count);
    loom_tensor_view *views;
    int32_t *roles;
    uint32_t n;
    CHECK(adapter_state_tensors(&f, NULL, &views, &roles, &n) == NULL);
    CHECK(n == MANY_VIEWS);
    CHECK(array_calls == 2);
    CHECK(views[MANY_VIEWS - 1].nbytes == MANY_VIEWS - 1 && roles[MANY_VIEWS - 1] == LOOM_TENSOR_OTHER);
    CHECK(views[MANY_VIEWS - 1].struct_size == sizeof(loom_tensor_view));
    free(views);
    free(roles);
    /* Neither form: refused by name. */
    char err[256];
    f.state_tensors = NULL;
    CHECK(loom_err_take(adapter_check_trainer(&f, "nostate.so"), err, sizeof err) ==
          LOOM_E_UNSUPPORTED);
    CHECK_CONTAINS(err, "no 'state_tensors (or state_tensor_count and state_tensor_get)'");
}

int main(void)
{
    test_state_loaded();
    test_required_entries();
    test_array_form_grows();
    return CHECK_DONE();
}
