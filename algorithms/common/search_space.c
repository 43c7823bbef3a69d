/* algorithms/common/search_space.c - see search_space.h. */
#include "search_space.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Integers travel through JSON as doubles; beyond 2^53 they lose digits. */
#define EXACT_INT_LIMIT 9007199254740992.0

enum { FIELD_ABSENT = 0, FIELD_OK = 1, FIELD_BAD = -1 };

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Whole-string strtod: WMLA writes some numbers as strings ("step": "16"). */
static int text_to_double(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    while (*end == ' ')
        end++;
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int json_to_double(const cJSON *item, double *out)
{
    if (cJSON_IsNumber(item)) {
        if (!isfinite(item->valuedouble))
            return -1;
        *out = item->valuedouble;
        return 0;
    }
    if (cJSON_IsString(item))
        return text_to_double(item->valuestring, out);
    return -1;
}

static int json_to_int(const cJSON *item, int64_t *out)
{
    double v;
    if (json_to_double(item, &v) < 0 || v != floor(v) ||
        fabs(v) > EXACT_INT_LIMIT)
        return -1;
    *out = (int64_t)v;
    return 0;
}

static int read_double(const cJSON *obj, const char *field, double *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!item || cJSON_IsNull(item))
        return FIELD_ABSENT;
    return json_to_double(item, out) == 0 ? FIELD_OK : FIELD_BAD;
}

static int read_int(const cJSON *obj, const char *field, int64_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!item || cJSON_IsNull(item))
        return FIELD_ABSENT;
    return json_to_int(item, out) == 0 ? FIELD_OK : FIELD_BAD;
}

static int require_double(const cJSON *obj, const search_param *p,
                          const char *field, double *out, char *err,
                          size_t errlen)
{
    int r = read_double(obj, field, out);
    if (r == FIELD_ABSENT)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is missing (expected a number)",
                    p->name, field);
    if (r == FIELD_BAD)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is not a finite number",
                    p->name, field);
    return 0;
}

static int require_int(const cJSON *obj, const search_param *p,
                       const char *field, int64_t *out, char *err,
                       size_t errlen)
{
    int r = read_int(obj, field, out);
    if (r == FIELD_ABSENT)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is missing (expected an integer)",
                    p->name, field);
    if (r == FIELD_BAD)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is not an integer "
                    "(or beyond +-2^53)", p->name, field);
    return 0;
}

/* Optional "power": a positive base, 0 when absent. */
static int read_power(const cJSON *obj, search_param *p, char *err,
                      size_t errlen)
{
    double power = 0;
    int r = read_double(obj, "power", &power);
    if (r == FIELD_ABSENT)
        return 0;
    if (r == FIELD_BAD || power <= 0)
        return fail(err, errlen,
                    "hyperparameter '%s': field 'power' must be a positive number",
                    p->name);
    p->power = power;
    return 0;
}

static int parse_range_double(const cJSON *obj, search_param *p, char *err,
                              size_t errlen)
{
    if (require_double(obj, p, "minDbVal", &p->min, err, errlen) < 0 ||
        require_double(obj, p, "maxDbVal", &p->max, err, errlen) < 0)
        return -1;
    if (p->min > p->max)
        return fail(err, errlen,
                    "hyperparameter '%s': 'minDbVal' (%g) is greater than 'maxDbVal' (%g)",
                    p->name, p->min, p->max);
    int r = read_double(obj, "step", &p->step);
    if (r == FIELD_BAD || (r == FIELD_OK && p->step <= 0))
        return fail(err, errlen,
                    "hyperparameter '%s': field 'step' must be a positive number",
                    p->name);
    if (read_power(obj, p, err, errlen) < 0)
        return -1;
    if (p->power > 0 && (!isfinite(pow(p->power, p->max)) ||
                         !isfinite(pow(p->power, p->min))))
        return fail(err, errlen,
                    "hyperparameter '%s': 'power' (%g) raised to the bounds "
                    "[%g, %g] overflows a double", p->name, p->power, p->min,
                    p->max);
    return 0;
}

static int parse_range_int(const cJSON *obj, search_param *p, char *err,
                           size_t errlen)
{
    if (require_int(obj, p, "minIntVal", &p->imin, err, errlen) < 0 ||
        require_int(obj, p, "maxIntVal", &p->imax, err, errlen) < 0)
        return -1;
    if (p->imin > p->imax)
        return fail(err, errlen,
                    "hyperparameter '%s': 'minIntVal' (%lld) is greater than "
                    "'maxIntVal' (%lld)", p->name, (long long)p->imin,
                    (long long)p->imax);
    p->istep = 1;
    int r = read_int(obj, "step", &p->istep);
    if (r == FIELD_BAD || (r == FIELD_OK && p->istep < 1))
        return fail(err, errlen,
                    "hyperparameter '%s': field 'step' must be an integer >= 1",
                    p->name);
    if (read_power(obj, p, err, errlen) < 0)
        return -1;
    if (p->power > 0 &&
        !(fabs(pow(p->power, (double)p->imax)) < EXACT_INT_LIMIT &&
          fabs(pow(p->power, (double)p->imin)) < EXACT_INT_LIMIT))
        return fail(err, errlen,
                    "hyperparameter '%s': 'power' (%g) raised to the bounds "
                    "[%lld, %lld] leaves the exact integer range", p->name,
                    p->power, (long long)p->imin, (long long)p->imax);
    return 0;
}

