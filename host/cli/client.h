/*
 * cli/client.h - the CLI's side of the REST API (libcurl). Where the host
 * is: --host, else $LOOM_HOST, else the address the host wrote into
 * $LOOM_HOME/host (default /var/lib/loom/host as root, else ~/.loom/host),
 * else http://127.0.0.1:9280.
 */
#ifndef LOOM_CLI_CLIENT_H
#define LOOM_CLI_CLIENT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "util/error.h"

#define LOOM_DEFAULT_PORT 9280

typedef struct client {
    char base[512];
    char token[128]; /* sent as Authorization: Bearer; "" = none */
} client;

typedef struct client_reply {
    long status;
    char *body;
    size_t len;
} client_reply;

typedef struct client_part {
    const char *name;
    const char *value;    /* a text part, or */
    const char *filename; /* a file part of `len` bytes at `data` */
    const void *data;
    size_t len;
} client_part;

/* The home as root when none is named: a folder every job account can
 * pass through to reach its own exec folders (~root is 0700). */
#define CLIENT_ROOT_HOME "/var/lib/loom"

/* The home directory: --home, $LOOM_HOME, else CLIENT_ROOT_HOME as root
 * and ~/.loom for anyone else. */
void cli_client_home(const char *flag, char *out, size_t outlen);
void cli_client_init(client *c, const char *host_flag);
/* NULL when the host answered (any status: see reply->status), else
 * LOOM_E_UNAVAILABLE (the host cannot be reached, its address named, or
 * libcurl cannot be loaded) or LOOM_E_INTERNAL. */
loom_error *cli_client_call(const client *c, const char *method, const char *path,
                        const char *json_body, client_reply *reply);
/* A multipart POST of `parts`; errors as cli_client_call. */
loom_error *cli_client_upload(const client *c, const char *path, const client_part *parts,
                          int nparts, client_reply *reply);
/* POST /auth/v1/logon with Basic credentials; errors as cli_client_call. */
loom_error *cli_client_logon_basic(const client *c, const char *user, const char *password,
                               client_reply *reply);
/* The token the CLI keeps for this host: $LOOM_TOKEN, else the one saved in
 * $LOOM_HOME/credentials by `loom login`. */
void cli_client_load_token(client *c);
/* Saves (token non-NULL) or forgets this host's token in the credentials
 * file, which is created with mode 0600. */
loom_error *cli_client_save_token(const client *c, const char *token);
void cli_client_reply_free(client_reply *r);
/* The reply's JSON, or NULL. */
cJSON *cli_client_reply_json(const client_reply *r);
/* One line for a failed reply: the host's "error" text, or the status. */
void cli_client_reply_error(const client_reply *r, char *out, size_t outlen);

#endif
