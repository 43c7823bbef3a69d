/* plugin/plugin_wire.c - see plugin_wire.h. */
#include "plugin/plugin_wire.h"

#include <stdlib.h>
#include <string.h>

static void put(wire_buf *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        char *grown = cap <= WIRE_MAX_FRAME * 2 ? realloc(b->data, cap) : NULL;
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void wire_begin(wire_buf *b)
{
    b->len = 0;
    b->failed = 0;
    uint32_t zero = 0;
    put(b, &zero, sizeof zero);
}

void wire_put_bytes(wire_buf *b, const void *p, size_t n) { put(b, p, n); }
void wire_put_u8(wire_buf *b, uint8_t v) { put(b, &v, sizeof v); }
void wire_put_u32(wire_buf *b, uint32_t v) { put(b, &v, sizeof v); }
void wire_put_i32(wire_buf *b, int32_t v) { put(b, &v, sizeof v); }
void wire_put_u64(wire_buf *b, uint64_t v) { put(b, &v, sizeof v); }
void wire_put_f64(wire_buf *b, double v) { put(b, &v, sizeof v); }

void wire_put_str(wire_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n >= WIRE_MAX_FRAME) {
        b->failed = 1;
        return;
    }
    wire_put_u32(b, s ? (uint32_t)n : WIRE_NULL);
    if (s)
        put(b, s, n + 1);
}

int wire_finish(wire_buf *b)
{
    if (b->failed || b->len < 4 || b->len - 4 > WIRE_MAX_FRAME)
        return -1;
    uint32_t n = (uint32_t)(b->len - 4);
    memcpy(b->data, &n, sizeof n);
    return 0;
}

void wire_free(wire_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static int get(wire_reader *r, void *out, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = 1;
        memset(out, 0, n);
        return -1;
    }
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return 0;
}

uint8_t wire_get_u8(wire_reader *r) { uint8_t v; get(r, &v, sizeof v); return v; }
uint32_t wire_get_u32(wire_reader *r) { uint32_t v; get(r, &v, sizeof v); return v; }
int32_t wire_get_i32(wire_reader *r) { int32_t v; get(r, &v, sizeof v); return v; }
uint64_t wire_get_u64(wire_reader *r) { uint64_t v; get(r, &v, sizeof v); return v; }
double wire_get_f64(wire_reader *r) { double v; get(r, &v, sizeof v); return v; }

const char *wire_get_str(wire_reader *r)
{
    uint32_t n = wire_get_u32(r);
    if (r->bad || n == WIRE_NULL)
        return NULL;
    if (r->left < (size_t)n + 1 || r->p[n] != 0) {
        r->bad = 1;
        return NULL;
    }
    const char *s = r->p;
    r->p += (size_t)n + 1;
    r->left -= (size_t)n + 1;
    return s;
}
