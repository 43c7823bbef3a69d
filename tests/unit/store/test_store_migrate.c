/* A database as the host before one migration mechanism left it opens
 * with every row, once or twice; one from a newer host is refused; a
 * migration that fails changes nothing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store/store.h"
#include "store/store_auth.h"
#include "store/store_hpo.h"
#include "store/store_infer.h"

/* The tables exactly as that host's store, auth, hpo and infer made them
 * (each kept its own schema then), with one row in each. */
static const char old_tables[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO meta VALUES('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS plugins("
    "  kind TEXT NOT NULL, name TEXT NOT NULL COLLATE NOCASE, file TEXT NOT NULL,"
    "  added_at INTEGER NOT NULL, PRIMARY KEY(kind, name));"
    "CREATE TABLE IF NOT EXISTS execs("
    "  id TEXT PRIMARY KEY, user TEXT NOT NULL, framework TEXT NOT NULL,"
    "  args TEXT NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL DEFAULT '',"
    "  result_dir TEXT NOT NULL, num_workers INTEGER NOT NULL, pgid INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0,"
    "  ended_at INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS plans("
    "  path TEXT PRIMARY KEY, weight REAL NOT NULL, min_devices INTEGER NOT NULL,"
    "  cap_devices INTEGER NOT NULL, policy TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS plan_members("
    "  plan TEXT NOT NULL, user_id INTEGER NOT NULL, user_name TEXT NOT NULL,"
    "  added_at INTEGER NOT NULL, PRIMARY KEY(plan, user_id));"
    "ALTER TABLE execs ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE execs ADD COLUMN warnings TEXT NOT NULL DEFAULT '';"
    "CREATE TABLE IF NOT EXISTS users("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
    "  role TEXT NOT NULL CHECK(role IN ('admin', 'user')),"
    "  pwhash TEXT NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS api_keys("
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  key_hash BLOB NOT NULL UNIQUE, label TEXT NOT NULL COLLATE NOCASE,"
    "  created_at INTEGER NOT NULL, scope TEXT NOT NULL DEFAULT 'all',"
    "  UNIQUE(user_id, label));"
    "CREATE TABLE IF NOT EXISTS tokens("
    "  token_hash BLOB PRIMARY KEY,"
    "  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,"
    "  expires_at INTEGER NOT NULL, apikey_hash BLOB);"
    "CREATE INDEX IF NOT EXISTS tokens_by_user ON tokens(user_id);"
    "CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens(expires_at);"
    "CREATE INDEX IF NOT EXISTS tokens_by_apikey ON tokens(apikey_hash);"
    "CREATE TRIGGER IF NOT EXISTS users_removed_from_plans AFTER DELETE ON users BEGIN"
    "  DELETE FROM plan_members WHERE user_id = OLD.id; END;"
    "CREATE TABLE IF NOT EXISTS hpo_tasks("
    " name TEXT PRIMARY KEY, user TEXT NOT NULL, user_id INTEGER NOT NULL,"
    " is_admin INTEGER NOT NULL, state TEXT NOT NULL, message TEXT NOT NULL,"
    " task_json TEXT NOT NULL, algo_state TEXT, search_finished INTEGER NOT NULL,"
    " next_id INTEGER NOT NULL, created_at INTEGER, started_at INTEGER, ended_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS hpo_experiments("
    " task TEXT NOT NULL, id INTEGER NOT NULL, exec_id TEXT NOT NULL, state TEXT NOT NULL,"
    " message TEXT NOT NULL, values_json TEXT NOT NULL, budget REAL, has_metric INTEGER,"
    " metric REAL, attempts INTEGER, observed INTEGER, start_at INTEGER, end_at INTEGER,"
    " PRIMARY KEY(task, id));"
    "CREATE TABLE IF NOT EXISTS hpo_algorithms(name TEXT PRIMARY KEY, user TEXT NOT NULL,"
    " dir TEXT NOT NULL, python TEXT NOT NULL, log_level TEXT NOT NULL, added_at INTEGER);"
    "ALTER TABLE hpo_algorithms ADD COLUMN published INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE IF NOT EXISTS infer_models ("
    " name TEXT PRIMARY KEY, owner TEXT NOT NULL, dir TEXT NOT NULL,"
    " model_json TEXT NOT NULL, profile_json TEXT NOT NULL,"
    " started INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);"
    /* the rows */
    "INSERT INTO plugins VALUES('search', 'grid', '/h/plugins/grid.so', 11);"
    "INSERT INTO users(id, name, role, pwhash, created_at) VALUES"
    "  (1, 'admin', 'admin', '$argon2id$a', 1), (7, 'dave', 'user', '$argon2id$d', 2);"
    "INSERT INTO api_keys(user_id, key_hash, label, created_at, scope)"
    "  VALUES(7, x'" "0101010101010101010101010101010101010101010101010101010101010101"
    "', 'ci', 3, 'inference');"
    "INSERT INTO tokens VALUES(x'" "0202020202020202020202020202020202020202020202020202020202020202"
    "', 7, 9000000000000, x'" "0101010101010101010101010101010101010101010101010101010101010101"
    "');"
    "INSERT INTO execs(id, user, framework, args, state, message, result_dir, num_workers,"
    "  pgid, created_at, started_at, ended_at, user_id, warnings) VALUES('dave-1', 'dave',"
    "  'command', '--x 1', 'FINISHED', 'done', '/r', 2, 0, 5, 6, 7, 7, 'one warning');"
    "INSERT INTO plans VALUES('/dave', 2.5, 1, 4, 'fair');"
    "INSERT INTO plan_members VALUES('/dave', 7, 'dave', 8);"
    "INSERT INTO hpo_tasks VALUES('t1', 'dave', 7, 0, 'RUNNING', 'm', '{\"a\":1}', 'S', 0, 3,"
    "  10, 11, 0);"
    "INSERT INTO hpo_experiments VALUES('t1', 1, 'dave-1', 'FINISHED', '', '[0.5]', 1.0, 1,"
    "  0.25, 1, 1, 12, 13);"
    "INSERT INTO hpo_algorithms VALUES('opt', 'dave', '/h/algorithms/opt', '/usr/bin/python3',"
    "  'INFO', 14, 1);"
    "INSERT INTO infer_models VALUES('m1', 'dave', '/h/models/m1', '{\"name\":\"m1\"}',"
    "  '{\"p\":1}', 1, 15);";

static int run_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", path, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc;
}

static int code_of(loom_error *e)
{
    int code = loom_err_code(e);
    if (e)
        fprintf(stderr, "  (%s)\n", loom_err_message(e));
    loom_err_free(e);
    return code;
}

static void count_plugin(const store_plugin *p, void *ctx)
{
    if (!strcmp(p->name, "grid") && !strcmp(p->file, "/h/plugins/grid.so"))
        ++*(int *)ctx;
}

static void count_member(const store_plan_member *m, void *ctx)
{
    if (m->user_id == 7 && !strcmp(m->plan, "/dave"))
        ++*(int *)ctx;
}

/* The plan old_tables wrote, from before plans had job limits: they read 0
 * (inherit). */
static void count_plan(const store_plan *p, void *ctx)
{
    if (!strcmp(p->path, "/dave") && p->weight == 2.5 && p->cap_devices == 4 &&
        p->max_procs == 0 && p->max_memory == 0 && p->max_disk == 0)
        ++*(int *)ctx;
}

static void find_limited_plan(const store_plan *p, void *ctx)
{
    if (!strcmp(p->path, "/limited"))
        *(store_plan *)ctx = *p;
}

static void count_key(const store_apikey *k, void *ctx)
{
    if (!strcmp(k->label, "ci") && !strcmp(k->scope, "inference") && k->user_id == 7)
        ++*(int *)ctx;
}

/* Every row old_tables wrote, read through the typed calls. */
static void check_rows(store *st)
{
    int n = 0;
    CHECK(code_of(store_plugin_each(st, count_plugin, &n)) == LOOM_OK && n == 1);
    store_exec x;
    CHECK(code_of(store_exec_get(st, "dave-1", &x)) == LOOM_OK);
    CHECK_STR_EQ(exec_state_text(x.state), "FINISHED");
    CHECK(x.user_id == 7 && x.num_workers == 2 && x.ended_at == 7);
    CHECK_STR_EQ(x.plan, ""); /* recorded before plans were kept */
    char warnings[STORE_EXEC_WARNINGS_MAX];
    CHECK(code_of(store_exec_warnings_get(st, "dave-1", warnings, sizeof warnings)) == LOOM_OK);
    CHECK_STR_EQ(warnings, "one warning");
    n = 0;
    CHECK(code_of(store_plan_member_each(st, NULL, count_member, &n)) == LOOM_OK && n == 1);
    n = 0;
    CHECK(code_of(store_plan_each(st, count_plan, &n)) == LOOM_OK && n == 1);

    store_user u;
    CHECK(code_of(store_user_by_name(st, "DAVE", &u)) == LOOM_OK);
    CHECK(u.id == 7);
    CHECK_STR_EQ(u.pwhash, "$argon2id$d");
    n = 0;
    CHECK(code_of(store_apikey_each(st, "dave", count_key, &n)) == LOOM_OK && n == 1);
    unsigned char hash[STORE_SECRET_HASH_BYTES];
    memset(hash, 2, sizeof hash);
    store_token t;
    CHECK(code_of(store_token_find(st, hash, &t)) == LOOM_OK);
    CHECK(t.user_id == 7 && !memcmp(t.hash, hash, sizeof hash));
    CHECK_STR_EQ(t.scope, "inference");

    hpo_task_rec task;
    CHECK(code_of(store_hpo_task_get(st, "t1", &task)) == LOOM_OK);
    CHECK_STR_EQ(hpo_task_state_text(task.state), "RUNNING");
    CHECK_STR_EQ(task.algo_state, "S");
    CHECK(task.next_id == 3 && task.user_id == 7);
    store_hpo_task_free(&task);
    hpo_exp_rec *exps = NULL;
    size_t nexps = 0;
    CHECK(code_of(store_hpo_exp_list(st, "t1", &exps, &nexps)) == LOOM_OK && nexps == 1);
    CHECK(nexps == 1 && exps[0].has_metric && exps[0].metric == 0.25);
    store_hpo_exps_free(exps, nexps);
    hpo_algorithm_rec alg;
    CHECK(code_of(store_hpo_algorithm_get(st, "opt", &alg)) == LOOM_OK);
    CHECK(alg.published == 1);

    infer_record m;
    CHECK(code_of(store_model_get(st, "m1", &m)) == LOOM_OK);
    CHECK(m.started == 1);
    CHECK_STR_EQ(m.profile_json, "{\"p\":1}");
    store_model_clear(&m);
}

static void test_old_database_keeps_its_rows(const char *path)
{
    CHECK(run_sql(path, old_tables) == SQLITE_OK);
    store *st = NULL;
    CHECK(code_of(store_open(path, &st)) == LOOM_OK);
    if (!st)
        return;
    check_rows(st);
    /* Ids are still never reused: the next user comes after dave. */
    store_user erin = {.name = "erin", .role = "user", .pwhash = "h", .created_at = 16};
    CHECK(code_of(store_user_insert(st, &erin)) == LOOM_OK);
    CHECK(code_of(store_user_by_name(st, "erin", &erin)) == LOOM_OK);
    CHECK(erin.id == 8);
    /* The new columns take a plan's job limits. */
    store_plan limited = {.path = "/limited", .weight = 1, .policy = "fair", .max_procs = 32,
                          .max_memory = (int64_t)2 << 30, .max_disk = (int64_t)10 << 30};
    CHECK(code_of(store_plan_put(st, &limited)) == LOOM_OK);
    store_plan back;
    memset(&back, 0, sizeof back);
    CHECK(code_of(store_plan_each(st, find_limited_plan, &back)) == LOOM_OK);
    CHECK(back.max_procs == 32 && back.max_memory == (int64_t)2 << 30 &&
          back.max_disk == (int64_t)10 << 30);
    /* An exec recorded now keeps its plan. */
    store_exec ex = {.id = "erin-1", .user = "erin", .user_id = 8, .framework = "command",
                     .state = EXEC_STATE_PENDING, .num_workers = 1, .created_at = 17,
                     .plan = "/limited"};
    CHECK(code_of(store_exec_insert(st, &ex)) == LOOM_OK);
    store_exec exback;
    CHECK(code_of(store_exec_get(st, "erin-1", &exback)) == LOOM_OK);
    CHECK_STR_EQ(exback.plan, "/limited");
    CHECK(code_of(store_exec_delete(st, "erin-1")) == LOOM_OK);
    /* A removed user leaves its plans (the trigger came along). */
    CHECK(code_of(store_user_delete(st, "erin")) == LOOM_OK);
    store_close(st);

    /* Opened again: the steps recorded are not run twice. */
    st = NULL;
    CHECK(code_of(store_open(path, &st)) == LOOM_OK);
    if (st) {
        check_rows(st);
        store_close(st);
    }
}

static void test_newer_database_refused(const char *path)
{
    CHECK(run_sql(path, "UPDATE schema_migrations SET version = version + 1 "
                        "WHERE family = 'hpo'") == SQLITE_OK);
    store *st = NULL;
    loom_error *e = store_open(path, &st);
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    CHECK_CONTAINS(loom_err_message(e), "made by a newer host");
    loom_err_free(e);
    CHECK(st == NULL);
    store_close(st);
}

static int64_t count_tables(const char *path, const char *name)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t n = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* A step that fails (a view where tuning's optimizers table should be)
 * leaves the database as it was: the steps before it are undone too. */
static void test_failed_migration_changes_nothing(const char *path)
{
    CHECK(run_sql(path, "CREATE VIEW hpo_algorithms AS SELECT 1 AS name") == SQLITE_OK);
    store *st = NULL;
    loom_error *e = store_open(path, &st);
    CHECK(loom_err_code(e) == LOOM_E_INTERNAL);
    CHECK_CONTAINS(loom_err_message(e), "hpo tables, step 3");
    loom_err_free(e);
    store_close(st);
    CHECK(count_tables(path, "execs") == 0);
    CHECK(count_tables(path, "users") == 0);
    CHECK(count_tables(path, "schema_migrations") == 0);
}

int main(void)
{
    char dir[] = "/tmp/loom-store-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[64];
    snprintf(path, sizeof path, "%s/state.db", dir);
    test_old_database_keeps_its_rows(path);
    test_newer_database_refused(path);
    char fresh[64];
    snprintf(fresh, sizeof fresh, "%s/view.db", dir);
    test_failed_migration_changes_nothing(fresh);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return CHECK_DONE();
}
