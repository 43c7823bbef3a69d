/*
 * tests/unit/safetensors/st_test_util.h - scratch directories and whole-file
 * helpers shared by the safetensors tests.
 */
#ifndef LOOM_TEST_ST_UTIL_H
#define LOOM_TEST_ST_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/safetensors.h"

/* The safetensors calls with their error's message in err and its code in
 * st_test_code, so the tests read both; 0 or -1 like a boolean, the file
 * or NULL. */
static int32_t st_test_code;

static inline int st_test_fail(loom_error *e, char *err, size_t len)
{
    st_test_code = loom_err_take(e, err, len);
    return st_test_code == LOOM_OK ? 0 : -1;
}

static inline st_file *st_test_open(const char *path, uint64_t max, char *err, size_t len)
{
    st_file *f;
    st_test_fail(safetensors_open(path, max, &f), err, len);
    return f;
}

static inline st_file *st_test_open_buffer(const void *data, size_t n, const char *label,
                                           char *err, size_t len)
{
    st_file *f;
    st_test_fail(safetensors_open_buffer(data, n, label, &f), err, len);
    return f;
}

static inline int st_test_add(st_writer *w, const char *name, int32_t dtype, const int64_t *shape,
                              uint32_t ndim, const void *data, uint64_t nbytes, char *err,
                              size_t len)
{
    return st_test_fail(safetensors_writer_add(w, name, dtype, shape, ndim, data, nbytes), err, len);
}

static inline int st_test_add_view(st_writer *w, const loom_tensor_view *view, char *err, size_t len)
{
    return st_test_fail(safetensors_writer_add_view(w, view), err, len);
}

static inline int st_test_commit(st_writer *w, const char *path, char *err, size_t len)
{
    return st_test_fail(safetensors_writer_commit(w, path), err, len);
}

/* A fresh directory under $TMPDIR (or /tmp); path into buf. 0 or -1. */
static inline int st_test_mkdtemp(char *buf, size_t len)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, len, "%s/loom-st-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(buf) ? 0 : -1;
}

/* Whole file into a malloc'd buffer; NULL if it cannot be read. */
static inline uint8_t *st_test_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static inline int st_test_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Entries in dir other than . and ..; the first one's name into first. */
static inline int st_test_count_entries(const char *dir, char *first, size_t len)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n++ == 0 && first)
            snprintf(first, len, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* Removes the files in dir (one level) and dir itself. */
static inline void st_test_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

#endif
