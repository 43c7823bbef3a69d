/*
 * util/dynlib.h - shared libraries the host opens only when a feature needs
 * them (the CUDA runtime and NCCL for GPU jobs, libarchive for model
 * directories), so that every CLI call does not pay for mapping and
 * relocating them and one binary runs on machines that lack them.
 *
 * A user keeps a struct of function pointers, typed from the library's own
 * header, and lists each field's symbol name and offset; dynlib_open fills
 * them all or none. Callers wrap it in pthread_once (see util/cuda_dl.c).
 */
#ifndef LOOM_UTIL_DYNLIB_H
#define LOOM_UTIL_DYNLIB_H

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

#endif
