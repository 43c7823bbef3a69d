/*
 * train/protocol.h - the control channel between the trainer's coordinator
 * and its workers: JSON messages, each preceded by its length (4 bytes,
 * little-endian), over the worker link: a Unix stream socket in the abstract
 * namespace on one machine, or TCP (train_link_parse). Data
 * (gradients, weights) never goes this way in synchronous training; it goes
 * through the collectives. In ASYNC mode the weights follow a WORK message
 * and the gradients follow its REPLY as raw bytes (the "blob").
 *
 * The schema is declared here once: every message names its kind in "t",
 * and train_msg_encode/train_msg_decode (protocol_codec.c), which train_msg_send/train_msg_recv
 * call, are the only places that turn them into JSON and back. A kind or a
 * field this side does not know is refused with its name, so the two sides
 * can never silently disagree.
 *
 *   HELLO  worker -> coordinator, once: its slot and what it loaded.
 *   PLAN   coordinator -> member: one synchronous round (commit the last
 *          step or not; a generation to join; one action).
 *   WORK   coordinator -> worker, ASYNC: a batch; the weights follow.
 *   EXIT   coordinator -> worker: leave now, with a reason and exit code.
 *   REPLY  worker -> member's answer to a PLAN or WORK (after WORK the
 *          gradients follow).
 *   HEARTBEAT  either way, every LOOM_HEARTBEAT_INTERVAL_MS: a worker sends
 *          one from a thread of its own (a step may last longer than the
 *          timeout), the coordinator to each worker it is not waiting for.
 *          A side that hears nothing from the other for
 *          LOOM_HEARTBEAT_TIMEOUT_MS takes it as lost: the coordinator drops
 *          the worker as it drops a dead one, the worker exits.
 *
 * Before the hello, a connection is authenticated (protocol_auth.c): the
 * coordinator sends a fresh nonce of TRAIN_NONCE_BYTES; the worker answers
 * with its slot (4 bytes, little-endian) and HMAC-SHA256(secret, nonce ||
 * slot), the secret being the exec's TRAIN_SECRET_BYTES random bytes, which
 * the worker got in its environment (TRAIN_SECRET_ENV) and which never
 * crosses the wire. A wrong or late answer closes the connection before any
 * message is read.
 */
#ifndef LOOM_TRAIN_PROTOCOL_H
#define LOOM_TRAIN_PROTOCOL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define MSG_MAX_BYTES (64u << 20)
/* The most ranks a generation has (EDT_MAX_WORKERS). */
#define MSG_MAX_RANKS 1024
/* A GPU generation's unique id, in hexadecimal (COMM_NCCL_ID_BYTES * 2). */
#define MSG_NCCL_ID_HEX 256

typedef enum msg_kind {
    MSG_HELLO = 1,
    MSG_PLAN,
    MSG_WORK,
    MSG_EXIT,
    MSG_REPLY,
    MSG_HEARTBEAT,
} msg_kind;

#define LOOM_HEARTBEAT_INTERVAL_MS 500
#define LOOM_HEARTBEAT_TIMEOUT_MS 3000

typedef enum plan_action {
    PLAN_STEP = 1,   /* forward/backward the batch, all-reduce the gradients */
    PLAN_VALIDATE,   /* evaluate test samples [begin, end) */
    PLAN_CHECKPOINT, /* rank 0 saves the state to `path` with `meta` */
    PLAN_FINISH,     /* rank 0 saves the final model to `path` */
} plan_action;

/* "hello", "plan", ... / "step", "validate", ... (NULL for no such value). */
const char *train_msg_kind_name(msg_kind kind);
const char *train_plan_action_name(plan_action action);

typedef struct msg_hello {
    uint32_t slot;
    int64_t pid;
    uint64_t params; /* float32 parameters in the model */
    uint64_t ntrain, ntest;
    /* A worker whose collectives go over TCP (on a Slurm node): the port
     * it listens on for its ring neighbours (its address is the one its
     * control connection comes from); 0 on the shared segment. */
    uint32_t net_port;
} msg_hello;

/* A step's samples on one worker, in micro-batches: sizes[k] samples of
 * `samples` (in order) each, its gradient scaled by scales[k]. Encoding
 * reads the arrays; decoding allocates them (train_msg_free releases them). */
typedef struct msg_batch {
    uint64_t *samples;
    uint32_t *sizes;
    double *scales;
    uint32_t count; /* micro-batches */
    /* A plan's several steps (a round of a stable generation): step k is
     * the next step_mbs[k] micro-batches (0 is fine: a worker with no
     * samples in that step still joins its all-reduce). nsteps 0 or 1:
     * one step of every micro-batch. */
    uint32_t *step_mbs;
    uint32_t nsteps;
} msg_batch;

/* The most steps one plan carries (EDT_STEPS_PER_ROUND). */
#define MSG_MAX_STEPS 64

