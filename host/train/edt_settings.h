/*
 * train/edt_settings.h - an elastic training job's knobs, FabricModel's:
 * epochs, per-device batch size, engines (max devices), effective (global)
 * batch size, validation and checkpoint frequency, dataloader threads, seed,
 * loggers; from the model directory's spec ("training" block), overridden by
 * the program arguments after "--" and dlicmd's flags, and the EDT_*
 * environment pairs.
 */
#ifndef LOOM_TRAIN_EDT_SETTINGS_H
#define LOOM_TRAIN_EDT_SETTINGS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define EDT_SPEC_DEFAULT "edt.json"

typedef struct edt_settings {
    uint32_t epochs;
    uint32_t batch_size;           /* per device, per micro-batch */
    uint32_t engines;              /* max devices */
    uint32_t effective_batch_size; /* samples per optimizer step, constant */
    uint32_t validation_freq;      /* epochs; 0 = never */
    uint32_t checkpoint_freq;      /* epochs; 0 = never */
    uint32_t dataloader_threads;
    uint32_t log_every;            /* worker step metrics every N steps */
    uint64_t seed;
    uint32_t pull_timeout_s;       /* EDT_PULL_WEIGHT_TIME_OUT */
    uint32_t pull_limit;           /* EDT_PULL_FAILED_LIMITS */
    uint32_t step_timeout_ms;      /* LOOM_EDT_STEP_TIMEOUT_MS */
    char *loggers_json;            /* [{"name", "role": driver|worker|both, "config"}] */
    int async;                     /* --syncMode ASYNC: parameter server */
    uint32_t max_staleness;        /* EDT_MAX_STALENESS: ASYNC updates a gradient may lag */
    uint32_t max_worker_failures;  /* EDT_MAX_WORKER_FAILURES: deaths in a row, same cause */
    uint32_t recovery_interval_ms; /* EDT_RECOVERY_INTERVAL_MS: least time between the
                                    * coordinator's copies of the state (0: every step) */
    uint32_t steps_per_round;      /* EDT_STEPS_PER_ROUND: most steps a stable generation
                                    * runs per coordinator round (1: one round per step) */
    uint32_t round_ms;             /* EDT_ROUND_MS: a multi-step round's time budget */
    uint32_t overlap_reduce;       /* EDT_OVERLAP_REDUCE: 1: all-reduce during backward
                                    * where the adapter reports finished gradients */
    uint32_t in_place_reduce;      /* EDT_IN_PLACE_REDUCE: 1 (default): CPU workers keep
                                    * their gradients in the shared segment, where the
                                    * all-reduce runs in place; 0: in the adapter's memory,
                                    * reduced through staging */
    uint32_t checkpoint_last;      /* EDT_CHECKPOINT_LAST: 1 (default): the last epoch is
                                    * checkpointed too when checkpoint_freq divides it, so
                                    * another job may continue from it; 0: its model in
                                    * model/ only. Kept in the exec's arguments, so it
                                    * survives a restart */
} edt_settings;

/* Resolves the settings. `spec` is the parsed spec (may be NULL);
 * num_worker <= 0 means not given. Errors name the setting:
 * batch size 0, effective batch size not a multiple of the batch size, an
 * unknown argument, a value out of range (all LOOM_E_INVALID). The exclusive rule: when both
 * engines and the effective batch size are given, the larger engine count
 * wins and the effective batch follows from it. */
loom_error *edt_settings_resolve(const cJSON *spec, int num_worker, char *const *args, int nargs,
                                 char *const *env, int nenv, edt_settings *out);
void edt_settings_free(edt_settings *s);

#endif
