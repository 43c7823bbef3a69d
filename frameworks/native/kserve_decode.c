/* kserve_decode.c - see kserve_decode.h. */
#include "kserve_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Numeric "data" arrays one body may have stubbed; more take cJSON's way. */
#define MAX_ARRAYS 64
/* Nesting of a data array, at most (cJSON's own limit is 1000). */
#define MAX_DEPTH 32

typedef struct span {
    size_t open, close; /* the brackets' offsets */
    size_t first, count; /* its numbers in the decoder's values */
} span;

typedef struct cursor {
    const char *p, *end;
    float *x;
    int64_t n, limit;
} cursor;

static int array(cursor *c, int depth);

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The offset just past the string opening at s[i]; *escaped when it has a
 * backslash. len when it does not end. */
static size_t string_end(const char *s, size_t i, size_t len, int *escaped)
{
    *escaped = 0;
    for (i++; i < len; i++) {
        if (s[i] == '\\') {
            *escaped = 1;
            i++;
        } else if (s[i] == '"') {
            return i + 1;
        }
    }
    return len;
}

static size_t skip_space(const char *s, size_t i, size_t len)
{
    while (i < len && is_space(s[i]))
        i++;
    return i;
}

/* Room in the decoder's values for the numbers in `len` more bytes (each
 * takes a digit and a comma at least). */
static int reserve_values(kserve_decoder *d, size_t used, size_t len)
{
    size_t need = used + len / 2 + 1;
    if (need <= d->values_cap)
        return 0;
    float *grown = realloc(d->values, need * sizeof *grown);
    if (!grown)
        return -1;
    d->values = grown;
    d->values_cap = need;
    return 0;
}

/* Reads the array of numbers opening at s[v] into the decoder's values
 * (from `used`): its span, or 0 when it holds something else, or nothing. */
static int read_array(kserve_decoder *d, const char *s, size_t v, size_t len, size_t used,
                      span *out)
{
    if (reserve_values(d, used, len - v) != 0)
        return 0;
    cursor c = {.p = s + v, .end = s + len, .x = d->values + used,
                .limit = (int64_t)(d->values_cap - used)};
    if (array(&c, 0) != 0 || c.n == 0)
        return 0;
    *out = (span){v, (size_t)(c.p - s) - 1, used, (size_t)c.n};
    return 1;
}

/* Finds and reads the arrays of numbers under "data" keys: their count, or
 * -1 when the body must take cJSON's way (a key with escapes, too many
 * arrays). Others (strings, nothing, not JSON) are left for cJSON. */
static int find_arrays(kserve_decoder *d, const char *s, size_t len, span *out)
{
    int n = 0;
    size_t used = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] != '"') {
            i++;
            continue;
        }
        int escaped;
        size_t end = string_end(s, i, len, &escaped);
        size_t colon = skip_space(s, end, len);
        if (colon >= len || s[colon] != ':') {
            i = end; /* a value */
            continue;
        }
        if (escaped)
            return -1; /* a key cJSON would read otherwise than its bytes */
        size_t v = skip_space(s, colon + 1, len);
        int data_key = end - i == 6 && memcmp(s + i, "\"data\"", 6) == 0;
        i = colon + 1;
        if (!data_key || v >= len || s[v] != '[')
            continue;
        if (n == MAX_ARRAYS)
            return -1;
        if (read_array(d, s, v, len, used, &out[n])) {
            used += out[n].count;
            i = out[n].close + 1;
            n++;
        }
    }
    return n;
}

/* Copies the body with array k's contents replaced by "k" and spaces; -1
 * when an index does not fit its array or memory runs out. */
static int stub_copy(kserve_decoder *d, const char *body, size_t len, const span *a, int n)
{
    if (len + 1 > d->cap) {
        char *grown = realloc(d->copy, len + 1);
        if (!grown)
            return -1;
        d->copy = grown;
        d->cap = len + 1;
    }
    memcpy(d->copy, body, len);
    d->copy[len] = 0;
    for (int k = 0; k < n; k++) {
        size_t room = a[k].close - a[k].open - 1;
        char num[8];
        size_t w = (size_t)snprintf(num, sizeof num, "%d", k);
        if (w > room)
            return -1;
        memset(d->copy + a[k].open + 1, ' ', room);
        memcpy(d->copy + a[k].open + 1, num, w);
    }
    return 0;
}

static void find_fields(kserve_input *out)
{
    out->input = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(out->root, "inputs"), 0);
    out->shape = cJSON_GetObjectItemCaseSensitive(out->input, "shape");
    out->datatype = cJSON_GetObjectItemCaseSensitive(out->input, "datatype");
    out->data = cJSON_GetObjectItemCaseSensitive(out->input, "data");
}

