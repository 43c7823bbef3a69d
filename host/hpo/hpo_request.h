/*
 * hpo/hpo_request.h - the exec request of one tuning experiment, filled as
 * a structure for exec_submit: tuning builds no dlicmd text for exec to
 * parse back.
 */
#ifndef LOOM_HPO_HPO_REQUEST_H
#define LOOM_HPO_HPO_REQUEST_H

#include <stdint.h>

#include "exec/dlicmd.h"
#include "util/error.h"

/* The task's own dlicmd words (modelSpec.args, the user's text, parsed
 * here at tuning's edge) with the experiment's id as SUBID, as under WMLA,
 * and for an experiment with a budget EDT_CHECKPOINT_LAST=1 (it may be
 * promoted, so an elastic one checkpoints after its last epoch). Both come
 * before the task's own --msd-env pairs, which so win. *words: the same
 * request in dlicmd's words for the exec's record (malloc'd), which a
 * restarted host reads back. On failure out holds nothing. */
loom_error *hpo_exp_request(const char *task_args, uint64_t id, double budget, dlicmd *out,
                            char **words);

#endif
