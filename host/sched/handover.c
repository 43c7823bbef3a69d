/* sched/handover.c - see handover.h. */
#include "sched/handover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool handover_init(handover *h, size_t n)
{
    h->slots = n ? calloc(n, sizeof *h->slots) : NULL;
    h->n = h->slots ? n : 0;
    return n == 0 || h->slots != NULL;
}

bool handover_resize(handover *h, size_t n)
{
    if (n <= h->n)
        return true;
    handover_slot *grown = realloc(h->slots, n * sizeof *grown);
    if (!grown)
        return false;
    memset(grown + h->n, 0, (n - h->n) * sizeof *grown);
    h->slots = grown;
    h->n = n;
    return true;
}

void handover_remove(handover *h, int32_t slot)
{
    if (slot < 0 || (size_t)slot >= h->n)
        return;
    memmove(&h->slots[slot], &h->slots[slot + 1], (h->n - (size_t)slot - 1) * sizeof *h->slots);
    h->n--;
}

void handover_free(handover *h)
{
    free(h->slots);
    h->slots = NULL;
    h->n = 0;
}

static handover_slot *at(const handover *h, int32_t slot)
{
    return slot >= 0 && (size_t)slot < h->n ? &h->slots[slot] : NULL;
}

void handover_take(handover *h, int32_t slot, const char *job, int64_t now_ms)
{
    handover_slot *s = at(h, slot);
    if (!s)
        return;
    snprintf(s->from, sizeof s->from, "%s", job);
    s->since_ms = now_ms;
}

void handover_keep(handover *h, int32_t slot, const char *job)
{
    handover_slot *s = at(h, slot);
    if (s && !strcmp(s->from, job))
        s->from[0] = '\0';
}

int64_t handover_release(handover *h, int32_t slot, int64_t now_ms, char *from, size_t len)
{
    handover_slot *s = at(h, slot);
    if (!s || !s->from[0])
        return -1;
    if (len)
        snprintf(from, len, "%s", s->from);
    s->from[0] = '\0';
    return now_ms - s->since_ms;
}

const char *handover_draining(const handover *h, int32_t slot)
{
    handover_slot *s = at(h, slot);
    return s && s->from[0] ? s->from : NULL;
}
