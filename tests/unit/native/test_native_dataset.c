/*
 * test_native_dataset.c - the IDX reader on generated gzip and raw files
 * (good files, bad magic, truncation, a count mismatch, a missing file;
 * gzip files the whole-file inflation declines: two members read, a
 * trailer that overstates or understates the size refused as corrupt),
 * the CSV reader, and path resolution against data_dir and code_dir.
 */
#include <loom/abi.h>
#include <math.h>

#include "../../check.h"
#include "dataset.h"
#include "errbuf.h"

#include "native_fixtures.h"

static char dir[256];

/* A message buffer as a pointer, for CHECK_CONTAINS. */
static const char *msg_text(const char *buf) { return buf; }

static void make_path(char *out, size_t len, const char *name)
{
    path_join(out, len, dir, name);
}

static void test_idx_good(int gz)
{
    uint8_t images[2 * 3 * 4], labels[2] = {4, 1};
    for (int i = 0; i < 24; i++)
        images[i] = (uint8_t)(i * 10);
    uint32_t idims[3] = {2, 3, 4}, ldims[1] = {2};
    char ip[512], lp[512], err[NATIVE_ERR_LEN];
    make_path(ip, sizeof ip, gz ? "good-images.gz" : "good-images");
    make_path(lp, sizeof lp, gz ? "good-labels.gz" : "good-labels");
    write_idx(ip, idims, 3, images, sizeof images, gz);
    write_idx(lp, ldims, 1, labels, sizeof labels, gz);
    native_dataset *ds = NULL;
    int rc = native_idx_open(ip, lp, &ds, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc)
        return;
    CHECK(ds->count == 2);
    CHECK(ds->ndim == 3 && ds->shape[0] == 1 && ds->shape[1] == 3 && ds->shape[2] == 4);
    CHECK(ds->sample_size == 12);
    CHECK(ds->classes == 5);
    float x[12];
    int32_t label;
    ds->get(ds, 1, x, &label);
    CHECK(label == 1);
    CHECK(fabsf(x[0] - 120.0f / 255.0f) < 1e-7f);
    CHECK(fabsf(x[11] - 230.0f / 255.0f) < 1e-7f);
    ds->close(ds);
}

/* Reads back images written as `path` (see the callers) and checks them
 * against the first test's values. */
static void check_images(const char *what, const char *ip, const char *lp)
{
    char err[NATIVE_ERR_LEN];
    native_dataset *ds = NULL;
    int rc = native_idx_open(ip, lp, &ds, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", what, err);
    if (rc)
        return;
    float x[12];
    int32_t label;
    ds->get(ds, 1, x, &label);
    CHECK_MSG(ds->count == 2 && label == 1 && fabsf(x[11] - 230.0f / 255.0f) < 1e-7f, "%s", what);
    ds->close(ds);
}

/* The gzip trailer's size (its last 4 bytes, little-endian) set to `size`. */
static void set_trailer_size(const char *path, uint32_t size)
{
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, -4, SEEK_END) == 0);
    uint8_t t[4] = {(uint8_t)size, (uint8_t)(size >> 8), (uint8_t)(size >> 16), (uint8_t)(size >> 24)};
    CHECK(f && fwrite(t, 1, 4, f) == 4);
    if (f)
        fclose(f);
}

static void test_idx_gzip_shapes(void)
{
    uint8_t file[16 + 24], labels[2] = {4, 1};
    uint32_t ldims[1] = {2};
    char ip[512], lp[512];
    make_path(lp, sizeof lp, "shape-labels.gz");
    write_idx(lp, ldims, 1, labels, sizeof labels, 1);
    /* the images file's bytes: header (2x3x4) and data */
    const uint8_t header[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};
    memcpy(file, header, 16);
    for (int i = 0; i < 24; i++)
        file[16 + i] = (uint8_t)(i * 10);

    /* two members (as `cat a.gz b.gz` makes): the second holds the tail */
    make_path(ip, sizeof ip, "two-members.gz");
    remove(ip);
    for (int part = 0; part < 2; part++) {
        gzFile f = gzopen(ip, "ab");
        CHECK(f && gzwrite(f, file + part * 20, 20) == 20);
        if (f)
            gzclose(f);
    }
    check_images("two gzip members", ip, lp);

    /* a trailer that lies is a corrupt file: refused, naming it and why */
    char err[NATIVE_ERR_LEN];
    native_dataset *ds = NULL;
    make_path(ip, sizeof ip, "lying-trailer.gz");
    write_bytes(ip, file, sizeof file, 1);
    uint32_t lies[2] = {0xffffffffu, 7};
    for (int k = 0; k < 2; k++) {
        set_trailer_size(ip, lies[k]);
        CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(msg_text(err), "lying-trailer.gz': corrupt gzip data (incorrect length check)");
    }
}

