/* daemon/daemon.c - see daemon.h. */
#include "api/events.h"
#include "api/routes.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/ffi_call.h"
#include "train/coordinator.h"
#include "util/fs.h"
#include "util/job_sandbox.h"
#include "util/proc_group.h"
#include "util/log.h"

#define MAX_BODY ((size_t)1 << 20)          /* JSON bodies: 1 MiB */
#define MAX_UPLOAD ((size_t)256 << 20)      /* model directories, plugins */

void loomd_default_plugin_dir(char *out, size_t outlen)
{
    const char *env = getenv("LOOM_PLUGIN_DIR");
    if (env && *env) {
        snprintf(out, outlen, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    if (!fs_self_exe(exe, sizeof exe)) {
        snprintf(out, outlen, "/usr/local/lib/loom/plugins");
        return;
    }
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    /* The build tree and an install under a plain prefix use lib/; an
     * install into a multiarch libdir uses LOOM_PLUGIN_RELDIR. */
    snprintf(out, outlen, "%s/../lib/loom/plugins", exe);
    if (!fs_is_dir(out))
        snprintf(out, outlen, "%s/../%s", exe, LOOM_PLUGIN_RELDIR);
}

void loomd_default_web_dir(char *out, size_t outlen)
{
    char exe[PATH_MAX];
    if (fs_self_exe(exe, sizeof exe)) {
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        snprintf(out, outlen, "%s/../share/loom/web", exe);
        if (fs_is_dir(out))
            return;
    }
    snprintf(out, outlen, "%s", LOOM_SOURCE_WEB_DIR);
}

int loomd_port(const loomd *d) { return http_server_port(d->http); }

/* Why `home` is refused: its lock file names the holder, "pid 12 at
 * http://127.0.0.1:9280" ("pid 12" until that host listens). */
static void refusal(const char *home, char *out, size_t outlen)
{
    char path[PATH_MAX], url[512] = "", holder[600] = "its pid is not recorded";
    long pid = 0;
    snprintf(path, sizeof path, "%s/loom.lock", home);
    char *text;
    loom_err_free(fs_read_file(path, 1024, &text, NULL)); /* unreadable: not recorded */
    int n = text ? sscanf(text, "%ld %511s", &pid, url) : 0;
    free(text);
    if (n >= 1 && pid > 0)
        snprintf(holder, sizeof holder, "pid %ld%s%s", pid, n == 2 ? " at " : "", n == 2 ? url : "");
    snprintf(out, outlen, "%s: another loom host is using this home directory (%s); stop it, or "
             "choose another home", home, holder);
}

/* How long a start waits for a home's lock before it says another host
 * holds it. */
#define HOME_LOCK_WAIT_MS 2000

/* flock(fd, op | LOCK_NB), tried again for up to HOME_LOCK_WAIT_MS: a host
 * killed a moment ago may have left a child between its fork and its exec,
 * which holds the lock until it execs; a host that runs holds it for good.
 * 1 when it could not be taken. */
static int lock_held(int fd, int op)
{
    int held = flock(fd, op | LOCK_NB) != 0;
    for (int tries = 0; held && errno == EWOULDBLOCK && tries < HOME_LOCK_WAIT_MS / 50; tries++) {
        usleep(50 * 1000);
        held = flock(fd, op | LOCK_NB) != 0;
    }
    return held;
}

loom_error *loomd_home_free(const char *home)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/loom.lock", home);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    /* A shared lock is refused only while a host holds the exclusive one. */
    int held = lock_held(fd, LOCK_SH);
    close(fd);
    if (!held)
        return NULL;
    char why[PATH_MAX + 700];
    refusal(home, why, sizeof why);
    return loom_err(LOOM_E_CONFLICT, "%s", why);
}

static void note_holder(int fd, const char *text)
{
    if (ftruncate(fd, 0) == 0 && pwrite(fd, text, strlen(text), 0) < 0)
        log_warn("cannot note this host in its home's lock file: %s", strerror(errno));
}

/* One host per home: a second one would corrupt nothing (SQLite locks) but
 * would fight over the execs' processes. The lock lives as long as the
 * process (or loomd_stop); workers do not inherit it. */
static loom_error *hold_home(loomd *d)
{
    char path[PATH_MAX], holder[64];
    snprintf(path, sizeof path, "%s/loom.lock", d->api.home);
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (d->lock_fd < 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot open: %s", path, strerror(errno));
    if (lock_held(d->lock_fd, LOCK_EX)) {
        char why[PATH_MAX + 700];
        refusal(d->api.home, why, sizeof why);
        return loom_err(LOOM_E_CONFLICT, "%s", why);
    }
    snprintf(holder, sizeof holder, "%ld\n", (long)getpid());
    note_holder(d->lock_fd, holder);
    return NULL;
}

/* HOME/uploads, where uploads are received; once this host holds the
 * home, what a killed one left there is garbage. */
static loom_error *prepare_spool(loomd *d)
{
    snprintf(d->spool_dir, sizeof d->spool_dir, "%s/uploads", d->api.home);
    loom_error *e = fs_rm_rf(d->spool_dir);
    if (!e)
        e = fs_mkdir_p(d->spool_dir);
    if (!e && chmod(d->spool_dir, 0700) != 0)
        e = loom_err_sys(LOOM_E_INTERNAL, errno, "cannot chmod %s", d->spool_dir);
    return loom_err_recode(e, LOOM_E_INTERNAL);
}

/* The plugin registry: the host's own factories and built-in plugins, then
 * the users' (described by a child, never loaded here). */
static loom_error *open_registry(loomd *d)
{
    d->api.reg = registry_create();
    if (!d->api.reg) {
        return loom_err(LOOM_E_INTERNAL, "plugin registry: out of memory");
    }
    /* Users' plugins are described by a child and run only in children of
     * their own: no code of theirs runs here. */
    char self[PATH_MAX];
    if (fs_self_exe(self, sizeof self))
        registry_set_probe(d->api.reg, self);
    registry_add_factory(d->api.reg, LOOM_KIND_KERNEL, "ffi", LOOM_VERSION,
                         "serves a plain C function named in model.json through libffi",
                         ffi_kernel_factory());
    int builtin = registry_load_dir(d->api.reg, d->plugin_dir, "builtin");
    log_info("loaded %d built-in plugin file(s) from %s", builtin, d->plugin_dir);
    /* WMLA submits elastic training as `--exec-start edt`. */
    registry_alias(d->api.reg, LOOM_KIND_FRAMEWORK, "native", "edt");
    api_load_user_plugins(&d->api);
    return NULL;
}

/* What browsers and notebooks may do: the CORS allow-list, whether
 * passwords may come over this listener (HTTPS, loopback, or allowed), and
 * the console's files and cookies. */
static loom_error *open_web_front(loomd *d, const loomd_options *opt)
{
    const char *address = opt->address ? opt->address : "127.0.0.1";
    d->api.basic_over_http_allowed = opt->allow_basic_over_http || opt->tls_cert_pem ||
                                 strncmp(address, "127.", 4) == 0;
    d->api.https = opt->tls_cert_pem && opt->tls_key_pem;
    if (opt->web_dir)
        snprintf(d->api.web_dir, sizeof d->api.web_dir, "%s", opt->web_dir);
    else
        loomd_default_web_dir(d->api.web_dir, sizeof d->api.web_dir);
    d->api.history_bounds = (store_history_bounds){
        .window_ms = (int64_t)(opt->history_hours ? opt->history_hours : HISTORY_DEFAULT_HOURS) *
                     3600 * 1000,
        .max_points = opt->history_points ? opt->history_points : HISTORY_DEFAULT_POINTS};
    return cors_policy_create(opt->cors_origins, opt->cors_origin_count, &d->cors);
}

loom_error *loomd_start(const loomd_options *opt, loomd **out)
{
    *out = NULL;
    loomd *d = calloc(1, sizeof *d);
    if (!d)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    loom_error *e = NULL;
    d->lock_fd = -1;
    pthread_mutex_init(&d->api.admin_lock, NULL);
    snprintf(d->api.home, sizeof d->api.home, "%s", opt->home);
    snprintf(d->api.files, sizeof d->api.files, "%s",
             opt->shared_dir ? opt->shared_dir : opt->home);
    if (opt->plugin_dir)
        snprintf(d->plugin_dir, sizeof d->plugin_dir, "%s", opt->plugin_dir);
    else
        loomd_default_plugin_dir(d->plugin_dir, sizeof d->plugin_dir);

    char path[PATH_MAX];
    if ((e = fs_mkdir_p(d->api.home)) != NULL) {
        e = loom_err_recode(loom_err_wrap(e, "--home"), LOOM_E_INVALID);
        goto fail_with;
    }
    if (opt->shared_dir && (e = job_sandbox_files_dir_valid(opt->shared_dir, opt->home)) != NULL)
        goto fail_with;
    /* Under a home just made: a failure shows where they are written. */
    snprintf(path, sizeof path, "%s/plugins", d->api.files);
    loom_err_free(fs_mkdir_p(path));
    snprintf(path, sizeof path, "%s/execs", d->api.files);
    loom_err_free(fs_mkdir_p(path));

    if ((e = hold_home(d)) != NULL || (e = prepare_spool(d)) != NULL)
        goto fail_with;

    snprintf(path, sizeof path, "%s/loom.db", d->api.home);
    if ((e = store_open(path, &d->api.st)) != NULL)
        goto fail_with;
    /* Every request's token is checked in a server thread: on a connection
     * of its own, so a check reads (WAL) beside the exec service's commits
     * instead of queueing behind their fsyncs. */
    if ((e = store_open(path, &d->auth_st)) != NULL)
        goto fail_with;
    if ((e = auth_open(d->auth_st, NULL, &d->api.auth)) != NULL ||
        (e = auth_bootstrap_admin(d->api.auth, opt->admin_password, d->generated_admin_password,
                                  sizeof d->generated_admin_password, NULL)) != NULL)
        goto fail_with;
    if (opt->admin_password)
        d->generated_admin_password[0] = 0;
    if ((e = loomd_isolate_jobs(d, opt)) != NULL || (e = open_registry(d)) != NULL)
        goto fail_with;
    sched_service_options so = {.cpu_slots = opt->cpu_slots,
                                .hysteresis = opt->hysteresis >= 0 ? opt->hysteresis : 5.0,
                                .slurm_partition = opt->slurm_partition,
                                .slurm_conf = opt->slurm_conf,
                                .slurm_cpus_per_slot = (uint32_t)opt->slurm_cpus_per_slot};
    if ((e = sched_service_create(d->api.st, &so, &d->api.sched)) != NULL)
        goto fail_with;
    int swept = edt_sweep_stale_segments();
    if (swept)
        log_info("removed %d shared-memory segment(s) left by hosts that were killed", swept);
    d->api.execs = exec_service_create(d->api.st, d->api.reg, d->api.sched, d->api.files);
    if (!d->api.execs) {
        e = loom_err(LOOM_E_INTERNAL, "exec service: out of memory");
        goto fail_with;
    }
    exec_service_set_limits(d->api.execs, &opt->limits);
    if ((e = exec_service_set_data_roots(
                  d->api.execs, opt->shared_dir ? d->api.home : NULL, opt->data_roots,
                  opt->data_root_count)))
        goto fail_with;
    exec_service_start(d->api.execs);
    infer_options io = {.st = d->api.st, .sched = d->api.sched, .home = d->api.files,
                        .plugin_dir = d->plugin_dir, .reg = d->api.reg};
    if ((e = infer_service_create(&io, &d->api.infer)) != NULL)
        goto fail_with;

    if ((e = hpo_service_create(d->api.st, d->api.reg, d->api.execs, d->api.files, NULL, &d->api.hpo)) != NULL)
        goto fail_with;

    size_t nroutes = 0;
    if ((e = open_web_front(d, opt)) != NULL || (e = api_route_table(d->routes, &nroutes)) != NULL)
        goto fail_with;

    /* inference calls wait on a kernel: answered on the lane (dlim's, and
     * the Open Inference Protocol's POST /v2/models/NAME/infer; every POST
     * route under these prefixes must never block) */
    static const char *const lane_prefixes[] = {"POST " LOOM_ROUTE_INFERENCE "/", "POST /v2/models/",
                                                NULL};
    http_config cfg = {
        .address = opt->address ? opt->address : "127.0.0.1",
        .port = opt->port,
        .max_body = MAX_BODY,
        .max_upload = MAX_UPLOAD,
        .spool_dir = d->spool_dir,
        .limits = opt->http,
        .routes = d->routes,
        .nroutes = nroutes,
        .ctx = &d->api,
        .authenticate = api_authenticate,
        .reply_error = api_reply_error,
        .tls_cert_pem = opt->tls_cert_pem,
        .tls_key_pem = opt->tls_key_pem,
        .cors = d->cors,
        .lane_prefixes = lane_prefixes,
    };
    if ((e = api_events_start(&d->api, opt->max_event_streams_per_user, &d->api.events)) != NULL ||
        (e = http_server_start(&cfg, &d->http)) != NULL ||
        (e = api_history_start(&d->api, &d->history)) != NULL)
        goto fail_with;
    log_info("loom host %s listening on %s:%d, home %s", LOOM_VERSION, cfg.address,
             http_server_port(d->http), d->api.home);
    /* The lock file names its holder, for whoever is refused the home. */
    char holder[600];
    snprintf(holder, sizeof holder, "%ld %s://%s:%d\n", (long)getpid(),
             opt->tls_cert_pem ? "https" : "http", cfg.address, http_server_port(d->http));
    note_holder(d->lock_fd, holder);
    *out = d;
    return NULL;
fail_with:
    loomd_stop(d);
    return e;
}

void loomd_stop(loomd *d)
{
    if (!d)
        return;
    /* A request waiting for a kernel holds its connection: answer them
     * all before the server stops. */
    infer_service_stop_all(d->api.infer);
    http_server_stop(d->http); /* ends the event streams */
    api_events_stop(d->api.events);
    api_history_stop(d->history); /* before the services it samples */
    hpo_service_destroy(d->api.hpo);
    cors_policy_free(d->cors);
    infer_service_destroy(d->api.infer);
    exec_service_destroy(d->api.execs);
    proc_group_teardown(); /* whatever is left of every group */
    job_sandbox_configure(NULL); /* its user lookup uses d->api.auth */
    sched_service_destroy(d->api.sched);
    registry_destroy(d->api.reg);
    auth_close(d->api.auth);
    store_close(d->auth_st);
    store_close(d->api.st);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    pthread_mutex_destroy(&d->api.admin_lock);
    free(d);
}
