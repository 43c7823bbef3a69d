/* util/log_pump.c - see log_pump.h. Streams are a linked list of nodes
 * whose addresses stay put: the thread polls a snapshot of them taken under
 * the lock, moves data without it, and alone removes nodes. */
#include "util/log_pump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/log.h"
#include "util/user_tree.h"

#define CHUNK (64 * 1024)
#define COPY_CHUNK (1024 * 1024)
#define POLL_MS 200

typedef struct stream {
    struct stream *next;
    int fd;          /* the pipe's read end */
    int out;         /* the file, written at `size` (the pump alone writes it) */
    uint64_t size;   /* of the file */
    uint64_t note;   /* bytes of the note at the file's head; 0 before a trim */
    uint64_t dropped;
    char name[PATH_MAX]; /* for messages */
} stream;

struct log_pump {
    pthread_mutex_t lock;
    pthread_t thread;
    int wake[2]; /* a byte here makes the thread poll the new list */
    stream *streams;
    size_t count;
    uint64_t max;
    int stopping;
    int64_t stop_at_ms;
};

/* Writes all of buf at offset. 0 or -1 (errno). */
static int pwrite_all(int fd, const char *buf, size_t len, uint64_t offset)
{
    while (len) {
        ssize_t w = pwrite(fd, buf, len, (off_t)offset);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
        offset += (uint64_t)w;
    }
    return 0;
}

static void pump_wake(log_pump *p)
{
    char b = 1;
    if (write(p->wake[1], &b, 1) < 0 && errno != EAGAIN)
        log_warn("log pump: cannot wake its thread: %s", strerror(errno));
}

/* Rewrites the file as a note and its newest max/2 bytes, in place through
 * its descriptor: the tail is copied forward to just after the note (each
 * piece is read before anything is written over it, since the note is
 * shorter than what is cut), then the file is cut to length. No second
 * file and no path: a job that plants links in its log folder (a
 * "stdout.trim" pointing at a root-only file) gives the host nothing to
 * follow. */
static void trim(stream *s, uint64_t max)
{
    uint64_t keep = max / 2, cut = s->size - keep;
    char note[320];
    uint64_t dropped = s->dropped + (cut > s->note ? cut - s->note : 0);
    int n = snprintf(note, sizeof note,
                     "[loom: this log passed its limit of %llu bytes (loom serve "
                     "--log-max-bytes): its first %llu bytes were dropped and the newest %llu "
                     "are kept]\n",
                     (unsigned long long)max, (unsigned long long)dropped,
                     (unsigned long long)keep);
    char *buf = malloc(COPY_CHUNK);
    int ok = buf != NULL;
    uint64_t to = (uint64_t)n;
    for (uint64_t off = cut; ok && off < s->size;) {
        ssize_t r = pread(s->out, buf, COPY_CHUNK, (off_t)off);
        ok = r > 0 && pwrite_all(s->out, buf, (size_t)r, to) == 0;
        off += r > 0 ? (uint64_t)r : 0;
        to += r > 0 ? (uint64_t)r : 0;
    }
    free(buf);
    ok = ok && pwrite_all(s->out, note, (size_t)n, 0) == 0 && ftruncate(s->out, (off_t)to) == 0;
    if (!ok) {
        log_warn("log pump: cannot trim %s: %s", s->name, strerror(errno));
        return;
    }
    s->size = to;
    s->note = (uint64_t)n;
    s->dropped = dropped;
}

/* Moves what the pipe holds into the file; 0 at the pipe's end. */
static int pump_once(log_pump *p, stream *s, char *buf)
{
    ssize_t r = read(s->fd, buf, CHUNK);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (r <= 0)
        return 0;
    if (s->out < 0 || pwrite_all(s->out, buf, (size_t)r, s->size) != 0)
        return 1; /* the file is gone (its exec deleted): the pipe is still read */
    s->size += (uint64_t)r;
    pthread_mutex_lock(&p->lock);
    uint64_t max = p->max;
    pthread_mutex_unlock(&p->lock);
    if (s->size > max)
        trim(s, max);
    return 1;
}

static void remove_stream(log_pump *p, stream *s)
{
    pthread_mutex_lock(&p->lock);
    for (stream **pp = &p->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            p->count--;
            break;
        }
    pthread_mutex_unlock(&p->lock);
    close(s->fd);
    if (s->out >= 0)
        close(s->out);
    free(s);
}

