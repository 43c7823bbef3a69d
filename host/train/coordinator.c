/* train/coordinator.c - see coordinator.h.
 *
 * Rounds. Each round the coordinator sends every member a plan and waits for
 * every member's reply. A plan says, in order: commit (apply the step the
 * previous round reduced) or not; a generation to join and a root to pull
 * the state from; then one action: step, validate, checkpoint or finish. A
 * step's samples count as used only when every member reported its
 * all-reduce done; otherwise they go back to the epoch's pool and the next
 * plan says not to apply. So a worker dying anywhere costs one step's work,
 * never a sample twice or not at all. */
#include "train/coordinator.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm.h"
#include "util/error.h"
#include "train/checkpoint.h"
#include "train/logger_set.h"
#include "train/protocol.h"
#include "train/sampler.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/spawn.h"

extern char **environ;

#define MAX_SLOTS EDT_MAX_WORKERS
#define STARTUP_TIMEOUT_MS 120000
#define EXIT_GRACE_MS 5000

typedef enum slot_state {
    SLOT_FREE = 0,
    SLOT_STARTING, /* process started, no hello yet */
    SLOT_READY,    /* said hello; not a member */
    SLOT_MEMBER,
    SLOT_LEAVING   /* told to exit; waiting for the process to end */
} slot_state;

typedef struct edt_slot {
    slot_state state;
    pid_t pid;
    int fd;
    int has_state; /* holds the current weights */
    int pull_failures;
    cJSON *reply;
    int64_t started_ms;
    int32_t device; /* the granted device it runs on (or, on CPU, is
                     * counted against); -1: none yet */
    /* ASYNC: the samples handed to this worker and the weights' version */
    uint64_t *inflight;
    size_t ninflight;
    uint64_t version;
} edt_slot;

struct edt_coordinator {
    edt_job job;
    pthread_t thread;
    int thread_started;

    pthread_mutex_t lock; /* guards the fields up to `snapshot` */
    uint32_t target;
    int32_t granted[MAX_SLOTS]; /* the devices the scheduler granted; */
    uint32_t ngranted;          /* 0: a bare worker count (target) */
    int stop_requested;
    int done;
    int64_t resize_requested_ms;
    cJSON *snapshot; /* edt_describe's answer */

    /* Owned by the thread. */
    comm_shm_segment *seg;
    char shm_name[96];
    char ctl_name[128];
    int listen_fd;
    edt_slot slots[MAX_SLOTS];
    uint32_t nslots;
    uint32_t generation;
    uint32_t prev_members[MAX_SLOTS]; /* the current generation's slots, */
    uint32_t nprev;                   /* in rank order (GPU: shrink) */
    char nccl_id_hex[2 * 128 + 1];    /* GPU: the generation's unique id */
    uint32_t nccl_exclude[MAX_SLOTS]; /* GPU: the ranks that left, */
    uint32_t nccl_nexclude;           /* when shrinking */
    int nccl_shrink;                  /* GPU: shrink instead of a new id */
    uint64_t params, ntrain, ntest;
    sampler smp;
    int sampler_ready;
    uint32_t epoch;
    uint64_t iteration;
    uint64_t steps_per_epoch;
    int commit_next;
    int pending_validate, pending_checkpoint;
    uint32_t round;
    char load_path[PATH_MAX]; /* checkpoint the root loads at the next join */
    int64_t epoch_started_ms;
    int epoch_clock_pending;
    double epoch_loss_sum, epoch_acc_sum;
    uint64_t epoch_loss_n;
    int have_acc;
    cJSON *epochs_done;  /* [{epoch, samples, duplicates, expected, seconds, ...}] */
    cJSON *val_list;     /* val_dict_list.json */
    cJSON *last_test;
    double last_rate;
    int64_t resize_latency_ms;
    int measuring_resize; /* 1: a grow was asked for; 3: its first step is planned */
    int grew;             /* this round's membership added workers */
    FILE *driver_out;
    char startup_error[600]; /* why a worker died before saying hello */
    uint32_t deaths_since_progress; /* workers lost since the last good round */
    logger_set *driver_loggers;
    char loggers_for_workers[8192];
};

/* ---- small helpers ------------------------------------------------------ */

static void driver_say(edt_coordinator *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void driver_say(edt_coordinator *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (c->driver_out) {
        fprintf(c->driver_out, "%s\n", line);
        fflush(c->driver_out);
    }
    log_info("exec %s: %s", c->job.exec_id, line);
}

static void set_state(edt_coordinator *c, const char *state, const char *message)
{
    if (c->job.on_state)
        c->job.on_state(c->job.ctx, c->job.exec_id, state, message);
}

static uint32_t count_in(edt_coordinator *c, slot_state st)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nslots; i++)
        n += c->slots[i].state == st;
    return n;
}

static void close_slot(edt_coordinator *c, uint32_t i)
{
    edt_slot *s = &c->slots[i];
    if (s->ninflight && c->sampler_ready)
        sampler_give_back(&c->smp, s->inflight, s->ninflight);
    free(s->inflight);
    if (s->fd >= 0)
        close(s->fd);
    cJSON_Delete(s->reply);
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->device = -1;
    s->state = SLOT_FREE;
    if (c->seg)
        comm_shm_mark_dead(c->seg, i);
}

/* "killed by signal 9", "exited with status 1 (see ...)". */
static void describe_exit(int status, uint32_t slot, char *out, size_t outlen)
{
    if (WIFSIGNALED(status))
        snprintf(out, outlen, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, outlen, "exited with status %d (see log/worker-%u/stderr)",
                 WEXITSTATUS(status), slot);
}

/* Forgets a worker that failed or hung, killing it if it still runs. */
static void drop_slot(edt_coordinator *c, uint32_t i, const char *why)
{
    edt_slot *s = &c->slots[i];
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
    driver_say(c, "worker %u %s: %s", i, how[0] ? how : "dropped", why);
    c->deaths_since_progress++;
    close_slot(c, i);
}

static int send_exit(edt_coordinator *c, uint32_t i, const char *reason, int code)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "do", "exit");
    cJSON_AddStringToObject(m, "reason", reason);
    cJSON_AddNumberToObject(m, "code", code);
    int rc = c->slots[i].fd >= 0 ? msg_send(c->slots[i].fd, m) : -1;
    cJSON_Delete(m);
    c->slots[i].state = SLOT_LEAVING;
    c->slots[i].started_ms = time_mono_ms();
    return rc;
}

/* ---- workers: start, hello, reap ---------------------------------------- */

static int is_gpu_job(const edt_coordinator *c)
{
    return c->job.device_kind == LOOM_DEVICE_CUDA;
}

