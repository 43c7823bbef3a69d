/* store/store_history.c - the history family's tables. See store_history.h. */
#include <stdio.h>
#include <string.h>

#include "store/store_history.h"
#include "store/store_internal.h"

static const store_step history_steps[] = {
    {.version = 1,
     .sql = "CREATE TABLE IF NOT EXISTS history_devices("
            "  t INTEGER NOT NULL, slot INTEGER NOT NULL, holder TEXT NOT NULL,"
            "  kind TEXT NOT NULL, user TEXT NOT NULL);"
            "CREATE INDEX IF NOT EXISTS history_devices_t ON history_devices(t);"
            "CREATE INDEX IF NOT EXISTS history_devices_slot ON history_devices(slot);"
            "CREATE TABLE IF NOT EXISTS history_metrics("
            "  exec TEXT NOT NULL, name TEXT NOT NULL, t INTEGER NOT NULL,"
            "  step INTEGER NOT NULL, epoch INTEGER NOT NULL, value REAL NOT NULL);"
            "CREATE INDEX IF NOT EXISTS history_metrics_exec ON history_metrics(exec, name, t);"
            "CREATE INDEX IF NOT EXISTS history_metrics_t ON history_metrics(t);"
            "CREATE TABLE IF NOT EXISTS history_models("
            "  model TEXT NOT NULL, t INTEGER NOT NULL, rate REAL NOT NULL,"
            "  instances INTEGER NOT NULL);"
            "CREATE INDEX IF NOT EXISTS history_models_model ON history_models(model, t);"
            "CREATE INDEX IF NOT EXISTS history_models_t ON history_models(t);"},
};

const store_family store_family_history = {"history", history_steps,
                                           sizeof history_steps / sizeof *history_steps};

/* After an insert: the rows of every series older than the window, and
 * those of this series (the WHERE clause `series`, with ?1 the key, or the
 * slot when key is NULL, and ?4 the second key when given) past its most
 * points. */
static loom_error *prune(store *st, const char *table, const char *series, const char *key,
                         int64_t slot, const char *key2, const store_history_bounds *b,
                         int64_t now)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "DELETE FROM %s WHERE t < ?2 OR (%s AND rowid <= (SELECT rowid FROM %s WHERE %s "
             "ORDER BY rowid DESC LIMIT 1 OFFSET ?3))",
             table, series, table, series);
    sqlite3_stmt *s = store_prepare(st, sql);
    if (!s)
        return store_unavailable(st, "bound the history");
    if (key)
        sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(s, 1, slot);
    sqlite3_bind_int64(s, 2, now - b->window_ms);
    sqlite3_bind_int64(s, 3, b->max_points);
    if (key2)
        sqlite3_bind_text(s, 4, key2, -1, SQLITE_STATIC);
    return store_finish_write(st, s, "history", 0);
}

loom_error *store_history_device_add(store *st, const store_history_bounds *b,
                                     const store_history_device *row)
{
    loom_error *e = store_txn_begin(st);
    if (e)
        return e;
    sqlite3_stmt *s = store_prepare(
        st, "INSERT INTO history_devices(t, slot, holder, kind, user) VALUES(?,?,?,?,?)");
    if (!s)
        return store_txn_end(st, store_unavailable(st, "record a device's holder"));
    sqlite3_bind_int64(s, 1, row->t);
    sqlite3_bind_int(s, 2, row->slot);
    sqlite3_bind_text(s, 3, row->holder, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, row->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, row->user, -1, SQLITE_STATIC);
    e = store_finish_write(st, s, "device history", 0);
    if (!e)
        e = prune(st, "history_devices", "slot = ?1", NULL, row->slot, NULL, b, row->t);
    return store_txn_end(st, e);
}

loom_error *store_history_metric_add(store *st, const store_history_bounds *b, const char *exec,
                                     const store_history_metric *row)
{
    loom_error *e = store_txn_begin(st);
    if (e)
        return e;
    sqlite3_stmt *s = store_prepare(st, "INSERT INTO history_metrics(exec, name, t, step, epoch, "
                                        "value) VALUES(?,?,?,?,?,?)");
    if (!s)
        return store_txn_end(st, store_unavailable(st, "record a metric"));
    sqlite3_bind_text(s, 1, exec, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, row->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, row->t);
    sqlite3_bind_int64(s, 4, row->step);
    sqlite3_bind_int(s, 5, row->epoch);
    sqlite3_bind_double(s, 6, row->value);
    e = store_finish_write(st, s, "metric history", 0);
    if (!e)
        e = prune(st, "history_metrics", "exec = ?1 AND name = ?4", exec, 0, row->name, b, row->t);
    return store_txn_end(st, e);
}

