/*
 * fuzz_csv.c - libFuzzer target for the native adapter's CSV reader (raw or
 * gzip), the other dataset format a training spec can name. The first input
 * byte picks the reader's options, the rest is the file:
 *
 *     bits 0-1: label column 0, 1, -1 (the last) or 5
 *     bit 2:    scale 1/255 (pixels as 0..255) instead of 1
 *
 * A refusal must say why; an accepted dataset must have a consistent shape
 * and every row is read back with get(): features in [0, 1] (the reader's
 * promise after scaling), labels below the class count.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fuzz_dataset.h"
#include "fuzz_support.h"

/* The shape this reader promises for what it accepts. */
static void check_shape(const native_dataset *ds)
{
    if (ds->count == 0 || ds->ndim != 1 || ds->sample_size < 1 ||
        ds->shape[0] != ds->sample_size || ds->classes < 1 || ds->classes > 65536)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int32_t label_columns[4] = {0, 1, -1, 5};
    static char path[4096];
    if (!path[0])
        fuzz_path(path, sizeof path, "%s/data.csv", fuzz_scratch_dir());
    if (size < 1)
        return 0;
    int32_t label_column = label_columns[data[0] & 3];
    double scale = (data[0] & 4) ? 1.0 / 255.0 : 1.0;
    fuzz_write_file(path, data + 1, size - 1);

    native_dataset *ds = NULL;
    char err[1024];
    err[0] = '\0';
    int rc = native_csv_open(path, label_column, scale, &ds, err, sizeof err);
    fuzz_check_open(rc, ds, err, check_shape);
    return 0;
}