/* Starts a worker in `slot` on `device` (-1: none yet, CPU only). */
static int spawn_worker(edt_coordinator *c, uint32_t slot, int32_t device)
{
    edt_job *j = &c->job;
    char log_dir[PATH_MAX + 32], out[PATH_MAX + 48], errp[PATH_MAX + 48];
    snprintf(log_dir, sizeof log_dir, "%s/log/worker-%u", j->result_dir, slot);
    fs_mkdir_p(log_dir);
    snprintf(out, sizeof out, "%s/stdout", log_dir);
    snprintf(errp, sizeof errp, "%s/stderr", log_dir);
    char slot_s[16], seed_s[32], threads_s[16], every_s[16];
    snprintf(slot_s, sizeof slot_s, "%u", slot);
    snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)j->settings.seed);
    snprintf(threads_s, sizeof threads_s, "%u", j->settings.dataloader_threads);
    snprintf(every_s, sizeof every_s, "%u", j->settings.log_every);
    char *argv[] = {j->loom_binary, "worker", "--control", c->ctl_name, "--shm", c->shm_name,
                    "--framework", j->framework_path, "--spec", j->spec_path,
                    "--code-dir", j->code_dir, "--data-dir", j->data_dir, "--log-dir", log_dir,
                    "--exec-id", j->exec_id, "--slot", slot_s, "--seed", seed_s,
                    "--threads", threads_s, "--log-every", every_s,
                    "--loggers", c->loggers_for_workers,
                    "--device", is_gpu_job(c) ? "cuda" : "cpu", NULL};
    /* The job's environment on top of the host's. */
    size_t n = 0, extra = 8;
    for (char **e = environ; *e; e++)
        n++;
    for (char **e = j->msd_env; e && *e; e++)
        extra++;
    char **envp = calloc(n + extra + 1, sizeof *envp);
    char job_env[5][PATH_MAX + 32];
    size_t k = 0;
    int has_blas = 0;
    for (char **e = environ; *e; e++) {
        if (!strncmp(*e, "OPENBLAS_NUM_THREADS=", 21))
            has_blas = 1;
        if (strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21))
            envp[k++] = *e;
    }
    snprintf(job_env[0], sizeof job_env[0], "DATA_DIR=%s", j->data_dir);
    snprintf(job_env[1], sizeof job_env[1], "RESULT_DIR=%s", j->result_dir);
    snprintf(job_env[2], sizeof job_env[2], "LOG_DIR=%s/log", j->result_dir);
    snprintf(job_env[3], sizeof job_env[3], "DLI_EXECID=%s", j->exec_id);
    /* A GPU worker sees its own device only; a CPU worker none. */
    if (is_gpu_job(c) && device >= 0)
        snprintf(job_env[4], sizeof job_env[4], "CUDA_VISIBLE_DEVICES=%d", device);
    else
        snprintf(job_env[4], sizeof job_env[4], "CUDA_VISIBLE_DEVICES=");
    for (int i = 0; i < 5; i++)
        envp[k++] = job_env[i];
    /* One BLAS thread per worker: a worker per core, and two pools on two
     * cores fight. */
    if (!has_blas)
        envp[k++] = "OPENBLAS_NUM_THREADS=1";
    for (char **e = j->msd_env; e && *e; e++)
        envp[k++] = *e;
    envp[k] = NULL;
    spawn_spec spec = {.argv = argv, .envp = envp, .cwd = j->code_dir, .stdout_path = out,
                       .stderr_path = errp, .pgid = -1};
    pid_t pid;
    loom_error *err = spawn_process(&spec, &pid);
    free(envp);
    if (err) {
        driver_say(c, "cannot start worker %u: %s", slot, loom_err_message(err));
        loom_err_free(err);
        return -1;
    }
    edt_slot *s = &c->slots[slot];
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->pid = pid;
    s->device = device;
    s->state = SLOT_STARTING;
    s->started_ms = time_mono_ms();
    return 0;
}

/* The last line a worker wrote to its stderr: why it could not start. */
static void last_stderr_line(edt_coordinator *c, uint32_t slot, char *out, size_t outlen)
{
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/log/worker-%u/stderr", c->job.result_dir, slot);
    char *text = fs_read_file(path, 1u << 20, NULL);
    if (!text)
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

/* Reaps workers that ended. Returns how many members were lost. */
static int reap(edt_coordinator *c)
{
    int lost = 0;
    for (uint32_t i = 0; i < c->nslots; i++) {
        edt_slot *s = &c->slots[i];
        if (s->state == SLOT_FREE || s->pid <= 0)
            continue;
        int status;
        pid_t got = waitpid(s->pid, &status, WNOHANG);
        if (got != s->pid)
            continue;
        if (s->state == SLOT_STARTING && !c->startup_error[0])
            last_stderr_line(c, i, c->startup_error, sizeof c->startup_error);
        if (s->state != SLOT_LEAVING) {
            char why[96];
            describe_exit(status, i, why, sizeof why);
            driver_say(c, "worker %u %s", i, why);
            c->deaths_since_progress++;
            lost += s->state == SLOT_MEMBER;
        }
        s->pid = 0;
        close_slot(c, i);
    }
    return lost;
}

/* Takes new connections and their hellos (waiting at most wait_ms). */
static void accept_hellos(edt_coordinator *c, int wait_ms)
{
    struct pollfd p = {.fd = c->listen_fd, .events = POLLIN};
    while (poll(&p, 1, wait_ms) > 0) {
        wait_ms = 0;
        int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            break;
        char err[128];
        cJSON *hello = msg_recv(fd, time_mono_ms() + 5000, err, sizeof err);
        const cJSON *slot = cJSON_GetObjectItemCaseSensitive(hello, "slot");
        uint32_t i = cJSON_IsNumber(slot) ? (uint32_t)slot->valuedouble : MAX_SLOTS;
        if (!hello || i >= c->nslots || c->slots[i].state != SLOT_STARTING) {
            cJSON_Delete(hello);
            close(fd);
            continue;
        }
        edt_slot *s = &c->slots[i];
        s->fd = fd;
        s->state = SLOT_READY;
        uint64_t params = (uint64_t)cJSON_GetObjectItemCaseSensitive(hello, "params")->valuedouble;
        uint64_t ntrain = (uint64_t)cJSON_GetObjectItemCaseSensitive(hello, "train")->valuedouble;
        uint64_t ntest = (uint64_t)cJSON_GetObjectItemCaseSensitive(hello, "test")->valuedouble;
        cJSON_Delete(hello);
        if (c->params == 0) {
            c->params = params;
            c->ntrain = ntrain;
            c->ntest = ntest;
        } else if (params != c->params || ntrain != c->ntrain) {
            drop_slot(c, i, "its model or data set differs from the others'");
            continue;
        }

    }
}

/* ---- membership --------------------------------------------------------- */

static uint32_t current_target(edt_coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    uint32_t t = c->target;
    pthread_mutex_unlock(&c->lock);
    return t;
}

/* Whether edt_stop was called. */
static int stop_asked(edt_coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    int stop = c->stop_requested;
    pthread_mutex_unlock(&c->lock);
    return stop;
}

/* The target and, when the scheduler named them, the granted devices. */
static uint32_t current_grant(edt_coordinator *c, int32_t *granted, uint32_t *ngranted)
{
    pthread_mutex_lock(&c->lock);
    uint32_t t = c->target;
    *ngranted = c->ngranted;
    memcpy(granted, c->granted, sizeof(int32_t) * c->ngranted);
    pthread_mutex_unlock(&c->lock);
    return t;
}

static int is_live(slot_state st)
{
    return st == SLOT_STARTING || st == SLOT_READY || st == SLOT_MEMBER;
}

static int device_in(int32_t device, const int32_t *list, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (list[k] == device)
            return 1;
    return 0;
}

/* A granted device no worker holds: on a GPU every live worker holds one,
 * on CPU only members do (a warm spare holds none). -1 when there is none. */
static int32_t free_device(edt_coordinator *c, const int32_t *granted, uint32_t ngranted)
{
    for (uint32_t k = 0; k < ngranted; k++) {
        int held = 0;
        for (uint32_t i = 0; i < c->nslots && !held; i++)
            held = c->slots[i].device == granted[k] &&
                   (is_gpu_job(c) ? is_live(c->slots[i].state) : c->slots[i].state == SLOT_MEMBER);
        if (!held)
            return granted[k];
    }
    return -1;
}

/* Starts workers until members + starting ones reach `want`. A GPU worker
 * starts only on a granted device no one holds. */
static void start_workers(edt_coordinator *c, uint32_t want, const int32_t *granted,
                          uint32_t ngranted)
{
    uint32_t have = count_in(c, SLOT_MEMBER) + count_in(c, SLOT_STARTING) + count_in(c, SLOT_READY);
    for (uint32_t i = 0; i < c->nslots && have < want; i++) {
        if (c->slots[i].state != SLOT_FREE)
            continue;
        int32_t device = is_gpu_job(c) ? free_device(c, granted, ngranted) : -1;
        if (is_gpu_job(c) && ngranted && device < 0)
            break;
        if (spawn_worker(c, i, device) == 0)
            have++;
    }
}

/* Workers on devices the scheduler took back leave (members at this step
 * boundary). Returns how many members left. */
static uint32_t release_revoked(edt_coordinator *c, const int32_t *granted, uint32_t ngranted)
{
    uint32_t left = 0;
    for (uint32_t i = 0; ngranted && i < c->nslots; i++) {
        edt_slot *s = &c->slots[i];
        if (!is_live(s->state) || s->device < 0 || device_in(s->device, granted, ngranted))
            continue;
        left += s->state == SLOT_MEMBER;
        send_exit(c, i, "leaving: the scheduler gave its device to another job", 0);
    }
    return left;
}

/* A worker becoming a member; on CPU it now counts against a granted slot. */
static void make_member(edt_coordinator *c, uint32_t i, const int32_t *granted, uint32_t ngranted)
{
    edt_slot *s = &c->slots[i];
    if (!is_gpu_job(c))
        s->device = free_device(c, granted, ngranted);
    s->state = SLOT_MEMBER;
}

/* How GPU members form the next generation's communicator: when members
 * only left and the last round went well (every communicator is live), the
 * survivors shrink theirs, excluding the leavers' ranks; otherwise (anyone
 * joins, or a collective failed and aborted the communicators) they build a
 * new one from a fresh unique id. */
static int plan_gpu_generation(edt_coordinator *c, const uint32_t *list, uint32_t n, int force_new,
                               char *err, size_t errlen)
{
    c->nccl_shrink = comm_plan_shrink(c->prev_members, c->nprev, list, n, force_new,
                                      c->nccl_exclude, &c->nccl_nexclude);
    if (c->nccl_shrink)
        return 0;
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    uint8_t id[COMM_NCCL_ID_BYTES];
    loom_error *e = comm_nccl_unique_id(id, sizeof id);
    if (e) {
        snprintf(err, errlen, "nccl: %s", loom_err_message(e));
        loom_err_free(e);
        return -1;
    }
    sodium_bin2hex(c->nccl_id_hex, sizeof c->nccl_id_hex, id, sizeof id);
    return 0;
#else
    snprintf(err, errlen, "a GPU job in a loom built without CUDA");
    return -1;
#endif
}

/* Starts workers up to the target, tells the extra ones to leave, and forms
 * a new generation when the members change (or after a failed round, since
 * a failed collective leaves the old generation unusable). Returns 1 when
 * a join is due, with the root rank in *root (-1: no state to pull). */
static int plan_membership(edt_coordinator *c, int force_new, int *root, char *err, size_t errlen)
{
    int32_t granted[MAX_SLOTS];
    uint32_t ngranted;
    uint32_t target = current_grant(c, granted, &ngranted);
    /* Replacements that die as fast as they start would loop forever. */
    if (c->deaths_since_progress > 2 * c->nslots + 2) {
        snprintf(err, errlen, "workers keep dying: %u lost without a step done", c->deaths_since_progress);
        return -2;
    }
    int changed = force_new;
    uint32_t left = release_revoked(c, granted, ngranted);
    changed |= left > 0;
    uint32_t members = count_in(c, SLOT_MEMBER);
    /* On CPU, one warm spare beyond the target while the job may still
     * grow: it starts and loads its data while idle, so a grow only waits
     * for the next step boundary and the weights. A GPU holds no spare: it
     * would sit on a device the job was not granted. */
    uint32_t want = target < c->nslots && !is_gpu_job(c) ? target + 1 : target;
    start_workers(c, want, granted, ngranted);
    /* Shrink: the highest slots leave. */
    for (uint32_t i = c->nslots; i-- > 0 && members > target;)
        if (c->slots[i].state == SLOT_MEMBER) {
            send_exit(c, i, "leaving: the job was resized", 0);
            members--;
            changed = 1;
        }
    /* Grow: workers that said hello join at this boundary. */
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_READY && members < target) {
            make_member(c, i, granted, ngranted);
            c->slots[i].has_state = 0;
            members++;
            changed = 1;
            c->grew = 1;
        }
    if (!changed)
        return 0;
    if (members == 0) {
        snprintf(err, errlen, "no worker left");
        return -1;
    }
    uint32_t list[MAX_SLOTS], n = 0;
    int root_slot = -1, anyone_fresh = 0;
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_MEMBER) {
            if (c->slots[i].has_state && root_slot < 0)
                root_slot = (int)i;
            anyone_fresh |= !c->slots[i].has_state;
            list[n++] = i;
        }
    /* Nobody has the weights yet (start, or every holder died): the lowest
     * slot's (loaded from a checkpoint when resuming) become everyone's. */
    if (root_slot < 0) {
        root_slot = (int)list[0];
        c->slots[root_slot].has_state = 1;
        anyone_fresh = n > 1;
    }
    if (is_gpu_job(c) && plan_gpu_generation(c, list, n, force_new, err, errlen) != 0)
        return -1;
    loom_error *e = comm_shm_publish(c->seg, list, n, &c->generation);
    if (e) {
        snprintf(err, errlen, "%s", loom_err_message(e));
        loom_err_free(e);
        return -1;
    }
    memcpy(c->prev_members, list, sizeof(uint32_t) * n);
    c->nprev = n;
    *root = -1;
    if (anyone_fresh || c->load_path[0])
        for (uint32_t r = 0; r < n; r++)
            if ((int)list[r] == root_slot)
                *root = (int)r;
    driver_say(c, "generation %u: %u worker(s)%s", c->generation, n,
               *root >= 0 ? ", pulling the weights from the others" : "");
    return 1;
}

