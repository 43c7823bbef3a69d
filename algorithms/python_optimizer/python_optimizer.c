/*
 * algorithms/python_optimizer/python_optimizer.c - runs a WMLA plugin
 * optimizer (an optimizer.py defining `class PluginOptimizer
 * (BasePluginOptimizer)`) unchanged, in a Python subprocess of the
 * plugin-host process, over the line protocol of loom_optimizer_runner.py.
 *
 * The host passes, beside the task's algoParams, five options of its own:
 * __optimizer_dir (the installed folder), __python (the interpreter),
 * __runner (loom_optimizer_runner.py), __name (the installed name) and
 * __log_level (the plugins.core.logger level).
 * Suggest sends search(number_samples, last_exp_results) with the
 * experiments that ended since the previous call; each returned dict
 * becomes one proposal. The optimizer's get_state/set_state, with the
 * results not yet sent, are the plugin's saved state.
 */
#include <loom/loom.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "search_options.h"

#define MAX_LINE (16u << 20)

static const loom_host *host;

struct loom_search_instance {
    pid_t pid;
    FILE *to, *from;
    uint32_t count;
    cJSON *params;  /* the space as WMLA's hyperParams (names and types) */
    int32_t *types;
    cJSON *pending; /* last_exp_results not yet sent */
    char name[128];
};

static loom_error *fail(const char *fmt, const char *detail)
{
    return host->error_newf(LOOM_ERR_INTERNAL, fmt, detail);
}

/* One request line out, one reply line in: the reply object, or NULL with
 * *err set. */
static cJSON *roundtrip(loom_search_instance *inst, cJSON *req, loom_error **err)
{
    char *text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    *err = NULL;
    if (!text || fprintf(inst->to, "%s\n", text) < 0 || fflush(inst->to) != 0) {
        free(text);
        *err = fail("python optimizer: cannot write to its process (%s)", strerror(errno));
        return NULL;
    }
    free(text);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, inst->from);
    if (n <= 0 || (size_t)n > MAX_LINE) {
        free(line);
        *err = fail("python optimizer: its process ended without an answer (%s; see search.log)",
                    n <= 0 ? "end of output" : "reply too long");
        return NULL;
    }
    cJSON *reply = cJSON_Parse(line);
    free(line);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
    if (!cJSON_IsTrue(ok)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
        *err = host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "python optimizer '%s': %s", inst->name,
                                cJSON_IsString(e) ? e->valuestring : "a malformed reply");
        cJSON_Delete(reply);
        return NULL;
    }
    return reply;
}

static void destroy(loom_search_instance *inst)
{
    if (inst->to)
        fclose(inst->to);
    if (inst->from)
        fclose(inst->from);
    if (inst->pid > 0) {
        kill(inst->pid, SIGKILL);
        waitpid(inst->pid, NULL, 0);
    }
    cJSON_Delete(inst->params);
    cJSON_Delete(inst->pending);
    free(inst->types);
    free(inst);
}

static int spawn(loom_search_instance *inst, const char *python, const char *runner,
                 const char *log_level)
{
    int in[2], out[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]), close(in[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* The interpreter dies with the plugin-host process. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        if (log_level)
            setenv("LOOM_OPTIMIZER_LOG_LEVEL", log_level, 1);
        execl(python, python, "-u", runner, (char *)NULL);
        fprintf(stderr, "python optimizer: cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]), close(out[0]);
        return -1;
    }
    inst->pid = pid;
    inst->to = fdopen(in[1], "w");
    inst->from = fdopen(out[0], "r");
    return inst->to && inst->from ? 0 : -1;
}

static void add_number(cJSON *o, const char *key, double v) { cJSON_AddNumberToObject(o, key, v); }

/* One loom_param as WMLA's hyperParams entry. */
static cJSON *wmla_param(const loom_param *p)
{
    static const char *const types[] = {"", "DOUBLE", "INT", "STR"};
    int dbl = p->type == LOOM_VALUE_DOUBLE;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "type", p->kind == LOOM_PARAM_RANGE ? "Range" : "Discrete");
    cJSON_AddStringToObject(o, "dataType", types[p->type >= 1 && p->type <= 3 ? p->type : 0]);
    if (p->kind == LOOM_PARAM_RANGE) {
        add_number(o, dbl ? "minDbVal" : "minIntVal", p->low);
        add_number(o, dbl ? "maxDbVal" : "maxIntVal", p->high);
        if (p->step > 0)
            add_number(o, "step", p->step);
        if (p->log_base > 1)
            add_number(o, "power", p->log_base);
        return o;
    }
    cJSON *list = cJSON_AddArrayToObject(o, p->type == LOOM_VALUE_STRING ? "discreateStrVal"
                                            : dbl                         ? "discreteDbVal"
                                                                          : "discreteIntVal");
    for (uint32_t k = 0; k < p->choice_count; k++)
        cJSON_AddItemToArray(list, p->type == LOOM_VALUE_STRING
                                       ? cJSON_CreateString(p->choice_strings[k])
                                   : dbl ? cJSON_CreateNumber(p->choice_doubles[k])
                                         : cJSON_CreateNumber((double)p->choice_ints[k]));
    return o;
}

