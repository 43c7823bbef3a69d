/*
 * fuzz_idx.c - libFuzzer target for the native adapter's IDX reader (MNIST
 * and Fashion-MNIST files, raw or gzip), which reads files a user names in
 * the training spec. One input carries both files of a split:
 *
 *     [2 bytes: big-endian length L of the images file][L bytes images][labels]
 *
 * (L is clamped to what follows). Both are written to the scratch directory
 * and opened with native_idx_open. A refusal must say why; an accepted
 * dataset must have a consistent shape, and every sample is read back with
 * get(): pixels in [0, 1], labels below the class count. ASan catches a
 * reader that let a short file through.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fuzz_dataset.h"
#include "fuzz_support.h"

/* The shape this reader promises for what it accepts. */
static void check_shape(const native_dataset *ds)
{
    if (ds->count == 0 || ds->ndim != 3 || ds->classes < 1 || ds->classes > 256)
        abort();
    if (ds->sample_size != (int64_t)ds->shape[0] * ds->shape[1] * ds->shape[2] ||
        ds->sample_size < 1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char images[4096], labels[4096];
    if (!images[0]) {
        fuzz_path(images, sizeof images, "%s/images-idx-ubyte", fuzz_scratch_dir());
        fuzz_path(labels, sizeof labels, "%s/labels-idx1-ubyte", fuzz_scratch_dir());
    }
    if (size < 2)
        return 0;
    size_t images_len = (size_t)data[0] << 8 | data[1];
    if (images_len > size - 2)
        images_len = size - 2;
    fuzz_write_file(images, data + 2, images_len);
    fuzz_write_file(labels, data + 2 + images_len, size - 2 - images_len);

    native_dataset *ds = NULL;
    char err[1024];
    err[0] = '\0';
    int rc = native_idx_open(images, labels, &ds, err, sizeof err);
    fuzz_check_open(rc, ds, err, check_shape);
    return 0;
}
