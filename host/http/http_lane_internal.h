/*
 * http/http_lane_internal.h - the host's port in front of libmicrohttpd: a
 * fast lane for the requests that wait on another thread (inference).
 *
 * The lane accepts every connection on the host's port. A connection
 * whose request starts with one of the lane's prefixes (e.g.
 * "POST /dlim/v1/inference/") is parsed here (http-parser) and answered on
 * an epoll loop; on plain HTTP any other is handed to libmicrohttpd
 * untouched (the decision is made on peeked bytes, so nothing is
 * consumed). Over HTTPS the lane terminates TLS (http/lane_tls.h) on the
 * same loops, decides on the decrypted bytes, and relays any other request
 * to libmicrohttpd through a socket pair (http/lane_relay.h), for the rest
 * of the connection. Why: to wait
 * for a reply, libmicrohttpd suspends a connection, which takes it out of
 * its epoll set and puts it back on resume (two epoll_ctl per request), and
 * wakes its thread once per resumed connection. The lane keeps a socket in
 * its epoll set from accept to close (edge-triggered) and wakes a loop once
 * per batch of replies.
 *
 * Limits: the server's --max-connections and --max-connections-per-ip count
 * every connection the lane accepted, until it closes (a handed-over one
 * until libmicrohttpd closes it, a relayed one too); a
 * request's headers must fit in header_bytes (else 431), its body in
 * max_body (else 413), and arrive within header_timeout_s of its first
 * byte (else 408; over HTTPS the first request's from the accept, the
 * handshake included, and the connection closes without a reply); a
 * connection silent for idle_timeout_s while no reply is pending is
 * closed (a relayed one by libmicrohttpd's own timeout).
 *
 * Threading: `threads` loops, each its own epoll set; replies come from any
 * thread through http_pending_reply.
 */
#ifndef LOOM_HTTP_LANE_INTERNAL_H
#define LOOM_HTTP_LANE_INTERNAL_H

#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "http/http.h"
#include "http/lane_tls.h"

typedef struct http_lane http_lane;

/* Listens on addr and starts the loops; connections wait in the backlog
 * until http_lane_accept. With tls, every connection is HTTPS (kept by the
 * caller until http_lane_stop). LOOM_E_UNAVAILABLE when it cannot bind. */
loom_error *http_lane_start(http_server *srv, const struct sockaddr_in *addr, unsigned threads,
                            const lane_tls *tls, http_lane **out);
/* Starts taking connections: only once libmicrohttpd, to which the lane
 * hands every connection that is not its own, has started. */
loom_error *http_lane_accept(http_lane *l);
int http_lane_port(const http_lane *l);
/* Stops accepting and closes the lane's connections, keeping what
 * libmicrohttpd's callbacks use (the connection counts): between this and
 * http_lane_stop the daemon stops. */
void http_lane_halt(http_lane *l);
/* Halts (if not yet) and frees the lane. Every deferred request must have
 * been answered before. */
void http_lane_stop(http_lane *l);
/* libmicrohttpd took a connection handed to it (counted again) or closed
 * one (its count given back). */
void http_lane_hold(http_lane *l, uint32_t ipv4);
void http_lane_release(http_lane *l, uint32_t ipv4);

/* What the lane uses of the server (http/http.c). */
const http_config *http_server_config(const http_server *s);
/* Route, method and caller of a request, as for libmicrohttpd's: 0 with
 * *route set, or -1 with the refusal in res. */
int http_server_admit(http_server *s, http_request *req, http_response *res,
                      const http_route **route);
/* A refusal through the routes' error replier (http_config.reply_error):
 * its status comes from their table. The second frees err. */
void http_server_fail(const http_server *s, http_response *res, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void http_server_reply_error(const http_server *s, http_response *res, loom_error *err);
/* Gives a connection to libmicrohttpd; -1 (the socket closed) on failure. */
int http_server_adopt(http_server *s, int fd, const struct sockaddr *addr, socklen_t len);
/* A non-blocking listening socket on addr (SO_REUSEADDR, backlog
 * SOMAXCONN) with the port it got; LOOM_E_UNAVAILABLE naming why not. */
loom_error *http_listen(const struct sockaddr_in *addr, int *fd, int *port);
/* The Date header's text for this second (cached per thread). */
const char *http_date_now(void);
/* Dotted quad of an address, without inet_ntop's printf. */
void http_format_ipv4(struct in_addr addr, char out[16]);

#endif
