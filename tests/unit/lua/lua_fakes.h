/*
 * tests/unit/lua/lua_fakes.h - what the host would hand a Lua plugin: a
 * launch sink, a proposal sink and inference requests that record what the
 * plugin did, plus helpers to open the test scripts.
 */
#ifndef LOOM_TEST_LUA_FAKES_H
#define LOOM_TEST_LUA_FAKES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"
#include "plugin/lua_plugin.h"

static inline char *script_path(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", LUA_TEST_SCRIPT_DIR, name);
    return p;
}

/* lua_plugin_open with the message copied into err: NULL on failure. */
static inline lua_plugin *open_lua(const char *path, const lua_plugin_limits *limits, char *err,
                                   size_t errlen)
{
    lua_plugin *p = NULL;
    loom_error *e = lua_plugin_open(path, limits, &p);
    loom_err_take(e, err, errlen);
    return e ? NULL : p;
}

/* loom_factory_validate as 0 or -1, the message copied into err. */
static inline int validate(loom_kind kind, const void *factory, char *err, size_t errlen)
{
    return loom_err_take(loom_factory_validate(kind, factory), err, errlen) == LOOM_OK ? 0 : -1;
}

static inline const void *find_factory(lua_plugin *p, loom_kind kind, const char *name)
{
    const loom_registration *regs;
    size_t n = lua_plugin_registrations(p, &regs);
    for (size_t i = 0; i < n; i++)
        if (regs[i].kind == kind && strcmp(regs[i].name, name) == 0)
            return regs[i].factory;
    return NULL;
}

/* ---- launch sink ------------------------------------------------------- */

#define FAKE_MAX_WORKERS 8
#define FAKE_MAX_STRINGS 16

typedef struct fake_worker {
    int argc, envc;
    char argv[FAKE_MAX_STRINGS][128];
    char env[FAKE_MAX_STRINGS][128];
    char cwd[128];
} fake_worker;

typedef struct fake_launch {
    loom_launch_sink sink;
    int workers;
    fake_worker worker[FAKE_MAX_WORKERS];
    int fail_at; /* rank whose add_worker fails; -1 for none */
} fake_launch;

static inline loom_error *fake_add_worker(const loom_launch_sink *sink,
                                   const char *const *argv, uint32_t argc,
                                   const char *const *env, uint32_t envc,
                                   const char *cwd)
{
    fake_launch *f = sink->host_data;
    if (f->workers == f->fail_at)
        return loom_err(LOOM_ERR_UNAVAILABLE, "no slot for worker %d", f->workers);
    if (f->workers == FAKE_MAX_WORKERS || argc > FAKE_MAX_STRINGS ||
        envc > FAKE_MAX_STRINGS)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "fake sink is full");
    fake_worker *w = &f->worker[f->workers++];
    w->argc = (int)argc;
    w->envc = (int)envc;
    for (uint32_t i = 0; i < argc; i++)
        snprintf(w->argv[i], sizeof w->argv[i], "%s", argv[i]);
    for (uint32_t i = 0; i < envc; i++)
        snprintf(w->env[i], sizeof w->env[i], "%s", env[i]);
    snprintf(w->cwd, sizeof w->cwd, "%s", cwd ? cwd : "(null)");
    return NULL;
}

static inline void fake_launch_init(fake_launch *f)
{
    memset(f, 0, sizeof *f);
    f->sink.struct_size = sizeof f->sink;
    f->sink.host_data = f;
    f->sink.add_worker = fake_add_worker;
    f->fail_at = -1;
}

static inline int worker_has_env(const fake_worker *w, const char *kv)
{
    for (int i = 0; i < w->envc; i++)
        if (strcmp(w->env[i], kv) == 0)
            return 1;
    return 0;
}

/* ---- proposal sink ----------------------------------------------------- */

typedef struct fake_proposals {
    loom_proposal_sink sink;
    const loom_param *params; /* the space, to format proposals */
    uint32_t param_count;
    uint64_t next_id;
    int count;
    int finished;
    int refuse; /* answer 0 to every proposal */
    int stops;
    uint64_t stopped;
    double budgets[8];
    char configs[8][256]; /* each proposal as {"name":value,...} */
} fake_proposals;

static inline uint64_t fake_propose(const loom_proposal_sink *sink, const loom_value *values,
                                    uint32_t count, double budget)
{
    fake_proposals *f = sink->host_data;
    if (f->refuse || f->count == 8 || count != f->param_count)
        return 0;
    char *out = f->configs[f->count];
    size_t used = 0, cap = sizeof f->configs[0];
    used += (size_t)snprintf(out, cap, "{");
    for (uint32_t i = 0; i < count && used < cap; i++) {
        const char *sep = i ? "," : "";
        const char *name = f->params[i].name;
        if (values[i].type == LOOM_VALUE_STRING)
            used += (size_t)snprintf(out + used, cap - used, "%s\"%s\":\"%s\"", sep, name,
                                     values[i].s);
        else if (values[i].type == LOOM_VALUE_INT)
            used += (size_t)snprintf(out + used, cap - used, "%s\"%s\":%lld", sep, name,
                                     (long long)values[i].i);
        else
            used += (size_t)snprintf(out + used, cap - used, "%s\"%s\":%.15g", sep, name,
                                     values[i].d);
    }
    if (used < cap)
        snprintf(out + used, cap - used, "}");
    f->budgets[f->count++] = budget;
    return f->next_id++;
}

static inline int32_t fake_stop(const loom_proposal_sink *sink, uint64_t id)
{
    fake_proposals *f = sink->host_data;
    f->stops++;
    f->stopped = id;
    return 0;
}

static inline void fake_finish(const loom_proposal_sink *sink)
{
    fake_proposals *f = sink->host_data;
    f->finished = 1;
}

static inline void fake_proposals_init(fake_proposals *f, uint64_t first_id)
{
    memset(f, 0, sizeof *f);
    f->sink.struct_size = sizeof f->sink;
    f->sink.host_data = f;
    f->sink.propose = fake_propose;
    f->sink.stop = fake_stop;
    f->sink.finish = fake_finish;
    f->next_id = first_id;
}

static inline void fake_proposals_space(fake_proposals *f, const loom_param *params,
                                        uint32_t count)
{
    f->params = params;
    f->param_count = count;
}

/* ---- inference requests ------------------------------------------------ */

typedef struct fake_request {
    loom_infer_request r;
    int answers;
    int status;
    char content_type[64];
    char body[256];
} fake_request;

static inline loom_error *fake_respond(loom_infer_request *request, int32_t status,
                                const char *content_type, const uint8_t *body,
                                uint64_t body_len)
{
    fake_request *f = (fake_request *)request;
    if (f->answers++ > 0)
        return loom_err(LOOM_ERR_ALREADY_EXISTS, "request %llu already answered",
                        (unsigned long long)request->id);
    f->status = status;
    snprintf(f->content_type, sizeof f->content_type, "%s",
             content_type ? content_type : "(null)");
    snprintf(f->body, sizeof f->body, "%.*s", (int)body_len, (const char *)body);
    return NULL;
}

static inline void fake_request_init(fake_request *f, uint64_t id, const char *body)
{
    memset(f, 0, sizeof *f);
    f->r.struct_size = sizeof f->r;
    f->r.id = id;
    f->r.content_type = "application/json";
    f->r.body = (const uint8_t *)body;
    f->r.body_len = strlen(body);
    f->r.respond = fake_respond;
}

#endif
