/* The worker link in TLS (train/link_tls.h), over TCP on loopback through
 * a tap that records every byte between the two ends:
 *  - ends keyed by the same secret pass the authentication, messages both
 *    ways and a megabyte (many records), in order, then each end's close
 *    is the other's end of stream after what was sent;
 *  - nothing of it is in the tap in clear, where the same exchange over
 *    plain TCP is (so the tap does see the link);
 *  - a worker with another secret, a plain worker facing a TLS
 *    coordinator and a TLS worker facing a plain one are cut off at once
 *    (an end of stream, long before any deadline);
 *  - a link's threads end with it. */
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "train/link_tls.h"
#include "train/protocol.h"
#include "util/fs.h"

#define MARKER "an-exit-reason-only-the-two-ends-may-read"
#define BULK_BYTES (1u << 20)
#define TAP_MAX (8u << 20)

static int listen_loopback(unsigned *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 8) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_loopback(unsigned port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    return fd;
}

/* The tap: takes one connection on its port, connects to the target and
 * copies both ways, recording everything, until either side ends. */
typedef struct tap {
    int listen_fd;
    unsigned port, target;
    pthread_t thread;
    char *seen;
    size_t nseen;
} tap;

static void *tap_run(void *arg)
{
    tap *t = arg;
    int a = accept(t->listen_fd, NULL, NULL), b = connect_loopback(t->target);
    struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
    char buf[65536];
    for (int open = 1; open && poll(p, 2, -1) > 0;) {
        for (int i = 0; i < 2 && open; i++) {
            if (!p[i].revents)
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0 || train_msg_write_all(p[1 - i].fd, buf, (size_t)n) != 0) {
                open = 0;
                break;
            }
            if (t->nseen + (size_t)n <= TAP_MAX) {
                memcpy(t->seen + t->nseen, buf, (size_t)n);
                t->nseen += (size_t)n;
            }
        }
    }
    close(a);
    close(b);
    return NULL;
}

static void tap_start(tap *t, unsigned target)
{
    memset(t, 0, sizeof *t);
    t->seen = malloc(TAP_MAX);
    t->target = target;
    t->listen_fd = listen_loopback(&t->port);
    CHECK(pthread_create(&t->thread, NULL, tap_run, t) == 0);
}

static void tap_stop(tap *t)
{
    pthread_join(t->thread, NULL);
    close(t->listen_fd);
}

static int tap_saw(const tap *t, const void *what, size_t n)
{
    return memmem(t->seen, t->nseen, what, n) != NULL;
}

/* A coordinator's end and a worker's, through tap `t`, each in TLS when
 * asked (with its own secret). */
static void link_pair(tap *t, int coordinator_tls, const uint8_t *coordinator_secret,
                      int worker_tls, const uint8_t *worker_secret, int *cfd, int *wfd)
{
    unsigned port;
    int lfd = listen_loopback(&port);
    tap_start(t, port);
    *wfd = connect_loopback(t->port);
    *cfd = accept(lfd, NULL, NULL);
    CHECK(*cfd >= 0);
    close(lfd);
    train_link_ready(*cfd);
    if (coordinator_tls)
        CHECK_OK(train_tls_wrap(*cfd, TRAIN_TLS_COORDINATOR, coordinator_secret, cfd));
    if (worker_tls)
        CHECK_OK(train_tls_wrap(*wfd, TRAIN_TLS_WORKER, worker_secret, wfd));
}

/* The exchange the first two tests run: authentication, a message each
 * way, a megabyte, then the worker's close seen by the coordinator. */
static void exchange(int cfd, int wfd, const uint8_t *secret, char *bulk)
{
    uint8_t nonce[TRAIN_NONCE_BYTES];
    uint32_t slot = 0;
    CHECK_OK(train_auth_challenge(cfd, nonce));
    CHECK_OK(train_auth_answer(wfd, secret, 3, time_mono_ms() + 10000));
    CHECK_OK(train_auth_verify(cfd, secret, nonce, time_mono_ms() + 10000, &slot));
    CHECK(slot == 3);
    msg out = {.kind = MSG_EXIT, .u.exit = {.reason = MARKER, .code = 7}}, got = {0};
    CHECK_OK(train_msg_send(cfd, &out, NULL, 0));
    CHECK_OK(train_msg_recv(wfd, time_mono_ms() + 10000, &got));
    CHECK(got.kind == MSG_EXIT && got.u.exit.code == 7);
    CHECK_STR_EQ(got.u.exit.reason, MARKER);
    train_msg_free(&got);
    msg beat = {.kind = MSG_HEARTBEAT};
    CHECK_OK(train_msg_send(wfd, &beat, NULL, 0));
    CHECK_OK(train_msg_recv(cfd, time_mono_ms() + 10000, &got));
    CHECK(got.kind == MSG_HEARTBEAT);
    train_msg_free(&got);
    /* more than a TLS record's worth, sent before the close: all of it,
     * in order, then the end */
    CHECK(train_msg_write_all(wfd, bulk, BULK_BYTES) == 0);
    close(wfd);
    char *back = malloc(BULK_BYTES);
    CHECK_OK(train_msg_read_exact(cfd, back, BULK_BYTES, time_mono_ms() + 10000));
    CHECK(memcmp(back, bulk, BULK_BYTES) == 0);
    char one;
    int64_t t0 = time_mono_ms();
    CHECK(loom_err_take(train_msg_read_exact(cfd, &one, 1, time_mono_ms() + 10000), NULL, 0) ==
          LOOM_E_UNAVAILABLE);
    CHECK_MSG(time_mono_ms() - t0 < 5000, "the close took %lld ms to show",
              (long long)(time_mono_ms() - t0));
    free(back);
    close(cfd);
}

