/*
 * train/checkpoint.h - checkpoints and the final model as safetensors files:
 * every state tensor of the framework adapter (parameters, optimizer state),
 * and the trainer's position as JSON in the "loom.trainer" metadata entry.
 * A file is written whole or not at all; a damaged one is refused by name.
 */
#ifndef LOOM_TRAIN_CHECKPOINT_H
#define LOOM_TRAIN_CHECKPOINT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include <loom/loom.h>

#include "util/error.h"

#define CHECKPOINT_META_KEY "loom.trainer"

/* Writes views[0..n) (only role PARAMETER ones when params_only) with
 * `meta` (an object, may be NULL) to path, atomically. */
loom_error *checkpoint_save(const char *path, const loom_tensor_view *views, const int32_t *roles,
                            uint32_t n, int params_only, const cJSON *meta);

/* Reads path into views[0..n): every view must be in the file with the same
 * dtype, shape and size (LOOM_E_INVALID naming the tensor otherwise).
 * *meta_out (may be NULL) receives the position. */
loom_error *checkpoint_load(const char *path, loom_tensor_view *views, uint32_t n,
                            cJSON **meta_out);

/* The newest valid checkpoint in dir ("epoch-N.safetensors", highest N
 * first); damaged ones are skipped and each reason appended to `skipped`
 * (may be NULL). Returns 0 and fills path and *epoch, or -1 when none.
 * dir is a job's folder: listed and read through util/user_tree, so a
 * checkpoint (or the folder) that is a link is skipped, not read. When
 * meta is not NULL it receives the found one's position (caller frees). */
int checkpoint_find_latest(const char *dir, char *path, size_t pathlen, int *epoch, cJSON **meta,
                           char *skipped, size_t skippedlen);

/* The epoch whose validation was best in a val_dict_list-shaped array
 * ([{"step": EPOCH, METRIC: VALUE, ...}]): the lowest "loss" when the
 * entries have one, else the highest "accuracy"; -1 when neither. */
int checkpoint_best_epoch(const cJSON *val_list);

/* Keeps, of the checkpoints in dir ("epoch-N.safetensors"), the newest
 * `keep` and the one of best_epoch (when >= 0), and removes the rest;
 * returns how many were removed. keep <= 0 keeps everything. */
int checkpoint_prune(const char *dir, int keep, int best_epoch);

#endif
