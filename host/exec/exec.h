/*
 * exec/exec.h - execs (WMLA's name for a submitted job): submission,
 * launch through a framework adapter, supervision of the worker processes,
 * stop, delete, and reconciliation after a host restart. Launch-style
 * frameworks run here; trainer-style ones are handed to the elastic trainer.
 */
#ifndef LOOM_EXEC_EXEC_H
#define LOOM_EXEC_EXEC_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "plugin/registry.h"
#include "sched/sched_service.h"
#include "store/store.h"

typedef struct exec_service exec_service;

/* Takes over the stored execs: any left running by a host that died is
 * stopped and marked ERROR with the reason. `home` holds execs/ and data/. */
exec_service *exec_service_create(store *st, registry *reg, sched_service *sched,
                                  const char *home);
/* Stops running execs (marked KILLED: the host shut down) and the
 * supervisor thread. */
void exec_service_destroy(exec_service *es);

typedef struct exec_submission {
    const char *user;
    const char *args;    /* dlicmd syntax */
    const void *archive; /* tar of the model directory, or NULL */
    size_t archive_len;
} exec_submission;

/* Returns 0 and the new id, or an HTTP status (400, 404, 500, ...) with err. */
int exec_submit(exec_service *es, const exec_submission *sub, char *id,
                size_t idlen, char *err, size_t errlen);
/* `owner` limits every call to that user's execs (NULL: an administrator's
 * view, every exec); another user's exec is "not found", so names do not
 * leak. */
/* Returns 0, or 404 / 409 with err. */
int exec_stop(exec_service *es, const char *owner, const char *id, char *err, size_t errlen);
/* Asks a training exec for `workers` workers; 0, or 400/404/409 with err. */
int exec_resize(exec_service *es, const char *owner, const char *id, int workers, char *err,
                size_t errlen);
int exec_delete(exec_service *es, const char *owner, const char *id, char *err, size_t errlen);
/* The exec as JSON (caller frees), or NULL when there is none. */
cJSON *exec_describe(exec_service *es, const char *owner, const char *id);
cJSON *exec_list(exec_service *es, const char *owner);
/* Path of a worker's "stdout" or "stderr" file (worker -1: the training
 * driver's); 0, or 404 with err. */
int exec_log_path(exec_service *es, const char *owner, const char *id, int worker,
                  const char *stream, char *path, size_t pathlen, char *err,
                  size_t errlen);
/* True for FINISHED, KILLED, ERROR. */
int exec_state_is_final(const char *state);

#endif
