/*
 * fpmode.h - flush-to-zero and denormals-are-zero around the adapter's CPU
 * math. SGD momentum decays weights whose gradient went to zero through the
 * subnormal range, where x86 arithmetic is many times slower; flushing them
 * to zero changes no loss measurably (bench/train/README.md). The mode is
 * per thread: it is set on entry to a framework call and the caller's mode
 * is restored on return, so the host thread's arithmetic is never changed.
 * A no-op on other architectures.
 */
#ifndef LOOM_NATIVE_FPMODE_H
#define LOOM_NATIVE_FPMODE_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define NATIVE_MXCSR_FTZ_DAZ 0x8040u /* bit 15 FTZ, bit 6 DAZ */
#endif

typedef struct native_fpmode {
    unsigned saved;
    int changed;
} native_fpmode;

static inline native_fpmode native_fpmode_enter(int flush_denormals)
{
    native_fpmode m = {0, 0};
#if defined(__x86_64__) || defined(__i386__)
    if (flush_denormals) {
        m.saved = _mm_getcsr();
        m.changed = 1;
        _mm_setcsr(m.saved | NATIVE_MXCSR_FTZ_DAZ);
    }
#else
    (void)flush_denormals;
#endif
    return m;
}

static inline void native_fpmode_leave(native_fpmode m)
{
#if defined(__x86_64__) || defined(__i386__)
    if (m.changed)
        _mm_setcsr(m.saved);
#else
    (void)m;
#endif
}

#endif
