/*
 * plugin/ffi_sig.c - the textual signature of a plain C function: parsing
 * "int32(ptr f32 in x, i64 n, ptr f32 out y)" into an ffi_signature, and
 * the per-type facts (name, size, conversion from and to double), all
 * expanded from ffi_types.def.
 */
#include "plugin/ffi_call.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[FFI_SIG_TYPE_COUNT] = {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype) [FFI_SIG_##name] = #name,
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
};

/* void's size is forced to 0 here rather than special-cased by callers. */
static const size_t type_sizes[FFI_SIG_TYPE_COUNT] = {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype)                                 \
    [FFI_SIG_##name] = sizeof(ctype) * (FFI_SIG_##name != FFI_SIG_void),
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
};

static const struct {
    const char *alias;
    ffi_sig_type type;
} type_aliases[] = {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype)
#define FFI_SIG_TYPE_ALIAS(alias, name) {#alias, FFI_SIG_##name},
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ALIAS
#undef FFI_SIG_TYPE_ENUM
};

size_t ffi_sig_type_size(ffi_sig_type type)
{
    return (unsigned)type < FFI_SIG_TYPE_COUNT ? type_sizes[type] : 0;
}

const char *ffi_sig_type_name(ffi_sig_type type)
{
    return (unsigned)type < FFI_SIG_TYPE_COUNT ? type_names[type] : "?";
}

int32_t ffi_sig_type_dtype(ffi_sig_type type)
{
    static const int32_t dtypes[FFI_SIG_TYPE_COUNT] = {
        [FFI_SIG_i8] = LOOM_DTYPE_I8,   [FFI_SIG_u8] = LOOM_DTYPE_U8,
        [FFI_SIG_i16] = LOOM_DTYPE_I16, [FFI_SIG_u16] = LOOM_DTYPE_U16,
        [FFI_SIG_i32] = LOOM_DTYPE_I32, [FFI_SIG_u32] = LOOM_DTYPE_U32,
        [FFI_SIG_i64] = LOOM_DTYPE_I64, [FFI_SIG_u64] = LOOM_DTYPE_U64,
        [FFI_SIG_f32] = LOOM_DTYPE_F32, [FFI_SIG_f64] = LOOM_DTYPE_F64};
    return (unsigned)type < FFI_SIG_TYPE_COUNT ? dtypes[type] : 0;
}

ffi_sig_type ffi_sig_type_of_dtype(int32_t dtype)
{
    for (int t = 1; t < FFI_SIG_TYPE_COUNT; t++)
        if (ffi_sig_type_dtype((ffi_sig_type)t) == dtype)
            return (ffi_sig_type)t;
    return FFI_SIG_void;
}

int ffi_sig_type_is_integer(ffi_sig_type type)
{
    return type != FFI_SIG_void && type != FFI_SIG_f32 && type != FFI_SIG_f64 &&
           (unsigned)type < FFI_SIG_TYPE_COUNT;
}

