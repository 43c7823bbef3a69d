/*
 * api/api.h - the host's services as the REST routes see them: the state
 * every handler gets as its context, the route tables of each subsystem and
 * the authenticator the transport asks. The daemon (daemon/) opens the
 * services and fills this in; the transport (http/) calls the routes.
 */
#ifndef LOOM_API_API_H
#define LOOM_API_API_H

#include <limits.h>
#include <pthread.h>

#include "api/status.h"
#include "auth/auth.h"
#include "exec/exec.h"
#include "hpo/hpo.h"
#include "http/http.h"
#include "infer/infer.h"
#include "plugin/registry.h"
#include "sched/sched_service.h"
#include "store/store.h"
#include "store/store_history.h"

/* The most routes the table holds (api_route_table). */
#define API_MAX_ROUTES 128

/* What every route handler gets as its context: the services, the home
 * they keep their files in, and the listener's password rule. */
typedef struct api_services {
    char home[PATH_MAX];
    /* Where the folders jobs reach live (execs, models, hpo, algorithms,
     * data, plugins): the home, or --shared-dir, which every node mounts. */
    char files[PATH_MAX];
    store *st;
    registry *reg;
    sched_service *sched;
    exec_service *execs;
    hpo_service *hpo;
    infer_service *infer;
    auth_service *auth;
    /* Passwords may come over this listener (HTTPS, loopback, or allowed). */
    int basic_over_http_allowed;
    int https;                  /* the listener serves HTTPS: cookies are Secure */
    char web_dir[PATH_MAX];     /* the console's files (routes_console.c) */
    store_history_bounds history_bounds; /* what api/history.h keeps */
    struct api_events *events;  /* live updates (api/events.h) */
    pthread_mutex_t admin_lock; /* plugin add/remove: file, registry, store */
    unsigned upload_seq;
} api_services;

/* Every subsystem's routes into routes[API_MAX_ROUTES], *count of them;
 * LOOM_E_LIMIT when they do not fit. Their handlers take an api_services *
 * as ctx. */
loom_error *api_route_table(http_route *routes, size_t *count);

/* Route tables of the subsystems (routes_*.c). */
extern const http_route loom_exec_routes[];
extern const size_t loom_exec_route_count;
extern const http_route loom_auth_routes[];
extern const size_t loom_auth_route_count;
/* The transport's authenticator (http_authenticator; ctx: api_services *):
 * the request's token or Basic credentials checked by the auth service. */
int api_authenticate(void *ctx, const http_request *req, char *user, size_t userlen,
                       int *is_admin, loom_error **why);
/* Whose records an authenticated request sees: EXEC_ADMIN for an
 * administrator, else the user's immutable id (-1, nobody's, when the user
 * was removed meanwhile). */
int64_t api_caller_id(api_services *d, const http_request *req);
/* A password log-on from this request: refused where passwords may not
 * travel (plain HTTP off loopback), else auth_logon_password with the
 * client's address for the limiter. */
loom_error *api_logon_password(api_services *d, const http_request *req, const char *user,
                               const char *password, char *token, size_t tlen, int64_t *expires);
/* A request authenticated by the console's session cookie (token): the
 * token checked, then the console's rules (routes_console.c): 0 with *who,
 * or -1 with *why set when a rule refuses it (left NULL for a bad token). */
int api_console_identity(api_services *d, const http_request *req, const char *token,
                         auth_identity *who, loom_error **why);
extern const http_route loom_console_routes[];
extern const size_t loom_console_route_count;
extern const http_route loom_events_routes[];
extern const size_t loom_events_route_count;
extern const http_route loom_history_routes[];
extern const size_t loom_history_route_count;
extern const http_route loom_sched_routes[];
extern const size_t loom_sched_route_count;
extern const http_route loom_plugin_routes[];
extern const size_t loom_plugin_route_count;
/* Unregisters a user plugin and removes its stored file (routes_plugin.c;
 * the tuning routes' algorithm delete uses it too). Replies. */
void api_remove_plugin(api_services *d, loom_kind kind, const char *name, http_response *res);
extern const http_route loom_hpo_routes[];
extern const size_t loom_hpo_route_count;
extern const http_route loom_infer_routes[];
extern const size_t loom_infer_route_count;
/* POST /dlim/v1/inference/{name} (routes_infer.c), which the v2 infer
 * route is too: the body to the model named by params[0], answered when
 * its batch is. */
void api_inference(void *ctx, const http_request *req, http_response *res);
extern const http_route loom_v2_routes[];
extern const size_t loom_v2_route_count;

/* Loads the user plugins recorded in the store (at start-up). */
void api_load_user_plugins(api_services *d);

#endif
