/*
 * http/lane_relay.h - a connection the lane does not answer itself after
 * it read some of it, handed to libmicrohttpd through a socket pair: the
 * lane writes what the client sends (decrypted, over HTTPS) to its end,
 * and sends the client what libmicrohttpd replies. Why: the client's
 * socket cannot be given to libmicrohttpd once bytes were read from it, or
 * ever over HTTPS (the session's state is the lane's); libmicrohttpd
 * serves the other end as a plain connection, with the client's address.
 *
 * Not thread-safe: one connection's loop drives it, on edge-triggered
 * events of either socket.
 */
#ifndef LOOM_HTTP_LANE_RELAY_H
#define LOOM_HTTP_LANE_RELAY_H

#include <stddef.h>

#include "http/lane_tls.h"

typedef struct lane_relay lane_relay;

/* A relay whose first bytes for libmicrohttpd are `first` (what the lane
 * read of the request); *peer_fd is the end to give libmicrohttpd. NULL
 * when out of memory or descriptors. */
lane_relay *lane_relay_open(const char *first, size_t n, int *peer_fd);
/* The lane's end, for its epoll set. */
int lane_relay_fd(const lane_relay *r);
/* Moves bytes both ways (through tls, or plain on client_fd when NULL) until neither can move without waiting: 1 to wait
 * for the next event, 0 when the connection is over (either side closed or
 * failed; what libmicrohttpd replied before it closed has gone out). */
int lane_relay_pump(lane_relay *r, lane_tls_session *tls, int client_fd);
/* Closes the lane's end and frees. */
void lane_relay_close(lane_relay *r);

#endif
