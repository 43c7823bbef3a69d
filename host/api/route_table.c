/* api/route_table.c - the REST API's one table: every subsystem's routes
 * and the host's own health check. */
#include "api/api.h"
#include "api/routes.h"

#include "plugin/registry.h"

static void health(void *ctx, const http_request *req, http_response *res)
{
    (void)ctx;
    (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddStringToObject(o, "version", LOOM_VERSION);
    cJSON_AddNumberToObject(o, "abiMajor", LOOM_ABI_MAJOR);
    cJSON_AddNumberToObject(o, "abiMinor", LOOM_ABI_MINOR);
    http_reply_json(res, 200, o);
}

static const http_route core_routes[] = {
    {"GET", LOOM_ROUTE_HEALTH, health, HTTP_USER},
};

loom_error *api_route_table(http_route *routes, size_t *count)
{
    const struct {
        const http_route *table;
        size_t count;
    } parts[] = {
        {core_routes, sizeof core_routes / sizeof *core_routes},
        {loom_plugin_routes, loom_plugin_route_count},
        {loom_auth_routes, loom_auth_route_count},
        {loom_sched_routes, loom_sched_route_count},
        {loom_exec_routes, loom_exec_route_count},
        {loom_hpo_routes, loom_hpo_route_count},
        {loom_infer_routes, loom_infer_route_count},
        {loom_v2_routes, loom_v2_route_count},
        {loom_history_routes, loom_history_route_count},
        {loom_console_routes, loom_console_route_count},
        {loom_events_routes, loom_events_route_count},
    };
    size_t n = 0;
    for (size_t p = 0; p < sizeof parts / sizeof *parts; p++)
        for (size_t i = 0; i < parts[p].count; i++) {
            if (n == API_MAX_ROUTES)
                return loom_err(LOOM_E_LIMIT, "the REST API has more routes than API_MAX_ROUTES "
                                "(%d): raise it", API_MAX_ROUTES);
            routes[n++] = parts[p].table[i];
        }
    *count = n;
    return NULL;
}
