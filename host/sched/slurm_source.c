/* sched/slurm_source.c - see slurm_source.h. */
#include "sched/slurm_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/slurm_step.h"
#include "util/log.h"

#ifndef LOOM_HAVE_SLURM

bool slurm_source_available(void) { return false; }

loom_error *slurm_source_open(const char *conf, const char *partition, uint32_t cpus_per_slot,
                              slurm_source **out)
{
    (void)conf, (void)cpus_per_slot;
    *out = NULL;
    return loom_err(LOOM_E_UNSUPPORTED,
                    "--slurm %s: this loom was built without libslurm (install libslurm-dev "
                    "and rebuild: scripts/bootstrap)",
                    partition);
}
void slurm_source_close(slurm_source *src) { (void)src; }
const char *slurm_source_partition(const slurm_source *src)
{
    (void)src;
    return "";
}
loom_error *slurm_source_read(slurm_source *src, slurm_device **out, size_t *count)
{
    (void)src;
    *out = NULL;
    *count = 0;
    return loom_err(LOOM_E_UNSUPPORTED, "built without libslurm");
}

#else

#include <errno.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

/* slurm_nodes.h restates Slurm's node states: they must be the same. */
_Static_assert(SLURM_NODE_BASE == NODE_STATE_BASE, "node state base");
_Static_assert(SLURM_NODE_DOWN == (int)NODE_STATE_DOWN && SLURM_NODE_IDLE == (int)NODE_STATE_IDLE &&
                   SLURM_NODE_ALLOCATED == (int)NODE_STATE_ALLOCATED &&
                   SLURM_NODE_MIXED == (int)NODE_STATE_MIXED &&
                   SLURM_NODE_FUTURE == (int)NODE_STATE_FUTURE,
               "node base states");
_Static_assert(SLURM_NODE_FLAG_DRAIN == NODE_STATE_DRAIN &&
                   SLURM_NODE_FLAG_NO_RESPOND == NODE_STATE_NO_RESPOND &&
                   SLURM_NODE_FLAG_FAIL == NODE_STATE_FAIL &&
                   SLURM_NODE_FLAG_MAINT == NODE_STATE_MAINT &&
                   SLURM_NODE_FLAG_POWERED_DOWN == NODE_STATE_POWERED_DOWN &&
                   SLURM_NODE_FLAG_POWERING_DOWN == NODE_STATE_POWERING_DOWN &&
                   SLURM_NODE_FLAG_POWERING_UP == NODE_STATE_POWERING_UP &&
                   SLURM_NODE_FLAG_REBOOT_ISSUED == NODE_STATE_REBOOT_ISSUED &&
                   SLURM_NODE_FLAG_INVALID_REG == NODE_STATE_INVALID_REG,
               "node state flags");

#define SLURM_SOURCE_NODES_MAX 4096 /* nodes of one partition loom follows */

/* What a node was at the last read, to log changes only. */
typedef struct node_seen {
    char name[SLURM_NODE_NAME_MAX];
    bool usable;
} node_seen;

struct slurm_source {
    char partition[128];
    char conf[4096];
    uint32_t cpus_per_slot;
    node_seen *seen;
    size_t nseen;
};

bool slurm_source_available(void) { return true; }

static loom_error *slurm_failure(const slurm_source *src, const char *what)
{
    int e = slurm_get_errno();
    return loom_err(LOOM_E_UNAVAILABLE,
                    "Slurm: %s: %s (is slurmctld running and reachable as %s says? SLURM_CONF "
                    "or --slurm-conf names the configuration)",
                    what, slurm_strerror(e), src->conf);
}

/* The partition's node list (a hostlist expression), or an error naming
 * the partitions there are. */
