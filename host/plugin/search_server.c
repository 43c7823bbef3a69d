/* plugin/search_server.c - see search_server.h. */
#include "plugin/search_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "plugin/search_wire.h"

struct search_server {
    const loom_search_factory *f;
    loom_search_instance *inst;
    search_config_copy cfg;
    int has_cfg;
    loom_proposal_sink sink;
    /* The call in progress. */
    search_outcome out;
    uint32_t cap_proposals, cap_stops;
    uint64_t next_id;
    uint32_t max;        /* proposals still allowed in this call */
    int in_suggest;
};

search_server *search_server_new(const loom_search_factory *factory)
{
    search_server *s = calloc(1, sizeof *s);
    if (s)
        s->f = factory;
    return s;
}

static void drop_instance(search_server *s)
{
    if (s->inst)
        s->f->destroy(s->inst);
    s->inst = NULL;
    if (s->has_cfg)
        search_config_copy_free(&s->cfg);
    s->has_cfg = 0;
}

void search_server_free(search_server *s)
{
    if (!s)
        return;
    drop_instance(s);
    search_outcome_free(&s->out, 0);
    free(s);
}

/* One proposal, under the SDK's refusal rule: LOOM_E_INVALID outside
 * suggest, LOOM_E_LIMIT past its `max`, LOOM_E_INVALID for a value outside the space (also kept
 * in out.refused for the host's log), LOOM_E_INTERNAL out of memory. */
static loom_error *propose_checked(search_server *s, const loom_value *values, uint32_t count,
                                   double budget, uint64_t *id)
{
    uint32_t n = s->cfg.cfg.param_count;
    *id = 0;
    if (!s->in_suggest)
        return loom_err(LOOM_E_INVALID, "propose: only inside suggest");
    if (s->max == 0)
        return loom_err(LOOM_E_LIMIT, "propose: this suggest's proposals are used up");
    loom_error *bad = NULL;
    if (!values || count != n)
        bad = loom_err(LOOM_E_INVALID, "a proposal of %u values for a space of %u parameters",
                       count, n);
    for (uint32_t i = 0; !bad && i < n; i++)
        bad = search_value_fits(&s->cfg.params[i], &values[i]);
    if (!bad && !(budget >= 0 && budget < 1e15))
        bad = loom_err(LOOM_E_INVALID, "budget %g: expected 0 or a positive number", budget);
    if (bad) {
        if (!s->out.refused[0])
            snprintf(s->out.refused, sizeof s->out.refused, "proposed a value outside the space: %s",
                     loom_err_message(bad));
        return loom_err_wrap(bad, "propose");
    }
    if (s->out.nproposals == s->cap_proposals) {
        uint32_t cap = s->cap_proposals ? s->cap_proposals * 2 : 8;
        search_proposal *grown = realloc(s->out.proposals, cap * sizeof *grown);
        if (!grown)
            return loom_err(LOOM_E_INTERNAL, "propose: out of memory");
        s->out.proposals = grown;
        s->cap_proposals = cap;
    }
    loom_value *copy = calloc(n ? n : 1, sizeof *copy);
    if (!copy)
        return loom_err(LOOM_E_INTERNAL, "propose: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        copy[i] = values[i];
        copy[i].s = values[i].type == LOOM_VALUE_STRING && values[i].s ? strdup(values[i].s) : NULL;
    }
    search_proposal *p = &s->out.proposals[s->out.nproposals++];
    p->id = s->next_id++;
    p->budget = budget;
    p->values = copy;
    s->max--;
    *id = p->id;
    return NULL;
}

/* ABI 1.0's shape: the id, or 0 when refused. */
static uint64_t sink_propose(const loom_proposal_sink *sink, const loom_value *values,
                             uint32_t count, double budget)
{
    uint64_t id;
    loom_err_free(propose_checked(sink->host_data, values, count, budget, &id));
    return id;
}

static loom_error *sink_propose_experiment(const loom_proposal_sink *sink, const loom_value *values,
                                           uint32_t count, double budget, uint64_t *experiment_id)
{
    uint64_t id;
    loom_error *e = propose_checked(sink->host_data, values, count, budget, &id);
    if (experiment_id)
        *experiment_id = id;
    return e;
}

static loom_error *stop_checked(search_server *s, uint64_t experiment_id)
{
    if (s->out.nstops == s->cap_stops) {
        uint32_t cap = s->cap_stops ? s->cap_stops * 2 : 8;
        uint64_t *grown = realloc(s->out.stops, cap * sizeof *grown);
        if (!grown)
            return loom_err(LOOM_E_INTERNAL, "stop: out of memory");
        s->out.stops = grown;
        s->cap_stops = cap;
    }
    s->out.stops[s->out.nstops++] = experiment_id;
    return NULL;
}

