/* cli/curl_dl.c - see curl_dl.h. */
#include "cli/curl_dl.h"

#include <stdio.h>

#include "util/dynlib.h"

#define CURL_DL_SYMBOL(fn) DYNLIB_SYMBOL(curl_api, fn),
static const dynlib_symbol curl_symbols[] = {CURL_FUNCTIONS(CURL_DL_SYMBOL)};
#undef CURL_DL_SYMBOL

/* 4: libcurl's soname since 2006, the one curl.h describes */
static const char *const sonames[] = {"libcurl.so.4", NULL};
static const dynlib_spec spec = {"libcurl", sonames, NULL, curl_symbols,
                                 sizeof curl_symbols / sizeof curl_symbols[0]};
static curl_api table;
static dynlib_once once = DYNLIB_ONCE_INIT;

loom_error *cli_curl_lib(const curl_api **out)
{
    loom_error *e = dynlib_open_once(&once, &spec, &table);
    *out = e ? NULL : &table;
    return e;
}
