/*
 * train/protocol.h - the control channel between the trainer's coordinator
 * and its workers: JSON messages, each preceded by its length (4 bytes,
 * little-endian), over a Unix stream socket in the abstract namespace. Data
 * (gradients, weights) never goes this way; it goes through the
 * collectives.
 */
#ifndef LOOM_TRAIN_PROTOCOL_H
#define LOOM_TRAIN_PROTOCOL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define MSG_MAX_BYTES (64u << 20)

/* Listens on abstract socket `name`; returns the fd or -1. */
int msg_listen(const char *name, char *err, size_t errlen);
/* Connects to abstract socket `name`; returns the fd or -1. */
int msg_connect(const char *name, char *err, size_t errlen);
/* Sends one message; 0 or -1 (peer gone). */
int msg_send(int fd, const cJSON *msg);
/* Receives one message, waiting at most until deadline_ms (time_mono_ms
 * clock; 0 = forever). NULL with err "closed", "deadline" or the reason. */
cJSON *msg_recv(int fd, int64_t deadline_ms, char *err, size_t errlen);

/* A message with raw bytes after it (gradients, weights): the JSON carries
 * "blob": the byte count. */
int msg_send_blob(int fd, cJSON *msg, const void *blob, size_t len);
/* Reads the bytes a received message announced into buf (exactly `len`).
 * 0, or -1 with err (size mismatch, closed, deadline). */
int msg_recv_blob(int fd, const cJSON *msg, void *buf, size_t len, int64_t deadline_ms,
                  char *err, size_t errlen);

#endif
