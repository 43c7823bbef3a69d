/* tests/plugins/abi/no_entry.c - a shared library that exports a function,
 * but not loom_module_entry: the loader must say the symbol is missing. */
#include <loom/loom.h>

LOOM_EXPORT int loom_not_a_module_entry(void)
{
    return 42;
}
