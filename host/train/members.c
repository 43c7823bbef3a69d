/* train/members.c - membership and supervision: the `loom worker` processes
 * in their slots (started, said hello, member, leaving), the deaths noticed
 * and reported, and the numbered generations the members form over the shm
 * collectives. A slot's worker is a member only between two step
 * boundaries; it joins or leaves only at one. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/coordinator_internal.h"
#include "train/link_tls.h"
#include "train/plugin_marker.h"
#include "util/fs.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/spawn.h"
#include "util/user_tree.h"


#define STARTUP_TIMEOUT_MS 120000
#define EXIT_GRACE_MS 5000

int train_is_gpu_job(const edt_coordinator *c)
{
    return c->job.device_kind == LOOM_DEVICE_CUDA;
}

int train_device_in(int32_t device, const int32_t *list, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (list[k] == device)
            return 1;
    return 0;
}

static int is_live(slot_state st)
{
    return st == SLOT_STARTING || st == SLOT_READY || st == SLOT_MEMBER;
}

uint32_t train_count_in(edt_coordinator *c, slot_state st)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        n += c->m.slots[i].state == st;
    return n;
}

static void close_slot(edt_coordinator *c, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    if (s->ninflight && c->pr.sampler_ready)
        sampler_give_back(&c->pr.smp, s->inflight, s->ninflight);
    free(s->inflight);
    proc_group_destroy(&s->group); /* what the worker left running */
    train_msg_free(&s->reply);
    /* The heartbeat thread reads the slot's link: emptied under its lock. */
    pthread_mutex_lock(&c->beats.lock);
    if (s->fd >= 0)
        close(s->fd);
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->device = -1;
    s->state = SLOT_FREE;
    pthread_mutex_unlock(&c->beats.lock);
    if (c->m.seg)
        comm_shm_mark_dead(c->m.seg, i);
    train_publish_held(c);
}

/* "killed by signal 9 (Killed)", "exited with status 1 (see ...)". */
static void describe_exit(int status, uint32_t slot, char *out, size_t outlen)
{
    if (WIFSIGNALED(status))
        snprintf(out, outlen, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, outlen, "exited with status %d (see log/worker-%u/stderr)",
                 WEXITSTATUS(status), slot);
}

/* A worker died (how: as describe_exit says, or "stopped"): its cause,
 * with the plugin it was in when it said so, is counted against its slot;
 * the same cause max_worker_failures times in a row ends the job, since a
 * replacement would only die again. Writes the cause into out. */
static void note_death(edt_coordinator *c, uint32_t i, const char *how, char *out, size_t outlen)
{
    char dir[32], plugin[256];
    snprintf(dir, sizeof dir, "log/worker-%u", i);
    plugin_marker_read(c->job.result_dir, dir, plugin, sizeof plugin);
    snprintf(out, outlen, "%s%s%s", how, plugin[0] ? " in " : "", plugin);
    edt_members *m = &c->m;
    m->deaths_since_progress++;
    if (m->death_streak[i] && !strcmp(m->death_cause[i], out))
        m->death_streak[i]++;
    else
        m->death_streak[i] = 1;
    snprintf(m->death_cause[i], sizeof m->death_cause[i], "%s", out);
    if (m->death_streak[i] >= c->job.settings.max_worker_failures && !m->failing[0])
        snprintf(m->failing, sizeof m->failing, "worker %u died %u time(s) in a row: %s", i,
                 m->death_streak[i], out);
}

void train_note_progress(edt_coordinator *c)
{
    c->m.deaths_since_progress = 0;
    memset(c->m.death_streak, 0, sizeof c->m.death_streak);
}

