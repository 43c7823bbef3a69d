/*
 * test_ffi_call.c - calling plain C functions of the test library through
 * ffi_function: doubles, floats, narrow integer returns (their sign comes
 * back through ffi_arg), pointers in, out and inout, the most parameters;
 * and the refusals: a library outside the allowed directories (directly,
 * through "..", through a symlink, by a prefix that is not a directory), a
 * missing symbol, a bad signature.
 *
 * usage: test_ffi_call /path/to/libffitest.so
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "plugin/ffi_call.h"

/* ffi_function_open with the message copied into err: NULL on failure. */
static ffi_function *open_with_err(const char *library, const char *symbol, const char *signature,
                             const char *const *allowed, char *err, size_t errlen)
{
    ffi_function *fn = NULL;
    loom_error *e = ffi_function_open(library, symbol, signature, allowed, &fn);
    return loom_err_take(e, err, errlen) == LOOM_OK ? fn : NULL;
}

static char lib_path[4096], lib_dir[4096];

static ffi_function *open_fn(const char *symbol, const char *signature)
{
    const char *const allowed[] = {lib_dir, NULL};
    char err[512] = "";
    ffi_function *fn = open_with_err(lib_path, symbol, signature, allowed, err,
                                         sizeof err);
    CHECK_MSG(fn != NULL, "%s: %s", symbol, err);
    return fn;
}

static void test_scalars(void)
{
    ffi_function *fn = open_fn("add_f64", "f64(f64 a, f64 b)");
    if (fn) {
        double a = 1.25, b = -4.5, r = 0;
        void *args[] = {&a, &b};
        ffi_function_call(fn, args, &r);
        CHECK(r == -3.25);
        CHECK(ffi_function_signature(fn)->nargs == 2);
        ffi_function_close(fn);
    }
    fn = open_fn("mul_f32", "float(float, float)");
    if (fn) {
        float a = 1.5f, b = 3.0f, r = 0;
        void *args[] = {&a, &b};
        ffi_function_call(fn, args, &r);
        CHECK(r == 4.5f);
        ffi_function_close(fn);
    }
    fn = open_fn("mix", "f64(i8 a, f32 b, f64 c, u16 d, i64 e)");
    if (fn) {
        int8_t a = -3;
        float b = 0.5f;
        double c = 10.25;
        uint16_t d = 65535;
        int64_t e = -10000000000;
        void *args[] = {&a, &b, &c, &d, &e};
        double r = 0;
        ffi_function_call(fn, args, &r);
        CHECK(r == -3 + 0.5 + 10.25 + 65535 - 10000000000.0);
        ffi_function_close(fn);
    }
    fn = open_fn("answer", "i32()");
    if (fn) {
        int64_t r = 0;
        ffi_function_call(fn, NULL, &r);
        CHECK(r == 42);
        ffi_function_close(fn);
    }
}

/* Narrow integer returns arrive as a whole ffi_arg; the value must come back
 * with the declared type's sign, widened to int64_t. */
static void test_narrow_returns(void)
{
    ffi_function *fn = open_fn("neg_i8", "i8(i8 x)");
    if (fn) {
        int8_t x = 5;
        void *args[] = {&x};
        int64_t r = 0;
        ffi_function_call(fn, args, &r);
        CHECK_MSG(r == -5, "neg_i8(5) gave %lld", (long long)r);
        x = -128; /* -(-128) wraps to -128 in int8_t */
        ffi_function_call(fn, args, &r);
        CHECK(r == -128);
        ffi_function_close(fn);
    }
    fn = open_fn("add_u8", "u8(u8, u8)");
    if (fn) {
        uint8_t a = 200, b = 50;
        void *args[] = {&a, &b};
        int64_t r = 0;
        ffi_function_call(fn, args, &r);
        CHECK_MSG(r == 250, "add_u8(200, 50) gave %lld", (long long)r);
        b = 56; /* 256 wraps to 0 */
        ffi_function_call(fn, args, &r);
        CHECK(r == 0);
        ffi_function_close(fn);
    }
    fn = open_fn("neg_i16", "i16(i16)");
    if (fn) {
        int16_t x = 300;
        void *args[] = {&x};
        int64_t r = 0;
        ffi_function_call(fn, args, &r);
        CHECK_MSG(r == -300, "neg_i16(300) gave %lld", (long long)r);
        ffi_function_close(fn);
    }
    fn = open_fn("add_u16", "u16(u16, u16)");
    if (fn) {
        uint16_t a = 60000, b = 5000;
        void *args[] = {&a, &b};
        int64_t r = 0;
        ffi_function_call(fn, args, &r);
        CHECK(r == 65000);
        ffi_function_close(fn);
    }
    fn = open_fn("big_u32", "u32()");
    if (fn) {
        int64_t r = 0;
        ffi_function_call(fn, NULL, &r);
        CHECK(r == 4000000000LL);
        ffi_function_close(fn);
    }
}

