/*
 * native_fixtures.h - test fixtures for the native adapter made on the fly:
 * temporary directories, IDX files (raw or gzip) and a small synthetic
 * image dataset a tiny network learns in a few epochs.
 */
#ifndef NATIVE_FIXTURES_H
#define NATIVE_FIXTURES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- files -------------------------------------------------------------- */

/* A fresh directory under /tmp; removed by tmpdir_remove. */
static inline void tmpdir_make(char *out, size_t outlen)
{
    snprintf(out, outlen, "/tmp/loom-native-test-XXXXXX");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        abort();
    }
}

static inline void tmpdir_remove(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static inline void path_join(char *out, size_t outlen, const char *dir,
                             const char *name)
{
    snprintf(out, outlen, "%s/%s", dir, name);
}

/* Writes `len` bytes, gzip-compressed when `gz`. */
static inline void write_bytes(const char *path, const void *data, size_t len,
                               int gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || gzwrite(f, data, (unsigned)len) != (int)len) {
            fprintf(stderr, "cannot write %s\n", path);
            abort();
        }
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, len, f) != len) {
            fprintf(stderr, "cannot write %s\n", path);
            abort();
        }
        fclose(f);
    }
}

/* An unsigned-byte IDX file with `ndims` dimensions. `data_len` may be
 * shorter than the dimensions promise (to make truncated files). */
static inline void write_idx(const char *path, const uint32_t *dims, int ndims,
                             const uint8_t *data, size_t data_len, int gz)
{
    size_t header = 4 + 4 * (size_t)ndims;
    uint8_t *buf = malloc(header + data_len);
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = 0x08;
    buf[3] = (uint8_t)ndims;
    for (int i = 0; i < ndims; i++) {
        buf[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        buf[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        buf[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        buf[7 + 4 * i] = (uint8_t)dims[i];
    }
    if (data_len)
        memcpy(buf + header, data, data_len);
    write_bytes(path, buf, header + data_len, gz);
    free(buf);
}

static inline void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text), 0);
}

/* ---- a synthetic dataset ------------------------------------------------ */

/* 1x8x8 images of 3 classes that a small net learns in a few epochs: class
 * c lights rows 2c..2c+1 (a horizontal bar) over uniform noise. */
static inline uint32_t lcg_next(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static inline void write_bars_dataset(const char *dir, const char *prefix,
                                      uint32_t count, uint32_t seed, int gz)
{
    uint8_t *images = malloc((size_t)count * 64), *labels = malloc(count);
    uint32_t s = seed;
    for (uint32_t i = 0; i < count; i++) {
        int c = (int)(lcg_next(&s) % 3);
        labels[i] = (uint8_t)c;
        for (int p = 0; p < 64; p++) {
            int row = p / 8;
            int bar = row == 2 * c + 1 || row == 2 * c + 2;
            int v = (int)(lcg_next(&s) % 120) + (bar ? 110 : 0);
            images[(size_t)i * 64 + p] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
    char path[512], name[128];
    uint32_t idims[3] = {count, 8, 8}, ldims[1] = {count};
    snprintf(name, sizeof name, "%s-images-idx3-ubyte%s", prefix, gz ? ".gz" : "");
    path_join(path, sizeof path, dir, name);
    write_idx(path, idims, 3, images, (size_t)count * 64, gz);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte%s", prefix, gz ? ".gz" : "");
    path_join(path, sizeof path, dir, name);
    write_idx(path, ldims, 1, labels, count, gz);
    free(images);
    free(labels);
}

#endif
