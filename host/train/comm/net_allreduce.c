/*
 * train/comm/net_allreduce.c - see net_allreduce.h: a group's sockets and
 * the handshake that links and authenticates the ring. The all-reduce
 * itself is net_allreduce_ring.c.
 */
#include "net_allreduce_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm.h"
#include "util/error.h"

#define CONNECT_RETRY_MS 10
#define MAGIC "LOOMNAR1"
#define MAGIC_BYTES 8u
#define NONCE_BYTES 32u
#define HELLO_BYTES (MAGIC_BYTES + 12u + NONCE_BYTES)
#define PROOF_LABEL "loom net all-reduce proof v1"
#define ACK_BYTE 'K'

/* One peer's side of a hello: who it says it is and its fresh nonce. */
typedef struct hello {
    uint32_t rank, world, generation;
    uint8_t nonce[NONCE_BYTES];
} hello;


/* ---- waiting on sockets with a deadline -------------------------------- */

int comm_net_ms_until(uint64_t deadline_ns)
{
    uint64_t now = comm_now_ns();
    if (now >= deadline_ns)
        return -1;
    uint64_t ms = (deadline_ns - now + 999999u) / 1000000u;
    return ms > 1000000u ? 1000000 : (int)ms;
}

/* Waits for `events` on fd: 1 ready (or an error the next call shows),
 * 0 the deadline passed. */
static int wait_fd(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        int timeout = comm_net_ms_until(deadline_ns);
        if (timeout < 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, timeout);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 1; /* let the I/O call report it */
    }
}

loom_error *comm_net_peer_gone(uint32_t rank, int errnum, const char *during)
{
    if (errnum == 0)
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "net all-reduce: rank %u closed its link during %s", rank, during);
    return loom_err_sys(LOOM_ERR_UNAVAILABLE, errnum,
                        "net all-reduce: the link with rank %u failed during %s", rank, during);
}

loom_error *comm_net_peer_late(uint32_t rank, const char *during)
{
    return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                    "net all-reduce: rank %u did not answer before the deadline during %s",
                    rank, during);
}

static loom_error *write_all(int fd, const void *buf, size_t len, uint32_t rank,
                             const char *during, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_fd(fd, POLLOUT, deadline_ns))
                return comm_net_peer_late(rank, during);
        } else {
            return comm_net_peer_gone(rank, n < 0 ? errno : 0, during);
        }
    }
    return NULL;
}

static loom_error *read_all(int fd, void *buf, size_t len, uint32_t rank, const char *during,
                            uint64_t deadline_ns)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!wait_fd(fd, POLLIN, deadline_ns))
                return comm_net_peer_late(rank, during);
        } else {
            return comm_net_peer_gone(rank, n < 0 ? errno : 0, during);
        }
    }
    return NULL;
}

/* ---- sockets ----------------------------------------------------------- */