/* ABI 1.0's shape: 0, or a loom_code. */
static int32_t sink_stop(const loom_proposal_sink *sink, uint64_t experiment_id)
{
    loom_error *e = stop_checked(sink->host_data, experiment_id);
    int32_t code = e ? LOOM_ERR_INTERNAL : 0;
    loom_err_free(e);
    return code;
}

static loom_error *sink_stop_experiment(const loom_proposal_sink *sink, uint64_t experiment_id)
{
    return stop_checked(sink->host_data, experiment_id);
}

static void sink_finish(const loom_proposal_sink *sink)
{
    search_server *s = sink->host_data;
    s->out.finished = 1;
}

static void begin_call(search_server *s, uint64_t next_id, uint32_t max, int in_suggest)
{
    search_outcome_free(&s->out, s->cfg.cfg.param_count);
    s->cap_proposals = s->cap_stops = 0;
    s->next_id = next_id;
    s->max = max;
    s->in_suggest = in_suggest;
    s->sink = (loom_proposal_sink){.struct_size = sizeof s->sink, .host_data = s,
                                   .propose = sink_propose, .stop = sink_stop,
                                   .finish = sink_finish,
                                   .propose_experiment = sink_propose_experiment,
                                   .stop_experiment = sink_stop_experiment};
}

static int has_state_api(const search_server *s)
{
    return LOOM_OPTIONAL_ENTRY(s->f, loom_search_factory, save_state) &&
           LOOM_OPTIONAL_ENTRY(s->f, loom_search_factory, load_state);
}

static loom_error *observe(search_server *s, wire_reader *r, wire_buf *extra)
{
    uint64_t next_id = wire_get_u64(r);
    uint32_t n = s->cfg.cfg.param_count;
    loom_observation o = {.struct_size = sizeof o};
    loom_metric metrics[LOOM_MAX_METRICS];
    loom_value *values = calloc(n ? n : 1, sizeof *values);
    if (!values)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    o.status = wire_get_i32(r);
    o.experiment_id = wire_get_u64(r);
    o.has_objective = wire_get_i32(r);
    o.objective = wire_get_f64(r);
    o.budget = wire_get_f64(r);
    search_wire_get_values(r, values, n, 0);
    o.value_count = n;
    o.values = values;
    o.metric_count = wire_get_u32(r);
    if (o.metric_count > LOOM_MAX_METRICS)
        r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < o.metric_count; i++) {
        metrics[i].name = wire_get_str(r);
        metrics[i].value = wire_get_f64(r);
    }
    o.metrics = metrics;
    loom_error *e = NULL;
    if (!r->bad) {
        begin_call(s, next_id, 0, 0);
        e = s->f->observe(s->inst, &o, &s->sink);
        search_wire_put_outcome(extra, &s->out, n);
    }
    free(values);
    return e;
}

loom_error *search_server_dispatch(search_server *s, uint8_t op, wire_reader *r, wire_buf *extra)
{
    if (op == WIRE_SEARCH_CREATE) {
        drop_instance(s);
        if (search_wire_get_config(r, &s->cfg) != 0) {
            search_config_copy_free(&s->cfg);
            r->bad = 1;
            return NULL;
        }
        s->has_cfg = 1;
        loom_error *e = s->f->create(s->f, &s->cfg.cfg, &s->inst);
        if (e)
            s->inst = NULL;
        wire_put_u8(extra, (uint8_t)has_state_api(s));
        return e;
    }
    if (!s->inst)
        return loom_err(LOOM_E_INTERNAL, "no search instance (create first)");
    if (op == WIRE_SEARCH_SUGGEST) {
        uint64_t next_id = wire_get_u64(r);
        uint32_t max = wire_get_u32(r);
        if (r->bad)
            return NULL;
        begin_call(s, next_id, max, 1);
        loom_error *e = s->f->suggest(s->inst, max, &s->sink);
        search_wire_put_outcome(extra, &s->out, s->cfg.cfg.param_count);
        return e;
    }
    if (op == WIRE_SEARCH_OBSERVE)
        return observe(s, r, extra);
    if (op == WIRE_SEARCH_SAVE) {
        char *state = NULL;
        loom_error *e = has_state_api(s) ? s->f->save_state(s->inst, &state) : NULL;
        wire_put_str(extra, e ? NULL : state);
        free(state); /* loom_host.alloc is malloc */
        return e;
    }
    if (op == WIRE_SEARCH_LOAD) {
        const char *state = wire_get_str(r);
        if (r->bad || !state)
            return r->bad = 1, NULL;
        return has_state_api(s) ? s->f->load_state(s->inst, state) : NULL;
    }
    r->bad = 1;
    return NULL;
}
