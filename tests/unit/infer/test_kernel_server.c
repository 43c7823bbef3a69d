/* test_kernel_server.c - the kernel protocol without a host: a `loom kernel
 * run` child's loop (kernel_server_run) in a forked process, driven by
 * kernel_proc's host side over the same socket and shared arena, with the
 * example kernels of each way and the fault kernel. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "infer/kernel_proc.h"
#include "infer/kernel_wire.h"
#include "infer/v2_codec.h"
#include "util/supervise.h"

static const char *loom_binary;

static model_spec spec;

static kernel_proc *start(const char *dir, loom_error **err)
{
    loom_error *e = model_spec_read(dir, &spec, NULL);
    CHECK(e == NULL);
    if (e) {
        fprintf(stderr, "%s\n", loom_err_message(e));
        exit(1);
    }
    kernel_proc_spec s = {.binary = loom_binary, .model_dir = dir, .work_dir = "/tmp",
                          .user = "test", .model = &spec, .start_timeout_ms = 10000};
    kernel_proc *k = NULL;
    *err = kernel_proc_start(&s, &k);
    return k;
}

static void echo_round(const char *dir)
{
    loom_error *e;
    kernel_proc *k = start(dir, &e);
    CHECK(e == NULL);
    if (!k) {
        fprintf(stderr, "%s: %s\n", dir, loom_err_message(e));
        return;
    }
    kernel_task t[3] = {{.body = "{\"inputs\":[1]}", .len = 14},
                        {.body = "{\"inputs\":[2,3]}", .len = 16},
                        {.body = "{\"inputs\":[4]}", .len = 14}};
    e = kernel_proc_execute(k, t, 3, supervise_deadline_in(10000));
    CHECK(e == NULL);
    if (e)
        fprintf(stderr, "%s: %s\n", dir, loom_err_message(e));
    for (int i = 0; !e && i < 3; i++) {
        CHECK(t[i].status == 0);
        CHECK(t[i].answer_len > 0);
    }
    if (!e) /* the raw echo answers the body itself */
        CHECK(t[1].answer_len == 16 && memcmp(t[1].answer, t[1].body, 16) == 0);
    kernel_proc_stop(k);
}

/* Two batches overlap: the second is sent before the first's answers are
 * read, and the first's answers stay as they were while the second runs
 * and is collected (the kernel writes the two to different regions). One
 * batch in flight at a time; a collect needs a send. */
static void overlap(const char *dir)
{
    loom_error *e;
    kernel_proc *k = start(dir, &e);
    CHECK(e == NULL && k != NULL);
    if (!k)
        return;
    uint64_t deadline = supervise_deadline_in(10000);
    char first[8][32], second[8][32];
    kernel_task a[8], b[8];
    for (int i = 0; i < 8; i++) {
        snprintf(first[i], sizeof first[i], "{\"first\":%d}", i);
        snprintf(second[i], sizeof second[i], "{\"second\":%d00}", i);
        a[i] = (kernel_task){.body = first[i], .len = strlen(first[i])};
        b[i] = (kernel_task){.body = second[i], .len = strlen(second[i])};
    }
    for (int round = 0; round < 3; round++) {
        CHECK(kernel_proc_send(k, a, 8, deadline) == NULL);
        e = kernel_proc_send(k, b, 8, deadline);
        CHECK(loom_err_code(e) == LOOM_E_CONFLICT);
        loom_err_free(e);
        CHECK(kernel_proc_collect(k, a, 8, deadline) == NULL);
        CHECK(kernel_proc_send(k, b, 8, deadline) == NULL);
        CHECK(kernel_proc_collect(k, b, 8, deadline) == NULL);
        for (int i = 0; i < 8; i++) {
            CHECK(a[i].answer_len == a[i].len && memcmp(a[i].answer, first[i], a[i].len) == 0);
            CHECK(b[i].answer_len == b[i].len && memcmp(b[i].answer, second[i], b[i].len) == 0);
            CHECK(a[i].answer != b[i].answer);
        }
    }
    e = kernel_proc_collect(k, a, 8, deadline);
    CHECK(loom_err_code(e) == LOOM_E_CONFLICT);
    loom_err_free(e);
    kernel_proc_stop(k);
}

/* A v2 model's kernel (each kind) gets the request's tensors, decoded
 * here as the host does, and answers tensors, which encode to the same
 * JSON but for the model's name. */
