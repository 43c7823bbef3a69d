/* api/request_body.c - see request_body.h. */
#include "api/request_body.h"

#include "api/status.h"

/* cJSON recurses per nesting level: deeper input is refused unparsed. */
#define JSON_MAX_DEPTH 64

static int json_depth_ok(const char *s, size_t n)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > JSON_MAX_DEPTH)
                return 0;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 1;
}

cJSON *api_body_json(const http_request *req, http_response *res)
{
    if (!req->body || req->body_len == 0) {
        api_error(res, LOOM_E_INVALID, "request body: expected a JSON object, got nothing");
        return NULL;
    }
    /* cJSON recurses per nesting level; refuse deep input before parsing. */
    if (!json_depth_ok(req->body, req->body_len)) {
        api_error(res, LOOM_E_INVALID, "request body: JSON nested deeper than %d levels", JSON_MAX_DEPTH);
        return NULL;
    }
    const char *end = NULL;
    /* The body is NUL-terminated by the collector; a NUL inside it ends the
     * parse early and is refused as trailing garbage. */
    cJSON *json = cJSON_ParseWithOpts(req->body, &end, 1);
    if (json && end != req->body + req->body_len) {
        cJSON_Delete(json);
        json = NULL;
    }
    if (!json) {
        long at = end ? (long)(end - req->body) : 0;
        api_error(res, LOOM_E_INVALID, "request body: malformed JSON near byte %ld", at);
        return NULL;
    }
    if (!cJSON_IsObject(json)) {
        cJSON_Delete(json);
        api_error(res, LOOM_E_INVALID, "request body: expected a JSON object");
        return NULL;
    }
    return json;
}
