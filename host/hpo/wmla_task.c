/* hpo/wmla_task.c - see wmla_task.h. */
#include "hpo/wmla_task.h"

#include "plugin/search_wire.h"
#include "util/num_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define JSON_MAX_DEPTH 16

/* A number written as a JSON number or, WMLA's habit, a string. 1 when
 * present and numeric, 0 when absent, -1 when present but not a number. */
static int get_number(const cJSON *o, const char *key, double *out)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j))
        return 0;
    if (cJSON_IsNumber(j)) {
        *out = j->valuedouble;
        return isfinite(*out) ? 1 : -1;
    }
    if (!cJSON_IsString(j) || !j->valuestring[0])
        return -1;
    char *end;
    errno = 0;
    *out = strtod(j->valuestring, &end);
    while (*end == ' ')
        end++;
    return *end || errno || !isfinite(*out) ? -1 : 1;
}

static const char *get_string(const cJSON *o, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

const char *hpo_type_name(int32_t type)
{
    return type == LOOM_VALUE_DOUBLE ? "DOUBLE" : type == LOOM_VALUE_INT ? "INT" : "STR";
}

static int parse_type(const char *s)
{
    if (!s)
        return 0;
    if (!strcasecmp(s, "DOUBLE") || !strcasecmp(s, "FLOAT"))
        return LOOM_VALUE_DOUBLE;
    if (!strcasecmp(s, "INT") || !strcasecmp(s, "INTEGER"))
        return LOOM_VALUE_INT;
    if (!strcasecmp(s, "STR") || !strcasecmp(s, "STRING"))
        return LOOM_VALUE_STRING;
    return 0;
}

static int is_integer(double v) { return fabs(v) < 9.0e15 && v == floor(v); }

void hpo_task_spec_free(hpo_task_spec *t)
{
    if (!t)
        return;
    free(t->args);
    for (uint32_t i = 0; i < t->option_count; i++) {
        free((char *)t->options[i].name);
        free((char *)t->options[i].value);
    }
    free(t->options);
    for (uint32_t i = 0; i < t->param_count; i++) {
        loom_param *p = &t->params[i];
        free((char *)p->name);
        free((double *)p->choice_doubles);
        free((int64_t *)p->choice_ints);
        if (p->choice_strings)
            for (uint32_t c = 0; c < p->choice_count; c++)
                free((char *)p->choice_strings[c]);
        free((char **)p->choice_strings);
    }
    free(t->params);
    for (uint32_t i = 0; i < t->experiment_count; i++)
        free(t->experiments[i]);
    free(t->experiments);
    memset(t, 0, sizeof *t);
}

/* ---- algoDef ------------------------------------------------------------- */

static loom_error *parse_options(const cJSON *list, hpo_task_spec *t)
{
    if (!list)
        return NULL;
    if (!cJSON_IsArray(list))
        return loom_err(LOOM_E_INVALID, "algoDef.algoParams: expected an array of {name, value}");
    int n = cJSON_GetArraySize(list);
    if (n > HPO_MAX_OPTIONS)
        return loom_err(LOOM_E_INVALID, "algoDef.algoParams: %d entries, at most %d", n,
                        HPO_MAX_OPTIONS);
    t->options = calloc((size_t)n + 1, sizeof *t->options);
    if (!t->options)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    const cJSON *o;
    cJSON_ArrayForEach(o, list) {
        uint32_t i = t->option_count;
        const char *name = get_string(o, "name");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(o, "value");
        if (!name || !name[0])
            return loom_err(LOOM_E_INVALID, "algoDef.algoParams[%u]: expected a string 'name'", i);
        if (!cJSON_IsString(value))
            return loom_err(LOOM_E_INVALID,
                            "algoDef.algoParams[%u] (%s): 'value' must be a string (WMLA writes "
                            "every algoParams value as a string, e.g. \"3\")",
                            i, name);
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(t->options[k].name, name))
                return loom_err(LOOM_E_INVALID, "algoDef.algoParams: '%s' given twice", name);
        t->options[i].name = strdup(name);
        t->options[i].value = strdup(value->valuestring);
        t->option_count++;
        if (!t->options[i].name || !t->options[i].value)
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        if (!strcmp(name, "RandomSeed")) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(value->valuestring, &end, 10);
            if (*end || errno || !value->valuestring[0] || value->valuestring[0] == '-')
                return loom_err(LOOM_E_INVALID,
                                "algoDef.algoParams RandomSeed: expected a non-negative integer, "
                                "got \"%s\"", value->valuestring);
            t->seed = s;
            t->has_seed = 1;
        } else if (!strcmp(name, "ResourceName")) {
            snprintf(t->resource_name, sizeof t->resource_name, "%s", value->valuestring);
        }
    }
    return NULL;
}

