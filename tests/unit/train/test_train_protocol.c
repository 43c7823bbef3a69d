/* The coordinator-worker messages: each kind survives encode -> JSON text ->
 * decode with every field; a kind, an action or a field the schema does
 * not know is refused by name; over a socket pair a blob follows its
 * message, a silent peer runs into the deadline and a closed one reads as
 * gone. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "train/protocol.h"
#include "util/fs.h"

/* m through the wire format and back into *out. */
static loom_error *round_trip(const msg *m, msg *out)
{
    cJSON *doc = train_msg_encode(m);
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    cJSON *back = cJSON_Parse(text);
    free(text);
    return train_msg_decode(back, out);
}

/* The text decoded; the error's message into err, its code returned. */
static int32_t decode_text(const char *text, char *err, size_t len)
{
    msg m;
    int32_t code = loom_err_take(train_msg_decode(cJSON_Parse(text), &m), err, len);
    if (code == LOOM_OK)
        train_msg_free(&m);
    return code;
}

static void test_hello_and_exit(void)
{
    msg h = {.kind = MSG_HELLO,
             .u.hello = {.slot = 7, .pid = 4242, .params = 1234567, .ntrain = 60000, .ntest = 10000}};
    msg out;
    CHECK(round_trip(&h, &out) == NULL);
    CHECK(out.kind == MSG_HELLO && out.u.hello.slot == 7 && out.u.hello.pid == 4242 &&
          out.u.hello.params == 1234567 && out.u.hello.ntrain == 60000 &&
          out.u.hello.ntest == 10000);
    train_msg_free(&out);

    msg x = {.kind = MSG_EXIT, .u.exit = {.reason = "leaving: the job was resized", .code = 3}};
    CHECK(round_trip(&x, &out) == NULL);
    CHECK(out.kind == MSG_EXIT && out.u.exit.code == 3);
    CHECK_STR_EQ(out.u.exit.reason, "leaving: the job was resized");
    train_msg_free(&out);
}

/* A worker on a Slurm node says where its ring listens; a join lists
 * each rank's slot, address and port; a bad entry is refused by name. */
static void test_net_members(void)
{
    msg h = {.kind = MSG_HELLO, .u.hello = {.slot = 3, .params = 10, .ntrain = 1, .net_port = 40001}};
    msg out;
    CHECK(round_trip(&h, &out) == NULL);
    CHECK(out.u.hello.net_port == 40001);
    train_msg_free(&out);
    msg_net_peer peers[2] = {{.slot = 1, .address = "10.231.7.12", .port = 40001},
                             {.slot = 4, .address = "fd00::2", .port = 65535}};
    msg p = {.kind = MSG_PLAN, .u.plan = {.round = 1, .has_join = 1, .action = PLAN_STEP}};
    p.u.plan.join = (msg_join){.generation = 2, .root = 0, .timeout_ms = 1000, .nnet = 2,
                               .net = peers};
    CHECK(round_trip(&p, &out) == NULL);
    const msg_join *j = &out.u.plan.join;
    CHECK(j->nnet == 2 && j->net[0].slot == 1 && j->net[0].port == 40001 && j->net[1].slot == 4 &&
          j->net[1].port == 65535);
    CHECK_STR_EQ(j->net[0].address, "10.231.7.12");
    CHECK_STR_EQ(j->net[1].address, "fd00::2");
    train_msg_free(&out);
    char err[256];
    /* the join's "net" replaced by each bad one */
    const char *bad[] = {"[[0,\"10.0.0.1\",0]]",
                         "[[0,\"0123456789012345678901234567890123456789012345\",1]]", "[]",
                         "[[0,\"10.0.0.1\"]]"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        cJSON *doc = train_msg_encode(&p);
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(doc, "join"), "net", cJSON_Parse(bad[k]));
        char *text = cJSON_PrintUnformatted(doc);
        cJSON_Delete(doc);
        CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
        CHECK_MSG(strstr(err, "\"net\"") != NULL, "case %zu names \"net\": %s", k, err);
        free(text);
    }
    CHECK(decode_text("{\"t\":\"hello\",\"slot\":1,\"params\":1,\"train\":1,\"test\":1,"
                      "\"net_port\":70000}", err, sizeof err) == LOOM_E_INVALID);
    CHECK_MSG(strstr(err, "net_port") != NULL, "names net_port: %s", err);
}

