/*
 * hpo/wmla_task.h - a tuning task in WMLA's JSON (hpoName, modelSpec.args,
 * algoDef, hyperParams or experiments), checked and turned into loom's own
 * typed search space (loom_param, sdk/include/loom/search.h). WMLA's field
 * names, its spellings (discreateStrVal) and its string-typed numbers stop
 * here: nothing past this parser sees them.
 */
#ifndef LOOM_HPO_WMLA_TASK_H
#define LOOM_HPO_WMLA_TASK_H

#include <cjson/cJSON.h>
#include <loom/search.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define HPO_NAME_MAX 128
#define HPO_MAX_PARAMS 64
#define HPO_MAX_CHOICES 1024
#define HPO_MAX_EXPERIMENTS 10000
#define HPO_MAX_OPTIONS 64
#define HPO_MAX_PARALLEL 64

/* A task, parsed. Owns every string and array it points at. */
typedef struct hpo_task_spec {
    char name[HPO_NAME_MAX];
    char *args;               /* modelSpec.args, dlicmd syntax */
    char algorithm[64];       /* as the task names it (WMLA's or a plugin's name) */
    int64_t max_run_time_s;   /* maxRunTime; 0: none */
    uint32_t max_jobs;        /* maxJobNum; 0: none */
    uint32_t max_parallel;    /* maxParalleJobNum; default 1 */
    char objective_metric[64];
    int maximize;
    uint64_t seed;            /* RandomSeed, else 0 */
    int has_seed;
    char resource_name[64];   /* Hyperband's ResourceName, or "" */
    uint32_t option_count;
    loom_search_option *options;
    uint32_t param_count;
    loom_param *params;
    uint32_t experiment_count; /* explicit combinations, each param_count values */
    loom_value **experiments;
} hpo_task_spec;

/* Parses and checks `json` (the whole task). Every refusal is
 * LOOM_E_INVALID naming the field ("hyperParams[1] (lr): minDbVal 2 >
 * maxDbVal 1"). On success *out owns its allocations: free with
 * hpo_task_spec_free. */
loom_error *wmla_task_parse(const char *json, size_t len, hpo_task_spec *out);
void hpo_task_spec_free(hpo_task_spec *t);

/* Checks that v is a value of p: its type, inside the bounds (for a log
 * scale, between log_base^low and log_base^high), an integer for INT, one of
 * the choices for CHOICE. NULL, or LOOM_E_INVALID saying why. */
loom_error *hpo_value_in_space(const loom_param *p, const loom_value *v);

/* A value as JSON (a number or a string), and back: hpo_value_from_json
 * checks the type against p; a string value points into p's choices. */
cJSON *hpo_value_to_json(const loom_value *v);
int hpo_value_from_json(const loom_param *p, const cJSON *j, loom_value *out);
/* The value as WMLA writes fixedVal: "0.01", "256", "adam". */
void hpo_value_format(const loom_value *v, char *buf, size_t len);
/* "DOUBLE", "INT", "STR". */
const char *hpo_type_name(int32_t type);

#endif