int kserve_parse(kserve_decoder *d, const char *body, size_t len, kserve_input *out)
{
    memset(out, 0, sizeof *out);
    span arrays[MAX_ARRAYS];
    int n = find_arrays(d, body, len, arrays);
    if (n > 0 && stub_copy(d, body, len, arrays, n) == 0) {
        out->root = cJSON_ParseWithLength(d->copy, len);
        find_fields(out);
        /* Only a stubbed array parses to one whole number below n: any
         * other holds a non-number or nothing (or is not JSON, and cJSON
         * refused the body). */
        const cJSON *k = cJSON_GetArrayItem(out->data, 0);
        if (out->root && cJSON_GetArraySize(out->data) == 1 && cJSON_IsNumber(k) &&
            k->valuedouble >= 0 && k->valuedouble < n && k->valuedouble == (int)k->valuedouble) {
            const span *a = &arrays[(int)k->valuedouble];
            out->values = d->values + a->first;
            out->nvalues = (int64_t)a->count;
        }
        return out->root ? 0 : -1;
    }
    out->root = cJSON_ParseWithLength(body, len);
    find_fields(out);
    return out->root ? 0 : -1;
}

/* ---- numbers from the text ---------------------------------------------- */

/* 10^0 .. 10^22: exact as doubles. */
static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* One JSON number (its grammar checked strictly) into x. A plain decimal
 * of at most 15 digits is mantissa / 10^k, which the division rounds
 * exactly as strtod would (both are exact doubles); others go to strtod. */
static int number(cursor *c)
{
    const char *s = c->p, *p = s, *e = c->end;
    uint64_t mant = 0;
    int digits = 0, frac = 0, exp = 0;
    if (p < e && *p == '-')
        p++;
    if (p < e && *p == '0') {
        p++;
    } else if (p < e && *p >= '1' && *p <= '9') {
        for (; p < e && is_digit(*p); p++, digits++)
            mant = mant * 10 + (uint64_t)(*p - '0');
    } else {
        return -1;
    }
    if (p < e && *p == '.') {
        if (++p >= e || !is_digit(*p))
            return -1;
        for (; p < e && is_digit(*p); p++, frac++, digits++)
            mant = mant * 10 + (uint64_t)(*p - '0');
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        exp = 1;
        if (++p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || !is_digit(*p))
            return -1;
        while (p < e && is_digit(*p))
            p++;
    }
    if (c->n >= c->limit)
        return -1;
    c->p = p;
    double v;
    if (!exp && digits <= 15 && frac <= 22)
        v = (*s == '-' ? -(double)mant : (double)mant) / pow10_exact[frac];
    else
        v = strtod(s, NULL); /* stops where the checked number ends */
    c->x[c->n++] = (float)v;
    return 0;
}

static void spaces(cursor *c)
{
    while (c->p < c->end && is_space(*c->p))
        c->p++;
}

/* An array at c->p, its numbers appended. */
static int array(cursor *c, int depth)
{
    if (depth > MAX_DEPTH || c->p >= c->end || *c->p != '[')
        return -1;
    c->p++;
    spaces(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return 0;
    }
    for (;;) {
        spaces(c);
        if (c->p >= c->end)
            return -1;
        if ((*c->p == '[' ? array(c, depth + 1) : number(c)) != 0)
            return -1;
        spaces(c);
        if (c->p >= c->end)
            return -1;
        char sep = *c->p++;
        if (sep == ']')
            return 0;
        if (sep != ',')
            return -1;
    }
}

/* The numbers of a cJSON array (the slow way). */
static int flatten(const cJSON *a, float *x, int64_t limit, int64_t *n)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (cJSON_IsArray(v)) {
            if (flatten(v, x, limit, n))
                return -1;
        } else if (!cJSON_IsNumber(v) || *n >= limit) {
            return -1;
        } else {
            x[(*n)++] = (float)v->valuedouble;
        }
    }
    return 0;
}

int kserve_read_data(const kserve_input *in, float *x, int64_t limit, int64_t *n)
{
    *n = 0;
    if (!in->values)
        return cJSON_IsArray(in->data) ? flatten(in->data, x, limit, n) : -1;
    if (in->nvalues > limit)
        return -1;
    memcpy(x, in->values, (size_t)in->nvalues * sizeof *x);
    *n = in->nvalues;
    return 0;
}

void kserve_input_free(kserve_input *in)
{
    cJSON_Delete(in->root);
    in->root = NULL;
}

void kserve_decoder_free(kserve_decoder *d)
{
    free(d->values);
    d->values = NULL;
    d->values_cap = 0;
    free(d->copy);
    d->copy = NULL;
    d->cap = 0;
}
