/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader: any
 * input is opened with safetensors_open_buffer; when accepted, every tensor and
 * metadata entry is walked and every data byte read, so a reader that let a
 * bad offset through shows up as an ASan out-of-bounds report.
 *
 * Build (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Ihost -Isdk/include \
 *     tests/fuzz/safetensors/fuzz_safetensors.c host/train/safetensors.c -lcjson -lm
 * Run: ./a.out -max_total_time=30 tests/fuzz/safetensors/corpus
 */
#include "train/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    err[0] = 0;
    st_file *f;
    if (loom_err_take(safetensors_open_buffer(data, size, "fuzz", &f), err, sizeof err) != LOOM_OK) {
        /* Every refusal must say something, prefixed by the label. */
        if (strncmp(err, "fuzz: ", 6) != 0)
            abort();
        return 0;
    }
    uint8_t sum = 0;
    for (uint32_t i = 0; i < safetensors_count(f); i++) {
        st_tensor_info info;
        if (safetensors_tensor(f, i, &info) != 0 || !info.name || !info.data)
            abort();
        uint64_t elems = 1;
        for (uint32_t d = 0; d < info.ndim; d++)
            elems *= (uint64_t)info.shape[d];
        if (elems * info.elem_size != info.nbytes)
            abort();
        for (uint64_t b = 0; b < info.nbytes; b++)
            sum ^= ((const uint8_t *)info.data)[b];
        st_tensor_info again;
        if (safetensors_find(f, info.name, &again) != 0 || again.data != info.data)
            abort();
    }
    for (uint32_t i = 0; i < safetensors_metadata_count(f); i++) {
        const char *key, *value;
        if (safetensors_metadata_at(f, i, &key, &value) != 0 || safetensors_metadata(f, key) != value)
            abort();
    }
    safetensors_close(f);
    /* Keep the data reads from being optimised away. */
    volatile uint8_t sink = sum;
    (void)sink;
    return 0;
}
