/*
 * plugin/search_server.h - the child's side of a search instance: runs the
 * plugin's create/suggest/observe/save/load for the frames of
 * search_wire.h and records what it does through the sink.
 */
#ifndef LOOM_PLUGIN_SEARCH_SERVER_H
#define LOOM_PLUGIN_SEARCH_SERVER_H

#include <loom/search.h>
#include <stdint.h>

#include "plugin/plugin_wire.h"
#include "util/error.h"

typedef struct search_server search_server;

search_server *search_server_new(const loom_search_factory *factory);
void search_server_free(search_server *s);
/* Runs one request; its reply payload (after status, code and message)
 * is appended to `extra` (emptied by the caller). r->bad afterwards:
 * malformed. */
loom_error *search_server_dispatch(search_server *s, uint8_t op, wire_reader *r, wire_buf *extra);

#endif
