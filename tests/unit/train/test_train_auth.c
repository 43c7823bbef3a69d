/* The worker link's authentication and setting: a worker that holds the
 * exec's secret is admitted for its slot, over a socket pair and over TCP
 * on loopback; a wrong secret, a MAC made for another slot, an answer
 * replayed against a new nonce, and no answer at all are refused, the last
 * within its deadline; the MAC is HMAC-SHA256(secret, nonce || slot) as
 * another implementation computes it; the secret read from the environment
 * is wiped there; the link's text is parsed or refused by name; a
 * heartbeat message goes through the codec. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "train/protocol.h"
#include "util/fs.h"

static void fill(uint8_t *p, size_t n, uint8_t v)
{
    memset(p, v, n);
}

/* The worker's side written ahead on a socket pair (the buffers hold
 * both), then the coordinator's verdict. */
static int32_t handshake(const uint8_t *coordinator_secret, const uint8_t *worker_secret,
                         uint32_t worker_slot, uint32_t *slot)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    uint8_t nonce[TRAIN_NONCE_BYTES];
    CHECK_OK(train_auth_challenge(sv[0], nonce));
    CHECK_OK(train_auth_answer(sv[1], worker_secret, worker_slot, time_mono_ms() + 1000));
    int32_t code = loom_err_take(train_auth_verify(sv[0], coordinator_secret, nonce,
                                                   time_mono_ms() + 1000, slot),
                                 NULL, 0);
    close(sv[0]);
    close(sv[1]);
    return code;
}

static void test_known_answer(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], nonce[TRAIN_NONCE_BYTES], mac[TRAIN_MAC_BYTES];
    fill(secret, sizeof secret, 1);
    fill(nonce, sizeof nonce, 2);
    train_auth_mac(secret, nonce, 7, mac);
    /* Python: hmac.new(b'\x01'*32, b'\x02'*32 + b'\x07\0\0\0', sha256) */
    static const uint8_t want[TRAIN_MAC_BYTES] = {
        0x49, 0x92, 0x6a, 0xaf, 0x9e, 0x16, 0xe8, 0x9c, 0x57, 0xdb, 0x21, 0xc2, 0xd2, 0x8e, 0x08, 0xae,
        0x49, 0x19, 0x13, 0xee, 0x39, 0xac, 0xca, 0x9a, 0xf6, 0x14, 0x1b, 0x9e, 0x3f, 0x3e, 0x0b, 0x74};
    CHECK(memcmp(mac, want, sizeof want) == 0);
}

static void test_handshakes(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], other[TRAIN_SECRET_BYTES];
    CHECK_OK(train_secret_new(secret));
    CHECK_OK(train_secret_new(other));
    CHECK(memcmp(secret, other, sizeof secret) != 0);
    uint32_t slot = 99;
    CHECK(handshake(secret, secret, 3, &slot) == LOOM_OK);
    CHECK(slot == 3);
    slot = 99;
    CHECK(handshake(secret, other, 3, &slot) == LOOM_E_FORBIDDEN);
    CHECK(slot == 99);
}

/* A MAC proven for slot 1 presented as slot 2's; an answer overheard on
 * one connection sent again on the next. */
