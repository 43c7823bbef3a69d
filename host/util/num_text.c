/* util/num_text.c - see num_text.h. */
#include "util/num_text.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *num_text_double(double d, char *buf, size_t len)
{
    if (!isfinite(d)) {
        snprintf(buf, len, "%g", d);
        return buf;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, d);
        if (digits == 17 || strtod(buf, NULL) == d)
            break;
    }
    return buf;
}

void num_text_json_shortest(cJSON *node)
{
    for (; node; node = node->next) {
        if (cJSON_IsNumber(node) && isfinite(node->valuedouble)) {
            char text[NUM_TEXT_MAX];
            char *raw = strdup(num_text_double(node->valuedouble, text, sizeof text));
            if (raw) { /* else cJSON's own text: still exact */
                node->type = cJSON_Raw;
                node->valuestring = raw;
            }
        }
        num_text_json_shortest(node->child);
    }
}

int num_text_amount(const char *text, int sizes, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = !sizes || !*end ? 0 : *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : -1;
    if (shift > 0)
        end++;
    if (end == text || *end || shift < 0 || errno || text[0] == '-' || v > (max >> shift) ||
        (v << shift) < min)
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
