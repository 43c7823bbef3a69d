/*
 * http/http_upload.h - what the HTTP server keeps of uploads: slots (how
 * many multipart uploads run, in all and per user, so a few clients cannot
 * fill the disk or the server's threads) and spool files (a file part is
 * written to disk as it arrives, never held in memory).
 */
#ifndef LOOM_HTTP_UPLOAD_H
#define LOOM_HTTP_UPLOAD_H

#include <pthread.h>
#include <stddef.h>

#include "http/http.h"

typedef struct upload_slots {
    pthread_mutex_t lock;
    unsigned max_total, max_per_user, total;
    struct upload_holder {
        char user[64];
        unsigned n;
    } *holders; /* max_total entries: no more users than slots hold one */
} upload_slots;

int upload_slots_init(upload_slots *s, unsigned max_total, unsigned max_per_user);
void upload_slots_destroy(upload_slots *s);
/* A slot for `user`: LOOM_E_RATE_LIMITED when that user already holds
 * max_per_user, LOOM_E_UNAVAILABLE when all max_total are taken. */
loom_error *upload_slot_take(upload_slots *s, const char *user);
void upload_slot_give(upload_slots *s, const char *user);

/* A new, empty spool file in `dir` (mode 0600): its fd, with its malloc'd
 * path in *path; -1 with errno. */
int upload_spool_create(const char *dir, char **path);
/* Writes all of data; 0 or -1 (errno). */
int upload_spool_write(int fd, const char *data, size_t len);

#endif