/* ---- a round ------------------------------------------------------------ */

typedef struct round_plan {
    const char *action; /* step validate checkpoint finish */
    int join;
    int root;
    uint64_t *taken; /* step: the samples */
    size_t ntaken;
    char path[PATH_MAX];
} round_plan;

/* A micro-batch's sample indices as a JSON array, written as raw text:
 * cJSON prints each number with printf's %g and reads it back to check,
 * which made formatting indices most of the coordinator's work per step. */
static cJSON *index_array(const uint64_t *idx, size_t n)
{
    char *text = malloc(n * 21 + 3), *at = text;
    if (!text) { /* cJSON's own numbers: slower, but every index is there */
        cJSON *array = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(array, cJSON_CreateNumber((double)idx[i]));
        return array;
    }
    *at++ = '[';
    for (size_t i = 0; i < n; i++) {
        char digits[20];
        int k = 0;
        uint64_t v = idx[i];
        do
            digits[k++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        if (i)
            *at++ = ',';
        while (k)
            *at++ = digits[--k];
    }
    *at++ = ']';
    *at = 0;
    cJSON *raw = cJSON_CreateRaw(text);
    free(text);
    return raw;
}

/* Sends each member its plan. Micro-batches are at most batch_size; each
 * carries the scale that makes the averaged gradient the mean over the
 * step's samples: count * world / step_samples. */
static void send_plans(edt_coordinator *c, const round_plan *p)
{
    uint32_t world = count_in(c, SLOT_MEMBER);
    uint32_t rank = 0;
    uint32_t join_ms = p->root >= 0 ? c->job.settings.pull_timeout_s * 1000 : c->job.settings.step_timeout_ms;
    c->round++;
    size_t offset = 0;
    for (uint32_t i = 0; i < c->nslots; i++) {
        edt_slot *s = &c->slots[i];
        if (s->state != SLOT_MEMBER)
            continue;
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "t", "plan");
        cJSON_AddNumberToObject(m, "round", c->round);
        cJSON_AddBoolToObject(m, "commit", c->commit_next);
        cJSON_AddNumberToObject(m, "epoch", c->epoch);
        cJSON_AddNumberToObject(m, "epochs", c->job.settings.epochs);
        cJSON_AddNumberToObject(m, "iteration", (double)c->iteration);
        cJSON_AddNumberToObject(m, "steps_per_epoch", (double)c->steps_per_epoch);
        cJSON_AddNumberToObject(m, "workers", world);
        cJSON_AddNumberToObject(m, "timeout_ms", c->job.settings.step_timeout_ms);
        if (p->join) {
            cJSON *j = cJSON_AddObjectToObject(m, "join");
            cJSON_AddNumberToObject(j, "gen", c->generation);
            cJSON_AddNumberToObject(j, "root", p->root);
            cJSON_AddNumberToObject(j, "timeout_ms", join_ms);
            if (is_gpu_job(c) && c->nccl_shrink) {
                cJSON *ex = cJSON_AddArrayToObject(j, "exclude");
                for (uint32_t k = 0; k < c->nccl_nexclude; k++)
                    cJSON_AddItemToArray(ex, cJSON_CreateNumber(c->nccl_exclude[k]));
            } else if (is_gpu_job(c)) {
                cJSON_AddStringToObject(j, "nccl_id", c->nccl_id_hex);
            }
            if (c->load_path[0] && p->root >= 0 && (int)rank == p->root)
                cJSON_AddStringToObject(m, "load", c->load_path);
        }
        cJSON_AddStringToObject(m, "do", p->action);
        if (!strcmp(p->action, "step")) {
            size_t share = p->ntaken / world + (rank < p->ntaken % world);
            cJSON *mbs = cJSON_AddArrayToObject(m, "mb");
            cJSON *scales = cJSON_AddArrayToObject(m, "scale");
            uint32_t b = c->job.settings.batch_size;
            for (size_t done = 0; done < share; done += b) {
                size_t n = share - done < b ? share - done : b;
                cJSON_AddItemToArray(mbs, index_array(p->taken + offset + done, n));
                cJSON_AddItemToArray(scales, cJSON_CreateNumber((double)n * world / (double)p->ntaken));
            }
            offset += share;
        } else if (!strcmp(p->action, "validate")) {
            uint64_t begin = c->ntest * rank / world, end = c->ntest * (rank + 1) / world;
            cJSON_AddNumberToObject(m, "begin", (double)begin);
            cJSON_AddNumberToObject(m, "end", (double)end);
        } else if (rank == 0 && p->path[0]) {
            cJSON_AddStringToObject(m, "path", p->path);
            cJSON *meta = cJSON_AddObjectToObject(m, "meta");
            cJSON_AddNumberToObject(meta, "epoch", c->epoch);
            cJSON_AddNumberToObject(meta, "iteration", (double)c->iteration);
            cJSON_AddNumberToObject(meta, "seed", (double)c->job.settings.seed);
            cJSON_AddStringToObject(meta, "exec", c->job.exec_id);
        }
        if (msg_send(s->fd, m) != 0)
            s->reply = cJSON_Parse("{\"ok\": false, \"error\": \"control connection lost\"}");
        cJSON_Delete(m);
        rank++;
    }
    c->commit_next = 0; /* workers applied it on receipt */
    if (p->join)
        c->load_path[0] = 0;
}

