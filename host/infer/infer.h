/*
 * infer/infer.h - model services: deploy a model directory, start and stop
 * its service, change its profile while stopped, undeploy it, and send it
 * requests. Models belong to their deployer: `owner` NULL (an
 * administrator) sees every model, a user only theirs; another user's
 * model is "not found". A started model is recorded as such, and a host
 * that starts again starts it again.
 */
#ifndef LOOM_INFER_INFER_H
#define LOOM_INFER_INFER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "infer/model_service.h"
#include "plugin/registry.h"
#include "sched/sched_service.h"
#include "store/record_states.h"
#include "store/store.h"
#include "util/error.h"

typedef struct infer_service infer_service;

typedef struct infer_options {
    store *st;
    sched_service *sched;
    const char *home;   /* models live in HOME/models/NAME/{model,work} */
    const char *binary; /* the loom binary (NULL: this executable) */
    const char *plugin_dir; /* built-in plugins: the native kernel is native.so there */
    /* The host's plugins: a model.json "runtime" that names none of so,
     * lua, ffi, native is a registered kernel's name, looked up here at
     * deploy and at start (NULL: no registered kernel serves). */
    registry *reg;
} infer_options;

/* Opens the service and starts, in the background, the models that were
 * started when the host last stopped. */
loom_error *infer_service_create(const infer_options *opt, infer_service **out);
/* Stops every service, answering every request (before the HTTP server
 * stops: a request waiting for its answer holds its connection); the
 * started ones stay recorded as started. */
void infer_service_stop_all(infer_service *s);
/* Stops what still runs and frees. */
void infer_service_destroy(infer_service *s);

typedef struct infer_model_view {
    char name[64], owner[64], tag[64], runtime[64]; /* runtime: a registered kernel's name too */
    model_state state;
    int64_t created_at;
    char *model_json;   /* malloc'd */
    char *profile_json; /* malloc'd */
    model_service_stats stats; /* when started */
    /* While no instance serves and one waits for a device: the scheduler's
     * reason, in the words of a pending exec's, naming the holder only
     * when the viewer may see it (an administrator, or the holder's own
     * user); "" otherwise. */
    char pending_reason[512];
} infer_model_view;

void infer_model_view_clear(infer_model_view *v);

/* Deploys the model directory `staged` (moved into the home; the caller's
 * copy is gone on success): model.json is checked, the profile is
 * `profile_json` when given (checked) or WMLA's defaults. The model's name
 * is written to name_out. */
loom_error *infer_deploy(infer_service *s, const char *user, const char *staged,
                         const char *profile_json, char *name_out, size_t name_len);
loom_error *infer_list(infer_service *s, const char *owner, infer_model_view **out,
                       size_t *count);
loom_error *infer_view(infer_service *s, const char *owner, const char *name,
                       infer_model_view *out);
/* Starts the model's service and returns at once: its state is then
 * starting until an instance serves (see infer_model_view). */
loom_error *infer_start(infer_service *s, const char *owner, const char *name);
loom_error *infer_stop(infer_service *s, const char *owner, const char *name, int force);
/* Merges `profile_json` into the profile: the fields given change, the
 * others keep their values; an unknown field is LOOM_E_INVALID naming it
 * (LOOM_E_CONFLICT while the model is started). */
loom_error *infer_set_profile(infer_service *s, const char *owner, const char *name,
                              const char *profile_json);
/* LOOM_E_CONFLICT for a started model unless `force` (which stops it). */
loom_error *infer_undeploy(infer_service *s, const char *owner, const char *name, int force);

/* The model's Open Inference Protocol v2 metadata, for GET
 * /v2/models/NAME: a JSON object {"name", "versions": [], "platform":
 * "loom-RUNTIME", "inputs": [{"name", "datatype", "shape"}], "outputs":
 * [...]} in *json_out (the caller's). A raw model (no
 * declared inputs) has empty "inputs" and "outputs". Visible models only,
 * as infer_view: another user's is "not found". */
loom_error *infer_metadata(infer_service *s, const char *owner, const char *name,
                           cJSON **json_out);

/* Sends a request to a started model; see model_service_submit. A model
 * that declares its inputs (model.json "inputs") takes an Open Inference
 * Protocol v2 request, decoded and checked here before any kernel sees it
 * (a bad one is LOOM_E_INVALID naming the input and what was expected);
 * a raw model takes the body as it is. */
loom_error *infer_request(infer_service *s, const char *owner, const char *name,
                          const char *body, size_t len, model_service_done_fn done, void *ctx);

#endif
