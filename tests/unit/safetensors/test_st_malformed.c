/*
 * test_st_malformed.c - the reader against broken files built by hand in
 * memory: each defect is refused with a message that names the file and the
 * problem; every truncation and every single-byte corruption of a valid file
 * is handled without a crash (run it under ASan to mean it).
 */
#include "check.h"
#include "st_test_util.h"
#include "train/safetensors.h"

#include <stdint.h>

#define LABEL "ckpt.safetensors"

/* 8-byte little-endian length of `json`, `json` itself, then `dlen` bytes
 * of data (0x11, 0x22, ...). Caller frees. */
static uint8_t *build(const char *json, size_t dlen, size_t *len)
{
    size_t hlen = strlen(json);
    *len = 8 + hlen + dlen;
    uint8_t *buf = malloc(*len);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    memcpy(buf + 8, json, hlen);
    for (size_t i = 0; i < dlen; i++)
        buf[8 + hlen + i] = (uint8_t)(0x11 * (i + 1));
    return buf;
}

static void expect_error_raw(const uint8_t *buf, size_t len, const char *want, int line)
{
    char err[1024] = "";
    st_file *f = st_test_open_buffer(buf, len, LABEL, err, sizeof err);
    CHECK_MSG(f == NULL, "line %d: accepted, expected \"%s\"", line, want);
    safetensors_close(f);
    CHECK_MSG(strncmp(err, LABEL ": ", strlen(LABEL) + 2) == 0,
              "line %d: message does not start with the label: %s", line, err);
    CHECK_MSG(strstr(err, want) != NULL, "line %d: \"%s\" does not contain \"%s\"", line, err,
              want);
}

static void expect_error_at(const char *json, size_t dlen, const char *want, int line)
{
    size_t len;
    uint8_t *buf = build(json, dlen, &len);
    expect_error_raw(buf, len, want, line);
    free(buf);
}
#define expect_error(json, dlen, want) expect_error_at(json, dlen, want, __LINE__)

static st_file *expect_ok_at(const char *json, size_t dlen, int line)
{
    size_t len;
    char err[1024] = "";
    uint8_t *buf = build(json, dlen, &len);
    st_file *f = st_test_open_buffer(buf, len, LABEL, err, sizeof err);
    CHECK_MSG(f != NULL, "line %d: refused: %s", line, err);
    free(buf);
    return f;
}
#define expect_ok(json, dlen) expect_ok_at(json, dlen, __LINE__)

#define T(name, dtype, shape, b, e)                                                            \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_framing(void)
{
    expect_error_raw((const uint8_t *)"abc", 3, "file too short: 3 bytes", __LINE__);
    expect_error_raw((const uint8_t *)"", 0, "file too short: 0 bytes", __LINE__);

    /* Header length larger than the file. */
    uint8_t buf[100] = {0};
    buf[0] = 0x00;
    buf[1] = 0x10; /* 4096 */
    expect_error_raw(buf, sizeof buf, "truncated: header says 4096 bytes, file has 92", __LINE__);

    /* Header length over 100 MiB, even when the file is shorter. */
    uint64_t big = ((uint64_t)100 << 20) + 1;
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(big >> (8 * i));
    expect_error_raw(buf, sizeof buf, "header length 104857601 is over the 104857600-byte limit",
                     __LINE__);
    memset(buf, 0xff, 8);
    expect_error_raw(buf, sizeof buf, "header length 18446744073709551615 is over", __LINE__);

    expect_error("", 0, "header is not valid JSON");
    expect_error("{\"a\":", 0, "header is not valid JSON");
    expect_error("{not json}", 0, "header is not valid JSON (at byte ");
    expect_error("[1,2]", 0, "header must be a JSON object, got an array");
    expect_error("\"str\"", 0, "header must be a JSON object, got a string");
    expect_error("{}x", 0, "header has bytes after its JSON object (at byte 2)");
    expect_error("{}{}", 0, "header has bytes after its JSON object");
    expect_error("{\"a\xff\":1}", 0, "header is not valid UTF-8 (byte 3)");
    expect_error("{\"\xc0\xaf\":1}", 0, "not valid UTF-8");     /* overlong '/' */
    expect_error("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8"); /* surrogate */
    expect_error("{\"a\x01\":1}", 0, "header has a control character (0x01) at byte 3");
    size_t len;
    uint8_t *nul = build("{\"a\":{}}", 0, &len);
    nul[8 + 2] = 0;
    expect_error_raw(nul, len, "control character (0x00)", __LINE__);
    free(nul);
}

