/* util/rendezvous_port: a launch-style job's MASTER_PORT comes from below
 * the kernel's ephemeral range, so that no outgoing connection (a rank's
 * own connect attempts included) can take it before rank 0 binds it; and
 * it is free when picked. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "util/rendezvous_port.h"

static void range_text(void)
{
    CHECK(rendezvous_ephemeral_low("32768\t60999\n") == 32768);
    CHECK(rendezvous_ephemeral_low("1024 65535") == 1024);
    CHECK(rendezvous_ephemeral_low("") == -1);
    CHECK(rendezvous_ephemeral_low("60999 32768") == -1); /* out of order */
    CHECK(rendezvous_ephemeral_low("32768") == -1);
    CHECK(rendezvous_ephemeral_low("0 100") == -1);
    CHECK(rendezvous_ephemeral_low("70000 80000") == -1);
}

static int bindable(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
                            .sin_port = htons((uint16_t)port)};
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static void below_the_ephemeral_range(void)
{
    char text[64] = "";
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    CHECK(f != NULL);
    if (!f)
        return;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    int low = rendezvous_ephemeral_low(text);
    CHECK(low > 0);
    if (low <= RENDEZVOUS_PORT_MIN) {
        printf("NOTE: ephemeral range starts at %d: no room below it to test\n", low);
        return;
    }
    int distinct = 0, last = -1;
    for (int i = 0; i < 100; i++) {
        int port = rendezvous_port_pick();
        CHECK_MSG(port >= RENDEZVOUS_PORT_MIN && port < low,
                  "port %d is not in [%d, %d)", port, RENDEZVOUS_PORT_MIN, low);
        CHECK_MSG(bindable(port), "port %d was picked yet cannot be bound", port);
        distinct += port != last;
        last = port;
    }
    CHECK(distinct > 50); /* at random: two jobs seldom meet on one port */
}

int main(void)
{
    range_text();
    below_the_ephemeral_range();
    return CHECK_DONE();
}