static void drop_slot(edt_coordinator *c, uint32_t i, const char *why, int silent)
{
    edt_slot *s = &c->m.slots[i];
    char how[96] = "";
    if (s->pid > 0) {
        /* A closed connection usually means the process is ending: give it
         * a moment, so the log says how it ended rather than that we
         * killed it. */
        int status, gone = 0;
        for (int t = 0; t < 20 && !gone; t++) {
            gone = waitpid(s->pid, &status, WNOHANG) == s->pid;
            if (!gone)
                usleep(10000);
        }
        if (gone) {
            describe_exit(status, i, how, sizeof how);
        } else {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
            snprintf(how, sizeof how, "stopped");
        }
    }
    char cause[256];
    note_death(c, i, how[0] ? how : "dropped", cause, sizeof cause);
    train_driver_say(c, "worker %u %s: %s", i, cause, why);
    /* Only a node worker that went silent says its node is in trouble: a
     * closed connection or a bad message came from the node (a crash, an
     * administrator's scancel), so the node's other workers stay; its srun,
     * ended or killed above, ends its Slurm job. */
    if (s->node[0] && silent)
        train_node_worker_lost(c, i, why);
    close_slot(c, i);
}

void train_drop_slot(edt_coordinator *c, uint32_t i, const char *why)
{
    drop_slot(c, i, why, 0);
}

void train_drop_silent_slot(edt_coordinator *c, uint32_t i, const char *why)
{
    drop_slot(c, i, why, 1);
}

void train_send_exit(edt_coordinator *c, uint32_t i, const char *reason, int code)
{
    edt_slot *s = &c->m.slots[i];
    msg m = {.kind = MSG_EXIT, .u.exit = {.reason = reason, .code = code}};
    /* A worker that cannot hear it is reaped when its process ends. */
    if (s->fd >= 0)
        loom_err_free(train_slot_send(c, i, &m, NULL, 0));
    s->state = SLOT_LEAVING;
    s->started_ms = time_mono_ms();
}

/* ---- workers: start, hello, reap --------------------------------------------- */

/* The worker's environment: the job's fixed base (util/job_env.h), the
 * job's folders and ids, one BLAS thread, then the job's msd-env pairs.
 * `job_env` holds the job's strings. */
static char **worker_env(edt_coordinator *c, int32_t device, char job_env[7][PATH_MAX + 32])
{
    edt_job *j = &c->job;
    snprintf(job_env[0], PATH_MAX + 32, "DATA_DIR=%s", j->data_dir);
    snprintf(job_env[1], PATH_MAX + 32, "RESULT_DIR=%s", j->result_dir);
    snprintf(job_env[2], PATH_MAX + 32, "LOG_DIR=%s/log", j->result_dir);
    snprintf(job_env[3], PATH_MAX + 32, "DLI_EXECID=%s", j->exec_id);
    snprintf(job_env[5], PATH_MAX + 32, "TRAINING_ID=%s", j->exec_id); /* WMLA's name for it */
    /* A GPU worker sees its own device only; a CPU worker none. */
    if (train_is_gpu_job(c) && device >= 0)
        snprintf(job_env[4], PATH_MAX + 32, "CUDA_VISIBLE_DEVICES=%d", device);
    else
        snprintf(job_env[4], PATH_MAX + 32, "CUDA_VISIBLE_DEVICES=");
    /* One BLAS thread per worker: a worker per core, and two pools on two
     * cores fight (a job may set its own). */
    char *job[] = {job_env[0], job_env[1], job_env[2], job_env[3], job_env[4], job_env[5],
                   "OPENBLAS_NUM_THREADS=1", NULL};
    /* The exec's secret last, so no msd-env pair replaces it. */
    train_secret_env(c->m.secret, job_env[6], PATH_MAX + 32);
    char *secret[] = {job_env[6], NULL};
    char *const *const layers[] = {job, j->msd_env, secret};
    return job_env_build(j->result_dir, layers, 3);
}