static void v2_round(const char *dir, const char *expected_outputs)
{
    loom_error *e;
    kernel_proc *k = start(dir, &e);
    CHECK(e == NULL && k != NULL && spec.protocol == MODEL_PROTOCOL_V2);
    if (!k)
        return;
    const char *bodies[2] = {"{\"id\":\"a\",\"inputs\":[{\"name\":\"x\",\"shape\":[3],"
                             "\"datatype\":\"FP64\",\"data\":[1.5,-2,1e3]}]}",
                             "{\"inputs\":[7]}"};
    v2_request req[2];
    memset(req, 0, sizeof req);
    kernel_task t[2];
    for (int i = 0; i < 2; i++) {
        CHECK_OK(v2_decode(&spec, bodies[i], strlen(bodies[i]), &req[i]));
        t[i] = (kernel_task){.body = req[i].pack.data, .len = req[i].pack.len};
    }
    e = kernel_proc_execute(k, t, 2, supervise_deadline_in(10000));
    CHECK(e == NULL);
    if (e)
        fprintf(stderr, "%s: %s\n", dir, loom_err_message(e));
    v2_buf json = {0};
    for (int i = 0; !e && i < 2; i++) {
        CHECK(t[i].status == 0 && strcmp(t[i].content_type, KERNEL_TENSORS_TYPE) == 0);
        CHECK_OK(v2_encode_answer(&spec, &req[i], t[i].answer, t[i].answer_len, &json));
        char *text = strndup(json.data ? json.data : "", json.len);
        char want[512];
        snprintf(want, sizeof want, "{\"model_name\":\"%s\",%s\"outputs\":[%s]}", spec.name,
                 i == 0 ? "\"id\":\"a\"," : "", expected_outputs + (i ? 100 : 0));
        CHECK_STR_EQ(text, want);
        free(text);
    }
    v2_buf_free(&json);
    v2_request_free(&req[0]);
    v2_request_free(&req[1]);
    kernel_proc_stop(k);
}

static void faults(const char *dir)
{
    loom_error *e;
    kernel_proc *k = start(dir, &e);
    CHECK(k != NULL);
    if (!k)
        return;
    kernel_task bad = {.body = "{\"garbage\":1}", .len = 13};
    CHECK(kernel_proc_execute(k, &bad, 1, supervise_deadline_in(10000)) == NULL);
    CHECK(bad.status == 0 && bad.answer_len == 9); /* the model service judges it */
    kernel_task crash = {.body = "{\"crash\":1}", .len = 11};
    e = kernel_proc_execute(k, &crash, 1, supervise_deadline_in(10000));
    CHECK(loom_err_code(e) == LOOM_E_UNAVAILABLE);
    CHECK(e && strstr(loom_err_message(e), "killed by signal 6") != NULL);
    loom_err_free(e);
    kernel_proc_stop(k);
    k = start(dir, &e);
    kernel_task hang = {.body = "{\"hang\":1}", .len = 10};
    e = kernel_proc_execute(k, &hang, 1, supervise_deadline_in(300));
    CHECK(loom_err_code(e) == LOOM_E_DEADLINE);
    loom_err_free(e);
    kernel_proc_stop(k);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_kernel_server LOOM EXAMPLES_DIR FAULT_DIR\n");
        return 2;
    }
    loom_binary = argv[1];
    char dir[4096];
    const char *ways[] = {"so", "lua"};
    for (int i = 0; i < 2; i++) {
        snprintf(dir, sizeof dir, "%s/echo-%s", argv[2], ways[i]);
        echo_round(dir);
    }
    /* the first answer's outputs, then at 100 the second's */
    char outputs[200] = "{\"name\":\"y\",\"datatype\":\"FP64\",\"shape\":[3],"
                        "\"data\":[1.5,-2,1000]}";
    snprintf(outputs + 100, 100, "{\"name\":\"y\",\"datatype\":\"FP64\",\"shape\":[1],"
             "\"data\":[7]}");
    const char *v2_ways[] = {"so-v2", "lua-v2", "ffi"};
    for (int i = 0; i < 3; i++) {
        snprintf(dir, sizeof dir, "%s/echo-%s", argv[2], v2_ways[i]);
        v2_round(dir, outputs);
    }
    snprintf(dir, sizeof dir, "%s/echo-so", argv[2]);
    overlap(dir);
    faults(argv[3]);
    return CHECK_DONE();
}
