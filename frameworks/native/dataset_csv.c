/*
 * dataset_csv.c - numeric CSV files (e.g. the Kaggle MNIST CSVs): one sample
 * per line, the label in one column, features in the rest. Read through
 * zlib so "x.csv.gz" works as well as "x.csv".
 */
#include "dataset.h"

#include <errno.h>
#include <loom/abi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "errbuf.h"

#define INVALID LOOM_ERR_INVALID_ARGUMENT

typedef struct csv_dataset {
    native_dataset base;
    float *features; /* count x sample_size, already scaled */
    int32_t *labels;
} csv_dataset;

/* Reads one line of any length into *buf (grown as needed), without the
 * newline. Returns 0 at end of file. */
static int read_line(gzFile f, char **buf, size_t *cap)
{
    size_t len = 0;
    for (;;) {
        if (*cap - len < 2) {
            size_t grown = *cap ? *cap * 2 : 4096;
            char *p = realloc(*buf, grown);
            if (!p)
                return -1;
            *buf = p;
            *cap = grown;
        }
        if (!gzgets(f, *buf + len, (int)(*cap - len)))
            break;
        len += strlen(*buf + len);
        if (len > 0 && (*buf)[len - 1] == '\n')
            break;
    }
    if (len == 0)
        return 0;
    while (len > 0 && ((*buf)[len - 1] == '\n' || (*buf)[len - 1] == '\r'))
        (*buf)[--len] = 0;
    return 1;
}

/* Splits a line into numbers. Returns the field count, or -(1 + index) of
 * the first field that is not a number. */
static int64_t parse_numbers(char *line, double *values, int64_t max)
{
    int64_t n = 0;
    char *p = line;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        while (*end == ' ' || *end == '\t')
            end++;
        if (end == p || errno == ERANGE || (*end != ',' && *end != 0) || !isfinite(v))
            return -(1 + n);
        if (n < max)
            values[n] = v;
        n++;
        if (*end == 0)
            return n;
        p = end + 1;
    }
}

static int64_t count_fields(const char *line)
{
    int64_t n = 1;
    for (; *line; line++)
        n += *line == ',';
    return n;
}

static void csv_get(const native_dataset *ds, uint64_t index, float *x,
                    int32_t *label)
{
    const csv_dataset *csv = (const csv_dataset *)ds;
    memcpy(x, csv->features + index * (uint64_t)ds->sample_size,
           (size_t)ds->sample_size * sizeof(float));
    *label = csv->labels[index];
}

static void csv_close(native_dataset *ds)
{
    csv_dataset *csv = (csv_dataset *)ds;
    if (!csv)
        return;
    free(csv->features);
    free(csv->labels);
    free(csv);
}

/* Appends one row; grows the arrays geometrically. */
static int append_row(csv_dataset *csv, uint64_t *capacity, const double *values,
                      int64_t fields, int64_t label_col, double scale,
                      const char *path, uint64_t line_no, char *err, size_t errlen)
{
    int64_t features = fields - 1;
    if (csv->base.count == *capacity) {
        uint64_t grown = *capacity ? *capacity * 2 : 1024;
        float *f = realloc(csv->features, grown * (uint64_t)features * sizeof(float));
        if (f)
            csv->features = f;
        int32_t *l = realloc(csv->labels, grown * sizeof(int32_t));
        if (l)
            csv->labels = l;
        if (!f || !l)
            return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                              "CSV file '%s': out of memory at line %llu", path,
                              (unsigned long long)line_no);
        *capacity = grown;
    }
    double label = values[label_col];
    if (label < 0 || label != floor(label) || label > 65535)
        return native_err(err, errlen, INVALID,
                          "CSV file '%s' line %llu: label column %lld holds %g "
                          "(expected a class number 0..65535)",
                          path, (unsigned long long)line_no, (long long)label_col,
                          label);
    float *row = csv->features + csv->base.count * (uint64_t)features;
    int64_t j = 0;
    for (int64_t c = 0; c < fields; c++) {
        if (c == label_col)
            continue;
        double v = values[c] * scale;
        if (v < 0 || v > 1)
            return native_err(err, errlen, INVALID,
                              "CSV file '%s' line %llu column %lld: %g scaled by "
                              "%g is %g, outside [0, 1] (set dataset.scale)",
                              path, (unsigned long long)line_no, (long long)c,
                              values[c], scale, v);
        row[j++] = (float)v;
    }
    csv->labels[csv->base.count] = (int32_t)label;
    if ((int32_t)label + 1 > csv->base.classes)
        csv->base.classes = (int32_t)label + 1;
    csv->base.count++;
    return 0;
}

