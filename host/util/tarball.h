/*
 * util/tarball.h - model directories travel from the CLI to the host as tar
 * archives (libarchive). Extraction is defensive: no absolute paths, no "..",
 * no links that lead out, no device or fifo entries, and a size limit.
 */
#ifndef LOOM_UTIL_TARBALL_H
#define LOOM_UTIL_TARBALL_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Packs the contents of `dir` (recursively, relative names) into a tar held
 * in memory: a malloc'd buffer in *out. */
loom_error *tarball_pack_dir(const char *dir, char **out, size_t *out_len);

/* The same with every entry under the folder `top` ("top/file"), the
 * layout WMLA's clients send a model directory in. */
loom_error *tarball_pack_dir_as(const char *dir, const char *top, char **out, size_t *out_len);

/* Says whether a zip leaves out the entry `rel` (relative to the zipped
 * folder; is_dir: a folder, whose contents then go with it). */
typedef int (*tarball_leave_out)(const void *ctx, const char *rel, int is_dir);

/* A zip of the contents of `dir` (relative names), a tree a user controls:
 * it is walked through util/user_tree, beneath `dir`, and symbolic links
 * (and FIFOs, sockets, devices) are left out, never followed. Entries
 * leave_out (NULL: none) names are left out too. A malloc'd buffer in *out.
 * LOOM_E_TOO_LARGE when the zip would pass max_bytes; LOOM_E_LIMIT for
 * folders nested more than 64 deep. */
loom_error *tarball_zip_tree(const char *dir, tarball_leave_out leave_out, const void *ctx,
                             size_t max_bytes, char **out, size_t *out_len);

/* Unpacks `data` into the existing directory `dest`. Refuses unsafe entries
 * and malformed archives (LOOM_E_INVALID, naming the entry) and archives
 * whose contents exceed max_bytes (LOOM_E_TOO_LARGE). */
loom_error *tarball_unpack(const void *data, size_t len, const char *dest, uint64_t max_bytes);
/* The same, from the archive file at `path` (read as it goes, not loaded). */
loom_error *tarball_unpack_file(const char *path, const char *dest, uint64_t max_bytes);

/* The bounds of an unpacking: bytes written (whatever the headers say) and
 * entries (files, folders, links). */
typedef struct tarball_limits {
    uint64_t max_bytes;
    uint64_t max_entries;
} tarball_limits;

/* As tarball_unpack, also refusing (LOOM_E_TOO_LARGE, naming the limit)
 * an archive of more than max_entries entries. */
loom_error *tarball_unpack_bounded(const void *data, size_t len, const char *dest,
                                   const tarball_limits *limits);
/* The same, from the archive file at `path`. */
loom_error *tarball_unpack_file_bounded(const char *path, const char *dest,
                                        const tarball_limits *limits);

#endif