/* Waits for every member's reply. Members that die or miss the deadline are
 * dropped. Returns 1 when every member replied ok. */
static int collect_replies(edt_coordinator *c, int64_t deadline)
{
    int all_ok = 1;
    for (;;) {
        struct pollfd fds[MAX_SLOTS];
        uint32_t who[MAX_SLOTS], n = 0;
        for (uint32_t i = 0; i < c->nslots; i++)
            if (c->slots[i].state == SLOT_MEMBER && !c->slots[i].reply) {
                fds[n] = (struct pollfd){.fd = c->slots[i].fd, .events = POLLIN};
                who[n++] = i;
            }
        if (n == 0)
            break;
        int64_t left = deadline - time_mono_ms();
        if (left <= 0) {
            for (uint32_t k = 0; k < n; k++)
                drop_slot(c, who[k], "no reply within the step deadline");
            all_ok = 0;
            break;
        }
        int r = poll(fds, n, left > 200 ? 200 : (int)left);
        if (r < 0 && errno != EINTR)
            break;
        for (uint32_t k = 0; k < n; k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char err[128];
            cJSON *reply = msg_recv(fds[k].fd, time_mono_ms() + 5000, err, sizeof err);
            if (!reply) {
                all_ok = 0;
                drop_slot(c, who[k], "its control connection closed (the process died)");
                continue;
            }
            c->slots[who[k]].reply = reply;
        }
        /* A member that died without closing its socket yet. */
        if (reap(c) > 0)
            all_ok = 0;
        accept_hellos(c, 0);
    }
    for (uint32_t i = 0; i < c->nslots; i++) {
        edt_slot *s = &c->slots[i];
        if (s->state != SLOT_MEMBER || !s->reply)
            continue;
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s->reply, "ok"))) {
            all_ok = 0;
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(s->reply, "error");
            driver_say(c, "worker %u: %s", i, cJSON_IsString(e) ? e->valuestring : "failed");
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s->reply, "pull_failed")) && !s->has_state &&
                ++s->pull_failures >= (int)c->job.settings.pull_limit) {
                char reason[256];
                snprintf(reason, sizeof reason,
                         "PULL_FAILED: could not pull the weights within %u s, %d time(s); stopping",
                         c->job.settings.pull_timeout_s, s->pull_failures);
                driver_say(c, "worker %u %s", i, reason);
                send_exit(c, i, reason, 3);
            }
        }
    }
    return all_ok;
}

static void clear_replies(edt_coordinator *c)
{
    for (uint32_t i = 0; i < c->nslots; i++) {
        cJSON_Delete(c->slots[i].reply);
        c->slots[i].reply = NULL;
    }
}

/* Weighted average over the members' replies of `field` (an object of
 * metrics) with weights "count". */
static cJSON *combine(edt_coordinator *c, const char *field, uint64_t *total)
{
    cJSON *sum = cJSON_CreateObject();
    double weight = 0;
    for (uint32_t i = 0; i < c->nslots; i++) {
        edt_slot *s = &c->slots[i];
        if (s->state != SLOT_MEMBER || !s->reply)
            continue;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(s->reply, field);
        double n = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s->reply, "count"));
        if (isnan(n) || n <= 0)
            continue;
        weight += n;
        const cJSON *v;
        cJSON_ArrayForEach(v, m) {
            cJSON *acc = cJSON_GetObjectItemCaseSensitive(sum, v->string);
            if (!acc)
                acc = cJSON_AddNumberToObject(sum, v->string, 0);
            cJSON_SetNumberValue(acc, acc->valuedouble + v->valuedouble * n);
        }
    }
    cJSON *v;
    cJSON_ArrayForEach(v, sum) cJSON_SetNumberValue(v, weight > 0 ? v->valuedouble / weight : 0);
    if (total)
        *total = (uint64_t)weight;
    return sum;
}

/* ---- bookkeeping -------------------------------------------------------- */

static void update_snapshot(edt_coordinator *c, const char *phase)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "phase", phase);
    cJSON_AddNumberToObject(o, "workers", count_in(c, SLOT_MEMBER));
    cJSON_AddStringToObject(o, "deviceKind", is_gpu_job(c) ? "gpu" : "cpu");
    cJSON *devices = cJSON_AddArrayToObject(o, "workerDevices");
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_MEMBER && c->slots[i].device >= 0)
            cJSON_AddItemToArray(devices, cJSON_CreateNumber(c->slots[i].device));
    cJSON_AddNumberToObject(o, "targetWorkers", current_target(c));
    cJSON_AddNumberToObject(o, "maxWorkers", c->job.settings.engines);
    cJSON_AddNumberToObject(o, "generation", c->generation);
    cJSON_AddNumberToObject(o, "epoch", c->epoch);
    cJSON_AddNumberToObject(o, "epochs", c->job.settings.epochs);
    cJSON_AddNumberToObject(o, "iteration", (double)c->iteration);
    cJSON_AddNumberToObject(o, "effectiveBatchSize", c->job.settings.effective_batch_size);
    cJSON_AddNumberToObject(o, "batchSize", c->job.settings.batch_size);
    cJSON_AddNumberToObject(o, "samplesPerSecond", c->last_rate);
    if (c->sampler_ready) {
        cJSON_AddNumberToObject(o, "epochSamplesDone", (double)c->smp.committed);
        cJSON_AddNumberToObject(o, "epochSamples", (double)c->smp.n);
    }
    if (c->epoch_loss_n)
        cJSON_AddNumberToObject(o, "trainLoss", c->epoch_loss_sum / (double)c->epoch_loss_n);
    if (c->last_test)
        cJSON_AddItemToObject(o, "testMetrics", cJSON_Duplicate(c->last_test, 1));
    if (c->resize_latency_ms >= 0)
        cJSON_AddNumberToObject(o, "lastResizeMs", (double)c->resize_latency_ms);
    cJSON_AddItemToObject(o, "epochsDone", cJSON_Duplicate(c->epochs_done, 1));
    pthread_mutex_lock(&c->lock);
    cJSON_Delete(c->snapshot);
    c->snapshot = o;
    pthread_mutex_unlock(&c->lock);
}

static void write_val_list(edt_coordinator *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/val_dict_list.json", c->job.result_dir);
    char *text = cJSON_Print(c->val_list);
    if (text) {
        fs_write_file_atomic(path, text, strlen(text), 0644);
        free(text);
    }
}

/* An epoch's last step committed: record it, then queue validation and a
 * checkpoint as the settings ask. */
