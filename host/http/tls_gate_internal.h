/*
 * http/tls_gate_internal.h - the HTTPS port's door: what the lane does for
 * plain HTTP, for the connections libmicrohttpd serves over TLS, where the
 * headers cannot be looked at before the TLS layer.
 *
 * The gate accepts every connection on the HTTPS port, counts it against
 * --max-connections and --max-connections-per-ip (with the lane's rule when
 * every connection is taken: a client from an address holding fewer takes
 * the place of the unfinished connection that has waited longest, of the
 * address holding the most), and hands it to libmicrohttpd at once. The
 * first time libmicrohttpd has a connection's request headers in full, the
 * server says so (tls_gate_headers_done); a connection whose headers are
 * not complete within header_timeout_s of its accept is shut down (both
 * ways: libmicrohttpd then closes it), however steadily it trickles.
 * Checked once a second, on the gate's own thread.
 *
 * Threading: the gate's thread accepts and sweeps; headers_done and closed
 * come from libmicrohttpd's threads. One mutex guards the table; an entry
 * leaves it when libmicrohttpd says the connection closed (before it closes
 * the socket), and the gate shuts a descriptor down only while its peer is
 * still the connection's, so a descriptor reused meanwhile is never hit.
 */
#ifndef LOOM_HTTP_TLS_GATE_INTERNAL_H
#define LOOM_HTTP_TLS_GATE_INTERNAL_H

#include <netinet/in.h>

#include "http/http_lane_internal.h"

typedef struct tls_gate tls_gate;

/* Listens on addr; connections wait in the backlog until tls_gate_accept.
 * LOOM_E_UNAVAILABLE when it cannot bind. */
loom_error *tls_gate_start(http_server *srv, const struct sockaddr_in *addr, tls_gate **out);
/* Starts the gate's thread: only once libmicrohttpd has started. */
loom_error *tls_gate_accept(tls_gate *g);
int tls_gate_port(const tls_gate *g);
/* libmicrohttpd has the headers of a request on fd: its deadline is met. */
void tls_gate_headers_done(tls_gate *g, int fd);
/* libmicrohttpd closes fd: its count is given back. */
void tls_gate_closed(tls_gate *g, int fd);
/* Stops accepting and the thread (the table stays for libmicrohttpd's
 * callbacks); then, after libmicrohttpd stopped, tls_gate_stop frees. */
void tls_gate_halt(tls_gate *g);
void tls_gate_stop(tls_gate *g);

#endif
