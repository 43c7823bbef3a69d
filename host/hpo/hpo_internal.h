/*
 * hpo/hpo_internal.h - the tuning service's insides, shared by hpo.c (the
 * calls) and hpo_loop.c (the loop that drives each task).
 */
#ifndef LOOM_HPO_HPO_INTERNAL_H
#define LOOM_HPO_HPO_INTERNAL_H

#include <limits.h>
#include <pthread.h>

#include "hpo/hpo.h"
#include "hpo/search_client.h"
#include "hpo/wmla_task.h"

/* Experiments failing one after another without a success end the task. */
#define HPO_MAX_FAILED_IN_ROW 5

typedef struct hpo_task {
    hpo_task_rec rec;
    hpo_task_spec spec;
    char plugin[LOOM_NAME_MAX];      /* the search plugin's registered name */
    char plugin_path[PATH_MAX];
    char dir[PATH_MAX];              /* HOME/hpo/NAME */
    search_client *search;
    hpo_exp_rec *exps;
    size_t nexps, cap;
    int stopping;                    /* a stop was asked: running ones end STOPPED */
    int reconcile;                   /* first tick after a host restart */
    unsigned failed_in_row;
    int want_suggest;                /* something changed since the plugin said "wait" */
    int need_flush;                  /* algorithm state and experiments to commit */
    /* Options the host adds for the python_optimizer plugin (__optimizer_dir,
     * __python, __runner, __name, LOOM_LOG_LEVEL). */
    loom_search_option extra[5];
    uint32_t nextra;
    char extra_text[5][PATH_MAX];
    struct hpo_task *next;
} hpo_task;

struct hpo_service {
    store *st;
    registry *reg;
    exec_service *es;
    char home[PATH_MAX];
    char binary[PATH_MAX];
    hpo_options opt;
    pthread_mutex_t lock;            /* the active list and every task in it */
    pthread_cond_t wake;
    pthread_t thread;
    int stop;
    hpo_task *active;
};

/* Resolves the task's algorithm to a loaded search plugin, or
 * LOOM_E_INVALID naming algoDef.algorithm. */
loom_error *hpo_resolve_algorithm(hpo_service *svc, const char *algorithm, hpo_task *t);
/* 1 when `dir` holds one entry, a directory (its name to `name`). */
int hpo_single_subdir(const char *dir, char *name, size_t len);
/* Creates the tables of installed optimizers. */
/* Points t at the python_optimizer plugin with options for the installed
 * optimizer `name`; LOOM_E_NOT_FOUND when there is none. */
loom_error *hpo_resolve_installed(hpo_service *svc, const char *name, hpo_task *t);

/* The stored task if `owner` (NULL: an administrator) may see it, else
 * LOOM_E_NOT_FOUND. Lock held or not. */
loom_error *hpo_get_visible(hpo_service *svc, const char *owner, const char *name,
                            hpo_task_rec *out);

/* One pass over a task; returns 1 when the task ended (then unlinked by the
 * caller). Lock held. */
int hpo_tick(hpo_service *svc, hpo_task *t);
/* Frees an active task (stopping its search child). */
void hpo_task_free(hpo_task *t);
/* Ends the task in `state` with `message`, stopping running experiments. */
void hpo_end_task(hpo_service *svc, hpo_task *t, hpo_task_state state, const char *message);
/* Records a change to one experiment (in memory and the store). */
void hpo_exp_save(hpo_service *svc, hpo_task *t, hpo_exp_rec *x);
int hpo_exp_is_live(const hpo_exp_rec *x);

#endif
