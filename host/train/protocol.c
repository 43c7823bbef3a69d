/* train/protocol.c - see protocol.h. */
#include "train/protocol.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/fs.h"

static socklen_t abstract_addr(const char *name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n > sizeof a->sun_path - 2)
        n = sizeof a->sun_path - 2;
    memcpy(a->sun_path + 1, name, n); /* sun_path[0] = 0: abstract */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

loom_error *train_msg_listen(const char *name, int *out)
{
    struct sockaddr_un a;
    socklen_t len = abstract_addr(name, &a);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 64) != 0) {
        loom_error *e = loom_err(LOOM_E_UNAVAILABLE, "control socket @%s: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return e;
    }
    *out = fd;
    return NULL;
}

static loom_error *connect_abstract(const char *name, int *out)
{
    struct sockaddr_un a;
    socklen_t len = abstract_addr(name, &a);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) != 0) {
        loom_error *e = loom_err(LOOM_E_UNAVAILABLE, "cannot reach the coordinator at @%s: %s",
                                 name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return e;
    }
    *out = fd;
    return NULL;
}

loom_error *train_msg_connect(const char *control, int *out)
{
    if (!strncmp(control, "tcp:", 4))
        return train_msg_connect_tcp(control + 4, out);
    if (!strncmp(control, "tls:", 4))
        return loom_err(LOOM_E_INVALID, "--control %s: a TLS link is reached with the exec's "
                        "secret (train_tls_wrap)", control);
    return connect_abstract(control, out);
}

int train_msg_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Exactly n bytes before deadline_ms. `within`: a message has begun (or
 * begins with the first byte read here): its sender writes it whole at
 * once, so a pause of LOOM_HEARTBEAT_TIMEOUT_MS in it means the sender is
 * lost (stopped, cut off mid-message), and the read ends there rather than
 * at a deadline meant for waiting on a whole step. */
static loom_error *read_bytes(int fd, void *buf, size_t n, int64_t deadline_ms, int within)
{
    char *p = buf;
    int64_t stall_at = within ? time_mono_ms() + LOOM_HEARTBEAT_TIMEOUT_MS : 0;
    while (n > 0) {
        int64_t until = deadline_ms;
        if (stall_at && (!until || stall_at < until))
            until = stall_at;
        int timeout = -1;
        if (until > 0) {
            int64_t left = until - time_mono_ms();
            if (left <= 0 && until == stall_at)
                return loom_err(LOOM_E_DEADLINE, "nothing for %d s in the middle of a message",
                                LOOM_HEARTBEAT_TIMEOUT_MS / 1000);
            if (left <= 0)
                return loom_err(LOOM_E_DEADLINE, "deadline");
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue; /* re-check the deadline */
        ssize_t got = recv(fd, p, n, 0);
        if (got == 0)
            return loom_err(LOOM_E_UNAVAILABLE, "closed");
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return loom_err(LOOM_E_UNAVAILABLE, "%s", strerror(errno));
        }
        p += got;
        n -= (size_t)got;
        stall_at = time_mono_ms() + LOOM_HEARTBEAT_TIMEOUT_MS;
    }
    return NULL;
}

loom_error *train_msg_read_exact(int fd, void *buf, size_t n, int64_t deadline_ms)
{
    return read_bytes(fd, buf, n, deadline_ms, 0);
}

loom_error *train_msg_send(int fd, const msg *m, const void *blob, size_t len)
{
    cJSON *doc = train_msg_encode(m);
    if (doc && blob)
        cJSON_AddNumberToObject(doc, "blob", (double)len);
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON_Delete(doc);
    if (!text)
        return loom_err(LOOM_E_INTERNAL, "out of memory encoding a %s message", train_msg_kind_name(m->kind));
    size_t n = strlen(text);
    unsigned char head[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
                             (unsigned char)(n >> 24)};
    loom_error *e = NULL;
    if (n > MSG_MAX_BYTES)
        e = loom_err(LOOM_E_TOO_LARGE, "a %s message of %zu bytes is over the limit",
                     train_msg_kind_name(m->kind), n);
    else if (train_msg_write_all(fd, head, 4) || train_msg_write_all(fd, text, n) ||
             (blob && train_msg_write_all(fd, blob, len)))
        e = loom_err(LOOM_E_UNAVAILABLE, "control connection lost: %s", strerror(errno));
    free(text);
    return e;
}

loom_error *train_msg_recv(int fd, int64_t deadline_ms, msg *out)
{
    memset(out, 0, sizeof *out);
    unsigned char head[4];
    loom_error *e = read_bytes(fd, head, 4, deadline_ms, 0);
    if (e)
        return e;
    uint32_t n = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                 (uint32_t)head[3] << 24;
    if (n > MSG_MAX_BYTES)
        return loom_err(LOOM_E_TOO_LARGE, "message of %u bytes is over the limit", n);
    char *text = malloc((size_t)n + 1);
    if (!text)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    if ((e = read_bytes(fd, text, n, deadline_ms, 1))) {
        free(text);
        return e;
    }
    text[n] = 0;
    cJSON *doc = cJSON_ParseWithLength(text, n);
    free(text);
    if (!doc)
        return loom_err(LOOM_E_INVALID, "malformed message: not JSON");
    return train_msg_decode(doc, out);
}

loom_error *train_msg_recv_blob(int fd, const msg *m, void *buf, size_t len, int64_t deadline_ms)
{
    if (m->blob != len)
        return loom_err(LOOM_E_INVALID, "expected %zu bytes after the message, it announces %llu",
                        len, (unsigned long long)m->blob);
    return read_bytes(fd, buf, len, deadline_ms, 1);
}
