/*
 * store/disk_reserve_internal.h - room kept for the database on a full disk.
 *
 * A file of STORE_RESERVE_BYTES beside the database, allocated when the
 * store opens. When a write finds the disk full, the store deletes it and
 * writes into the room it leaves (a job's last state, a user's delete), then
 * makes it again once the disk has twice that room free. Why a file and not
 * SQLite's own space: a WAL that must grow, and a checkpoint that must copy
 * pages into the database, both need free blocks on the filesystem.
 */
#ifndef LOOM_STORE_DISK_RESERVE_INTERNAL_H
#define LOOM_STORE_DISK_RESERVE_INTERNAL_H

#include <stdint.h>

#define STORE_RESERVE_BYTES (8 * 1024 * 1024)
/* How often a missing reserve is tried again. */
#define STORE_RESERVE_RETRY_MS 1000

typedef struct disk_reserve {
    char path[4200];
    int64_t next_try_ms; /* monotonic; 0: try at once */
} disk_reserve;

/* Makes the reserve beside db_path unless it is there already (two
 * connections to one database share it). A disk too full for it is logged;
 * the store works without it. */
void disk_reserve_open(disk_reserve *r, const char *db_path);
/* Deletes the reserve: 1 when that freed room, 0 when there was none. */
int disk_reserve_release(disk_reserve *r);
/* Makes the reserve again when it is missing and the disk has room for it
 * twice over; tried at most every STORE_RESERVE_RETRY_MS. */
void disk_reserve_restore(disk_reserve *r);
/* Whether the reserve is in place. */
int disk_reserve_held(const disk_reserve *r);

#endif