static void test_plan(void)
{
    uint64_t samples[5] = {9, 0, 9007199254740991ull, 3, 4};
    uint32_t sizes[2] = {3, 2};
    double scales[2] = {1.5, 1.0};
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "epoch", 4);
    msg p = {.kind = MSG_PLAN,
             .u.plan = {.round = 12, .commit = 1, .epoch = 4, .epochs = 10, .workers = 2,
                        .timeout_ms = 60000, .iteration = 99, .steps_per_epoch = 375,
                        .has_join = 1, .load = "/ck/epoch-3.safetensors", .action = PLAN_STEP,
                        .batch = {.samples = samples, .sizes = sizes, .scales = scales, .count = 2},
                        .meta = meta}};
    p.u.plan.join = (msg_join){.generation = 5, .root = -1, .timeout_ms = 30000, .shrink = 1,
                               .nexclude = 2, .exclude = {1, 3}};
    msg out;
    CHECK(round_trip(&p, &out) == NULL);
    const msg_plan *q = &out.u.plan;
    CHECK(out.kind == MSG_PLAN && q->round == 12 && q->commit == 1 && q->epoch == 4 &&
          q->epochs == 10 && q->workers == 2 && q->timeout_ms == 60000 && q->iteration == 99 &&
          q->steps_per_epoch == 375 && q->action == PLAN_STEP);
    CHECK(q->has_join && q->join.generation == 5 && q->join.root == -1 &&
          q->join.timeout_ms == 30000 && q->join.shrink && q->join.nexclude == 2 &&
          q->join.exclude[0] == 1 && q->join.exclude[1] == 3 && !q->join.nccl_id[0]);
    CHECK_STR_EQ(q->load, "/ck/epoch-3.safetensors");
    CHECK(q->batch.count == 2 && q->batch.sizes[0] == 3 && q->batch.sizes[1] == 2 &&
          q->batch.scales[0] == 1.5 && q->batch.scales[1] == 1.0);
    CHECK(memcmp(q->batch.samples, samples, sizeof samples) == 0);
    train_msg_free(&out);

    /* A checkpoint carries its path and metadata; a validation its range. */
    p.u.plan.action = PLAN_CHECKPOINT;
    p.u.plan.has_join = 0;
    p.u.plan.path = "/ck/epoch-4.safetensors";
    CHECK(round_trip(&p, &out) == NULL);
    CHECK(out.u.plan.action == PLAN_CHECKPOINT && !out.u.plan.has_join && !out.u.plan.load);
    CHECK_STR_EQ(out.u.plan.path, "/ck/epoch-4.safetensors");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(out.u.plan.meta, "epoch")) == 4);
    train_msg_free(&out);
    p.u.plan.action = PLAN_VALIDATE;
    p.u.plan.begin = 300;
    p.u.plan.end = 600;
    CHECK(round_trip(&p, &out) == NULL);
    CHECK(out.u.plan.action == PLAN_VALIDATE && out.u.plan.begin == 300 && out.u.plan.end == 600);
    CHECK(!out.u.plan.job_metrics.present);
    train_msg_free(&out);

    /* The job's mean metrics of the round before, for the adapters. */
    cJSON *means = cJSON_CreateObject();
    cJSON_AddNumberToObject(means, "loss", 0.25);
    cJSON_AddNumberToObject(means, "worker_pid", 1234.5);
    p.u.plan.job_metrics = (msg_job_metrics){.present = 1, .split = 1, .epoch = 3, .workers = 2,
                                             .iteration = 750, .metrics = means};
    CHECK(round_trip(&p, &out) == NULL);
    const msg_job_metrics *j = &out.u.plan.job_metrics;
    CHECK(j->present && j->split == 1 && j->epoch == 3 && j->workers == 2 && j->iteration == 750);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(j->metrics, "worker_pid")) == 1234.5 &&
          cJSON_GetArraySize(j->metrics) == 2);
    train_msg_free(&out);
    cJSON_Delete(means);
    cJSON_Delete(meta);
}