/* A snapshot of the streams for poll(): fds[0] is the wake pipe. */
static size_t snapshot(log_pump *p, struct pollfd **fds, stream ***of, size_t *cap, int *stop)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->count + 1;
    if (n > *cap) {
        struct pollfd *f = realloc(*fds, n * sizeof **fds);
        stream **o = f ? realloc(*of, n * sizeof **of) : NULL;
        if (f)
            *fds = f;
        if (o)
            *of = o;
        if (f && o)
            *cap = n;
    }
    size_t k = 0;
    (*fds)[k++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
    for (stream *s = p->streams; s && k < *cap; s = s->next) {
        (*of)[k] = s;
        (*fds)[k++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
    }
    *stop = p->stopping && (p->count == 0 || time_mono_ms() >= p->stop_at_ms);
    pthread_mutex_unlock(&p->lock);
    return k;
}

static void *pump_thread(void *arg)
{
    log_pump *p = arg;
    char *buf = malloc(CHUNK);
    struct pollfd *fds = NULL;
    stream **of = NULL;
    size_t cap = 0;
    int stop = 0;
    while (buf && !stop) {
        size_t n = snapshot(p, &fds, &of, &cap, &stop);
        if (stop || n == 0)
            break;
        if (poll(fds, n, POLL_MS) < 0 && errno != EINTR)
            break;
        if (fds[0].revents & POLLIN) {
            char drain[64];
            while (read(p->wake[0], drain, sizeof drain) > 0) {
            }
        }
        for (size_t i = 1; i < n; i++)
            if (fds[i].revents && !pump_once(p, of[i], buf))
                remove_stream(p, of[i]);
    }
    free(buf);
    free(fds);
    free(of);
    return NULL;
}

log_pump *log_pump_create(uint64_t max_bytes)
{
    log_pump *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->max = max_bytes < LOG_PUMP_MIN_BYTES ? LOG_PUMP_MIN_BYTES : max_bytes;
    pthread_mutex_init(&p->lock, NULL);
    if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_create(&p->thread, NULL, pump_thread, p) != 0) {
        close(p->wake[0]);
        close(p->wake[1]);
        free(p);
        return NULL;
    }
    return p;
}

void log_pump_set_limit(log_pump *p, uint64_t max_bytes)
{
    pthread_mutex_lock(&p->lock);
    p->max = max_bytes < LOG_PUMP_MIN_BYTES ? LOG_PUMP_MIN_BYTES : max_bytes;
    pthread_mutex_unlock(&p->lock);
}

loom_error *log_pump_add(log_pump *p, int read_fd, int root, const char *rel)
{
    stream *s = calloc(1, sizeof *s);
    int out = -1;
    loom_error *e = !s ? loom_err(LOOM_E_INTERNAL, "out of memory")
                  : strlen(rel) >= sizeof s->name
                      ? loom_err(LOOM_E_INVALID, "%.64s...: a log name longer than %zu bytes", rel,
                                 sizeof s->name - 1)
                      : utree_open_write(root, rel, 0644, &out);
    off_t end = e ? -1 : lseek(out, 0, SEEK_END);
    if (!e && end < 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: %s", rel, strerror(errno));
    if (e) {
        close(read_fd);
        if (out >= 0)
            close(out);
        free(s);
        return loom_err_wrap(e, "cannot open the log");
    }
    s->fd = read_fd;
    s->out = out;
    s->size = (uint64_t)end;
    snprintf(s->name, sizeof s->name, "%s", rel);
    pthread_mutex_lock(&p->lock);
    s->next = p->streams;
    p->streams = s;
    p->count++;
    pthread_mutex_unlock(&p->lock);
    pump_wake(p);
    return NULL;
}

size_t log_pump_streams(log_pump *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->count;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void log_pump_destroy(log_pump *p, int drain_ms)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    p->stop_at_ms = time_mono_ms() + drain_ms;
    pthread_mutex_unlock(&p->lock);
    pump_wake(p);
    pthread_join(p->thread, NULL);
    while (p->streams) {
        stream *s = p->streams;
        p->streams = s->next;
        close(s->fd);
        if (s->out >= 0)
            close(s->out);
        free(s);
    }
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
