/*
 * store/store_hpo.h - tuning tasks, their experiments and the plugin
 * optimizers installed on the host, in the host's database. A suggest's
 * experiments and the algorithm state after it are written in one
 * transaction (store_hpo_commit), so a host killed at any point resumes
 * without running an experiment twice. The states are
 * store/record_states.h's; these calls keep the rows. Errors as in store.h.
 */
#ifndef LOOM_STORE_STORE_HPO_H
#define LOOM_STORE_STORE_HPO_H

#include <stddef.h>
#include <stdint.h>

#include "store/record_states.h"
#include "store/store.h"

typedef struct hpo_task_rec {
    char name[128];
    char user[64];
    int64_t user_id;       /* the owner's immutable id (auth): its experiments are its execs */
    int is_admin;          /* the owner submits to any plan */
    hpo_task_state state;  /* its word in the database and REST replies */
    char message[512];
    char *task_json;       /* the task as submitted (malloc'd) */
    char *algo_state;      /* the algorithm's last saved state, or NULL */
    int search_finished;   /* the algorithm said it has nothing more */
    uint64_t next_id;      /* the next experiment id */
    int64_t created_at, started_at, ended_at;
} hpo_task_rec;

typedef struct hpo_exp_rec {
    char task[128];
    uint64_t id;
    char exec_id[64];
    hpo_exp_state state;   /* its word in the database and REST replies */
    char message[256];
    char *values_json;     /* [v1, v2, ...] in the space's order (malloc'd) */
    double budget;
    int has_metric;
    double metric;
    int attempts;          /* execs started for it (a restart runs one again once) */
    int observed;          /* its outcome reached the algorithm */
    int64_t start_at, end_at;
    int dirty;             /* in memory only: changed since the last commit */
} hpo_exp_rec;

/* Which tuning task's experiment an exec runs. */
typedef struct hpo_exec_task {
    char exec_id[64];
    char task[128];
    uint64_t experiment;
} hpo_exec_task;

typedef struct hpo_algorithm_rec {
    char name[64];
    char user[64];
    char dir[4096];     /* the host's copy: HOME/algorithms/NAME */
    char python[4096];  /* the interpreter it runs with */
    char log_level[16];
    int64_t added_at;
    int published;      /* every user may name it */
} hpo_algorithm_rec;

void store_hpo_task_free(hpo_task_rec *t);
void store_hpo_exp_free(hpo_exp_rec *x);
void store_hpo_exps_free(hpo_exp_rec *x, size_t count);

/* ---- tasks ---- */
loom_error *store_hpo_task_insert(store *st, const hpo_task_rec *t);
/* Writes state, message, search_finished, next_id, the times and
 * algo_state. */
loom_error *store_hpo_task_update(store *st, const hpo_task_rec *t);
loom_error *store_hpo_task_get(store *st, const char *name, hpo_task_rec *out);
/* The task and its experiments. */
loom_error *store_hpo_task_delete(store *st, const char *name);
/* Every task, oldest first: fn owns nothing (copy what it keeps). */
loom_error *store_hpo_task_each(store *st, void (*fn)(const hpo_task_rec *, void *), void *ctx);

/* ---- experiments ---- */
/* Inserts or replaces one experiment. */
loom_error *store_hpo_exp_put(store *st, const hpo_exp_rec *x);
/* The task's experiments by id: a malloc'd array (store_hpo_exps_free). */
loom_error *store_hpo_exp_list(store *st, const char *task, hpo_exp_rec **out, size_t *count);
/* Every experiment that has an exec, sorted by exec id (strcmp): a
 * malloc'd array. */
loom_error *store_hpo_exec_tasks(store *st, hpo_exec_task **out, size_t *count);
/* The task row (its next_id and algo_state) and every experiment of xs
 * marked dirty, in one transaction; clears their marks. */
loom_error *store_hpo_commit(store *st, const hpo_task_rec *t, hpo_exp_rec *xs, size_t n);

/* ---- plugin optimizers ---- */
/* LOOM_E_CONFLICT when the name is taken (`published` is not written: a
 * new optimizer is its installer's). */
loom_error *store_hpo_algorithm_insert(store *st, const hpo_algorithm_rec *a);
/* LOOM_E_NOT_FOUND when there is none. */
loom_error *store_hpo_algorithm_get(store *st, const char *name, hpo_algorithm_rec *out);
/* Every optimizer by name: a malloc'd array. */
loom_error *store_hpo_algorithm_list(store *st, hpo_algorithm_rec **out, size_t *count);
loom_error *store_hpo_algorithm_delete(store *st, const char *name);
/* LOOM_E_NOT_FOUND when there is none. */
loom_error *store_hpo_algorithm_publish(store *st, const char *name, int published);

#endif
