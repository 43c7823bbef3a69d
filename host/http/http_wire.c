/* http/http_wire.c - see http_wire.h. */
#include "http/http_wire.h"

#include <string.h>

const char *http_reason_phrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

/* Text appended to a fixed buffer; past its end, only noted. Not printf:
 * it was a visible share of a small request's time. */
typedef struct text_out {
    char *p, *end;
    int overflow;
} text_out;

static void put(text_out *t, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(t->end - t->p) <= n) {
        t->overflow = 1;
        return;
    }
    memcpy(t->p, s, n);
    t->p += n;
}

static void put_uint(text_out *t, unsigned long long v)
{
    char text[24];
    char *p = text + sizeof text;
    *--p = 0;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(t, p);
}

static void put_header(text_out *t, const char *name, const char *value)
{
    put(t, name);
    put(t, ": ");
    put(t, value);
    put(t, "\r\n");
}

size_t http_head_write(const http_head *h, char *out, size_t cap)
{
    text_out t = {out, out + cap, 0};
    put(&t, "HTTP/1.1 ");
    put_uint(&t, (unsigned)h->status);
    put(&t, " ");
    put(&t, http_reason_phrase(h->status));
    put(&t, "\r\n");
    put_header(&t, "Date", h->date);
    put_header(&t, "Content-Type",
               h->content_type && h->content_type[0] ? h->content_type : "application/json");
    put(&t, "Content-Length: ");
    put_uint(&t, h->content_length);
    put(&t, "\r\n");
    if (h->disposition && h->disposition[0])
        put_header(&t, "Content-Disposition", h->disposition);
    for (int i = 0; h->cors && i < h->cors->count; i++)
        put_header(&t, h->cors->name[i], h->cors->value[i]);
    if (h->close)
        put(&t, "Connection: close\r\n");
    else if (h->keep_alive)
        put(&t, "Connection: keep-alive\r\n");
    put(&t, "\r\n");
    return t.overflow ? 0 : (size_t)(t.p - out);
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int http_unescape(const char *s, size_t n, char *out, size_t cap, int plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int hi, lo;
        if (ch == '%' && i + 2 < n && (hi = hex_value(s[i + 1])) >= 0 &&
            (lo = hex_value(s[i + 2])) >= 0) {
            ch = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch == '+' && plus_is_space) {
            ch = ' ';
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = ch;
    }
    if (cap == 0)
        return -1;
    out[o] = 0;
    return 0;
}

int http_split_query(char *query, const char **keys, const char **values, int max)
{
    int count = 0;
    char *s = query;
    while (*s) {
        char *amp = strchr(s, '&');
        if (amp)
            *amp = 0;
        if (*s) { /* "a=1&&b=2": an empty piece is no argument */
            if (count == max)
                return -1;
            char *eq = strchr(s, '=');
            if (eq)
                *eq = 0;
            /* decoded after the split, so "%26" in a value stays in it */
            size_t klen = strlen(s);
            http_unescape(s, klen, s, klen + 1, 1);
            keys[count] = s;
            if (eq) {
                size_t vlen = strlen(eq + 1);
                http_unescape(eq + 1, vlen, eq + 1, vlen + 1, 1);
            }
            values[count] = eq ? eq + 1 : "";
            count++;
        }
        if (!amp)
            break;
        s = amp + 1;
    }
    return count;
}