static loom_error *parse_limit(const cJSON *def, const char *key, double max, double *out)
{
    int got = get_number(def, key, out);
    if (got < 0 || (got && (*out < 0 || !is_integer(*out) || *out > max)))
        return loom_err(LOOM_E_INVALID, "algoDef.%s: expected an integer from 0 to %.0f", key, max);
    if (!got)
        *out = 0;
    return NULL;
}

static loom_error *parse_algo_def(const cJSON *def, hpo_task_spec *t)
{
    if (!cJSON_IsObject(def))
        return loom_err(LOOM_E_INVALID, "algoDef: expected an object");
    const char *algo = get_string(def, "algorithm");
    if (!algo || !algo[0] || strlen(algo) >= sizeof t->algorithm)
        return loom_err(LOOM_E_INVALID, "algoDef.algorithm: expected the name of a search "
                                        "algorithm (Random, Tpe, Bayesian, Hyperband, "
                                        "ExperimentGridSearch or a registered plugin's)");
    snprintf(t->algorithm, sizeof t->algorithm, "%s", algo);
    double v;
    loom_error *e;
    if ((e = parse_limit(def, "maxRunTime", 365.0 * 24 * 3600, &v)))
        return e;
    t->max_run_time_s = (int64_t)v;
    if ((e = parse_limit(def, "maxJobNum", HPO_MAX_EXPERIMENTS, &v)))
        return e;
    t->max_jobs = (uint32_t)v;
    if ((e = parse_limit(def, "maxParalleJobNum", HPO_MAX_PARALLEL, &v)))
        return e;
    t->max_parallel = v > 0 ? (uint32_t)v : 1;
    const char *metric = get_string(def, "objectiveMetric");
    if (!metric || !metric[0] || strlen(metric) >= sizeof t->objective_metric)
        return loom_err(LOOM_E_INVALID, "algoDef.objectiveMetric: expected the name of a metric "
                                        "the experiments report (e.g. \"loss\")");
    snprintf(t->objective_metric, sizeof t->objective_metric, "%s", metric);
    const char *objective = get_string(def, "objective");
    if (!objective || !strcasecmp(objective, "minimize"))
        t->maximize = 0;
    else if (!strcasecmp(objective, "maximize"))
        t->maximize = 1;
    else
        return loom_err(LOOM_E_INVALID, "algoDef.objective: expected \"minimize\" or \"maximize\", "
                                        "got \"%s\"", objective);
    return parse_options(cJSON_GetObjectItemCaseSensitive(def, "algoParams"), t);
}

/* ---- hyperParams ---------------------------------------------------------- */

static char *dup_name(const char *s) { return s ? strdup(s) : NULL; }

