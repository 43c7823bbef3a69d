/*
 * fuzz_support.h - what the libFuzzer targets share: a NUL-terminated copy of
 * an input, a scratch directory private to the fuzzing process for parsers
 * that read files, and writing and removing files in it. Any failure of the
 * environment itself (disk full, mkdtemp refused) aborts: a target that
 * silently skipped its work would look like a clean run.
 */
#ifndef LOOM_FUZZ_SUPPORT_H
#define LOOM_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a malloc'd C string (it ends at the first NUL byte, as it
 * would in the host, which reads bodies and arguments as strings). */
char *fuzz_cstring(const uint8_t *data, size_t size);

/* A directory made once per process under $TMPDIR (or /tmp) and removed at
 * exit; targets make their files and subdirectories inside it. */
const char *fuzz_scratch_dir(void);

/* Writes `size` bytes to `path`, replacing it. Aborts on failure. */
void fuzz_write_file(const char *path, const void *data, size_t size);

/* Makes `path` (one level) with mode 0700. Aborts on failure other than
 * "exists". */
void fuzz_make_dir(const char *path);

/* Removes `path` and everything below it without following symbolic links;
 * directories left unreadable or unwritable are opened up first. */
void fuzz_remove_tree(const char *path);

/* Formats into a fixed buffer and aborts when the result does not fit. */
void fuzz_path(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
