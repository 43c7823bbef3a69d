/*
 * util/tarball.h - model directories travel from the CLI to the host as tar
 * archives (libarchive). Extraction is defensive: no absolute paths, no "..",
 * no links that lead out, no device or fifo entries, and a size limit.
 */
#ifndef LOOM_UTIL_TARBALL_H
#define LOOM_UTIL_TARBALL_H

#include <stddef.h>
#include <stdint.h>

/* Packs the contents of `dir` (recursively, relative names) into a tar held
 * in memory. Returns 0 and a malloc'd buffer, or -1 with err. */
int tarball_pack_dir(const char *dir, char **out, size_t *out_len, char *err,
                     size_t errlen);

/* Unpacks `data` into the existing directory `dest`. Refuses unsafe entries
 * (naming them) and archives whose contents exceed max_bytes. Returns 0 or
 * -1 with err. */
int tarball_unpack(const void *data, size_t len, const char *dest,
                   uint64_t max_bytes, char *err, size_t errlen);

#endif
