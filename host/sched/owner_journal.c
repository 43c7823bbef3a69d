/* sched/owner_journal.c - see owner_journal.h. */
#include "sched/owner_journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool owner_journal_init(owner_journal *j, size_t capacity)
{
    memset(j, 0, sizeof *j);
    j->ring = calloc(capacity ? capacity : 1, sizeof *j->ring);
    j->cap = capacity ? capacity : 1;
    return j->ring != NULL;
}

void owner_journal_free(owner_journal *j)
{
    free(j->noted);
    free(j->ring);
    memset(j, 0, sizeof *j);
}

static bool grow(owner_journal *j, size_t n)
{
    if (n <= j->nslots)
        return true;
    char(*grown)[OWNER_JOURNAL_NAME_MAX] = realloc(j->noted, n * sizeof *j->noted);
    if (!grown)
        return false;
    /* never noted: the first note of any holder, free included, is a change */
    for (size_t i = j->nslots; i < n; i++)
        snprintf(grown[i], sizeof grown[i], "\x01");
    j->noted = grown;
    j->nslots = n;
    return true;
}

bool owner_journal_unchanged(const owner_journal *j, int32_t slot, const char *holder)
{
    return slot >= 0 && (size_t)slot < j->nslots &&
           !strncmp(j->noted[slot], holder ? holder : "", sizeof j->noted[slot] - 1);
}

bool owner_journal_note(owner_journal *j, int32_t slot, const char *holder, const char *user,
                        int32_t kind, int64_t t_ms)
{
    if (slot < 0 || !grow(j, (size_t)slot + 1))
        return false;
    holder = holder ? holder : "";
    if (owner_journal_unchanged(j, slot, holder))
        return true;
    snprintf(j->noted[slot], sizeof j->noted[slot], "%s", holder);
    if (j->count == j->cap) { /* full: the oldest goes */
        j->first = (j->first + 1) % j->cap;
        j->count--;
        j->dropped++;
    }
    owner_change *c = &j->ring[(j->first + j->count++) % j->cap];
    *c = (owner_change){.t_ms = t_ms, .slot = slot, .kind = holder[0] ? kind : 0};
    snprintf(c->holder, sizeof c->holder, "%s", holder);
    snprintf(c->user, sizeof c->user, "%s", holder[0] && user ? user : "");
    return true;
}

void owner_journal_remove(owner_journal *j, int32_t slot)
{
    if (slot < 0 || (size_t)slot >= j->nslots)
        return;
    memmove(&j->noted[slot], &j->noted[slot + 1],
            (j->nslots - (size_t)slot - 1) * sizeof *j->noted);
    j->nslots--;
}

size_t owner_journal_read(owner_journal *j, owner_change *out, size_t cap, uint64_t *dropped)
{
    size_t n = j->count < cap ? j->count : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = j->ring[(j->first + i) % j->cap];
    j->first = (j->first + n) % j->cap;
    j->count -= n;
    if (dropped)
        *dropped = j->dropped;
    j->dropped = 0;
    return n;
}
