/*
 * test_ffi_sig.c - the signature grammar: what it accepts (names optional,
 * aliases, every type, pointers with a direction) and how it refuses (the
 * message names the problem and its position).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plugin/ffi_call.h"

/* ffi_sig_parse as 0 or -1, its message copied into err. */
static int parse(const char *text, ffi_signature *out, char *err, size_t errlen)
{
    loom_error *e = ffi_sig_parse(text, out);
    CHECK_MSG(e == NULL || loom_err_code(e) == LOOM_E_INVALID, "code %d", (int)loom_err_code(e));
    return loom_err_take(e, err, errlen) == LOOM_OK ? 0 : -1;
}

static void test_accepts(void)
{
    ffi_signature sig;
    char err[256];

    CHECK(parse("int32(ptr f32 in x, i64 n, ptr f32 out y)", &sig, err,
                        sizeof err) == 0);
    CHECK(sig.ret == FFI_SIG_i32);
    CHECK(sig.nargs == 3);
    CHECK(sig.args[0].type == FFI_SIG_f32 && sig.args[0].dir == FFI_SIG_IN);
    CHECK_STR_EQ(sig.args[0].name, "x");
    CHECK(sig.args[1].type == FFI_SIG_i64 && sig.args[1].dir == FFI_SIG_VALUE);
    CHECK_STR_EQ(sig.args[1].name, "n");
    CHECK(sig.args[2].type == FFI_SIG_f32 && sig.args[2].dir == FFI_SIG_OUT);
    CHECK_STR_EQ(sig.args[2].name, "y");

    /* Names optional, the design document's own example, odd spacing. */
    CHECK(parse("int32(ptr f32 in, i64 n, ptr f32 out)", &sig, err, sizeof err) == 0);
    CHECK(sig.nargs == 3 && sig.args[0].name[0] == '\0' && sig.args[2].name[0] == '\0');
    CHECK(parse("  void (  ptr u8 inout buf ,u32  )  ", &sig, err, sizeof err) == 0);
    CHECK(sig.ret == FFI_SIG_void && sig.nargs == 2);
    CHECK(sig.args[0].dir == FFI_SIG_INOUT && sig.args[0].type == FFI_SIG_u8);
    CHECK(sig.args[1].type == FFI_SIG_u32 && sig.args[1].name[0] == '\0');

    /* Aliases map to the table's types. */
    CHECK(parse("double(float a, int32 b, int64 c, ptr double in d)", &sig, err,
                        sizeof err) == 0);
    CHECK(sig.ret == FFI_SIG_f64);
    CHECK(sig.args[0].type == FFI_SIG_f32 && sig.args[1].type == FFI_SIG_i32);
    CHECK(sig.args[2].type == FFI_SIG_i64 && sig.args[3].type == FFI_SIG_f64);

    /* No parameters; every table type once. */
    CHECK(parse("i8()", &sig, err, sizeof err) == 0);
    CHECK(sig.ret == FFI_SIG_i8 && sig.nargs == 0);
    CHECK(parse("u64(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64)", &sig, err,
                        sizeof err) == 0);
    CHECK(sig.nargs == 10);
    for (int i = 0; i < sig.nargs; i++)
        CHECK(sig.args[i].type == (ffi_sig_type)(FFI_SIG_i8 + i));

    /* Exactly FFI_SIG_MAX_ARGS parameters is fine. */
    CHECK_MSG(parse("i64(i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,"
                            "i64,i64)",
                            &sig, err, sizeof err) == 0,
              "%s", err);
    CHECK(sig.nargs == FFI_SIG_MAX_ARGS);
}

