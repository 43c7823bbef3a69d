/* sched/node_quarantine.c - see node_quarantine.h. */
#include "sched/node_quarantine.h"

#include <stdio.h>
#include <string.h>

#include "util/log.h"

static void drop(node_quarantine *q, size_t i)
{
    log_info("scheduler: node %s is tried again (it was kept out: %s)", q->entries[i].node,
             q->entries[i].reason);
    q->entries[i] = q->entries[--q->n];
}

void node_quarantine_add(node_quarantine *q, const char *node, const char *reason,
                         int64_t now_ms, int64_t ms)
{
    size_t i = 0;
    while (i < q->n && strcmp(q->entries[i].node, node) != 0)
        i++;
    if (i == q->n) {
        if (q->n == NODE_QUARANTINE_MAX) { /* full: the one ending first goes */
            size_t first = 0;
            for (size_t k = 1; k < q->n; k++)
                if (q->entries[k].until_ms < q->entries[first].until_ms)
                    first = k;
            q->entries[first] = q->entries[--q->n];
        }
        i = q->n++;
        snprintf(q->entries[i].node, sizeof q->entries[i].node, "%s", node);
        q->entries[i].until_ms = 0;
    }
    node_quarantine_entry *e = &q->entries[i];
    if (now_ms + ms > e->until_ms)
        e->until_ms = now_ms + ms;
    snprintf(e->reason, sizeof e->reason, "%s", reason ? reason : "");
    log_warn("scheduler: node %s is kept out of the inventory for %lld s: %s", node,
             (long long)((e->until_ms - now_ms + 999) / 1000), e->reason);
}

size_t node_quarantine_expire(node_quarantine *q, int64_t now_ms)
{
    for (size_t i = q->n; i-- > 0;)
        if (q->entries[i].until_ms <= now_ms)
            drop(q, i);
    return q->n;
}

bool node_quarantine_holds(node_quarantine *q, const char *node, int64_t now_ms)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->entries[i].node, node) == 0) {
            if (q->entries[i].until_ms > now_ms)
                return true;
            drop(q, i);
            return false;
        }
    return false;
}
