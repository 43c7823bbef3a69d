/* test_model_spec.c - model.json and profile rules: every refusal names
 * the field, and WMLA's own example profile passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "infer/model_spec.h"

static char root[] = "/tmp/loom-model-spec-XXXXXX";

/* A model directory holding model.json with `json` (NULL: none) and an
 * empty kernel.lua; returns its path. */
static const char *dir_with(const char *name, const char *json)
{
    static char dir[512];
    char path[600];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/kernel.lua", dir);
    FILE *f = fopen(path, "w");
    fclose(f);
    if (json) {
        snprintf(path, sizeof path, "%s/model.json", dir);
        f = fopen(path, "w");
        fputs(json, f);
        fclose(f);
    }
    return dir;
}

static void refused(const char *name, const char *json, int code, const char *needle)
{
    model_spec s;
    loom_error *e = model_spec_read(dir_with(name, json), &s, NULL);
    CHECK_MSG(loom_err_code(e) == code, "%s: code %d", name, loom_err_code(e));
    CHECK_CONTAINS(loom_err_message(e), needle);
    loom_err_free(e);
}

static void test_model_json(void)
{
    refused("missing", NULL, LOOM_E_NOT_FOUND, "model.json");
    refused("malformed", "{\"name\": ", LOOM_E_INVALID, "not a JSON object");
    refused("outside", "{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":\"../../../../../../../../etc/passwd\"}",
            LOOM_E_INVALID, "outside the model directory");
    refused("unknown-runtime", "{\"name\":\"m\",\"runtime\":\"tensor flow\"}", LOOM_E_INVALID,
            "runtime: expected so, lua, ffi, native or a registered kernel's name");
    refused("registered-with-file", "{\"name\":\"m\",\"runtime\":\"echo\","
            "\"kernel_path\":\"kernel.lua\"}", LOOM_E_INVALID,
            "kernel_path: runtime \"echo\" names a registered kernel");
    refused("no-kernel", "{\"name\":\"m\",\"runtime\":\"so\"}", LOOM_E_INVALID, "kernel_path");
    refused("bad-name", "{\"name\":\"a b\",\"runtime\":\"lua\",\"kernel_path\":\"kernel.lua\"}",
            LOOM_E_INVALID, "name");
    refused("bad-env", "{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":\"kernel.lua\","
            "\"mk_environments\":[{\"value\":\"x\"}]}", LOOM_E_INVALID, "mk_environments[0]");
    refused("ffi-sig", "{\"name\":\"m\",\"runtime\":\"ffi\",\"ffi\":{\"library\":\"kernel.lua\","
            "\"symbol\":\"f\",\"signature\":\"int32(ptr q32 in x)\"}}", LOOM_E_INVALID,
            "ffi.signature");
    /* Nothing cut to fit: a tag or a variable's value past its limit is refused. */
    char long_json[2400], long_text[1100];
    memset(long_text, 'v', 1024);
    long_text[1024] = 0;
    snprintf(long_json, sizeof long_json, "{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":"
             "\"kernel.lua\",\"mk_environments\":[{\"name\":\"A\",\"value\":\"%s\"}]}", long_text);
    refused("long-env", long_json, LOOM_E_LIMIT, "mk_environments[0]: the value of \"A\" is 1024 bytes");
    long_text[64] = 0;
    snprintf(long_json, sizeof long_json, "{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":"
             "\"kernel.lua\",\"tag\":\"%s\"}", long_text);
    refused("long-tag", long_json, LOOM_E_INVALID, "tag: 64 bytes, more than the limit of 63");
    refused("ffi-flat", "{\"name\":\"m\",\"runtime\":\"ffi\",\"library\":\"kernel.lua\"}",
            LOOM_E_INVALID, "ffi: runtime \"ffi\" needs an object");
    model_spec s;
    /* Any other plugin name is a registered kernel's: only a host
     * resolves it, so the file's reader keeps the name. */
    loom_error *e = model_spec_read(dir_with("registered", "{\"name\":\"m\",\"runtime\":"
                                             "\"tensorflow\",\"weight_path\":\"kernel.lua\"}"),
                                    &s, NULL);
    CHECK(e == NULL);
    CHECK(s.runtime == MODEL_RUNTIME_REGISTERED && !s.kernel_path[0]);
    CHECK_STR_EQ(s.kernel_name, "tensorflow");
    CHECK_STR_EQ(model_runtime_name(s.runtime), "registered");
    loom_err_free(e);
    e = model_spec_read(dir_with("good", "{\"name\":\"m\",\"tag\":\"v1\","
                                             "\"runtime\":\"lua\",\"kernel_path\":\"kernel.lua\","
                                             "\"attributes\":[{\"key\":\"k\",\"value\":\"v\"}],"
                                             "\"mk_environments\":[{\"name\":\"A\",\"value\":\"1\"}]}"),
                                    &s, NULL);
    CHECK(e == NULL);
    CHECK_STR_EQ(s.name, "m");
    CHECK(s.runtime == MODEL_RUNTIME_LUA && s.nenv == 1);
    CHECK(strstr(s.kernel_path, "/good/kernel.lua") != NULL);
    loom_err_free(e);
}