static loom_error *parse_range(const cJSON *h, const char *where, loom_param *p)
{
    if (p->type == LOOM_VALUE_STRING)
        return loom_err(LOOM_E_INVALID, "%s: a Range cannot be STR (give a Discrete list of "
                                        "strings in discreateStrVal)", where);
    int dbl = p->type == LOOM_VALUE_DOUBLE;
    const char *kmin = dbl ? "minDbVal" : "minIntVal", *kmax = dbl ? "maxDbVal" : "maxIntVal";
    double lo, hi, step = 0, power = 0;
    int glo = get_number(h, kmin, &lo), ghi = get_number(h, kmax, &hi);
    if (glo != 1 || ghi != 1)
        return loom_err(LOOM_E_INVALID, "%s: a %s Range needs numbers %s and %s", where,
                        hpo_type_name(p->type), kmin, kmax);
    if (lo > hi)
        return loom_err(LOOM_E_INVALID, "%s: %s %g > %s %g", where, kmin, lo, kmax, hi);
    int gstep = get_number(h, "step", &step), gpow = get_number(h, "power", &power);
    if (gstep < 0 || (gstep && step < 0))
        return loom_err(LOOM_E_INVALID, "%s: step: expected a number >= 0", where);
    if (gpow < 0 || (gpow && power <= 1))
        return loom_err(LOOM_E_INVALID, "%s: power: expected a number > 1 (the log scale's base; "
                                        "the bounds are then its exponents)%s",
                        where, gpow < 0 ? ", got no number" : "");
    if (!dbl && !gpow && (!is_integer(lo) || !is_integer(hi)))
        return loom_err(LOOM_E_INVALID, "%s: %s and %s must be integers", where, kmin, kmax);
    if (!dbl && gstep && step > 0 && !gpow && (!is_integer(step) || step < 1))
        return loom_err(LOOM_E_INVALID, "%s: step: expected an integer >= 1 for INT", where);
    if (gpow && (fabs(hi) > 300 || fabs(lo) > 300))
        return loom_err(LOOM_E_INVALID, "%s: with power, %s and %s are exponents: %g..%g is out "
                                        "of range", where, kmin, kmax, lo, hi);
    p->kind = LOOM_PARAM_RANGE;
    p->low = lo;
    p->high = hi;
    p->step = step;
    p->log_base = gpow ? power : 0;
    if (!dbl && gpow && floor(pow(power, hi) + 0.5) < ceil(pow(power, lo) - 1e-9))
        return loom_err(LOOM_E_INVALID, "%s: no integer between %g^%g and %g^%g", where, power,
                        lo, power, hi);
    return NULL;
}

/* The discrete list under any of WMLA's names for the type. */
static const cJSON *discrete_list(const cJSON *h, int type, const char **key)
{
    static const char *const dbl[] = {"discreteDbVal", NULL};
    static const char *const in[] = {"discreteIntVal", NULL};
    static const char *const str[] = {"discreateStrVal", "discreteStrVal", NULL};
    const char *const *keys = type == LOOM_VALUE_DOUBLE ? dbl : type == LOOM_VALUE_INT ? in : str;
    *key = keys[0];
    for (int i = 0; keys[i]; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(h, keys[i]);
        if (j) {
            *key = keys[i];
            return j;
        }
    }
    return NULL;
}

static loom_error *parse_discrete(const cJSON *h, const char *where, loom_param *p)
{
    const char *key;
    const cJSON *list = discrete_list(h, p->type, &key);
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    if (n <= 0)
        return loom_err(LOOM_E_INVALID, "%s: a Discrete %s parameter needs a non-empty array %s",
                        where, hpo_type_name(p->type), key);
    if (n > HPO_MAX_CHOICES)
        return loom_err(LOOM_E_INVALID, "%s: %s has %d values, at most %d", where, key, n,
                        HPO_MAX_CHOICES);
    p->kind = LOOM_PARAM_CHOICE;
    p->choice_count = (uint32_t)n;
    double *d = p->type == LOOM_VALUE_DOUBLE ? calloc((size_t)n, sizeof *d) : NULL;
    int64_t *in = p->type == LOOM_VALUE_INT ? calloc((size_t)n, sizeof *in) : NULL;
    char **s = p->type == LOOM_VALUE_STRING ? calloc((size_t)n, sizeof *s) : NULL;
    p->choice_doubles = d;
    p->choice_ints = in;
    p->choice_strings = (const char *const *)s;
    if (!d && !in && !s)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, list) {
        if (s) {
            if (!cJSON_IsString(v))
                return loom_err(LOOM_E_INVALID, "%s: %s[%d]: expected a string", where, key, i);
            for (int k = 0; k < i; k++)
                if (!strcmp(s[k], v->valuestring))
                    return loom_err(LOOM_E_INVALID, "%s: %s: \"%s\" given twice", where, key,
                                    v->valuestring);
            if (!(s[i] = strdup(v->valuestring)))
                return loom_err(LOOM_E_INTERNAL, "out of memory");
        } else {
            double x = 0;
            int ok = cJSON_IsNumber(v) && isfinite(v->valuedouble);
            if (ok) {
                x = v->valuedouble;
            } else if (cJSON_IsString(v)) {
                char *end;
                x = strtod(v->valuestring, &end);
                ok = v->valuestring[0] && !*end && isfinite(x);
            }
            if (!ok || (in && !is_integer(x)))
                return loom_err(LOOM_E_INVALID, "%s: %s[%d]: expected %s", where, key, i,
                                in ? "an integer" : "a number");
            if (d)
                d[i] = x;
            else
                in[i] = (int64_t)x;
        }
        i++;
    }
    return NULL;
}

