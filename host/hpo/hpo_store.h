/*
 * hpo/hpo_store.h - tuning tasks and their experiments in the host's
 * database (tables of hpo's own, through store_db/store_lock like auth).
 * A suggest's experiments and the algorithm state after it are written in
 * one transaction, so a host killed at any point resumes without running an
 * experiment twice.
 */
#ifndef LOOM_HPO_HPO_STORE_H
#define LOOM_HPO_HPO_STORE_H

#include <stdint.h>

#include "store/record_states.h"
#include "store/store.h"
#include "util/error.h"

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

loom_error *hpo_store_init(store *st);
void hpo_task_rec_free(hpo_task_rec *t);
void hpo_exp_rec_free(hpo_exp_rec *x);

loom_error *hpo_store_task_insert(store *st, const hpo_task_rec *t);
/* Writes state, message, search_finished, next_id, the times and
 * algo_state. */
loom_error *hpo_store_task_update(store *st, const hpo_task_rec *t);
loom_error *hpo_store_task_get(store *st, const char *name, hpo_task_rec *out);
loom_error *hpo_store_task_delete(store *st, const char *name);
/* Every task, oldest first: fn owns nothing (copy what it keeps). */
loom_error *hpo_store_task_each(store *st, void (*fn)(const hpo_task_rec *, void *), void *ctx);

/* Inserts or replaces one experiment. */
loom_error *hpo_store_exp_put(store *st, const hpo_exp_rec *x);
/* The task's experiments by id: a malloc'd array (hpo_exp_recs_free). */
loom_error *hpo_store_exp_list(store *st, const char *task, hpo_exp_rec **out, size_t *count);
void hpo_exp_recs_free(hpo_exp_rec *x, size_t count);

/* Which tuning task's experiment an exec runs. */
typedef struct hpo_exec_task {
    char exec_id[64];
    char task[128];
    uint64_t experiment;
} hpo_exec_task;

/* Every experiment that has an exec, sorted by exec id (strcmp): a
 * malloc'd array. */
loom_error *hpo_store_exec_tasks(store *st, hpo_exec_task **out, size_t *count);

/* The task row (its next_id and algo_state) and every experiment of xs
 * marked dirty, in one transaction; clears their marks. */
loom_error *hpo_store_commit(store *st, const hpo_task_rec *t, hpo_exp_rec *xs, size_t n);

#endif
