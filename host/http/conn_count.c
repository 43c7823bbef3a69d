/* http/conn_count.c - see conn_count.h. */
#include "http/conn_count.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct address_count {
    uint32_t ip;
    unsigned count;
} address_count;

struct conn_count {
    pthread_mutex_t lock;
    unsigned max_total, max_per_address;
    unsigned open;
    address_count *per_address; /* one per address with a connection open */
    unsigned naddresses, capacity;
};

conn_count *conn_count_create(unsigned max_total, unsigned max_per_address)
{
    conn_count *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_total = max_total;
    c->max_per_address = max_per_address;
    /* held connections may pass the limit for a moment: room for twice as
     * many addresses as connections */
    c->capacity = 2 * max_total + 1;
    c->per_address = calloc(c->capacity, sizeof *c->per_address);
    if (!c->per_address) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void conn_count_free(conn_count *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->lock);
    free(c->per_address);
    free(c);
}

static address_count *find(conn_count *c, uint32_t ip)
{
    for (unsigned i = 0; i < c->naddresses; i++)
        if (c->per_address[i].ip == ip)
            return &c->per_address[i];
    return NULL;
}

/* Counts one more from ip, past the limits when `check` is 0. */
static int count(conn_count *c, uint32_t ip, int check)
{
    pthread_mutex_lock(&c->lock);
    address_count *slot = find(c, ip);
    int ok = !check || (c->open < c->max_total && (!slot || slot->count < c->max_per_address));
    if (ok && !slot) {
        if (c->naddresses == c->capacity)
            ok = 0;
        else
            *(slot = &c->per_address[c->naddresses++]) = (address_count){ip, 0};
    }
    if (ok) {
        slot->count++;
        c->open++;
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}

int conn_count_take(conn_count *c, uint32_t ip) { return count(c, ip, 1); }

void conn_count_hold(conn_count *c, uint32_t ip) { count(c, ip, 0); }

void conn_count_give_back(conn_count *c, uint32_t ip)
{
    pthread_mutex_lock(&c->lock);
    address_count *slot = find(c, ip);
    if (slot) {
        if (--slot->count == 0)
            *slot = c->per_address[--c->naddresses];
        c->open--;
    }
    pthread_mutex_unlock(&c->lock);
}

unsigned conn_count_open(conn_count *c, uint32_t ip, unsigned *from_address)
{
    pthread_mutex_lock(&c->lock);
    address_count *slot = find(c, ip);
    unsigned open = c->open;
    if (from_address)
        *from_address = slot ? slot->count : 0;
    pthread_mutex_unlock(&c->lock);
    return open;
}
