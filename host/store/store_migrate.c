/* store/store_migrate.c - the host's own tables and the migration runner.
 * See store_internal.h. */
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"
#include "util/log.h"

/* The host's own tables: plugins, execs, plans and their members. */
static const store_step core_steps[] = {
    {.version = 1,
     .sql = "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
            "INSERT OR IGNORE INTO meta VALUES('schema_version', '1');"
            "CREATE TABLE IF NOT EXISTS plugins("
            "  kind TEXT NOT NULL, name TEXT NOT NULL COLLATE NOCASE, file TEXT NOT NULL,"
            "  added_at INTEGER NOT NULL, PRIMARY KEY(kind, name));"
            "CREATE TABLE IF NOT EXISTS execs("
            "  id TEXT PRIMARY KEY, user TEXT NOT NULL, framework TEXT NOT NULL,"
            "  args TEXT NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
            "  result_dir TEXT NOT NULL, num_workers INTEGER NOT NULL,"
            "  pgid INTEGER NOT NULL DEFAULT 0,"
            "  created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0,"
            "  ended_at INTEGER NOT NULL DEFAULT 0);"
            "CREATE TABLE IF NOT EXISTS plans("
            "  path TEXT PRIMARY KEY, weight REAL NOT NULL, min_devices INTEGER NOT NULL,"
            "  cap_devices INTEGER NOT NULL, policy TEXT NOT NULL);"
            /* Members by the users' immutable ids; the name is what was
             * shown when they were added (auth's trigger removes a removed
             * user's rows). */
            "CREATE TABLE IF NOT EXISTS plan_members("
            "  plan TEXT NOT NULL, user_id INTEGER NOT NULL, user_name TEXT NOT NULL,"
            "  added_at INTEGER NOT NULL, PRIMARY KEY(plan, user_id));"},
    /* The owner's immutable id (auth's users.id); 0 for none. */
    {.version = 2, .table = "execs", .column = "user_id",
     .definition = "INTEGER NOT NULL DEFAULT 0"},
    /* What the host did differently from what the submission asked, one a
     * line (store_exec_warnings_set). */
    {.version = 3, .table = "execs", .column = "warnings",
     .definition = "TEXT NOT NULL DEFAULT ''"},
    /* A plan's job limits set by an administrator (store_plan); 0: the
     * plan inherits. */
    {.version = 4, .table = "plans", .column = "max_procs",
     .definition = "INTEGER NOT NULL DEFAULT 0"},
    {.version = 5, .table = "plans", .column = "max_memory",
     .definition = "INTEGER NOT NULL DEFAULT 0"},
    {.version = 6, .table = "plans", .column = "max_disk",
     .definition = "INTEGER NOT NULL DEFAULT 0"},
    /* The plan an exec was submitted to ('' in older rows). */
    {.version = 7, .table = "execs", .column = "plan",
     .definition = "TEXT NOT NULL DEFAULT ''"},
};

const store_family store_family_core = {"core", core_steps,
                                        sizeof core_steps / sizeof *core_steps};

/* In order: auth's trigger names plan_members, and its first step moves
 * execs to user ids. */
static const store_family *const families[] = {
    &store_family_core, &store_family_auth, &store_family_hpo, &store_family_infer,
    &store_family_history};

int store_has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n < 0 ? -1 : n > 0;
}

static int add_column(sqlite3 *db, const store_step *step, char **msg)
{
    int have = store_has_column(db, step->table, step->column);
    if (have < 0)
        return SQLITE_ERROR;
    if (have)
        return SQLITE_OK;
    char sql[256];
    snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", step->table, step->column,
             step->definition);
    return sqlite3_exec(db, sql, NULL, NULL, msg);
}

static int run_step(sqlite3 *db, const store_step *step, char **msg)
{
    if (step->run)
        return step->run(db, msg);
    if (step->table)
        return add_column(db, step, msg);
    return sqlite3_exec(db, step->sql, NULL, NULL, msg);
}

/* The version schema_migrations records for `family` (0: none), or -1. */
static int recorded_version(sqlite3 *db, const char *family)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT version FROM schema_migrations WHERE family = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, family, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : rc == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return v;
}

static int record_version(sqlite3 *db, const char *family, int version)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO schema_migrations(family, version) "
                                    "VALUES(?, ?)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, family, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, version);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Brings one family up to its last step. */
static loom_error *migrate_family(sqlite3 *db, const store_family *f, const char *path)
{
    int have = recorded_version(db, f->name);
    if (have < 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot read the schema version of %s: %s", path,
                        f->name, sqlite3_errmsg(db));
    int last = f->steps[f->nsteps - 1].version;
    if (have > last)
        return loom_err(LOOM_E_INVALID,
                        "%s: the %s tables are at version %d, made by a newer host (this one "
                        "knows up to %d)",
                        path, f->name, have, last);
    for (size_t i = 0; i < f->nsteps; i++) {
        const store_step *step = &f->steps[i];
        if (step->version <= have)
            continue;
        char *msg = NULL;
        int rc = run_step(db, step, &msg);
        if (rc == SQLITE_OK)
            rc = record_version(db, f->name, step->version);
        if (rc != SQLITE_OK) {
            loom_error *e = loom_err(LOOM_E_INTERNAL, "%s: %s tables, step %d: %s", path, f->name,
                                     step->version, msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            return e;
        }
        if (have > 0)
            log_info("store: %s tables migrated to version %d", f->name, step->version);
    }
    return NULL;
}

loom_error *store_migrate(store *s, const char *path)
{
    /* Foreign keys off for the transaction, as SQLite's table rebuilds ask
     * (the pragma is a no-op inside one): a rebuild drops tables others
     * reference. */
    char *msg = NULL;
    int rc = sqlite3_exec(s->db,
                          "PRAGMA foreign_keys=OFF; BEGIN IMMEDIATE;"
                          "CREATE TABLE IF NOT EXISTS schema_migrations("
                          "  family TEXT PRIMARY KEY, version INTEGER NOT NULL);",
                          NULL, NULL, &msg);
    loom_error *e = NULL;
    if (rc != SQLITE_OK)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    for (size_t i = 0; !e && i < sizeof families / sizeof *families; i++)
        e = migrate_family(s->db, families[i], path);
    if (!e && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", path, sqlite3_errmsg(s->db));
    if (e && sqlite3_get_autocommit(s->db) == 0)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_exec(s->db, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
    return e;
}
