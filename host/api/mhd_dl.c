/* api/mhd_dl.c - see mhd_dl.h. */
#include "api/mhd_dl.h"

#include <pthread.h>
#include <stdio.h>

#include "util/dynlib.h"

#define MHD_DL_SYMBOL(fn) DYNLIB_SYMBOL(mhd_api, fn),
static const dynlib_symbol mhd_symbols[] = {MHD_FUNCTIONS(MHD_DL_SYMBOL)};
#undef MHD_DL_SYMBOL

static mhd_api table;
static const mhd_api *loaded;
static loom_error *failure;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    /* 12: the soname of every libmicrohttpd since 0.9.47 */
    static const char *const sonames[] = {"libmicrohttpd.so.12", NULL};
    dynlib_spec spec = {"libmicrohttpd", sonames, NULL, mhd_symbols,
                        sizeof mhd_symbols / sizeof mhd_symbols[0]};
    void *handle;
    failure = dynlib_open(&spec, &table, &handle);
    if (!failure)
        loaded = &table;
}

const mhd_api *mhd_lib(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!loaded)
        snprintf(err, errlen, "%s", loom_err_message(failure));
    return loaded;
}