static void test_sealed_and_plain(const uint8_t *secret)
{
    char *bulk = malloc(BULK_BYTES);
    for (size_t i = 0; i < BULK_BYTES; i++)
        bulk[i] = (char)('a' + i % 23);
    static const char bulk_probe[] = "abcdefghijklmnopqrstuvw";

    tap plain;
    int cfd, wfd;
    link_pair(&plain, 0, secret, 0, secret, &cfd, &wfd);
    exchange(cfd, wfd, secret, bulk);
    tap_stop(&plain);
    CHECK_MSG(tap_saw(&plain, MARKER, strlen(MARKER)), "the tap sees plain TCP's message");
    CHECK(tap_saw(&plain, bulk_probe, sizeof bulk_probe - 1));

    tap sealed;
    link_pair(&sealed, 1, secret, 1, secret, &cfd, &wfd);
    exchange(cfd, wfd, secret, bulk);
    tap_stop(&sealed);
    CHECK_MSG(sealed.nseen > BULK_BYTES, "the tap saw %zu bytes", sealed.nseen);
    CHECK_MSG(!tap_saw(&sealed, MARKER, strlen(MARKER)), "the message is on the wire in clear");
    CHECK_MSG(!tap_saw(&sealed, bulk_probe, sizeof bulk_probe - 1), "the bytes are in clear");
    CHECK(!tap_saw(&sealed, secret, TRAIN_SECRET_BYTES));
    free(plain.seen);
    free(sealed.seen);
    free(bulk);
}

/* The coordinator's close, after a message: the worker reads the message,
 * then the end. */
static void test_coordinator_close(const uint8_t *secret)
{
    tap t;
    int cfd, wfd;
    link_pair(&t, 1, secret, 1, secret, &cfd, &wfd);
    msg out = {.kind = MSG_EXIT, .u.exit = {.reason = "done", .code = 0}}, got = {0};
    CHECK_OK(train_msg_send(cfd, &out, NULL, 0));
    close(cfd);
    CHECK_OK(train_msg_recv(wfd, time_mono_ms() + 10000, &got));
    CHECK(got.kind == MSG_EXIT);
    train_msg_free(&got);
    CHECK(loom_err_take(train_msg_recv(wfd, time_mono_ms() + 10000, &got), NULL, 0) ==
          LOOM_E_UNAVAILABLE);
    close(wfd);
    tap_stop(&t);
    free(t.seen);
}

/* Each refusal is an end of stream on the coordinator's side well before
 * the 10 s deadline (not the deadline itself). */
static void test_refused(const uint8_t *secret, const uint8_t *other)
{
    struct {
        const char *what;
        int coordinator_tls, worker_tls;
        const uint8_t *worker_secret;
    } cases[] = {
        {"a worker with another secret", 1, 1, other},
        {"a plain worker facing a TLS coordinator", 1, 0, secret},
        {"a TLS worker facing a plain coordinator", 0, 1, secret},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tap t;
        int cfd, wfd;
        link_pair(&t, cases[k].coordinator_tls, secret, cases[k].worker_tls,
                  cases[k].worker_secret, &cfd, &wfd);
        uint8_t nonce[TRAIN_NONCE_BYTES];
        uint32_t slot = 0;
        int64_t t0 = time_mono_ms();
        loom_err_free(train_auth_challenge(cfd, nonce));
        if (cases[k].worker_tls) {
            int32_t code = loom_err_take(
                train_auth_answer(wfd, cases[k].worker_secret, 1, time_mono_ms() + 10000), NULL, 0);
            CHECK_MSG(code == LOOM_E_UNAVAILABLE, "%s: the worker's answer: code %d",
                      cases[k].what, (int)code);
        } else {
            /* what a plain worker says: a slot and a MAC */
            uint8_t answer[4 + TRAIN_MAC_BYTES] = {1};
            CHECK(train_msg_write_all(wfd, answer, sizeof answer) == 0);
        }
        int32_t code = loom_err_take(
            train_auth_verify(cfd, secret, nonce, time_mono_ms() + 10000, &slot), NULL, 0);
        CHECK_MSG(code == LOOM_E_UNAVAILABLE || (!cases[k].coordinator_tls && code == LOOM_E_FORBIDDEN),
                  "%s: refused with code %d", cases[k].what, (int)code);
        CHECK_MSG(time_mono_ms() - t0 < 5000, "%s: refused after %lld ms", cases[k].what,
                  (long long)(time_mono_ms() - t0));
        close(cfd);
        close(wfd);
        tap_stop(&t);
        free(t.seen);
    }
}

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], other[TRAIN_SECRET_BYTES];
    CHECK_OK(train_secret_new(secret));
    CHECK_OK(train_secret_new(other));
    test_sealed_and_plain(secret);
    test_coordinator_close(secret);
    test_refused(secret, other);
    /* every link is closed: their threads end (waited for, not timed) */
    int64_t until = time_mono_ms() + 30000;
    while (threads_now() > 1 && time_mono_ms() < until)
        poll(NULL, 0, 10);
    CHECK_MSG(threads_now() == 1, "%d threads left", threads_now());
    return CHECK_DONE();
}
