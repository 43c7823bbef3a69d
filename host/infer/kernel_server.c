/* infer/kernel_server.c - see kernel_server.h. */
#define _GNU_SOURCE 1 /* memfd_create */
#include "infer/kernel_server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "infer/kernel_proc.h"
#include "infer/kernel_wire.h"
#include "infer/v2_codec.h"
#include "plugin/ffi_call.h"
#include "plugin/plugin_wire.h"
#include "plugin/registry.h"
#include "util/fs.h"

typedef struct loaded_kernel {
    registry *reg;
    const loom_kernel_factory *factory;
    loom_kernel_model *model;
    loom_kernel_instance *inst;
} loaded_kernel;

/* One request's slot while a batch runs. */
typedef struct slot {
    loom_infer_request req;
    int answered;
    int32_t status;
    char type[KERNEL_CONTENT_TYPE_MAX];
    uint64_t off, len;
    struct server *srv;
} slot;

typedef struct server {
    int fd;
    char *arena;
    char *out; /* the answer region of the batch running */
    size_t out_used;
    slot *slots;
    /* A v2 batch's input views, MODEL_TENSOR_LIMIT per request (apart from
     * the slots, which stay small for a raw batch). */
    loom_tensor_view *views;
    wire_buf reply; /* reused batch after batch */
} server;

static loom_error *load_factory(loaded_kernel *k, const kernel_server_spec *spec)
{
    if (spec->runtime == MODEL_RUNTIME_FFI) {
        k->factory = ffi_kernel_factory();
        return NULL;
    }
    if (!spec->kernel_path)
        return loom_err(LOOM_E_INVALID, "kernel_path: runtime \"%s\" needs a kernel file",
                        model_runtime_name(spec->runtime));
    k->reg = registry_create();
    if (!k->reg)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    loom_error *e = registry_load(k->reg, spec->kernel_path, "user", NULL, LOOM_KIND_KERNEL, 0);
    if (e)
        return loom_err_wrap(e, "kernel_path %s", spec->kernel_path);
    registry_entry all[2];
    if (registry_list(k->reg, LOOM_KIND_KERNEL, all, 2) != 1)
        return loom_err(LOOM_E_INVALID, "kernel_path %s: expected exactly one kernel in the file",
                        spec->kernel_path);
    registry_entry entry;
    if (registry_acquire(k->reg, LOOM_KIND_KERNEL, all[0].name, &entry) != 0)
        return loom_err(LOOM_E_INTERNAL, "kernel_path %s: cannot acquire its kernel",
                        spec->kernel_path);
    k->factory = entry.factory;
    return NULL;
}

static loom_error *load_kernel(loaded_kernel *k, const kernel_server_spec *spec)
{
    memset(k, 0, sizeof *k);
    loom_error *e = load_factory(k, spec);
    if (e)
        return e;
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/model.json", spec->model_dir);
    char *json;
    if ((e = fs_read_file(path, MODEL_JSON_MAX, &json, NULL)) != NULL)
        return loom_err_recode(e, LOOM_E_NOT_FOUND);
    loom_kernel_model_config cfg = {.struct_size = sizeof cfg, .model_dir = spec->model_dir,
                                    .model_json = json, .weight_path = spec->weight_path};
    e = k->factory->load_model(k->factory, &cfg, &k->model);
    free(json);
    if (e)
        return loom_err_wrap(e, "loading the model");
    loom_device dev = {.struct_size = sizeof dev, .kind = spec->device_kind,
                       .index = spec->device_index};
    e = k->factory->create_instance(k->model, &dev, &k->inst);
    if (e) {
        k->inst = NULL;
        return loom_err_wrap(e, "creating an instance");
    }
    return NULL;
}

static void unload_kernel(loaded_kernel *k)
{
    if (k->inst)
        k->factory->destroy_instance(k->inst);
    if (k->model)
        k->factory->unload_model(k->model);
    if (k->reg)
        registry_destroy(k->reg);
    memset(k, 0, sizeof *k);
}

loom_error *kernel_server_check(const kernel_server_spec *spec)
{
    loaded_kernel k;
    loom_error *e = load_kernel(&k, spec);
    unload_kernel(&k);
    return e;
}