static void test_entries(void)
{
    expect_error("{\"a\":5}", 0, "tensor 'a': entry must be an object, got a number");
    expect_error("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': missing \"dtype\"");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'a': missing \"shape\"");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a': missing \"data_offsets\"");
    expect_error("{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': \"dtype\" must be a string, got a number");
    expect_error("{" T("a", "Q8", "[1]", 0, 1) "}", 1, "tensor 'a': unsupported dtype 'Q8'");
    expect_error("{" T("a", "f32", "[1]", 0, 4) "}", 4, "unsupported dtype 'f32'");
    expect_error("{" T("a", "F4", "[2]", 0, 1) "}", 1, "unsupported dtype 'F4'");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}", 4,
                 "tensor 'a': \"shape\" must be an array of dimensions, got a string");
    expect_error("{" T("a", "F32", "[2.5]", 0, 4) "}", 4, "tensor 'a': dimension 0 must be a whole number");
    expect_error("{" T("a", "F32", "[\"2\"]", 0, 4) "}", 4, "dimension 0 must be a whole number");
    expect_error("{" T("a", "F32", "[1e300]", 0, 4) "}", 4, "dimension 0 must be a whole number");
    expect_error("{" T("a", "F32", "[2,-2]", 0, 4) "}", 4, "tensor 'a': dimension 1 is negative (-2)");
    expect_error("{" T("a", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4,
                 "tensor 'a': shape has 9 dimensions, at most 8 supported");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
                 "tensor 'a': \"data_offsets\" must be [begin, end]");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
                 "\"data_offsets\" must be [begin, end]");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{\"b\":0}}}", 4,
                 "\"data_offsets\" must be [begin, end]");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[\"0\",4]}}", 4,
                 "tensor 'a': data_offsets[0] must be a whole number");
    expect_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]}}", 4,
                 "tensor 'a': data_offsets[1] must be a whole number");
}