static void test_pointers(void)
{
    ffi_function *fn = open_fn("dot_i32", "i64(ptr i32 in x, ptr i32 in y, i64 n)");
    if (fn) {
        int32_t x[] = {1, -2, 3, 100000}, y[] = {4, 5, -6, 100000};
        int32_t *px = x, *py = y;
        int64_t n = 4, r = 0;
        void *args[] = {&px, &py, &n};
        ffi_function_call(fn, args, &r);
        CHECK(r == 4 - 10 - 18 + 10000000000LL);
        ffi_function_close(fn);
    }
    fn = open_fn("fill_f64", "void(ptr f64 out, i32 n, f64 value)");
    if (fn) {
        double out[4] = {0}, value = 2.5;
        double *pout = out;
        int32_t n = 3;
        void *args[] = {&pout, &n, &value};
        ffi_function_call(fn, args, NULL);
        CHECK(out[0] == 0 && out[1] == 2.5 && out[2] == 5.0 && out[3] == 0);
        ffi_function_close(fn);
    }
    fn = open_fn("square_inplace", "void(ptr f32 inout x, i64 n)");
    if (fn) {
        float x[] = {1.5f, -2.0f, 3.0f};
        float *px = x;
        int64_t n = 3;
        void *args[] = {&px, &n};
        ffi_function_call(fn, args, NULL);
        CHECK(x[0] == 2.25f && x[1] == 4.0f && x[2] == 9.0f);
        ffi_function_close(fn);
    }
    fn = open_fn("sum16", "i64(i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,i64,"
                          "i64)");
    if (fn) {
        int64_t v[16];
        void *args[16];
        for (int i = 0; i < 16; i++) {
            v[i] = (int64_t)(i + 1) * 1000000000LL;
            args[i] = &v[i];
        }
        int64_t r = 0;
        ffi_function_call(fn, args, &r);
        CHECK(r == 136LL * 1000000000LL);
        ffi_function_close(fn);
    }
}

static void refused(const char *library, const char *const *allowed, const char *symbol,
                    const char *signature, const char *frag1, const char *frag2)
{
    char err[1024] = "";
    ffi_function *fn = open_with_err(library, symbol, signature, allowed, err, sizeof err);
    CHECK_MSG(fn == NULL, "%s from %s was opened", symbol, library);
    ffi_function_close(fn);
    const char *message = err;
    CHECK_CONTAINS(message, frag1);
    if (frag2)
        CHECK_CONTAINS(message, frag2);
    /* A library outside the allowed directories is forbidden, not invalid. */
    if (strstr(frag1, "outside the allowed")) {
        loom_error *e = ffi_function_open(library, symbol, signature, allowed, &fn);
        CHECK_MSG(loom_err_code(e) == LOOM_E_FORBIDDEN, "code %d", (int)loom_err_code(e));
        loom_err_free(e);
    }
}

