/* train/protocol_auth.c - a control connection's authentication (see
 * protocol.h): a nonce from the coordinator, the worker's slot and
 * HMAC-SHA256(secret, nonce || slot) back. A fresh nonce per connection
 * makes an answer overheard once worthless on the next; the secret itself
 * never crosses the wire. */
#include "train/protocol.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define ANSWER_BYTES (4 + TRAIN_MAC_BYTES)

loom_error *train_secret_new(uint8_t secret[TRAIN_SECRET_BYTES])
{
    size_t got = 0;
    while (got < TRAIN_SECRET_BYTES) {
        ssize_t n = getrandom(secret + got, TRAIN_SECRET_BYTES - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return loom_err(LOOM_E_INTERNAL, "getrandom: %s", strerror(errno));
        got += (size_t)n;
    }
    return NULL;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

void train_auth_mac(const uint8_t secret[TRAIN_SECRET_BYTES], const uint8_t nonce[TRAIN_NONCE_BYTES],
                    uint32_t slot, uint8_t mac[TRAIN_MAC_BYTES])
{
    uint8_t slot_le[4];
    put_u32(slot_le, slot);
    if (sodium_init() < 0) /* idempotent; picks the implementations */
        abort();
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, secret, TRAIN_SECRET_BYTES);
    crypto_auth_hmacsha256_update(&st, nonce, TRAIN_NONCE_BYTES);
    crypto_auth_hmacsha256_update(&st, slot_le, sizeof slot_le);
    crypto_auth_hmacsha256_final(&st, mac);
    sodium_memzero(&st, sizeof st);
}

loom_error *train_auth_challenge(int fd, uint8_t nonce[TRAIN_NONCE_BYTES])
{
    loom_error *e = train_secret_new(nonce);
    if (!e && train_msg_write_all(fd, nonce, TRAIN_NONCE_BYTES) != 0)
        e = loom_err(LOOM_E_UNAVAILABLE, "closed before the nonce was sent: %s", strerror(errno));
    return e;
}

loom_error *train_auth_verify(int fd, const uint8_t secret[TRAIN_SECRET_BYTES],
                              const uint8_t nonce[TRAIN_NONCE_BYTES], int64_t deadline_ms,
                              uint32_t *slot)
{
    uint8_t answer[ANSWER_BYTES], want[TRAIN_MAC_BYTES];
    loom_error *e = train_msg_read_exact(fd, answer, sizeof answer, deadline_ms);
    if (e)
        return loom_err_wrap(e, "no answer to the nonce (a MAC of %d bytes after the slot)",
                             TRAIN_MAC_BYTES);
    uint32_t s = (uint32_t)answer[0] | (uint32_t)answer[1] << 8 | (uint32_t)answer[2] << 16 |
                 (uint32_t)answer[3] << 24;
    train_auth_mac(secret, nonce, s, want);
    int same = sodium_memcmp(want, answer + 4, TRAIN_MAC_BYTES) == 0;
    sodium_memzero(want, sizeof want);
    if (!same)
        return loom_err(LOOM_E_FORBIDDEN, "a wrong MAC for slot %u (not the exec's secret)", s);
    *slot = s;
    return NULL;
}

loom_error *train_auth_answer(int fd, const uint8_t secret[TRAIN_SECRET_BYTES], uint32_t slot,
                              int64_t deadline_ms)
{
    uint8_t nonce[TRAIN_NONCE_BYTES], answer[ANSWER_BYTES];
    loom_error *e = train_msg_read_exact(fd, nonce, sizeof nonce, deadline_ms);
    if (e)
        return loom_err_wrap(e, "the coordinator's nonce");
    put_u32(answer, slot);
    train_auth_mac(secret, nonce, slot, answer + 4);
    int failed = train_msg_write_all(fd, answer, sizeof answer);
    sodium_memzero(answer, sizeof answer);
    return failed ? loom_err(LOOM_E_UNAVAILABLE, "control connection lost: %s", strerror(errno))
                  : NULL;
}

loom_error *train_secret_from_env(uint8_t secret[TRAIN_SECRET_BYTES])
{
    char *hex = getenv(TRAIN_SECRET_ENV);
    if (!hex)
        return loom_err(LOOM_E_INVALID, "%s: not set (workers are started by the trainer)",
                        TRAIN_SECRET_ENV);
    size_t got = 0, len = strlen(hex);
    int bad = sodium_hex2bin(secret, TRAIN_SECRET_BYTES, hex, len, NULL, &got, NULL) != 0 ||
              got != TRAIN_SECRET_BYTES;
    /* The string is the process's initial environment, which
     * /proc/PID/environ shows: wiped in place, then unset. */
    sodium_memzero(hex, len);
    unsetenv(TRAIN_SECRET_ENV);
    if (bad)
        return loom_err(LOOM_E_INVALID, "%s: expected %d bytes in hexadecimal", TRAIN_SECRET_ENV,
                        TRAIN_SECRET_BYTES);
    return NULL;
}

void train_secret_env(const uint8_t secret[TRAIN_SECRET_BYTES], char *out, size_t len)
{
    char hex[2 * TRAIN_SECRET_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, secret, TRAIN_SECRET_BYTES);
    snprintf(out, len, "%s=%s", TRAIN_SECRET_ENV, hex);
    sodium_memzero(hex, sizeof hex);
}