/* A round of several steps: which micro-batches each step takes (a step
 * may have none on this worker), and the reply's count of steps reduced. */
static void test_multi_step_plan(void)
{
    uint64_t samples[5] = {5, 6, 7, 8, 9};
    uint32_t sizes[3] = {2, 2, 1}, step_mbs[3] = {1, 0, 2};
    double scales[3] = {1.0, 1.0, 0.5};
    msg p = {.kind = MSG_PLAN,
             .u.plan = {.round = 3, .epochs = 1, .workers = 2, .timeout_ms = 1000,
                        .steps_per_epoch = 10, .action = PLAN_STEP,
                        .batch = {.samples = samples, .sizes = sizes, .scales = scales,
                                  .count = 3, .step_mbs = step_mbs, .nsteps = 3}}};
    msg out;
    CHECK(round_trip(&p, &out) == NULL);
    const msg_batch *b = &out.u.plan.batch;
    CHECK(b->nsteps == 3 && b->step_mbs[0] == 1 && b->step_mbs[1] == 0 && b->step_mbs[2] == 2);
    CHECK(b->count == 3 && memcmp(b->samples, samples, sizeof samples) == 0);
    train_msg_free(&out);
    /* One step: no "steps" on the wire, as before rounds had several. */
    p.u.plan.batch.nsteps = 1;
    cJSON *wire = train_msg_encode(&p);
    CHECK(cJSON_GetObjectItem(wire, "steps") == NULL);
    cJSON_Delete(wire);
    msg r = {.kind = MSG_REPLY, .u.reply = {.round = 3, .ok = 0, .error = "peer died", .steps = 2}};
    CHECK(round_trip(&r, &out) == NULL);
    CHECK(out.u.reply.steps == 2 && !out.u.reply.ok);
    train_msg_free(&out);

    char err[512], text[512];
    const char *plan = "{\"t\": \"plan\", \"round\": 1, \"epoch\": 0, \"epochs\": 1, "
                       "\"iteration\": 0, \"steps_per_epoch\": 1, \"workers\": 1, "
                       "\"timeout_ms\": 5, \"do\": \"step\", \"mb\": [[1], [2]], "
                       "\"scale\": [1, 1], \"steps\": %s}";
    snprintf(text, sizeof text, plan, "[1, 2]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "\"steps\" add up to 3 micro-batches, the plan has 2");
    snprintf(text, sizeof text, plan, "[]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "expected an array of 1 to 64");
    snprintf(text, sizeof text, plan, "[1.5, 0.5]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "expected micro-batch counts");
    snprintf(text, sizeof text, plan, "[2, 0]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_OK);
}

static void test_work_and_reply(void)
{
    uint64_t samples[3] = {5, 6, 7};
    uint32_t size = 3;
    double scale = 1.0;
    msg w = {.kind = MSG_WORK,
             .u.work = {.version = 41, .epoch = 2, .iteration = 80, .workers = 3,
                        .batch = {.samples = samples, .sizes = &size, .scales = &scale, .count = 1}}};
    msg out;
    CHECK(round_trip(&w, &out) == NULL);
    CHECK(out.kind == MSG_WORK && out.u.work.version == 41 && out.u.work.epoch == 2 &&
          out.u.work.iteration == 80 && out.u.work.workers == 3 && out.u.work.batch.count == 1 &&
          out.u.work.batch.samples[2] == 7);
    train_msg_free(&out);

    cJSON *train = cJSON_CreateObject();
    cJSON_AddNumberToObject(train, "loss", 0.25);
    msg r = {.kind = MSG_REPLY,
             .u.reply = {.round = 41, .ok = 0, .error = "pull timed out", .pull_failed = 1,
                         .count = 48, .train = train}};
    CHECK(round_trip(&r, &out) == NULL);
    CHECK(out.kind == MSG_REPLY && out.u.reply.round == 41 && !out.u.reply.ok &&
          out.u.reply.pull_failed && out.u.reply.count == 48 && !out.u.reply.eval);
    CHECK_STR_EQ(out.u.reply.error, "pull timed out");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(out.u.reply.train, "loss")) == 0.25);
    train_msg_free(&out);
    cJSON_Delete(train);
}

static void test_refusals(void)
{
    char err[512];
    CHECK(decode_text("{\"t\": \"shutdown\"}", err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "unknown message kind \"shutdown\"");
    CHECK(decode_text("{\"do\": \"exit\", \"code\": 0}", err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "a kind in \"t\"");
    CHECK(decode_text("[1, 2]", err, sizeof err) == LOOM_E_INVALID);
    CHECK(decode_text("{\"t\": \"hello\", \"slot\": 1, \"train\": 5, \"test\": 5}", err,
                      sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "hello message: no \"params\"");
    CHECK(decode_text("{\"t\": \"hello\", \"slot\": -1, \"params\": 1, \"train\": 5, \"test\": 5}",
                      err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "\"slot\": expected a whole number");
    const char *plan = "{\"t\": \"plan\", \"round\": 1, \"epoch\": 0, \"epochs\": 1, \"iteration\": 0,"
                       " \"steps_per_epoch\": 1, \"workers\": 1, \"timeout_ms\": 5, \"do\": \"%s\"%s}";
    char text[512];
    snprintf(text, sizeof text, plan, "dance", "");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "unknown action \"dance\"");
    snprintf(text, sizeof text, plan, "step", ", \"mb\": [[1, 2]], \"scale\": []");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "\"mb\" and \"scale\" of one length");
    snprintf(text, sizeof text, plan, "step", ", \"mb\": [[1, \"x\"]], \"scale\": [1]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "expected sample indices");
    snprintf(text, sizeof text, plan, "step", ", \"mb\": [[1]], \"scale\": [1]");
    CHECK(decode_text(text, err, sizeof err) == LOOM_OK);
    CHECK(decode_text("{\"t\": \"reply\", \"round\": 1, \"ok\": true, \"train\": {\"loss\": \"low\"}}",
                      err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "\"train.loss\": expected a number");
    CHECK(decode_text("{\"t\": \"exit\", \"code\": 0, \"urgent\": true}", err, sizeof err) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(err, "exit message: unknown field \"urgent\"");
    snprintf(text, sizeof text, plan, "validate",
             ", \"begin\": 0, \"end\": 1, \"join\": {\"gen\": 1, \"root\": 0, \"timeout_ms\": 5, \"rank\": 2}");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "plan's join message: unknown field \"rank\"");
    snprintf(text, sizeof text, plan, "finish",
             ", \"job_metrics\": {\"split\": 2, \"epoch\": 0, \"workers\": 1, \"iteration\": 1, "
             "\"metrics\": {}}");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "plan's job_metrics message: \"split\": expected 0 (train) or 1 (test)");
    snprintf(text, sizeof text, plan, "finish",
             ", \"job_metrics\": {\"split\": 0, \"epoch\": 0, \"workers\": 1, \"iteration\": 1}");
    CHECK(decode_text(text, err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "plan's job_metrics message: no \"metrics\"");
    CHECK(decode_text("{\"t\": \"exit\", \"code\": 300}", err, sizeof err) == LOOM_E_INVALID);
    CHECK_CONTAINS(err, "exit message: \"code\"");
}

static void test_socket(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    float weights[4] = {1, 2, 3, 4}, got[4] = {0};
    uint64_t sample = 1;
    uint32_t size = 1;
    double scale = 1;
    msg w = {.kind = MSG_WORK,
             .u.work = {.version = 1, .batch = {.samples = &sample, .sizes = &size, .scales = &scale,
                                                .count = 1}}};
    CHECK(train_msg_send(sv[0], &w, weights, sizeof weights) == NULL);
    msg in;
    CHECK(train_msg_recv(sv[1], time_mono_ms() + 5000, &in) == NULL);
    CHECK(in.kind == MSG_WORK && in.blob == sizeof weights);
    char err[256];
    CHECK(loom_err_take(train_msg_recv_blob(sv[1], &in, got, 3 * sizeof(float), 0), err, sizeof err) ==
          LOOM_E_INVALID);
    CHECK_CONTAINS(err, "expected 12 bytes after the message, it announces 16");
    CHECK(train_msg_recv_blob(sv[1], &in, got, sizeof got, time_mono_ms() + 5000) == NULL);
    CHECK(memcmp(got, weights, sizeof got) == 0);
    train_msg_free(&in);

    CHECK(loom_err_take(train_msg_recv(sv[1], time_mono_ms() + 50, &in), err, sizeof err) ==
          LOOM_E_DEADLINE);
    close(sv[0]);
    CHECK(loom_err_take(train_msg_recv(sv[1], time_mono_ms() + 5000, &in), err, sizeof err) ==
          LOOM_E_UNAVAILABLE);
    CHECK_STR_EQ(err, "closed");
    close(sv[1]);
}

/* A sender that stops in the middle of a message (a blob included) is
 * lost: the read ends LOOM_HEARTBEAT_TIMEOUT_MS after its last byte, not
 * at the minute-long deadline a reply may take to begin. */
static void test_stalled_sender(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(train_msg_write_all(sv[0], "\x40\0\0\0{\"t\":", 5) == 0);
    msg in;
    char err[256];
    int64_t t0 = time_mono_ms();
    CHECK(loom_err_take(train_msg_recv(sv[1], t0 + 60000, &in), err, sizeof err) ==
          LOOM_E_DEADLINE);
    int64_t took = time_mono_ms() - t0;
    CHECK_CONTAINS(err, "nothing for 3 s in the middle of a message");
    CHECK_MSG(took >= LOOM_HEARTBEAT_TIMEOUT_MS - 100 && took < LOOM_HEARTBEAT_TIMEOUT_MS + 2000,
              "took %lld ms", (long long)took);
    close(sv[0]);
    close(sv[1]);

    /* A whole message, then half of the blob it announces. */
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    const char *text = "{\"t\":\"exit\",\"reason\":\"\",\"code\":0,\"blob\":16}";
    unsigned char head[4] = {(unsigned char)strlen(text), 0, 0, 0};
    CHECK(train_msg_write_all(sv[0], head, 4) == 0);
    CHECK(train_msg_write_all(sv[0], text, strlen(text)) == 0);
    CHECK(train_msg_write_all(sv[0], "12345678", 8) == 0);
    CHECK(train_msg_recv(sv[1], time_mono_ms() + 5000, &in) == NULL);
    CHECK(in.kind == MSG_EXIT && in.blob == 16);
    float got[4];
    t0 = time_mono_ms();
    CHECK(loom_err_take(train_msg_recv_blob(sv[1], &in, got, sizeof got, t0 + 60000), err,
                        sizeof err) == LOOM_E_DEADLINE);
    took = time_mono_ms() - t0;
    CHECK_CONTAINS(err, "in the middle of a message");
    CHECK_MSG(took < LOOM_HEARTBEAT_TIMEOUT_MS + 2000, "took %lld ms", (long long)took);
    train_msg_free(&in);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    test_hello_and_exit();
    test_plan();
    test_net_members();
    test_multi_step_plan();
    test_work_and_reply();
    test_refusals();
    test_socket();
    test_stalled_sender();
    return CHECK_DONE();
}