/* Starts a worker in `slot` on `device` (-1: none yet, CPU only). */
static int spawn_worker(edt_coordinator *c, uint32_t slot, int32_t device)
{
    edt_job *j = &c->job;
    char log_dir[PATH_MAX + 32], rel[32], out[48], errp[48];
    snprintf(log_dir, sizeof log_dir, "%s/log/worker-%u", j->result_dir, slot);
    /* The exec folder is the job's: its worker's folder and logs are made
     * and opened beneath it (util/user_tree), the logs handed over open. */
    snprintf(rel, sizeof rel, "log/worker-%u", slot);
    snprintf(out, sizeof out, "%s/stdout", rel);
    snprintf(errp, sizeof errp, "%s/stderr", rel);
    int out_fd = -1, err_fd = -1;
    loom_error *opened = utree_mkdirs_in(j->result_dir, rel, 0755);
    if (!opened)
        opened = utree_open_append_in(j->result_dir, out, 0644, &out_fd);
    if (!opened)
        opened = utree_open_append_in(j->result_dir, errp, 0644, &err_fd);
    if (opened) {
        train_driver_say(c, "cannot start worker %u: %s", slot, loom_err_message(opened));
        loom_err_free(opened);
        if (out_fd >= 0)
            close(out_fd);
        return -1;
    }
    plugin_marker_clear(j->result_dir, rel);
    char slot_s[16], seed_s[32], threads_s[16], every_s[16], epochs_s[16], batch_s[16],
        effective_s[16];
    snprintf(slot_s, sizeof slot_s, "%u", slot);
    snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)j->settings.seed);
    snprintf(threads_s, sizeof threads_s, "%u", j->settings.dataloader_threads);
    snprintf(every_s, sizeof every_s, "%u", j->settings.log_every);
    snprintf(epochs_s, sizeof epochs_s, "%u", j->settings.epochs);
    snprintf(batch_s, sizeof batch_s, "%u", j->settings.batch_size);
    snprintf(effective_s, sizeof effective_s, "%u", j->settings.effective_batch_size);
    /* On a Slurm node the host's segment is out of reach: the collectives
     * go over TCP (comm.h's net back end). */
    char *argv[] = {j->loom_binary, "worker", "--control", c->m.ctl_name,
                    c->m.net ? "--collectives" : "--shm", c->m.net ? "net" : c->m.shm_name,
                    "--framework", j->framework_path, "--spec", j->spec_path,
                    "--code-dir", j->code_dir, "--data-dir", j->data_dir, "--log-dir", log_dir,
                    "--exec-id", j->exec_id, "--slot", slot_s, "--seed", seed_s,
                    "--threads", threads_s, "--log-every", every_s, "--epochs", epochs_s,
                    "--batch-size", batch_s, "--effective-batch-size", effective_s,
                    "--overlap-reduce", j->settings.overlap_reduce ? "1" : "0",
                    "--in-place-reduce", j->settings.in_place_reduce ? "1" : "0",
                    "--loggers", c->loggers_for_workers,
                    "--device", train_is_gpu_job(c) ? "cuda" : "cpu", NULL};
    char job_env[7][PATH_MAX + 32];
    char **envp = worker_env(c, device, job_env);
    sodium_memzero(job_env[6], sizeof job_env[6]);
    proc_group group = PROC_GROUP_NONE;
    char kind[96];
    snprintf(kind, sizeof kind, "worker-%s-%u", j->exec_id, slot);
    spawn_spec spec = {.argv = argv, .envp = envp, .cwd = j->code_dir, .stdout_fd = out_fd,
                       .stderr_fd = err_fd, .pgid = -1, .group = &group,
                       .max_file_bytes = j->worker_max_file_bytes};
    proc_group_limits bounds = {.max_procs = j->worker_max_procs,
                                .max_memory_bytes = j->worker_max_memory_bytes};
    /* The worker runs confined: it reads its adapter and the loggers it
     * loads, writes its exec folder and the collective's segment. */
    char err[512] = "", shm_file[160];
    job_sandbox_held held = {.env_fd = -1};
    snprintf(shm_file, sizeof shm_file, "/dev/shm%s", c->m.shm_name);
    /* (on a Slurm node there is no segment to write) */
    const char *reads[] = {j->framework_path, NULL},
               *writes[] = {c->m.net ? NULL : shm_file, NULL};
    job_sandbox_job box = {.user = j->user, .user_id = j->user_id, .exec_dir = j->result_dir,
                           .data_dir = j->data_dir,
                           .read = reads, .write = writes, .read_json = c->loggers_for_workers};
    char node[64] = "";
    pid_t pid = -1;
    if (!envp)
        snprintf(err, sizeof err, "out of memory");
    else
        loom_err_take(proc_group_create(&group, kind, bounds.max_procs ? &bounds : NULL), err,
                      sizeof err);
    if (!err[0] && c->m.net) /* srun, which starts it on the device's node */
        loom_err_take(train_spawn_on_node(c, slot, device, argv, envp, &box, &spec, &pid, node,
                                          sizeof node), err, sizeof err);
    else if (!err[0] &&
             loom_err_take(job_sandbox_confine_spec(&box, &spec, &held), err, sizeof err) == LOOM_OK)
        loom_err_take(spawn_process(&spec, &pid), err, sizeof err);
    if (err[0])
        pid = -1;
    job_sandbox_release(&held);
    for (char **v = envp; v && *v; v++)
        if (!strncmp(*v, TRAIN_SECRET_ENV "=", sizeof TRAIN_SECRET_ENV))
            sodium_memzero(*v, strlen(*v));
    job_env_free(envp);
    close(out_fd);
    close(err_fd);
    if (pid < 0) {
        proc_group_destroy(&group);
        train_driver_say(c, "cannot start worker %u: %s", slot, err);
        return -1;
    }
    edt_slot *s = &c->m.slots[slot];
    pthread_mutex_lock(&c->beats.lock); /* a free slot: no link to beat */
    memset(s, 0, sizeof *s);
    s->fd = -1;
    pthread_mutex_unlock(&c->beats.lock);
    s->pid = pid;
    s->group = group;
    s->device = device;
    snprintf(s->node, sizeof s->node, "%s", node);
    s->state = SLOT_STARTING;
    s->started_ms = time_mono_ms();
    train_publish_held(c);
    return 0;
}

