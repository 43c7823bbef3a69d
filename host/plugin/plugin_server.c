/* plugin/plugin_server.c - see plugin_server.h. */
#include "plugin/plugin_server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/launch_remote.h"
#include "plugin/plugin.h"
#include "plugin/plugin_wire.h"
#include "plugin/registry.h"
#include "plugin/search_server.h"
#include "util/fs.h"
#include "util/supervise.h"

typedef struct server {
    int fd;
    registry *reg;
    loom_error *load_error; /* why there is no factory */
    int kind;               /* LOOM_KIND_LOGGER, LOOM_KIND_FRAMEWORK or LOOM_KIND_SEARCH */
    const loom_logger_factory *logger;
    const loom_framework_factory *framework;
    search_server *search;
    wire_buf payload;       /* what a reply carries after its status */
    char acquired[LOOM_NAME_MAX];
    loom_logger_instance *inst;
    char *frame;
    size_t frame_cap;
    wire_buf reply;
} server;

/* The factory `name`, or the file's only one of the kind when it was
 * registered under another name (`loom logger add --name`). */
static void load(server *s, const char *path, const char *name)
{
    s->reg = registry_create();
    if (!s->reg) {
        s->load_error = loom_err(LOOM_E_INTERNAL, "out of memory");
        return;
    }
    s->load_error = registry_load(s->reg, path, "user", NULL, s->kind, 0);
    if (s->load_error)
        return;
    registry_entry e;
    if (registry_acquire(s->reg, s->kind, name, &e) != 0) {
        registry_entry all[2];
        if (registry_list(s->reg, s->kind, all, 2) != 1 ||
            registry_acquire(s->reg, s->kind, all[0].name, &e) != 0) {
            s->load_error = loom_err(LOOM_E_NOT_FOUND, "%s provides no %s named '%s'", path,
                                     loom_kind_name(s->kind), name);
            return;
        }
    }
    if (s->kind == LOOM_KIND_LOGGER)
        s->logger = e.factory;
    else if (s->kind == LOOM_KIND_FRAMEWORK)
        s->framework = e.factory;
    else if (!(s->search = search_server_new(e.factory)))
        s->load_error = loom_err(LOOM_E_INTERNAL, "out of memory");
    snprintf(s->acquired, sizeof s->acquired, "%s", e.name);
}

static uint32_t get_metrics(wire_reader *r, loom_metric *m)
{
    uint32_t n = wire_get_u32(r);
    if (n > LOOM_HOST_MAX_METRICS) {
        r->bad = 1;
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        m[i].name = wire_get_str(r);
        m[i].value = wire_get_f64(r);
    }
    return n;
}

static loom_error *logger_create(server *s, wire_reader *r)
{
    loom_logger_config cfg = {.struct_size = sizeof cfg};
    cfg.role = wire_get_i32(r);
    cfg.rank = wire_get_u32(r);
    cfg.exec_id = wire_get_str(r);
    cfg.log_dir = wire_get_str(r);
    cfg.config_json = wire_get_str(r);
    cfg.result_dir = wire_get_str(r);
    cfg.plugin_dir = wire_get_str(r);
    if (r->bad)
        return NULL;
    if (s->inst)
        s->logger->destroy(s->inst);
    s->inst = NULL;
    return s->logger->create(s->logger, &cfg, &s->inst);
}

static uint32_t logger_entries(const loom_logger_factory *f)
{
    return (LOOM_OPTIONAL_ENTRY(f, loom_logger_factory, on_train_begin) ? WIRE_HAS_BEGIN : 0) |
           (LOOM_OPTIONAL_ENTRY(f, loom_logger_factory, log_train_metrics) ? WIRE_HAS_TRAIN : 0) |
           (LOOM_OPTIONAL_ENTRY(f, loom_logger_factory, log_test_metrics) ? WIRE_HAS_TEST : 0) |
           (LOOM_OPTIONAL_ENTRY(f, loom_logger_factory, on_train_end) ? WIRE_HAS_END : 0);
}

#define CALL_OPTIONAL(s, field, ...)                                                   \
    (LOOM_OPTIONAL_ENTRY((s)->logger, loom_logger_factory, field)                      \
         ? (s)->logger->field((s)->inst, __VA_ARGS__)                                  \
         : NULL)