static loom_error *parse_param(const cJSON *h, uint32_t index, loom_param *p)
{
    char where[HPO_NAME_MAX + 32];
    const char *name = get_string(h, "name");
    snprintf(where, sizeof where, "hyperParams[%u] (%s)", index, name ? name : "no name");
    if (!cJSON_IsObject(h))
        return loom_err(LOOM_E_INVALID, "hyperParams[%u]: expected an object", index);
    if (!name || !name[0] || strlen(name) >= HPO_NAME_MAX)
        return loom_err(LOOM_E_INVALID, "%s: expected a non-empty string 'name' (under %d bytes)",
                        where, HPO_NAME_MAX);
    p->struct_size = sizeof *p;
    if (!(p->name = dup_name(name)))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    const char *dtype = get_string(h, "dataType");
    p->type = parse_type(dtype);
    if (!p->type)
        return loom_err(LOOM_E_INVALID, "%s: dataType: expected DOUBLE, INT or STR, got %s%s%s",
                        where, dtype ? "\"" : "", dtype ? dtype : "nothing", dtype ? "\"" : "");
    const char *type = get_string(h, "type");
    if (type && !strcasecmp(type, "Range"))
        return parse_range(h, where, p);
    if (type && !strcasecmp(type, "Discrete"))
        return parse_discrete(h, where, p);
    return loom_err(LOOM_E_INVALID, "%s: type: expected \"Range\" or \"Discrete\"", where);
}

static loom_error *parse_params(const cJSON *list, hpo_task_spec *t)
{
    int n = cJSON_GetArraySize(list);
    if (n <= 0)
        return loom_err(LOOM_E_INVALID, "hyperParams: expected a non-empty array");
    if (n > HPO_MAX_PARAMS)
        return loom_err(LOOM_E_INVALID, "hyperParams: %d parameters, at most %d", n, HPO_MAX_PARAMS);
    if (!(t->params = calloc((size_t)n, sizeof *t->params)))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    const cJSON *h;
    cJSON_ArrayForEach(h, list) {
        uint32_t i = t->param_count++;
        loom_error *e = parse_param(h, i, &t->params[i]);
        if (e)
            return e;
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(t->params[k].name, t->params[i].name))
                return loom_err(LOOM_E_INVALID, "hyperParams: the name '%s' is given twice",
                                t->params[i].name);
    }
    return NULL;
}

/* ---- experiments ---------------------------------------------------------- */

static const cJSON *fixed_of(const cJSON *hps, const char *name, const cJSON **dtype)
{
    const cJSON *h;
    cJSON_ArrayForEach(h, hps) {
        const char *n = get_string(h, "name");
        if (n && !strcmp(n, name)) {
            *dtype = cJSON_GetObjectItemCaseSensitive(h, "dataType");
            return cJSON_GetObjectItemCaseSensitive(h, "fixedVal");
        }
    }
    return NULL;
}

/* Reads a fixedVal ("0.01", 256 or "adam") as a value of p, or fails. */
static int fixed_value(const loom_param *p, const cJSON *fixed, loom_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = p->type;
    if (p->type == LOOM_VALUE_STRING) {
        if (!cJSON_IsString(fixed))
            return 0;
        for (uint32_t c = 0; c < p->choice_count; c++)
            if (!strcmp(p->choice_strings[c], fixed->valuestring))
                return out->s = p->choice_strings[c], 1;
        return 0;
    }
    double x;
    if (cJSON_IsNumber(fixed)) {
        x = fixed->valuedouble;
    } else if (cJSON_IsString(fixed) && fixed->valuestring[0]) {
        char *end;
        x = strtod(fixed->valuestring, &end);
        if (*end || !isfinite(x))
            return 0;
    } else {
        return 0;
    }
    if (p->type == LOOM_VALUE_INT) {
        if (!is_integer(x))
            return 0;
        out->i = (int64_t)x;
    } else {
        out->d = x;
    }
    loom_error *outside = hpo_value_in_space(p, out);
    loom_err_free(outside); /* the caller names the field */
    return outside == NULL;
}