/* The last line a worker wrote to its stderr: why it could not start. */
static void last_stderr_line(edt_coordinator *c, uint32_t slot, char *out, size_t outlen)
{
    char rel[48];
    snprintf(rel, sizeof rel, "log/worker-%u/stderr", slot);
    char *text = NULL;
    if (loom_err_take(utree_read_file_in(c->job.result_dir, rel, 1u << 20, &text, NULL), NULL,
                      0) != LOOM_OK)
        return;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        text[--n] = 0;
    char *line = strrchr(text, '\n');
    line = line ? line + 1 : text;
    /* Drop the log prefix ("time level source: ") when there is one. */
    char *colon = strstr(line, "Z ");
    if (colon && (colon = strstr(colon, ": ")))
        line = colon + 2;
    if (*line)
        snprintf(out, outlen, "worker %u: %s", slot, line);
    free(text);
}

int train_reap(edt_coordinator *c)
{
    int lost = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (s->state == SLOT_FREE || s->pid <= 0)
            continue;
        int status;
        pid_t got = waitpid(s->pid, &status, WNOHANG);
        if (got != s->pid)
            continue;
        if (s->state == SLOT_STARTING && !c->m.startup_error[0])
            last_stderr_line(c, i, c->m.startup_error, sizeof c->m.startup_error);
        if (s->node[0])
            train_node_worker_exited(c, i, status);
        if (s->state != SLOT_LEAVING) {
            char how[96], cause[256];
            describe_exit(status, i, how, sizeof how);
            note_death(c, i, how, cause, sizeof cause);
            train_driver_say(c, "worker %u %s", i, cause);
            lost += s->state == SLOT_MEMBER;
        }
        s->pid = 0;
        close_slot(c, i);
        if (c->job.device_released)
            c->job.device_released(c->job.ctx);
    }
    return lost;
}

