/*
 * util/gnutls_dl.h - GnuTLS, opened on first use (util/dynlib.h): the
 * HTTPS lane and the training workers' encrypted link share one table, so
 * that a CLI call, and a host that serves neither, never maps it (nor the
 * eight libraries it brings).
 */
#ifndef LOOM_UTIL_GNUTLS_DL_H
#define LOOM_UTIL_GNUTLS_DL_H

#include <gnutls/gnutls.h>

#include "util/error.h"

/* Every field is named like the GnuTLS function it holds; gnutls_malloc is
 * the library's allocator variable (keys handed to it are freed with it). */
#define GNUTLS_DL_FUNCTIONS(X)                                                                \
    X(gnutls_certificate_allocate_credentials)                                                \
    X(gnutls_certificate_free_credentials)                                                    \
    X(gnutls_certificate_set_x509_key_mem)                                                    \
    X(gnutls_psk_allocate_server_credentials)                                                 \
    X(gnutls_psk_free_server_credentials)                                                     \
    X(gnutls_psk_set_server_credentials_function)                                             \
    X(gnutls_psk_allocate_client_credentials)                                                 \
    X(gnutls_psk_free_client_credentials)                                                     \
    X(gnutls_psk_set_client_credentials)                                                      \
    X(gnutls_malloc)                                                                          \
    X(gnutls_init)                                                                            \
    X(gnutls_deinit)                                                                          \
    X(gnutls_set_default_priority)                                                            \
    X(gnutls_priority_set_direct)                                                             \
    X(gnutls_credentials_set)                                                                 \
    X(gnutls_session_set_ptr)                                                                 \
    X(gnutls_session_get_ptr)                                                                 \
    X(gnutls_handshake)                                                                       \
    X(gnutls_handshake_set_timeout)                                                           \
    X(gnutls_protocol_get_version)                                                            \
    X(gnutls_kx_get)                                                                          \
    X(gnutls_transport_set_int2)                                                              \
    X(gnutls_transport_set_ptr2)                                                              \
    X(gnutls_transport_set_pull_function)                                                     \
    X(gnutls_transport_set_pull_timeout_function)                                             \
    X(gnutls_record_recv)                                                                     \
    X(gnutls_record_send)                                                                     \
    X(gnutls_record_cork)                                                                     \
    X(gnutls_record_uncork)                                                                   \
    X(gnutls_bye)                                                                             \
    X(gnutls_error_is_fatal)                                                                  \
    X(gnutls_strerror)

#define GNUTLS_DL_FIELD(fn) __typeof__(&fn) fn;
typedef struct gnutls_api {
    GNUTLS_DL_FUNCTIONS(GNUTLS_DL_FIELD)
} gnutls_api;
#undef GNUTLS_DL_FIELD

/* The table, opened once per process (any thread); LOOM_E_UNAVAILABLE
 * naming GnuTLS when it is missing. */
loom_error *gnutls_dl_open(const gnutls_api **out);

#endif