static void end_epoch(edt_coordinator *c)
{
    double secs = (double)(time_mono_ms() - c->epoch_started_ms) / 1000.0;
    c->last_rate = secs > 0 ? (double)c->smp.committed / secs : 0;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "epoch", c->epoch + 1);
    cJSON_AddNumberToObject(e, "samples", (double)c->smp.committed);
    cJSON_AddNumberToObject(e, "expected", (double)c->smp.n);
    cJSON_AddNumberToObject(e, "duplicates", (double)c->smp.duplicates);
    cJSON_AddBoolToObject(e, "exactlyOnce", sampler_epoch_complete(&c->smp));
    cJSON_AddNumberToObject(e, "seconds", secs);
    cJSON_AddNumberToObject(e, "samplesPerSecond", c->last_rate);
    cJSON *train = cJSON_CreateObject();
    if (c->epoch_loss_n) {
        cJSON_AddNumberToObject(train, "loss", c->epoch_loss_sum / (double)c->epoch_loss_n);
        if (c->have_acc)
            cJSON_AddNumberToObject(train, "accuracy", c->epoch_acc_sum / (double)c->epoch_loss_n);
    }
    cJSON_AddItemToObject(e, "train", train);
    cJSON_AddItemToArray(c->epochs_done, e);
    driver_say(c, "epoch %u/%u: %llu of %llu samples, each once: %s; %.2f s, %.0f samples/s, "
                  "train loss %.4f, %u worker(s)",
               c->epoch + 1, c->job.settings.epochs, (unsigned long long)c->smp.committed,
               (unsigned long long)c->smp.n, sampler_epoch_complete(&c->smp) ? "yes" : "NO", secs,
               c->last_rate, c->epoch_loss_n ? c->epoch_loss_sum / (double)c->epoch_loss_n : 0,
               count_in(c, SLOT_MEMBER));
    logger_set_train_json(c->driver_loggers, train, c->iteration, c->epoch + 1,
                          count_in(c, SLOT_MEMBER));
    uint32_t done = c->epoch + 1;
    const edt_settings *s = &c->job.settings;
    c->pending_validate = s->validation_freq && (done % s->validation_freq == 0 || done == s->epochs);
    c->pending_checkpoint = s->checkpoint_freq && done % s->checkpoint_freq == 0 && done < s->epochs;
    c->epoch++;
    c->epoch_loss_sum = c->epoch_acc_sum = 0;
    c->epoch_loss_n = 0;
    if (c->epoch < s->epochs) {
        sampler_begin_epoch(&c->smp, c->epoch);
        /* The clock starts at the epoch's first step: validation and the
         * checkpoint belong to neither epoch's rate. */
        c->epoch_clock_pending = 1;
    }
}

/* ---- the thread --------------------------------------------------------- */

static int prepare(edt_coordinator *c, char *err, size_t errlen)
{
    edt_job *j = &c->job;
    c->nslots = j->settings.engines;
    for (uint32_t i = 0; i < c->nslots; i++)
        c->slots[i].fd = -1;
    /* Names unique per host process and exec. */
    snprintf(c->shm_name, sizeof c->shm_name, "/loom-%d-%.60s", (int)getpid(), j->exec_id);
    snprintf(c->ctl_name, sizeof c->ctl_name, "loom-edt-%d-%.60s", (int)getpid(), j->exec_id);
    for (char *p = c->shm_name + 1; *p; p++)
        if (*p == '/')
            *p = '_';
    comm_shm_config cfg = {.max_ranks = c->nslots, .max_buffer_bytes = (uint64_t)1 << 34};
    shm_unlink(c->shm_name);
    loom_error *e = comm_shm_create(c->shm_name, &cfg, &c->seg);
    if (e) {
        snprintf(err, errlen, "%s", loom_err_message(e));
        loom_err_free(e);
        return -1;
    }
    c->listen_fd = msg_listen(c->ctl_name, err, errlen);
    if (c->listen_fd < 0)
        return -1;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/log/driver", j->result_dir);
    fs_mkdir_p(path);
    snprintf(path, sizeof path, "%s/log/driver/stdout", j->result_dir);
    c->driver_out = fopen(path, "a");
    snprintf(path, sizeof path, "%s/checkpoint", j->result_dir);
    fs_mkdir_p(path);
    snprintf(path, sizeof path, "%s/log/driver", j->result_dir);
    c->driver_loggers = logger_set_open(j->reg, j->settings.loggers_json, LOOM_LOGGER_DRIVER, 0,
                                        j->exec_id, path);
    /* Workers load loggers by path: resolve the names here. */
    cJSON *list = cJSON_Parse(j->settings.loggers_json ? j->settings.loggers_json : "[]");
    cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        registry_entry e2;
        if (cJSON_IsString(name) && j->reg &&
            registry_acquire(j->reg, LOOM_KIND_LOGGER, name->valuestring, &e2) == 0) {
            registry_release(j->reg, LOOM_KIND_LOGGER, name->valuestring);
            cJSON_DeleteItemFromObjectCaseSensitive(item, "path");
            cJSON_AddStringToObject(item, "path", e2.path);
        }
    }
    char *text = cJSON_PrintUnformatted(list);
    snprintf(c->loggers_for_workers, sizeof c->loggers_for_workers, "%s", text ? text : "[]");
    free(text);
    cJSON_Delete(list);
    c->epochs_done = cJSON_CreateArray();
    c->val_list = cJSON_CreateArray();
    c->resize_latency_ms = -1;
    return 0;
}

/* Resuming: the newest checkpoint that reads back whole. */
static void find_resume_point(edt_coordinator *c)
{
    char dir[PATH_MAX + 16], skipped[2048];
    snprintf(dir, sizeof dir, "%s/checkpoint", c->job.result_dir);
    int epoch;
    if (checkpoint_find_latest(dir, c->load_path, sizeof c->load_path, &epoch, skipped, sizeof skipped) != 0) {
        c->load_path[0] = 0;
        driver_say(c, "no usable checkpoint%s%s: starting from the beginning",
                   skipped[0] ? "; refused: " : "", skipped);
        return;
    }
    if (skipped[0])
        driver_say(c, "refused: %s", skipped);
    char err[256];
    cJSON *meta = checkpoint_inspect(c->load_path, err, sizeof err);
    c->epoch = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "epoch"));
    c->iteration = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "iteration"));
    cJSON_Delete(meta);
    /* The val_dict_list so far, so the file stays whole. */
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/val_dict_list.json", c->job.result_dir);
    char *text = fs_read_file(path, 16u << 20, NULL);
    cJSON *old = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (cJSON_IsArray(old)) {
        cJSON_Delete(c->val_list);
        c->val_list = old;
    } else {
        cJSON_Delete(old);
    }
    driver_say(c, "resuming from %s (epoch %u done)", c->load_path, c->epoch);
}

static int wait_for_first_workers(edt_coordinator *c, char *err, size_t errlen)
{
    int64_t deadline = time_mono_ms() + STARTUP_TIMEOUT_MS;
    for (;;) {
        accept_hellos(c, 100);
        reap(c);
        uint32_t starting = count_in(c, SLOT_STARTING), ready = count_in(c, SLOT_READY);
        if (starting == 0 && ready > 0)
            return 0;
        if (starting == 0 && ready == 0) {
            if (c->startup_error[0])
                snprintf(err, errlen, "no worker started: %s", c->startup_error);
            else
                snprintf(err, errlen, "no worker started (see log/worker-0/stderr)");
            return -1;
        }
        if (time_mono_ms() > deadline) {
            if (ready > 0)
                return 0;
            snprintf(err, errlen, "no worker was ready within %d s", STARTUP_TIMEOUT_MS / 1000);
            return -1;
        }
        if (stop_asked(c)) {
            snprintf(err, errlen, "stopped by request");
            return -1;
        }
    }
}

static void finish_workers(edt_coordinator *c, const char *reason)
{
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].state == SLOT_MEMBER || c->slots[i].state == SLOT_READY)
            send_exit(c, i, reason, 0);
    int64_t deadline = time_mono_ms() + EXIT_GRACE_MS;
    for (;;) {
        reap(c);
        int alive = 0;
        for (uint32_t i = 0; i < c->nslots; i++)
            alive += c->slots[i].pid > 0;
        if (!alive)
            break;
        if (time_mono_ms() > deadline) {
            for (uint32_t i = 0; i < c->nslots; i++)
                if (c->slots[i].pid > 0)
                    kill(c->slots[i].pid, SIGKILL);
        }
        usleep(20000);
    }
}

