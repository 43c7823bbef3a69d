/* util/disk_usage.h - the disk space a folder's tree takes, measured the
 * way du does (allocated blocks), safely inside a tree its owner controls:
 * every step is openat/fstatat relative to the folder above, links are
 * never followed, and the walk looks at a bounded number of entries. */
#ifndef LOOM_UTIL_DISK_USAGE_H
#define LOOM_UTIL_DISK_USAGE_H

#include <stdint.h>

typedef struct disk_usage {
    uint64_t bytes;   /* allocated (st_blocks * 512) */
    uint64_t entries; /* files, folders and links looked at */
    int truncated;    /* the entry bound or the depth bound stopped it */
} disk_usage;

/* Measures the tree at `dir`, looking at most at max_entries entries and
 * 64 levels. Returns 0, or -1 with errno when dir itself cannot be opened;
 * what is beneath and cannot be read is skipped. */
int disk_usage_measure(const char *dir, uint64_t max_entries, disk_usage *out);

#endif
