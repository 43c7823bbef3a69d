/*
 * test_native_kserve.c - the native kernel's KServe v2 decoder: the numbers
 * read straight from the text are the ones cJSON would give (as floats, bit
 * for bit, over many spellings), the right array is read when several have
 * a "data" key, and what is not JSON, or not numbers, is refused as cJSON
 * would refuse it (including numbers JSON does not allow but strtod does).
 * The decoder reads the numbers in the pass that finds the arrays.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "kserve_decode.h"

static kserve_decoder dec;

/* Decodes `body`: 0 with the numbers in x and *n, -1 when refused; *fast
 * says whether the text was read without cJSON's nodes. */
static int decode(const char *body, float *x, int64_t cap, int64_t *n, int *fast)
{
    kserve_input in;
    int rc = kserve_parse(&dec, body, strlen(body), &in);
    *fast = in.values != NULL;
    if (rc == 0)
        rc = kserve_read_data(&in, x, cap, n);
    kserve_input_free(&in);
    return rc;
}

/* What cJSON makes of inputs[0].data: -1 when it is not an array of
 * numbers (nested allowed) or the body is not JSON. */
static int reference(const char *body, float *x, int64_t cap, int64_t *n)
{
    cJSON *j = cJSON_Parse(body);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "inputs"), 0), "data");
    int rc = j && cJSON_IsArray(d) ? 0 : -1;
    *n = 0;
    /* flattened with an explicit stack: two levels are enough here */
    const cJSON *v, *w;
    cJSON_ArrayForEach(v, d)
    {
        if (cJSON_IsArray(v)) {
            cJSON_ArrayForEach(w, v)
            {
                if (!cJSON_IsNumber(w) || *n >= cap)
                    rc = -1;
                else
                    x[(*n)++] = (float)w->valuedouble;
            }
        } else if (!cJSON_IsNumber(v) || *n >= cap) {
            rc = -1;
        } else {
            x[(*n)++] = (float)v->valuedouble;
        }
    }
    cJSON_Delete(j);
    return rc;
}

static void same_as_cjson(const char *body, int want_fast)
{
    float a[4096], b[4096];
    int64_t na = 0, nb = 0;
    int fast = 0;
    int ra = decode(body, a, 4096, &na, &fast);
    int rb = reference(body, b, 4096, &nb);
    CHECK_MSG(ra == rb, "%.120s: decoder %d, cJSON %d", body, ra, rb);
    CHECK_MSG(want_fast < 0 || fast == want_fast, "%.120s: fast %d", body, fast);
    if (ra == 0 && rb == 0) {
        CHECK_MSG(na == nb, "%.120s: %lld numbers, cJSON %lld", body, (long long)na, (long long)nb);
        for (int64_t i = 0; i < na && i < nb; i++)
            CHECK_MSG(memcmp(&a[i], &b[i], sizeof a[i]) == 0, "%.120s: [%lld] %.9g != %.9g", body,
                      (long long)i, a[i], b[i]);
    }
}

static void test_spellings(void)
{
    const char *numbers[] = {"0", "-0", "1", "-1", "0.5", "0.1", "0.3", "123456.789",
                             "0.0039215689", "1e3", "1E-3", "-2.5e+2", "3.4028235e38",
                             "1e-45", "0.000000000000000000000001", "123456789012345678",
                             "9007199254740993", "0.12345678901234567890", "1.7976931348623157e308",
                             "4.9e-324", "0.2", "0.7", "0.9999999", "255", "-128"};
    size_t count = sizeof numbers / sizeof *numbers;
    char body[8192];
    for (size_t i = 0; i < count; i++) {
        snprintf(body, sizeof body,
                 "{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[%s]}]}",
                 numbers[i]);
        same_as_cjson(body, 1);
    }
    /* Pixels as the bench and the demo send them, and random decimals. */
    srand(7);
    size_t at = (size_t)snprintf(body, sizeof body, "{\"inputs\":[{\"name\":\"image\",\"shape\":"
                                 "[1,1,28,28],\"datatype\":\"FP32\",\"data\":[");
    for (int i = 0; i < 784 && at + 32 < sizeof body; i++)
        at += (size_t)snprintf(body + at, sizeof body - at, "%s%.4g", i ? "," : "",
                               (double)(rand() % 256) / 255.0);
    snprintf(body + at, sizeof body - at, "]}]}");
    same_as_cjson(body, 1);
    at = (size_t)snprintf(body, sizeof body, "{\"inputs\":[{\"data\":[ ");
    for (int i = 0; i < 300 && at + 40 < sizeof body; i++)
        at += (size_t)snprintf(body + at, sizeof body - at, "%s%.*g", i ? " , " : "", 1 + i % 17,
                               ((double)rand() / RAND_MAX - 0.5) * pow(10, i % 40 - 20));
    snprintf(body + at, sizeof body - at, " ] , \"shape\":[300]}]}");
    same_as_cjson(body, 1);
}

