/*
 * algorithms/common/search_state.c - the common part of every built-in
 * search's saved state (see search_state.h).
 */
#include "search_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *search_state_begin(const char *algorithm, int version,
                          const search_rng *rng, uint64_t proposed,
                          const search_history *history)
{
    char rng_text[SEARCH_RNG_TEXT_LEN + 1];
    search_rng_format(rng, rng_text);
    cJSON *root = cJSON_CreateObject();
    cJSON *list = search_history_to_json(history);
    int ok = root && list && cJSON_AddStringToObject(root, "algorithm", algorithm) &&
             cJSON_AddNumberToObject(root, "version", version) &&
             cJSON_AddStringToObject(root, "rng", rng_text) &&
             cJSON_AddNumberToObject(root, "proposed", (double)proposed);
    if (ok && cJSON_AddItemToObject(root, "history", list))
        return root;
    cJSON_Delete(list);
    cJSON_Delete(root);
    return NULL;
}

loom_error *search_state_print(const loom_host *host, const char *algorithm,
                               cJSON *root, char **out)
{
    *out = NULL;
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (text) {
        /* The host frees the state, so it comes from the host's allocator. */
        size_t len = strlen(text) + 1;
        *out = host->alloc(len);
        if (*out)
            memcpy(*out, text, len);
        cJSON_free(text);
    }
    if (!*out)
        return host->error_newf(LOOM_ERR_RESOURCE_EXHAUSTED,
                                "%s: out of memory saving the state", algorithm);
    return NULL;
}

int search_state_add_seed(cJSON *object, const char *field, uint64_t seed)
{
    char text[17];
    snprintf(text, sizeof text, "%016llx", (unsigned long long)seed);
    return object && cJSON_AddStringToObject(object, field, text) ? 0 : -1;
}

int search_state_read_seed(const cJSON *object, const char *field, uint64_t *seed)
{
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(object, field));
    if (!text || strlen(text) != 16 || strspn(text, "0123456789abcdef") != 16)
        return -1;
    *seed = strtoull(text, NULL, 16);
    return 0;
}

int search_state_count(const cJSON *object, const char *field, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, field);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9.0e15)
        return -1;
    *out = (uint64_t)v->valuedouble;
    return 0;
}

loom_error *search_state_parse(const loom_host *host, const char *algorithm,
                               int version, const char *text, cJSON **root,
                               search_rng *rng, uint64_t *proposed,
                               search_history *history)
{
    *root = text ? cJSON_Parse(text) : NULL;
    const char *problem = NULL;
    if (!cJSON_IsObject(*root)) {
        problem = "not a JSON object";
    } else {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(*root, "algorithm");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(*root, "version");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(*root, "rng");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, algorithm) != 0)
            problem = "field 'algorithm' names another search (a state saved by "
                      "another algorithm?)";
        else if (!cJSON_IsNumber(v) || v->valuedouble != version)
            problem = "field 'version' is not this plugin's state version";
        else if (!cJSON_IsString(r) || search_rng_parse(rng, r->valuestring) < 0)
            problem = "field 'rng' is not 64 hex digits of generator state";
        else if (search_state_count(*root, "proposed", proposed) < 0)
            problem = "field 'proposed' is not a non-negative integer";
        else if (search_history_from_json(
                     history, cJSON_GetObjectItemCaseSensitive(*root, "history")) < 0)
            problem = "field 'history' is not a list of {id, status, value, "
                      "budget, u} with one coordinate in [0, 1] per parameter";
    }
    if (!problem)
        return NULL;
    cJSON_Delete(*root);
    *root = NULL;
    return host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "%s: saved state: %s",
                            algorithm, problem);
}
