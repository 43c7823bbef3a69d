/*
 * util/dynlib.h - shared libraries the host opens only when a feature needs
 * them (the CUDA runtime and NCCL for GPU jobs, libarchive for model
 * directories), so that every CLI call does not pay for mapping and
 * relocating them and one binary runs on machines that lack them.
 *
 * A user keeps a struct of function pointers, typed from the library's own
 * header, and lists each field's symbol name and offset; dynlib_open fills
 * them all or none, and dynlib_open_once does so once per process.
 */
#ifndef LOOM_UTIL_DYNLIB_H
#define LOOM_UTIL_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

#include "util/error.h"

typedef struct dynlib_symbol {
    const char *name; /* the symbol, as the library exports it */
    size_t offset;    /* of its function pointer in the table */
} dynlib_symbol;

/* A table field named like the function it holds. */
#define DYNLIB_SYMBOL(table_type, fn) {#fn, offsetof(table_type, fn)}

typedef struct dynlib_spec {
    const char *what;            /* in errors: "the CUDA runtime" */
    const char *const *sonames;  /* NULL-terminated; tried in order */
    const char *fallback_dir;    /* tried after the loader's search; may be NULL */
    const dynlib_symbol *symbols;
    size_t count;
} dynlib_spec;

/* Opens the first of spec->sonames the dynamic loader finds (then each in
 * fallback_dir), and stores every symbol's address into `table`. On success
 * *handle is the library (kept open by the caller for the process's life).
 * LOOM_E_UNAVAILABLE naming the library when none is found, or the symbol a
 * found library lacks (table untouched then). */
loom_error *dynlib_open(const dynlib_spec *spec, void *table, void **handle);

/* One library's state for dynlib_open_once: static, DYNLIB_ONCE_INIT. */
typedef struct dynlib_once {
    pthread_mutex_t lock;
    int tried;
    loom_error *failure; /* kept: a missing library stays missing */
    void *handle;        /* never closed */
} dynlib_once;
#define DYNLIB_ONCE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL}

/* dynlib_open on the first call; every later call returns the same outcome
 * (NULL, or a copy of the first failure for the caller to free). Any
 * thread; the table is filled before the first NULL is returned. */
loom_error *dynlib_open_once(dynlib_once *once, const dynlib_spec *spec, void *table);

#endif
