/* http/json_text.c - see json_text.h. */
#include "http/json_text.h"

#include <stdlib.h>
#include <string.h>

#define REPLACEMENT "\\ufffd"

size_t json_text_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    unsigned cp = c & (0x7f >> need);
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    /* Overlong forms, surrogates and code points past U+10FFFF. */
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return need;
}

char *json_text_repair_utf8(char *text, size_t *len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t bad = 0;
    for (size_t i = 0; i < *len;) {
        size_t k = json_text_utf8_len(s + i, *len - i);
        bad += k == 0;
        i += k ? k : 1;
    }
    if (!bad)
        return text;
    size_t out_len = *len + bad * (sizeof REPLACEMENT - 2);
    char *out = malloc(out_len + 1);
    if (!out)
        return text;
    size_t o = 0;
    for (size_t i = 0; i < *len;) {
        size_t k = json_text_utf8_len(s + i, *len - i);
        if (k) {
            memcpy(out + o, text + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, REPLACEMENT, sizeof REPLACEMENT - 1);
            o += sizeof REPLACEMENT - 1;
            i++;
        }
    }
    out[o] = 0;
    free(text);
    *len = o;
    return out;
}
