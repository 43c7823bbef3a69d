/* util/rendezvous_port.c - see rendezvous_port.h. */
#include "util/rendezvous_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define RANGE_FILE "/proc/sys/net/ipv4/ip_local_port_range"
#define PICK_TRIES 64

int rendezvous_ephemeral_low(const char *range_text)
{
    char *end;
    long low = strtol(range_text, &end, 10);
    if (end == range_text || low < 1 || low > 65535)
        return -1;
    const char *rest = end;
    long high = strtol(rest, &end, 10);
    if (end == rest || high < low || high > 65535)
        return -1;
    return (int)low;
}

static int ephemeral_low_now(void)
{
    char text[64] = "";
    FILE *f = fopen(RANGE_FILE, "re");
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return rendezvous_ephemeral_low(text);
}

/* Binds `port` (0: the kernel's choice) on every address, as rank 0 will;
 * returns the port bound or 0. */
static int try_bind(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
                            .sin_port = htons((uint16_t)port)};
    socklen_t len = sizeof a;
    int got = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    close(fd);
    return got;
}

int rendezvous_port_pick(void)
{
    int low = ephemeral_low_now();
    if (low > RENDEZVOUS_PORT_MIN) {
        for (int i = 0; i < PICK_TRIES; i++) {
            unsigned r = 0;
            if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
                break;
            int got = try_bind(RENDEZVOUS_PORT_MIN + (int)(r % (unsigned)(low - RENDEZVOUS_PORT_MIN)));
            if (got)
                return got;
        }
    }
    return try_bind(0);
}
