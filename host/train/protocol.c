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

int msg_listen(const char *name, char *err, size_t errlen)
{
    struct sockaddr_un a;
    socklen_t len = abstract_addr(name, &a);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "control socket @%s: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int msg_connect(const char *name, char *err, size_t errlen)
{
    struct sockaddr_un a;
    socklen_t len = abstract_addr(name, &a);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) != 0) {
        snprintf(err, errlen, "cannot reach the coordinator at @%s: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int write_all(int fd, const void *buf, size_t n)
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

int msg_send(int fd, const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);
    if (!text)
        return -1;
    size_t n = strlen(text);
    unsigned char head[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
                             (unsigned char)(n >> 24)};
    int rc = n > MSG_MAX_BYTES ? -1 : write_all(fd, head, 4) || write_all(fd, text, n) ? -1 : 0;
    free(text);
    return rc;
}

/* Reads exactly n bytes before the deadline. 0, or -1 with err. */
static int read_all(int fd, void *buf, size_t n, int64_t deadline_ms, char *err, size_t errlen)
{
    char *p = buf;
    while (n > 0) {
        int timeout = -1;
        if (deadline_ms > 0) {
            int64_t left = deadline_ms - time_mono_ms();
            if (left <= 0) {
                snprintf(err, errlen, "deadline");
                return -1;
            }
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue; /* re-check the deadline */
        ssize_t got = recv(fd, p, n, 0);
        if (got == 0) {
            snprintf(err, errlen, "closed");
            return -1;
        }
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            snprintf(err, errlen, "%s", strerror(errno));
            return -1;
        }
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

cJSON *msg_recv(int fd, int64_t deadline_ms, char *err, size_t errlen)
{
    unsigned char head[4];
    if (read_all(fd, head, 4, deadline_ms, err, errlen) != 0)
        return NULL;
    uint32_t n = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                 (uint32_t)head[3] << 24;
    if (n > MSG_MAX_BYTES) {
        snprintf(err, errlen, "message of %u bytes is over the limit", n);
        return NULL;
    }
    char *text = malloc((size_t)n + 1);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (read_all(fd, text, n, deadline_ms, err, errlen) != 0) {
        free(text);
        return NULL;
    }
    text[n] = 0;
    cJSON *msg = cJSON_ParseWithLength(text, n);
    free(text);
    if (!msg)
        snprintf(err, errlen, "malformed message");
    return msg;
}

int msg_send_blob(int fd, cJSON *msg, const void *blob, size_t len)
{
    cJSON_DeleteItemFromObjectCaseSensitive(msg, "blob");
    cJSON_AddNumberToObject(msg, "blob", (double)len);
    if (msg_send(fd, msg) != 0)
        return -1;
    return write_all(fd, blob, len);
}

int msg_recv_blob(int fd, const cJSON *msg, void *buf, size_t len, int64_t deadline_ms,
                  char *err, size_t errlen)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(msg, "blob");
    if (!cJSON_IsNumber(n) || (size_t)n->valuedouble != len) {
        snprintf(err, errlen, "expected %zu bytes after the message, it announces %.0f", len,
                 cJSON_IsNumber(n) ? n->valuedouble : 0.0);
        return -1;
    }
    return read_all(fd, buf, len, deadline_ms, err, errlen);
}
