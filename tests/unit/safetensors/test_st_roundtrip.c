/*
 * test_st_roundtrip.c - the safetensors writer and reader together: tensors
 * of every loom dtype and metadata come back bit for bit, files are
 * deterministic and aligned, and the writer refuses bad tensors by name.
 */
#include "check.h"
#include "st_test_util.h"
#include "train/safetensors.h"

#include <stdint.h>

static float fc1_w[12] = {0.5f, -1.25f, 3.0f, 1e-30f, -0.0f, 7.75f,
                          1e30f, 2.5f, -3.5f, 0.125f, 9.0f, -42.0f};
static float fc1_b[4] = {0.1f, 0.2f, 0.3f, 0.4f};
static double hist[4] = {1.0 / 3.0, -2.0, 1e-300, 6.02e23};
static int32_t idx[3] = {-1, 0, 2147483647};
static int64_t step[1] = {INT64_C(1234567890123)};
static uint8_t mask[5] = {0, 1, 255, 7, 128};

typedef struct tensor_case {
    const char *name;
    int32_t dtype;
    uint32_t ndim;
    int64_t shape[2];
    const void *data;
    uint64_t nbytes;
} tensor_case;

/* Names deliberately not in sorted order; "mask" is 5 bytes so a naive
 * layout would misalign what follows it. */
static const tensor_case cases[] = {
    {"fc1.weight", LOOM_DTYPE_F32, 2, {3, 4}, fc1_w, sizeof fc1_w},
    {"mask", LOOM_DTYPE_U8, 1, {5, 0}, mask, sizeof mask},
    {"fc1.bias", LOOM_DTYPE_F32, 1, {4, 0}, fc1_b, sizeof fc1_b},
    {"adam.step", LOOM_DTYPE_I64, 0, {0, 0}, step, sizeof step},
    {"hist", LOOM_DTYPE_F64, 2, {2, 2}, hist, sizeof hist},
    {"idx", LOOM_DTYPE_I32, 1, {3, 0}, idx, sizeof idx},
    {"empty", LOOM_DTYPE_F32, 2, {0, 3}, NULL, 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

static st_writer *make_writer(int reverse)
{
    st_writer *w = safetensors_writer_new();
    char err[256];
    for (size_t k = 0; k < NCASES; k++) {
        const tensor_case *c = &cases[reverse ? NCASES - 1 - k : k];
        CHECK_MSG(st_test_add(w, c->name, c->dtype, c->shape, c->ndim, c->data, c->nbytes,
                                err, sizeof err) == 0,
                  "%s", err);
    }
    if (reverse) {
        CHECK(safetensors_writer_set_metadata(w, "note", "ünïcode ✓") == 0);
        CHECK(safetensors_writer_set_metadata(w, "epoch", "2") == 0);
        CHECK(safetensors_writer_set_metadata(w, "epoch", "3") == 0); /* replaces */
        CHECK(safetensors_writer_set_metadata(w, "format", "pt") == 0);
    } else {
        CHECK(safetensors_writer_set_metadata(w, "format", "pt") == 0);
        CHECK(safetensors_writer_set_metadata(w, "epoch", "3") == 0);
        CHECK(safetensors_writer_set_metadata(w, "note", "ünïcode ✓") == 0);
    }
    return w;
}

static void test_round_trip(const char *dir)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    st_writer *w = make_writer(0);
    CHECK_MSG(st_test_commit(w, path, err, sizeof err) == 0, "%s", err);
    safetensors_writer_free(w);

    st_file *f = st_test_open(path, 0, err, sizeof err);
    CHECK_MSG(f != NULL, "%s", err);
    if (!f)
        return;
    CHECK(safetensors_count(f) == NCASES);
    CHECK_STR_EQ(safetensors_label(f), path);

    /* Index order is name order. */
    const char *sorted[] = {"adam.step", "empty", "fc1.bias", "fc1.weight", "hist", "idx", "mask"};
    for (uint32_t i = 0; i < NCASES; i++) {
        st_tensor_info info;
        CHECK(safetensors_tensor(f, i, &info) == 0);
        CHECK_STR_EQ(info.name, sorted[i]);
    }
    st_tensor_info info;
    CHECK(safetensors_tensor(f, (uint32_t)NCASES, &info) == -1);

    for (size_t k = 0; k < NCASES; k++) {
        const tensor_case *c = &cases[k];
        CHECK_MSG(safetensors_find(f, c->name, &info) == 0, "tensor %s", c->name);
        CHECK_STR_EQ(info.name, c->name);
        CHECK(info.dtype == c->dtype);
        CHECK_STR_EQ(info.dtype_name, safetensors_dtype_name(c->dtype));
        CHECK(info.elem_size == safetensors_dtype_size(c->dtype));
        CHECK(info.ndim == c->ndim);
        for (uint32_t d = 0; d < c->ndim; d++)
            CHECK(info.shape[d] == c->shape[d]);
        CHECK(info.nbytes == c->nbytes);
        CHECK(info.data != NULL);
        if (c->nbytes)
            CHECK_MSG(memcmp(info.data, c->data, c->nbytes) == 0, "tensor %s differs", c->name);
        /* Every tensor is aligned for its element type. */
        CHECK_MSG((uintptr_t)info.data % info.elem_size == 0, "tensor %s misaligned", c->name);
    }
    CHECK(safetensors_find(f, "fc2.weight", &info) == -1);
    CHECK(safetensors_find(f, "", &info) == -1);

    CHECK(safetensors_metadata_count(f) == 3);
    CHECK_STR_EQ(safetensors_metadata(f, "format"), "pt");
    CHECK_STR_EQ(safetensors_metadata(f, "epoch"), "3");
    CHECK_STR_EQ(safetensors_metadata(f, "note"), "ünïcode ✓");
    CHECK(safetensors_metadata(f, "missing") == NULL);
    const char *key, *value;
    CHECK(safetensors_metadata_at(f, 0, &key, &value) == 0);
    CHECK_STR_EQ(key, "epoch");
    CHECK(safetensors_metadata_at(f, 3, &key, &value) == -1);
    safetensors_close(f);

    /* The raw layout: padded header, data section 8-byte aligned, header
     * entries in name order with the metadata first. */
    size_t len;
    uint8_t *raw = st_test_read(path, &len);
    CHECK(raw != NULL && len > 8);
    if (!raw)
        return;
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)raw[i] << (8 * i);
    CHECK(n % 8 == 0);
    CHECK(n + 8 <= len);
    CHECK(memcmp(raw + 8, "{\"__metadata__\":{\"epoch\":\"3\"", 28) == 0);
    char *header = strndup((const char *)raw + 8, (size_t)n);
    CHECK(strstr(header, "\"adam.step\"") < strstr(header, "\"empty\""));
    CHECK(strstr(header, "\"fc1.weight\"") < strstr(header, "\"mask\""));
    CHECK_CONTAINS(header, "\"adam.step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[");
    CHECK_CONTAINS(header, "\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],");
    CHECK(header[n - 1] == ' ' || header[n - 1] == '}');
    /* Data: adam.step 8 + hist 32 + fc1.bias 16 + fc1.weight 48 + idx 12 + mask 5. */
    CHECK(len == 8 + n + 8 + 32 + 16 + 48 + 12 + 5);
    free(header);

    /* The same bytes through the in-memory reader. */
    st_file *m = st_test_open_buffer(raw, len, "mem", err, sizeof err);
    CHECK_MSG(m != NULL, "%s", err);
    if (m) {
        CHECK(safetensors_find(m, "hist", &info) == 0 && memcmp(info.data, hist, sizeof hist) == 0);
        CHECK_STR_EQ(safetensors_label(m), "mem");
        safetensors_close(m);
    }
    free(raw);
}

