/*
 * train/adapter.h - the trainer's view of a framework adapter's factory. A
 * plugin built against an older SDK has a smaller factory: an entry past
 * its struct_size is not there, whatever the bytes beyond it hold. So every
 * entry is read through these calls, which check struct_size first.
 */
#ifndef LOOM_TRAIN_ADAPTER_H
#define LOOM_TRAIN_ADAPTER_H

#include <loom/loom.h>

#include "util/error.h"

/* Whether `f` is a trainer-style adapter with every required entry (create
 * through state_tensors) inside its struct_size and set. LOOM_E_UNSUPPORTED
 * naming `what` (the adapter's path or name) and the missing entry. */
loom_error *adapter_check_trainer(const loom_framework_factory *f, const char *what);

/* Calls the optional state_loaded entry when the adapter has it. */
loom_error *adapter_state_loaded(const loom_framework_factory *f, loom_framework_instance *inst);

/* Hands the job's mean metrics to the optional job_metrics entry when the
 * adapter has it. */
loom_error *adapter_job_metrics(const loom_framework_factory *f, loom_framework_instance *inst,
                                int32_t split, const loom_metrics *metrics,
                                const loom_step_info *step, uint32_t workers);

#endif
