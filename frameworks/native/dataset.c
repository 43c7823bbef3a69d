/*
 * dataset.c - picks the reader for the model JSON's "dataset" object and
 * resolves its file names against DATA_DIR and the model directory.
 */
#include "dataset.h"

#include <loom/abi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"

#define INVALID LOOM_ERR_INVALID_ARGUMENT

int native_resolve_path(const char *field, const char *path,
                        const char *data_dir, const char *code_dir, char *out,
                        size_t outlen, char *err, size_t errlen)
{
    if (path[0] == '/') {
        if (access(path, R_OK) != 0)
            return native_err(err, errlen, LOOM_ERR_NOT_FOUND,
                              "%s: cannot read file '%s'", field, path);
        snprintf(out, outlen, "%s", path);
        return 0;
    }
    const char *bases[2] = {data_dir, code_dir};
    for (int i = 0; i < 2; i++) {
        if (!bases[i] || !bases[i][0])
            continue;
        if ((size_t)snprintf(out, outlen, "%s/%s", bases[i], path) >= outlen)
            return native_err(err, errlen, INVALID, "%s: path '%s/%s' is too long",
                              field, bases[i], path);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return native_err(err, errlen, LOOM_ERR_NOT_FOUND,
                      "%s: file '%s' not found (looked in data_dir '%s' and "
                      "code_dir '%s')",
                      field, path, data_dir ? data_dir : "(none)",
                      code_dir ? code_dir : "(none)");
}

/* The string field `name` of the dataset object, or NULL when absent. */
static int get_path_field(const cJSON *dataset, const char *name,
                          const char **out, char *err, size_t errlen)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(dataset, name);
    *out = NULL;
    if (!item)
        return 0;
    if (!cJSON_IsString(item) || !item->valuestring[0])
        return native_err(err, errlen, INVALID,
                          "dataset.%s: must be a non-empty file name", name);
    *out = item->valuestring;
    return 0;
}

static int open_idx(const cJSON *dataset, native_dataset_split split,
                    const char *data_dir, const char *code_dir,
                    native_dataset **out, char *err, size_t errlen)
{
    const char *images_field = split == NATIVE_DATASET_TRAIN ? "train_images" : "test_images";
    const char *labels_field = split == NATIVE_DATASET_TRAIN ? "train_labels" : "test_labels";
    const char *images, *labels;
    int rc;
    if ((rc = get_path_field(dataset, images_field, &images, err, errlen)) ||
        (rc = get_path_field(dataset, labels_field, &labels, err, errlen)))
        return rc;
    if (split == NATIVE_DATASET_TEST && !images && !labels)
        return 0;
    if (!images || !labels)
        return native_err(err, errlen, INVALID, "dataset (idx): missing field '%s'",
                          images ? labels_field : images_field);
    char images_path[4096], labels_path[4096], field[64];
    snprintf(field, sizeof field, "dataset.%s", images_field);
    if ((rc = native_resolve_path(field, images, data_dir, code_dir, images_path,
                                  sizeof images_path, err, errlen)))
        return rc;
    snprintf(field, sizeof field, "dataset.%s", labels_field);
    if ((rc = native_resolve_path(field, labels, data_dir, code_dir, labels_path,
                                  sizeof labels_path, err, errlen)))
        return rc;
    return native_idx_open(images_path, labels_path, out, err, errlen);
}

static int open_csv(const cJSON *dataset, native_dataset_split split,
                    const char *data_dir, const char *code_dir,
                    native_dataset **out, char *err, size_t errlen)
{
    const char *name = split == NATIVE_DATASET_TRAIN ? "train" : "test";
    const char *file;
    int rc = get_path_field(dataset, name, &file, err, errlen);
    if (rc)
        return rc;
    if (!file) {
        if (split == NATIVE_DATASET_TEST)
            return 0;
        return native_err(err, errlen, INVALID, "dataset (csv): missing field 'train'");
    }
    int32_t label_column = 0;
    const cJSON *col = cJSON_GetObjectItemCaseSensitive(dataset, "label_column");
    if (col) {
        if (!cJSON_IsNumber(col) || col->valuedouble != (double)col->valueint)
            return native_err(err, errlen, INVALID,
                              "dataset.label_column: must be an integer (negative "
                              "counts from the last column)");
        label_column = col->valueint;
    }
    double scale = 1.0 / 255.0;
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(dataset, "scale");
    if (sc) {
        if (!cJSON_IsNumber(sc) || !(sc->valuedouble > 0))
            return native_err(err, errlen, INVALID,
                              "dataset.scale: must be a positive number");
        scale = sc->valuedouble;
    }
    char path[4096], field[32];
    snprintf(field, sizeof field, "dataset.%s", name);
    if ((rc = native_resolve_path(field, file, data_dir, code_dir, path, sizeof path,
                                  err, errlen)))
        return rc;
    return native_csv_open(path, label_column, scale, out, err, errlen);
}

int native_dataset_open(const cJSON *dataset, native_dataset_split split,
                        const char *data_dir, const char *code_dir,
                        native_dataset **out, char *err, size_t errlen)
{
    *out = NULL;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(dataset, "format");
    if (!format)
        return native_err(err, errlen, INVALID, "dataset: missing field 'format'");
    if (!cJSON_IsString(format))
        return native_err(err, errlen, INVALID,
                          "dataset.format: must be \"idx\" or \"csv\"");
    if (strcmp(format->valuestring, "idx") == 0)
        return open_idx(dataset, split, data_dir, code_dir, out, err, errlen);
    if (strcmp(format->valuestring, "csv") == 0)
        return open_csv(dataset, split, data_dir, code_dir, out, err, errlen);
    return native_err(err, errlen, INVALID,
                      "dataset.format: unknown format '%s' (expected \"idx\" or "
                      "\"csv\")",
                      format->valuestring);
}