/* Looks a spelling up in the table and then among the aliases. */
static int type_lookup(const char *word, size_t len, ffi_sig_type *out)
{
    for (int t = 0; t < FFI_SIG_TYPE_COUNT; t++) {
        if (strlen(type_names[t]) == len && memcmp(type_names[t], word, len) == 0) {
            *out = (ffi_sig_type)t;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof type_aliases / sizeof type_aliases[0]; i++) {
        if (strlen(type_aliases[i].alias) == len &&
            memcmp(type_aliases[i].alias, word, len) == 0) {
            *out = type_aliases[i].type;
            return 0;
        }
    }
    return -1;
}

/* "void i8 ... f64 (aliases int32 ...)", for error messages. */
static void type_list(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int t = 0; t < FFI_SIG_TYPE_COUNT && used < len; t++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", t ? " " : "",
                                 type_names[t]);
    for (size_t i = 0; i < sizeof type_aliases / sizeof type_aliases[0] && used < len;
         i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i ? " " : " (aliases ", type_aliases[i].alias);
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

/* ---- the tokenizer ---------------------------------------------------- */

typedef enum { TOK_END, TOK_WORD, TOK_LPAREN, TOK_RPAREN, TOK_COMMA, TOK_BAD } tok_kind;

typedef struct {
    tok_kind kind;
    const char *text;
    size_t len;
    size_t pos; /* 1-based column in the signature */
} token;

typedef struct {
    const char *src;
    size_t at;
    token tok;        /* the current token */
    loom_error *err;  /* the first failure, the parser's until handed out */
} parser;

static void next_token(parser *p)
{
    const char *s = p->src;
    while (s[p->at] && isspace((unsigned char)s[p->at]))
        p->at++;
    token *t = &p->tok;
    t->text = s + p->at;
    t->pos = p->at + 1;
    t->len = 1;
    char c = s[p->at];
    if (c == '\0') {
        t->kind = TOK_END;
        t->len = 0;
        return;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        size_t start = p->at;
        while (isalnum((unsigned char)s[p->at]) || s[p->at] == '_')
            p->at++;
        t->kind = TOK_WORD;
        t->len = p->at - start;
        return;
    }
    p->at++;
    t->kind = c == '(' ? TOK_LPAREN : c == ')' ? TOK_RPAREN : c == ',' ? TOK_COMMA : TOK_BAD;
}

static int tok_is(const token *t, const char *word)
{
    return t->kind == TOK_WORD && strlen(word) == t->len &&
           memcmp(t->text, word, t->len) == 0;
}

/* Keeps LOOM_E_INVALID "signature '...': <what> at position N (found
 * 'tok')" as the parse's error and returns -1. */
static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
    if (p->err)
        return -1; /* the first failure is the one to report */
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const token *t = &p->tok;
    if (t->kind == TOK_END)
        p->err = loom_err(LOOM_E_INVALID, "signature '%s': %s at position %zu (end of text)",
                          p->src, what, t->pos);
    else
        p->err = loom_err(LOOM_E_INVALID, "signature '%s': %s at position %zu (found '%.*s')",
                          p->src, what, t->pos, (int)(t->len > 40 ? 40 : t->len), t->text);
    return -1;
}

/* TYPE: one table name or alias. `what` says which type is being read. */
static int parse_type(parser *p, const char *what, ffi_sig_type *out)
{
    if (p->tok.kind == TOK_BAD)
        return fail(p, "unexpected character in %s", what);
    if (p->tok.kind != TOK_WORD) {
        char types[256];
        type_list(types, sizeof types);
        return fail(p, "expected %s, one of %s", what, types);
    }
    if (type_lookup(p->tok.text, p->tok.len, out) != 0) {
        char types[256];
        type_list(types, sizeof types);
        return fail(p, "unknown type in %s; expected one of %s", what, types);
    }
    next_token(p);
    return 0;
}

static int parse_param(parser *p, int index, ffi_sig_param *param)
{
    char what[64];
    memset(param, 0, sizeof *param);
    param->dir = FFI_SIG_VALUE;
    if (tok_is(&p->tok, "ptr")) {
        next_token(p);
        snprintf(what, sizeof what, "the element type of parameter %d", index + 1);
        if (parse_type(p, what, &param->type) != 0)
            return -1;
        if (param->type == FFI_SIG_void)
            return fail(p, "parameter %d: 'ptr void' has no element type; "
                           "name the element type (e.g. 'ptr u8 in')",
                        index + 1);
        if (tok_is(&p->tok, "in"))
            param->dir = FFI_SIG_IN;
        else if (tok_is(&p->tok, "out"))
            param->dir = FFI_SIG_OUT;
        else if (tok_is(&p->tok, "inout"))
            param->dir = FFI_SIG_INOUT;
        else
            return fail(p, "parameter %d: expected 'in', 'out' or 'inout' after 'ptr %s'",
                        index + 1, ffi_sig_type_name(param->type));
        next_token(p);
    } else {
        const token at = p->tok;
        snprintf(what, sizeof what, "the type of parameter %d", index + 1);
        if (parse_type(p, what, &param->type) != 0)
            return -1;
        if (param->type == FFI_SIG_void) {
            p->tok = at;
            return fail(p, "parameter %d: 'void' is not a parameter type "
                           "(write '()' for a function without parameters)",
                        index + 1);
        }
    }
    if (p->tok.kind == TOK_WORD) {
        if (p->tok.len >= sizeof param->name)
            return fail(p, "parameter %d: name longer than %zu characters", index + 1,
                        sizeof param->name - 1);
        memcpy(param->name, p->tok.text, p->tok.len);
        param->name[p->tok.len] = '\0';
        next_token(p);
    }
    return 0;
}