static void test_idx_errors(void)
{
    char ip[512], lp[512], err[NATIVE_ERR_LEN];
    native_dataset *ds = NULL;
    uint8_t data[2 * 4 * 4] = {0}, labels[3] = {0, 1, 2};
    uint32_t idims[3] = {2, 4, 4}, ldims[1] = {2};

    /* Bad magic: a labels file where images are expected, and garbage. */
    make_path(ip, sizeof ip, "labels-as-images.gz");
    make_path(lp, sizeof lp, "labels.gz");
    write_idx(ip, ldims, 1, labels, 2, 1);
    write_idx(lp, ldims, 1, labels, 2, 1);
    CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "labels-as-images.gz");
    CHECK_CONTAINS(msg_text(err), "bad magic number 0x00000801");
    make_path(ip, sizeof ip, "garbage");
    write_text(ip, "GIF89a not an idx file");
    CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "garbage");
    CHECK_CONTAINS(msg_text(err), "bad magic number 0x47494638");

    /* Truncated data, raw and gzip: names the file, expected and actual. */
    for (int gz = 0; gz <= 1; gz++) {
        make_path(ip, sizeof ip, gz ? "short-images.gz" : "short-images");
        write_idx(ip, idims, 3, data, 20, gz);
        CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(msg_text(err), gz ? "short-images.gz" : "short-images");
        CHECK_CONTAINS(msg_text(err), "truncated");
        CHECK_CONTAINS(msg_text(err), "2x4x4 (32 bytes");
        CHECK_CONTAINS(msg_text(err), "only 20 bytes follow");
    }
    /* Truncated header. */
    make_path(ip, sizeof ip, "short-header");
    write_bytes(ip, "\0\0\x08\x03\0\0", 6, 0);
    CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "truncated: expected 3 dimension sizes");

    /* Count mismatch between images and labels. */
    make_path(ip, sizeof ip, "images.gz");
    write_idx(ip, idims, 3, data, sizeof data, 1);
    uint32_t three[1] = {3};
    make_path(lp, sizeof lp, "three-labels.gz");
    write_idx(lp, three, 1, labels, 3, 1);
    CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "has 2 samples but labels file");
    CHECK_CONTAINS(msg_text(err), "three-labels.gz' has 3");

    /* A missing file names its path. */
    make_path(lp, sizeof lp, "no-such-labels.gz");
    CHECK(native_idx_open(ip, lp, &ds, err, sizeof err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(msg_text(err), "no-such-labels.gz");
    CHECK(ds == NULL);
}

static void test_dataset_json(void)
{
    /* Relative names resolve in data_dir first, then code_dir. */
    char data_dir[512], code_dir[512], err[NATIVE_ERR_LEN], path[512];
    make_path(data_dir, sizeof data_dir, "data");
    make_path(code_dir, sizeof code_dir, "code");
    CHECK(mkdir(data_dir, 0755) == 0 && mkdir(code_dir, 0755) == 0);
    write_bars_dataset(code_dir, "train", 30, 1, 1);
    write_bars_dataset(data_dir, "train", 40, 2, 1);
    write_bars_dataset(code_dir, "t10k", 10, 3, 0);
    cJSON *json = cJSON_Parse(
        "{\"format\": \"idx\", \"train_images\": \"train-images-idx3-ubyte.gz\","
        " \"train_labels\": \"train-labels-idx1-ubyte.gz\","
        " \"test_images\": \"t10k-images-idx3-ubyte\","
        " \"test_labels\": \"t10k-labels-idx1-ubyte\"}");
    native_dataset *ds = NULL;
    CHECK(native_dataset_open(json, NATIVE_DATASET_TRAIN, data_dir, code_dir, &ds, err,
                              sizeof err) == 0);
    CHECK(ds && ds->count == 40); /* data_dir wins */
    if (ds)
        ds->close(ds);
    CHECK(native_dataset_open(json, NATIVE_DATASET_TEST, data_dir, code_dir, &ds, err,
                              sizeof err) == 0);
    CHECK(ds && ds->count == 10); /* only in code_dir */
    if (ds)
        ds->close(ds);
    CHECK(native_dataset_open(json, NATIVE_DATASET_TRAIN, NULL, "/nonexistent", &ds,
                              err, sizeof err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(msg_text(err), "dataset.train_images: file 'train-images-idx3-ubyte.gz' not found");
    CHECK_CONTAINS(msg_text(err), "/nonexistent");
    cJSON_Delete(json);

    /* No test files: the split is simply absent. */
    json = cJSON_Parse("{\"format\": \"idx\", \"train_images\": \"a\", "
                       "\"train_labels\": \"b\"}");
    CHECK(native_dataset_open(json, NATIVE_DATASET_TEST, data_dir, code_dir, &ds, err,
                              sizeof err) == 0);
    CHECK(ds == NULL);
    cJSON_Delete(json);
    json = cJSON_Parse("{\"format\": \"idx\", \"train_images\": \"a\"}");
    CHECK(native_dataset_open(json, NATIVE_DATASET_TRAIN, data_dir, code_dir, &ds, err,
                              sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "missing field 'train_labels'");
    cJSON_Delete(json);
    json = cJSON_Parse("{\"format\": \"hdf5\"}");
    CHECK(native_dataset_open(json, NATIVE_DATASET_TRAIN, data_dir, code_dir, &ds, err,
                              sizeof err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "unknown format 'hdf5'");
    cJSON_Delete(json);
    snprintf(path, sizeof path, "%s", dir);
}

static void test_csv(void)
{
    char path[512], err[NATIVE_ERR_LEN];
    native_dataset *ds = NULL;
    /* The committed fixture: a header, label in column 0, 0..255 pixels. */
    snprintf(path, sizeof path, "%s/tiny.csv", NATIVE_TEST_DATA);
    int rc = native_csv_open(path, 0, 1.0 / 255.0, &ds, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (!rc) {
        CHECK(ds->count == 12);
        CHECK(ds->ndim == 1 && ds->sample_size == 4);
        CHECK(ds->classes == 3);
        float x[4];
        int32_t label;
        ds->get(ds, 0, x, &label);
        CHECK(label == 0);
        CHECK(fabsf(x[0] - 1.0f) < 1e-6f && fabsf(x[3]) < 1e-6f);
        ds->close(ds);
    }

    /* Label in the last column, no header, gzip, features already in [0,1]. */
    make_path(path, sizeof path, "last.csv.gz");
    const char *text = "0.5,0.25,2\n1,0,1\n\n";
    write_bytes(path, text, strlen(text), 1);
    CHECK(native_csv_open(path, -1, 1.0, &ds, err, sizeof err) == 0);
    if (ds) {
        CHECK(ds->count == 2 && ds->sample_size == 2 && ds->classes == 3);
        float x[2];
        int32_t label;
        ds->get(ds, 0, x, &label);
        CHECK(label == 2 && fabsf(x[0] - 0.5f) < 1e-7f && fabsf(x[1] - 0.25f) < 1e-7f);
        ds->close(ds);
    }

    /* Through the dataset JSON, found in code_dir; no test file named. */
    cJSON *json = cJSON_Parse("{\"format\": \"csv\", \"train\": \"tiny.csv\","
                              " \"label_column\": 0, \"scale\": 0.00392156862745098}");
    CHECK(native_dataset_open(json, NATIVE_DATASET_TRAIN, "/nonexistent", NATIVE_TEST_DATA,
                              &ds, err, sizeof err) == 0);
    CHECK(ds && ds->count == 12 && ds->classes == 3);
    if (ds)
        ds->close(ds);
    CHECK(native_dataset_open(json, NATIVE_DATASET_TEST, "/nonexistent", NATIVE_TEST_DATA,
                              &ds, err, sizeof err) == 0);
    CHECK(ds == NULL);
    cJSON_Delete(json);

    make_path(path, sizeof path, "ragged.csv");
    write_text(path, "1,2,3\n0,4\n");
    CHECK(native_csv_open(path, 0, 1.0 / 255, &ds, err, sizeof err) ==
          LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "line 2: found 2 columns (expected 3");
    make_path(path, sizeof path, "word.csv");
    write_text(path, "1,2,3\n0,x,4\n");
    CHECK(native_csv_open(path, 0, 1.0 / 255, &ds, err, sizeof err) ==
          LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "line 2: column 1 is not a number");
    make_path(path, sizeof path, "range.csv");
    write_text(path, "1,2,300\n");
    CHECK(native_csv_open(path, 0, 1.0 / 255, &ds, err, sizeof err) ==
          LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "line 1 column 2: 300");
    CHECK_CONTAINS(msg_text(err), "outside [0, 1]");
    make_path(path, sizeof path, "label.csv");
    write_text(path, "1.5,2,3\n");
    CHECK(native_csv_open(path, 0, 1.0 / 255, &ds, err, sizeof err) ==
          LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(msg_text(err), "label column 0 holds 1.5");
    make_path(path, sizeof path, "none.csv");
    CHECK(native_csv_open(path, 0, 1.0 / 255, &ds, err, sizeof err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(msg_text(err), "none.csv");
}

int main(void)
{
    tmpdir_make(dir, sizeof dir);
    test_idx_good(1);
    test_idx_good(0);
    test_idx_gzip_shapes();
    test_idx_errors();
    test_dataset_json();
    test_csv();
    tmpdir_remove(dir);
    return CHECK_DONE();
}