static const char *run_async(edt_coordinator *c, char *err, size_t errlen);

static void *run(void *arg)
{
    edt_coordinator *c = arg;
    edt_job *j = &c->job;
    char err[1024] = "";
    const char *final_state = "ERROR";
    int failed_round = 0;

    if (prepare(c, err, sizeof err) != 0)
        goto end;
    if (j->resume)
        find_resume_point(c);
    driver_say(c, "training: %u epoch(s), batch %u per worker, effective batch %u, up to %u worker(s), "
                  "starting %u", j->settings.epochs, j->settings.batch_size,
               j->settings.effective_batch_size, j->settings.engines, current_target(c));
    {
        int32_t granted[MAX_SLOTS];
        uint32_t ngranted;
        uint32_t target = current_grant(c, granted, &ngranted);
        start_workers(c, target, granted, ngranted);
    }
    if (wait_for_first_workers(c, err, sizeof err) != 0)
        goto end;
    if (j->settings.batch_size > c->ntrain) {
        snprintf(err, sizeof err, "the batch size %u is larger than the data set (%llu samples)",
                 j->settings.batch_size, (unsigned long long)c->ntrain);
        goto end;
    }
    if (sampler_init(&c->smp, c->ntrain, j->settings.seed) != 0) {
        snprintf(err, sizeof err, "out of memory");
        goto end;
    }
    c->sampler_ready = 1;
    sampler_begin_epoch(&c->smp, c->epoch);
    c->steps_per_epoch = (c->ntrain + j->settings.effective_batch_size - 1) / j->settings.effective_batch_size;
    c->epoch_started_ms = time_mono_ms();
    set_state(c, "RUNNING", NULL);
    loom_train_info info = {.struct_size = sizeof info, .epochs = j->settings.epochs,
                            .workers = current_target(c), .batch_size = j->settings.batch_size,
                            .effective_batch_size = j->settings.effective_batch_size,
                            .exec_id = j->exec_id};
    logger_set_begin(c->driver_loggers, &info);

    if (j->settings.async) {
        final_state = run_async(c, err, sizeof err);
        goto end;
    }
    uint64_t *taken = malloc(sizeof(uint64_t) * j->settings.effective_batch_size);
    for (;;) {
        if (stop_asked(c)) {
            final_state = "KILLED";
            snprintf(err, sizeof err, "stopped by request");
            break;
        }
        reap(c);
        accept_hellos(c, 0);
        int root = -1;
        int join = plan_membership(c, failed_round, &root, err, sizeof err);
        if (join == -2)
            break;
        if (join < 0) {
            /* Nobody left now; replacements may still be starting. */
            if (count_in(c, SLOT_STARTING) + count_in(c, SLOT_READY) > 0) {
                accept_hellos(c, 100);
                continue;
            }
            snprintf(err, sizeof err, "every worker died; the job cannot go on");
            break;
        }
        round_plan p = {.join = join, .root = root, .taken = taken};
        if (c->pending_validate)
            p.action = "validate";
        else if (c->pending_checkpoint) {
            p.action = "checkpoint";
            snprintf(p.path, sizeof p.path, "%s/checkpoint/epoch-%u.safetensors", j->result_dir, c->epoch);
        } else if (c->epoch >= j->settings.epochs) {
            p.action = "finish";
            snprintf(p.path, sizeof p.path, "%s/model", j->result_dir);
            fs_mkdir_p(p.path);
            snprintf(p.path, sizeof p.path, "%s/model/model.safetensors", j->result_dir);
        } else {
            p.action = "step";
            p.ntaken = sampler_take(&c->smp, taken, j->settings.effective_batch_size);
            if (c->epoch_clock_pending) {
                c->epoch_started_ms = time_mono_ms();
                c->epoch_clock_pending = 0;
            }
        }
        pthread_mutex_lock(&c->lock);
        if (c->measuring_resize == 1 && c->grew)
            c->measuring_resize = 3;
        pthread_mutex_unlock(&c->lock);
        c->grew = 0;
        send_plans(c, &p);
        int64_t deadline = time_mono_ms() + j->settings.step_timeout_ms +
                           (join ? (int64_t)j->settings.pull_timeout_s * 1000 : 0) + 2000;
        int ok = collect_replies(c, deadline);
        failed_round = !ok;
        if (ok)
            c->deaths_since_progress = 0;
        if (!strcmp(p.action, "step")) {
            if (ok) {
                sampler_commit(&c->smp, taken, p.ntaken);
                uint64_t n;
                cJSON *m = combine(c, "train", &n);
                const cJSON *loss = cJSON_GetObjectItemCaseSensitive(m, "loss");
                const cJSON *acc = cJSON_GetObjectItemCaseSensitive(m, "accuracy");
                if (cJSON_IsNumber(loss)) {
                    c->epoch_loss_sum += loss->valuedouble * (double)n;
                    c->epoch_loss_n += n;
                }
                if (cJSON_IsNumber(acc)) {
                    c->epoch_acc_sum += acc->valuedouble * (double)n;
                    c->have_acc = 1;
                }
                cJSON_Delete(m);
                c->iteration++;
                c->commit_next = 1;
                for (uint32_t i = 0; i < c->nslots; i++)
                    if (c->slots[i].state == SLOT_MEMBER)
                        c->slots[i].has_state = 1;
                if (c->measuring_resize == 3) {
                    pthread_mutex_lock(&c->lock);
                    c->resize_latency_ms = time_mono_ms() - c->resize_requested_ms;
                    c->measuring_resize = 0;
                    pthread_mutex_unlock(&c->lock);
                    driver_say(c, "resize applied: first step with the new workers %lld ms after the request",
                               (long long)c->resize_latency_ms);
                }
                if (sampler_remaining(&c->smp) == 0)
                    end_epoch(c);
            } else {
                sampler_give_back(&c->smp, taken, p.ntaken);
            }
        } else if (ok && !strcmp(p.action, "validate")) {
            uint64_t n;
            cJSON *m = combine(c, "eval", &n);
            cJSON *entry = cJSON_CreateObject();
            cJSON_AddNumberToObject(entry, "step", c->epoch);
            cJSON *v;
            cJSON_ArrayForEach(v, m) cJSON_AddNumberToObject(entry, v->string, v->valuedouble);
            cJSON_AddItemToArray(c->val_list, entry);
            write_val_list(c);
            logger_set_test_json(c->driver_loggers, m, c->iteration, c->epoch);
            char line[256] = "";
            cJSON_ArrayForEach(v, m) {
                size_t used = strlen(line);
                snprintf(line + used, sizeof line - used, " %s %.4f", v->string, v->valuedouble);
            }
            driver_say(c, "validation after epoch %u on %llu test samples:%s", c->epoch,
                       (unsigned long long)n, line);
            cJSON_Delete(c->last_test);
            c->last_test = m;
            c->pending_validate = 0;
        } else if (ok && !strcmp(p.action, "checkpoint")) {
            driver_say(c, "checkpoint %s", p.path);
            c->pending_checkpoint = 0;
        } else if (ok && !strcmp(p.action, "finish")) {
            char spec_copy[PATH_MAX + 32];
            snprintf(spec_copy, sizeof spec_copy, "%s/model/%s", j->result_dir, EDT_SPEC_DEFAULT);
            fs_copy_file(j->spec_path, spec_copy, 0644);
            driver_say(c, "finished: model in %s/model", j->result_dir);
            final_state = "FINISHED";
            err[0] = 0;
            clear_replies(c);
            break; /* finish_workers tells them to exit */
        }
        if (ok && join)
            for (uint32_t i = 0; i < c->nslots; i++)
                if (c->slots[i].state == SLOT_MEMBER)
                    c->slots[i].has_state = 1;
        clear_replies(c);
        update_snapshot(c, p.action);
    }
    free(taken);
end:
    finish_workers(c, strcmp(final_state, "FINISHED") ? "the job ended" : "finished");
    logger_set_end(c->driver_loggers, !strcmp(final_state, "FINISHED") ? LOOM_TRAIN_FINISHED
                                      : !strcmp(final_state, "KILLED") ? LOOM_TRAIN_KILLED
                                                                        : LOOM_TRAIN_FAILED,
                   err);
    if (err[0])
        driver_say(c, "%s: %s", final_state, err);
    update_snapshot(c, "ended");
    set_state(c, final_state, err[0] ? err : NULL);
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    pthread_mutex_unlock(&c->lock);
    return NULL;
}


