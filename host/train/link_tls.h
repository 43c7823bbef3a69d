/*
 * train/link_tls.h - the worker link over TLS ("tls:" links, see
 * protocol.h): TLS 1.3 keyed by the exec's secret (a pre-shared key with an
 * ephemeral (EC)DH exchange: each side proves it holds the secret, and a
 * recorded connection stays secret even if the key leaks later). The
 * coordinator needs no certificate: the host's own key is root's and never
 * reaches an exec.
 *
 * The session is a layer under the message codec, which reads and writes
 * plain descriptors: wrapping a connected TCP socket gives one end of a
 * socketpair, used as the socket would be (poll, the codec, close), and two
 * threads of the link's own move bytes between it and the session, one
 * each way, until either side closes. The handshake runs there too, so the
 * coordinator is never held by a slow peer: a link whose handshake fails
 * or takes over TRAIN_TLS_HANDSHAKE_MS is closed, which its owner reads as
 * a peer gone.
 */
#ifndef LOOM_TRAIN_LINK_TLS_H
#define LOOM_TRAIN_LINK_TLS_H

#include <stdint.h>

#include "train/protocol.h"
#include "util/error.h"

#define TRAIN_TLS_HANDSHAKE_MS 5000

typedef enum train_tls_side {
    TRAIN_TLS_COORDINATOR, /* accepted the connection: TLS's server */
    TRAIN_TLS_WORKER,      /* made it */
} train_tls_side;

/* Takes tcp_fd (closed with the link, also on error) and gives in *plain
 * the descriptor to use instead. LOOM_E_UNAVAILABLE when GnuTLS cannot be
 * loaded or no thread can be started. */
loom_error *train_tls_wrap(int tcp_fd, train_tls_side side,
                           const uint8_t secret[TRAIN_SECRET_BYTES], int *plain);

#endif
