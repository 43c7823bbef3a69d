/* http/lane_relay.c - see lane_relay.h. */
#include "http/lane_relay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One TLS record's worth of plaintext each way. */
#define RELAY_CHUNK (16 * 1024)

struct lane_relay {
    int fd;
    char *up;                /* from the client, not yet written to fd */
    size_t up_len, up_off, up_cap;
    char down[RELAY_CHUNK];  /* from libmicrohttpd */
    size_t down_len, down_off; /* plain: what is left of it to send */
    int flushing;            /* TLS: what was read from fd is queued on the session, not all sent */
};

lane_relay *lane_relay_open(const char *first, size_t n, int *peer_fd)
{
    *peer_fd = -1;
    lane_relay *r = calloc(1, sizeof *r);
    int fds[2];
    if (!r)
        return NULL;
    r->up_cap = n > RELAY_CHUNK ? n : RELAY_CHUNK;
    r->up = malloc(r->up_cap);
    if (!r->up || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
        free(r->up);
        free(r);
        return NULL;
    }
    memcpy(r->up, first, n);
    r->up_len = n;
    r->fd = fds[0];
    *peer_fd = fds[1];
    return r;
}

int lane_relay_fd(const lane_relay *r) { return r->fd; }

/* Client to libmicrohttpd: 1 when bytes moved, 0 when it must wait, -1
 * when the client is gone. */
static int move_up(lane_relay *r, lane_tls_session *tls, int client_fd)
{
    if (r->up_off == r->up_len) {
        ssize_t n = tls ? lane_tls_recv(tls, r->up, r->up_cap) : recv(client_fd, r->up, r->up_cap, 0);
        if (!tls && n < 0)
            return errno == EAGAIN ? 0 : errno == EINTR ? 1 : -1;
        if (n <= 0)
            return !tls && n == 0 ? -1 : (int)n;
        r->up_len = (size_t)n;
        r->up_off = 0;
        return 1;
    }
    ssize_t w = send(r->fd, r->up + r->up_off, r->up_len - r->up_off, MSG_NOSIGNAL);
    if (w < 0)
        return errno == EAGAIN ? 0 : errno == EINTR ? 1 : -1;
    r->up_off += (size_t)w;
    if (r->up_off == r->up_len)
        r->up_off = r->up_len = 0;
    return 1;
}

/* libmicrohttpd to the client: the same, -1 when either side is done. */
static int move_down(lane_relay *r, lane_tls_session *tls, int client_fd)
{
    if (!tls && r->down_off < r->down_len) {
        ssize_t w = send(client_fd, r->down + r->down_off, r->down_len - r->down_off, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN ? 0 : errno == EINTR ? 1 : -1;
        r->down_off += (size_t)w;
        return 1;
    }
    if (r->flushing) {
        int f = lane_tls_flush(tls);
        r->flushing = f == 0;
        return f;
    }
    ssize_t n = recv(r->fd, r->down, sizeof r->down, 0);
    if (n < 0)
        return errno == EAGAIN ? 0 : errno == EINTR ? 1 : -1;
    if (n == 0) /* libmicrohttpd closed, after all it sent went out */
        return -1;
    if (!tls) {
        r->down_len = (size_t)n;
        r->down_off = 0;
        return 1;
    }
    struct iovec v = {r->down, (size_t)n};
    if (lane_tls_queue(tls, &v, 1) != 0)
        return -1;
    r->flushing = 1;
    return 1;
}

int lane_relay_pump(lane_relay *r, lane_tls_session *tls, int client_fd)
{
    /* each way stops only on "would block", so an edge comes for it later */
    for (;;) {
        int up = move_up(r, tls, client_fd);
        int down = move_down(r, tls, client_fd);
        if (up < 0 || down < 0)
            return 0;
        if (!up && !down)
            return 1;
    }
}

void lane_relay_close(lane_relay *r)
{
    if (!r)
        return;
    close(r->fd);
    free(r->up);
    free(r);
}
