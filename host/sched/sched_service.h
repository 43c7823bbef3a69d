/*
 * sched/sched_service.h - the host's scheduler: the policy core (sched.h)
 * behind one lock, with its resource plans kept in the store, this host's
 * devices as inventory, and decisions handed to whoever carries them out
 * (the exec service starts, grows and shrinks jobs).
 */
#ifndef LOOM_SCHED_SCHED_SERVICE_H
#define LOOM_SCHED_SCHED_SERVICE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "sched/sched.h"
#include "store/store.h"

typedef struct sched_service sched_service;

typedef struct sched_service_options {
    int cpu_slots;     /* 0: the number of cores */
    double hysteresis; /* seconds */
} sched_service_options;

/* Builds the inventory and loads the stored plans. */
sched_service *sched_service_create(store *st, const sched_service_options *opt, char *err,
                                    size_t errlen);
void sched_service_destroy(sched_service *ss);

/* Plans: 0, or an HTTP status with err naming the plan and field. The
 * stored copy is written before the answer. */
int sched_service_plan_put(sched_service *ss, const cJSON *body, int create, char *err,
                           size_t errlen);
int sched_service_plan_remove(sched_service *ss, const char *path, char *err, size_t errlen);
cJSON *sched_service_plans(sched_service *ss);
cJSON *sched_service_plan(sched_service *ss, const char *path);
/* Every device and who holds it. */
cJSON *sched_service_slots(sched_service *ss);

/* Jobs. Submitting to a missing per-user plan ("/NAME" with no such plan)
 * creates it with weight 1. 0, or an HTTP status with err. */
int sched_service_submit(sched_service *ss, const sched_job_spec *spec, char *err, size_t errlen);
void sched_service_end(sched_service *ss, const char *id);
int sched_service_set_range(sched_service *ss, const char *id, int min, int max, char *err,
                            size_t errlen);
/* The devices a job holds: returns the count and copies up to `cap` slots
 * into out and, when `index` is set, each device's own index (the CUDA
 * ordinal for CUDA_VISIBLE_DEVICES); when `kind` is set, the devices'
 * loom_device_kind (the inventory is all GPUs or all CPU slots); -1 when
 * the job is unknown. */
int sched_service_job_devices(sched_service *ss, const char *id, int32_t *out, int cap,
                              int32_t *index, int32_t *kind);

/* One decision to carry out. */
typedef struct sched_action {
    char job_id[64];
    int old_count, new_count;
} sched_action;

/* Runs the policy now; copies up to `cap` decisions into out and returns
 * how many there were. */
size_t sched_service_decide(sched_service *ss, sched_action *out, size_t cap);
/* Why a pending job waits, in words ("waiting for 3 devices, 1 free"), as
 * of the last decision. False, with buf empty, when the job is unknown or
 * not waiting. */
bool sched_service_pending_reason(sched_service *ss, const char *id, char *buf, size_t len);
/* Devices in the inventory. */
size_t sched_service_device_count(sched_service *ss);

#endif