static loom_error *resolve(const char *address, uint16_t port, struct sockaddr_storage *out,
                           socklen_t *len)
{
    char service[8];
    snprintf(service, sizeof(service), "%u", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(address, service, &hints, &res);
    if (rc != 0 || res == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: address '%s': expected a numeric IPv4 or IPv6 "
                        "address (%s)",
                        address, gai_strerror(rc));
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return NULL;
}

/* Options every link socket gets before it connects or listens. Buffer
 * sizes are left to the kernel's autotuning, which grows them to
 * net.ipv4.tcp_[rw]mem's maximum (32 MB receive on Debian): SO_RCVBUF
 * would cap them at net.core.rmem_max (4 MB) and stop the tuning; on the
 * lab's 2 nodes autotuned links ran 5-35 % faster in 6 of 6 paired runs. */
static void tune_socket(int fd, uint32_t link_timeout_ms)
{
    int one = 1;
    int timeout = (int)link_timeout_ms;
    int idle = 1, interval = 1, probes = (int)(link_timeout_ms / 1000u) + 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A cut link: unacknowledged data, or unanswered keepalives while this
     * side only receives, drop the connection after link_timeout_ms. */
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

/* The listening socket of a listener, or of a group that owns one. */
struct comm_net_listener {
    int fd;
    uint16_t port;
    uint32_t link_timeout_ms;
};

loom_error *comm_net_listener_open(const char *bind_address, uint32_t link_timeout_ms,
                                   comm_net_listener **out)
{
    *out = NULL;
    if (bind_address == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "net all-reduce: no bind address");
    if (sodium_init() < 0)
        return loom_err(LOOM_ERR_INTERNAL, "net all-reduce: libsodium failed to start");
    struct sockaddr_storage addr;
    socklen_t len = 0;
    loom_error *err = resolve(bind_address, 0, &addr, &len);
    if (err)
        return err;
    comm_net_listener *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return loom_err(LOOM_ERR_INTERNAL, "net all-reduce: out of memory");
    l->link_timeout_ms = link_timeout_ms ? link_timeout_ms : COMM_NET_DEFAULT_LINK_TIMEOUT_MS;
    l->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        err = loom_err_sys(LOOM_ERR_INTERNAL, errno, "net all-reduce: socket");
        goto fail;
    }
    tune_socket(l->fd, l->link_timeout_ms); /* accepted sockets inherit it */
    if (bind(l->fd, (struct sockaddr *)&addr, len) != 0 || listen(l->fd, 16) != 0) {
        err = loom_err_sys(LOOM_ERR_UNAVAILABLE, errno, "net all-reduce: listening on %s",
                           bind_address);
        goto fail;
    }
    len = sizeof(addr);
    if (getsockname(l->fd, (struct sockaddr *)&addr, &len) != 0) {
        err = loom_err_sys(LOOM_ERR_INTERNAL, errno, "net all-reduce: getsockname");
        goto fail;
    }
    l->port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                               : ((struct sockaddr_in *)&addr)->sin_port);
    *out = l;
    return NULL;
fail:
    comm_net_listener_close(l);
    return err;
}

uint16_t comm_net_listener_port(const comm_net_listener *l) { return l ? l->port : 0; }

void comm_net_listener_close(comm_net_listener *l)
{
    if (l == NULL)
        return;
    if (l->fd >= 0)
        close(l->fd);
    free(l);
}

/* A group that accepts its left neighbour on `l`'s socket. */
static loom_error *group_new(comm_net_listener *l, comm_net **out)
{
    comm_net *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return loom_err(LOOM_ERR_INTERNAL, "net all-reduce: out of memory");
    g->left_fd = g->right_fd = g->abort_fd = g->progress_fd = -1;
    g->listen_fd = l->fd;
    g->port = l->port;
    g->link_timeout_ms = l->link_timeout_ms;
    *out = g;
    return NULL;
}

loom_error *comm_net_listen(const char *bind_address, uint32_t link_timeout_ms,
                            comm_net **out)
{
    *out = NULL;
    comm_net_listener *l = NULL;
    loom_error *err = comm_net_listener_open(bind_address, link_timeout_ms, &l);
    if (err == NULL)
        err = group_new(l, out);
    if (err)
        comm_net_listener_close(l);
    else
        (*out)->own_listener = l;
    return err;
}

uint16_t comm_net_port(const comm_net *g) { return g ? g->port : 0; }
uint32_t comm_net_rank(const comm_net *g) { return g && g->connected ? g->rank : 0; }
uint32_t comm_net_world_size(const comm_net *g)
{
    return g && g->connected ? g->world : 0;
}

uint64_t comm_net_blocked_ns(const comm_net *g) { return g ? g->blocked_ns : 0; }

void comm_net_count_blocked(comm_net *g, uint64_t since_ns)
{
    g->blocked_ns += comm_now_ns() - since_ns;
}