static int parse_discrete(const cJSON *obj, search_param *p, char *err,
                          size_t errlen)
{
    const char *field;
    const char *expected;
    switch (p->data_type) {
    case SEARCH_INT: field = "discreteIntVal"; expected = "integers"; break;
    case SEARCH_DOUBLE: field = "discreteDbVal"; expected = "numbers"; break;
    default: field = "discreateStrVal"; expected = "strings"; break;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!list && p->data_type == SEARCH_STR) {
        /* WMLA misspells it; accept the correct spelling too. */
        list = cJSON_GetObjectItemCaseSensitive(obj, "discreteStrVal");
        if (list)
            field = "discreteStrVal";
    }
    if (!list)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is missing (expected a "
                    "non-empty array of %s)", p->name, field, expected);
    if (!cJSON_IsArray(list))
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is not an array (expected "
                    "a non-empty array of %s)", p->name, field, expected);
    int n = cJSON_GetArraySize(list);
    if (n <= 0)
        return fail(err, errlen,
                    "hyperparameter '%s': field '%s' is an empty array",
                    p->name, field);
    p->count = (uint32_t)n;
    if (p->data_type == SEARCH_INT)
        p->ivals = calloc((size_t)n, sizeof *p->ivals);
    else if (p->data_type == SEARCH_DOUBLE)
        p->dvals = calloc((size_t)n, sizeof *p->dvals);
    else
        p->svals = calloc((size_t)n, sizeof *p->svals);
    if (!p->ivals && !p->dvals && !p->svals)
        return fail(err, errlen, "hyperparameter '%s': out of memory", p->name);

    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, list) {
        int ok;
        if (p->data_type == SEARCH_INT)
            ok = json_to_int(v, &p->ivals[i]) == 0;
        else if (p->data_type == SEARCH_DOUBLE)
            ok = json_to_double(v, &p->dvals[i]) == 0;
        else
            ok = cJSON_IsString(v) && (p->svals[i] = strdup(v->valuestring));
        if (!ok)
            return fail(err, errlen,
                        "hyperparameter '%s': %s[%d] is not one of the %s "
                        "that dataType %s expects", p->name, field, i,
                        expected,
                        p->data_type == SEARCH_INT      ? "INT"
                        : p->data_type == SEARCH_DOUBLE ? "DOUBLE"
                                                        : "STR");
        i++;
    }
    return 0;
}

static int parse_param(const cJSON *obj, uint32_t index, search_param *p,
                       char *err, size_t errlen)
{
    if (!cJSON_IsObject(obj))
        return fail(err, errlen, "hyperParams[%u]: expected an object", index);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    if (!cJSON_IsString(name) || name->valuestring[0] == '\0')
        return fail(err, errlen,
                    "hyperParams[%u]: field 'name' is missing (expected a "
                    "non-empty string)", index);
    if (!(p->name = strdup(name->valuestring)))
        return fail(err, errlen, "hyperParams[%u]: out of memory", index);

    const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    if (!cJSON_IsString(type))
        return fail(err, errlen,
                    "hyperparameter '%s': field 'type' is missing (expected "
                    "\"Range\" or \"Discrete\")", p->name);
    if (strcasecmp(type->valuestring, "Range") == 0)
        p->type = SEARCH_RANGE;
    else if (strcasecmp(type->valuestring, "Discrete") == 0)
        p->type = SEARCH_DISCRETE;
    else
        return fail(err, errlen,
                    "hyperparameter '%s': field 'type' is \"%s\" (expected "
                    "\"Range\" or \"Discrete\")", p->name, type->valuestring);

    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(obj, "dataType");
    if (!cJSON_IsString(dt))
        return fail(err, errlen,
                    "hyperparameter '%s': field 'dataType' is missing "
                    "(expected \"DOUBLE\", \"INT\" or \"STR\")", p->name);
    if (strcasecmp(dt->valuestring, "DOUBLE") == 0)
        p->data_type = SEARCH_DOUBLE;
    else if (strcasecmp(dt->valuestring, "INT") == 0)
        p->data_type = SEARCH_INT;
    else if (strcasecmp(dt->valuestring, "STR") == 0)
        p->data_type = SEARCH_STR;
    else
        return fail(err, errlen,
                    "hyperparameter '%s': field 'dataType' is \"%s\" (expected "
                    "\"DOUBLE\", \"INT\" or \"STR\")", p->name, dt->valuestring);

    if (p->type == SEARCH_DISCRETE)
        return parse_discrete(obj, p, err, errlen);
    if (p->data_type == SEARCH_DOUBLE)
        return parse_range_double(obj, p, err, errlen);
    if (p->data_type == SEARCH_INT)
        return parse_range_int(obj, p, err, errlen);
    return fail(err, errlen,
                "hyperparameter '%s': type Range needs dataType DOUBLE or INT "
                "(strings go in a Discrete list)", p->name);
}

