/*
 * store/store.h - the host's state in SQLite (WAL): registered plugins and
 * execs. Every change is committed before the caller acknowledges it, so a
 * host killed at any point reopens whole. Calls are serialised by the
 * caller's lock or by SQLite's serialized mode; one connection per store.
 */
#ifndef LOOM_STORE_STORE_H
#define LOOM_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;

/* Opens (creating if needed) the database at `path` and migrates it. */
store *store_open(const char *path, char *err, size_t errlen);
void store_close(store *s);

/* ---- plugins registered by users ---- */
typedef struct store_plugin {
    char kind[16];
    char name[64];
    char file[4096]; /* the host's own copy of the plugin file */
    int64_t added_at;
} store_plugin;

int store_plugin_add(store *s, const store_plugin *p, char *err, size_t errlen);
int store_plugin_remove(store *s, const char *kind, const char *name);
/* Calls fn for each row in insertion order; returns the count or -1. */
int store_plugin_each(store *s, void (*fn)(const store_plugin *, void *),
                      void *ctx);

/* ---- execs ---- */
typedef struct store_exec {
    char id[64];
    char user[64];
    char framework[64];
    char args[4096];  /* the submission's dlicmd argument string */
    char state[16];   /* SUBMITTED PENDING LAUNCHING RUNNING RECOVERING FINISHED KILLED ERROR */
    char message[512];
    char result_dir[4096];
    int num_workers;
    int pgid;         /* process group of the workers, 0 when none */
    int64_t created_at, started_at, ended_at; /* unix ms; 0 = not yet */
} store_exec;

int store_exec_insert(store *s, const store_exec *e, char *err, size_t errlen);
/* Writes state, message, pgid and the three times of e->id. */
int store_exec_update(store *s, const store_exec *e);
/* 0 and fills out, or -1 when there is no such exec. */
int store_exec_get(store *s, const char *id, store_exec *out);
int store_exec_delete(store *s, const char *id);
int store_exec_each(store *s, void (*fn)(const store_exec *, void *), void *ctx);

/* ---- resource plans ---- */
typedef struct store_plan {
    char path[256];
    double weight;
    int min_devices, cap_devices;
    char policy[16]; /* "fair" or "priority" */
} store_plan;

/* Inserts or replaces the plan at p->path. */
int store_plan_put(store *s, const store_plan *p);
int store_plan_remove(store *s, const char *path);
int store_plan_each(store *s, void (*fn)(const store_plan *, void *), void *ctx);

#endif
