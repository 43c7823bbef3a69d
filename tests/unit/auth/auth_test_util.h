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

static inline auth_service *test_open(const test_db *t, const auth_options *o)
{
    char err[256] = "";
    auth_service *svc = auth_open(t->path, o, err, sizeof err);
    if (!svc) {
        fprintf(stderr, "auth_open(%s): %s\n", t->path, err);
        abort();
    }
    return svc;
}

#endif
