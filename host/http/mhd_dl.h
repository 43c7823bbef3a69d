/*
 * http/mhd_dl.h - libmicrohttpd, opened when a host starts serving.
 *
 * Only `loom serve` (and the demo's embedded host) needs the HTTP server;
 * linking it would make every CLI call map and relocate it and the TLS
 * stack it brings (GnuTLS and its eight libraries). The table is typed from
 * microhttpd.h. Threading: any thread; the first call loads.
 */
#ifndef LOOM_HTTP_MHD_DL_H
#define LOOM_HTTP_MHD_DL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "util/error.h"

#define MHD_FUNCTIONS(X)                                                                      \
    X(MHD_start_daemon)                                                                       \
    X(MHD_stop_daemon)                                                                        \
    X(MHD_get_daemon_info)                                                                    \
    X(MHD_is_feature_supported)                                                               \
    X(MHD_lookup_connection_value)                                                            \
    X(MHD_get_connection_info)                                                                \
    X(MHD_create_response_from_buffer)                                                        \
    X(MHD_create_response_from_callback)                                                      \
    X(MHD_add_response_header)                                                                \
    X(MHD_queue_response)                                                                     \
    X(MHD_destroy_response)                                                                   \
    X(MHD_create_post_processor)                                                              \
    X(MHD_post_process)                                                                       \
    X(MHD_destroy_post_processor)                                                             \
    X(MHD_suspend_connection)                                                                 \
    X(MHD_resume_connection)                                                                  \
    X(MHD_add_connection)

#define MHD_DL_FIELD(fn) __typeof__(&fn) fn;
typedef struct mhd_api {
    MHD_FUNCTIONS(MHD_DL_FIELD)
} mhd_api;
#undef MHD_DL_FIELD

/* Sets *out to the table, or returns why libmicrohttpd cannot be loaded
 * (LOOM_E_UNAVAILABLE naming it). */
loom_error *mhd_lib(const mhd_api **out);

#endif