/* Fills *out from p's text; -1 with p->err set when it is not valid. */
static int parse_signature(parser *p, ffi_signature *out)
{
    ffi_signature sig;
    memset(&sig, 0, sizeof sig);
    next_token(p);
    if (tok_is(&p->tok, "ptr"))
        return fail(p, "pointer return values are not supported; return type must be "
                        "a plain type");
    if (parse_type(p, "the return type", &sig.ret) != 0)
        return -1;
    if (p->tok.kind != TOK_LPAREN)
        return fail(p, "expected '(' after the return type");
    next_token(p);
    if (p->tok.kind == TOK_RPAREN) {
        next_token(p);
    } else {
        for (;;) {
            if (sig.nargs == FFI_SIG_MAX_ARGS)
                return fail(p, "too many parameters: at most %d are supported "
                                "(parameter %d)",
                            FFI_SIG_MAX_ARGS, sig.nargs + 1);
            if (parse_param(p, sig.nargs, &sig.args[sig.nargs]) != 0)
                return -1;
            for (int i = 0; i < sig.nargs && sig.args[sig.nargs].name[0]; i++)
                if (strcmp(sig.args[i].name, sig.args[sig.nargs].name) == 0)
                    return fail(p, "parameter %d: name '%s' is already used by "
                                    "parameter %d",
                                sig.nargs + 1, sig.args[i].name, i + 1);
            sig.nargs++;
            if (p->tok.kind == TOK_COMMA) {
                next_token(p);
                continue;
            }
            if (p->tok.kind == TOK_RPAREN) {
                next_token(p);
                break;
            }
            if (p->tok.kind == TOK_END)
                return fail(p, "unbalanced parentheses: expected ',' or ')'");
            return fail(p, "expected ',' or ')' after parameter %d", sig.nargs);
        }
    }
    if (p->tok.kind == TOK_RPAREN)
        return fail(p, "unbalanced parentheses: ')' without a matching '('");
    if (p->tok.kind != TOK_END)
        return fail(p, "unexpected text after the closing ')'");
    *out = sig;
    return 0;
}

int ffi_sig_value_from_double(ffi_sig_type type, double value, void *dst)
{
    /* Integers must be whole and in range, floats in range: converting
     * anything else is undefined behaviour in C, so it is refused first. */
    double lo, hi;
    switch (type) {
    case FFI_SIG_void: return -1;
    case FFI_SIG_i8: lo = INT8_MIN, hi = INT8_MAX; break;
    case FFI_SIG_u8: lo = 0, hi = UINT8_MAX; break;
    case FFI_SIG_i16: lo = INT16_MIN, hi = INT16_MAX; break;
    case FFI_SIG_u16: lo = 0, hi = UINT16_MAX; break;
    case FFI_SIG_i32: lo = INT32_MIN, hi = INT32_MAX; break;
    case FFI_SIG_u32: lo = 0, hi = UINT32_MAX; break;
    /* The largest doubles below 2^63 and 2^64. */
    case FFI_SIG_i64: lo = -9223372036854775808.0, hi = 9223372036854774784.0; break;
    case FFI_SIG_u64: lo = 0, hi = 18446744073709549568.0; break;
    case FFI_SIG_f32:
        if (isfinite(value) && fabs(value) > FLT_MAX)
            return -1;
        *(float *)dst = (float)value;
        return 0;
    case FFI_SIG_f64: *(double *)dst = value; return 0;
    default: return -1;
    }
    if (isnan(value) || value != trunc(value) || value < lo || value > hi)
        return -1;
    switch (type) {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype)                                 \
    case FFI_SIG_##name: *(ctype *)dst = (ctype)value; break;
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
    default: return -1;
    }
    return 0;
}