static void test_type_table(void)
{
    CHECK(ffi_sig_type_size(FFI_SIG_void) == 0);
    CHECK(ffi_sig_type_size(FFI_SIG_i8) == 1 && ffi_sig_type_size(FFI_SIG_u8) == 1);
    CHECK(ffi_sig_type_size(FFI_SIG_i16) == 2 && ffi_sig_type_size(FFI_SIG_u16) == 2);
    CHECK(ffi_sig_type_size(FFI_SIG_i32) == 4 && ffi_sig_type_size(FFI_SIG_u32) == 4);
    CHECK(ffi_sig_type_size(FFI_SIG_i64) == 8 && ffi_sig_type_size(FFI_SIG_u64) == 8);
    CHECK(ffi_sig_type_size(FFI_SIG_f32) == 4 && ffi_sig_type_size(FFI_SIG_f64) == 8);
    CHECK_STR_EQ(ffi_sig_type_name(FFI_SIG_u16), "u16");
    CHECK_STR_EQ(ffi_sig_type_name(FFI_SIG_void), "void");

    /* Conversions refuse what the C cast would get wrong. */
    ffi_sig_value v;
    CHECK(ffi_sig_value_from_double(FFI_SIG_i8, -128, &v) == 0 && v.v_i8 == -128);
    CHECK(ffi_sig_value_from_double(FFI_SIG_i8, 128, &v) != 0);
    CHECK(ffi_sig_value_from_double(FFI_SIG_u8, -1, &v) != 0);
    CHECK(ffi_sig_value_from_double(FFI_SIG_i32, 1.5, &v) != 0);
    CHECK(ffi_sig_value_from_double(FFI_SIG_u32, 4294967295.0, &v) == 0 &&
          v.v_u32 == 4294967295u);
    CHECK(ffi_sig_value_from_double(FFI_SIG_i64, 9223372036854775808.0, &v) != 0);
    CHECK(ffi_sig_value_from_double(FFI_SIG_f32, 1e39, &v) != 0);
    CHECK(ffi_sig_value_from_double(FFI_SIG_f32, 0.5, &v) == 0 && v.v_f32 == 0.5f);
    v.v_i16 = -300;
    CHECK(ffi_sig_value_to_double(FFI_SIG_i16, &v) == -300.0);

    /* JSON text: integers exact (beyond a double's 53 bits), floats that
     * read back to the same value, non-finite as null. */
    char text[FFI_SIG_JSON_MAX];
    char *const buf = text;
    v.v_u64 = UINT64_MAX;
    CHECK(ffi_sig_value_format_json(FFI_SIG_u64, &v, buf, sizeof text) == 20);
    CHECK_STR_EQ(buf, "18446744073709551615");
    v.v_i64 = INT64_MIN;
    CHECK(ffi_sig_value_format_json(FFI_SIG_i64, &v, buf, sizeof text) > 0);
    CHECK_STR_EQ(buf, "-9223372036854775808");
    v.v_i8 = -7;
    CHECK(ffi_sig_value_format_json(FFI_SIG_i8, &v, buf, sizeof text) == 2);
    CHECK_STR_EQ(buf, "-7");
    v.v_f32 = 0.1f;
    CHECK(ffi_sig_value_format_json(FFI_SIG_f32, &v, buf, sizeof text) > 0);
    CHECK(strtof(buf, NULL) == 0.1f);
    v.v_f64 = 1.0 / 3.0;
    CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &v, buf, sizeof text) > 0);
    CHECK(strtod(buf, NULL) == 1.0 / 3.0);
    v.v_f64 = -1.7976931348623157e308;
    CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &v, buf, sizeof text) > 0);
    CHECK(strtod(buf, NULL) == -1.7976931348623157e308);
    v.v_f32 = -INFINITY;
    CHECK(ffi_sig_value_format_json(FFI_SIG_f32, &v, buf, sizeof text) == 4);
    CHECK_STR_EQ(buf, "null");
    v.v_i32 = 123456;
    CHECK(ffi_sig_value_format_json(FFI_SIG_i32, &v, buf, 4) == -1);
}

/* Reals with few decimals take the short exact path (no printf); every
 * real, on either path, reads back to the same value. */
