/*
 * algorithms/random/random_state.c - random search's save_state/load_state.
 * The state is one JSON object:
 *   {"algorithm":"random","version":1,"rng":"<64 hex digits>",
 *    "proposed":N,"best":{"id":..,"value":..} or null,
 *    "observations":[{"id":..,"status":..,"value":..}, ...]}
 * The generator is kept as hex text because JSON numbers are doubles and
 * would lose its bits. "best" is for readers; loading recomputes it from the
 * observations.
 */
#include "random_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STATE_VERSION 1

loom_error *random_save_state(loom_search_instance *inst, char **state_out)
{
    *state_out = NULL;
    char rng_text[SEARCH_RNG_TEXT_LEN + 1];
    search_rng_format(&inst->rng, rng_text);

    cJSON *root = cJSON_CreateObject();
    cJSON *list = cJSON_CreateArray();
    int ok = root && list;
    ok = ok && cJSON_AddStringToObject(root, "algorithm", "random");
    ok = ok && cJSON_AddNumberToObject(root, "version", STATE_VERSION);
    ok = ok && cJSON_AddStringToObject(root, "rng", rng_text);
    ok = ok && cJSON_AddNumberToObject(root, "proposed", (double)inst->proposed);
    if (ok && inst->has_best) {
        cJSON *best = cJSON_AddObjectToObject(root, "best");
        ok = best && cJSON_AddNumberToObject(best, "id", (double)inst->best_id) &&
             cJSON_AddNumberToObject(best, "value", inst->best_value);
    } else if (ok) {
        ok = cJSON_AddNullToObject(root, "best") != NULL;
    }
    for (uint32_t i = 0; ok && i < inst->observation_count; i++) {
        const random_observation *o = &inst->observations[i];
        cJSON *item = cJSON_CreateObject();
        ok = item && cJSON_AddItemToArray(list, item);
        if (!ok) {
            cJSON_Delete(item);
            break;
        }
        ok = cJSON_AddNumberToObject(item, "id", (double)o->experiment_id) &&
             cJSON_AddNumberToObject(item, "status", o->status) &&
             (o->has_value ? cJSON_AddNumberToObject(item, "value", o->value) != NULL
                           : cJSON_AddNullToObject(item, "value") != NULL);
    }
    if (ok && cJSON_AddItemToObject(root, "observations", list))
        list = NULL; /* owned by root now */
    else
        ok = 0;
    cJSON_Delete(list);

    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return random_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                      "random: out of memory saving the state");
    /* The host frees the state, so it must come from the host's allocator. */
    size_t len = strlen(text) + 1;
    *state_out = random_host->alloc(len);
    if (*state_out)
        memcpy(*state_out, text, len);
    cJSON_free(text);
    if (!*state_out)
        return random_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                      "random: out of memory saving the state");
    return NULL;
}

static loom_error *bad_state(const char *what)
{
    return random_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                   "random: saved state: %s", what);
}

static int read_count(const cJSON *root, const char *field, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9.0e15)
        return -1;
    *out = (uint64_t)v->valuedouble;
    return 0;
}

/* Everything is checked before the instance changes, so a bad state leaves
 * the search as it was. */
loom_error *random_load_state(loom_search_instance *inst, const char *state)
{
    cJSON *root = state ? cJSON_Parse(state) : NULL;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return bad_state("not a JSON object");
    }
    loom_error *err = NULL;
    const cJSON *algorithm = cJSON_GetObjectItemCaseSensitive(root, "algorithm");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *rng_text = cJSON_GetObjectItemCaseSensitive(root, "rng");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "observations");
    search_rng rng;
    uint64_t proposed = 0; /* set by read_count; GCC -O3 cannot tell */
    random_observation *observations = NULL;
    uint32_t count = 0;

    if (!cJSON_IsString(algorithm) || strcmp(algorithm->valuestring, "random") != 0)
        err = bad_state("field 'algorithm' is not \"random\" (a state saved by another search?)");
    else if (!cJSON_IsNumber(version) || version->valuedouble != STATE_VERSION)
        err = bad_state("field 'version' is not 1");
    else if (!cJSON_IsString(rng_text) || search_rng_parse(&rng, rng_text->valuestring) < 0)
        err = bad_state("field 'rng' is not 64 hex digits of generator state");
    else if (read_count(root, "proposed", &proposed) < 0)
        err = bad_state("field 'proposed' is not a non-negative integer");
    else if (!cJSON_IsArray(list))
        err = bad_state("field 'observations' is not an array");
    if (err) {
        cJSON_Delete(root);
        return err;
    }

    int n = cJSON_GetArraySize(list);
    if (n > 0 && !(observations = calloc((size_t)n, sizeof *observations))) {
        cJSON_Delete(root);
        return random_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                      "random: out of memory loading the state");
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        random_observation *o = &observations[count];
        uint64_t id, status;
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, "value");
        if (read_count(item, "id", &id) < 0 || read_count(item, "status", &status) < 0 ||
            status > LOOM_EXPERIMENT_KILLED ||
            !(cJSON_IsNumber(value) || cJSON_IsNull(value))) {
            err = random_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                          "random: saved state: observations[%u] "
                                          "needs integer 'id' and 'status' and a "
                                          "number or null 'value'", count);
            break;
        }
        o->experiment_id = id;
        o->status = (int32_t)status;
        o->has_value = cJSON_IsNumber(value);
        o->value = o->has_value ? value->valuedouble : 0;
        count++;
    }
    cJSON_Delete(root);
    if (err) {
        free(observations);
        return err;
    }

    free(inst->observations);
    inst->observations = NULL;
    inst->observation_count = inst->observation_capacity = 0;
    inst->has_best = 0;
    inst->rng = rng;
    inst->proposed = proposed;
    for (uint32_t i = 0; i < count; i++)
        if (random_record(inst, observations[i].experiment_id, observations[i].status,
                          observations[i].has_value, observations[i].value) < 0) {
            free(observations);
            return random_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                          "random: out of memory loading the state");
        }
    free(observations);
    return NULL;
}
