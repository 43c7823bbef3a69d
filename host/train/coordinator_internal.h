/*
 * train/coordinator_internal.h - the coordinator's state, shared by the
 * files that each do one of its jobs:
 *
 *   coordinator.c   the public calls and the thread: prepare, start, end
 *   members.c       membership and supervision: worker processes, hellos,
 *                   deaths, generations, grow and shrink
 *   sync_round.c    the synchronous round: plans out, replies in, commit
 *   param_server.c  ASYNC: the parameter server in the host
 *   progress.c      where training stands: epochs, metrics, the snapshot
 *   recovery.c      the last committed state kept outside the workers, and
 *                   the rewind to it when every worker is lost
 *   coordinator_heartbeat.c  the control links' heartbeats: workers not
 *                   heard from are dropped, idle ones are told it lives
 *
 * Only the thread touches the state, except `ctl`, which the public calls
 * share under its lock.
 */
#ifndef LOOM_TRAIN_COORDINATOR_INTERNAL_H
#define LOOM_TRAIN_COORDINATOR_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "comm.h"
#include "train/coordinator.h"
#include "train/logger_set.h"
#include "train/protocol.h"
#include "train/sampler.h"
#include "util/error.h"
#include "util/proc_group.h"

#define MAX_SLOTS EDT_MAX_WORKERS

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
    int has_reply; /* `reply` holds this round's answer */
    msg reply;
    int64_t started_ms;
    /* The control link's liveness: when a message last came from the
     * worker, and whether its answer to a plan or work is due (the loop
     * reading that answer then takes its heartbeats too). */
    int64_t heard_ms;
    int awaiting;
    int beat; /* the heartbeat thread sends it heartbeats (edt_beats.lock) */
    proc_group group; /* the worker and all it starts, ended with the slot */
    int32_t device; /* the granted device it runs on (or, on CPU, is
                     * counted against); -1: none yet */
    char node[64];  /* its Slurm node; "" on this machine */
    msg_net_peer net; /* over TCP: where its ring neighbours reach it */
    /* ASYNC: the samples handed to this worker and the weights' version */
    uint64_t *inflight;
    size_t ninflight;
    uint64_t version;
} edt_slot;

/* The coordinator's heartbeat thread (coordinator_heartbeat.c). `lock`
 * guards every send on a worker's link and each slot's fd and beat while
 * it is linked. */
typedef struct edt_beats {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int ready, started, stop;
} edt_beats;

/* What the public calls and the thread share, under `lock`. */
typedef struct edt_control {
    pthread_mutex_t lock;
    uint32_t target;
    int32_t granted[MAX_SLOTS]; /* the devices the scheduler granted; */
    uint32_t ngranted;          /* 0: a bare worker count (target) */
    int stop_requested;
    int done;
    int64_t resize_requested_ms;
    int measuring_resize; /* 1: a grow was asked for; 3: its first step is planned */
    int64_t resize_latency_ms;
    cJSON *snapshot;      /* edt_describe's answer */
    int32_t held[MAX_SLOTS]; /* devices a worker process is on now */
    uint32_t nheld;
} edt_control;

/* The worker processes and the generations they form (members.c). */
typedef struct edt_members {
    comm_shm_segment *seg;
    char shm_name[96];
    char ctl_name[TRAIN_LINK_ADDR_MAX + 48]; /* the workers' --control */
    int listen_fd;
    int tcp;          /* the link is TCP: no peer credentials to check */
    int tls;          /* ... in TLS (link_tls.h) */
    int net;          /* workers on Slurm nodes: collectives over TCP, and
                       * each worker stays on its device's node */
    msg_net_peer net_peers[MAX_SLOTS]; /* over TCP: the generation's ranks */
    uint32_t nnet;
    uid_t worker_uid; /* the only uid whose connections the socket takes */
    uint8_t secret[TRAIN_SECRET_BYTES]; /* the exec's: workers prove they hold it */
    edt_slot slots[MAX_SLOTS];
    uint32_t nslots;
    uint32_t generation;
    uint32_t prev[MAX_SLOTS];         /* the current generation's slots, */
    uint32_t nprev;                   /* in rank order (GPU: shrink) */
    char nccl_id_hex[MSG_NCCL_ID_HEX + 1]; /* GPU: the generation's unique id */
    uint32_t nccl_exclude[MAX_SLOTS]; /* GPU: the ranks that left, */
    uint32_t nccl_nexclude;           /* when shrinking */
    int nccl_shrink;                  /* GPU: shrink instead of a new id */
    uint64_t params, ntrain, ntest;   /* what the first hello said */
    char startup_error[600];          /* why a worker died before saying hello */
    uint32_t deaths_since_progress;   /* workers lost since the last good round */
    /* Per slot: the cause of its worker's last death and how many deaths
     * in a row had it, since the last good round. */
    char death_cause[MAX_SLOTS][160];
    uint32_t death_streak[MAX_SLOTS];
    char failing[400];                /* why the job must end: a worker died
                                       * max_worker_failures times alike */
    uint32_t error_rounds;            /* rounds in a row that a live member
                                       * failed with an error of its own */
    int grew;                         /* this round's membership added workers */
} edt_members;

