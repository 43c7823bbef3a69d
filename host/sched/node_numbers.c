/* sched/node_numbers.c - see node_numbers.h. */
#include "sched/node_numbers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t node_numbers_of(node_numbers *t, const char *node)
{
    if (!node || !node[0])
        return 0;
    for (size_t k = 0; k < t->n; k++)
        if (!strcmp(t->names[k], node))
            return (int32_t)k + 1;
    if (t->n >= NODE_NUMBERS_MAX)
        return -1;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        void *grown = realloc(t->names, cap * sizeof *t->names);
        if (!grown)
            return -1;
        t->names = grown;
        t->cap = cap;
    }
    snprintf(t->names[t->n], sizeof t->names[t->n], "%s", node);
    return (int32_t)++t->n;
}

bool node_numbers_name(const node_numbers *t, int32_t number, char *out, size_t len)
{
    if (number < 0 || (size_t)number > t->n)
        return false;
    snprintf(out, len, "%s", number ? t->names[number - 1] : "");
    return true;
}

void node_numbers_free(node_numbers *t)
{
    free(t->names);
    memset(t, 0, sizeof *t);
}
