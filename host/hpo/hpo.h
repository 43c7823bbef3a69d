/*
 * hpo/hpo.h - the tuning service (WMLA's hypersearch): a task's search
 * algorithm proposes hyperparameters, each proposal runs as an exec of the
 * task's model (config.json in its working directory), and the objective
 * each reports in val_dict_list.json goes back to the algorithm. At most
 * maxParalleJobNum experiments run at once; maxJobNum and maxRunTime end
 * the task. The algorithm runs in a `loom plugin-host` child, never here.
 * Everything is in the store: a host restart resumes a task by itself.
 */
#ifndef LOOM_HPO_HPO_H
#define LOOM_HPO_HPO_H

#include <stddef.h>
#include <stdint.h>

#include "exec/exec.h"
#include "store/store_hpo.h"
#include "plugin/registry.h"
#include "store/store.h"
#include "store/store_hpo.h"
#include "util/error.h"

typedef struct hpo_service hpo_service;

typedef struct hpo_options {
    unsigned plugin_deadline_ms; /* per search call; 0: 5000 */
    unsigned tick_ms;            /* how often running experiments are looked at; 0: 5 */
} hpo_options;

/* Loads the stored tasks and resumes the unfinished ones. `home` holds
 * hpo/NAME/ (the model directory and the plugin's output). */
loom_error *hpo_service_create(store *st, registry *reg, exec_service *es, const char *home,
                               const hpo_options *opt, hpo_service **out);
/* Stops the loop; running experiments are left to the exec service (a
 * restart finds them). */
void hpo_service_destroy(hpo_service *svc);

typedef struct hpo_submission {
    const char *user;
    int64_t user_id;        /* the submitter's immutable id (auth) */
    int is_admin;
    const char *task_json;  /* WMLA's task (hpo/wmla_task.h) */
    size_t task_len;
    const void *archive;    /* the model directory, a (gzip'd) tar, */
    size_t archive_len;
    const char *archive_path; /* or that tar in a file (an upload spooled to disk) */
} hpo_submission;

/* Checks and stores a task; its name goes to `name`. LOOM_E_INVALID for
 * the field at fault (an unknown algorithm included), LOOM_E_CONFLICT
 * for a name in use. */
loom_error *hpo_submit(hpo_service *svc, const hpo_submission *sub, char *name, size_t namelen);
/* `owner` NULL: an administrator's view. Another user's task is
 * LOOM_E_NOT_FOUND; the wrong state LOOM_E_CONFLICT. */
loom_error *hpo_stop(hpo_service *svc, const char *owner, const char *name);
/* A STOPPED or FAILED task carries on from its saved state. */
loom_error *hpo_restart(hpo_service *svc, const char *owner, const char *name);
loom_error *hpo_delete(hpo_service *svc, const char *owner, const char *name);
/* Deletes `owner`'s ended tasks (STOPPED FINISHED FAILED); *count says how many. */
loom_error *hpo_delete_ended(hpo_service *svc, const char *owner, unsigned *count);

typedef struct hpo_value_view {
    char name[128];
    char type[8];      /* DOUBLE INT STR */
    char text[128];    /* WMLA's fixedVal */
} hpo_value_view;

typedef struct hpo_exp_view {
    hpo_exp_rec rec;
    hpo_value_view *values;
    uint32_t nvalues;
} hpo_exp_view;

typedef struct hpo_task_view {
    hpo_task_rec rec;
    char algorithm[64];
    char objective_metric[64];
    int maximize;
    uint32_t planned;     /* maxJobNum, or the explicit experiments; 0: open */
    uint32_t running, complete, failed;
    int64_t duration_ms;
    hpo_exp_view *exps;
    size_t nexps;
    int best;             /* index into exps, -1 when none reported the objective */
} hpo_task_view;

loom_error *hpo_describe(hpo_service *svc, const char *owner, const char *name, hpo_task_view *out);
void hpo_task_view_free(hpo_task_view *v);
/* The tasks `owner` may see (NULL: all), oldest first, without experiments. */
loom_error *hpo_list(hpo_service *svc, const char *owner, hpo_task_rec **out, size_t *count);
void hpo_task_recs_free(hpo_task_rec *t, size_t count);

