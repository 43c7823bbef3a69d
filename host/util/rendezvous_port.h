/* util/rendezvous_port.h - the TCP port a launch-style job's workers meet
 * on (MASTER_PORT). It is chosen by the host, yet bound only later, by the
 * job's rank 0, maybe on another node: a port from the kernel's ephemeral
 * range can be taken in between by any outgoing connection, even by
 * another rank's own attempts to connect to it (a TCP self-connect), and
 * rank 0 then fails with "Address already in use". So the port comes from
 * below that range, where only an explicit bind takes a port. */
#ifndef LOOM_UTIL_RENDEZVOUS_PORT_H
#define LOOM_UTIL_RENDEZVOUS_PORT_H

/* The lowest port a rendezvous port is taken from. */
#define RENDEZVOUS_PORT_MIN 10000

/* The low end of the ephemeral range from the text of
 * /proc/sys/net/ipv4/ip_local_port_range ("32768\t60999"); -1 when the
 * text is not two ports in order. */
int rendezvous_ephemeral_low(const char *range_text);

/* A port that nothing on this machine listens on now, below the ephemeral
 * range (in [RENDEZVOUS_PORT_MIN, low)), at random so that two jobs do not
 * pick the same one. When the range leaves no room below it (or cannot be
 * read) the port is one the kernel hands out. Returns 0 when no port could
 * be bound at all. */
int rendezvous_port_pick(void);

#endif