/* Without hyperParams the space is the experiments' own: one choice per
 * name, of the values the experiments give it, in order of appearance. */
static loom_error *space_from_experiments(const cJSON *list, hpo_task_spec *t)
{
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "hyperParams");
    int n = cJSON_GetArraySize(first);
    if (!cJSON_IsArray(first) || n <= 0 || n > HPO_MAX_PARAMS)
        return loom_err(LOOM_E_INVALID, "experiments[0].hyperParams: expected 1 to %d "
                                        "{name, dataType, fixedVal}", HPO_MAX_PARAMS);
    cJSON *params = cJSON_CreateArray();
    const cJSON *h;
    int i = 0;
    cJSON_ArrayForEach(h, first) {
        const char *name = get_string(h, "name"), *dt = get_string(h, "dataType");
        int type = parse_type(dt);
        if (!name || !type) {
            cJSON_Delete(params);
            return loom_err(LOOM_E_INVALID, "experiments[0].hyperParams[%d]: expected a 'name' and "
                                            "a dataType DOUBLE, INT or STR", i);
        }
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "name", name);
        cJSON_AddStringToObject(p, "type", "Discrete");
        cJSON_AddStringToObject(p, "dataType", hpo_type_name(type));
        cJSON *vals = cJSON_AddArrayToObject(p, type == LOOM_VALUE_DOUBLE ? "discreteDbVal"
                                                : type == LOOM_VALUE_INT  ? "discreteIntVal"
                                                                          : "discreateStrVal");
        const cJSON *x;
        int k = 0;
        cJSON_ArrayForEach(x, list) {
            const cJSON *dtype, *f = fixed_of(cJSON_GetObjectItemCaseSensitive(x, "hyperParams"),
                                             name, &dtype);
            if (!f) {
                cJSON_Delete(params);
                cJSON_Delete(p);
                return loom_err(LOOM_E_INVALID, "experiments[%d]: no fixedVal for '%s'", k, name);
            }
            int dup = 0;
            const cJSON *seen;
            cJSON_ArrayForEach(seen, vals) dup |= cJSON_Compare(seen, f, 1);
            if (!dup)
                cJSON_AddItemToArray(vals, cJSON_Duplicate(f, 1));
            k++;
        }
        cJSON_AddItemToArray(params, p);
        i++;
    }
    loom_error *e = parse_params(params, t);
    cJSON_Delete(params);
    return e;
}

static loom_error *parse_experiments(const cJSON *list, hpo_task_spec *t)
{
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list) || n <= 0 || n > HPO_MAX_EXPERIMENTS)
        return loom_err(LOOM_E_INVALID, "experiments: expected an array of 1 to %d experiments",
                        HPO_MAX_EXPERIMENTS);
    if (!t->params) {
        loom_error *e = space_from_experiments(list, t);
        if (e)
            return e;
    }
    if (!(t->experiments = calloc((size_t)n, sizeof *t->experiments)))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    const cJSON *x;
    cJSON_ArrayForEach(x, list) {
        uint32_t k = t->experiment_count;
        const cJSON *hps = cJSON_GetObjectItemCaseSensitive(x, "hyperParams");
        if (!(t->experiments[k] = calloc(t->param_count, sizeof **t->experiments)))
            return loom_err(LOOM_E_INTERNAL, "out of memory");
        t->experiment_count++;
        if (!cJSON_IsArray(hps) || (uint32_t)cJSON_GetArraySize(hps) != t->param_count)
            return loom_err(LOOM_E_INVALID, "experiments[%u].hyperParams: expected %u "
                                            "{name, dataType, fixedVal}, one per parameter",
                            k, t->param_count);
        for (uint32_t i = 0; i < t->param_count; i++) {
            const loom_param *p = &t->params[i];
            const cJSON *dtype, *f = fixed_of(hps, p->name, &dtype);
            if (!f || !fixed_value(p, f, &t->experiments[k][i]))
                return loom_err(LOOM_E_INVALID, "experiments[%u]: '%s' needs a fixedVal that is a "
                                                "%s value of its space", k, p->name,
                                hpo_type_name(p->type));
        }
    }
    return NULL;
}