static loom_error *create(const loom_search_factory *self, const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self;
    const char *dir = search_option(config, "__optimizer_dir");
    const char *python = search_option(config, "__python");
    const char *runner = search_option(config, "__runner");
    const char *name = search_option(config, "__name");
    if (!dir || !python || !runner)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "python optimizer: no installed optimizer given (install one with "
                               "loom algorithm add DIR)");
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    snprintf(inst->name, sizeof inst->name, "%s", name ? name : "optimizer");
    inst->count = config->param_count;
    inst->params = cJSON_CreateArray();
    inst->pending = cJSON_CreateArray();
    inst->types = calloc(config->param_count + 1, sizeof *inst->types);
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "create");
    cJSON_AddStringToObject(req, "dir", dir);
    cJSON_AddStringToObject(req, "name", inst->name);
    cJSON *hps = cJSON_AddArrayToObject(req, "hyperParams");
    for (uint32_t i = 0; i < config->param_count; i++) {
        cJSON_AddItemToArray(hps, wmla_param(&config->params[i]));
        cJSON_AddItemToArray(inst->params, cJSON_CreateString(config->params[i].name));
        if (inst->types)
            inst->types[i] = config->params[i].type;
    }
    cJSON *kw = cJSON_AddObjectToObject(req, "algoParams");
    for (uint32_t i = 0; i < config->option_count; i++)
        if (strncmp(config->options[i].name, "__", 2) != 0)
            cJSON_AddStringToObject(kw, config->options[i].name, config->options[i].value);
    if (!inst->types || spawn(inst, python, runner, search_option(config, "__log_level")) != 0) {
        cJSON_Delete(req);
        destroy(inst);
        return fail("python optimizer: cannot start the interpreter (%s)", strerror(errno));
    }
    loom_error *err;
    cJSON *reply = roundtrip(inst, req, &err);
    cJSON_Delete(reply);
    if (err) {
        destroy(inst);
        return err;
    }
    *out = inst;
    return NULL;
}

/* A sample dict as values in the space's order; 0 when it does not fit. */
static int to_values(loom_search_instance *inst, const cJSON *sample, loom_value *v, char *why,
                     size_t len)
{
    for (uint32_t i = 0; i < inst->count; i++) {
        const char *name = cJSON_GetArrayItem(inst->params, (int)i)->valuestring;
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(sample, name);
        memset(&v[i], 0, sizeof v[i]);
        v[i].type = inst->types[i];
        if (inst->types[i] == LOOM_VALUE_STRING && cJSON_IsString(x)) {
            v[i].s = x->valuestring;
        } else if (inst->types[i] != LOOM_VALUE_STRING && cJSON_IsNumber(x)) {
            v[i].d = x->valuedouble;
            v[i].i = (int64_t)llround(x->valuedouble);
        } else {
            snprintf(why, len, "its sample has no %s value for '%s'",
                     inst->types[i] == LOOM_VALUE_STRING ? "string" : "numeric", name);
            return 0;
        }
    }
    return 1;
}

