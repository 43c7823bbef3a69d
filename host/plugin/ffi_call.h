/*
 * plugin/ffi_call.h - calling a plain C function named by a textual
 * signature, through libffi, and serving it as an inference kernel.
 *
 * Signature grammar (whitespace separated tokens):
 *     signature := RET '(' [ param { ',' param } ] ')'
 *     param     := TYPE [NAME] | 'ptr' TYPE ('in' | 'out' | 'inout') [NAME]
 *     TYPE      := void i8 u8 i16 u16 i32 u32 i64 u64 f32 f64
 *                  (int32, int64, float, double are accepted aliases)
 * e.g. "int32(ptr f32 in x, i64 n, ptr f32 out y)". One X-macro table of
 * type names (ffi_types.def) drives the parser, the ffi_type and the sizes.
 * `void` is a return type only ("()" means no parameters); a pointer names
 * its element type and its direction; NAME is an identifier of at most 31
 * characters, unique within the signature; at most FFI_SIG_MAX_ARGS
 * parameters; pointers are not returned.
 */
#ifndef LOOM_PLUGIN_FFI_CALL_H
#define LOOM_PLUGIN_FFI_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/plugin.h"

#define FFI_SIG_MAX_ARGS 16

typedef enum ffi_sig_type {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype) FFI_SIG_##name,
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
    FFI_SIG_TYPE_COUNT
} ffi_sig_type;

/* Storage for one value of any table type, e.g. a by-value argument or a
 * return value (v_i32, v_f64, ...). */
typedef union ffi_sig_value {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype) ctype v_##name;
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
    int64_t widened; /* what ffi_function_call stores for an integer return */
} ffi_sig_value;

typedef enum ffi_sig_dir {
    FFI_SIG_VALUE = 0, /* passed by value */
    FFI_SIG_IN = 1,    /* pointer to input data */
    FFI_SIG_OUT = 2,   /* pointer to output data */
    FFI_SIG_INOUT = 3
} ffi_sig_dir;

typedef struct ffi_sig_param {
    ffi_sig_type type;
    ffi_sig_dir dir;
    char name[32];
} ffi_sig_param;

typedef struct ffi_signature {
    ffi_sig_type ret;
    int nargs;
    ffi_sig_param args[FFI_SIG_MAX_ARGS];
} ffi_signature;

/* Parses `text` into *out. NULL, or LOOM_E_INVALID quoting the signature
 * and naming the problem, the offending token and its 1-based position. */
loom_error *ffi_sig_parse(const char *text, ffi_signature *out);
/* Size in bytes of one element of `type` (0 for void). */
size_t ffi_sig_type_size(ffi_sig_type type);
const char *ffi_sig_type_name(ffi_sig_type type);
/* The loom_dtype of a type (0 for void), and the type of a loom_dtype
 * (FFI_SIG_void for BOOL and unknown ones). */
int32_t ffi_sig_type_dtype(ffi_sig_type type);
ffi_sig_type ffi_sig_type_of_dtype(int32_t dtype);
/* True for i8 ... u64. */
int ffi_sig_type_is_integer(ffi_sig_type type);
/* Stores `value` as one element of `type` at dst. Returns -1 (dst untouched)
 * when the value is not representable: not whole or out of range for an
 * integer type, out of range for f32, or type void. */
int ffi_sig_value_from_double(ffi_sig_type type, double value, void *dst);
/* Reads one element of `type` at src (0 for void). */
double ffi_sig_value_to_double(ffi_sig_type type, const void *src);
/* Writes one element of `type` at src as a JSON number: integers exactly,
 * f32 with 9 and f64 with 17 significant digits (enough to read back the
 * same value), NaN and infinities as null. Returns the length, or -1 when `len` is too small
 * (FFI_SIG_JSON_MAX is always enough). */
#define FFI_SIG_JSON_MAX 32
int ffi_sig_value_format_json(ffi_sig_type type, const void *src, char *buf, size_t len);

typedef struct ffi_function ffi_function;

/* Resolves `library` with realpath (symlinks and ".." followed) and checks
 * that the result lies inside one of `allowed_dirs` (each resolved too; a
 * directory matches only whole path components). On success *out is a
 * malloc'd absolute path the caller frees. Refusals name the path:
 * LOOM_E_FORBIDDEN outside the allowed directories (which it lists),
 * LOOM_E_NOT_FOUND when there is no such file, LOOM_E_INVALID otherwise. */
loom_error *ffi_library_resolve(const char *library, const char *const *allowed_dirs, char **out);

/* Opens `library` (which must resolve inside one of `allowed_dirs`, a
 * NULL-terminated list; never RTLD_DEFAULT), looks up `symbol`, parses
 * `signature` and prepares the call interface once, into *out. Errors as
 * ffi_sig_parse and ffi_library_resolve, LOOM_E_NOT_FOUND for a missing
 * symbol. */
loom_error *ffi_function_open(const char *library, const char *symbol, const char *signature,
                              const char *const *allowed_dirs, ffi_function **out);
const ffi_signature *ffi_function_signature(const ffi_function *fn);
/* Calls with args[i] pointing at the i-th argument's value (for pointer
 * parameters: at the pointer). `ret` receives the return value widened as
 * libffi does (an integer return smaller than a word is read via ffi_arg
 * and stored as int64_t; float/double as themselves). `ret` must hold 8
 * bytes; it may be NULL to discard the value. The prepared call interface
 * is only read, so one ffi_function may be called from several threads. */
void ffi_function_call(ffi_function *fn, void **args, void *ret);
void ffi_function_close(ffi_function *fn);

/* The built-in "ffi" kernel: serves a plain C function as a loom.kernel/1
 * factory. model.json: {"runtime": "ffi", "ffi": {"library": "libvecmath.so",
 * "symbol": "scale_add", "signature": "int32(ptr f32 in x, i64 n, ptr f32 out
 * y)", "output_size": "n" or a number}}; the library must lie in the model
 * directory. A request {"inputs": [...]} is answered {"outputs": [...]};
 * see ffi_kernel.c for the mapping. */
const loom_kernel_factory *ffi_kernel_factory(void);

#endif