/* Declared tensors: the protocol each model speaks, an ffi model's tensors
 * from its signature, and every refusal naming the field. */
static void test_tensors(void)
{
#define LUA_MODEL "{\"name\":\"m\",\"runtime\":\"lua\",\"kernel_path\":\"kernel.lua\","
#define FFI_MODEL "{\"name\":\"m\",\"runtime\":\"ffi\",\"ffi\":{\"library\":\"kernel.lua\"," \
                  "\"symbol\":\"f\",\"signature\":\"int32(ptr f32 in a, i64 n, ptr f32 out b)\"}"
    refused("t-dtype", LUA_MODEL "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP16\","
            "\"shape\":[1]}]}", LOOM_E_INVALID, "inputs[0] (\"x\"): datatype: expected BOOL");
    refused("t-shape", LUA_MODEL "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
            "\"shape\":[-2]}]}", LOOM_E_INVALID, "inputs[0] (\"x\"): shape[0]: expected -1");
    refused("t-rank", LUA_MODEL "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\","
            "\"shape\":[1,1,1,1,1,1,1,1,1]}]}", LOOM_E_INVALID, "at most 8 dimensions");
    refused("t-twice", LUA_MODEL "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\","
            "\"shape\":[1]},{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[1]}]}",
            LOOM_E_INVALID, "outputs: \"y\" is declared twice");
    refused("t-proto", LUA_MODEL "\"protocol\":\"grpc\"}", LOOM_E_INVALID,
            "protocol: expected \"v2\"");
    refused("t-v2-none", LUA_MODEL "\"protocol\":\"v2\"}", LOOM_E_INVALID,
            "protocol \"v2\" needs declared inputs");
    refused("t-native", "{\"name\":\"m\",\"runtime\":\"native\",\"weight_path\":\"kernel.lua\","
            "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1]}]}",
            LOOM_E_INVALID, "runtime \"native\" decodes its own v2 requests");
    refused("t-ffi-type", FFI_MODEL ",\"inputs\":[{\"name\":\"a\",\"datatype\":\"FP64\","
            "\"shape\":[-1]}]}", LOOM_E_INVALID, "\"a\" is FP64, the ffi signature's parameter "
            "takes f32 (expected FP32)");
    model_spec s;
    CHECK_OK(model_spec_read(dir_with("t-ffi", FFI_MODEL "}"), &s, NULL));
    CHECK(s.protocol == MODEL_PROTOCOL_V2 && s.ninputs == 1 && s.noutputs == 1);
    CHECK_STR_EQ(s.inputs[0].name, "a");
    CHECK_STR_EQ(s.outputs[0].name, "b");
    CHECK(s.inputs[0].dtype == LOOM_DTYPE_F32 && s.inputs[0].ndim == 1 &&
          s.inputs[0].shape[0] == -1);
    CHECK_OK(model_spec_read(dir_with("t-ffi-raw", FFI_MODEL ",\"protocol\":\"raw\"}"), &s,
                             NULL));
    CHECK(s.protocol == MODEL_PROTOCOL_RAW);
    CHECK_OK(model_spec_read(dir_with("t-raw", LUA_MODEL "\"tag\":\"v1\"}"), &s, NULL));
    CHECK(s.protocol == MODEL_PROTOCOL_RAW && s.ninputs == 0);
    CHECK_OK(model_spec_read(dir_with("t-v2", LUA_MODEL "\"inputs\":[{\"name\":\"x\","
                                      "\"datatype\":\"UINT16\",\"shape\":[2,-1]}]}"), &s, NULL));
    CHECK(s.protocol == MODEL_PROTOCOL_V2 && s.ninputs == 1 && s.noutputs == 0);
    CHECK(s.inputs[0].dtype == LOOM_DTYPE_U16 && s.inputs[0].ndim == 2 && s.inputs[0].shape[1] == -1);
#undef LUA_MODEL
#undef FFI_MODEL
}

/* The answer for a model directory whose `field` names `rel` (a link
 * "out" to `target` planted first when target is not NULL), with rel
 * itself left out. */
static void answer_for(const char *name, const char *field, const char *rel, const char *target,
                       char *out, size_t len)
{
    char json[1024], link_path[600];
    const char *runtime = strcmp(field, "weight_path") == 0 ? "native" : "lua";
    snprintf(json, sizeof json, "{\"name\":\"m\",\"runtime\":\"%s\",\"%s\":\"%s\"}",
             runtime, field, rel);
    const char *dir = dir_with(name, json);
    if (target) {
        snprintf(link_path, sizeof link_path, "%s/out", dir);
        CHECK(symlink(target, link_path) == 0);
    }
    model_spec s;
    loom_error *e = model_spec_read(dir, &s, NULL);
    const char *m = loom_err_message(e);
    const char *at = m ? strstr(m, rel) : NULL;
    snprintf(out, len, "%d %.*s%s", loom_err_code(e), at ? (int)(at - m) : 0, m ? m : "",
             at ? at + strlen(rel) : "");
    loom_err_free(e);
}