/* The running loss at each of the last iterations (progress.c), for a
 * reader that looks now and then (the history) to miss none of them. */
#define EDT_RECENT_LOSSES 64
typedef struct edt_recent_loss {
    uint64_t iteration;
    uint32_t epoch;
    double loss;
} edt_recent_loss;

/* Where training stands (progress.c). */
typedef struct edt_progress {
    sampler smp;
    int sampler_ready;
    uint32_t epoch;
    uint64_t iteration;
    uint64_t steps_per_epoch;
    int pending_validate, pending_checkpoint;
    int64_t epoch_started_ms;
    int epoch_clock_pending;
    double loss_sum, acc_sum; /* this epoch's, weighted by samples */
    uint64_t loss_n;
    edt_recent_loss recent[EDT_RECENT_LOSSES]; /* a ring, newest at nrecent - 1 */
    uint64_t nrecent;
    int have_acc;
    cJSON *epochs_done; /* [{epoch, samples, duplicates, expected, seconds, ...}] */
    cJSON *val_list;    /* val_dict_list.json */
    /* The file as the trainer last wrote it (device, inode, size, mtime):
     * one that differs was written by the job itself, whose file wins. */
    uint64_t val_file_sig[4];
    int val_file_theirs;
    cJSON *last_test;
    double last_rate;
    uint64_t rewound_steps; /* this epoch's steps trained again after a rewind */
    uint32_t rewinds;
    /* The epochs (counted from 1) whose end the driver's loggers heard, that
     * were validated, that were checkpointed: a rewind past them trains
     * again but does not repeat what the job's owner already saw. */
    uint32_t logged_through, validated_through, checkpointed_through;
    int finished; /* the final model is written */
} edt_progress;

/* Where training stood at a point it can rewind to (progress.c). */
typedef struct edt_progress_mark {
    uint32_t epoch;
    uint64_t iteration;
    int pending_validate, pending_checkpoint, epoch_clock_pending;
    int64_t epoch_started_ms;
    double loss_sum, acc_sum;
    uint64_t loss_n;
    int have_acc;
    int nepochs_done;
} edt_progress_mark;

/* The last committed state kept outside the workers (recovery.c): a state
 * file a member wrote at a step boundary (two, written in turn, so a
 * failed write never spoils the one in use) and where training stood. */
typedef struct edt_recovery {
    char path[PATH_MAX]; /* its state file; "": the initial weights */
    sampler smp;
    edt_progress_mark pr;
    unsigned next_file;
    int64_t saved_ms; /* when it was made */
    int64_t cost_ms;  /* how long the round that made it took */
    int64_t retry_ms; /* after a failed copy: not before then */
    uint64_t copies;  /* made so far */
    int64_t total_ms; /* their rounds' time, summed */
} edt_recovery;

/* Where the coordinator's time goes in synchronous training, this epoch
 * (sync_round.c prints it when the epoch ends). */
typedef struct round_profile {
    uint64_t steps, rounds;
    int64_t sample_ns, send_ns, wait_ns, record_ns;
} round_profile;

struct edt_coordinator {
    edt_job job;
    pthread_t thread;
    int thread_started;
    edt_control ctl;
    edt_beats beats;
    edt_members m;
    edt_progress pr;
    edt_recovery rc;
    int commit_next;          /* the next plan applies the last step */
    double step_ms;           /* a step's time, measured; 0: not yet */
    round_profile prof;
    uint32_t round;
    char load_path[PATH_MAX]; /* checkpoint the root loads at the next join */
    /* The job's mean metrics of the last round, which the next plan hands
     * to the adapters (their own loggers: WMLA's driver callback); its
     * metrics are job_metrics_doc, owned here. */
    msg_job_metrics job_metrics;
    cJSON *job_metrics_doc;
    FILE *driver_out;
    logger_set *driver_loggers;
    char loggers_for_workers[8192];
};