/* ---- ASYNC: a parameter server in the coordinator ------------------------
 *
 * The coordinator holds the model (an instance of the same adapter, in the
 * host) and its optimizer. Each worker gets a batch and the current weights,
 * sends back its gradient, and the server applies it unless it is staler
 * than EDT_MAX_STALENESS updates (then its samples go back to the pool).
 * Workers never wait for each other; they join and leave at any time. */

typedef struct param_server {
    loom_framework_instance *inst;
    loom_tensor_view params, grads;
    loom_tensor_view views[256];
    int32_t roles[256];
    uint32_t nviews;
    uint64_t version;
    uint64_t stale;
} param_server;

static int ps_open(edt_coordinator *c, param_server *ps, char *err, size_t errlen)
{
    const loom_framework_factory *f = c->job.framework;
    if (!f || f->style != LOOM_FRAMEWORK_TRAINER) {
        snprintf(err, errlen, "ASYNC needs the framework adapter loaded in the host");
        return -1;
    }
    char *spec = fs_read_file(c->job.spec_path, 16u << 20, NULL);
    if (!spec) {
        snprintf(err, errlen, "cannot read %s", c->job.spec_path);
        return -1;
    }
    loom_trainer_config cfg = {
        .struct_size = sizeof cfg,
        .num_dataloader_threads = 1,
        .seed = c->job.settings.seed,
        .device = {.struct_size = sizeof(loom_device), .kind = LOOM_DEVICE_CPU},
        .spec_json = spec,
        .code_dir = c->job.code_dir,
        .data_dir = c->job.data_dir,
    };
    loom_error *e = f->create(f, &cfg, &ps->inst);
    free(spec);
    ps->params.struct_size = ps->grads.struct_size = sizeof(loom_tensor_view);
    for (uint32_t i = 0; i < 256; i++)
        ps->views[i].struct_size = sizeof(loom_tensor_view);
    if (!e)
        e = f->buffers(ps->inst, &ps->params, &ps->grads);
    if (!e)
        e = f->state_tensors(ps->inst, ps->views, ps->roles, 256, &ps->nviews);
    if (e) {
        snprintf(err, errlen, "parameter server: %s", loom_err_message(e));
        loom_err_free(e);
        return -1;
    }
    if (c->load_path[0]) {
        if (checkpoint_load(c->load_path, ps->views, ps->nviews, NULL, err, errlen) != 0)
            return -1;
        if (f->state_loaded && (e = f->state_loaded(ps->inst))) {
            snprintf(err, errlen, "%s", loom_err_message(e));
            loom_err_free(e);
            return -1;
        }
        c->load_path[0] = 0;
    }
    return 0;
}

/* Hands a worker its next batch with the current weights. */
static void ps_assign(edt_coordinator *c, param_server *ps, uint32_t i)
{
    edt_slot *s = &c->slots[i];
    uint32_t b = c->job.settings.batch_size;
    free(s->inflight);
    s->inflight = malloc(sizeof(uint64_t) * b);
    s->ninflight = s->inflight ? sampler_take(&c->smp, s->inflight, b) : 0;
    if (s->ninflight == 0)
        return;
    if (c->epoch_clock_pending) {
        c->epoch_started_ms = time_mono_ms();
        c->epoch_clock_pending = 0;
    }
    s->version = ps->version;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "do", "async_step");
    cJSON_AddNumberToObject(m, "round", (double)ps->version);
    cJSON_AddNumberToObject(m, "epoch", c->epoch);
    cJSON_AddNumberToObject(m, "iteration", (double)c->iteration);
    cJSON_AddNumberToObject(m, "workers", count_in(c, SLOT_MEMBER));
    cJSON *mbs = cJSON_AddArrayToObject(m, "mb");
    cJSON_AddItemToArray(mbs, index_array(s->inflight, s->ninflight));
    cJSON *scales = cJSON_AddArrayToObject(m, "scale");
    cJSON_AddItemToArray(scales, cJSON_CreateNumber(1.0));
    if (msg_send_blob(s->fd, m, ps->params.data, (size_t)ps->params.nbytes) != 0)
        s->reply = cJSON_Parse("{\"ok\": false}");
    cJSON_Delete(m);
}

