/*
 * sched/slurm_source.h - the devices of a Slurm partition, read through
 * libslurm (slurm_load_partitions, slurm_load_node) and mapped by
 * slurm_nodes.h: every usable node's GPUs or CPU slots. libslurm is
 * optional at build time (CMake finds libslurm-dev); without it, opening a
 * source is refused with a message naming the package.
 */
#ifndef LOOM_SCHED_SLURM_SOURCE_H
#define LOOM_SCHED_SLURM_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/slurm_nodes.h"
#include "util/error.h"

typedef struct slurm_source slurm_source;

/* Whether this build has libslurm. */
bool slurm_source_available(void);

/* Reads Slurm's configuration (`conf`; NULL: SLURM_CONF, else Slurm's
 * default path) and checks that slurmctld answers and has `partition`.
 * Errors name the configuration file, slurmctld or the partition, and
 * what was expected. Once per process: libslurm keeps one configuration. */
loom_error *slurm_source_open(const char *conf, const char *partition, uint32_t cpus_per_slot,
                              slurm_source **out);
void slurm_source_close(slurm_source *src);
const char *slurm_source_partition(const slurm_source *src);

/* The devices of the partition's usable nodes now: a malloc'd array the
 * caller frees. A node whose state changes (usable or not) is logged once
 * per change, with Slurm's reason. */
loom_error *slurm_source_read(slurm_source *src, slurm_device **out, size_t *count);

#endif
