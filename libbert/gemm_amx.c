/* gemm_amx.c - the AMX micro-kernel of the reduced-precision weight
 * products (the amx tier; see gemm_kernels.h for the contract).
 *
 * AMX multiplies whole tiles: a 16 x 64-byte tile of activations (16 rows,
 * 16 groups of 32 bits: 32 bf16 or 64 int8 values of k) by a tile of 16
 * groups x 16 columns of weights, into 16 x 16 float32 (tdpbf16ps) or
 * int32 (tdpbusd) sums.  A weight tile is read straight from the dot panels
 * (gemm.h) with a row stride of one panel row (48 columns x 4 bytes), so
 * the amx tier shares the avx512 tier's packed weights; the activations
 * come row-major (a row's groups contiguous).  One 16 x 48 block keeps
 * three accumulator tiles, one activation tile and three weight tiles: 7
 * of the 8 tile registers.
 *
 * Written with asm rather than <immintrin.h>'s tile intrinsics: those are
 * macros over asm in GCC 12 anyway, and _tile_loadconfig needs the
 * amx-tile target on every caller.  The assembler (binutils >= 2.36) knows
 * the mnemonics. */
#include "libbert/gemm_kernels.h"

#if BERT_HAVE_X86_KERNELS
#include <stdint.h>
#include <string.h>

/* ldtilecfg's 64-byte operand, palette 1. */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) tilecfg;
_Static_assert(sizeof(tilecfg) == 64, "ldtilecfg reads 64 bytes");

void bert__amx_begin(void)
{
    tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    /* tmm0-2: sums, tmm3: activations, tmm4-6: weights; all 16 x 64 B. */
    for (int t = 0; t < 7; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(cfg));
}

void bert__amx_end(void)
{
    __asm__ volatile("tilerelease" ::: "memory");
}

#define LOAD(t, p, s)                                                         \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p),                \
                     "r"((long)(s))                                           \
                     : "memory")
#define STORE(t, p, s)                                                        \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p),            \
                     "r"((long)(s))                                           \
                     : "memory")

void bert__ukr_amx(int int8, size_t kg, const uint32_t *a, size_t lda,
                   const uint32_t *b, void *c)
{
    const long sa = (long)(lda * 4), sb = BERT_PANEL * 4, sc = BERT_PANEL * 4;
    __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2" ::
                         : "memory");
    for (size_t g = 0; g < kg; g += 16) {
        const uint32_t *bg = b + g * BERT_PANEL;
        LOAD(3, a + g, sa);
        LOAD(4, bg, sb);
        LOAD(5, bg + 16, sb);
        LOAD(6, bg + 32, sb);
        if (int8)
            __asm__ volatile("tdpbusd %%tmm4, %%tmm3, %%tmm0\n\t"
                             "tdpbusd %%tmm5, %%tmm3, %%tmm1\n\t"
                             "tdpbusd %%tmm6, %%tmm3, %%tmm2" ::
                                 : "memory");
        else
            __asm__ volatile("tdpbf16ps %%tmm4, %%tmm3, %%tmm0\n\t"
                             "tdpbf16ps %%tmm5, %%tmm3, %%tmm1\n\t"
                             "tdpbf16ps %%tmm6, %%tmm3, %%tmm2" ::
                                 : "memory");
    }
    char *cc = c;
    STORE(0, cc, sc);
    STORE(1, cc + 64, sc);
    STORE(2, cc + 128, sc);
}
#endif