/* A path out of the model directory reads the same whether its target
 * exists or not: by its text ("..", absolute) or through a link. */
static void test_no_existence_oracle(void)
{
    static const char *const fields[] = {"kernel_path", "weight_path"};
    char a[1024], b[1024];
    for (int i = 0; i < 2; i++) {
        answer_for("o1", fields[i], "../../../../../../etc/passwd", NULL, a, sizeof a);
        answer_for("o2", fields[i], "../../../../../../etc/no-such-file", NULL, b, sizeof b);
        CHECK_STR_EQ(a, b);
        CHECK_CONTAINS(a, "outside the model directory");
        char invalid[16];
        snprintf(invalid, sizeof invalid, "%d ", LOOM_E_INVALID);
        CHECK_MSG(strncmp(a, invalid, strlen(invalid)) == 0, "%s", a);
        answer_for("o3", fields[i], "/etc/passwd", NULL, a, sizeof a);
        answer_for("o4", fields[i], "/etc/no-such-file", NULL, b, sizeof b);
        CHECK_STR_EQ(a, b);
        answer_for(i ? "o5w" : "o5", fields[i], "out", "/etc/passwd", a, sizeof a);
        answer_for(i ? "o6w" : "o6", fields[i], "out", "/etc/no-such-file", b, sizeof b);
        CHECK_STR_EQ(a, b);
        answer_for(i ? "o7w" : "o7", fields[i], "out", "../../../../../../etc/passwd", a,
                   sizeof a);
        CHECK_STR_EQ(a, b);
        CHECK_CONTAINS(a, "outside the model directory");
    }
    /* missing inside the directory: only then is existence said */
    answer_for("o8", "kernel_path", "no-such.lua", NULL, a, sizeof a);
    CHECK_CONTAINS(a, "No such file");
}

static void profile_refused(const char *json, const char *needle)
{
    cJSON *j = cJSON_Parse(json);
    model_profile p;
    loom_error *e = model_profile_parse(j, "profile.json", &p);
    CHECK_MSG(loom_err_code(e) == LOOM_E_INVALID, "%s", json);
    CHECK_CONTAINS(loom_err_message(e), needle);
    loom_err_free(e);
    cJSON_Delete(j);
}

static void test_profile(void)
{
    profile_refused("{\"policy\":{\"kernel_min\":-1}}", "policy.kernel_min");
    profile_refused("{\"policy\":{\"kernel_min\":0,\"kernel_max\":0}}", "policy.kernel_max");
    profile_refused("{\"policy\":{\"kernel_min\":3,\"kernel_max\":2}}", "policy.kernel_max");
    profile_refused("{\"policy\":{\"kernel_delay_release_time\":0}}", "kernel_delay_release_time");
    profile_refused("{\"policy\":{\"schedule_interval\":-1}}", "schedule_interval");
    profile_refused("{\"policy\":{\"task_execution_timeout\":0}}", "task_execution_timeout");
    profile_refused("{\"policy\":{\"task_batch_size\":0}}", "task_batch_size");
    profile_refused("{\"policy\":{\"task_batch_size\":\"8\"}}", "task_batch_size");
    profile_refused("{\"kernel\":{\"gpu\":\"maybe\"}}", "kernel.gpu");
    profile_refused("{\"replica\":0}", "replica");
    profile_refused("{\"replica\":9,\"policy\":{\"kernel_min\":2,\"kernel_max\":8}}",
                    "replica: 9 groups of up to 8 instances (policy.kernel_max) are 72");
    profile_refused("{\"replica\":33,\"policy\":{\"kernel_min\":2,\"kernel_max\":-1}}",
                    "replica: 33 groups");
    char path[512];
    snprintf(path, sizeof path, "%s/profile.json", WMLA_DIR);
    FILE *f = fopen(path, "r");
    char text[8192] = "";
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    cJSON *j = cJSON_Parse(text);
    model_profile p;
    loom_error *e = model_profile_parse(j, "profile.json", &p);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    CHECK(p.kernel_min == 1 && p.kernel_max == 4 && p.batch_size == 32);
    CHECK(p.execution_timeout_s == 60 && p.schedule_interval_s == 3);
    loom_err_free(e);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"policy\":{\"kernel_max\":-1,\"task_execution_timeout\":-1}}");
    CHECK(model_profile_parse(j, "p", &p) == NULL && p.kernel_max == -1);
    cJSON_Delete(j);
    /* kernel_min 0: scale to zero. */
    j = cJSON_Parse("{\"policy\":{\"kernel_min\":0,\"kernel_max\":2}}");
    CHECK(model_profile_parse(j, "p", &p) == NULL && p.kernel_min == 0 && p.kernel_max == 2);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"replica\":8,\"policy\":{\"kernel_min\":2,\"kernel_max\":8}}");
    CHECK(model_profile_parse(j, "p", &p) == NULL && p.replica == 8);
    cJSON_Delete(j);
}

int main(void)
{
    if (!mkdtemp(root))
        return 1;
    test_model_json();
    test_tensors();
    test_no_existence_oracle();
    test_profile();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        return 1;
    return CHECK_DONE();
}
