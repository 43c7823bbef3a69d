/*
 * exec/dlicmd.h - submissions in dlicmd's syntax: "--exec-start edt
 * --model-dir DIR --numWorker 4 --msd-env K=V -- --epochs 5". The REST API
 * carries them as one string (WMLA's "args"), the CLI as argv; both end up
 * here.
 */
#ifndef LOOM_EXEC_DLICMD_H
#define LOOM_EXEC_DLICMD_H

/* --consumer names a plan path, which the scheduler keeps in 256 bytes. */
#define DLICMD_CONSUMER_MAX 255

#include <stddef.h>

#include "store/record_states.h"
#include "util/error.h"

typedef struct dlicmd {
    char *exec_start;   /* framework name (required) */
    char *model_dir;    /* as given by the user (client side) */
    char *model_main;
    device_kind device_type; /* --workerDeviceType; default DEVICE_KIND_CPU */
    int device_type_given; /* --workerDeviceType was on the command line */
    char *consumer;     /* resource plan (at most DLICMD_CONSUMER_MAX bytes); NULL = the
                         * user's default */
    char *data_dir;
    int num_worker;     /* default 1 */
    int num_worker_given; /* --numWorker was on the command line */
    int worker_device_num; /* default 1 */
    int priority;       /* --msd-priority; default 0 */
    int sync_mode_async; /* --syncMode ASYNC */
    int queue_if_too_large; /* --queue-if-too-large: wait for devices that do not exist yet */
    char **msd_env;     /* "K=V" */
    int msd_env_count;
    char **args;        /* after "--" */
    int arg_count;
    /* WMLA's flags (see the README's table). */
    char *data_path;    /* --cs-datastore-meta data_path: DATA_DIR under the data store */
    int max_workers;    /* --edt-options maxWorkers=N (0: not given) */
    int gpu_per_worker; /* --gpuPerWorker N; 0: a CPU worker, or not given */
    int gpu_per_worker_given;
    char *python_version;  /* --python-version X.Y */
    char *conda_env;       /* --conda-env-name NAME */
    char *debug_level;     /* --debug-level LEVEL, lower case */
    /* What the host does differently from what a flag asked for, one
     * sentence each, for the submission's reply. */
    char **warnings;
    int warning_count;
} dlicmd;

/* One flag dlicmd_parse_words accepts, as `loom exec start --help` lists
 * it: the flag, its value's form and what it does. */
typedef struct dlicmd_flag {
    const char *name;  /* "--numWorker" */
    const char *value; /* "N" */
    const char *help;
} dlicmd_flag;

/* Every flag the parser accepts, in the order the help lists them. */
extern const dlicmd_flag dlicmd_flags[];
extern const size_t dlicmd_flag_count;

/* Splits `text` into words like a POSIX shell would (quotes, backslash),
 * without expansions, into a NULL-terminated malloc'd vector (free with
 * dlicmd_free_words). LOOM_E_INVALID for e.g. an unterminated quote. */
loom_error *dlicmd_split(const char *text, char ***words, int *count);
void dlicmd_free_words(char **words);

/* Parses words. Unknown flags, missing values and out-of-range numbers are
 * LOOM_E_INVALID errors naming the flag; on failure *out holds nothing. */
loom_error *dlicmd_parse_words(int argc, char *const *argv, dlicmd *out);
loom_error *dlicmd_parse(const char *text, dlicmd *out);
void dlicmd_free(dlicmd *d);

/* Puts a --msd-env KEY=VALUE pair before the others, so any of the
 * submission's own pairs for the same key come after it and win.
 * LOOM_E_INVALID for a pair without "KEY=". */
loom_error *dlicmd_env_first(dlicmd *d, const char *pair);

/* Adds a warning for the submission's reply (NULL, or out of memory). */
loom_error *dlicmd_warn(dlicmd *d, const char *text);

/* loom's framework name for a name as WMLA spells it (any case):
 * PyTorch and tensorflow run as `python`, edtPyTorch under the elastic
 * trainer's PyTorch adapter; any other name is returned as it is. *wmla
 * (may be NULL) is 1 when the name is one of WMLA's. */
const char *dlicmd_framework_name(const char *exec_start, int *wmla);

/* Joins words into one string that dlicmd_split turns back into them. */
char *dlicmd_join(int argc, char *const *argv);

#endif
