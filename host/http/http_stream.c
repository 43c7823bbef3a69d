/* http/http_stream.c - see http_stream_internal.h and http.h. */
#include "http/http_stream_internal.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

struct http_stream {
    pthread_mutex_t lock;
    int refs;      /* the route's and the connection's */
    int ended;     /* nothing more is sent: the server stops, or too much waits */
    int gone;      /* the connection let go: its reply is over */
    int suspended; /* its connection waits for bytes (only this file resumes it) */
    const mhd_api *mhd;
    struct MHD_Connection *conn;
    int fd; /* its socket, looked at while suspended (-1: unknown) */
    char *buf;
    size_t off, len, cap; /* bytes [off, len) wait to be sent */
    http_stream_set *set;
    http_stream *next, *prev; /* in set, while the connection holds it */
};

void http_stream_set_init(http_stream_set *set)
{
    pthread_mutex_init(&set->lock, NULL);
    set->head = NULL;
}

void http_stream_set_destroy(http_stream_set *set) { pthread_mutex_destroy(&set->lock); }

/* Resumes a suspended connection for its bytes or its end; s->lock held,
 * so that the callback cannot suspend it again in between. */
static void wake(http_stream *s)
{
    if (s->suspended && !s->gone && (s->off < s->len || s->ended)) {
        s->suspended = 0;
        s->mhd->MHD_resume_connection(s->conn);
    }
}

void http_stream_set_end_all(http_stream_set *set)
{
    pthread_mutex_lock(&set->lock);
    for (http_stream *s = set->head; s; s = s->next) {
        pthread_mutex_lock(&s->lock);
        s->ended = 1;
        wake(s);
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&set->lock);
}

http_stream *http_stream_new(http_stream_set *set, const mhd_api *mhd, struct MHD_Connection *conn)
{
    http_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 2;
    s->mhd = mhd;
    s->conn = conn;
    const union MHD_ConnectionInfo *ci = mhd->MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->fd = ci ? ci->connect_fd : -1;
    s->set = set;
    pthread_mutex_lock(&set->lock);
    s->next = set->head;
    if (set->head)
        set->head->prev = s;
    set->head = s;
    pthread_mutex_unlock(&set->lock);
    return s;
}

static void drop(http_stream *s)
{
    pthread_mutex_lock(&s->lock);
    int left = --s->refs;
    pthread_mutex_unlock(&s->lock);
    if (left)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s->buf);
    free(s);
}

void http_stream_abandon(http_stream *s)
{
    http_stream_set *set = s->set;
    pthread_mutex_lock(&set->lock);
    if (s->prev)
        s->prev->next = s->next;
    else
        set->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    pthread_mutex_unlock(&set->lock);
    pthread_mutex_lock(&s->lock);
    s->gone = 1;
    pthread_mutex_unlock(&s->lock);
    drop(s);
}

/* libmicrohttpd asks for bytes: what waits, the end, or none for now (the
 * connection is then suspended until a send or the server's stop). */
static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    http_stream *s = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&s->lock);
    if (s->off < s->len) {
        size_t take = s->len - s->off < max ? s->len - s->off : max;
        memcpy(out, s->buf + s->off, take);
        s->off += take;
        if (s->off == s->len)
            s->off = s->len = 0;
        n = (ssize_t)take;
    } else if (s->ended) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        s->suspended = 1;
        s->mhd->MHD_suspend_connection(s->conn);
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

static void stream_free(void *cls) { http_stream_abandon(cls); }

struct MHD_Response *http_stream_response(http_stream *s, int status)
{
    struct MHD_Response *r =
        status != 200 ? NULL
                      : s->mhd->MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s,
                                                                  stream_free);
    if (!r)
        http_stream_abandon(s);
    return r;
}

int http_stream_send(http_stream *s, const char *data, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->ended || s->gone) {
        rc = -1;
    } else if (s->len - s->off + len > HTTP_STREAM_MAX_BUFFER) {
        s->ended = 1; /* a client that does not read: its stream ends */
        rc = -1;
    } else {
        if (s->off) { /* keep what waits at the start */
            memmove(s->buf, s->buf + s->off, s->len - s->off);
            s->len -= s->off;
            s->off = 0;
        }
        if (s->len + len > s->cap) {
            size_t cap = s->cap ? s->cap : 4096;
            while (cap < s->len + len)
                cap *= 2;
            char *grown = realloc(s->buf, cap);
            if (!grown) {
                s->ended = 1;
                rc = -1;
            } else {
                s->buf = grown;
                s->cap = cap;
            }
        }
        if (rc == 0) {
            memcpy(s->buf + s->len, data, len);
            s->len += len;
        }
    }
    wake(s); /* the bytes, or the end */
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void http_stream_end(http_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->ended = 1;
    wake(s);
    pthread_mutex_unlock(&s->lock);
}

int http_stream_alive(http_stream *s)
{
    pthread_mutex_lock(&s->lock);
    /* libmicrohttpd does not watch a suspended connection: its client's
     * close is seen here (the socket stays open while suspended). */
    if (!s->ended && !s->gone && s->suspended && s->fd >= 0) {
        struct pollfd p = {.fd = s->fd, .events = POLLRDHUP};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
            s->ended = 1;
            wake(s);
        }
    }
    int alive = !s->ended && !s->gone;
    pthread_mutex_unlock(&s->lock);
    return alive;
}

void http_stream_release(http_stream *s)
{
    if (s)
        drop(s);
}