/* coordinator.c */
void train_driver_say(edt_coordinator *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int train_stop_asked(edt_coordinator *c);
uint32_t train_current_target(edt_coordinator *c);
/* The target and, when the scheduler named them, the granted devices. */
uint32_t train_current_grant(edt_coordinator *c, int32_t *granted, uint32_t *ngranted);
/* Publishes the devices worker processes are on (edt_devices_held); call
 * whenever a slot's device or process changes. */
void train_publish_held(edt_coordinator *c);

/* members.c */
int train_is_gpu_job(const edt_coordinator *c);
int train_device_in(int32_t device, const int32_t *list, uint32_t n);
uint32_t train_count_in(edt_coordinator *c, slot_state st);
/* Forgets a worker that failed or hung, killing it if it still runs. */
void train_drop_slot(edt_coordinator *c, uint32_t i, const char *why);
/* The same for a worker that stopped answering (no heartbeat): on a Slurm
 * node, the node may be lost, and is reported so (train_node_worker_lost). */
void train_drop_silent_slot(edt_coordinator *c, uint32_t i, const char *why);
/* A round went well: the deaths counted so far were not in a row. */
void train_note_progress(edt_coordinator *c);
/* Tells a worker to exit; it is LEAVING from now on. */
void train_send_exit(edt_coordinator *c, uint32_t i, const char *reason, int code);
/* Reaps workers that ended. Returns how many members were lost. */
int train_reap(edt_coordinator *c);
/* members_nodes.c: workers on Slurm nodes (c->m.net) */
struct spawn_spec;
struct job_sandbox_job;
/* Starts slot's worker (argv, envp) on `device`'s node through srun as the
 * exec's account, confined there by `box`'s rules; the node's name into
 * node. */
loom_error *train_spawn_on_node(edt_coordinator *c, uint32_t slot, int32_t device, char **argv,
                                char **envp, const struct job_sandbox_job *box,
                                struct spawn_spec *spec, pid_t *pid, char *node, size_t len);
/* A node worker that went silent (no heartbeat: a node down or cut off):
 * its node is reported lost (edt_job.node_lost) and its Slurm job
 * cancelled. */
void train_node_worker_lost(edt_coordinator *c, uint32_t slot, const char *why);
/* A node worker ended with `status`: a node that cannot reach the exec's
 * folder is reported lost. */
void train_node_worker_exited(edt_coordinator *c, uint32_t slot, int status);
/* Where slot's worker listens for its ring neighbours: the address its
 * control connection came `from` (as accepted: under TLS the descriptor is
 * the link's socket pair) and the port its hello gave. */
loom_error *train_net_peer_of(edt_coordinator *c, uint32_t slot, const struct sockaddr_storage *from,
                              uint32_t port);
/* The generation's ranks (slots in rank order) with their addresses, for
 * the join every member is sent. */
void train_net_generation(edt_coordinator *c, const uint32_t *slots, uint32_t n);
/* coordinator_heartbeat.c */
/* Reads what idle workers sent (heartbeats) and drops live workers not
 * heard from for LOOM_HEARTBEAT_TIMEOUT_MS. Call it in every wait while
 * workers run. Returns how many members were lost. */
int train_keep_alive(edt_coordinator *c);
/* A message from slot i's worker was read: it lives. */
void train_heard(edt_coordinator *c, uint32_t i);
/* The thread that sends every linked worker a heartbeat (its lock is
 * made by edt_start, before). */
loom_error *train_beats_start(edt_coordinator *c);
void train_beats_stop(edt_coordinator *c);
/* Every message to slot i's worker goes this way; after a plan or work
 * its answer is awaited. */
loom_error *train_slot_send(edt_coordinator *c, uint32_t i, const msg *m, const void *blob,
                            size_t len);
/* Slot i's worker is linked by fd (admitted) or, with -1, no longer. */
void train_slot_link(edt_coordinator *c, uint32_t i, int fd);

/* Takes new connections and their hellos (waiting at most wait_ms). */
void train_accept_hellos(edt_coordinator *c, int wait_ms);
/* Starts workers until members + starting ones reach `want`. */
void train_start_workers(edt_coordinator *c, uint32_t want, const int32_t *granted, uint32_t ngranted);
/* Workers on devices the scheduler took back leave. Returns how many
 * members left. */
uint32_t train_release_revoked(edt_coordinator *c, const int32_t *granted, uint32_t ngranted);
/* A worker becoming a member; on CPU it now counts against a granted slot. */
void train_make_member(edt_coordinator *c, uint32_t i, const int32_t *granted, uint32_t ngranted);
/* Synchronous membership at a step boundary: 1 when a new generation was
 * formed (*root: the rank to pull the state from, -1: none), 0 when the
 * members stay, an error when none are left or they keep dying
 * (LOOM_E_LIMIT) . */
loom_error *train_plan_membership(edt_coordinator *c, int force_new, int *join, int *root);
loom_error *train_wait_for_first_workers(edt_coordinator *c);
/* Tells every worker to exit and waits (then kills) until they are gone. */
void train_finish_workers(edt_coordinator *c, const char *reason);

/* How a job ended; anything but FINISHED comes with an error. */
typedef enum edt_end { EDT_END_ERROR = 0, EDT_END_KILLED, EDT_END_FINISHED } edt_end;

/* sync_round.c: the synchronous loop. */
edt_end train_run_sync(edt_coordinator *c, loom_error **err);
/* param_server.c: the ASYNC loop. */
edt_end train_run_async(edt_coordinator *c, loom_error **err);

/* progress.c */
/* What edt_describe answers, from where training stands; `ended`: the
 * coordinator is done (finished or not). */
void train_update_snapshot(edt_coordinator *c, int ended);
/* The epoch clock starts at its first step. */
void train_start_epoch_clock(edt_coordinator *c);
/* Adds a step's mean training metrics over n samples to the epoch's. */
void train_add_metrics(edt_coordinator *c, const cJSON *train, uint64_t n);
/* An epoch's last step committed: record it, then queue validation and a
 * checkpoint as the settings ask. */
void train_end_epoch(edt_coordinator *c);
/* The val_dict_list.json now in the result directory is the trainer's own
 * (a resumed job's, read back). */
void train_note_val_list_file(edt_coordinator *c);
/* Records validation metrics over n test samples (val_dict_list.json,
 * loggers, the snapshot); takes `metrics` over. */
void train_record_validation(edt_coordinator *c, cJSON *metrics, uint64_t n);
/* Keeps the job's mean metrics of a round for the next plan (taking
 * `metrics` over); the last kept, if any, are dropped. */
void train_keep_job_metrics(edt_coordinator *c, int32_t split, cJSON *metrics, uint32_t epoch);
/* A checkpoint was written: says so, and keeps only the configured number
 * of them (and the best). */
void checkpoint_saved(edt_coordinator *c, const char *path);
/* Copies the spec next to the final model. */
void train_save_model_spec(edt_coordinator *c);
void progress_mark(const edt_coordinator *c, edt_progress_mark *m);
/* Back to m: later epochs are forgotten and trained again; validations,
 * checkpoints and the driver loggers' epoch lines already given are not
 * repeated. */
void progress_rewind(edt_coordinator *c, const edt_progress_mark *m);

/* recovery.c */
/* The starting point (the initial weights or the resumed checkpoint);
 * removes copies an earlier run of the job left. */
loom_error *recovery_begin(edt_coordinator *c);
/* Whether this boundary should copy the state: an epoch ended since the
 * last copy, or the interval passed (at least 64 times the copy's cost,
 * so keeping it costs under 3 %). The file to write into path. */
int recovery_due(edt_coordinator *c, char *path, size_t pathlen);
/* The copy in path is whole and holds the state as training stands now. */
void recovery_saved(edt_coordinator *c, const char *path, int64_t round_ms);
/* The round that was to make a copy failed: the last copy stays, and the
 * next try waits for the interval (a full disk must not halve the rate). */
void recovery_not_saved(edt_coordinator *c);
/* Every worker holding the state was lost: training goes back to the last
 * copy, which the next root loads; its samples are trained again. */
loom_error *recovery_rewind(edt_coordinator *c);
void recovery_end(edt_coordinator *c);

#endif