/* READY: the frame, with the arena's fd attached when ok. */
static int send_ready(int fd, loom_error *e, int memfd)
{
    wire_buf b = {0};
    wire_begin(&b);
    wire_put_u8(&b, e ? 1 : 0);
    wire_put_i32(&b, e ? loom_err_code(e) : 0);
    wire_put_str(&b, e ? loom_err_message(e) : "");
    if (wire_finish(&b) != 0)
        return -1;
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {.iov_base = b.data, .iov_len = b.len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (memfd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &memfd, sizeof(int));
    }
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    int rc = n < 0 ? -1 : fd_write_all(fd, b.data + n, b.len - (size_t)n);
    wire_free(&b);
    return rc;
}

/* The answer's place in the batch's answer region: `len` bytes from an
 * 8-byte boundary; -1 (the request failed) when the region is full. */
static int answer_room(slot *s, uint64_t len)
{
    server *srv = s->srv;
    size_t at = (srv->out_used + 7) & ~(size_t)7;
    if (at > KERNEL_ARENA_REGION || len > KERNEL_ARENA_REGION - at) {
        s->status = LOOM_E_TOO_LARGE;
        s->off = s->len = 0;
        return -1;
    }
    s->off = at;
    s->len = len;
    srv->out_used = at + len;
    return 0;
}

static loom_error *respond(loom_infer_request *request, int32_t status, const char *content_type,
                           const uint8_t *body, uint64_t body_len)
{
    slot *s = request->host_data;
    if (s->answered)
        return loom_err(LOOM_E_CONFLICT, "request %llu was already answered",
                        (unsigned long long)request->id);
    server *srv = s->srv;
    s->answered = 1;
    s->status = status;
    kernel_content_type_set(s->type, content_type ? content_type : "application/json");
    if (answer_room(s, body_len) != 0)
        return loom_err(LOOM_E_TOO_LARGE, "the batch's answers exceed %zu bytes",
                        KERNEL_ARENA_REGION);
    if (body_len)
        memcpy(srv->out + s->off, body, body_len);
    return NULL;
}

static loom_error *respond_tensors(loom_infer_request *request, const loom_tensor_view *outputs,
                                   uint32_t count)
{
    slot *s = request->host_data;
    if (s->answered)
        return loom_err(LOOM_E_CONFLICT, "request %llu was already answered",
                        (unsigned long long)request->id);
    loom_error *bad = v2_views_check(outputs, count);
    if (bad) { /* the request fails with this error */
        bad = loom_err_wrap(bad, "respond_tensors");
        const char *msg = loom_err_message(bad);
        loom_err_free(respond(request, LOOM_E_INTERNAL, "text/plain", (const uint8_t *)msg,
                              strlen(msg)));
        return bad;
    }
    s->answered = 1;
    s->status = 0;
    kernel_content_type_set(s->type, KERNEL_TENSORS_TYPE);
    size_t size = v2_pack_size(outputs, count);
    if (answer_room(s, size) != 0)
        return loom_err(LOOM_E_TOO_LARGE, "the batch's answers exceed %zu bytes",
                        KERNEL_ARENA_REGION);
    v2_pack_write(s->srv->out + s->off, outputs, count);
    return NULL;
}

/* Fails a request the kernel left unanswered, with `e`'s message. */
static void fail_slot(server *srv, slot *s, loom_error *e, const char *fallback)
{
    const char *msg = e ? loom_err_message(e) : fallback;
    int32_t code = e ? loom_err_code(e) : LOOM_E_INTERNAL;
    respond(&s->req, code ? code : LOOM_E_INTERNAL, "text/plain", (const uint8_t *)msg,
            strlen(msg));
    (void)srv;
}