loom_error *comm_net_usable(const comm_net *g, const char *what)
{
    if (g->failure[0])
        return loom_err(LOOM_ERR_UNAVAILABLE,
                        "net %s: the group failed earlier (%s); build a new one", what,
                        g->failure);
    if (!g->connected)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net %s: the group is not connected (comm_net_connect)", what);
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The group is unusable from now on: shut its links so that neighbours
 * inside a call learn it at once, and the failure travels round the ring. */
loom_error *comm_net_fail(comm_net *g, loom_error *err)
{
    snprintf(g->failure, sizeof(g->failure), "%s", loom_err_message(err));
    if (loom_err_code(err) != LOOM_ERR_DEADLINE_EXCEEDED) {
        close_fd(&g->right_fd);
        close_fd(&g->left_fd);
    }
    return err;
}

void comm_net_close(comm_net *g)
{
    if (g == NULL)
        return;
    comm_net_ring_stop(g);
    comm_net_listener_close(g->own_listener);
    close_fd(&g->right_fd);
    close_fd(&g->left_fd);
    free(g);
}

/* Connects to the right neighbour, retrying while it refuses (its listen
 * socket may be a moment late) until the deadline. */
static loom_error *connect_right(comm_net *g, const comm_net_peer *peer,
                                 uint64_t deadline_ns)
{
    struct sockaddr_storage addr;
    socklen_t len = 0;
    loom_error *err = resolve(peer->address, peer->port, &addr, &len);
    if (err)
        return err;
    for (;;) {
        int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return loom_err_sys(LOOM_ERR_INTERNAL, errno, "net all-reduce: socket");
        tune_socket(fd, g->link_timeout_ms);
        int rc = connect(fd, (struct sockaddr *)&addr, len), errnum = rc == 0 ? 0 : errno;
        if (errnum == EINPROGRESS) {
            if (!wait_fd(fd, POLLOUT, deadline_ns)) {
                close(fd);
                break;
            }
            socklen_t elen = sizeof(errnum);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &errnum, &elen);
        }
        if (errnum == 0) {
            g->right_fd = fd;
            return NULL;
        }
        close(fd);
        if (errnum != ECONNREFUSED)
            return loom_err_sys(LOOM_ERR_UNAVAILABLE, errnum,
                                "net all-reduce: connecting to rank %u at %s port %u",
                                comm_net_right_of(g), peer->address, peer->port);
        if (comm_net_ms_until(deadline_ns) < 0)
            break;
        poll(NULL, 0, CONNECT_RETRY_MS);
    }
    return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                    "net all-reduce: rank %u at %s port %u did not accept a connection "
                    "before the deadline",
                    comm_net_right_of(g), peer->address, peer->port);
}

/* ---- the handshake ----------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static loom_error *send_hello(int fd, const hello *h, uint32_t rank, uint64_t deadline_ns)
{
    uint8_t m[HELLO_BYTES];
    memcpy(m, MAGIC, MAGIC_BYTES);
    put_u32(m + MAGIC_BYTES, h->rank);
    put_u32(m + MAGIC_BYTES + 4, h->world);
    put_u32(m + MAGIC_BYTES + 8, h->generation);
    memcpy(m + MAGIC_BYTES + 12, h->nonce, NONCE_BYTES);
    return write_all(fd, m, sizeof(m), rank, "the handshake", deadline_ns);
}

/* Reads a hello; INVALID_ARGUMENT when it is no loom hello. */
static loom_error *read_hello(int fd, hello *h, uint32_t rank, uint64_t deadline_ns)
{
    uint8_t m[HELLO_BYTES];
    loom_error *err = read_all(fd, m, sizeof(m), rank, "the handshake", deadline_ns);
    if (err)
        return err;
    if (memcmp(m, MAGIC, MAGIC_BYTES) != 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "it does not speak loom's net all-reduce");
    h->rank = get_u32(m + MAGIC_BYTES);
    h->world = get_u32(m + MAGIC_BYTES + 4);
    h->generation = get_u32(m + MAGIC_BYTES + 8);
    memcpy(h->nonce, m + MAGIC_BYTES + 12, NONCE_BYTES);
    return NULL;
}

/* The hello `h` is from `rank` of this group and generation. */
static int hello_fits(const comm_net *g, const hello *h, uint32_t rank)
{
    return h->rank == rank && h->world == g->world && h->generation == g->generation;
}