static void test_structure(void)
{
    /* nested rows; whitespace everywhere */
    same_as_cjson("{\"inputs\":[{\"data\" :\n [ [1, 2] ,[3,4.5] ]}]}", 1);
    /* inputs[0].data is the second "data" array of the text */
    same_as_cjson("{\"parameters\":{\"data\":[9,9,9]},\"inputs\":[{\"data\":[1,2,3]},"
                  "{\"data\":[4]}]}", 1);
    /* a "data" inside a string is no key */
    same_as_cjson("{\"note\":\"\\\"data\\\":[5]\",\"inputs\":[{\"data\":[6,7]}]}", 1);
    /* a key with escapes: cJSON's way, the same numbers */
    same_as_cjson("{\"inputs\":[{\"d\\u0061ta\":[1,2,3]}]}", 0);
    /* data that is not numbers: cJSON's way, refused */
    same_as_cjson("{\"inputs\":[{\"data\":[1,\"2\"]}]}", 0);
    same_as_cjson("{\"inputs\":[{\"data\":[true]}]}", 0);
    same_as_cjson("{\"inputs\":[{\"data\":[]}]}", 0);
    same_as_cjson("{\"inputs\":[{\"data\":\"AAAA\"}]}", 0);
    /* not JSON, inside or outside the array */
    const char *bad[] = {"{\"inputs\":[{\"data\":[1,,2]}]}", "{\"inputs\":[{\"data\":[1,2,]}]}",
                         "{\"inputs\":[{\"data\":[+1]}]}", "{\"inputs\":[{\"data\":[.5]}]}",
                         "{\"inputs\":[{\"data\":[1e]}]}", "{\"inputs\":[{\"data\":[-]}]}",
                         "{\"inputs\":[{\"data\":[1 2]}]}", "{\"inputs\":[{\"data\":[[1],2]]}]}",
                         "{\"inputs\":[{\"data\":[1,2]} \"x\"]}", "{\"inputs\":[{\"data\":[1,2]",
                         "{\"inputs\":[{\"data\":[1]},{\"data\":[1,,2]}]}", "nope", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        float x[8];
        int64_t n = 0;
        int fast;
        CHECK_MSG(decode(bad[i], x, 8, &n, &fast) != 0, "accepted %s", bad[i]);
        CHECK_MSG(reference(bad[i], x, 8, &n) != 0, "cJSON accepts %s", bad[i]);
    }
    /* What JSON's number grammar refuses but cJSON accepts is left to
     * cJSON, as before: the same numbers, not the fast way. */
    same_as_cjson("{\"inputs\":[{\"data\":[01]}]}", 0);
    same_as_cjson("{\"inputs\":[{\"data\":[1.]}]}", 0);
    /* more numbers than the limit */
    float x[2];
    int64_t n = 0;
    int fast;
    CHECK(decode("{\"inputs\":[{\"data\":[1,2,3]}]}", x, 2, &n, &fast) != 0);
    /* deep nesting is not recursed into without end: past its depth the
     * decoder leaves the array to cJSON (whose own limit is 1000) */
    char deep[300];
    memset(deep, 0, sizeof deep);
    strcpy(deep, "{\"inputs\":[{\"data\":");
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    strcat(deep, "1");
    for (int i = 0; i < 100; i++)
        strcat(deep, "]");
    strcat(deep, "}]}");
    float y[4];
    CHECK(decode(deep, y, 4, &n, &fast) == 0 && n == 1 && y[0] == 1 && !fast);
}

int main(void)
{
    test_spellings();
    test_structure();
    kserve_decoder_free(&dec);
    return CHECK_DONE();
}
