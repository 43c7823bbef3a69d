/*
 * train/worker_internal.h - what the worker's loop (worker.c) and its
 * collectives (worker_comm.c) share: the worker's state.
 */
#ifndef LOOM_TRAIN_WORKER_INTERNAL_H
#define LOOM_TRAIN_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "comm.h"
#include "plugin/so_loader.h"
#include "train/grad_overlap_internal.h"
#include "train/logger_set.h"
#include "train/protocol.h"
#include "train/tensor_stage.h"
#include "util/error.h"

typedef struct worker {
    const char *control, *shm, *collectives, *framework, *spec_path, *code_dir, *data_dir, *log_dir;
    const char *exec_id, *loggers_json;
    uint32_t slot, threads, log_every;
    uint32_t epochs, batch_size, effective_batch_size; /* the loggers' on_train_begin */
    uint32_t overlap_reduce; /* EDT_OVERLAP_REDUCE: reduce during backward (CPU) */
    uint32_t in_place_reduce; /* EDT_IN_PLACE_REDUCE: gradients in the segment (CPU) */
    grad_overlap *overlap;   /* its thread, when on */
    uint64_t seed;
    so_plugin *plugin;
    const loom_framework_factory *fw;
    loom_framework_instance *inst;
    loom_tensor_view params, grads;
    loom_tensor_view *views; /* malloc'd, nviews of them */
    int32_t *roles;
    uint32_t nviews;
    tensor_stage stage; /* host copies of views: checkpoints, the final model */
    /* ASYNC on a GPU: host copies of params and grads for the parameter
     * server's messages (NULL when the buffers are host memory). */
    float *params_host, *grads_host;
    const char *device; /* "cpu" or "cuda" (the one CUDA_VISIBLE_DEVICES shows) */
    comm *comm;         /* shm or net: membership, and the collectives on CPU */
    int net;            /* the collectives go over TCP (--collectives net) */
    comm *gpu_comm;     /* nccl on a GPU: the collectives; NULL on CPU */
    int fd;
    uint8_t secret[TRAIN_SECRET_BYTES]; /* the exec's: proves who we are */
    /* The heartbeat thread and the main one both send: one at a time. */
    pthread_mutex_t send_lock;
    pthread_t heartbeat;
    int heartbeat_started;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    int stopping;
    logger_set *loggers;
    char logger_names[200]; /* "worker logger plugin(s) a, b": the marker's text */
    int marker_fd;          /* plugin_marker: which plugin runs now */
    uint64_t steps_done;
    int joined_once;
    int loggers_began; /* on_train_begin was called */
} worker;

/* worker.c: a line on stderr; an error said with what failed (returns 1). */
void train_worker_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int train_worker_fail(loom_error *e, const char *what);

/* worker_comm.c */
/* Attaches the collectives (the shared segment, or a TCP ring member on a
 * Slurm node) and offers the adapter what the host gives beyond the model
 * on CPU: reducing during backward, gradients in the segment. 0, or 1
 * after saying why. */
int train_worker_attach_collectives(worker *w, loom_trainer_config *cfg);
/* The comm a buffer travels on: nccl for device memory, else w->comm. */
comm *train_worker_comm_for(worker *w, const loom_tensor_view *v);
/* Joins a generation and takes the state from its root (after loading
 * load_path there, when set). */
loom_error *train_worker_join_and_pull(worker *w, const msg_join *join, const char *load_path);

#endif
