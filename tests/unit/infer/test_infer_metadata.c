/* test_infer_metadata.c - infer_metadata, the model metadata GET
 * /v2/models/NAME serves: a deployed v2 model's declared tensors, an ffi
 * model's from its signature, a raw model's none, and another user's
 * model not found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "infer/infer.h"

static char home[] = "/tmp/loom-infer-metadata-XXXXXX";

/* Deploys a copy of the example model `name` as `user`. */
static void deploy(infer_service *s, const char *user, const char *examples, const char *name)
{
    char staged[512], cmd[1200], got[64];
    snprintf(staged, sizeof staged, "%s/staged-%s", home, name);
    snprintf(cmd, sizeof cmd, "cp -r '%s/%s' '%s'", examples, name, staged);
    CHECK(system(cmd) == 0);
    CHECK_OK(infer_deploy(s, user, staged, NULL, got, sizeof got));
    CHECK_STR_EQ(got, name);
}

static void expect(infer_service *s, const char *owner, const char *name, const char *want)
{
    cJSON *meta = NULL;
    CHECK_OK(infer_metadata(s, owner, name, &meta));
    char *json = cJSON_PrintUnformatted(meta);
    cJSON_Delete(meta);
    CHECK_STR_EQ(json, want);
    free(json);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !mkdtemp(home))
        return 2;
    char path[600];
    snprintf(path, sizeof path, "%s/loom.db", home);
    store *st = NULL;
    sched_service *ss = NULL;
    infer_service *s = NULL;
    sched_service_options so = {.cpu_slots = 1};
    CHECK_OK(store_open(path, &st));
    CHECK_OK(sched_service_create(st, &so, &ss));
    infer_options io = {.st = st, .sched = ss, .home = home};
    CHECK_OK(infer_service_create(&io, &s));
    if (!s)
        return CHECK_DONE();
    deploy(s, "admin", argv[1], "echo-so-v2");
    deploy(s, "admin", argv[1], "echo-ffi");
    deploy(s, "admin", argv[1], "echo-so");
    expect(s, NULL, "echo-so-v2", "{\"name\":\"echo-so-v2\",\"versions\":[],\"platform\":"
           "\"loom-so\",\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[-1]}],"
           "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP64\",\"shape\":[-1]}]}");
    expect(s, "admin", "echo-ffi", "{\"name\":\"echo-ffi\",\"versions\":[],\"platform\":"
           "\"loom-ffi\",\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[-1]}],"
           "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP64\",\"shape\":[-1]}]}");
    expect(s, NULL, "echo-so", "{\"name\":\"echo-so\",\"versions\":[],\"platform\":\"loom-so\","
           "\"inputs\":[],\"outputs\":[]}");
    cJSON *json = NULL;
    loom_error *e = infer_metadata(s, "someone", "echo-so-v2", &json);
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND && json == NULL);
    loom_err_free(e);
    e = infer_metadata(s, NULL, "nosuch", &json);
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    loom_err_free(e);
    infer_service_destroy(s);
    sched_service_destroy(ss);
    store_close(st);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
