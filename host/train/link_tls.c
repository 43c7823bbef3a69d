/* train/link_tls.c - see link_tls.h. */
#include "train/link_tls.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/gnutls_dl.h"

/* TLS 1.3 alone, and only the key exchanges that pair the key with an
 * ephemeral (EC)DH (no plain PSK: forward secrecy). */
#define LINK_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK"
/* The PSK identity: one key per exec, so the name carries nothing. */
#define LINK_PSK_IDENTITY "loom-worker"
/* What one pass moves: a TLS record's worth. */
#define LINK_CHUNK (16 * 1024)
/* The link's threads hold a chunk each on their stacks, nothing deep. */
#define LINK_THREAD_STACK (256 * 1024)

static const gnutls_api *gt; /* opened once; the same table every time */

typedef struct tls_link {
    gnutls_session_t session;
    gnutls_psk_server_credentials_t server_cred;
    gnutls_psk_client_credentials_t client_cred;
    int tcp_fd;
    int inner_fd;        /* the link's end of the socketpair */
    atomic_int users;    /* threads using the link: the last one frees it */
    uint8_t key[TRAIN_SECRET_BYTES]; /* until the handshake is done */
} tls_link;

static void link_release(tls_link *l)
{
    if (atomic_fetch_sub(&l->users, 1) != 1)
        return;
    if (l->session)
        gt->gnutls_deinit(l->session);
    if (l->server_cred)
        gt->gnutls_psk_free_server_credentials(l->server_cred);
    if (l->client_cred)
        gt->gnutls_psk_free_client_credentials(l->client_cred);
    if (l->tcp_fd >= 0)
        close(l->tcp_fd);
    if (l->inner_fd >= 0)
        close(l->inner_fd);
    sodium_memzero(l->key, sizeof l->key);
    free(l);
}

/* The coordinator's side: the key for the worker's identity (GnuTLS frees
 * it with its own allocator). */
static int coordinator_key(gnutls_session_t s, const char *identity, gnutls_datum_t *key)
{
    tls_link *l = gt->gnutls_session_get_ptr(s);
    if (strcmp(identity, LINK_PSK_IDENTITY) != 0)
        return -1;
    key->data = (*gt->gnutls_malloc)(TRAIN_SECRET_BYTES);
    if (!key->data)
        return -1;
    memcpy(key->data, l->key, TRAIN_SECRET_BYTES);
    key->size = TRAIN_SECRET_BYTES;
    return 0;
}