/* A task's name is a folder's name under the host's home: nothing that
 * could leave it ("..", "/") or need quoting in a URL. */
static int valid_task_name(const char *n)
{
    if (!n || !n[0] || n[0] == '.' || strlen(n) >= HPO_NAME_MAX)
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

loom_error *wmla_task_parse(const char *json, size_t len, hpo_task_spec *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return loom_err(LOOM_E_INVALID, "the task: expected a JSON object (WMLA's hpoName, "
                                        "modelSpec, algoDef, hyperParams)");
    }
    loom_error *e = NULL;
    const char *name = get_string(root, "hpoName");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "modelSpec");
    const char *args = get_string(model, "args");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "hyperParams");
    const cJSON *experiments = cJSON_GetObjectItemCaseSensitive(root, "experiments");
    if (!valid_task_name(name))
        e = loom_err(LOOM_E_INVALID, "hpoName: expected 1 to %d letters, digits, '_', '-' or '.', "
                                     "not starting with '.'", HPO_NAME_MAX - 1);
    else if (!args)
        e = loom_err(LOOM_E_INVALID, "modelSpec.args: expected a string in dlicmd syntax "
                                     "(e.g. \"--exec-start edt --model-dir DIR\")");
    else if (!params && !experiments)
        e = loom_err(LOOM_E_INVALID, "the task gives neither hyperParams nor experiments");
    if (!e) {
        snprintf(out->name, sizeof out->name, "%s", name);
        out->args = strdup(args);
        if (!out->args)
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    if (!e)
        e = parse_algo_def(cJSON_GetObjectItemCaseSensitive(root, "algoDef"), out);
    if (!e && params) {
        if (!cJSON_IsArray(params))
            e = loom_err(LOOM_E_INVALID, "hyperParams: expected an array");
        else
            e = parse_params(params, out);
    }
    if (!e && experiments)
        e = parse_experiments(experiments, out);
    if (!e && out->resource_name[0])
        for (uint32_t i = 0; i < out->param_count && !e; i++)
            if (!strcmp(out->params[i].name, out->resource_name))
                e = loom_err(LOOM_E_INVALID, "algoDef.algoParams ResourceName '%s' is also a "
                                             "hyperparameter", out->resource_name);
    cJSON_Delete(root);
    if (e)
        hpo_task_spec_free(out);
    return e;
}

/* ---- values --------------------------------------------------------------- */

loom_error *hpo_value_in_space(const loom_param *p, const loom_value *v)
{
    return search_value_fits(p, v);
}

cJSON *hpo_value_to_json(const loom_value *v)
{
    if (v->type == LOOM_VALUE_STRING)
        return cJSON_CreateString(v->s ? v->s : "");
    return cJSON_CreateNumber(v->type == LOOM_VALUE_INT ? (double)v->i : v->d);
}

int hpo_value_from_json(const loom_param *p, const cJSON *j, loom_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = p->type;
    if (p->type == LOOM_VALUE_STRING) {
        if (!cJSON_IsString(j) || p->kind != LOOM_PARAM_CHOICE)
            return 0;
        for (uint32_t c = 0; c < p->choice_count; c++)
            if (!strcmp(p->choice_strings[c], j->valuestring))
                return out->s = p->choice_strings[c], 1;
        return 0;
    }
    if (!cJSON_IsNumber(j))
        return 0;
    if (p->type == LOOM_VALUE_INT)
        out->i = (int64_t)j->valuedouble;
    else
        out->d = j->valuedouble;
    return 1;
}

void hpo_value_format(const loom_value *v, char *buf, size_t len)
{
    if (v->type == LOOM_VALUE_STRING)
        snprintf(buf, len, "%s", v->s ? v->s : "");
    else if (v->type == LOOM_VALUE_INT)
        snprintf(buf, len, "%lld", (long long)v->i);
    else
        num_text_double(v->d, buf, len);
}