/* The control socket is abstract, so any local process can connect: only
 * a worker this coordinator started is heard. The kernel says who is at
 * the other end (SO_PEERCRED): its uid must be the workers' (the exec's
 * account), and its pid one of the starting workers' (`loom confine`
 * execs the worker in place, keeping the pid), so neither another user
 * nor another exec of the same user gets in; they are refused before a
 * byte is read, so none can hold the coordinator up either. */
static loom_error *check_peer(const edt_coordinator *c, int fd, pid_t *pid)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return loom_err(LOOM_E_INTERNAL, "cannot tell who connected: %s", strerror(errno));
    if (cred.uid != c->m.worker_uid)
        return loom_err(LOOM_E_FORBIDDEN, "from uid %u (pid %d): the exec's workers run as uid %u",
                        (unsigned)cred.uid, (int)cred.pid, (unsigned)c->m.worker_uid);
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_STARTING && c->m.slots[i].pid == cred.pid) {
            *pid = cred.pid;
            return NULL;
        }
    return loom_err(LOOM_E_FORBIDDEN, "from pid %d, none of the exec's starting workers",
                    (int)cred.pid);
}

/* One new connection, up to its hello: on the Unix link its peer's
 * credentials first (check_peer), then on either link the answer to a
 * fresh nonce (the exec's secret, protocol_auth.c) within
 * TRAIN_AUTH_TIMEOUT_MS, and only then a message. The slot it is for in
 * *slot. */
static loom_error *admit(edt_coordinator *c, int fd, msg *hello, uint32_t *slot)
{
    pid_t peer = 0;
    uint8_t nonce[TRAIN_NONCE_BYTES];
    loom_error *e = c->m.tcp ? NULL : check_peer(c, fd, &peer);
    if (!e)
        e = train_auth_challenge(fd, nonce);
    if (!e)
        e = train_auth_verify(fd, c->m.secret, nonce, time_mono_ms() + TRAIN_AUTH_TIMEOUT_MS, slot);
    if (!e && (*slot >= c->m.nslots || c->m.slots[*slot].state != SLOT_STARTING))
        e = loom_err(LOOM_E_CONFLICT, "a hello from slot %u, which started no worker", *slot);
    if (!e)
        e = train_msg_recv(fd, time_mono_ms() + 5000, hello);
    if (!e && hello->kind != MSG_HELLO)
        e = loom_err(LOOM_E_INVALID, "a %s message where a hello was due",
                     train_msg_kind_name(hello->kind));
    if (!e && hello->u.hello.slot != *slot)
        e = loom_err(LOOM_E_FORBIDDEN, "a hello for slot %u on a connection proven for slot %u",
                     hello->u.hello.slot, *slot);
    if (!e && !c->m.tcp && c->m.slots[*slot].pid != peer)
        e = loom_err(LOOM_E_FORBIDDEN, "a hello for slot %u from pid %d, not its worker", *slot,
                     (int)peer);
    return e;
}

/* Connections waiting are taken for at most this long per call, so that a
 * stream of them cannot keep the coordinator from its workers. */
#define ACCEPT_BUDGET_MS 250

