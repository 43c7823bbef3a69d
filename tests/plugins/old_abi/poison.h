/*
 * tests/plugins/old_abi/poison.h - what lies past the end a plugin declared.
 * A factory table is the first member of a larger struct whose following
 * members all point at poison_called, so a host that reads an entry beyond
 * struct_size and calls it aborts with a message instead of running on.
 */
#ifndef LOOM_TEST_POISON_H
#define LOOM_TEST_POISON_H

#include <stdio.h>
#include <stdlib.h>

typedef void (*poison_fn)(void);

static void poison_called(void)
{
    fputs("ABI POISON: the host called an entry past the plugin's struct_size\n", stderr);
    abort();
}

#define POISON_SLOTS 16
#define POISON_TAIL                                                            \
    {poison_called, poison_called, poison_called, poison_called,               \
     poison_called, poison_called, poison_called, poison_called,               \
     poison_called, poison_called, poison_called, poison_called,               \
     poison_called, poison_called, poison_called, poison_called}

/* A poison in a slot of another function type; never called when the host
 * honours struct_size. */
#define POISON(type) ((type)poison_called)

#endif
