/* Store transactions: several calls commit together or not at all, and a
 * first user is added only to an empty table. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "store/store.h"
#include "store/store_auth.h"

static int code_of(loom_error *e)
{
    int code = loom_err_code(e);
    loom_err_free(e);
    return code;
}

static store_user user_named(const char *name, const char *role)
{
    store_user u = {.created_at = 1};
    snprintf(u.name, sizeof u.name, "%s", name);
    snprintf(u.role, sizeof u.role, "%s", role);
    snprintf(u.pwhash, sizeof u.pwhash, "hash-of-%s", name);
    return u;
}

static void test_rollback_and_commit(store *st)
{
    store_user a = user_named("anna", "user"), b = user_named("bert", "user");
    CHECK(code_of(store_txn_begin(st)) == LOOM_OK);
    CHECK(code_of(store_user_insert(st, &a)) == LOOM_OK);
    /* a failed call inside: the caller hands its error to the end */
    loom_error *e = store_user_insert(st, &a);
    CHECK(loom_err_code(e) == LOOM_E_CONFLICT);
    CHECK(code_of(store_txn_end(st, e)) == LOOM_E_CONFLICT);
    store_user got;
    CHECK(code_of(store_user_by_name(st, "anna", &got)) == LOOM_E_NOT_FOUND);

    CHECK(code_of(store_txn_begin(st)) == LOOM_OK);
    /* transactions do not nest */
    CHECK(code_of(store_txn_begin(st)) == LOOM_E_INTERNAL);
    CHECK(code_of(store_user_insert(st, &a)) == LOOM_OK);
    CHECK(code_of(store_user_insert(st, &b)) == LOOM_OK);
    CHECK(code_of(store_txn_end(st, NULL)) == LOOM_OK);
    CHECK(code_of(store_user_by_name(st, "anna", &got)) == LOOM_OK);
    CHECK(code_of(store_user_by_name(st, "bert", &got)) == LOOM_OK);
}

static void test_first_user(store *st)
{
    store_user admin = user_named("admin", "admin");
    int inserted = -1;
    CHECK(code_of(store_user_insert_first(st, &admin, &inserted)) == LOOM_OK);
    CHECK(inserted == 1);
    store_user other = user_named("root", "admin");
    CHECK(code_of(store_user_insert_first(st, &other, &inserted)) == LOOM_OK);
    CHECK(inserted == 0);
    int64_t n = -1;
    CHECK(code_of(store_user_count(st, "admin", &n)) == LOOM_OK);
    CHECK(n == 1);
}

int main(void)
{
    store *st = NULL;
    CHECK(code_of(store_open(":memory:", &st)) == LOOM_OK);
    if (!st)
        return CHECK_DONE();
    test_first_user(st);
    test_rollback_and_commit(st);
    store_close(st);
    return CHECK_DONE();
}
