/*
 * libbert/cpu.h - what the CPU and the operating system let libbert run,
 * read from CPUID and XCR0.
 *
 * Kernel choices key on these features only, never on a vendor, family,
 * model number or brand string, nor on which configuration BLIS picked
 * (BLIS 0.9.0 runs its generic C kernels on CPUs it does not recognise,
 * and its AVX2 kernels on AVX-512 Intel CPUs in VMs).
 */
#ifndef LIBBERT_CPU_H
#define LIBBERT_CPU_H

#include <stddef.h>

enum {
    BERT_CPU_AVX2 = 1 << 0,        /* AVX2 + FMA3, ymm state enabled */
    BERT_CPU_AVX512 = 1 << 1,      /* AVX-512 F/BW/DQ/VL, zmm state enabled */
    BERT_CPU_AVX512_BF16 = 1 << 2, /* vdpbf16ps */
    BERT_CPU_AVX512_VNNI = 1 << 3, /* vpdpbusd on zmm */
    BERT_CPU_AVX_VNNI = 1 << 4,    /* vpdpbusd on ymm (VEX) */
    BERT_CPU_AMX = 1 << 5,         /* AMX TILE, BF16, INT8, tile state
                                      enabled and (Linux) permitted */
    /* What the amx tier needs: AMX for bf16/int8 tiles, the rest for its
     * fp32 kernels, row conversions and k that is not whole tiles. */
    BERT_CPU_AMX_TIER = BERT_CPU_AMX | BERT_CPU_AVX512 | BERT_CPU_AVX512_BF16 |
                        BERT_CPU_AVX512_VNNI
};

/* The BERT_CPU_* bits of this CPU.  Reads CPUID on every call (cheap; no
 * cached global): call it when creating a session, not per product.  With
 * AMX present it also asks Linux for the tile-data permission (an
 * arch_prctl that only ever grants, so repeating it is harmless). */
unsigned bert__cpu_features(void);

/* The L2 cache of a core in bytes, 0 where unknown (glibc's sysconf reads
 * it from CPUID: leaf 4 on Intel, 0x8000001D on AMD).  A size, like the
 * feature bits, never a model number. */
size_t bert__cpu_l2_bytes(void);

/* "avx2 avx512 ..." for messages and benchmarks: the names of the bits set
 * in f, written to buf (size n); returns buf. */
const char *bert__cpu_feature_names(unsigned f, char *buf, unsigned n);

#endif
