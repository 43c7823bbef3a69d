/*
 * hpo/hpo_store.h - what a tuning task's state word means. The task and
 * experiment records, and their rows, are the store's (store/store_hpo.h).
 */
#ifndef LOOM_HPO_HPO_STORE_H
#define LOOM_HPO_HPO_STORE_H

#include <stdint.h>

#include "store/store_hpo.h"
#include "util/error.h"

/* A task's state; the store and the REST replies hold its word. STOPPING:
 * a stop was acknowledged and its running experiments are being ended. */
typedef enum hpo_task_state {
    HPO_TASK_SUBMITTED,
    HPO_TASK_RUNNING,
    HPO_TASK_STOPPING,
    HPO_TASK_STOPPED,
    HPO_TASK_FINISHED,
    HPO_TASK_FAILED,
    HPO_TASK_UNKNOWN /* a word this version does not know */
} hpo_task_state;

hpo_task_state hpo_task_state_of(const char *word);
const char *hpo_task_state_word(hpo_task_state s);

#endif
