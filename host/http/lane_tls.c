/* http/lane_tls.c - see lane_tls.h. */
#include "http/lane_tls.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/gnutls_dl.h"

static const gnutls_api *tls; /* set by lane_tls_create */

struct lane_tls {
    gnutls_certificate_credentials_t cred;
};

/* What one read takes from the socket: a record of 16 KiB and its framing. */
#define LANE_TLS_READ_AHEAD (16 * 1024 + 512)

struct lane_tls_session {
    gnutls_session_t s;
    int fd;
    int handshaken;
    /* GnuTLS reads a record's header and its body apart: the socket is
     * read ahead into here instead, one recv for as much as it holds */
    size_t ahead_at, ahead_len;
    int drained; /* a read came back short: the socket is empty until the next edge */
    char ahead[LANE_TLS_READ_AHEAD];
};

loom_error *lane_tls_create(const char *cert_pem, const char *key_pem, lane_tls **out)
{
    *out = NULL;
    loom_error *e = gnutls_dl_open(&tls);
    if (e)
        return e;
    lane_tls *t = calloc(1, sizeof *t);
    if (!t || tls->gnutls_certificate_allocate_credentials(&t->cred) != GNUTLS_E_SUCCESS) {
        free(t);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    gnutls_datum_t cert = {(unsigned char *)(uintptr_t)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t key = {(unsigned char *)(uintptr_t)key_pem, (unsigned)strlen(key_pem)};
    int rc = tls->gnutls_certificate_set_x509_key_mem(t->cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
        lane_tls_free(t);
        return loom_err(LOOM_E_INVALID,
                        "--tls-cert/--tls-key: not a PEM certificate chain and its private key "
                        "(%s)",
                        tls->gnutls_strerror(rc));
    }
    *out = t;
    return NULL;
}

void lane_tls_free(lane_tls *t)
{
    if (!t)
        return;
    if (t->cred)
        tls->gnutls_certificate_free_credentials(t->cred);
    free(t);
}

/* GnuTLS's reads, from the read-ahead buffer. */
static ssize_t pull(gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
    lane_tls_session *s = ptr;
    if (s->ahead_at == s->ahead_len) {
        if (s->drained) {
            errno = EAGAIN;
            return -1;
        }
        ssize_t got;
        do
            got = recv(s->fd, s->ahead, sizeof s->ahead, 0);
        while (got < 0 && errno == EINTR);
        if (got <= 0) {
            s->drained = got < 0 && errno == EAGAIN;
            return got;
        }
        s->ahead_at = 0;
        s->ahead_len = (size_t)got;
        s->drained = (size_t)got < sizeof s->ahead;
    }
    size_t take = s->ahead_len - s->ahead_at < n ? s->ahead_len - s->ahead_at : n;
    memcpy(buf, s->ahead + s->ahead_at, take);
    s->ahead_at += take;
    return (ssize_t)take;
}

/* Whether a read would find bytes: never waits (the loop is non-blocking). */
static int pull_ready(gnutls_transport_ptr_t ptr, unsigned ms)
{
    (void)ms;
    lane_tls_session *s = ptr;
    if (s->ahead_at < s->ahead_len)
        return 1;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    return poll(&p, 1, 0);
}

void lane_tls_readable(lane_tls_session *s) { s->drained = 0; }

lane_tls_session *lane_tls_session_new(const lane_tls *t, int fd)
{
    lane_tls_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    /* NO_SIGNAL: a peer gone is an error on send (MSG_NOSIGNAL), not SIGPIPE */
    if (tls->gnutls_init(&s->s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) != GNUTLS_E_SUCCESS) {
        free(s);
        return NULL;
    }
    if (tls->gnutls_set_default_priority(s->s) < 0 ||
        tls->gnutls_credentials_set(s->s, GNUTLS_CRD_CERTIFICATE, t->cred) < 0) {
        tls->gnutls_deinit(s->s);
        free(s);
        return NULL;
    }
    /* sends through GnuTLS's own (sendmsg, MSG_NOSIGNAL); reads through pull */
    s->fd = fd;
    tls->gnutls_transport_set_int2(s->s, fd, fd);
    tls->gnutls_transport_set_ptr2(s->s, s, (gnutls_transport_ptr_t)(intptr_t)fd);
    tls->gnutls_transport_set_pull_function(s->s, pull);
    tls->gnutls_transport_set_pull_timeout_function(s->s, pull_ready);
    return s;
}

void lane_tls_session_free(lane_tls_session *s)
{
    if (!s)
        return;
    if (s->handshaken) /* one try: a socket without room for it is closed anyway */
        tls->gnutls_bye(s->s, GNUTLS_SHUT_WR);
    tls->gnutls_deinit(s->s);
    free(s);
}

int lane_tls_handshake(lane_tls_session *s)
{
    if (s->handshaken)
        return 1;
    for (;;) {
        int rc = tls->gnutls_handshake(s->s);
        if (rc == GNUTLS_E_SUCCESS) {
            s->handshaken = 1;
            return 1;
        }
        if (rc == GNUTLS_E_INTERRUPTED)
            continue;
        /* a warning alert (not fatal) is a handshake that cannot go on either */
        return rc == GNUTLS_E_AGAIN ? 0 : -1;
    }
}

ssize_t lane_tls_recv(lane_tls_session *s, char *buf, size_t cap)
{
    for (int skipped = 0; skipped < 16; skipped++) {
        ssize_t n = tls->gnutls_record_recv(s->s, buf, cap);
        if (n > 0)
            return n;
        if (n == 0) /* close_notify */
            return -1;
        if (n == GNUTLS_E_AGAIN)
            return 0;
        /* a rehandshake request or a warning alert: not bytes, not an end */
        if (!tls->gnutls_error_is_fatal((int)n) && n != GNUTLS_E_PREMATURE_TERMINATION)
            continue;
        return -1;
    }
    return -1; /* a peer that sends nothing but alerts */
}

int lane_tls_queue(lane_tls_session *s, const struct iovec *iov, int n)
{
    /* corked, a send only copies into GnuTLS's buffer: the flush makes
     * records of it all */
    tls->gnutls_record_cork(s->s);
    for (int i = 0; i < n; i++) {
        if (!iov[i].iov_len)
            continue;
        ssize_t took = tls->gnutls_record_send(s->s, iov[i].iov_base, iov[i].iov_len);
        if (took < 0 || (size_t)took != iov[i].iov_len)
            return -1;
    }
    return 0;
}

int lane_tls_flush(lane_tls_session *s)
{
    int rc = tls->gnutls_record_uncork(s->s, 0);
    if (rc >= 0)
        return 1;
    return rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED ? 0 : -1;
}
