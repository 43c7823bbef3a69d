/* train/protocol_link.c - the worker link over TCP (see protocol.h): the
 * link's setting, the coordinator's listening socket and the worker's
 * connection. Both ends turn Nagle off: the messages are small and each
 * waits for an answer. */
#include "train/protocol.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

loom_error *train_link_parse(const char *text, train_link *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text || !strcmp(text, "unix"))
        return NULL;
    int tls = !strncmp(text, "tls", 3);
    if ((strncmp(text, "tcp", 3) && !tls) || (text[3] && text[3] != ':') ||
        (text[3] == ':' && !text[4]))
        return loom_err(LOOM_E_INVALID,
                        "worker link: expected unix, tcp, tcp:ADDR, tls or tls:ADDR, got \"%s\"",
                        text);
    out->tcp = 1;
    out->tls = tls;
    if (!text[3])
        return NULL;
    const char *addr = text + 4;
    size_t n = strlen(addr);
    if (addr[0] == '[' && addr[n - 1] == ']') /* [V6] */
        addr++, n -= 2;
    if (n > TRAIN_LINK_ADDR_MAX)
        return loom_err(LOOM_E_TOO_LARGE, "worker link: the address is over %d bytes",
                        TRAIN_LINK_ADDR_MAX);
    memcpy(out->addr, addr, n);
    out->addr[n] = 0;
    return NULL;
}

static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int is_wildcard(const char *addr)
{
    return !*addr || !strcmp(addr, "0.0.0.0") || !strcmp(addr, "::");
}

int train_link_on_any_address(const train_link *link)
{
    return link->tcp && is_wildcard(link->addr);
}

loom_error *train_msg_listen_tcp(const train_link *link, int *out, char *control, size_t len)
{
    const char *addr = *link->addr ? link->addr : "0.0.0.0";
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *res = NULL;
    int rc = getaddrinfo(addr, "0", &hints, &res);
    if (rc != 0)
        return loom_err(LOOM_E_INVALID, "worker link tcp:%s: %s", addr, gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int family = res->ai_family;
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        loom_error *e = loom_err(LOOM_E_UNAVAILABLE, "worker link tcp:%s: %s", addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return e;
    }
    freeaddrinfo(res);
    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &blen);
    unsigned port = family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    /* Bound to every address: workers on this machine come by loopback. */
    const char *host = is_wildcard(addr) ? (family == AF_INET6 ? "::1" : "127.0.0.1") : addr;
    int v6 = strchr(host, ':') != NULL;
    snprintf(control, len, "%s:%s%s%s:%u", link->tls ? "tls" : "tcp", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    *out = fd;
    return NULL;
}

loom_error *train_msg_connect_tcp(const char *hostport, int *out)
{
    char host[TRAIN_LINK_ADDR_MAX + 1];
    const char *colon = strrchr(hostport, ':'), *h = hostport;
    size_t n = colon ? (size_t)(colon - hostport) : 0;
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
        h++, n -= 2;
    if (!colon || !n || n > TRAIN_LINK_ADDR_MAX || !colon[1])
        return loom_err(LOOM_E_INVALID, "--control: expected tcp:HOST:PORT, got tcp:%s", hostport);
    memcpy(host, h, n);
    host[n] = 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        return loom_err(LOOM_E_UNAVAILABLE, "cannot reach the coordinator at tcp:%s: %s", hostport,
                        gai_strerror(rc));
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return loom_err(LOOM_E_UNAVAILABLE, "cannot reach the coordinator at tcp:%s: %s", hostport,
                        strerror(err));
    no_delay(fd);
    *out = fd;
    return NULL;
}

void train_link_ready(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) == 0 && a.ss_family != AF_UNIX)
        no_delay(fd);
    /* A peer that stopped reading (stopped, hung, cut off) fails a send
     * instead of holding its sender, and the links' lock, for good. */
    struct timeval bound = {.tv_sec = LOOM_HEARTBEAT_TIMEOUT_MS / 1000,
                            .tv_usec = (LOOM_HEARTBEAT_TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
}
