/* cli/curl_dl.c - see curl_dl.h. */
#include "cli/curl_dl.h"

#include <pthread.h>
#include <stdio.h>

#include "util/dynlib.h"

#define CURL_DL_SYMBOL(fn) DYNLIB_SYMBOL(curl_api, fn),
static const dynlib_symbol curl_symbols[] = {CURL_FUNCTIONS(CURL_DL_SYMBOL)};
#undef CURL_DL_SYMBOL

static curl_api table;
static const curl_api *loaded;
static loom_error *failure;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* 4: libcurl's soname since 2006, the one curl.h describes */
    static const char *const sonames[] = {"libcurl.so.4", NULL};
    dynlib_spec spec = {"libcurl", sonames, NULL, curl_symbols,
                        sizeof curl_symbols / sizeof curl_symbols[0]};
    void *handle;
    failure = dynlib_open(&spec, &table, &handle);
    if (!failure)
        loaded = &table;
}

const curl_api *curl_lib(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!loaded)
        snprintf(err, errlen, "%s", loom_err_message(failure));
    return loaded;
}