void train_accept_hellos(edt_coordinator *c, int wait_ms)
{
    struct pollfd p = {.fd = c->m.listen_fd, .events = POLLIN};
    int64_t until = time_mono_ms() + wait_ms + ACCEPT_BUDGET_MS;
    while (time_mono_ms() < until && poll(&p, 1, wait_ms) > 0) {
        wait_ms = 0;
        struct sockaddr_storage from = {0};
        socklen_t from_len = sizeof from;
        int fd = accept4(c->m.listen_fd, (struct sockaddr *)&from, &from_len, SOCK_CLOEXEC);
        if (fd < 0)
            break;
        train_link_ready(fd);
        /* TLS: from here on the link's descriptor (the handshake goes on
         * in its thread; admit's nonce waits in the link meanwhile) */
        loom_error *e = c->m.tls ? train_tls_wrap(fd, TRAIN_TLS_COORDINATOR, c->m.secret, &fd) : NULL;
        if (e) {
            train_driver_say(c, "refused a control connection: %s", loom_err_message(e));
            loom_err_free(e);
            continue;
        }
        if (c->m.tls)
            train_link_ready(fd);
        msg hello = {0};
        uint32_t i = 0;
        e = admit(c, fd, &hello, &i);
        if (e) {
            train_driver_say(c, "refused a control connection: %s", loom_err_message(e));
            loom_err_free(e);
            train_msg_free(&hello);
            close(fd);
            continue;
        }
        msg_hello h = hello.u.hello;
        train_msg_free(&hello);
        if (c->m.net && (e = train_net_peer_of(c, i, &from, h.net_port))) {
            train_driver_say(c, "refused worker %u: %s", i, loom_err_message(e));
            loom_err_free(e);
            close(fd);
            continue;
        }
        c->m.slots[i].state = SLOT_READY;
        train_slot_link(c, i, fd);
        if (c->m.params == 0) {
            c->m.params = h.params;
            c->m.ntrain = h.ntrain;
            c->m.ntest = h.ntest;
        } else if (h.params != c->m.params || h.ntrain != c->m.ntrain) {
            train_drop_slot(c, i, "its model or data set differs from the others'");
        }
    }
}

/* Times the workers of a job on Slurm nodes are started again when none
 * started: Slurm may refuse a launch for a while (a node coming back after
 * it was cut off, its old jobs still completing there). */
#define NODE_LAUNCH_RETRIES 2

loom_error *train_wait_for_first_workers(edt_coordinator *c)
{
    int64_t deadline = time_mono_ms() + STARTUP_TIMEOUT_MS;
    for (int relaunched = 0;;) {
        train_accept_hellos(c, 100);
        train_reap(c);
        train_keep_alive(c);
        uint32_t starting = train_count_in(c, SLOT_STARTING), ready = train_count_in(c, SLOT_READY);
        if (starting == 0 && ready > 0)
            return NULL;
        if (starting == 0 && ready == 0 && c->m.net && relaunched++ < NODE_LAUNCH_RETRIES) {
            train_driver_say(c, "no worker started on the nodes (%s): starting them again",
                             c->m.startup_error[0] ? c->m.startup_error : "see log/worker-0/stderr");
            c->m.startup_error[0] = 0;
            int32_t granted[MAX_SLOTS];
            uint32_t ngranted, target = train_current_grant(c, granted, &ngranted);
            train_start_workers(c, target, granted, ngranted);
            continue;
        }
        if (starting == 0 && ready == 0) {
            if (c->m.startup_error[0])
                return loom_err(LOOM_E_UNAVAILABLE, "no worker started: %s", c->m.startup_error);
            return loom_err(LOOM_E_UNAVAILABLE, "no worker started (see log/worker-0/stderr)");
        }
        if (time_mono_ms() > deadline) {
            if (ready > 0)
                return NULL;
            return loom_err(LOOM_E_DEADLINE, "no worker was ready within %d s",
                            STARTUP_TIMEOUT_MS / 1000);
        }
        if (train_stop_asked(c))
            return loom_err(LOOM_E_UNAVAILABLE, "stopped by request");
    }
}

void train_finish_workers(edt_coordinator *c, const char *reason)
{
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER || c->m.slots[i].state == SLOT_READY)
            train_send_exit(c, i, reason, 0);
    int64_t deadline = time_mono_ms() + EXIT_GRACE_MS;
    for (;;) {
        train_reap(c);
        int alive = 0;
        for (uint32_t i = 0; i < c->m.nslots; i++)
            alive += c->m.slots[i].pid > 0;
        if (!alive)
            break;
        if (time_mono_ms() > deadline) {
            for (uint32_t i = 0; i < c->m.nslots; i++)
                if (c->m.slots[i].pid > 0)
                    kill(c->m.slots[i].pid, SIGKILL);
        }
        usleep(20000);
    }
}

/* ---- membership --------------------------------------------------------- */

