/*
 * train/adapter.h - the trainer's view of a framework adapter's factory. A
 * plugin built against an older SDK has a smaller factory: an entry past
 * its struct_size is not there, whatever the bytes beyond it hold. So every
 * entry is read through these calls, which check struct_size first.
 */
#ifndef LOOM_TRAIN_ADAPTER_H
#define LOOM_TRAIN_ADAPTER_H

#include <loom/loom.h>

#include "plugin/plugin.h"
#include "util/error.h"

/* Whether `f` is a trainer-style adapter with every required entry (create
 * through evaluate, and state_tensors or the state_tensor_count/get pair)
 * inside its struct_size and set. LOOM_E_UNSUPPORTED
 * naming `what` (the adapter's path or name) and the missing entry. */
loom_error *adapter_check_trainer(const loom_framework_factory *f, const char *what);

/* Calls the optional state_loaded entry when the adapter has it. */
loom_error *adapter_state_loaded(const loom_framework_factory *f, loom_framework_instance *inst);

/* Hands the job's mean metrics to the optional job_metrics entry when the
 * adapter has it. */
loom_error *adapter_job_metrics(const loom_framework_factory *f, loom_framework_instance *inst,
                                int32_t split, const loom_metrics *metrics,
                                const loom_step_info *step, uint32_t workers);

/* Metrics the host takes from one adapter call (plugin/plugin.h). */
#define ADAPTER_MAX_METRICS LOOM_HOST_MAX_METRICS

/* A loom_metrics with the host's room past items. */
typedef struct adapter_metrics {
    loom_metrics list;
    loom_metric more[ADAPTER_MAX_METRICS - LOOM_MAX_METRICS];
} adapter_metrics;

/* Empties `m` and offers its room to the adapter. */
void adapter_metrics_init(adapter_metrics *m);

/* State tensors one instance may have. */
#define ADAPTER_MAX_STATE_TENSORS 65536

/* Every state tensor of `inst`, through state_tensor_count/get when the
 * adapter has them (ABI 1.5), else through the array form state_tensors.
 * On success *views and *roles are malloc'd arrays of *count entries, the
 * caller's to free. LOOM_E_LIMIT past ADAPTER_MAX_STATE_TENSORS; the
 * adapter's own error wrapped with the entry's name. */
loom_error *adapter_state_tensors(const loom_framework_factory *f, loom_framework_instance *inst,
                                  loom_tensor_view **views, int32_t **roles, uint32_t *count);

#endif