int native_csv_open(const char *path, int32_t label_column, double scale,
                    native_dataset **out, char *err, size_t errlen)
{
    *out = NULL;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return native_err(err, errlen, LOOM_ERR_NOT_FOUND,
                          "CSV file '%s': cannot open", path);
    csv_dataset *csv = calloc(1, sizeof *csv);
    char *line = NULL;
    size_t cap = 0;
    double *values = NULL;
    int64_t fields = 0, label_col = 0;
    uint64_t capacity = 0, line_no = 0;
    int rc = 0, got;
    if (!csv) {
        rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto done;
    }
    while ((got = read_line(f, &line, &cap)) > 0) {
        line_no++;
        if (line[strspn(line, " \t")] == 0)
            continue; /* blank lines, e.g. a trailing one */
        if (fields == 0) {
            fields = count_fields(line);
            if (fields < 2) {
                rc = native_err(err, errlen, INVALID,
                                "CSV file '%s' line %llu: found 1 column (expected "
                                "a label and at least one feature)",
                                path, (unsigned long long)line_no);
                goto done;
            }
            label_col = label_column < 0 ? fields + label_column : label_column;
            if (label_col < 0 || label_col >= fields) {
                rc = native_err(err, errlen, INVALID,
                                "dataset.label_column: %d is outside the %lld "
                                "columns of '%s'",
                                (int)label_column, (long long)fields, path);
                goto done;
            }
            values = malloc((size_t)fields * sizeof(double));
            if (!values) {
                rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
                goto done;
            }
            /* A first line that is not all numbers is a header. */
            if (parse_numbers(line, values, fields) < 0)
                continue;
        }
        int64_t n = parse_numbers(line, values, fields);
        if (n < 0) {
            rc = native_err(err, errlen, INVALID,
                            "CSV file '%s' line %llu: column %lld is not a number",
                            path, (unsigned long long)line_no, (long long)(-n - 1));
            goto done;
        }
        if (n != fields) {
            rc = native_err(err, errlen, INVALID,
                            "CSV file '%s' line %llu: found %lld columns (expected "
                            "%lld like the first line)",
                            path, (unsigned long long)line_no, (long long)n,
                            (long long)fields);
            goto done;
        }
        if ((rc = append_row(csv, &capacity, values, fields, label_col, scale,
                             path, line_no, err, errlen)))
            goto done;
    }
    if (got < 0) {
        rc = native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                        "CSV file '%s': out of memory reading line %llu", path,
                        (unsigned long long)line_no + 1);
        goto done;
    }
    int zerr;
    const char *zmsg = gzerror(f, &zerr);
    if (zerr != Z_OK && zerr != Z_STREAM_END) {
        rc = native_err(err, errlen, INVALID, "CSV file '%s': read error after line %llu: %s",
                        path, (unsigned long long)line_no, zmsg);
        goto done;
    }
    if (csv->base.count == 0) {
        rc = native_err(err, errlen, INVALID, "CSV file '%s': no data rows", path);
        goto done;
    }
    csv->base.ndim = 1;
    csv->base.shape[0] = (int32_t)(fields - 1);
    csv->base.sample_size = fields - 1;
    csv->base.get = csv_get;
    csv->base.close = csv_close;
done:
    gzclose(f);
    free(line);
    free(values);
    if (rc) {
        csv_close(csv ? &csv->base : NULL);
        return rc;
    }
    *out = &csv->base;
    return 0;
}
