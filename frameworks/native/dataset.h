/*
 * dataset.h - the adapter's view of training data: a numbered set of
 * samples, each a float tensor in [0, 1] and an integer class label. One
 * opener per file format (IDX, CSV) fills the same struct, so adding a
 * format means adding one file and one line in dataset.c.
 *
 * Datasets are read fully into memory when opened (MNIST-sized data is tens
 * of megabytes) so get() is a copy with no I/O and cannot fail.
 */
#ifndef NATIVE_DATASET_H
#define NATIVE_DATASET_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct native_dataset native_dataset;

struct native_dataset {
    uint64_t count;        /* samples */
    int32_t shape[3];      /* one sample: [features] or [C, H, W] */
    int32_t ndim;          /* 1 or 3 */
    int64_t sample_size;   /* product of shape */
    int32_t classes;       /* largest label + 1 */
    /* Writes sample `index` (< count) as sample_size floats and its label. */
    void (*get)(const native_dataset *ds, uint64_t index, float *x,
                int32_t *label);
    void (*close)(native_dataset *ds);
};

typedef enum native_dataset_split {
    NATIVE_DATASET_TRAIN = 0,
    NATIVE_DATASET_TEST = 1
} native_dataset_split;

/* Opens one split of the "dataset" object of the model JSON. Relative paths
 * resolve against data_dir first, then code_dir (either may be NULL). The
 * test split is optional: when the JSON names no test files, *out is NULL
 * and the call succeeds. Returns 0 or a loom_code with a message. */
int native_dataset_open(const cJSON *dataset, native_dataset_split split,
                        const char *data_dir, const char *code_dir,
                        native_dataset **out, char *err, size_t errlen);

/* IDX files (MNIST, Fashion-MNIST), gzip-compressed or raw: unsigned-byte
 * images [N, H, W] or [N, C, H, W] scaled by 1/255, and [N] labels. */
int native_idx_open(const char *images_path, const char *labels_path,
                    native_dataset **out, char *err, size_t errlen);

/* A CSV file (optionally gzip-compressed), one sample per line, numbers
 * separated by commas; the label is column `label_column` (negative counts
 * from the end). A first line that is not all numbers is a header. Features
 * are multiplied by `scale` and must then lie in [0, 1]. */
int native_csv_open(const char *path, int32_t label_column, double scale,
                    native_dataset **out, char *err, size_t errlen);

/* Resolves `path` (named by JSON field `field`, for messages) to an existing
 * file: absolute as is, else data_dir/path, else code_dir/path. */
int native_resolve_path(const char *field, const char *path,
                        const char *data_dir, const char *code_dir, char *out,
                        size_t outlen, char *err, size_t errlen);

#endif