static const char *run_async(edt_coordinator *c, char *err, size_t errlen)
{
    edt_job *j = &c->job;
    const loom_framework_factory *f = j->framework;
    param_server ps;
    memset(&ps, 0, sizeof ps);
    const char *final_state = "ERROR";
    if (ps_open(c, &ps, err, errlen) != 0)
        goto out;
    driver_say(c, "ASYNC: a parameter server in the host; gradients staler than %u updates are dropped",
               j->settings.max_staleness);
    for (;;) {
        if (stop_asked(c)) {
            final_state = "KILLED";
            snprintf(err, errlen, "stopped by request");
            break;
        }
        reap(c);
        accept_hellos(c, 0);
        /* Members: up to the target; no generations, no broadcast. */
        int32_t granted[MAX_SLOTS];
        uint32_t ngranted;
        uint32_t target = current_grant(c, granted, &ngranted);
        release_revoked(c, granted, ngranted);
        start_workers(c, target, granted, ngranted);
        uint32_t members = count_in(c, SLOT_MEMBER);
        uint32_t coming = count_in(c, SLOT_STARTING) + count_in(c, SLOT_READY);
        for (uint32_t i = 0; i < c->nslots; i++) {
            edt_slot *s = &c->slots[i];
            if (s->state == SLOT_READY && members < target) {
                make_member(c, i, granted, ngranted);
                members++;
            } else if (s->state == SLOT_MEMBER && members > target && s->ninflight == 0) {
                send_exit(c, i, "leaving: the job was resized", 0);
                members--;
            }
        }
        if (members == 0 && coming == 0 && c->epoch < j->settings.epochs) {
            snprintf(err, errlen, "every worker died; the job cannot go on");
            break;
        }
        if (c->deaths_since_progress > 2 * c->nslots + 2) {
            snprintf(err, errlen, "workers keep dying: %u lost without a step done", c->deaths_since_progress);
            break;
        }
        /* Epoch boundary: everything handed out came back. */
        size_t inflight = 0;
        for (uint32_t i = 0; i < c->nslots; i++)
            inflight += c->slots[i].ninflight;
        if (sampler_remaining(&c->smp) == 0 && inflight == 0 && c->epoch < j->settings.epochs) {
            end_epoch(c);
            if (c->pending_validate && c->ntest) {
                uint64_t *idx = malloc(sizeof(uint64_t) * c->ntest);
                loom_metrics m = {.struct_size = sizeof m};
                for (uint64_t k = 0; idx && k < c->ntest; k++)
                    idx[k] = k;
                loom_error *e = idx ? f->evaluate(ps.inst, LOOM_SPLIT_TEST, idx, (uint32_t)c->ntest, &m)
                                    : loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
                free(idx);
                if (e) {
                    snprintf(err, errlen, "validation: %s", loom_err_message(e));
                    loom_err_free(e);
                    break;
                }
                cJSON *metrics = cJSON_CreateObject();
                cJSON *entry = cJSON_CreateObject();
                cJSON_AddNumberToObject(entry, "step", c->epoch);
                for (uint32_t k = 0; k < m.count; k++) {
                    cJSON_AddNumberToObject(metrics, m.items[k].name, m.items[k].value);
                    cJSON_AddNumberToObject(entry, m.items[k].name, m.items[k].value);
                }
                cJSON_AddItemToArray(c->val_list, entry);
                write_val_list(c);
                logger_set_test_json(c->driver_loggers, metrics, c->iteration, c->epoch);
                driver_say(c, "validation after epoch %u on %llu test samples: loss %.4f accuracy %.4f",
                           c->epoch, (unsigned long long)c->ntest,
                           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(metrics, "loss")),
                           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(metrics, "accuracy")));
                cJSON_Delete(c->last_test);
                c->last_test = metrics;
            }
            c->pending_validate = 0;
            if (c->pending_checkpoint) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/checkpoint/epoch-%u.safetensors", j->result_dir, c->epoch);
                cJSON *meta = cJSON_CreateObject();
                cJSON_AddNumberToObject(meta, "epoch", c->epoch);
                cJSON_AddNumberToObject(meta, "iteration", (double)c->iteration);
                if (checkpoint_save(path, ps.views, ps.roles, ps.nviews, 0, meta, err, errlen) == 0)
                    driver_say(c, "checkpoint %s", path);
                else
                    driver_say(c, "checkpoint failed: %s", err);
                cJSON_Delete(meta);
                c->pending_checkpoint = 0;
            }
            if (c->epoch >= j->settings.epochs) {
                char path[PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/model", j->result_dir);
                fs_mkdir_p(path);
                snprintf(path, sizeof path, "%s/model/model.safetensors", j->result_dir);
                if (checkpoint_save(path, ps.views, ps.roles, ps.nviews, 1, NULL, err, errlen) != 0)
                    break;
                char spec_copy[PATH_MAX + 32];
                snprintf(spec_copy, sizeof spec_copy, "%s/model/%s", j->result_dir, EDT_SPEC_DEFAULT);
                fs_copy_file(j->spec_path, spec_copy, 0644);
                driver_say(c, "finished: model in %s/model (%llu stale gradient(s) dropped)",
                           j->result_dir, (unsigned long long)ps.stale);
                final_state = "FINISHED";
                err[0] = 0;
                break;
            }
        }
        /* Idle members get work. */
        for (uint32_t i = 0; i < c->nslots; i++)
            if (c->slots[i].state == SLOT_MEMBER && c->slots[i].ninflight == 0 &&
                sampler_remaining(&c->smp) > 0)
                ps_assign(c, &ps, i);
        /* Gradients back. */
        struct pollfd fds[MAX_SLOTS];
        uint32_t who[MAX_SLOTS], n = 0;
        for (uint32_t i = 0; i < c->nslots; i++)
            if (c->slots[i].state == SLOT_MEMBER && c->slots[i].ninflight) {
                fds[n] = (struct pollfd){.fd = c->slots[i].fd, .events = POLLIN};
                who[n++] = i;
            }
        if (n == 0) {
            accept_hellos(c, 50);
            continue;
        }
        if (poll(fds, n, 50) <= 0)
            continue;
        for (uint32_t k = 0; k < n; k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            edt_slot *s = &c->slots[who[k]];
            char why[256];
            int64_t deadline = time_mono_ms() + j->settings.step_timeout_ms;
            cJSON *reply = msg_recv(s->fd, deadline, why, sizeof why);
            if (!reply || msg_recv_blob(s->fd, reply, ps.grads.data, (size_t)ps.grads.nbytes, deadline,
                                        why, sizeof why) != 0) {
                cJSON_Delete(reply);
                drop_slot(c, who[k], "its control connection closed (the process died)");
                continue;
            }
            int ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
            if (ok && ps.version - s->version > j->settings.max_staleness) {
                ps.stale++;
                ok = 0;
            }
            if (ok) {
                loom_step_info si = {.struct_size = sizeof si, .epoch = c->epoch,
                                     .epochs = j->settings.epochs, .iteration = c->iteration,
                                     .steps_per_epoch = c->steps_per_epoch};
                loom_error *e = f->apply(ps.inst, &si);
                if (e) {
                    snprintf(err, errlen, "parameter server: %s", loom_err_message(e));
                    loom_err_free(e);
                    cJSON_Delete(reply);
                    goto out;
                }
                ps.version++;
                c->iteration++;
                c->deaths_since_progress = 0;
                sampler_commit(&c->smp, s->inflight, s->ninflight);
                const cJSON *tr = cJSON_GetObjectItemCaseSensitive(reply, "train");
                const cJSON *loss = cJSON_GetObjectItemCaseSensitive(tr, "loss");
                const cJSON *acc = cJSON_GetObjectItemCaseSensitive(tr, "accuracy");
                if (cJSON_IsNumber(loss)) {
                    c->epoch_loss_sum += loss->valuedouble * (double)s->ninflight;
                    c->epoch_loss_n += s->ninflight;
                }
                if (cJSON_IsNumber(acc)) {
                    c->epoch_acc_sum += acc->valuedouble * (double)s->ninflight;
                    c->have_acc = 1;
                }
            } else {
                sampler_give_back(&c->smp, s->inflight, s->ninflight);
            }
            s->ninflight = 0;
            cJSON_Delete(reply);
        }
        update_snapshot(c, "step");
    }
out:
    if (ps.inst)
        f->destroy(ps.inst);
    return final_state;
}

/* ---- the public side ---------------------------------------------------- */

edt_coordinator *edt_start(edt_job *job, char *err, size_t errlen)
{
    edt_coordinator *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->job = *job;
    job->settings.loggers_json = NULL; /* taken over */
    size_t n = 0;
    while (job->msd_env && job->msd_env[n])
        n++;
    c->job.msd_env = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        c->job.msd_env[i] = strdup(job->msd_env[i]);
    c->listen_fd = -1;
    for (uint32_t i = 0; i < MAX_SLOTS; i++)
        c->slots[i].device = -1;
    c->target = job->initial_workers ? job->initial_workers : job->settings.engines;
    if (job->ndevices) {
        c->target = job->ndevices;
        c->ngranted = job->ndevices < MAX_SLOTS ? job->ndevices : MAX_SLOTS;
        memcpy(c->granted, job->devices, sizeof(int32_t) * c->ngranted);
    }
    if (c->target > job->settings.engines)
        c->target = job->settings.engines;
    pthread_mutex_init(&c->lock, NULL);
    update_snapshot(c, "starting");
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        snprintf(err, errlen, "cannot start the coordinator thread");
        edt_free(c);
        return NULL;
    }
    c->thread_started = 1;
    return c;
}

int edt_set_devices(edt_coordinator *c, const int32_t *devices, uint32_t count, char *err,
                    size_t errlen)
{
    if (count < 1 || count > c->job.settings.engines) {
        snprintf(err, errlen, "devices: expected 1 to %u (the job's engines), got %u",
                 c->job.settings.engines, count);
        return -1;
    }
    for (uint32_t k = 0; k < count; k++)
        if (devices[k] < 0 || device_in(devices[k], devices, k)) {
            snprintf(err, errlen, "devices: device %d is negative or named twice", devices[k]);
            return -1;
        }
    pthread_mutex_lock(&c->lock);
    if (count != c->target) {
        c->resize_requested_ms = time_mono_ms();
        c->measuring_resize = count > c->target ? 1 : 0;
        c->target = count;
    }
    c->ngranted = count;
    memcpy(c->granted, devices, sizeof(int32_t) * count);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

void edt_stop(edt_coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    c->stop_requested = 1;
    pthread_mutex_unlock(&c->lock);
}

int edt_done(edt_coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    int d = c->done;
    pthread_mutex_unlock(&c->lock);
    return d;
}

cJSON *edt_describe(edt_coordinator *c)
{
    pthread_mutex_lock(&c->lock);
    cJSON *o = cJSON_Duplicate(c->snapshot, 1);
    pthread_mutex_unlock(&c->lock);
    return o;
}

void edt_free(edt_coordinator *c)
{
    if (!c)
        return;
    if (c->thread_started)
        pthread_join(c->thread, NULL);
    for (uint32_t i = 0; i < c->nslots; i++)
        if (c->slots[i].fd >= 0)
            close(c->slots[i].fd);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    if (c->seg)
        comm_shm_destroy(c->seg);
    if (c->sampler_ready)
        sampler_free(&c->smp);
    logger_set_close(c->driver_loggers);
    if (c->driver_out)
        fclose(c->driver_out);
    cJSON_Delete(c->snapshot);
    cJSON_Delete(c->epochs_done);
    cJSON_Delete(c->val_list);
    cJSON_Delete(c->last_test);
    for (char **e = c->job.msd_env; e && *e; e++)
        free(*e);
    free(c->job.msd_env);
    edt_settings_free(&c->job.settings);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int edt_sweep_stale_segments(void)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int pid;
        /* Our names: "loom-<host pid>-<exec id>" (see prepare()). */
        if (sscanf(de->d_name, "loom-%d-", &pid) != 1 || pid <= 0)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        char name[300];
        snprintf(name, sizeof name, "/%s", de->d_name);
        if (shm_unlink(name) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