/* What `prover` sends to show `verifier` that it holds the secret: bound to
 * the verifier's fresh nonce (no replay), to both ranks in order (no
 * reflection), and to the group's size and generation. */
static void make_proof(const comm_net *g, const uint8_t *secret, uint32_t prover,
                       uint32_t verifier, const uint8_t *verifier_nonce,
                       const uint8_t *prover_nonce, uint8_t *out)
{
    uint8_t m[sizeof(PROOF_LABEL) + 16 + 2 * NONCE_BYTES];
    uint8_t *p = m;
    memcpy(p, PROOF_LABEL, sizeof(PROOF_LABEL));
    p += sizeof(PROOF_LABEL);
    put_u32(p, prover), put_u32(p + 4, verifier), put_u32(p + 8, g->world);
    put_u32(p + 12, g->generation);
    p += 16;
    memcpy(p, verifier_nonce, NONCE_BYTES);
    memcpy(p + NONCE_BYTES, prover_nonce, NONCE_BYTES);
    crypto_auth_hmacsha256(out, m, sizeof(m), secret);
}

/* Accepts connections until one says hello as the left neighbour of this
 * group and generation; others are closed (a stale generation's peer, a
 * stray client). The last one refused is named if the deadline passes. */
static loom_error *accept_left(comm_net *g, hello *h, uint64_t deadline_ns)
{
    char refused[160] = "";
    for (;;) {
        if (!wait_fd(g->listen_fd, POLLIN, deadline_ns))
            return loom_err(LOOM_ERR_DEADLINE_EXCEEDED,
                            "net all-reduce: rank %u did not connect before the deadline%s%s",
                            comm_net_left_of(g), refused[0] ? "; refused: " : "", refused);
        struct sockaddr_storage from;
        socklen_t len = sizeof(from);
        int fd = accept4(g->listen_fd, (struct sockaddr *)&from, &len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            continue; /* EAGAIN, or a connection reset before accept */
        char host[NI_MAXHOST] = "?";
        getnameinfo((struct sockaddr *)&from, len, host, sizeof(host), NULL, 0, NI_NUMERICHOST);
        /* A connection that says nothing holds the wait up only so long. */
        uint64_t hello_by = comm_now_ns() + COMM_NET_HELLO_WAIT_MS * 1000000ull;
        loom_error *err = read_hello(fd, h, comm_net_left_of(g),
                                     hello_by < deadline_ns ? hello_by : deadline_ns);
        if (err == NULL && hello_fits(g, h, comm_net_left_of(g))) {
            g->left_fd = fd;
            return NULL;
        }
        if (err == NULL)
            snprintf(refused, sizeof(refused),
                     "%s said it is rank %u of %u in generation %u", host, h->rank, h->world,
                     h->generation);
        else if (loom_err_code(err) == LOOM_ERR_DEADLINE_EXCEEDED)
            snprintf(refused, sizeof(refused), "%s said no hello within %u ms", host,
                     COMM_NET_HELLO_WAIT_MS);
        else
            snprintf(refused, sizeof(refused), "%s: %s", host, loom_err_message(err));
        loom_err_free(err);
        close(fd);
    }
}

/* Compares a neighbour's proof with what the secret gives, in constant
 * time. */
static loom_error *check_proof(const comm_net *g, const uint8_t *secret, uint32_t peer,
                               const uint8_t *got, const hello *theirs, const uint8_t *my_nonce,
                               const char *who)
{
    uint8_t want[crypto_auth_hmacsha256_BYTES];
    make_proof(g, secret, peer, g->rank, my_nonce, theirs->nonce, want);
    if (crypto_verify_32(got, want) != 0)
        return loom_err(LOOM_E_UNAUTHENTICATED,
                        "net all-reduce: %s (rank %u) did not prove the job's secret: refused",
                        who, peer);
    return NULL;
}

/* The last word of the handshake: each side says it accepted the other's
 * proof (a side that refused closed its links instead). Both acks are
 * written before either is read, or the ring would wait in a circle. */
static loom_error *exchange_acks(comm_net *g, uint64_t deadline_ns)
{
    uint32_t peers[2] = {comm_net_right_of(g), comm_net_left_of(g)};
    int fds[2] = {g->right_fd, g->left_fd};
    uint8_t ack = ACK_BYTE;
    loom_error *err = NULL;
    for (int i = 0; i < 2 && err == NULL; i++)
        err = write_all(fds[i], &ack, 1, peers[i], "the handshake", deadline_ns);
    for (int i = 0; i < 2 && err == NULL; i++) {
        err = read_all(fds[i], &ack, 1, peers[i], "the handshake", deadline_ns);
        if (err && loom_err_code(err) == LOOM_ERR_UNAVAILABLE) {
            loom_err_free(err);
            return loom_err(LOOM_E_UNAUTHENTICATED,
                            "net all-reduce: rank %u closed the link at the end of the "
                            "handshake: it refused a proof of the job's secret (do the "
                            "secrets differ?)",
                            peers[i]);
        }
        if (err == NULL && ack != ACK_BYTE)
            err = loom_err(LOOM_ERR_INVALID_ARGUMENT,
                           "net all-reduce: rank %u ended the handshake with a wrong byte",
                           peers[i]);
    }
    return err;
}

/* The right neighbour's hello. One that closes the link before saying it
 * refused ours: it is still forming another generation (an older one,
 * which fails, for this one exists) and accepts a new connection once it
 * reaches this one; so connect again, with a fresh nonce, until the
 * deadline, as while it refuses connections. */
static loom_error *read_right_hello(comm_net *g, const comm_net_peer *peer, hello *to_right,
                                    hello *from_right, uint64_t deadline_ns)
{
    uint32_t right = comm_net_right_of(g);
    for (;;) {
        loom_error *err = read_hello(g->right_fd, from_right, right, deadline_ns);
        if (err == NULL || loom_err_code(err) != LOOM_ERR_UNAVAILABLE ||
            comm_net_ms_until(deadline_ns) < 0)
            return err;
        loom_err_free(err);
        close_fd(&g->right_fd);
        poll(NULL, 0, CONNECT_RETRY_MS);
        randombytes_buf(to_right->nonce, NONCE_BYTES);
        err = connect_right(g, peer, deadline_ns);
        if (err)
            return err;
        err = send_hello(g->right_fd, to_right, right, deadline_ns);
        if (err && loom_err_code(err) != LOOM_ERR_UNAVAILABLE)
            return err;
        loom_err_free(err); /* a link closed again shows in the next read */
    }
}

/* Every step only waits for what the neighbours send without waiting
 * themselves (a hello on connecting or accepting, proofs once both hellos
 * are in), so no peer waits on another in a circle. */
static loom_error *handshake(comm_net *g, const comm_net_peer *peers,
                             const uint8_t *secret, uint64_t deadline_ns)
{
    uint32_t left = comm_net_left_of(g), right = comm_net_right_of(g);
    hello to_right = {g->rank, g->world, g->generation, {0}}, to_left = to_right;
    hello from_right, from_left;
    randombytes_buf(to_right.nonce, NONCE_BYTES);
    randombytes_buf(to_left.nonce, NONCE_BYTES);
    loom_error *err = connect_right(g, &peers[right], deadline_ns);
    if (err == NULL)
        err = send_hello(g->right_fd, &to_right, right, deadline_ns);
    if (err == NULL)
        err = accept_left(g, &from_left, deadline_ns);
    if (err == NULL)
        err = send_hello(g->left_fd, &to_left, left, deadline_ns);
    if (err == NULL) {
        err = read_right_hello(g, &peers[right], &to_right, &from_right, deadline_ns);
        if (err == NULL && !hello_fits(g, &from_right, right))
            err = loom_err(LOOM_ERR_INVALID_ARGUMENT,
                           "net all-reduce: the peer at %s port %u said it is rank %u of %u "
                           "in generation %u; expected rank %u of %u in generation %u",
                           peers[right].address, peers[right].port, from_right.rank,
                           from_right.world, from_right.generation, right, g->world,
                           g->generation);
    }
    /* Both proofs are read before either is judged: a peer that refuses
     * closes its links with nothing of ours unread, so the others see its
     * refusal, not a reset. */
    uint8_t proof[crypto_auth_hmacsha256_BYTES];
    uint8_t from_right_proof[crypto_auth_hmacsha256_BYTES], from_left_proof[sizeof(proof)];
    if (err == NULL) {
        make_proof(g, secret, g->rank, right, from_right.nonce, to_right.nonce, proof);
        err = write_all(g->right_fd, proof, sizeof(proof), right, "the handshake", deadline_ns);
    }
    if (err == NULL) {
        make_proof(g, secret, g->rank, left, from_left.nonce, to_left.nonce, proof);
        err = write_all(g->left_fd, proof, sizeof(proof), left, "the handshake", deadline_ns);
    }
    if (err == NULL)
        err = read_all(g->right_fd, from_right_proof, sizeof(proof), right, "the handshake",
                       deadline_ns);
    if (err == NULL)
        err = read_all(g->left_fd, from_left_proof, sizeof(proof), left, "the handshake",
                       deadline_ns);
    if (err == NULL)
        err = check_proof(g, secret, right, from_right_proof, &from_right, to_right.nonce,
                          "the peer it connected to");
    if (err == NULL)
        err = check_proof(g, secret, left, from_left_proof, &from_left, to_left.nonce,
                          "the peer that connected to it");
    if (err == NULL)
        err = exchange_acks(g, deadline_ns);
    return err;
}

/* Links `g` into the ring; the group stops listening either way (its own
 * listener closes: the ring is whole, or failed, and no one else may join;
 * a borrowed one stays open for the next generation's group). */
static loom_error *link_group(comm_net *g, const comm_net_peer *peers, uint32_t count,
                              uint32_t rank, uint32_t generation, const uint8_t *secret,
                              uint64_t deadline_ns)
{
    if (peers == NULL || secret == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: connect needs a group, its peers and a secret");
    if (count == 0 || count > COMM_NET_MAX_PEERS || rank >= count)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: %u peers, rank %u: expected 1 to %u peers (at most "
                        "COMM_NET_MAX_PEERS) and a rank below their count",
                        count, rank, COMM_NET_MAX_PEERS);
    g->rank = rank;
    g->world = count;
    g->generation = generation;
    loom_error *err = NULL;
    if (count > 1) {
        err = handshake(g, peers, secret, deadline_ns);
        if (err == NULL)
            err = comm_net_ring_start(g);
    }
    comm_net_listener_close(g->own_listener);
    g->own_listener = NULL;
    g->listen_fd = -1;
    if (err) {
        comm_net_fail(g, err);
        close_fd(&g->left_fd);
        close_fd(&g->right_fd);
        return err;
    }
    g->connected = 1;
    return NULL;
}

loom_error *comm_net_connect(comm_net *g, const comm_net_peer *peers,
                             uint32_t count, uint32_t rank, uint32_t generation,
                             const uint8_t *secret, uint64_t deadline_ns)
{
    if (g == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "net all-reduce: connect needs a group, its peers and a secret");
    if (g->connected || g->failure[0] || g->listen_fd < 0)
        return loom_err(LOOM_ERR_ALREADY_EXISTS,
                        "net all-reduce: this group was connected already; a new generation "
                        "builds a new group");
    return link_group(g, peers, count, rank, generation, secret, deadline_ns);
}

loom_error *comm_net_connect_on(comm_net_listener *l, const comm_net_peer *peers,
                                uint32_t count, uint32_t rank, uint32_t generation,
                                const uint8_t *secret, uint64_t deadline_ns, comm_net **out)
{
    *out = NULL;
    if (l == NULL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "net all-reduce: connect_on needs a listener");
    comm_net *g = NULL;
    loom_error *err = group_new(l, &g);
    if (err == NULL)
        err = link_group(g, peers, count, rank, generation, secret, deadline_ns);
    if (err) {
        comm_net_close(g);
        return err;
    }
    *out = g;
    return NULL;
}