double ffi_sig_value_to_double(ffi_sig_type type, const void *src)
{
    if (type == FFI_SIG_void)
        return 0;
    switch (type) {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype)                                 \
    case FFI_SIG_##name: return (double)*(const ctype *)src;
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
    default: return 0;
    }
}

/* A value that is a whole number of millionths (|value| < 2^53 / 10^6)
 * as that decimal, without printf: m / 10^6 is exact in both numerator and
 * denominator, so when the double quotient equals the value, the decimal
 * text reads back to it exactly. -1 when the value is not of that kind. */
static int format_millionths(double value, char *buf, size_t len)
{
    const double scale = 1e6;
    if (!(fabs(value) < 9e9))
        return -1;
    double m = nearbyint(value * scale);
    if (m / scale != value || (m == 0 && signbit(value)))
        return -1;
    long long whole = llabs((long long)m);
    char digits[32];
    int n = 0;
    do {
        digits[n++] = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole || n < 7); /* at least "0.000000" */
    int frac = 6;
    while (frac > 0 && digits[6 - frac] == '0') /* trailing zeros of the fraction */
        frac--;
    size_t need = (size_t)(m < 0) + (size_t)(n - 6) + (frac ? 1 + (size_t)frac : 0);
    if (need + 1 > len)
        return -1;
    char *o = buf;
    if (m < 0)
        *o++ = '-';
    for (int i = n - 1; i >= 6; i--)
        *o++ = digits[i];
    if (frac) {
        *o++ = '.';
        for (int i = 5; i >= 6 - frac; i--)
            *o++ = digits[i];
    }
    *o = '\0';
    return (int)(o - buf);
}

/* 9 significant digits always read back to the same float, 17 to the same
 * double. A shortest-digits search (print, read back, compare) made large
 * responses about twice as slow, for prettier text only; values with few
 * decimals (counts, halves, prices) take a short exact path first. */
static int format_real(double value, int is_f32, char *buf, size_t len)
{
    if (!isfinite(value))
        return snprintf(buf, len, "null");
    int n = format_millionths(value, buf, len);
    return n >= 0 ? n : snprintf(buf, len, "%.*g", is_f32 ? 9 : 17, value);
}

int ffi_sig_value_format_json(ffi_sig_type type, const void *src, char *buf, size_t len)
{
    ffi_sig_value v;
    memcpy(&v, src, ffi_sig_type_size(type));
    int n;
    switch (type) {
    case FFI_SIG_void: n = snprintf(buf, len, "null"); break;
    case FFI_SIG_i8: n = snprintf(buf, len, "%d", v.v_i8); break;
    case FFI_SIG_u8: n = snprintf(buf, len, "%u", v.v_u8); break;
    case FFI_SIG_i16: n = snprintf(buf, len, "%d", v.v_i16); break;
    case FFI_SIG_u16: n = snprintf(buf, len, "%u", v.v_u16); break;
    case FFI_SIG_i32: n = snprintf(buf, len, "%ld", (long)v.v_i32); break;
    case FFI_SIG_u32: n = snprintf(buf, len, "%lu", (unsigned long)v.v_u32); break;
    case FFI_SIG_i64: n = snprintf(buf, len, "%lld", (long long)v.v_i64); break;
    case FFI_SIG_u64: n = snprintf(buf, len, "%llu", (unsigned long long)v.v_u64); break;
    case FFI_SIG_f32: n = format_real(v.v_f32, 1, buf, len); break;
    case FFI_SIG_f64: n = format_real(v.v_f64, 0, buf, len); break;
    default: n = -1; break;
    }
    return n >= 0 && (size_t)n < len ? n : -1;
}

loom_error *ffi_sig_parse(const char *text, ffi_signature *out)
{
    if (!text || !out)
        return loom_err(LOOM_E_INVALID, "signature: no text given");
    parser p = {.src = text};
    if (parse_signature(&p, out) == 0)
        return NULL;
    return p.err ? p.err : loom_err(LOOM_E_INVALID, "signature '%s': not valid", text);
}