loom_error *store_history_model_add(store *st, const store_history_bounds *b, const char *model,
                                    const store_history_model *row)
{
    loom_error *e = store_txn_begin(st);
    if (e)
        return e;
    sqlite3_stmt *s = store_prepare(
        st, "INSERT INTO history_models(model, t, rate, instances) VALUES(?,?,?,?)");
    if (!s)
        return store_txn_end(st, store_unavailable(st, "record a model's rate"));
    sqlite3_bind_text(s, 1, model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, row->t);
    sqlite3_bind_double(s, 3, row->requests_per_s);
    sqlite3_bind_int(s, 4, row->instances);
    e = store_finish_write(st, s, "model history", 0);
    if (!e)
        e = prune(st, "history_models", "model = ?1", model, 0, NULL, b, row->t);
    return store_txn_end(st, e);
}

static void read_device(sqlite3_stmt *s, void *row)
{
    store_history_device *r = row;
    memset(r, 0, sizeof *r);
    r->t = sqlite3_column_int64(s, 0);
    r->slot = sqlite3_column_int(s, 1);
    store_column_text(s, 2, r->holder, sizeof r->holder);
    store_column_text(s, 3, r->kind, sizeof r->kind);
    store_column_text(s, 4, r->user, sizeof r->user);
}

static void read_metric(sqlite3_stmt *s, void *row)
{
    store_history_metric *r = row;
    memset(r, 0, sizeof *r);
    r->t = sqlite3_column_int64(s, 0);
    r->step = sqlite3_column_int64(s, 1);
    r->epoch = sqlite3_column_int(s, 2);
    store_column_text(s, 3, r->name, sizeof r->name);
    r->value = sqlite3_column_double(s, 4);
}

static void read_model(sqlite3_stmt *s, void *row)
{
    store_history_model *r = row;
    memset(r, 0, sizeof *r);
    r->t = sqlite3_column_int64(s, 0);
    r->requests_per_s = sqlite3_column_double(s, 1);
    r->instances = sqlite3_column_int(s, 2);
}

/* A range read: ?1 from, ?2 to, ?3 the series' key when given. */
static loom_error *read_range(store *st, const char *sql, const char *key, int64_t from,
                              int64_t to, size_t size, store_row_reader read, void **out,
                              size_t *count)
{
    *out = NULL;
    *count = 0;
    sqlite3_stmt *s = store_prepare(st, sql);
    if (!s)
        return store_unavailable(st, "read the history");
    sqlite3_bind_int64(s, 1, from);
    sqlite3_bind_int64(s, 2, to);
    if (key)
        sqlite3_bind_text(s, 3, key, -1, SQLITE_STATIC);
    return store_rows_prepared(st, s, size, read, out, count);
}

loom_error *store_history_devices(store *st, int64_t from, int64_t to,
                                  store_history_device **out, size_t *count)
{
    return read_range(st,
                      "SELECT t, slot, holder, kind, user FROM history_devices "
                      "WHERE t BETWEEN ?1 AND ?2 ORDER BY t, rowid",
                      NULL, from, to, sizeof **out, read_device, (void **)out, count);
}

loom_error *store_history_metrics(store *st, const char *exec, int64_t from, int64_t to,
                                  store_history_metric **out, size_t *count)
{
    return read_range(st,
                      "SELECT t, step, epoch, name, value FROM history_metrics "
                      "WHERE exec = ?3 AND t BETWEEN ?1 AND ?2 ORDER BY t, rowid",
                      exec, from, to, sizeof **out, read_metric, (void **)out, count);
}

loom_error *store_history_models(store *st, const char *model, int64_t from, int64_t to,
                                 store_history_model **out, size_t *count)
{
    return read_range(st,
                      "SELECT t, rate, instances FROM history_models "
                      "WHERE model = ?3 AND t BETWEEN ?1 AND ?2 ORDER BY t, rowid",
                      model, from, to, sizeof **out, read_model, (void **)out, count);
}
