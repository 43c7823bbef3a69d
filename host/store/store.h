/*
 * store/store.h - the host's state in SQLite (WAL): registered plugins and
 * execs. Every change is committed before the caller acknowledges it, so a
 * host killed at any point reopens whole. Calls are serialised by the
 * store's lock. The store is the host's only SQL: every subsystem's tables
 * (store_auth.h, store_hpo.h, store_infer.h) are declared and migrated
 * here, and read and written through typed functions.
 * Failures are loom_errors: LOOM_E_NOT_FOUND for a missing row,
 * LOOM_E_CONFLICT for a key already taken, LOOM_E_LIMIT for a disk full
 * even after the store's reserve (store/disk_reserve_internal.h) is used,
 * LOOM_E_INTERNAL for the rest.
 */
#ifndef LOOM_STORE_STORE_H
#define LOOM_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "store/record_states.h"
#include "util/error.h"

typedef struct store store;

/* Opens (creating if needed) the database at `path` and migrates it. */
loom_error *store_open(const char *path, store **out);
void store_close(store *s);

/* Several calls as one transaction, for a caller whose rule spans them
 * (auth: "not the last admin" and the removal). store_txn_begin takes the
 * store's lock, which every other caller then waits for, and begins;
 * store_txn_end commits when `e` is NULL and rolls back otherwise, releases
 * the lock and returns `e`, or the commit's failure. Only the thread that
 * began may call the store until the end; transactions do not nest
 * (LOOM_E_INTERNAL). */
loom_error *store_txn_begin(store *s);
loom_error *store_txn_end(store *s, loom_error *e);

/* ---- plugins registered by users ---- */
typedef struct store_plugin {
    char kind[16];
    char name[64];
    char file[4096]; /* the host's own copy of the plugin file */
    int64_t added_at;
} store_plugin;

loom_error *store_plugin_add(store *s, const store_plugin *p);
loom_error *store_plugin_remove(store *s, const char *kind, const char *name);
/* How many registered plugins share the stored file `file` (one Lua file
 * may register several): the file goes only with the last of them. */
loom_error *store_plugin_file_users(store *s, const char *file, int *count);
/* Calls fn for each row in insertion order. */
loom_error *store_plugin_each(store *s, void (*fn)(const store_plugin *, void *), void *ctx);

/* ---- execs ---- */
typedef struct store_exec {
    char id[64];
    char user[64];    /* the creator's name, as shown */
    int64_t user_id;  /* the creator's immutable id (auth); what ownership is */
    char framework[64];
    char args[4096];  /* the submission's dlicmd argument string */
    exec_state state; /* its word in the database; a word this version does
                         not know reads as ERROR, the message naming it */
    char message[512];
    char result_dir[4096];
    int num_workers;
    int pgid;         /* process group of the workers, 0 when none */
    int64_t created_at, started_at, ended_at; /* unix ms; 0 = not yet */
    char plan[256];   /* the plan it was submitted to; "" in a record made
                         before plans were kept with execs */
} store_exec;

loom_error *store_exec_insert(store *s, const store_exec *e);
/* Writes state, message, pgid and the three times of e->id. On a full
 * disk (after the store's reserve is used up) the change waits in memory:
 * reads return it, and it is written as soon as a write succeeds or
 * store_retry finds room, in the order the changes came. LOOM_E_LIMIT only
 * when STORE_MAX_PENDING changes wait already. */
loom_error *store_exec_update(store *s, const store_exec *e);
/* Writes the state changes that wait for room, and makes the reserve
 * again once the disk has room; cheap when nothing waits. Call it now and
 * then (the exec service does, from its supervisor). */
void store_retry(store *s);
/* How many exec state changes wait in memory for room. */
size_t store_pending_count(store *s);
/* Fills out, or LOOM_E_NOT_FOUND. */
loom_error *store_exec_get(store *s, const char *id, store_exec *out);
loom_error *store_exec_delete(store *s, const char *id);
/* The warnings of a submission (what the host does differently from what
 * it asked; one a line, "" for none), kept with the exec. The reader
 * truncates to cap, which STORE_EXEC_WARNINGS_MAX always fits. */
#define STORE_EXEC_WARNINGS_MAX 4096
loom_error *store_exec_warnings_set(store *s, const char *id, const char *warnings);
loom_error *store_exec_warnings_get(store *s, const char *id, char *out, size_t cap);
loom_error *store_exec_each(store *s, void (*fn)(const store_exec *, void *), void *ctx);

/* ---- resource plans ---- */
typedef struct store_plan {
    char path[256];
    double weight;
    int min_devices, cap_devices;
    char policy[16]; /* "fair" or "priority" */
    /* What each exec in it may take (processes and threads, bytes of
     * memory, bytes of disk); 0: inherit (rows from before read 0). */
    int64_t max_procs, max_memory, max_disk;
} store_plan;

/* Inserts or replaces the plan at p->path. */
loom_error *store_plan_put(store *s, const store_plan *p);
/* Removes the plan and its members. */
loom_error *store_plan_remove(store *s, const char *path);
loom_error *store_plan_each(store *s, void (*fn)(const store_plan *, void *), void *ctx);

/* ---- who may submit to a plan: users by immutable id ---- */
typedef struct store_plan_member {
    char plan[256];
    int64_t user_id;
    char user[64]; /* the name when added */
    int64_t added_at;
} store_plan_member;

/* LOOM_E_CONFLICT when already a member. */
loom_error *store_plan_member_add(store *s, const char *plan, int64_t user_id, const char *user,
                                  int64_t added_at);
/* LOOM_E_NOT_FOUND when not a member. */
loom_error *store_plan_member_remove(store *s, const char *plan, int64_t user_id);
loom_error *store_plan_member_has(store *s, const char *plan, int64_t user_id, int *member);
/* Members of `plan` (NULL: of every plan), by plan and name. */
loom_error *store_plan_member_each(store *s, const char *plan,
                                   void (*fn)(const store_plan_member *, void *), void *ctx);

#endif
