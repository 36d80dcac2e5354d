/* cpu.c - CPU features from CPUID, checked against the OS's XCR0. */
#include "libbert/cpu.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

/* XCR0: which register states the OS saves on context switches.  A CPU
 * feature whose registers the OS does not save must not be used. */
static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static int amx_permitted(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                   18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return 0;
#endif
}

unsigned bert__cpu_features(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx)
        return 0;
    unsigned long long xcr0 = xgetbv0();
    int ymm_os = (xcr0 & 0x6) == 0x6;        /* SSE + AVX state */
    int zmm_os = ymm_os && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    int amx_os = (xcr0 & 0x60000) == 0x60000; /* XTILECFG, XTILEDATA */
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned b7 = b, c7 = c, d7 = d;
    __cpuid_count(7, 1, a, b, c, d);
    unsigned a71 = a;
    int avx2 = (b7 >> 5) & 1;
    int avx512 = ((b7 >> 16) & 1) /* F */ && ((b7 >> 17) & 1) /* DQ */ &&
                 ((b7 >> 30) & 1) /* BW */ && ((b7 >> 31) & 1) /* VL */;
    if (ymm_os && avx2 && fma)
        f |= BERT_CPU_AVX2;
    if (zmm_os && avx512 && (f & BERT_CPU_AVX2)) {
        f |= BERT_CPU_AVX512;
        if ((a71 >> 5) & 1)
            f |= BERT_CPU_AVX512_BF16;
        if ((c7 >> 11) & 1)
            f |= BERT_CPU_AVX512_VNNI;
    }
    if ((f & BERT_CPU_AVX2) && ((a71 >> 4) & 1))
        f |= BERT_CPU_AVX_VNNI;
    /* AMX-TILE (EDX bit 24) with AMX-BF16 (22), AMX-INT8 (25), the OS's
     * tile state, and Linux's permission: since 5.16 a process must ask
     * for XTILEDATA (ARCH_REQ_XCOMP_PERM, feature 18) before its first
     * tile instruction, or that instruction faults. */
    if (amx_os && ((d7 >> 24) & 1) && ((d7 >> 22) & 1) && ((d7 >> 25) & 1) &&
        amx_permitted())
        f |= BERT_CPU_AMX;
    return f;
}
#else
unsigned bert__cpu_features(void)
{
    return 0;
}
#endif

const char *bert__cpu_feature_names(unsigned f, char *buf, unsigned n)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{BERT_CPU_AVX2, "avx2+fma"},
                 {BERT_CPU_AVX512, "avx512"},
                 {BERT_CPU_AVX512_BF16, "avx512_bf16"},
                 {BERT_CPU_AVX512_VNNI, "avx512_vnni"},
                 {BERT_CPU_AVX_VNNI, "avx_vnni"},
                 {BERT_CPU_AMX, "amx"}};
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit))
            continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? " " : "",
                         names[i].name);
        if (w < 0 || (size_t)w >= n - used)
            break;
        used += (size_t)w;
    }
    if (!used)
        snprintf(buf, n, "none");
    return buf;
}

size_t bert__cpu_l2_bytes(void)
{
#ifdef _SC_LEVEL2_CACHE_SIZE
    long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? (size_t)v : 0;
#else
    return 0;
#endif
}
