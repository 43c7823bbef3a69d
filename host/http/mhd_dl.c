/* http/mhd_dl.c - see mhd_dl.h. */
#include "http/mhd_dl.h"

#include "util/dynlib.h"

#define MHD_DL_SYMBOL(fn) DYNLIB_SYMBOL(mhd_api, fn),
static const dynlib_symbol mhd_symbols[] = {MHD_FUNCTIONS(MHD_DL_SYMBOL)};
#undef MHD_DL_SYMBOL

/* 12: the soname of every libmicrohttpd since 0.9.47 */
static const char *const sonames[] = {"libmicrohttpd.so.12", NULL};
static const dynlib_spec spec = {"libmicrohttpd", sonames, NULL, mhd_symbols,
                                 sizeof mhd_symbols / sizeof mhd_symbols[0]};
static mhd_api table;
static dynlib_once once = DYNLIB_ONCE_INIT;

loom_error *mhd_lib(const mhd_api **out)
{
    *out = NULL;
    loom_error *e = dynlib_open_once(&once, &spec, &table);
    if (!e)
        *out = &table;
    return e;
}