/* Whether a worker stays on the device it started on: on a GPU, or on a
 * Slurm node (it runs there). Otherwise a CPU worker is counted against a
 * granted slot only while it is a member. */
static int pinned(const edt_coordinator *c)
{
    return train_is_gpu_job(c) || c->m.net;
}

/* A granted device no worker holds: a pinned worker holds its own while
 * it lives; elsewhere only members do (a warm spare holds none). -1 when
 * there is none. */
static int32_t free_device(edt_coordinator *c, const int32_t *granted, uint32_t ngranted)
{
    for (uint32_t k = 0; k < ngranted; k++) {
        int held = 0;
        for (uint32_t i = 0; i < c->m.nslots && !held; i++)
            held = c->m.slots[i].device == granted[k] &&
                   (pinned(c) ? is_live(c->m.slots[i].state)
                              : c->m.slots[i].state == SLOT_MEMBER);
        if (!held)
            return granted[k];
    }
    return -1;
}

/* A pinned worker starts only on a granted device no one holds. */
void train_start_workers(edt_coordinator *c, uint32_t want, const int32_t *granted, uint32_t ngranted)
{
    uint32_t have = train_count_in(c, SLOT_MEMBER) + train_count_in(c, SLOT_STARTING) + train_count_in(c, SLOT_READY);
    for (uint32_t i = 0; i < c->m.nslots && have < want; i++) {
        if (c->m.slots[i].state != SLOT_FREE)
            continue;
        int32_t device = pinned(c) ? free_device(c, granted, ngranted) : -1;
        if (pinned(c) && (ngranted || c->m.net) && device < 0)
            break;
        if (spawn_worker(c, i, device) == 0)
            have++;
    }
}

/* Members leave at this step boundary. */
uint32_t train_release_revoked(edt_coordinator *c, const int32_t *granted, uint32_t ngranted)
{
    uint32_t left = 0;
    for (uint32_t i = 0; ngranted && i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (!is_live(s->state) || s->device < 0 || train_device_in(s->device, granted, ngranted))
            continue;
        left += s->state == SLOT_MEMBER;
        train_send_exit(c, i, "leaving: the scheduler gave its device to another job", 0);
    }
    return left;
}

void train_make_member(edt_coordinator *c, uint32_t i, const int32_t *granted, uint32_t ngranted)
{
    edt_slot *s = &c->m.slots[i];
    if (!pinned(c))
        s->device = free_device(c, granted, ngranted);
    s->state = SLOT_MEMBER;
    train_publish_held(c);
}

/* How GPU members form the next generation's communicator: when members
 * only left and the last round went well (every communicator is live), the
 * survivors shrink theirs, excluding the leavers' ranks; otherwise (anyone
 * joins, or a collective failed and aborted the communicators) they build a
 * new one from a fresh unique id. */
static loom_error *plan_gpu_generation(edt_coordinator *c, const uint32_t *list, uint32_t n,
                                       int force_new)
{
    c->m.nccl_shrink = comm_plan_shrink(c->m.prev, c->m.nprev, list, n, force_new,
                                        c->m.nccl_exclude, &c->m.nccl_nexclude);
    if (c->m.nccl_shrink)
        return NULL;
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    uint8_t id[COMM_NCCL_ID_BYTES];
    loom_error *e = comm_nccl_unique_id(id, sizeof id);
    if (e)
        return loom_err_wrap(e, "nccl");
    sodium_bin2hex(c->m.nccl_id_hex, sizeof c->m.nccl_id_hex, id, sizeof id);
    return NULL;
#else
    (void)list, (void)n;
    return loom_err(LOOM_E_UNSUPPORTED, "a GPU job in a loom built without CUDA");
#endif
}

/* Brings the members to the target at this boundary: revoked devices and
 * extra members leave, workers that said hello join. Returns whether the
 * membership changed. */
