/*
 * api/server.h - the host daemon: its home directory, store, plugin
 * registry, exec service and REST API, started and stopped as one.
 * `loom serve` runs one in the foreground; `loom demo` embeds one.
 */
#ifndef LOOM_API_SERVER_H
#define LOOM_API_SERVER_H

#include <limits.h>
#include <pthread.h>

#include "api/http.h"
#include "api/status.h"
#include "auth/auth.h"
#include "exec/exec.h"
#include "hpo/hpo.h"
#include "infer/infer.h"
#include "sched/sched_service.h"
#include "plugin/registry.h"
#include "store/store.h"

typedef struct loomd_options {
    const char *home;        /* state directory (created if missing) */
    const char *address;     /* default "127.0.0.1" */
    int port;                /* 0: any free port */
    const char *plugin_dir;  /* built-in plugins; NULL: next to the binary */
    int cpu_slots;           /* devices without a GPU; 0: the number of cores */
    double hysteresis;       /* seconds between resizes of one job; < 0: default */
    const char *admin_password; /* the first admin's, on a new home; NULL: random */
    const char *tls_cert_pem;   /* both set: serve HTTPS */
    const char *tls_key_pem;
    unsigned job_uid_first, job_uid_last; /* jobs' accounts when root; 0: defaults */
    int no_job_accounts;     /* root, yet jobs run as the host's user */
    int require_isolation;   /* refuse to start without complete isolation */
    exec_limits limits;      /* bounds on execs; zeros: the defaults */
    const char *const *data_roots; /* --data-root: where --data-dir may be (exec.h) */
    int data_root_count;
    http_limits http;        /* connections, uploads, slow requests; 0s: defaults */
    int allow_basic_over_http; /* passwords over plain HTTP on a non-loopback listener */
    const char *const *cors_origins; /* origins browsers may call from (api/cors.h) */
    int cors_origin_count;
} loomd_options;

typedef struct loomd {
    char home[PATH_MAX];
    char plugin_dir[PATH_MAX];
    char spool_dir[PATH_MAX]; /* HOME/uploads: file parts being received */
    int lock_fd;
    store *st;
    store *auth_st; /* the same database, the auth service's own connection */
    registry *reg;
    sched_service *sched;
    exec_service *execs;
    hpo_service *hpo;
    infer_service *infer;
    auth_service *auth;
    /* A new home's first admin password when it was generated: shown once. */
    char generated_admin_password[AUTH_PASSWORD_GEN_MAX];
    http_server *http;
    /* Passwords may come over this listener (HTTPS, loopback, or allowed). */
    int basic_over_http_allowed;
    cors_policy *cors;
    http_route routes[128];
    pthread_mutex_t admin_lock; /* plugin add/remove: file, registry, store */
    unsigned upload_seq;
} loomd;

/* Starts everything, or returns NULL with the reason in err (the CLI's edge:
 * `loom serve` and `loom demo` print it). Refuses a home another host holds
 * (err names the home and its holder): the host keeps an flock on
 * HOME/loom.lock while it runs. */
loomd *loomd_start(const loomd_options *opt, char *err, size_t errlen);
/* 1 when a running host holds `home`, with `why` naming the home and that
 * host ("pid N at URL"), else 0. Opens nothing but the lock file, so a
 * caller can refuse before touching the home. */
int loomd_home_held(const char *home, char *why, size_t whylen);
int loomd_port(const loomd *d);
void loomd_stop(loomd *d);

/* The folder of built-in plugins for this binary: $LOOM_PLUGIN_DIR, else
 * ../lib/loom/plugins (or the install's libdir) next to the executable. */
void loomd_default_plugin_dir(char *out, size_t outlen);

/* Route tables of the subsystems (routes_*.c). */
extern const http_route loom_exec_routes[];
extern const size_t loom_exec_route_count;
extern const http_route loom_auth_routes[];
extern const size_t loom_auth_route_count;
int loomd_authenticate(void *ctx, const http_request *req, char *user, size_t userlen,
                       int *is_admin, loom_error **why);
/* Whose records an authenticated request sees: EXEC_ADMIN for an
 * administrator, else the user's immutable id (-1, nobody's, when the user
 * was removed meanwhile). */
int64_t loomd_caller_id(loomd *d, const http_request *req);
extern const http_route loom_sched_routes[];
extern const size_t loom_sched_route_count;
extern const http_route loom_plugin_routes[];
extern const size_t loom_plugin_route_count;
/* Unregisters a user plugin and removes its stored file (routes_plugin.c;
 * the tuning routes' algorithm delete uses it too). Replies. */
void loomd_remove_plugin(loomd *d, loom_kind kind, const char *name, http_response *res);
extern const http_route loom_hpo_routes[];
extern const size_t loom_hpo_route_count;
extern const http_route loom_infer_routes[];
extern const size_t loom_infer_route_count;

/* Confines the host's jobs (isolation.c): accounts when root, the home's
 * modes; says at start what isolation jobs have. -1 with err when that
 * fails, or when it is incomplete and opt->require_isolation is set. */
int loomd_isolate_jobs(loomd *d, const loomd_options *opt, char *err, size_t errlen);

/* Loads the user plugins recorded in the store (at start-up). */
void loomd_load_user_plugins(loomd *d);

#endif
