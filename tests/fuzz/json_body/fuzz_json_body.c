/*
 * fuzz_json_body.c - libFuzzer target for the REST layer's JSON bodies and
 * what an exec submission does with one. The input is a request body: it
 * goes through api_body_json (the depth check, cJSON, the object check)
 * exactly as a handler receives it. An accepted object is then treated the
 * way a training submission is prepared (exec.c's prepare_trainer): its
 * "args" string through dlicmd_parse, and the object itself as the training
 * spec (its "training" block) through edt_settings_resolve together with the
 * parsed --numWorker, program arguments and --msd-env pairs. Every refusal
 * must carry a message; accepted settings must keep edt_settings.h's
 * promises (the effective batch is engines x batch size, loggers a JSON
 * array).
 *
 * Seeds: {"args": "--exec-start edt ... -- --epochs 5", "training": {...}}.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "api/request_body.h"
#include "exec/dlicmd.h"
#include "fuzz_support.h"
#include "train/edt_settings.h"

static void check_settings(const edt_settings *s)
{
    if (s->batch_size < 1 || s->engines < 1 || s->engines > 1024 || s->epochs < 1)
        abort();
    if ((uint64_t)s->effective_batch_size != (uint64_t)s->engines * s->batch_size)
        abort();
    cJSON *loggers = s->loggers_json ? cJSON_Parse(s->loggers_json) : NULL;
    if (!cJSON_IsArray(loggers))
        abort();
    cJSON_Delete(loggers);
}

static void prepare_training(const cJSON *body)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(body, "args");
    if (!cJSON_IsString(args))
        return;
    char err[1024];
    dlicmd d;
    loom_error *refused = dlicmd_parse(args->valuestring, &d);
    if (refused) {
        if (!loom_err_message(refused)[0])
            abort();
        loom_err_free(refused);
        return;
    }
    edt_settings s;
    err[0] = '\0';
    if (loom_err_take(edt_settings_resolve(body, d.num_worker_given ? d.num_worker : 0, d.args,
                                           d.arg_count, d.msd_env, d.msd_env_count, &s),
                      err, sizeof err) == LOOM_OK)
        check_settings(&s);
    else if (!err[0])
        abort();
    edt_settings_free(&s);
    dlicmd_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The collector hands handlers a NUL-terminated copy of the body. */
    char *body = malloc(size + 1);
    if (!body)
        abort();
    if (size)
        memcpy(body, data, size);
    body[size] = '\0';
    http_request req;
    memset(&req, 0, sizeof req);
    req.method = "POST";
    req.path = "/platform/rest/deeplearning/v1/execs";
    req.body = body;
    req.body_len = size;
    http_response res;
    memset(&res, 0, sizeof res);
    cJSON *json = api_body_json(&req, &res);
    if (json) {
        if (!cJSON_IsObject(json) || res.body)
            abort();
        prepare_training(json);
        cJSON_Delete(json);
    } else if (res.status != 400 || !res.body || !strstr(res.body, "\"error\"")) {
        abort(); /* a refused body is answered 400 with an error message */
    }
    free(res.body);
    free(body);
    return 0;
}
