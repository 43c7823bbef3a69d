/*
 * fuzz_lane_request.c - libFuzzer target for the inference lane's request
 * reader (host/http/lane_request.h): the bytes a client sends on one
 * connection, arriving in pieces, read into the lane's buffer the way
 * host/http/http_lane.c reads them (room made before each read, one request
 * at a time, pipelined requests left in place). The first input byte picks
 * the pieces' sizes; the rest is the stream. Small limits (256 bytes of
 * headers, 512 of body) so the fuzzer reaches them.
 *
 * Promises checked: the buffer never passes what one request may take; a
 * whole request's path, header values and body are NUL-terminated inside
 * the buffer, its body within the limit; the byte held for the body's NUL
 * goes back, so the next pipelined request reads as it was sent.
 *
 * Seeds: pipelined inference calls, chunked bodies, folded headers,
 * queries, oversized headers and bodies.
 */
#include <stdlib.h>
#include <string.h>

#include "http/lane_request.h"
#include "fuzz_support.h"

#define HEADER_LIMIT 256
#define MAX_BODY 512

static void check_text(const lane_request *r, const char *s)
{
    if (!s)
        return;
    if (s < r->in || s >= r->in + r->in_cap || !memchr(s, 0, (size_t)(r->in + r->in_cap - s)))
        abort();
}

static void check_request(lane_request *r)
{
    if (lane_request_finish(r))
        return; /* a target past its limit: refused with that text */
    if (!memchr(r->path, 0, sizeof r->path))
        abort();
    for (int i = 0; i < r->nheaders; i++)
        check_text(r, lane_request_header(r, r->in + r->name[i].at));
    for (int i = 0; i < r->nquery; i++)
        if (!lane_request_query(r, r->query_key[i]))
            abort();
    const char *body = lane_request_body(r);
    if (r->body.len > MAX_BODY || body[r->body.len] != 0)
        abort();
    char copy[64];
    lane_request_header_copy(r, "Content-Type", copy, sizeof copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned piece_seed = data[0];
    const uint8_t *stream = data + 1;
    size_t left = size - 1, sent = 0;
    lane_request r;
    lane_request_init(&r, HEADER_LIMIT, MAX_BODY);
    for (int requests = 0; requests < 64;) {
        if (r.parsed < r.in_len) {
            lane_parse p = lane_request_parse(&r);
            if (p == LANE_PARSE_DONE) {
                check_request(&r);
                /* what follows must read back as it came */
                lane_request_answered(&r);
                size_t tail = r.in_len - r.parsed;
                if (tail > sent || memcmp(r.in + r.parsed, stream + sent - tail, tail) != 0)
                    abort();
                if (tail == 0)
                    r.in_len = r.parsed = 0;
                lane_request_reset(&r, r.parsed);
                requests++;
                continue;
            }
            if (p != LANE_PARSE_MORE)
                break; /* refused: the connection closes */
        }
        if (left == 0)
            break;
        if (r.in_len + 1 >= r.in_cap && lane_request_make_room(&r) != 0)
            break; /* over what one request may take */
        if (r.in_cap > HEADER_LIMIT + MAX_BODY + 2)
            abort();
        size_t room = r.in_cap - r.in_len - 1;
        size_t piece = 1 + (piece_seed * 31u + (unsigned)sent) % 97u;
        if (piece > room)
            piece = room;
        if (piece > left)
            piece = left;
        memcpy(r.in + r.in_len, stream + sent, piece);
        r.in_len += piece;
        sent += piece;
        left -= piece;
    }
    lane_request_free(&r);
    return 0;
}
