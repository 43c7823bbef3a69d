/*
 * api/events.h - live updates for the console (Server-Sent Events):
 * GET /loom/v1/events streams what the pages would poll, as the caller
 * sees it, when it changes. Each stream is an http_stream (http/http.h):
 * no server thread waits on it. One thread of the hub's, once a second,
 * renders each stream's events through the routes that serve them
 * (GET /loom/v1/slots, the execs list, the models list, with the stream's
 * user; or, for a stream opened with ?exec=ID, ?task=NAME or ?model=NAME,
 * that one item's GET route), sends those that changed, and a comment line after
 * EVENTS_KEEPALIVE_MS of silence; a stream whose client left is dropped at
 * the next round.
 */
#ifndef LOOM_API_EVENTS_H
#define LOOM_API_EVENTS_H

#include "api/api.h"

#define LOOM_ROUTE_EVENTS "/loom/v1/events"

#define EVENTS_TICK_MS 1000
#define EVENTS_KEEPALIVE_MS 15000
/* `loom serve --max-event-streams-per-user N`: one user's open streams
 * (more: 429); its default and bound. */
#define EVENTS_DEFAULT_STREAMS_PER_USER 4
#define EVENTS_MAX_STREAMS_PER_USER 1000
/* A detail page's stream (?exec=ID, ?task=NAME, ?model=NAME) follows that
 * one item instead of the lists; its name is at most this less 1 bytes. */
#define EVENTS_SUBJECT_MAX 256

typedef struct api_events api_events;

/* Starts the hub (per_user 0: the default); d->events is set by the
 * caller. */
loom_error *api_events_start(api_services *d, unsigned per_user, api_events **out);
/* Stops its thread and lets go of every stream (after the server has
 * ended them). NULL is fine. */
void api_events_stop(api_events *ev);
/* One round now, on the caller's thread (tests). */
void api_events_tick(api_events *ev);

#endif
