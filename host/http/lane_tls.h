/*
 * http/lane_tls.h - TLS for the lane's connections (GnuTLS, opened when a
 * host serves HTTPS, like libmicrohttpd, which brings the same library):
 * the server's certificate, and one non-blocking session per connection,
 * driven by the lane's epoll loop.
 *
 * Every call that moves bytes says 1 (done, or bytes moved), 0 (the socket
 * has no bytes or no room now: call again after the next epoll event) or
 * -1 (the peer closed or the session failed: close the connection).
 *
 * Threading: the certificate is shared (read-only after creation); a
 * session is used by its connection's loop alone.
 */
#ifndef LOOM_HTTP_LANE_TLS_H
#define LOOM_HTTP_LANE_TLS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "util/error.h"

typedef struct lane_tls lane_tls;
typedef struct lane_tls_session lane_tls_session;

/* The certificate chain and key, PEM: LOOM_E_INVALID naming what is wrong
 * with them, LOOM_E_UNAVAILABLE when GnuTLS cannot be loaded. */
loom_error *lane_tls_create(const char *cert_pem, const char *key_pem, lane_tls **out);
void lane_tls_free(lane_tls *t);

/* A server session on the connected socket fd (TLS 1.3 and 1.2, GnuTLS's
 * default priorities); NULL when out of memory. */
lane_tls_session *lane_tls_session_new(const lane_tls *t, int fd);
/* Sends a close_notify if there is room for it, and frees the session
 * (the socket stays open). */
void lane_tls_session_free(lane_tls_session *s);
/* An epoll edge said the socket has bytes: reads try it again (a short
 * read marks it empty until then). */
void lane_tls_readable(lane_tls_session *s);
/* 1 when the handshake is complete. */
int lane_tls_handshake(lane_tls_session *s);
/* Decrypted bytes into buf: their count, 0 when none are here now, -1 when
 * the peer closed or failed. */
ssize_t lane_tls_recv(lane_tls_session *s, char *buf, size_t cap);
/* Takes the iovecs' bytes (a reply's head and body) to be sent by
 * lane_tls_flush, in as few records as hold them: 0, or -1 when out of
 * memory. */
int lane_tls_queue(lane_tls_session *s, const struct iovec *iov, int n);
/* Sends what was queued, in one write when the socket has room for it: 1
 * when all went (or nothing was queued). */
int lane_tls_flush(lane_tls_session *s);

#endif