/* The most of a search log one call returns. */
#define HPO_SEARCH_LOG_MAX_READ (64u << 10)

typedef struct hpo_log_part {
    char *text;        /* malloc'd, NUL-terminated; "" when there is no log yet */
    size_t len;
    int64_t offset;    /* where text starts in the log */
    int64_t size;      /* the log's size when read */
    hpo_task_state state;
} hpo_log_part;

/* A part of the task's search log, HOME/hpo/NAME/search.log (what its
 * search plugin writes, its host->log lines included): from byte `from`
 * on, or with `from` < 0 the end of it; at most HPO_SEARCH_LOG_MAX_READ
 * bytes either way. Another user's task is LOOM_E_NOT_FOUND. */
loom_error *hpo_search_log(hpo_service *svc, const char *owner, const char *name, int64_t from,
                           hpo_log_part *out);
void hpo_log_part_free(hpo_log_part *p);

/* Which task each experiment's exec belongs to (see store/store_hpo.h), sorted
 * by exec id; hpo_exec_task_find looks one up (NULL: none). */
loom_error *hpo_exec_tasks(hpo_service *svc, hpo_exec_task **out, size_t *count);
const hpo_exec_task *hpo_exec_task_find(const hpo_exec_task *all, size_t count,
                                        const char *exec_id);

/* ---- WMLA's plugin optimizers (optimizer.py, class PluginOptimizer) ----
 * An installed optimizer belongs to the user who installed it: another
 * user finds no such optimizer (LOOM_E_NOT_FOUND: to list, view, remove or
 * name in a task) until an administrator publishes it. */

typedef struct hpo_algorithm_install {
    const char *user;
    int is_admin;
    const char *name;
    const char *path;          /* a folder on the host (administrators only), or */
    const void *archive;       /* the folder as a (gzip'd) tar, */
    size_t archive_len;
    const char *archive_path;  /* or that tar in a file */
    const char *conda_home;    /* the interpreter (administrators only): */
    const char *conda_env;     /* CONDA_HOME/envs/ENV/bin/python, CONDA_HOME/bin/python, */
    const char *log_level;     /* else /usr/bin/python3; DEBUG INFO WARNING ERROR (INFO) */
} hpo_algorithm_install;

/* Copies the folder (it must hold optimizer.py) and records it: a task
 * then names it in algoDef.algorithm. LOOM_E_INVALID for the field at
 * fault, LOOM_E_CONFLICT for a name in use, LOOM_E_FORBIDDEN for a `path`
 * or an interpreter (condaHome) from a user who is no administrator. */
loom_error *hpo_algorithm_add(hpo_service *svc, const hpo_algorithm_install *in);
/* Its owner or an administrator; a published one's other users get
 * LOOM_E_FORBIDDEN. */
loom_error *hpo_algorithm_remove(hpo_service *svc, const char *user, int is_admin,
                                 const char *name);
/* The optimizer `user` may use (is_admin: any). */
loom_error *hpo_algorithm_get(hpo_service *svc, const char *user, int is_admin, const char *name,
                              hpo_algorithm_rec *out);
/* Every optimizer `user` may use (is_admin: all): a malloc'd array. */
loom_error *hpo_algorithm_list(hpo_service *svc, const char *user, int is_admin,
                               hpo_algorithm_rec **out, size_t *count);
/* Lets every user name it (published 1) or only its owner again (0). */
loom_error *hpo_algorithm_publish(hpo_service *svc, const char *name, int published);

/* WMLA's built-in algorithm names and the search plugins they run. */
typedef struct hpo_builtin_algorithm {
    const char *wmla_name; /* "Tpe" */
    const char *plugin;    /* "tpe" */
} hpo_builtin_algorithm;
extern const hpo_builtin_algorithm hpo_builtin_algorithms[];
extern const size_t hpo_builtin_algorithm_count;

#endif
