/* train/adapter.c - see adapter.h. */
#include "train/adapter.h"

#include "plugin/plugin.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The plugin loader's one rule for an entry: within struct_size and set. */
#define HAS(f, field) (LOOM_OPTIONAL_ENTRY(f, loom_framework_factory, field) != NULL)

static int has_tensor_pair(const loom_framework_factory *f)
{
    return HAS(f, state_tensor_count) && HAS(f, state_tensor_get);
}

loom_error *adapter_check_trainer(const loom_framework_factory *f, const char *what)
{
    if (!LOOM_STRUCT_HAS(f, loom_framework_factory, style) || f->style != LOOM_FRAMEWORK_TRAINER)
        return loom_err(LOOM_E_UNSUPPORTED, "%s is not a trainer-style framework adapter", what);
    const char *missing = !HAS(f, create)             ? "create"
                          : !HAS(f, destroy)          ? "destroy"
                          : !HAS(f, dataset_size)     ? "dataset_size"
                          : !HAS(f, buffers)          ? "buffers"
                          : !HAS(f, zero_grad)        ? "zero_grad"
                          : !HAS(f, forward_backward) ? "forward_backward"
                          : !HAS(f, apply)            ? "apply"
                          : !HAS(f, evaluate)         ? "evaluate"
                          : !HAS(f, state_tensors) && !has_tensor_pair(f)
                              ? "state_tensors (or state_tensor_count and state_tensor_get)"
                              : NULL;
    if (missing)
        return loom_err(LOOM_E_UNSUPPORTED,
                        "%s: the trainer-style adapter has no '%s' (struct_size %u)", what, missing,
                        f->struct_size);
    return NULL;
}

loom_error *adapter_state_loaded(const loom_framework_factory *f, loom_framework_instance *inst)
{
    return HAS(f, state_loaded) ? f->state_loaded(inst) : NULL;
}

loom_error *adapter_job_metrics(const loom_framework_factory *f, loom_framework_instance *inst,
                                int32_t split, const loom_metrics *metrics,
                                const loom_step_info *step, uint32_t workers)
{
    return HAS(f, job_metrics) ? f->job_metrics(inst, split, metrics, step, workers) : NULL;
}

void adapter_metrics_init(adapter_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->list.struct_size = sizeof m->list;
    m->list.more = m->more;
    m->list.more_capacity = ADAPTER_MAX_METRICS - LOOM_MAX_METRICS;
}

/* Room for `n` views, each stamped with the host's struct_size. */
static loom_error *grow_views(loom_tensor_view **views, int32_t **roles, uint32_t n)
{
    loom_tensor_view *v = realloc(*views, (size_t)(n ? n : 1) * sizeof *v);
    if (v)
        *views = v;
    int32_t *r = realloc(*roles, (size_t)(n ? n : 1) * sizeof *r);
    if (r)
        *roles = r;
    if (!v || !r)
        return loom_err(LOOM_E_INTERNAL, "out of memory for %u state tensor views", n);
    memset(v, 0, (size_t)n * sizeof *v);
    memset(r, 0, (size_t)n * sizeof *r);
    for (uint32_t i = 0; i < n; i++)
        v[i].struct_size = sizeof *v;
    return NULL;
}

static loom_error *check_tensor_count(uint32_t n)
{
    if (n > ADAPTER_MAX_STATE_TENSORS)
        return loom_err(LOOM_E_LIMIT, "the model has %u state tensors, more than %d", n,
                        ADAPTER_MAX_STATE_TENSORS);
    return NULL;
}

/* ABI 1.5: one view at a time, each sized by the host. */
static loom_error *tensors_by_index(const loom_framework_factory *f, loom_framework_instance *inst,
                                    loom_tensor_view **views, int32_t **roles, uint32_t *count)
{
    uint32_t n = 0;
    loom_error *e = f->state_tensor_count(inst, &n);
    if (e)
        return loom_err_wrap(e, "state_tensor_count");
    if ((e = check_tensor_count(n)) || (e = grow_views(views, roles, n)))
        return e;
    for (uint32_t i = 0; i < n; i++)
        if ((e = f->state_tensor_get(inst, i, &(*views)[i], &(*roles)[i])))
            return loom_err_wrap(e, "state_tensor_get(%u)", i);
    *count = n;
    return NULL;
}

/* Before 1.5: an array the adapter fills, asked again when it needs more
 * room (it reports the number needed whatever the capacity). */
static loom_error *tensors_by_array(const loom_framework_factory *f, loom_framework_instance *inst,
                                    loom_tensor_view **views, int32_t **roles, uint32_t *count)
{
    uint32_t capacity = 64, n = 0;
    for (int round = 0;; round++) {
        loom_error *e = grow_views(views, roles, capacity);
        if (!e && (e = f->state_tensors(inst, *views, *roles, capacity, &n)))
            e = loom_err_wrap(e, "state_tensors");
        if (!e)
            e = check_tensor_count(n);
        if (e)
            return e;
        if (n <= capacity)
            break;
        if (round) /* it had the room it asked for */
            return loom_err(LOOM_E_INVALID,
                            "state_tensors asked for %u views, then for %u with that room",
                            capacity, n);
        capacity = n;
    }
    *count = n;
    return NULL;
}

loom_error *adapter_state_tensors(const loom_framework_factory *f, loom_framework_instance *inst,
                                  loom_tensor_view **views, int32_t **roles, uint32_t *count)
{
    *views = NULL;
    *roles = NULL;
    *count = 0;
    loom_error *e = has_tensor_pair(f) ? tensors_by_index(f, inst, views, roles, count)
                                       : tensors_by_array(f, inst, views, roles, count);
    if (e) {
        free(*views);
        free(*roles);
        *views = NULL;
        *roles = NULL;
        *count = 0;
    }
    return e;
}
