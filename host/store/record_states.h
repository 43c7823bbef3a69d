/*
 * store/record_states.h - the states the host keeps of execs, tuning tasks,
 * their experiments and models, and the kind of device an exec asks for.
 * Code decides on these enums; WMLA's words (the text below) appear only
 * where a state leaves or enters the host: the database, REST and the CLI.
 * *_state_parse refuses a word it does not know (LOOM_E_INVALID naming it),
 * so a database written by a later version is not misread.
 */
#ifndef LOOM_STORE_RECORD_STATES_H
#define LOOM_STORE_RECORD_STATES_H

#include <stdbool.h>

#include "util/error.h"

/* An exec: SUBMITTED (accepted, not yet queued), PENDING (queued for
 * devices), LAUNCHING (devices granted, workers being started), RUNNING,
 * RECOVERING (resumed after a host restart), then one of the three final
 * states FINISHED, KILLED, ERROR. */
typedef enum exec_state {
    EXEC_STATE_SUBMITTED,
    EXEC_STATE_PENDING,
    EXEC_STATE_LAUNCHING,
    EXEC_STATE_RUNNING,
    EXEC_STATE_RECOVERING,
    EXEC_STATE_FINISHED,
    EXEC_STATE_KILLED,
    EXEC_STATE_ERROR,
    EXEC_STATE_COUNT
} exec_state;

const char *exec_state_text(exec_state s);
loom_error *exec_state_parse(const char *text, exec_state *out);
/* FINISHED, KILLED or ERROR: nothing changes it any more. */
bool exec_state_is_final(exec_state s);

/* A tuning task. STOPPING: a stop was acknowledged and its running
 * experiments are being ended; STOPPED once they have. */
typedef enum hpo_task_state {
    HPO_TASK_SUBMITTED,
    HPO_TASK_RUNNING,
    HPO_TASK_STOPPING,
    HPO_TASK_STOPPED,
    HPO_TASK_FINISHED,
    HPO_TASK_FAILED,
    HPO_TASK_STATE_COUNT
} hpo_task_state;

const char *hpo_task_state_text(hpo_task_state s);
loom_error *hpo_task_state_parse(const char *text, hpo_task_state *out);

/* A tuning experiment: NOTRUN (proposed, no exec yet), SUBMITTED (its exec
 * waits), RUNNING, then FINISHED, FAILED (its exec ended in error), KILLED
 * (its exec was stopped), STOPPED (its task was stopped) or ERROR (no exec
 * could be started for it). */
typedef enum hpo_exp_state {
    HPO_EXP_NOTRUN,
    HPO_EXP_SUBMITTED,
    HPO_EXP_RUNNING,
    HPO_EXP_FINISHED,
    HPO_EXP_FAILED,
    HPO_EXP_KILLED,
    HPO_EXP_STOPPED,
    HPO_EXP_ERROR,
    HPO_EXP_STATE_COUNT
} hpo_exp_state;

const char *hpo_exp_state_text(hpo_exp_state s);
loom_error *hpo_exp_state_parse(const char *text, hpo_exp_state *out);
/* NOTRUN, SUBMITTED or RUNNING: its outcome is still to come. */
bool hpo_exp_state_is_open(hpo_exp_state s);

/* A deployed model: stopped, starting (marked started, no kernel instance
 * serving yet), started (one has served), or failed (its kernel failed to
 * load before any served; it stays so until stopped). */
typedef enum model_state {
    MODEL_STOPPED,
    MODEL_STARTING,
    MODEL_STARTED,
    MODEL_FAILED,
    MODEL_STATE_COUNT
} model_state;

const char *model_state_text(model_state s);
loom_error *model_state_parse(const char *text, model_state *out);

/* The devices an exec runs on, as dlicmd's --device-type names them. */
typedef enum device_kind {
    DEVICE_KIND_CPU,
    DEVICE_KIND_GPU,
    DEVICE_KIND_COUNT
} device_kind;

const char *device_kind_text(device_kind k);
loom_error *device_kind_parse(const char *text, device_kind *out);

#endif