static void test_forged_answers(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], nonce[TRAIN_NONCE_BYTES], answer[4 + TRAIN_MAC_BYTES];
    CHECK_OK(train_secret_new(secret));
    int sv[2];
    uint32_t slot = 99;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(train_auth_challenge(sv[0], nonce));
    uint8_t seen[TRAIN_NONCE_BYTES];
    CHECK_OK(train_msg_read_exact(sv[1], seen, sizeof seen, time_mono_ms() + 1000));
    CHECK(memcmp(seen, nonce, sizeof nonce) == 0);
    answer[0] = 2, answer[1] = answer[2] = answer[3] = 0;
    train_auth_mac(secret, nonce, 1, answer + 4);
    CHECK(train_msg_write_all(sv[1], answer, sizeof answer) == 0);
    char err[256];
    CHECK(loom_err_take(train_auth_verify(sv[0], secret, nonce, time_mono_ms() + 1000, &slot), err,
                        sizeof err) == LOOM_E_FORBIDDEN);
    CHECK_CONTAINS(err, "wrong MAC for slot 2");
    close(sv[0]);
    close(sv[1]);

    /* The right answer to the first nonce, replayed against the second. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(train_auth_challenge(sv[0], nonce));
    CHECK_OK(train_msg_read_exact(sv[1], seen, sizeof seen, time_mono_ms() + 1000));
    answer[0] = 1;
    train_auth_mac(secret, seen, 1, answer + 4);
    CHECK(train_msg_write_all(sv[1], answer, sizeof answer) == 0);
    CHECK_OK(train_auth_verify(sv[0], secret, nonce, time_mono_ms() + 1000, &slot));
    uint8_t second[TRAIN_NONCE_BYTES];
    CHECK_OK(train_auth_challenge(sv[0], second));
    CHECK(memcmp(second, nonce, sizeof nonce) != 0);
    CHECK(train_msg_write_all(sv[1], answer, sizeof answer) == 0);
    CHECK(loom_err_take(train_auth_verify(sv[0], secret, second, time_mono_ms() + 1000, &slot),
                        NULL, 0) == LOOM_E_FORBIDDEN);
    close(sv[0]);
    close(sv[1]);
}

/* No answer: refused at the deadline, not later; half an answer and a
 * close: refused at once. */
static void test_missing_answer(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], nonce[TRAIN_NONCE_BYTES];
    CHECK_OK(train_secret_new(secret));
    int sv[2];
    uint32_t slot;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK_OK(train_auth_challenge(sv[0], nonce));
    int64_t t0 = time_mono_ms();
    CHECK(loom_err_take(train_auth_verify(sv[0], secret, nonce, t0 + 200, &slot), NULL, 0) ==
          LOOM_E_DEADLINE);
    int64_t took = time_mono_ms() - t0;
    CHECK_MSG(took >= 190 && took < 2000, "took %lld ms", (long long)took);
    CHECK(train_msg_write_all(sv[1], "\1\0\0\0abc", 7) == 0);
    close(sv[1]);
    CHECK(loom_err_take(train_auth_verify(sv[0], secret, nonce, time_mono_ms() + 1000, &slot),
                        NULL, 0) == LOOM_E_UNAVAILABLE);
    close(sv[0]);
}

static void test_tcp(void)
{
    train_link link;
    CHECK_OK(train_link_parse("tcp:127.0.0.1", &link));
    int lfd = -1, wfd = -1;
    char control[TRAIN_LINK_ADDR_MAX + 48];
    CHECK_OK(train_msg_listen_tcp(&link, &lfd, control, sizeof control));
    CHECK_MSG(!strncmp(control, "tcp:127.0.0.1:", 14) && atoi(control + 14) > 0, "%s", control);
    CHECK_OK(train_msg_connect(control, &wfd));
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    CHECK(poll(&p, 1, 2000) == 1);
    int cfd = accept(lfd, NULL, NULL);
    CHECK(cfd >= 0);
    train_link_ready(cfd);
    uint8_t secret[TRAIN_SECRET_BYTES], nonce[TRAIN_NONCE_BYTES];
    CHECK_OK(train_secret_new(secret));
    CHECK_OK(train_auth_challenge(cfd, nonce));
    CHECK_OK(train_auth_answer(wfd, secret, 5, time_mono_ms() + 1000));
    uint32_t slot = 0;
    CHECK_OK(train_auth_verify(cfd, secret, nonce, time_mono_ms() + 1000, &slot));
    CHECK(slot == 5);
    msg beat = {.kind = MSG_HEARTBEAT}, got;
    CHECK_OK(train_msg_send(wfd, &beat, NULL, 0));
    CHECK_OK(train_msg_recv(cfd, time_mono_ms() + 1000, &got));
    CHECK(got.kind == MSG_HEARTBEAT);
    train_msg_free(&got);
    close(cfd);
    close(wfd);
    close(lfd);
    /* Every address: workers on this machine come by loopback. */
    CHECK_OK(train_link_parse("tcp", &link));
    CHECK_OK(train_msg_listen_tcp(&link, &lfd, control, sizeof control));
    CHECK_MSG(!strncmp(control, "tcp:127.0.0.1:", 14), "%s", control);
    close(lfd);
}

