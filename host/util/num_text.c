/* util/num_text.c - see num_text.h. */
#include "util/num_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
