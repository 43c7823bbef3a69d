/* util/gnutls_dl.c - see gnutls_dl.h. */
#include "util/gnutls_dl.h"

#include "util/dynlib.h"

#define GNUTLS_DL_SYMBOL(fn) DYNLIB_SYMBOL(gnutls_api, fn),
static const dynlib_symbol gnutls_symbols[] = {GNUTLS_DL_FUNCTIONS(GNUTLS_DL_SYMBOL)};
#undef GNUTLS_DL_SYMBOL

/* 30: the soname of every GnuTLS since 3.3 */
static const char *const sonames[] = {"libgnutls.so.30", NULL};
static const dynlib_spec spec = {"GnuTLS", sonames, NULL, gnutls_symbols,
                                 sizeof gnutls_symbols / sizeof gnutls_symbols[0]};
static gnutls_api table;
static dynlib_once once = DYNLIB_ONCE_INIT;

loom_error *gnutls_dl_open(const gnutls_api **out)
{
    loom_error *e = dynlib_open_once(&once, &spec, &table);
    *out = e ? NULL : &table;
    return e;
}