static loom_error *partition_nodes(const slurm_source *src, char **nodes)
{
    partition_info_msg_t *parts = NULL;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS)
        return slurm_failure(src, "reading the partitions");
    char known[512] = "";
    size_t used = 0;
    *nodes = NULL;
    for (uint32_t i = 0; i < parts->record_count; i++) {
        const partition_info_t *p = &parts->partition_array[i];
        if (p->name && !strcmp(p->name, src->partition)) {
            *nodes = strdup(p->nodes ? p->nodes : "");
            break;
        }
        if (p->name && used < sizeof known) {
            int w = snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", p->name);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    slurm_free_partition_info_msg(parts);
    if (!*nodes)
        return loom_err(LOOM_E_NOT_FOUND, "--slurm %s: no such partition (Slurm has: %s)",
                        src->partition, known[0] ? known : "none");
    return NULL;
}

loom_error *slurm_source_open(const char *conf, const char *partition, uint32_t cpus_per_slot,
                              slurm_source **out)
{
    *out = NULL;
    static bool opened;
    if (opened)
        return loom_err(LOOM_E_CONFLICT, "--slurm: libslurm is already set up in this process");
    const char *path = conf && conf[0] ? conf : getenv("SLURM_CONF");
    if (!path || !path[0])
        path = "/etc/slurm/slurm.conf";
    if (strlen(partition) >= 128 || strlen(path) >= 4096)
        return loom_err(LOOM_E_LIMIT, "--slurm: a partition name under 128 bytes expected");
    /* libslurm is shared with sched/slurm_step (one configuration a process). */
    loom_error *ready = slurm_lib_acquire(path);
    if (ready)
        return loom_err_wrap(ready, "--slurm %s", partition);
    slurm_source *src = calloc(1, sizeof *src);
    if (!src) {
        slurm_lib_release();
        return loom_err(LOOM_E_INTERNAL, "--slurm: out of memory");
    }
    snprintf(src->partition, sizeof src->partition, "%s", partition);
    snprintf(src->conf, sizeof src->conf, "%s", path);
    src->cpus_per_slot = cpus_per_slot;
    opened = true;
    char *nodes = NULL;
    loom_error *e = partition_nodes(src, &nodes);
    free(nodes);
    if (e) {
        slurm_source_close(src);
        return e;
    }
    *out = src;
    return NULL;
}

void slurm_source_close(slurm_source *src)
{
    if (!src)
        return;
    free(src->seen);
    free(src);
    slurm_lib_release();
}

const char *slurm_source_partition(const slurm_source *src) { return src->partition; }

/* Logs a node whose usability changed since the last read (or that is
 * unusable at the first). */
static void note_state(slurm_source *src, const node_info_t *n, bool usable, const char *why)
{
    for (size_t i = 0; i < src->nseen; i++) {
        if (strcmp(src->seen[i].name, n->name))
            continue;
        if (src->seen[i].usable != usable) {
            if (usable)
                log_info("slurm: node %s is usable again: its devices rejoin the inventory",
                         n->name);
            else
                log_warn("slurm: node %s is %s%s%s%s: its devices leave the inventory",
                         n->name, why, n->reason ? " (reason: " : "",
                         n->reason ? n->reason : "", n->reason ? ")" : "");
        }
        src->seen[i].usable = usable;
        return;
    }
    node_seen *s = realloc(src->seen, (src->nseen + 1) * sizeof *s);
    if (!s)
        return;
    src->seen = s;
    snprintf(s[src->nseen].name, sizeof s[src->nseen].name, "%s", n->name);
    s[src->nseen++].usable = usable;
    if (!usable)
        log_warn("slurm: node %s of partition %s is %s: not in the inventory until it is usable",
                 n->name, src->partition, why);
}

/* Appends one node's devices to (*out, *count, *cap). */
static loom_error *append_node(slurm_source *src, const node_info_t *n, slurm_device **out,
                               size_t *count, size_t *cap)
{
    slurm_node_desc d = {.name = n->name, .state = n->node_state, .cpus = n->cpus,
                         .gres = n->gres};
    size_t need = 0;
    loom_error *e = slurm_node_devices(&d, src->cpus_per_slot, NULL, 0, &need);
    if (e)
        return e;
    if (*count + need > *cap) {
        size_t c = (*count + need) * 2;
        slurm_device *grown = realloc(*out, c * sizeof *grown);
        if (!grown)
            return loom_err(LOOM_E_INTERNAL, "Slurm inventory: out of memory");
        *out = grown;
        *cap = c;
    }
    e = slurm_node_devices(&d, src->cpus_per_slot, *out + *count, need, &need);
    if (!e)
        *count += need;
    return e;
}

loom_error *slurm_source_read(slurm_source *src, slurm_device **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    char *nodes = NULL;
    loom_error *e = partition_nodes(src, &nodes);
    if (e)
        return e;
    hostlist_t hl = slurm_hostlist_create(nodes);
    free(nodes);
    node_info_msg_t *info = NULL;
    if (!hl || slurm_load_node(0, &info, SHOW_ALL) != SLURM_SUCCESS) {
        if (hl)
            slurm_hostlist_destroy(hl);
        return slurm_failure(src, "reading the nodes");
    }
    slurm_device *devs = NULL;
    size_t n = 0, cap = 0, members = 0;
    for (uint32_t i = 0; !e && i < info->record_count; i++) {
        const node_info_t *node = &info->node_array[i];
        if (!node->name || slurm_hostlist_find(hl, node->name) < 0)
            continue;
        if (++members > SLURM_SOURCE_NODES_MAX) {
            e = loom_err(LOOM_E_LIMIT, "--slurm %s: more than %d nodes", src->partition,
                         SLURM_SOURCE_NODES_MAX);
            break;
        }
        const char *why = "";
        bool usable = slurm_node_usable(node->node_state, &why);
        note_state(src, node, usable, why);
        if (usable)
            e = append_node(src, node, &devs, &n, &cap);
    }
    slurm_free_node_info_msg(info);
    slurm_hostlist_destroy(hl);
    if (e) {
        free(devs);
        return e;
    }
    *out = devs;
    *count = n;
    return NULL;
}

#endif
