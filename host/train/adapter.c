/* train/adapter.c - see adapter.h. */
#include "train/adapter.h"

#include "plugin/plugin.h"

#include <stddef.h>

/* The plugin loader's one rule for an entry: within struct_size and set. */
#define HAS(f, field) (LOOM_OPTIONAL_ENTRY(f, loom_framework_factory, field) != NULL)

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
                          : !HAS(f, state_tensors)    ? "state_tensors"
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