static void test_refusals(void)
{
    char tmpl[] = "/tmp/loom-ffi-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    CHECK(tmp != NULL);
    if (!tmp)
        return;
    char sub[256], link[512], dotdot[8400], prefix_dir[256];
    snprintf(sub, sizeof sub, "%s/models", tmp);
    snprintf(prefix_dir, sizeof prefix_dir, "%s/mod", tmp); /* a prefix of "models" */
    snprintf(link, sizeof link, "%s/libffitest.so", sub);
    CHECK(mkdir(sub, 0755) == 0);
    CHECK(mkdir(prefix_dir, 0755) == 0);
    CHECK(symlink(lib_path, link) == 0);
    const char *sig = "f64(f64, f64)";

    /* The real library, but only an unrelated directory is allowed. */
    const char *const only_tmp[] = {tmp, NULL};
    refused(lib_path, only_tmp, "add_f64", sig, "is outside the allowed directories",
            tmp);

    /* ".." climbing out of the allowed directory. */
    const char *const only_sub[] = {sub, NULL};
    snprintf(dotdot, sizeof dotdot, "%s/../../../../../../../../../..%s", sub, lib_path);
    refused(dotdot, only_sub, "add_f64", sig, "is outside the allowed directories",
            lib_path);

    /* A symlink inside the allowed directory that points out of it. */
    refused(link, only_sub, "add_f64", sig, "is outside the allowed directories",
            "resolved to");

    /* "<tmp>/mod" is a string prefix of "<tmp>/models/..." but not its
     * directory: a file there must not pass. Copy the library in so that only
     * the prefix rule can refuse it. */
    char copy[512];
    snprintf(copy, sizeof copy, "%s/libcopy.so", sub);
    FILE *in = fopen(lib_path, "rb"), *out = fopen(copy, "wb");
    CHECK(in && out);
    if (in && out) {
        char buf[8192];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, in)) > 0)
            fwrite(buf, 1, got, out);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    const char *const only_prefix[] = {prefix_dir, NULL};
    refused(copy, only_prefix, "add_f64", sig, "is outside the allowed directories", NULL);
    /* ... while the same copy opens from its real directory, also when that
     * directory is named through ".." and the library relatively. */
    char sub_dotdot[512];
    snprintf(sub_dotdot, sizeof sub_dotdot, "%s/models/../models", tmp);
    const char *const via_dotdot[] = {sub_dotdot, NULL};
    char err[512] = "";
    ffi_function *fn = open_with_err(copy, "add_f64", sig, via_dotdot, err, sizeof err);
    CHECK_MSG(fn != NULL, "%s", err);
    ffi_function_close(fn);

    /* No directories at all, and a library that does not exist. */
    const char *const none[] = {NULL};
    refused(lib_path, none, "add_f64", sig, "no allowed library directories", NULL);
    refused("/nonexistent/libnothing.so", only_sub, "add_f64", sig,
            "library '/nonexistent/libnothing.so'", "No such file");
    /* A bare name is never searched for in the system's library path. */
    refused("libc.so.6", only_tmp, "abs", "i32(i32)", "library 'libc.so.6'", NULL);

    /* A symbol the library does not have; a signature that does not parse. */
    const char *const ok_dir[] = {lib_dir, NULL};
    refused(lib_path, ok_dir, "no_such_function", sig, "symbol 'no_such_function' not found",
            lib_path);
    refused(lib_path, ok_dir, "add_f64", "f64(f64, half)", "unknown type", "found 'half'");

    unlink(copy);
    unlink(link);
    rmdir(sub);
    rmdir(prefix_dir);
    rmdir(tmp);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !realpath(argv[1], lib_path)) {
        fprintf(stderr, "usage: %s /path/to/libffitest.so\n", argv[0]);
        return 2;
    }
    char scratch[4096];
    snprintf(scratch, sizeof scratch, "%s", lib_path);
    snprintf(lib_dir, sizeof lib_dir, "%s", dirname(scratch));
    test_scalars();
    test_narrow_returns();
    test_pointers();
    test_refusals();
    return CHECK_DONE();
}
