/* sched/slurm_nodes.c - see slurm_nodes.h. */
#include "sched/slurm_nodes.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <loom/abi.h>

bool slurm_node_usable(uint32_t state, const char **why)
{
    static const struct {
        uint32_t flag;
        const char *name;
    } blocking[] = {
        {SLURM_NODE_FLAG_DRAIN, "drain"},
        {SLURM_NODE_FLAG_FAIL, "fail"},
        {SLURM_NODE_FLAG_NO_RESPOND, "not responding"},
        {SLURM_NODE_FLAG_MAINT, "maint"},
        {SLURM_NODE_FLAG_POWERED_DOWN, "powered down"},
        {SLURM_NODE_FLAG_POWERING_DOWN, "powering down"},
        {SLURM_NODE_FLAG_POWERING_UP, "powering up"},
        {SLURM_NODE_FLAG_REBOOT_ISSUED, "rebooting"},
        {SLURM_NODE_FLAG_INVALID_REG, "invalid registration"},
    };
    const char *dummy;
    if (!why)
        why = &dummy;
    switch (state & SLURM_NODE_BASE) {
    case SLURM_NODE_IDLE:
    case SLURM_NODE_ALLOCATED:
    case SLURM_NODE_MIXED:
        break;
    case SLURM_NODE_DOWN:
        *why = "down";
        return false;
    case SLURM_NODE_FUTURE:
        *why = "future";
        return false;
    case SLURM_NODE_ERROR:
        *why = "error";
        return false;
    default:
        *why = "unknown";
        return false;
    }
    for (size_t i = 0; i < sizeof blocking / sizeof *blocking; i++)
        if (state & blocking[i].flag) {
            *why = blocking[i].name;
            return false;
        }
    *why = "";
    return true;
}

/* One gres entry [start, end): "gpu", "gpu:N", "gpu:TYPE:N", each maybe
 * followed by "(S:...)". Adds its GPUs to *total. */
static loom_error *gres_entry(const char *start, const char *end, int64_t *total)
{
    const char *paren = memchr(start, '(', (size_t)(end - start));
    if (paren)
        end = paren;
    size_t len = (size_t)(end - start);
    if (len < 3 || strncmp(start, "gpu", 3) != 0 || (len > 3 && start[3] != ':'))
        return NULL; /* another kind of gres (mps, shard, a license) */
    if (len == 3) {
        (*total)++;
        return NULL;
    }
    /* The count is the last field ("gpu:TYPE" alone is one GPU). */
    const char *field = end;
    while (field[-1] != ':')
        field--;
    bool typed = memchr(start + 4, ':', (size_t)(end - start - 4)) != NULL;
    int64_t n = 0;
    const char *p = field;
    for (; p < end && isdigit((unsigned char)*p) && n <= SLURM_NODE_GPUS_MAX; p++)
        n = n * 10 + (*p - '0');
    if (p == field && !typed) {
        (*total)++;
        return NULL;
    }
    if (p == field || (p < end && n <= SLURM_NODE_GPUS_MAX))
        return loom_err(LOOM_E_INVALID, "gres \"%.*s\": expected gpu[:TYPE][:COUNT]", (int)len,
                        start);
    *total += n;
    if (*total > SLURM_NODE_GPUS_MAX)
        return loom_err(LOOM_E_LIMIT, "gres \"%.*s\": more than %d GPUs on one node", (int)len,
                        start, SLURM_NODE_GPUS_MAX);
    return NULL;
}

loom_error *slurm_gres_gpus(const char *gres, int32_t *out)
{
    *out = 0;
    int64_t total = 0;
    const char *p = gres ? gres : "";
    while (*p) {
        /* An entry ends at a comma outside parentheses ("(S:0,1)"). */
        const char *e = p;
        int depth = 0;
        for (; *e && (*e != ',' || depth > 0); e++)
            depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
        loom_error *err = gres_entry(p, e, &total);
        if (err)
            return err;
        p = *e ? e + 1 : e;
    }
    *out = (int32_t)total;
    return NULL;
}

loom_error *slurm_node_devices(const slurm_node_desc *node, uint32_t cpus_per_slot,
                               slurm_device *out, size_t cap, size_t *count)
{
    *count = 0;
    const char *name = node->name ? node->name : "";
    if (!name[0] || strlen(name) >= SLURM_NODE_NAME_MAX)
        return loom_err(LOOM_E_LIMIT, "Slurm node \"%.80s\": a name of 1 to %d bytes expected",
                        name, SLURM_NODE_NAME_MAX - 1);
    int32_t gpus = 0;
    loom_error *e = slurm_gres_gpus(node->gres, &gpus);
    if (e)
        return loom_err_wrap(e, "Slurm node %s", name);
    uint32_t per = cpus_per_slot ? cpus_per_slot : 1;
    uint32_t n = gpus > 0 ? (uint32_t)gpus : node->cpus / per;
    if (n > SLURM_NODE_SLOTS_MAX)
        return loom_err(LOOM_E_LIMIT,
                        "Slurm node %s: %u CPU slots, more than %d (raise "
                        "--slurm-cpus-per-slot)",
                        name, n, SLURM_NODE_SLOTS_MAX);
    for (uint32_t i = 0; i < n && i < cap; i++) {
        snprintf(out[i].node, sizeof out[i].node, "%s", name);
        out[i].kind = gpus > 0 ? LOOM_DEVICE_CUDA : LOOM_DEVICE_CPU;
        out[i].index = (int32_t)i;
    }
    *count = n;
    return NULL;
}
