/*
 * api/routes.h - the REST API's paths, for the routes that serve them
 * (routes_*.c, which add "/{}" for a path segment) and the CLI that calls
 * them (which adds "/%s"): one copy, so the two cannot drift apart.
 */
#ifndef LOOM_API_ROUTES_H
#define LOOM_API_ROUTES_H

#define LOOM_ROUTE_HEALTH "/loom/v1/health"
#define LOOM_ROUTE_SLOTS "/loom/v1/slots"
#define LOOM_ROUTE_PLANS "/loom/v1/plans"
#define LOOM_ROUTE_PLAN "/loom/v1/plan"       /* ?path=/plan/path */
#define LOOM_ROUTE_PLAN_MEMBERS LOOM_ROUTE_PLAN "/members" /* /{user}, ?path= */
#define LOOM_ROUTE_PLUGINS "/loom/v1/plugins" /* /{kind}/{name} */

#define LOOM_ROUTE_LOGON "/auth/v1/logon"
#define LOOM_ROUTE_DLIM_TOKEN "/dlim/v1/auth/token"
#define LOOM_ROUTE_CONDUCTOR_LOGON "/platform/rest/conductor/v1/auth/logon"
#define LOOM_ROUTE_LOGOUT "/auth/v1/logout"
#define LOOM_ROUTE_USERS "/auth/v1/users"     /* /{name}, /{name}/password */
#define LOOM_ROUTE_APIKEYS "/auth/v1/apikeys"

#define LOOM_ROUTE_EXECS "/platform/rest/deeplearning/v1/execs" /* /{id}, /{id}/log, ... */
#define LOOM_ROUTE_FRAMEWORKS LOOM_ROUTE_EXECS "/frameworks"
#define LOOM_ROUTE_HPO "/platform/rest/deeplearning/v1/hypersearch" /* /{name}, /{name}/restart */
#define LOOM_ROUTE_HPO_ALGORITHMS LOOM_ROUTE_HPO "/algorithm"      /* ?type=, /{name} */
/* WMLA's executor n (1: the first worker), stream stdout or stderr. */
#define LOOM_ROUTE_EXECUTOR_LOG \
    "/platform/rest/deeplearning/v1/scheduler/applications/{}/executor/{}/logs/{}"

/* Model services (dlim's): /{name}, /{name}/operation/start|stop,
 * /{name}/appprofile; inference at /inference/{name}. */
#define LOOM_ROUTE_MODELS "/dlim/v1/model"
#define LOOM_ROUTE_DEPLOYMENTS "/dlim/v1/deployment/model"
#define LOOM_ROUTE_INFERENCE "/dlim/v1/inference"
#define LOOM_ROUTE_OP_START "/operation/start"
#define LOOM_ROUTE_OP_STOP "/operation/stop"
#define LOOM_ROUTE_OP_PUBLISH "/publish"     /* an installed optimizer, for every user */
#define LOOM_ROUTE_OP_UNPUBLISH "/unpublish"
#define LOOM_ROUTE_APPPROFILE "/appprofile"

/* The Open Inference Protocol v2 (KServe's, Triton's): /{name} (metadata),
 * /{name}/ready, /{name}/infer; the health checks /live and /ready. */
#define LOOM_ROUTE_V2_MODELS "/v2/models"
#define LOOM_ROUTE_V2_HEALTH "/v2/health"
#define LOOM_ROUTE_V2_INFER "/infer"
#define LOOM_ROUTE_V2_READY "/ready"
#define LOOM_ROUTE_V2_LIVE "/live"

/* The host's history (routes_history.c): devices' holders, an exec's
 * metrics (/execs/{id}/metrics), a model's rate (/models/{name}). */
#define LOOM_ROUTE_HISTORY "/loom/v1/history"

/* The web console (routes_console.c): its files under /console/, its
 * session's log-on, log-off and CSRF token. */
#define LOOM_ROUTE_CONSOLE "/console"
#define LOOM_ROUTE_CONSOLE_LOGON LOOM_ROUTE_CONSOLE "/logon"
#define LOOM_ROUTE_CONSOLE_LOGOUT LOOM_ROUTE_CONSOLE "/logout"
#define LOOM_ROUTE_CONSOLE_SESSION LOOM_ROUTE_CONSOLE "/session"

/* What follows an object's segment. */
#define LOOM_ROUTE_LOG "/log"
#define LOOM_ROUTE_RESULT "/result"
#define LOOM_ROUTE_STOP "/stop"
#define LOOM_ROUTE_RESIZE "/resize"
#define LOOM_ROUTE_PASSWORD "/password"
#define LOOM_ROUTE_RESTART "/restart"

#endif