int search_space_from_cjson(const cJSON *array, search_space *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsArray(array))
        return fail(err, errlen, "hyperParams: expected an array");
    int n = cJSON_GetArraySize(array);
    if (n == 0)
        return 0;
    out->params = calloc((size_t)n, sizeof *out->params);
    if (!out->params)
        return fail(err, errlen, "hyperParams: out of memory");
    out->count = (uint32_t)n;
    uint32_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array) {
        if (parse_param(item, i, &out->params[i], err, errlen) < 0)
            goto failed;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(out->params[j].name, out->params[i].name) == 0) {
                fail(err, errlen,
                     "hyperparameter '%s': the name appears twice in hyperParams",
                     out->params[i].name);
                goto failed;
            }
        i++;
    }
    return 0;
failed:
    search_space_free(out);
    return -1;
}

int search_space_parse(const char *json, search_space *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json)
        return fail(err, errlen, "hyperParams: missing (expected a JSON array)");
    cJSON *root = cJSON_Parse(json);
    if (!root)
        return fail(err, errlen, "hyperParams: not valid JSON");
    int rc = search_space_from_cjson(root, out, err, errlen);
    cJSON_Delete(root);
    return rc;
}

void search_space_free(search_space *space)
{
    for (uint32_t i = 0; i < space->count; i++) {
        search_param *p = &space->params[i];
        free(p->name);
        free(p->dvals);
        free(p->ivals);
        if (p->svals)
            for (uint32_t j = 0; j < p->count; j++)
                free(p->svals[j]);
        free(p->svals);
    }
    free(space->params);
    memset(space, 0, sizeof *space);
}

/* Levels of a stepped double range; the small slack keeps (0.5 - 0) / 0.1
 * at 6 levels despite rounding. */
static uint64_t double_levels(const search_param *p)
{
    double q = floor((p->max - p->min) / p->step + 1e-9);
    if (q >= EXACT_INT_LIMIT)
        q = EXACT_INT_LIMIT;
    return (uint64_t)q + 1;
}

uint64_t search_param_levels(const search_param *p)
{
    if (p->type == SEARCH_DISCRETE)
        return p->count;
    if (p->data_type == SEARCH_INT)
        return (uint64_t)((p->imax - p->imin) / p->istep) + 1;
    return p->step > 0 ? double_levels(p) : 0;
}

/* min + k * step accumulates binary noise (0.30000000000000004); twelve
 * significant digits give the value the user meant. */
static double tidy(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.12g", v);
    return strtod(buf, NULL);
}

cJSON *search_param_value(const search_param *p, double u)
{
    if (!(u > 0))
        u = 0; /* also NaN */
    if (u >= 1)
        u = nextafter(1.0, 0.0);
    uint64_t levels = search_param_levels(p);
    uint64_t k = 0;
    if (levels) {
        k = (uint64_t)(u * (double)levels);
        if (k >= levels)
            k = levels - 1;
    }

    if (p->type == SEARCH_DISCRETE) {
        if (p->data_type == SEARCH_INT)
            return cJSON_CreateNumber((double)p->ivals[k]);
        if (p->data_type == SEARCH_DOUBLE)
            return cJSON_CreateNumber(p->dvals[k]);
        return cJSON_CreateString(p->svals[k]);
    }
    if (p->data_type == SEARCH_INT) {
        int64_t x = p->imin + (int64_t)k * p->istep;
        if (p->power > 0)
            return cJSON_CreateNumber((double)llround(pow(p->power, (double)x)));
        return cJSON_CreateNumber((double)x);
    }
    double x;
    if (levels) {
        x = tidy(p->min + (double)k * p->step);
        if (x > p->max)
            x = p->max;
    } else {
        x = p->min + u * (p->max - p->min);
    }
    return cJSON_CreateNumber(p->power > 0 ? pow(p->power, x) : x);
}

cJSON *search_space_config(const search_space *space, const double *u)
{
    cJSON *config = cJSON_CreateObject();
    if (!config)
        return NULL;
    for (uint32_t i = 0; i < space->count; i++) {
        cJSON *v = search_param_value(&space->params[i], u[i]);
        if (!v || !cJSON_AddItemToObject(config, space->params[i].name, v)) {
            cJSON_Delete(v);
            cJSON_Delete(config);
            return NULL;
        }
    }
    return config;
}
