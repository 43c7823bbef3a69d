/* http/http_upload.c - see http_upload.h. */
#include "http/http_upload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/user_tree.h"

int upload_slots_init(upload_slots *s, unsigned max_total, unsigned max_per_user)
{
    memset(s, 0, sizeof *s);
    s->holders = calloc(max_total ? max_total : 1, sizeof *s->holders);
    if (!s->holders)
        return -1;
    pthread_mutex_init(&s->lock, NULL);
    s->max_total = max_total;
    s->max_per_user = max_per_user;
    return 0;
}

void upload_slots_destroy(upload_slots *s)
{
    if (!s->holders)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s->holders);
    s->holders = NULL;
}

static struct upload_holder *holder_of(upload_slots *s, const char *user)
{
    for (unsigned i = 0; i < s->max_total; i++)
        if (s->holders[i].n && strcmp(s->holders[i].user, user) == 0)
            return &s->holders[i];
    return NULL;
}

loom_error *upload_slot_take(upload_slots *s, const char *user)
{
    loom_error *e = NULL;
    pthread_mutex_lock(&s->lock);
    struct upload_holder *h = holder_of(s, user);
    if (h && h->n >= s->max_per_user) {
        e = loom_err(LOOM_E_RATE_LIMITED,
                     "user %s already has %u uploads in progress (the limit per user, "
                     "--max-uploads-per-user); wait for one to finish",
                     user, h->n);
    } else if (s->total >= s->max_total) {
        e = loom_err(LOOM_E_UNAVAILABLE,
                     "%u uploads are in progress (the host's limit, --max-uploads); try again "
                     "shortly",
                     s->total);
    } else {
        for (unsigned i = 0; !h && i < s->max_total; i++)
            if (s->holders[i].n == 0) {
                h = &s->holders[i];
                snprintf(h->user, sizeof h->user, "%s", user);
            }
        h->n++;
        s->total++;
    }
    pthread_mutex_unlock(&s->lock);
    return e;
}

void upload_slot_give(upload_slots *s, const char *user)
{
    pthread_mutex_lock(&s->lock);
    struct upload_holder *h = holder_of(s, user);
    if (h) {
        h->n--;
        s->total--;
    }
    pthread_mutex_unlock(&s->lock);
}

int upload_spool_create(const char *dir, char **path)
{
    /* Made through util/user_tree: a new file (O_EXCL | O_NOFOLLOW) beneath
     * the spool folder, under a random name. */
    int root = -1, fd = -1;
    loom_error *e = utree_root(dir, &root);
    char name[32] = "";
    for (int tries = 0; !e && fd < 0 && tries < 16; tries++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
            e = loom_err(LOOM_E_INTERNAL, "no random bytes: %s", strerror(errno));
            break;
        }
        snprintf(name, sizeof name, "upload-%016llx", (unsigned long long)r);
        e = utree_create(root, name, 0600, &fd);
        if (loom_err_code(e) == LOOM_E_CONFLICT) {
            loom_err_free(e);
            e = NULL;
        }
    }
    int saved = errno;
    if (root >= 0)
        close(root);
    size_t n = strlen(dir) + 1 + strlen(name) + 1;
    char *p = !e && fd >= 0 ? malloc(n) : NULL;
    loom_err_free(e);
    if (!p) {
        if (fd >= 0)
            close(fd);
        errno = fd >= 0 ? ENOMEM : saved ? saved : EEXIST;
        return -1;
    }
    snprintf(p, n, "%s/%s", dir, name);
    *path = p;
    return fd;
}

int upload_spool_write(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}