static loom_error *session_new(tls_link *l, train_tls_side side)
{
    unsigned flags = (side == TRAIN_TLS_COORDINATOR ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_SIGNAL;
    int rc = gt->gnutls_init(&l->session, flags);
    if (rc < 0) {
        l->session = NULL;
        return loom_err(LOOM_E_INTERNAL, "worker link: TLS session: %s", gt->gnutls_strerror(rc));
    }
    rc = gt->gnutls_priority_set_direct(l->session, LINK_PRIORITIES, NULL);
    if (rc >= 0 && side == TRAIN_TLS_COORDINATOR) {
        rc = gt->gnutls_psk_allocate_server_credentials(&l->server_cred);
        if (rc >= 0) {
            gt->gnutls_psk_set_server_credentials_function(l->server_cred, coordinator_key);
            gt->gnutls_session_set_ptr(l->session, l);
            rc = gt->gnutls_credentials_set(l->session, GNUTLS_CRD_PSK, l->server_cred);
        }
    } else if (rc >= 0) {
        gnutls_datum_t key = {l->key, TRAIN_SECRET_BYTES};
        rc = gt->gnutls_psk_allocate_client_credentials(&l->client_cred);
        if (rc >= 0)
            rc = gt->gnutls_psk_set_client_credentials(l->client_cred, LINK_PSK_IDENTITY, &key,
                                                       GNUTLS_PSK_KEY_RAW);
        if (rc >= 0)
            rc = gt->gnutls_credentials_set(l->session, GNUTLS_CRD_PSK, l->client_cred);
    }
    if (rc < 0)
        return loom_err(LOOM_E_INTERNAL, "worker link: TLS settings: %s", gt->gnutls_strerror(rc));
    gt->gnutls_transport_set_int2(l->session, l->tcp_fd, l->tcp_fd);
    gt->gnutls_handshake_set_timeout(l->session, TRAIN_TLS_HANDSHAKE_MS);
    return NULL;
}

static int start_detached(void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, LINK_THREAD_STACK);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

/* Owner -> peer: what the owner writes, sealed. The owner's close ends the
 * session (close_notify), and the receiving thread with it. */
static void *link_send(void *arg)
{
    tls_link *l = arg;
    char buf[LINK_CHUNK];
    int owner_closed = 0;
    for (;;) {
        ssize_t n = recv(l->inner_fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            owner_closed = n == 0;
            break;
        }
        ssize_t off = 0;
        while (off < n) {
            /* AGAIN is the socket's send timeout (train_link_ready): the
             * peer stopped reading, which the link takes as its end */
            ssize_t w = gt->gnutls_record_send(l->session, buf + off, (size_t)(n - off));
            if (w == GNUTLS_E_INTERRUPTED)
                continue;
            if (w < 0)
                goto out;
            off += w;
        }
    }
out:
    if (owner_closed)
        gt->gnutls_bye(l->session, GNUTLS_SHUT_WR);
    shutdown(l->tcp_fd, SHUT_RDWR); /* the receiving thread's read ends */
    link_release(l);
    return NULL;
}

/* The handshake, then peer -> owner: what arrives, opened. The peer's end
 * (or a failed record: forged, cut) shows the owner an end of stream. */
static void *link_main(void *arg)
{
    tls_link *l = arg;
    int rc;
    do
        rc = gt->gnutls_handshake(l->session);
    while (rc == GNUTLS_E_INTERRUPTED || rc == GNUTLS_E_AGAIN);
    sodium_memzero(l->key, sizeof l->key);
    if (rc >= 0) {
        atomic_fetch_add(&l->users, 1);
        if (start_detached(link_send, l) != 0) {
            atomic_fetch_sub(&l->users, 1);
            rc = -1;
        }
    }
    char buf[LINK_CHUNK];
    while (rc >= 0) {
        ssize_t n = gt->gnutls_record_recv(l->session, buf, sizeof buf);
        if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_AGAIN)
            continue;
        if (n <= 0 || train_msg_write_all(l->inner_fd, buf, (size_t)n) != 0)
            break;
    }
    /* the owner reads what was passed on, then the end; the sending
     * thread's read of the owner ends too */
    shutdown(l->inner_fd, SHUT_RDWR);
    link_release(l);
    return NULL;
}

loom_error *train_tls_wrap(int tcp_fd, train_tls_side side,
                           const uint8_t secret[TRAIN_SECRET_BYTES], int *plain)
{
    *plain = -1;
    int pair[2] = {-1, -1};
    tls_link *l = NULL;
    loom_error *e = gnutls_dl_open(&gt);
    if (e)
        e = loom_err_wrap(e, "worker link: TLS");
    else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        e = loom_err(LOOM_E_UNAVAILABLE, "worker link: socketpair: %s", strerror(errno));
    else if (!(l = calloc(1, sizeof *l)))
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    if (e) {
        close(tcp_fd);
        if (pair[0] >= 0)
            close(pair[0]), close(pair[1]);
        return e;
    }
    l->tcp_fd = tcp_fd;
    l->inner_fd = pair[1];
    atomic_init(&l->users, 1);
    memcpy(l->key, secret, TRAIN_SECRET_BYTES);
    e = session_new(l, side);
    if (!e && start_detached(link_main, l) != 0)
        e = loom_err(LOOM_E_UNAVAILABLE, "worker link: no thread for its TLS: %s", strerror(errno));
    if (e) {
        link_release(l);
        close(pair[0]);
        return e;
    }
    *plain = pair[0];
    return NULL;
}