/* Runs one logger request; r->bad afterwards means it was malformed. */
static loom_error *logger_dispatch(server *s, uint8_t op, wire_reader *r)
{
    if (op == WIRE_LOGGER_CREATE)
        return logger_create(s, r);
    if (!s->inst)
        return loom_err(LOOM_E_INTERNAL, "no logger instance (create first)");
    loom_metric m[LOOM_HOST_MAX_METRICS];
    if (op == WIRE_LOGGER_BEGIN) {
        loom_train_info info = {.struct_size = sizeof info};
        info.epochs = wire_get_u32(r);
        info.workers = wire_get_u32(r);
        info.batch_size = wire_get_u32(r);
        info.effective_batch_size = wire_get_u32(r);
        info.exec_id = wire_get_str(r);
        return r->bad ? NULL : CALL_OPTIONAL(s, on_train_begin, &info);
    }
    if (op == WIRE_LOGGER_TRAIN) {
        uint32_t n = get_metrics(r, m);
        uint64_t iteration = wire_get_u64(r);
        uint32_t epoch = wire_get_u32(r), workers = wire_get_u32(r);
        return r->bad ? NULL : CALL_OPTIONAL(s, log_train_metrics, m, n, iteration, epoch, workers);
    }
    if (op == WIRE_LOGGER_TEST) {
        uint32_t n = get_metrics(r, m);
        uint64_t iteration = wire_get_u64(r);
        uint32_t epoch = wire_get_u32(r);
        return r->bad ? NULL : CALL_OPTIONAL(s, log_test_metrics, m, n, iteration, epoch);
    }
    if (op == WIRE_LOGGER_END) {
        int32_t status = wire_get_i32(r);
        const char *message = wire_get_str(r);
        return r->bad ? NULL : CALL_OPTIONAL(s, on_train_end, status, message);
    }
    r->bad = 1;
    return NULL;
}

static int reply(server *s, loom_error *e)
{
    wire_begin(&s->reply);
    wire_put_u8(&s->reply, e ? 1 : 0);
    wire_put_i32(&s->reply, loom_err_code(e));
    wire_put_str(&s->reply, e ? loom_err_message(e) : "");
    if (!e)
        wire_put_bytes(&s->reply, s->payload.data, s->payload.len);
    loom_err_free(e);
    return wire_finish(&s->reply) == 0 && fd_write_all(s->fd, s->reply.data, s->reply.len) == 0 ? 0 : -1;
}

/* One request; -1 ends the loop (the host closed, or broke the protocol). */
static int serve_one(server *s)
{
    uint32_t len;
    supervise_spin_readable(s->fd, SUPERVISE_SPIN_US); /* the next call often follows */
    if (fd_read_all(s->fd, &len, sizeof len) != 0)
        return -1;
    if (len == 0 || len > WIRE_MAX_FRAME)
        return -2;
    if (len > s->frame_cap) {
        char *grown = realloc(s->frame, len);
        if (!grown)
            return -2;
        s->frame = grown;
        s->frame_cap = len;
    }
    if (fd_read_all(s->fd, s->frame, len) != 0)
        return -1;
    wire_reader r = {.p = s->frame, .left = len};
    uint8_t op = wire_get_u8(&r);
    if (s->load_error)
        return reply(s, loom_err(loom_err_code(s->load_error), "%s", loom_err_message(s->load_error)));
    loom_error *e;
    if (s->kind == LOOM_KIND_FRAMEWORK) {
        s->payload.len = 0;
        s->payload.failed = 0;
        e = op == WIRE_LAUNCH_PLAN ? launch_plan_serve(s->framework, &r, &s->payload) : NULL;
        r.bad |= op != WIRE_LAUNCH_PLAN || s->payload.failed;
    } else if (s->kind == LOOM_KIND_SEARCH) {
        s->payload.len = 0;
        s->payload.failed = 0;
        e = search_server_dispatch(s->search, op, &r, &s->payload);
        r.bad |= s->payload.failed;
    } else {
        s->payload.len = 0;
        s->payload.failed = 0;
        e = logger_dispatch(s, op, &r);
        if (!e && op == WIRE_LOGGER_CREATE) /* which optional entries it has */
            wire_put_u32(&s->payload, logger_entries(s->logger));
    }
    if (r.bad) {
        loom_err_free(e);
        return reply(s, loom_err(LOOM_E_INTERNAL, "malformed request (operation %u)", op));
    }
    return reply(s, e);
}

int plugin_server_run(int fd, const char *path, const char *name, const char *kind,
                      int (*confine)(void *ctx), void *ctx)
{
    server s = {.fd = fd};
    if (!strcmp(kind, "logger") || !strcmp(kind, "framework") || !strcmp(kind, "search")) {
        s.kind = !strcmp(kind, "logger")      ? LOOM_KIND_LOGGER
                 : !strcmp(kind, "framework") ? LOOM_KIND_FRAMEWORK
                                              : LOOM_KIND_SEARCH;
        load(&s, path, name);
    } else {
        s.load_error = loom_err(LOOM_E_UNSUPPORTED,
                                "plugin-host serves loggers, frameworks and search algorithms, "
                                "not '%s'", kind);
    }
    int rc = confine && confine(ctx) != 0 ? -2 : 0;
    while (rc == 0 && (rc = serve_one(&s)) == 0)
        ;
    if (s.inst)
        s.logger->destroy(s.inst);
    loom_err_free(s.load_error);
    search_server_free(s.search);
    if (s.logger || s.framework || s.search)
        registry_release(s.reg, s.kind, s.acquired);
    wire_free(&s.payload);
    registry_destroy(s.reg);
    wire_free(&s.reply);
    free(s.frame);
    close(fd);
    return rc == -1 ? 0 : 1;
}
