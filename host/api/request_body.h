/*
 * api/request_body.h - a request's JSON body as the routes take it.
 */
#ifndef LOOM_API_REQUEST_BODY_H
#define LOOM_API_REQUEST_BODY_H

#include <cjson/cJSON.h>

#include "http/http.h"

/* Parses the body as a JSON object (depth-limited); on failure replies 400
 * naming what is wrong and returns NULL. */
cJSON *api_body_json(const http_request *req, http_response *res);

#endif
