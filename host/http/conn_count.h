/*
 * http/conn_count.h - open connections counted in all and per client
 * address, against the server's --max-connections and
 * --max-connections-per-ip. Thread-safe: the HTTP lane's loops take and
 * give back, libmicrohttpd's threads hold and give back the connections
 * handed to them.
 */
#ifndef LOOM_HTTP_CONN_COUNT_H
#define LOOM_HTTP_CONN_COUNT_H

#include <stdint.h>

typedef struct conn_count conn_count;

/* NULL when out of memory. */
conn_count *conn_count_create(unsigned max_total, unsigned max_per_address);
void conn_count_free(conn_count *c);
/* Counts a new connection from ipv4: 1, or 0 (not counted) when either
 * limit is reached. */
int conn_count_take(conn_count *c, uint32_t ipv4);
/* Counts a connection admitted already (given back a moment before, to
 * be counted by its new owner): never refused, even a little past the
 * limit. */
void conn_count_hold(conn_count *c, uint32_t ipv4);
void conn_count_give_back(conn_count *c, uint32_t ipv4);
/* Open connections in all, and from one address. */
unsigned conn_count_open(conn_count *c, uint32_t ipv4, unsigned *from_address);

#endif
