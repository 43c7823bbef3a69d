/*
 * tests/unit/auth/auth_test_util.h - what the auth tests share: a database
 * in a fresh temporary directory and options that keep argon2 fast.
 */
#ifndef LOOM_TEST_AUTH_UTIL_H
#define LOOM_TEST_AUTH_UTIL_H

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/auth.h"
#include "store/store.h"
#include "util/error.h"

typedef struct test_db {
    char dir[64];
    char path[128];
} test_db;

/* Makes a temporary directory and names auth.db inside it. */
static inline void test_db_make(test_db *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/loom-auth-XXXXXX");
    if (!mkdtemp(t->dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(t->path, sizeof t->path, "%s/auth.db", t->dir);
}

static inline void test_db_remove(test_db *t)
{
    const char *suffixes[] = {"", "-wal", "-shm"};
    char p[160];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", t->path, suffixes[i]);
        unlink(p);
    }
    rmdir(t->dir);
}

/* The cheapest argon2id cost libsodium allows: tests stay fast. */
static inline auth_options test_fast_options(void)
{
    auth_options o = {0};
    o.pwhash_opslimit = crypto_pwhash_OPSLIMIT_MIN;
    o.pwhash_memlimit = crypto_pwhash_MEMLIMIT_MIN;
    return o;
}

/* The code of a call's error (LOOM_OK for none), its message copied into
 * the caller's `err` (TAKE) or dropped (CODE). */
#define TAKE(call) loom_err_take((call), err, sizeof err)
#define CODE(call) loom_err_take((call), NULL, 0)

/* The auth service keeps its tables in the store's database: each test
 * service comes with its store, closed with it by test_close. */
#define TEST_MAX_OPEN 8
static struct {
    auth_service *svc;
    store *st;
} test_opened[TEST_MAX_OPEN];

static inline auth_service *test_open(const test_db *t, const auth_options *o)
{
    store *st = NULL;
    auth_service *svc = NULL;
    loom_error *e = store_open(t->path, &st);
    if (!e)
        e = auth_open(st, o, &svc);
    if (e) {
        fprintf(stderr, "auth_open(%s): %s\n", t->path, loom_err_message(e));
        abort();
    }
    for (int i = 0; i < TEST_MAX_OPEN; i++)
        if (!test_opened[i].svc) {
            test_opened[i].svc = svc;
            test_opened[i].st = st;
            return svc;
        }
    abort();
}

static inline void test_close(auth_service *svc)
{
    for (int i = 0; i < TEST_MAX_OPEN; i++)
        if (test_opened[i].svc == svc) {
            auth_close(svc);
            store_close(test_opened[i].st);
            test_opened[i].svc = NULL;
            return;
        }
}

/* 1 when the admin was created, 0 when users existed, or minus the error
 * code (its message in err). */
static inline int test_bootstrap(auth_service *svc, const char *password, char *generated,
                                 size_t len, char *err, size_t errlen)
{
    int created = 0;
    int32_t code = loom_err_take(auth_bootstrap_admin(svc, password, generated, len, &created),
                                 err, errlen);
    return code == LOOM_OK ? created : -code;
}

/* The number of users (fn called for each), or -1. */
static inline long test_user_list(auth_service *svc, void (*fn)(const auth_user *, void *),
                                  void *ctx)
{
    size_t n = 0;
    return loom_err_take(auth_user_list(svc, fn, ctx, &n), NULL, 0) == LOOM_OK ? (long)n : -1;
}

static inline long test_apikey_list(auth_service *svc, const char *user,
                                    void (*fn)(const auth_apikey *, void *), void *ctx)
{
    size_t n = 0;
    return loom_err_take(auth_apikey_list(svc, user, fn, ctx, &n), NULL, 0) == LOOM_OK ? (long)n
                                                                                      : -1;
}

#endif
