/*
 * fuzz_ffi_sig.c - libFuzzer target for the libffi signature strings a
 * model.json names ("int32(ptr f32 in x, i64 n, ptr f32 out y)"). The input,
 * as a string, goes through ffi_sig_parse. A refusal must say why; an
 * accepted signature must keep the grammar's promises (known types, void
 * only as a return, pointers with a direction, at most FFI_SIG_MAX_ARGS
 * parameters, unique names of at most 31 characters), and written back out
 * in the canonical spelling it must parse to the same signature.
 */
#include "plugin/ffi_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"

static void check_signature(const ffi_signature *sig)
{
    if ((unsigned)sig->ret >= FFI_SIG_TYPE_COUNT)
        abort();
    if (sig->nargs < 0 || sig->nargs > FFI_SIG_MAX_ARGS)
        abort();
    for (int i = 0; i < sig->nargs; i++) {
        const ffi_sig_param *p = &sig->args[i];
        if ((unsigned)p->type >= FFI_SIG_TYPE_COUNT || p->type == FFI_SIG_void)
            abort();
        if (p->dir != FFI_SIG_VALUE && p->dir != FFI_SIG_IN && p->dir != FFI_SIG_OUT &&
            p->dir != FFI_SIG_INOUT)
            abort();
        if (!memchr(p->name, '\0', sizeof p->name))
            abort();
        for (int j = 0; j < i && p->name[0]; j++)
            if (strcmp(p->name, sig->args[j].name) == 0)
                abort();
    }
}

/* The canonical text of a signature: table names, one space between
 * tokens. Aborts if it does not fit (it always should). */
static void format_signature(const ffi_signature *sig, char *out, size_t len)
{
    static const char *const dirs[] = {"", "in", "out", "inout"};
    size_t used = 0;
    int n = snprintf(out, len, "%s(", ffi_sig_type_name(sig->ret));
    for (int i = 0; n >= 0 && (size_t)n < len - used && i < sig->nargs; i++) {
        used += (size_t)n;
        const ffi_sig_param *p = &sig->args[i];
        n = snprintf(out + used, len - used, "%s%s%s%s%s%s%s", i ? ", " : "",
                     p->dir == FFI_SIG_VALUE ? "" : "ptr ", ffi_sig_type_name(p->type),
                     p->dir == FFI_SIG_VALUE ? "" : " ", dirs[p->dir], p->name[0] ? " " : "",
                     p->name);
    }
    if (n < 0 || (size_t)n >= len - used)
        abort();
    used += (size_t)n;
    if (used + 2 > len)
        abort();
    memcpy(out + used, ")", 2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    char err[1024];
    ffi_signature sig;
    if (loom_err_take(ffi_sig_parse(text, &sig), err, sizeof err) != LOOM_OK) {
        if (!err[0])
            abort();
        free(text);
        return 0;
    }
    check_signature(&sig);
    char canonical[2048];
    format_signature(&sig, canonical, sizeof canonical);
    ffi_signature again;
    if (loom_err_take(ffi_sig_parse(canonical, &again), err, sizeof err) != LOOM_OK) {
        fprintf(stderr, "canonical form '%s' of '%s' refused: %s\n", canonical, text, err);
        abort();
    }
    if (again.ret != sig.ret || again.nargs != sig.nargs)
        abort();
    for (int i = 0; i < sig.nargs; i++)
        if (again.args[i].type != sig.args[i].type || again.args[i].dir != sig.args[i].dir ||
            strcmp(again.args[i].name, sig.args[i].name) != 0)
            abort();
    free(text);
    return 0;
}
