/*
 * cli/curl_dl.h - libcurl, opened when the CLI first talks to a host.
 *
 * libcurl brings TLS, Kerberos, LDAP and more along: mapping and relocating
 * them is most of a CLI call's start-up, and commands that never reach a
 * host (version, help, serve, worker) need none of it. The table is typed
 * from curl.h (with its type-checking macros off, so the calls through the
 * table are plain calls). Threading: any thread; the first call loads.
 */
#ifndef LOOM_CLI_CURL_DL_H
#define LOOM_CLI_CURL_DL_H

#include <stddef.h>

#include "util/error.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#define CURL_FUNCTIONS(X)                                                                     \
    X(curl_easy_init)                                                                         \
    X(curl_easy_setopt)                                                                       \
    X(curl_easy_perform)                                                                      \
    X(curl_easy_getinfo)                                                                      \
    X(curl_easy_strerror)                                                                     \
    X(curl_easy_cleanup)                                                                      \
    X(curl_easy_escape)                                                                       \
    X(curl_free)                                                                              \
    X(curl_slist_append)                                                                      \
    X(curl_slist_free_all)                                                                    \
    X(curl_mime_init)                                                                         \
    X(curl_mime_addpart)                                                                      \
    X(curl_mime_name)                                                                         \
    X(curl_mime_data)                                                                         \
    X(curl_mime_filename)                                                                     \
    X(curl_mime_type)                                                                         \
    X(curl_mime_free)

#define CURL_DL_FIELD(fn) __typeof__(&fn) fn;
typedef struct curl_api {
    CURL_FUNCTIONS(CURL_DL_FIELD)
} curl_api;
#undef CURL_DL_FIELD

/* The table in *out, or the error naming libcurl when it cannot be loaded
 * (*out is then NULL). */
loom_error *cli_curl_lib(const curl_api **out);

#endif