static int resize_members(edt_coordinator *c, uint32_t *members)
{
    int32_t granted[MAX_SLOTS];
    uint32_t ngranted;
    uint32_t target = train_current_grant(c, granted, &ngranted);
    int changed = train_release_revoked(c, granted, ngranted) > 0;
    *members = train_count_in(c, SLOT_MEMBER);
    /* On CPU, one warm spare beyond the target while the job may still
     * grow: it starts and loads its data while idle, so a grow only waits
     * for the next step boundary and the weights. A GPU holds no spare: it
     * would sit on a device the job was not granted. */
    uint32_t want = target < c->m.nslots && !pinned(c) ? target + 1 : target;
    train_start_workers(c, want, granted, ngranted);
    /* Shrink: the highest slots leave. */
    for (uint32_t i = c->m.nslots; i-- > 0 && *members > target;)
        if (c->m.slots[i].state == SLOT_MEMBER) {
            train_send_exit(c, i, "leaving: the job was resized", 0);
            (*members)--;
            changed = 1;
        }
    /* Grow: workers that said hello join at this boundary. */
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_READY && *members < target) {
            train_make_member(c, i, granted, ngranted);
            c->m.slots[i].has_state = 0;
            (*members)++;
            changed = 1;
            c->m.grew = 1;
        }
    return changed;
}

/* Forms a new generation of the members: publishes it and picks the rank
 * the others pull the state from. */
static loom_error *form_generation(edt_coordinator *c, int force_new, int *root)
{
    uint32_t list[MAX_SLOTS], n = 0;
    int root_slot = -1, anyone_fresh = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER) {
            if (c->m.slots[i].has_state && root_slot < 0)
                root_slot = (int)i;
            anyone_fresh |= !c->m.slots[i].has_state;
            list[n++] = i;
        }
    /* Nobody has the weights: at the start, the lowest slot's (loaded from
     * a checkpoint when resuming) become everyone's; after every holder
     * died, training rewinds to the coordinator's copy, which it loads. */
    if (root_slot < 0 && c->m.generation > 0) {
        loom_error *e = recovery_rewind(c);
        if (e)
            return e;
    }
    if (root_slot < 0) {
        root_slot = (int)list[0];
        c->m.slots[root_slot].has_state = 1;
        anyone_fresh = n > 1;
    }
    loom_error *e = train_is_gpu_job(c) ? plan_gpu_generation(c, list, n, force_new) : NULL;
    if (!e)
        e = comm_shm_publish(c->m.seg, list, n, &c->m.generation);
    if (!e && c->m.net)
        train_net_generation(c, list, n);
    if (e)
        return e;
    memcpy(c->m.prev, list, sizeof(uint32_t) * n);
    c->m.nprev = n;
    *root = -1;
    if (anyone_fresh || c->load_path[0])
        for (uint32_t r = 0; r < n; r++)
            if ((int)list[r] == root_slot)
                *root = (int)r;
    train_driver_say(c, "generation %u: %u worker(s)%s", c->m.generation, n,
               *root >= 0 ? ", pulling the weights from the others" : "");
    return NULL;
}

/* A new generation forms when the members change, or after a failed round,
 * since a failed collective leaves the old generation unusable. */
loom_error *train_plan_membership(edt_coordinator *c, int force_new, int *join, int *root)
{
    *join = 0;
    if (c->m.failing[0])
        return loom_err(LOOM_E_LIMIT, "%s", c->m.failing);
    /* Replacements that die as fast as they start would loop forever. */
    if (c->m.deaths_since_progress > 2 * c->m.nslots + 2)
        return loom_err(LOOM_E_LIMIT, "workers keep dying: %u lost without a step done",
                        c->m.deaths_since_progress);
    uint32_t members;
    int changed = resize_members(c, &members) || force_new;
    /* Checked before "unchanged": every member can die between two rounds
     * without the membership step itself changing anything. */
    if (members == 0)
        return loom_err(LOOM_E_UNAVAILABLE, "no worker left");
    if (!changed)
        return NULL;
    loom_error *e = form_generation(c, force_new, root);
    *join = e == NULL;
    return e;
}