static void test_real_text(void)
{
    char text[FFI_SIG_JSON_MAX];
    char *const buf = text;
    static const struct { double v; const char *want; } exact[] = {
        {1.5, "1.5"}, {-2.25, "-2.25"}, {0, "0"}, {-0.0, "-0"}, {42, "42"},
        {0.000001, "0.000001"}, {-8999999999.5, "-8999999999.5"}, {123.456, "123.456"},
    };
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        ffi_sig_value v = {.v_f64 = exact[i].v};
        CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &v, buf, sizeof text) ==
              (int)strlen(exact[i].want));
        CHECK_STR_EQ(buf, exact[i].want);
    }
    /* Room is checked on the short path as on the long one. */
    ffi_sig_value v = {.v_f64 = 123.5};
    CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &v, buf, 5) == -1);
    CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &v, buf, 6) == 5);
    CHECK_STR_EQ(buf, "123.5");
    /* Round trips over values of every kind: few decimals, many, huge,
     * tiny, negative, and floats. */
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 200000; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        double d;
        switch (i % 4) {
        case 0: d = (double)(int64_t)(state % 2000000000001u - 1000000000000u) / 1e6; break;
        case 1: d = (double)(int64_t)(state >> 11) / 9007199254740992.0 * 1e4 - 5e3; break;
        default: memcpy(&d, &state, sizeof d); break;
        }
        if (!isfinite(d))
            continue;
        ffi_sig_value w = {.v_f64 = d};
        CHECK(ffi_sig_value_format_json(FFI_SIG_f64, &w, buf, sizeof text) > 0);
        CHECK_MSG(strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d),
                  "%.17g printed as %s", d, buf);
        w.v_f32 = (float)d;
        if (!isfinite(w.v_f32))
            continue;
        CHECK(ffi_sig_value_format_json(FFI_SIG_f32, &w, buf, sizeof text) > 0);
        CHECK_MSG(strtof(buf, NULL) == w.v_f32, "%.9g printed as %s", (double)w.v_f32, buf);
    }
}

/* Each bad signature must fail with a message containing every fragment. */
static void refuses(const char *text, const char *frag1, const char *frag2)
{
    ffi_signature sig;
    char err[512] = "";
    int rc = parse(text, &sig, err, sizeof err);
    CHECK_MSG(rc == -1, "'%s' was accepted", text);
    const char *message = err;
    CHECK_CONTAINS(message, frag1);
    if (frag2)
        CHECK_CONTAINS(message, frag2);
}

static void test_refuses(void)
{
    /* Unknown types, in every place a type goes. */
    refuses("f16(i32 a)", "unknown type in the return type", "position 1 (found 'f16')");
    refuses("i32(i32 a, f16 b)", "unknown type in the type of parameter 2",
            "position 12 (found 'f16')");
    refuses("i32(ptr half in x)", "unknown type in the element type of parameter 1",
            "found 'half'");
    refuses("i32(ptr q in x)", "expected one of void i8", "aliases int32");

    /* Too many parameters. */
    refuses("i64(i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64)",
            "too many parameters: at most 16", "(parameter 17) at position 69");

    /* void as a parameter type, bare or behind ptr. */
    refuses("i32(void)", "parameter 1: 'void' is not a parameter type",
            "position 5 (found 'void')");
    refuses("i32(i32 a, void b)", "parameter 2: 'void' is not a parameter type", NULL);
    refuses("i32(ptr void in x)", "'ptr void' has no element type", NULL);

    /* Pointer direction, pointer return. */
    refuses("i32(ptr f32 x)", "expected 'in', 'out' or 'inout' after 'ptr f32'",
            "found 'x'");
    refuses("ptr f32(i32 n)", "pointer return values are not supported", NULL);

    /* Garbage and structure. */
    refuses("", "expected the return type", "end of text");
    refuses("i32 i64", "expected '(' after the return type", "found 'i64'");
    refuses("i32(i32 $x)", "expected ',' or ')' after parameter 1", "found '$'");
    refuses("i32(#)", "unexpected character in the type of parameter 1", "found '#'");
    refuses("i32(i32 a,)", "expected the type of parameter 2", "found ')'");
    refuses("i32(i32 a b)", "expected ',' or ')' after parameter 1", "found 'b'");
    refuses("i32(i32 a, i32 a)", "name 'a' is already used by parameter 1", NULL);
    refuses("i32(i32 a) trailing", "unexpected text after the closing ')'",
            "found 'trailing'");
    refuses("i32(i32 a_name_that_is_far_too_long_for_the_field)",
            "name longer than 31 characters", NULL);

    /* Unbalanced parentheses, both ways. */
    refuses("i32(i32 a", "unbalanced parentheses: expected ',' or ')'", "end of text");
    refuses("i32(i32 a))", "unbalanced parentheses: ')' without a matching '('",
            "position 11");
    refuses("i32((i32 a)", "expected the type of parameter 1", "found '('");

    /* The message quotes the signature it is about. */
    refuses("i32(i32 a", "signature 'i32(i32 a'", NULL);
}

int main(void)
{
    test_accepts();
    test_type_table();
    test_real_text();
    test_refuses();
    return CHECK_DONE();
}
