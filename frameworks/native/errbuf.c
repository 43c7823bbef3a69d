/* errbuf.c - formats the adapter's error messages (see errbuf.h). */
#include "errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int native_err(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
