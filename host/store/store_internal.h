/*
 * store/store_internal.h - what the store_*.c files share: the store
 * struct, statement helpers (each takes the store's lock from prepare to
 * finish), full-disk handling and the migration steps. Not for use outside
 * host/store/: every other subsystem calls the typed functions of
 * store.h, store_auth.h, store_hpo.h and store_infer.h.
 */
#ifndef LOOM_STORE_STORE_INTERNAL_H
#define LOOM_STORE_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

#include "store/disk_reserve_internal.h"
#include "store/store.h"
#include "store/store_auth.h"
#include "store/store_hpo.h"
#include "store/store_infer.h"

struct store {
    sqlite3 *db;
    pthread_mutex_t lock; /* recursive: a transaction holds it throughout */
    int txn_depth;        /* > 0 inside store_txn_begin..store_txn_end */
    disk_reserve reserve;
    /* Exec state changes a full disk refused, newest per exec: what reads
     * return, written when the disk has room (store_retry). */
    store_exec *pending;
    size_t npending;
    int flushing;
    int64_t next_flush_ms; /* monotonic: store_retry's next try */
    /* Checked on every request (store_token_find): prepared once, as
     * parsing it each time cost most of the call. */
    sqlite3_stmt *token_find;
};

/* What store_token_find runs (store_auth.c), prepared at store_open. */
#define STORE_TOKEN_FIND_SQL                                                              \
    "SELECT t.token_hash, t.expires_at, u.name, u.role, u.id, coalesce(k.scope, 'all') " \
    "FROM tokens t JOIN users u ON u.id = t.user_id "                                    \
    "LEFT JOIN api_keys k ON k.key_hash = t.apikey_hash WHERE t.token_hash = ?"

/* A prepared statement with the store's lock held, or NULL (unlocked, the
 * reason logged). */
sqlite3_stmt *store_prepare(store *s, const char *sql);
/* Ends a statement from store_prepare and releases the lock. */
void store_finish(store *s, sqlite3_stmt *st);
/* LOOM_E_INTERNAL "store: cannot WHAT: <SQLite's message>". */
loom_error *store_unavailable(store *s, const char *what);
/* Copies a text column into dst (cap bytes, truncated; "" for NULL). */
void store_column_text(sqlite3_stmt *st, int col, char *dst, size_t cap);
/* A malloc'd copy of a text column; NULL for NULL (or out of memory). */
char *store_column_dup(sqlite3_stmt *st, int col);
/* Runs a prepared write and finishes it. `what` names the row for the
 * message; with must_change, a write that touched no row is
 * LOOM_E_NOT_FOUND; a constraint is LOOM_E_CONFLICT; a full disk (after
 * the reserve) LOOM_E_LIMIT. */
loom_error *store_finish_write(store *s, sqlite3_stmt *st, const char *what, int must_change);
/* Steps a prepared read of one row into `read` and finishes it; no row is
 * LOOM_E_NOT_FOUND "no MISSING". */
typedef void (*store_row_reader)(sqlite3_stmt *st, void *row);
loom_error *store_read_one(store *s, sqlite3_stmt *st, store_row_reader read, void *out,
                           const char *missing);
/* Reads every row of a prepared statement (rows of `size` bytes, read
 * under the lock), then calls fn for each without it: a callback may take
 * other locks without ordering them after the store's. */
loom_error *store_each_prepared(store *s, sqlite3_stmt *st, size_t size, store_row_reader read,
                                void (*fn)(const void *, void *), void *ctx);
/* The rows as a malloc'd array of *count rows of `size` (the caller frees
 * what each holds, and the array). */
loom_error *store_rows_prepared(store *s, sqlite3_stmt *st, size_t size, store_row_reader read,
                                void **out, size_t *count);
/* The first column of the one row a prepared statement gives. */
loom_error *store_read_int(store *s, sqlite3_stmt *st, int64_t *out, const char *what);

/* Writes the exec state changes a full disk held back (store.c). */
void store_flush_pending(store *s);

/* ---- migrations ----
 * Each family of tables (the host's own, auth's, tuning's, the models')
 * is an ordered list of versioned steps. store_open applies, in one
 * transaction, every step above the version schema_migrations records for
 * the family. A database made before schema_migrations existed records
 * nothing, so every step runs on it: each must leave tables an older host
 * made as the step would have made them (CREATE ... IF NOT EXISTS, a column
 * added only when missing, a rebuild that checks what it finds). */
typedef struct store_step {
    int version;                  /* 1, 2, ... in order */
    const char *sql;              /* statements to run, or NULL */
    const char *table, *column;   /* or: add this column when the table lacks it */
    const char *definition;       /* its type and default */
    int (*run)(sqlite3 *db, char **msg); /* or: a step of its own (SQLITE_OK) */
} store_step;

typedef struct store_family {
    const char *name;
    const store_step *steps;
    size_t nsteps;
} store_family;

extern const store_family store_family_core, store_family_auth, store_family_hpo,
    store_family_infer, store_family_history;

/* Applies every family's missing steps in one transaction. */
loom_error *store_migrate(store *s, const char *path);
/* 1 when `table` has `column`, 0 when not, -1 when it cannot tell. */
int store_has_column(sqlite3 *db, const char *table, const char *column);

#endif
