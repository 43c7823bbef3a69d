/*
 * plugin/plugin_wire.h - the framed protocol between the host and a
 * `loom plugin-host` child: each message is a u32 length and that many
 * bytes; a request starts with a u8 operation, a reply with a u8 status
 * (0 ok, 1 the plugin returned an error), an i32 loom_code and a message.
 * Fields are fixed-width integers, doubles and strings (u32 length, the
 * bytes, a NUL; length WIRE_NULL for NULL), in host byte order: both ends
 * are the same binary on the same machine.
 */
#ifndef LOOM_PLUGIN_PLUGIN_WIRE_H
#define LOOM_PLUGIN_PLUGIN_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_NULL 0xFFFFFFFFu
/* Larger frames are a protocol error: nothing a call carries comes near. */
#define WIRE_MAX_FRAME (4u << 20)

typedef enum wire_op {
    WIRE_LOGGER_CREATE = 1,
    WIRE_LOGGER_BEGIN = 2,
    WIRE_LOGGER_TRAIN = 3,
    WIRE_LOGGER_TEST = 4,
    WIRE_LOGGER_END = 5,
    /* A search instance (plugin/search_wire.h). */
    WIRE_SEARCH_CREATE = 16,
    WIRE_SEARCH_SUGGEST = 17,
    WIRE_SEARCH_OBSERVE = 18,
    WIRE_SEARCH_SAVE = 19,
    WIRE_SEARCH_LOAD = 20,
    /* A launch-style framework's plan_launch; the reply carries the plan. */
    WIRE_LAUNCH_PLAN = 32
} wire_op;

/* A logger's create reply carries which optional entries the plugin has,
 * so the host calls only those. */
enum {
    WIRE_HAS_BEGIN = 1u << 0,
    WIRE_HAS_TRAIN = 1u << 1,
    WIRE_HAS_TEST = 1u << 2,
    WIRE_HAS_END = 1u << 3
};

/* A frame being built: the 4-byte length is reserved at the front and
 * filled by wire_finish. A failed allocation sets `failed`; the puts then
 * do nothing. */
typedef struct wire_buf {
    char *data;
    size_t len, cap;
    int failed;
} wire_buf;

void wire_begin(wire_buf *b);
/* Raw bytes, e.g. a payload built in another wire_buf. */
void wire_put_bytes(wire_buf *b, const void *p, size_t n);
void wire_put_u8(wire_buf *b, uint8_t v);
void wire_put_u32(wire_buf *b, uint32_t v);
void wire_put_i32(wire_buf *b, int32_t v);
void wire_put_u64(wire_buf *b, uint64_t v);
void wire_put_f64(wire_buf *b, double v);
void wire_put_str(wire_buf *b, const char *s);
/* Writes the length; returns 0, or -1 when the frame could not be built
 * or is too large. */
int wire_finish(wire_buf *b);
void wire_free(wire_buf *b);

/* Reading a frame's payload (without its length). Any overrun sets `bad`
 * and the gets return zeros and NULL. */
typedef struct wire_reader {
    const char *p;
    size_t left;
    int bad;
} wire_reader;

uint8_t wire_get_u8(wire_reader *r);
uint32_t wire_get_u32(wire_reader *r);
int32_t wire_get_i32(wire_reader *r);
uint64_t wire_get_u64(wire_reader *r);
double wire_get_f64(wire_reader *r);
/* Points into the frame; NULL for a NULL string (or when bad). */
const char *wire_get_str(wire_reader *r);

#endif