static loom_error *suggest(loom_search_instance *inst, uint32_t max, const loom_proposal_sink *sink)
{
    if (max == 0)
        return NULL;
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "search");
    cJSON_AddNumberToObject(req, "n", max);
    cJSON_AddItemToObject(req, "results", inst->pending);
    inst->pending = cJSON_CreateArray();
    loom_error *err;
    cJSON *reply = roundtrip(inst, req, &err);
    if (err)
        return err;
    const cJSON *samples = cJSON_GetObjectItemCaseSensitive(reply, "samples");
    loom_value *v = calloc(inst->count + 1, sizeof *v);
    const cJSON *s;
    uint32_t n = 0;
    char why[256];
    cJSON_ArrayForEach(s, samples) {
        if (!v || n++ >= max)
            break;
        if (!to_values(inst, s, v, why, sizeof why)) {
            err = host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "python optimizer '%s': %s",
                                   inst->name, why);
            break;
        }
        if (sink->propose(sink, v, inst->count, 0) == 0)
            break;
    }
    free(v);
    cJSON_Delete(reply);
    return err;
}

static const char *status_name(int32_t s)
{
    return s == LOOM_EXPERIMENT_FINISHED ? "FINISHED" : s == LOOM_EXPERIMENT_KILLED ? "KILLED"
                                                                                   : "FAILED";
}

static loom_error *observe(loom_search_instance *inst, const loom_observation *obs,
                           const loom_proposal_sink *sink)
{
    (void)sink;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "id", (double)obs->experiment_id);
    cJSON *hp = cJSON_AddObjectToObject(r, "hyperParameters");
    for (uint32_t i = 0; i < obs->value_count && i < inst->count; i++) {
        const loom_value *v = &obs->values[i];
        const char *name = cJSON_GetArrayItem(inst->params, (int)i)->valuestring;
        if (v->type == LOOM_VALUE_STRING)
            cJSON_AddStringToObject(hp, name, v->s ? v->s : "");
        else
            cJSON_AddNumberToObject(hp, name, v->type == LOOM_VALUE_INT ? (double)v->i : v->d);
    }
    if (obs->has_objective)
        cJSON_AddNumberToObject(r, "result", obs->objective);
    else
        cJSON_AddNullToObject(r, "result");
    cJSON_AddStringToObject(r, "state", status_name(obs->status));
    cJSON_AddItemToArray(inst->pending, r);
    return NULL;
}

static loom_error *save_state(loom_search_instance *inst, char **state_out)
{
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "get_state");
    loom_error *err;
    cJSON *reply = roundtrip(inst, req, &err);
    if (err)
        return err;
    cJSON *state = cJSON_CreateObject();
    cJSON_AddItemToObject(state, "optimizer",
                          cJSON_DetachItemFromObjectCaseSensitive(reply, "state"));
    cJSON_AddItemReferenceToObject(state, "pending", inst->pending);
    char *text = cJSON_PrintUnformatted(state);
    cJSON_Delete(state);
    cJSON_Delete(reply);
    size_t len = text ? strlen(text) + 1 : 0;
    *state_out = text ? host->alloc(len) : NULL;
    if (*state_out)
        memcpy(*state_out, text, len);
    free(text);
    return *state_out ? NULL : host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
}

static loom_error *load_state(loom_search_instance *inst, const char *text)
{
    cJSON *state = cJSON_Parse(text);
    cJSON *pending = cJSON_DetachItemFromObjectCaseSensitive(state, "pending");
    if (cJSON_IsArray(pending)) {
        cJSON_Delete(inst->pending);
        inst->pending = pending;
    } else {
        cJSON_Delete(pending);
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "op", "set_state");
    cJSON *opt = cJSON_DetachItemFromObjectCaseSensitive(state, "optimizer");
    cJSON_AddItemToObject(req, "state", opt ? opt : cJSON_CreateNull());
    cJSON_Delete(state);
    loom_error *err;
    cJSON_Delete(roundtrip(inst, req, &err));
    return err;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create, .destroy = destroy, .suggest = suggest, .observe = observe,
    .save_state = save_state, .load_state = load_state,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *id)
{
    return id && strcmp(id, LOOM_SEARCH_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "python_optimizer",
    .version = "1.0.0",
    .description = "runs a WMLA plugin optimizer (optimizer.py, class PluginOptimizer) in Python",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void) { return &module; }