static void test_determinism(const char *dir)
{
    char a[4200], b[4200], c[4200], err[512];
    snprintf(a, sizeof a, "%s/a.safetensors", dir);
    snprintf(b, sizeof b, "%s/b.safetensors", dir);
    snprintf(c, sizeof c, "%s/c.safetensors", dir);
    st_writer *w1 = make_writer(0);
    st_writer *w2 = make_writer(1); /* same content, added in reverse */
    CHECK_MSG(st_test_commit(w1, a, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(st_test_commit(w2, b, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(st_test_commit(w1, c, err, sizeof err) == 0, "%s", err); /* again */
    size_t la, lb, lc;
    uint8_t *ra = st_test_read(a, &la), *rb = st_test_read(b, &lb), *rc = st_test_read(c, &lc);
    CHECK(ra && rb && rc);
    CHECK(la == lb && la == lc);
    CHECK(ra && rb && la == lb && memcmp(ra, rb, la) == 0);
    CHECK(ra && rc && la == lc && memcmp(ra, rc, la) == 0);
    free(ra);
    free(rb);
    free(rc);

    /* Changing one element changes the file. */
    float saved = fc1_w[0];
    fc1_w[0] = 99.0f;
    CHECK_MSG(st_test_commit(w1, c, err, sizeof err) == 0, "%s", err);
    fc1_w[0] = saved;
    rc = st_test_read(c, &lc);
    ra = st_test_read(a, &la);
    CHECK(ra && rc && la == lc && memcmp(ra, rc, la) != 0);
    free(ra);
    free(rc);
    safetensors_writer_free(w1);
    safetensors_writer_free(w2);
}

static void test_empty_file(const char *dir)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    st_writer *w = safetensors_writer_new();
    CHECK_MSG(st_test_commit(w, path, err, sizeof err) == 0, "%s", err);
    safetensors_writer_free(w);
    size_t len;
    uint8_t *raw = st_test_read(path, &len);
    CHECK(raw && len == 16 && raw[0] == 8 && memcmp(raw + 8, "{}      ", 8) == 0);
    free(raw);
    st_file *f = st_test_open(path, 0, err, sizeof err);
    CHECK_MSG(f != NULL, "%s", err);
    CHECK(safetensors_count(f) == 0);
    CHECK(safetensors_metadata_count(f) == 0);
    st_tensor_info info;
    CHECK(safetensors_tensor(f, 0, &info) == -1);
    safetensors_close(f);
}

static void expect_add_error(st_writer *w, const char *name, int32_t dtype, const int64_t *shape,
                             uint32_t ndim, const void *data, uint64_t nbytes, const char *want)
{
    char err[512] = "";
    CHECK(st_test_add(w, name, dtype, shape, ndim, data, nbytes, err, sizeof err) == -1);
    CHECK_CONTAINS(err, want);
}

static void test_writer_errors(void)
{
    st_writer *w = safetensors_writer_new();
    float buf[16] = {0};
    int64_t s22[2] = {2, 2}, neg[2] = {2, -2}, huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 1 << 20};
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    char err[512];
    CHECK(st_test_add(w, "ok", LOOM_DTYPE_F32, s22, 2, buf, 16, err, sizeof err) == 0);
    expect_add_error(w, "x", LOOM_DTYPE_F32, s22, 2, buf, 12,
                     "tensor 'x': 12 bytes given, F32 [2, 2] needs 16");
    expect_add_error(w, "ok", LOOM_DTYPE_F32, s22, 2, buf, 16, "tensor 'ok': added twice");
    expect_add_error(w, "__metadata__", LOOM_DTYPE_F32, s22, 2, buf, 16, "reserved");
    expect_add_error(w, "", LOOM_DTYPE_F32, s22, 2, buf, 16, "non-empty name");
    expect_add_error(w, "n", LOOM_DTYPE_F32, neg, 2, buf, 16, "tensor 'n': dimension 1 is negative (-2)");
    expect_add_error(w, "d", 99, s22, 2, buf, 16, "tensor 'd': dtype 99 is not a loom_dtype");
    expect_add_error(w, "d", ST_DTYPE_OTHER, s22, 2, buf, 16, "is not a loom_dtype");
    expect_add_error(w, "nine", LOOM_DTYPE_F32, nine, 9, buf, 4, "9 dimensions, at most 8");
    expect_add_error(w, "null", LOOM_DTYPE_F32, s22, 2, NULL, 16, "data is NULL");
    expect_add_error(w, "big", LOOM_DTYPE_F64, huge, 3, buf, 16, "overflows a 64-bit byte count");
    expect_add_error(w, "bad\xff", LOOM_DTYPE_F32, s22, 2, buf, 16, "not valid UTF-8");

    loom_tensor_view view = {.struct_size = sizeof view, .dtype = LOOM_DTYPE_F32, .ndim = 2,
                             .on_device = 1, .shape = {2, 2}, .name = "gpu", .data = buf,
                             .nbytes = 16};
    CHECK(st_test_add_view(w, &view, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "tensor 'gpu': data is in device memory");
    view.on_device = 0;
    CHECK_MSG(st_test_add_view(w, &view, err, sizeof err) == 0, "%s", err);

    CHECK(safetensors_writer_set_metadata(w, "k", NULL) == -1);
    CHECK(safetensors_writer_set_metadata(w, "k\xc3", "v") == -1);
    CHECK(st_test_commit(w, "", err, sizeof err) == -1);
    safetensors_writer_free(w);

    CHECK_STR_EQ(safetensors_dtype_name(LOOM_DTYPE_I64), "I64");
    CHECK(safetensors_dtype_name(42) == NULL);
    CHECK(safetensors_dtype_size(LOOM_DTYPE_F64) == 8);
    CHECK(safetensors_dtype_size(LOOM_DTYPE_U8) == 1);
    CHECK(safetensors_dtype_size(0) == 0);
}

int main(void)
{
    char dir[4096];
    if (st_test_mkdtemp(dir, sizeof dir) != 0) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip(dir);
    test_determinism(dir);
    test_empty_file(dir);
    test_writer_errors();
    st_test_rmdir(dir);
    return CHECK_DONE();
}