static void test_link_text(void)
{
    train_link link;
    CHECK_OK(train_link_parse(NULL, &link));
    CHECK(!link.tcp);
    CHECK_OK(train_link_parse("unix", &link));
    CHECK(!link.tcp);
    CHECK_OK(train_link_parse("tcp", &link));
    CHECK(link.tcp && !link.addr[0]);
    CHECK_OK(train_link_parse("tcp:[::1]", &link));
    CHECK(link.tcp);
    CHECK_STR_EQ(link.addr, "::1");
    char err[256];
    CHECK(loom_err_take(train_link_parse("tcpx", &link), err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "expected unix, tcp, tcp:ADDR, tls or tls:ADDR");
    CHECK_OK(train_link_parse("tls", &link));
    CHECK(link.tcp && link.tls && !link.addr[0]);
    CHECK_OK(train_link_parse("tls:10.0.0.1", &link));
    CHECK(link.tcp && link.tls && !strcmp(link.addr, "10.0.0.1"));
    CHECK_OK(train_link_parse("tcp:10.0.0.1", &link));
    CHECK(link.tcp && !link.tls);
    CHECK(loom_err_take(train_link_parse("tlsx", &link), NULL, 0) == LOOM_E_INVALID);
    CHECK(loom_err_take(train_link_parse("tls:", &link), NULL, 0) == LOOM_E_INVALID);
    /* a TLS link needs the secret: the plain connect refuses it by name */
    CHECK(loom_err_take(train_msg_connect("tls:127.0.0.1:1", &(int){0}), err, sizeof err) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(err, "secret");
    CHECK(loom_err_take(train_link_parse("tcp:", &link), NULL, 0) == LOOM_E_INVALID);
    CHECK(loom_err_take(train_link_parse("udp", &link), NULL, 0) == LOOM_E_INVALID);
    CHECK(loom_err_take(train_msg_connect("tcp:nohostport", &(int){0}), NULL, 0) == LOOM_E_INVALID);
}

/* The secret is taken from the environment and wiped there (the bytes
 * /proc/PID/environ shows). */
static void test_secret_env(void)
{
    uint8_t secret[TRAIN_SECRET_BYTES], back[TRAIN_SECRET_BYTES];
    CHECK_OK(train_secret_new(secret));
    static char entry[2 * TRAIN_SECRET_BYTES + 64];
    train_secret_env(secret, entry, sizeof entry);
    CHECK(putenv(entry) == 0);
    CHECK_OK(train_secret_from_env(back));
    CHECK(memcmp(secret, back, sizeof secret) == 0);
    CHECK(getenv(TRAIN_SECRET_ENV) == NULL);
    const char *value = entry + strlen(TRAIN_SECRET_ENV) + 1;
    CHECK_MSG(value[0] == 0 && value[2 * TRAIN_SECRET_BYTES - 1] == 0, "the value is still there");
    CHECK(loom_err_take(train_secret_from_env(back), NULL, 0) == LOOM_E_INVALID);
    CHECK(setenv(TRAIN_SECRET_ENV, "abcd", 1) == 0);
    CHECK(loom_err_take(train_secret_from_env(back), NULL, 0) == LOOM_E_INVALID);
}

int main(void)
{
    test_known_answer();
    test_handshakes();
    test_forged_answers();
    test_missing_answer();
    test_tcp();
    test_link_text();
    test_secret_env();
    return CHECK_DONE();
}