static int serve_batch(server *srv, loaded_kernel *k, wire_reader *r)
{
    uint8_t region = wire_get_u8(r);
    uint8_t tensors = wire_get_u8(r);
    uint32_t n = wire_get_u32(r);
    if (r->bad || region > 1 || tensors > 1 || n == 0 || n > KERNEL_BATCH_MAX)
        return -1;
    loom_infer_request *ptrs[KERNEL_BATCH_MAX];
    srv->out = srv->arena + (1 + (size_t)region) * KERNEL_ARENA_REGION;
    srv->out_used = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off = wire_get_u64(r), len = wire_get_u64(r);
        if (r->bad || off > KERNEL_ARENA_REGION || len > KERNEL_ARENA_REGION - off)
            return -1;
        slot *s = &srv->slots[i];
        memset(s, 0, sizeof *s);
        s->srv = srv;
        s->req = (loom_infer_request){.struct_size = sizeof s->req, .id = i,
                                      .content_type = "application/json",
                                      .body = (const uint8_t *)srv->arena + off, .body_len = len,
                                      .host_data = s, .respond = respond,
                                      .respond_tensors = respond_tensors};
        loom_tensor_view *views = srv->views + (size_t)i * MODEL_TENSOR_LIMIT;
        if (tensors && v2_pack_read(srv->arena + off, len, views, MODEL_TENSOR_LIMIT,
                                    &s->req.input_count) != 0)
            return -1;
        if (tensors) {
            s->req.inputs = views;
            s->req.body = NULL;
            s->req.body_len = 0;
        }
        ptrs[i] = &s->req;
    }
    loom_error *e = k->factory->execute(k->inst, ptrs, n);
    wire_buf *b = &srv->reply;
    wire_begin(b);
    wire_put_u8(b, 0);
    wire_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        slot *s = &srv->slots[i];
        if (!s->answered)
            fail_slot(srv, s, e, "the kernel did not answer this request");
        wire_put_i32(b, s->status);
        wire_put_str(b, s->type);
        wire_put_u64(b, s->off);
        wire_put_u64(b, s->len);
    }
    loom_err_free(e);
    return wire_finish(b) == 0 ? fd_write_all(srv->fd, b->data, b->len) : -1;
}

static int make_arena(server *srv)
{
    int memfd = memfd_create("loom-kernel-arena", MFD_CLOEXEC);
    if (memfd < 0 || ftruncate(memfd, (off_t)KERNEL_ARENA_SIZE) != 0)
        return -1;
    srv->arena = mmap(NULL, KERNEL_ARENA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (srv->arena == MAP_FAILED) {
        close(memfd);
        return -1;
    }
    return memfd;
}

int kernel_server_run(int fd, const kernel_server_spec *spec)
{
    server srv = {.fd = fd};
    loaded_kernel k;
    loom_error *e = load_kernel(&k, spec);
    int memfd = -1;
    srv.slots = calloc(KERNEL_BATCH_MAX, sizeof *srv.slots);
    srv.views = calloc((size_t)KERNEL_BATCH_MAX * MODEL_TENSOR_LIMIT, sizeof *srv.views);
    if (!e && (!srv.slots || !srv.views || (memfd = make_arena(&srv)) < 0))
        e = loom_err(LOOM_E_INTERNAL, "cannot make the shared arena: %s", strerror(errno));
    if (send_ready(fd, e, e ? -1 : memfd) != 0 || e) {
        loom_err_free(e);
        free(srv.slots);
        free(srv.views);
        unload_kernel(&k);
        return 1;
    }
    close(memfd);
    char *frame = NULL;
    size_t frame_cap = 0; /* the buffer only grows: no allocation per batch */
    int rc = 0;
    for (;;) {
        uint32_t len;
        if (fd_read_all(fd, &len, sizeof len) != 0)
            break; /* the host closed: finish */
        if (len > WIRE_MAX_FRAME) {
            rc = 1;
            break;
        }
        if (len > frame_cap) {
            char *grown = realloc(frame, len);
            if (!grown) {
                rc = 1;
                break;
            }
            frame = grown;
            frame_cap = len;
        }
        if (len && fd_read_all(fd, frame, len) != 0) {
            rc = 1;
            break;
        }
        wire_reader r = {.p = frame, .left = len};
        if (wire_get_u8(&r) != KERNEL_OP_EXECUTE || serve_batch(&srv, &k, &r) != 0) {
            rc = 1;
            break;
        }
    }
    free(frame);
    wire_free(&srv.reply);
    free(srv.slots);
    free(srv.views);
    unload_kernel(&k);
    return rc;
}