/* A member reached over TCP (msg_join.net). */
#define MSG_NET_ADDRESS_MAX 45 /* INET6_ADDRSTRLEN - 1 */
typedef struct msg_net_peer {
    uint32_t slot;
    char address[MSG_NET_ADDRESS_MAX + 1];
    uint32_t port;
} msg_net_peer;

/* A new generation to join, and where the state comes from. */
typedef struct msg_join {
    uint32_t generation;
    int32_t root;        /* rank whose state everyone pulls; -1: none */
    uint32_t timeout_ms;
    /* GPU only: shrink the communicator, excluding these ranks of the last
     * generation, or (nccl_id non-empty) build a new one. */
    int shrink;
    uint32_t nexclude;
    uint32_t exclude[MSG_MAX_RANKS];
    char nccl_id[MSG_NCCL_ID_HEX + 1];
    /* Members over TCP: each rank's address and port, in rank order, and
     * each rank's slot (a member finds its rank by its slot). Decoded:
     * malloc'd, freed by train_msg_free; encoded: the caller's. */
    uint32_t nnet;
    msg_net_peer *net;
} msg_join;

/* The job's mean metrics (over every worker's samples) the coordinator
 * recorded in the round before, for adapters that log them themselves
 * (loom_framework_factory.job_metrics). */
typedef struct msg_job_metrics {
    int present;
    int32_t split;           /* loom_split: a training round, or a validation */
    uint32_t epoch, workers; /* the epoch it belongs to; members then */
    uint64_t iteration;      /* global optimizer steps done after it */
    const cJSON *metrics;    /* name -> number */
} msg_job_metrics;

typedef struct msg_plan {
    uint32_t round;
    int commit; /* apply the step the last round reduced */
    uint32_t epoch, epochs, workers, timeout_ms;
    uint64_t iteration, steps_per_epoch;
    int has_join;
    msg_join join;
    const char *load; /* with a join: a checkpoint the root loads first */
    plan_action action;
    msg_batch batch;      /* STEP */
    uint64_t begin, end;  /* VALIDATE */
    const char *path;     /* CHECKPOINT, FINISH: the saving rank only */
    const cJSON *meta;    /* CHECKPOINT: string/number metadata */
    msg_job_metrics job_metrics;
} msg_plan;

typedef struct msg_work {
    uint64_t version; /* of the weights that follow */
    uint32_t epoch, workers;
    uint64_t iteration;
    msg_batch batch;
} msg_work;

typedef struct msg_exit {
    const char *reason;
    int32_t code; /* the worker's exit status */
} msg_exit;

typedef struct msg_reply {
    uint64_t round; /* the plan's round, or the work's version */
    int ok;
    const char *error;  /* when not ok */
    int pull_failed;    /* the join's pull of the state failed */
    uint64_t count;     /* samples the metrics cover */
    /* STEP: the plan's steps whose all-reduce completed here. All of them
     * when ok (the last waits for the next plan's commit, the others are
     * applied); after a failure, the steps applied before it. */
    uint32_t steps;
    const cJSON *train; /* STEP, WORK: mean training metrics (name -> number) */
    const cJSON *eval;  /* VALIDATE: mean test metrics */
} msg_reply;

typedef struct msg {
    msg_kind kind;
    union {
        msg_hello hello;
        msg_plan plan;
        msg_work work;
        msg_exit exit;
        msg_reply reply;
    } u;
    uint64_t blob; /* bytes that follow the message (decoded only) */
    cJSON *doc;    /* owns the decoded strings and metrics */
} msg;

/* How workers reach their coordinator: "unix" (an abstract socket, whose
 * peers the kernel names: one machine), "tcp" (every address) or
 * "tcp:ADDR" (an IPv4 or IPv6 address or a host name to bind; a port of
 * the system's choosing); "tls" and "tls:ADDR" are the same in TLS. */
#define TRAIN_LINK_ADDR_MAX 255
typedef struct train_link {
    int tcp;
    int tls; /* "tls", "tls:ADDR": TCP in TLS keyed by the exec's secret (link_tls.h) */
    char addr[TRAIN_LINK_ADDR_MAX + 1]; /* tcp: the address to bind; "": any */
} train_link;
/* NULL or "" is unix. LOOM_E_INVALID naming what was expected. */
loom_error *train_link_parse(const char *text, train_link *out);
/* Whether a TCP link listens on every address ("tcp", "tcp:0.0.0.0",
 * "tcp::"): its workers are then told loopback, this machine's. */
int train_link_on_any_address(const train_link *link);

/* Listens on abstract socket `name`; the fd in *fd. */
loom_error *train_msg_listen(const char *name, int *fd);
/* Listens on TCP at link->addr, a port the system picks; *control is what a
 * worker's --control names to reach it ("tcp:HOST:PORT", "tls:..." for a
 * TLS link, train_tls_wrap on both ends; HOST is the
 * loopback address when bound to every address, on one machine). */
loom_error *train_msg_listen_tcp(const train_link *link, int *fd, char *control, size_t len);
/* Connects to `control`: "tcp:HOST:PORT" ("[V6]:PORT" too), else an
 * abstract socket's name; the fd in *fd. "tls:" is refused: connect its
 * HOST:PORT with train_msg_connect_tcp, then train_tls_wrap. */
