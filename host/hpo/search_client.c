/* hpo/search_client.c - see search_client.h. */
#include "hpo/search_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_proc.h"

struct search_client {
    plugin_proc *proc;
    char name[128];
    uint32_t param_count;
    int has_state;
    wire_buf frame;
};

void search_client_free(search_client *c)
{
    if (!c)
        return;
    plugin_proc_free(c->proc);
    wire_free(&c->frame);
    free(c);
}

int search_client_has_state(const search_client *c) { return c->has_state; }

static loom_error *malformed(search_client *c, const char *what)
{
    return loom_err(LOOM_E_INTERNAL, "search '%s' %s: a malformed reply", c->name, what);
}

loom_error *search_client_start(const search_client_spec *spec, const loom_search_config *cfg,
                                search_client **out)
{
    *out = NULL;
    search_client *c = calloc(1, sizeof *c);
    if (!c)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    plugin_proc_spec ps = {.binary = spec->binary, .plugin_path = spec->plugin_path,
                           .name = spec->name, .kind = "search", .output = spec->output,
                           .deadline_ms = spec->deadline_ms, .read_dirs = spec->read_dirs,
                           .owner = spec->owner, .owner_id = spec->owner_id,
                           .write_dir = spec->work_dir,
                           /* One failure ends the task: no second try. */
                           .max_failures = 1};
    c->proc = plugin_proc_new(&ps);
    if (!c->proc) {
        free(c);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    snprintf(c->name, sizeof c->name, "%s", spec->name);
    c->param_count = cfg->param_count;
    wire_begin(&c->frame);
    wire_put_u8(&c->frame, WIRE_SEARCH_CREATE);
    search_wire_put_config(&c->frame, cfg);
    loom_error *e = wire_finish(&c->frame) != 0
                        ? loom_err(LOOM_E_TOO_LARGE, "the search space is too large to send")
                        : plugin_proc_call(c->proc, "create", &c->frame, 0);
    if (!e) {
        wire_reader r = plugin_proc_reply(c->proc);
        c->has_state = wire_get_u8(&r);
        if (r.bad)
            e = malformed(c, "create");
    }
    if (e) {
        search_client_free(c);
        return e;
    }
    *out = c;
    return NULL;
}

static loom_error *outcome_call(search_client *c, const char *what, search_outcome *out)
{
    memset(out, 0, sizeof *out);
    loom_error *e = wire_finish(&c->frame) != 0
                        ? loom_err(LOOM_E_TOO_LARGE, "search '%s' %s: the request is too large",
                                   c->name, what)
                        : plugin_proc_call(c->proc, what, &c->frame, 0);
    if (e)
        return e;
    wire_reader r = plugin_proc_reply(c->proc);
    if (search_wire_get_outcome(&r, c->param_count, out) != 0) {
        search_outcome_free(out, c->param_count);
        return malformed(c, what);
    }
    return NULL;
}

loom_error *search_client_suggest(search_client *c, uint64_t next_id, uint32_t max,
                                  search_outcome *out)
{
    wire_begin(&c->frame);
    wire_put_u8(&c->frame, WIRE_SEARCH_SUGGEST);
    wire_put_u64(&c->frame, next_id);
    wire_put_u32(&c->frame, max);
    return outcome_call(c, "suggest", out);
}

loom_error *search_client_observe(search_client *c, uint64_t next_id, const loom_observation *obs,
                                  search_outcome *out)
{
    wire_begin(&c->frame);
    wire_put_u8(&c->frame, WIRE_SEARCH_OBSERVE);
    wire_put_u64(&c->frame, next_id);
    search_wire_put_observation(&c->frame, obs);
    return outcome_call(c, "observe", out);
}

loom_error *search_client_save(search_client *c, char **state)
{
    *state = NULL;
    if (!c->has_state)
        return NULL;
    wire_begin(&c->frame);
    wire_put_u8(&c->frame, WIRE_SEARCH_SAVE);
    wire_finish(&c->frame);
    loom_error *e = plugin_proc_call(c->proc, "save_state", &c->frame, 0);
    if (e)
        return e;
    wire_reader r = plugin_proc_reply(c->proc);
    const char *s = wire_get_str(&r);
    if (r.bad)
        return malformed(c, "save_state");
    if (s && !(*state = strdup(s)))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    return NULL;
}

loom_error *search_client_load(search_client *c, const char *state)
{
    if (!c->has_state || !state)
        return NULL;
    wire_begin(&c->frame);
    wire_put_u8(&c->frame, WIRE_SEARCH_LOAD);
    wire_put_str(&c->frame, state);
    if (wire_finish(&c->frame) != 0)
        return loom_err(LOOM_E_TOO_LARGE, "search '%s' load_state: the state is too large",
                        c->name);
    return plugin_proc_call(c->proc, "load_state", &c->frame, 0);
}