static void test_offsets(void)
{
    expect_error("{" T("fc1.weight", "F32", "[20,20]", 0, 400) "}", 400,
                 "tensor 'fc1.weight': data_offsets [0, 400] hold 400 bytes, F32 [20, 20] needs 1600");
    expect_error("{" T("a", "F32", "[4]", 0, 400) "}", 16,
                 "tensor 'a': data_offsets [0, 400] go past the data section (16 bytes)");
    expect_error("{" T("a", "F32", "[1]", 8, 4) "}", 8,
                 "tensor 'a': data_offsets [8, 4] begin after end");
    /* 2^32 * 2^32 * 8 does not fit 64 bits; the check must not wrap to 0. */
    expect_error("{" T("a", "F64", "[4294967296,4294967296]", 0, 0) "}", 0,
                 "tensor 'a': F64 [4294967296, 4294967296] overflows a 64-bit byte count");
    expect_error("{" T("a", "U8", "[4294967296,4294967296,0]", 0, 0) "," T("b", "U8", "[9007199254740992,2048]", 0, 0) "}",
                 0, "tensor 'b': U8 [9007199254740992, 2048] overflows");
    expect_error("{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}", 12,
                 "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
    expect_error("{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 0, 8) "}", 8, "overlap");
    /* A zero-size tensor inside another one is an overlap too. */
    expect_error("{" T("a", "F32", "[2]", 0, 8) "," T("z", "F32", "[0]", 4, 4) "}", 8, "overlap");
    expect_error("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}", 12,
                 "data section bytes [4, 8) belong to no tensor");
    expect_error("{" T("a", "F32", "[1]", 4, 8) "}", 8, "data section bytes [0, 4) belong to no tensor");
    /* Trailing bytes after the last tensor. */
    expect_error("{" T("a", "F32", "[1]", 0, 4) "}", 9, "data section bytes [4, 9) belong to no tensor");
    expect_error("{}", 3, "data section bytes [0, 3) belong to no tensor");
    expect_error("{" T("a", "F32", "[1]", 0, 4) "," T("a", "F32", "[1]", 4, 8) "}", 8,
                 "tensor 'a' appears twice");
}

static void test_metadata(void)
{
    expect_error("{\"__metadata__\":{\"k\":1}}", 0,
                 "\"__metadata__\" value for 'k' must be a string, got a number");
    expect_error("{\"__metadata__\":{\"ok\":\"v\",\"k\":{}}}", 0, "value for 'k' must be a string, got an object");
    expect_error("{\"__metadata__\":[\"k\"]}", 0, "\"__metadata__\" must be an object of strings, got an array");
    expect_error("{\"__metadata__\":\"x\"}", 0, "\"__metadata__\" must be an object");
    expect_error("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "\"__metadata__\" appears twice");
    expect_error("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "\"__metadata__\" key 'k' appears twice");
}

/* Files the spec allows that a too-strict reader would refuse. */
static void test_valid_edges(void)
{
    st_tensor_info info;
    st_file *f = expect_ok("{}", 0);
    CHECK(f && safetensors_count(f) == 0);
    safetensors_close(f);

    /* Spaces, tabs and newlines as padding; a scalar; a zero-size tensor
     * at the end; unknown fields ignored. */
    f = expect_ok("{\n \"s\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4], \"x\": 1},\n"
                  " \"z\": {\"dtype\": \"I64\", \"shape\": [3, 0], \"data_offsets\": [4, 4]}}   \t\n",
                  4);
    CHECK(f && safetensors_count(f) == 2);
    if (f && safetensors_find(f, "s", &info) == 0) {
        CHECK(info.ndim == 0 && info.nbytes == 4 && info.dtype == LOOM_DTYPE_F32);
        CHECK(memcmp(info.data, "\x11\x22\x33\x44", 4) == 0);
    }
    if (f && safetensors_find(f, "z", &info) == 0)
        CHECK(info.ndim == 2 && info.shape[0] == 3 && info.shape[1] == 0 && info.nbytes == 0 &&
              info.data != NULL);
    safetensors_close(f);

    /* Other byte-sized dtypes are accepted as ST_DTYPE_OTHER; the header
     * here is 8-unaligned (no padding), so the data is copied aligned. */
    f = expect_ok("{\"__metadata__\":{\"format\":\"pt\"}," T("h", "BF16", "[2]", 8, 12) "," T("b", "BOOL", "[3]", 12, 15) "," T("u", "U64", "[1]", 0, 8) "}", 15);
    CHECK(f && safetensors_count(f) == 3);
    if (f && safetensors_find(f, "h", &info) == 0) {
        CHECK(info.dtype == ST_DTYPE_OTHER && info.elem_size == 2);
        CHECK_STR_EQ(info.dtype_name, "BF16");
        CHECK(memcmp(info.data, "\x99\xaa\xbb\xcc", 4) == 0);
    }
    if (f && safetensors_find(f, "u", &info) == 0) {
        CHECK(info.dtype == ST_DTYPE_OTHER && info.elem_size == 8);
        CHECK((uintptr_t)info.data % 8 == 0);
    }
    if (f) {
        CHECK_STR_EQ(safetensors_metadata(f, "format"), "pt");
        CHECK_STR_EQ(safetensors_label(f), LABEL);
    }
    safetensors_close(f);

    /* Non-ASCII names survive; escaped JSON names are decoded. */
    f = expect_ok("{" T("gewicht.ü", "U8", "[1]", 0, 1) "," T("a\\\"b", "U8", "[1]", 1, 2) "}", 2);
    CHECK(f && safetensors_find(f, "gewicht.ü", &info) == 0 && info.nbytes == 1);
    CHECK(f && safetensors_find(f, "a\"b", &info) == 0);
    safetensors_close(f);

    char err[64];
    CHECK(st_test_open_buffer(NULL, 10, NULL, err, sizeof err) == NULL);
    CHECK_STR_EQ(err, "<buffer>: buffer is NULL");
}

/* A valid small file, then every prefix of it and every single-byte change
 * of its header: each prefix is refused with a message, and no input
 * crashes or reads out of bounds (ASan). */
static void test_truncation_and_corruption(const char *dir)
{
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/small.safetensors", dir);
    float w[6] = {1, 2, 3, 4, 5, 6};
    uint8_t u[3] = {7, 8, 9};
    int64_t sw[2] = {2, 3}, su[1] = {3};
    st_writer *wr = safetensors_writer_new();
    CHECK(st_test_add(wr, "w", LOOM_DTYPE_F32, sw, 2, w, sizeof w, err, sizeof err) == 0);
    CHECK(st_test_add(wr, "u", LOOM_DTYPE_U8, su, 1, u, sizeof u, err, sizeof err) == 0);
    CHECK(safetensors_writer_set_metadata(wr, "step", "10") == 0);
    CHECK_MSG(st_test_commit(wr, path, err, sizeof err) == 0, "%s", err);
    safetensors_writer_free(wr);
    size_t len;
    uint8_t *full = st_test_read(path, &len);
    CHECK(full != NULL);
    if (!full)
        return;

    int refused = 0, refused_file = 0;
    char cut[4300];
    snprintf(cut, sizeof cut, "%s/cut.safetensors", dir);
    for (size_t n = 0; n < len; n++) {
        /* An exact-size heap copy, so ASan sees any read past the end. */
        uint8_t *prefix = malloc(n ? n : 1);
        memcpy(prefix, full, n);
        err[0] = 0;
        st_file *f = st_test_open_buffer(prefix, n, "cut", err, sizeof err);
        if (!f && strncmp(err, "cut: ", 5) == 0)
            refused++;
        safetensors_close(f);
        free(prefix);
        /* And the same through the file reader (mmap path). */
        if (st_test_write(cut, full, n) == 0) {
            err[0] = 0;
            f = st_test_open(cut, 0, err, sizeof err);
            if (!f && strncmp(err, cut, strlen(cut)) == 0)
                refused_file++;
            safetensors_close(f);
        }
    }
    CHECK_MSG(refused == (int)len, "%d of %zu prefixes refused", refused, len);
    CHECK_MSG(refused_file == (int)len, "%d of %zu file prefixes refused", refused_file, len);
    unlink(cut);

    /* One byte too many is refused as well. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, full, len);
    longer[len] = 0;
    CHECK(st_test_open_buffer(longer, len + 1, "long", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "belong to no tensor");
    free(longer);

    /* Every header byte set to a handful of hostile values: accepted or
     * refused, never a crash; anything accepted still walks cleanly. */
    static const uint8_t values[] = {0x00, '"', '-', '9', '[', '}', 0x7f, 0xff};
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)full[i] << (8 * i);
    int accepted = 0, runs = 0;
    for (size_t pos = 0; pos < 8 + hlen; pos++) {
        for (size_t v = 0; v < sizeof values; v++) {
            uint8_t *mut = malloc(len);
            memcpy(mut, full, len);
            mut[pos] = values[v];
            st_file *f = st_test_open_buffer(mut, len, "mut", err, sizeof err);
            runs++;
            if (f) {
                accepted++;
                st_tensor_info info;
                unsigned sum = 0;
                for (uint32_t i = 0; i < safetensors_count(f); i++)
                    if (safetensors_tensor(f, i, &info) == 0)
                        for (uint64_t b = 0; b < info.nbytes; b++)
                            sum += ((const uint8_t *)info.data)[b];
                (void)sum;
                safetensors_close(f);
            }
            free(mut);
        }
    }
    CHECK(runs > 0 && accepted < runs);
    free(full);
}

int main(void)
{
    char dir[4096];
    if (st_test_mkdtemp(dir, sizeof dir) != 0) {
        perror("mkdtemp");
        return 1;
    }
    test_framing();
    test_entries();
    test_offsets();
    test_metadata();
    test_valid_edges();
    test_truncation_and_corruption(dir);
    st_test_rmdir(dir);
    return CHECK_DONE();
}