loom_error *train_msg_connect(const char *control, int *fd);
/* A connection the coordinator accepted, made ready: a send that makes no
 * progress for LOOM_HEARTBEAT_TIMEOUT_MS fails (the worker is lost by then;
 * without it, weights sent to a stopped worker would hold the coordinator
 * and its heartbeats for good); over TCP, Nagle off for small messages.
 * A worker's sends stay unbounded: in ASYNC its gradient may wait for a
 * coordinator busy for seconds. */
void train_link_ready(int fd);
/* "HOST:PORT" or "[V6]:PORT" over TCP (protocol_link.c). */
loom_error *train_msg_connect_tcp(const char *hostport, int *fd);

/* ---- authentication (protocol_auth.c) ---- */
#define TRAIN_SECRET_BYTES 32
#define TRAIN_NONCE_BYTES 32
#define TRAIN_MAC_BYTES 32
#define TRAIN_SECRET_ENV "LOOM_WORKER_SECRET"
/* How long a new connection has to answer the nonce: short, so no peer
 * holds the coordinator (and its workers' heartbeats) up. */
#define TRAIN_AUTH_TIMEOUT_MS 1000

/* A fresh random secret (getrandom). */
loom_error *train_secret_new(uint8_t secret[TRAIN_SECRET_BYTES]);
/* HMAC-SHA256(secret, nonce || slot as 4 bytes little-endian). */
void train_auth_mac(const uint8_t secret[TRAIN_SECRET_BYTES], const uint8_t nonce[TRAIN_NONCE_BYTES],
                    uint32_t slot, uint8_t mac[TRAIN_MAC_BYTES]);
/* Coordinator: sends a fresh nonce on fd, kept in `nonce`. */
loom_error *train_auth_challenge(int fd, uint8_t nonce[TRAIN_NONCE_BYTES]);
/* Coordinator: reads the answer to `nonce` before deadline_ms; the slot it
 * names in *slot when its MAC is right (compared in constant time), else
 * LOOM_E_FORBIDDEN (LOOM_E_DEADLINE, LOOM_E_UNAVAILABLE: no whole answer). */
loom_error *train_auth_verify(int fd, const uint8_t secret[TRAIN_SECRET_BYTES],
                              const uint8_t nonce[TRAIN_NONCE_BYTES], int64_t deadline_ms,
                              uint32_t *slot);
/* Worker: reads the nonce before deadline_ms and answers it for `slot`. */
loom_error *train_auth_answer(int fd, const uint8_t secret[TRAIN_SECRET_BYTES], uint32_t slot,
                              int64_t deadline_ms);
/* Worker: the secret from TRAIN_SECRET_ENV, which is then wiped from the
 * process's memory (so /proc/PID/environ no longer shows it) and unset,
 * before the framework and user code run. */
loom_error *train_secret_from_env(uint8_t secret[TRAIN_SECRET_BYTES]);
/* "LOOM_WORKER_SECRET=<hex>" for a worker's environment. */
void train_secret_env(const uint8_t secret[TRAIN_SECRET_BYTES], char *out, size_t len);

/* Exactly n bytes before deadline_ms (0: forever); LOOM_E_DEADLINE,
 * LOOM_E_UNAVAILABLE when closed. */
loom_error *train_msg_read_exact(int fd, void *buf, size_t n, int64_t deadline_ms);
/* All n bytes (MSG_NOSIGNAL); -1 with errno when the peer is gone. */
int train_msg_write_all(int fd, const void *buf, size_t n);

/* Encodes and sends one message, then `len` bytes of `blob` after it (0:
 * none). LOOM_E_UNAVAILABLE when the peer is gone. */
loom_error *train_msg_send(int fd, const msg *m, const void *blob, size_t len);

/* Receives and decodes one message, waiting at most until deadline_ms
 * (time_mono_ms clock; 0 = forever). Codes: LOOM_E_UNAVAILABLE (the peer
 * closed the connection), LOOM_E_DEADLINE, LOOM_E_INVALID (malformed, an
 * unknown kind or a missing field, named). Free *out with train_msg_free. */
loom_error *train_msg_recv(int fd, int64_t deadline_ms, msg *out);

/* Reads the bytes a received message announced into buf (exactly `len`;
 * LOOM_E_INVALID when it announced another count). */
loom_error *train_msg_recv_blob(int fd, const msg *m, void *buf, size_t len, int64_t deadline_ms);

/* Frees a message train_msg_recv or train_msg_decode filled. */
void train_msg_free(msg *m);

/* The encoding and decoding alone (no socket): the wire JSON of `m`, and
 * back. train_msg_decode takes `doc` over (on failure too, freeing it and
 * anything it allocated). train_msg_free is for decoded messages only: one built
 * to send keeps the caller's own arrays and strings. */
cJSON *train_msg_encode(const msg *m);
loom_error *train_msg_decode(cJSON *doc, msg *out);

#endif
