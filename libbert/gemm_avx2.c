/* gemm_avx2.c - the AVX2 + FMA sgemm micro-kernel (6 x 16; see
 * gemm_kernels.h for the contract).  It reads a third of a 48-column weight
 * panel (ldb = 48), so both x86 tiers share one packed copy of a model. */
#include "libbert/gemm_kernels.h"

#if BERT_HAVE_X86_KERNELS
#include <immintrin.h>

#define MR BERT_AVX2_MR

/* The kernel reads A packed (a[p*MR + i]) or, for products with few
 * column tiles, in place (rows = 1: a[i*lda + p], row-major rows lda
 * apart), so that P V's probabilities need no packing pass (gemm.c). */
#define A_AT(i) (rows ? a[(i) * lda] : a[i])
#define DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = c##i##0;
#define STEP(i)                                                               \
    {                                                                         \
        __m256 ai = _mm256_set1_ps(A_AT(i));                                  \
        c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);                           \
        c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);                           \
    }
/* One step of the k loop: row p of the B third and column p of A, for
 * the rows R names (ROWS: all six). */
#define KSTEP_R(R)                                                            \
    {                                                                         \
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);          \
        R(STEP)                                                               \
        a += rows ? 1 : MR;                                                   \
        b += ldb;                                                             \
    }
#define KSTEP KSTEP_R(ROWS)
/* C's row i is read at the end: fetch both lines of a row that does not
 * start a cache line (its last float's too). */
#define PF_C(i)                                                               \
    {                                                                         \
        _mm_prefetch((const char *)(c + (i) * ldc), _MM_HINT_T0);             \
        _mm_prefetch((const char *)(c + (i) * ldc + 15), _MM_HINT_T0);        \
    }
/* Step s of an asm trip: row s of B (BERT_PANEL floats = 192 bytes a
 * row) into ymm13/14, column s of A broadcast in ymm15 row by row: packed
 * (6 floats = 24 bytes a step) or in place (rows 0-2 at a, a + lda and
 * a + 2 lda, rows 3-5 from a3 = a + 3 lda; 4 bytes a step). */
#define A_PK(s, i) #s "*24+" #i "*4(%[a])"
#define A_IP0(s) #s "*4(%[a])"
#define A_IP1(s) #s "*4(%[a],%[la])"
#define A_IP2(s) #s "*4(%[a],%[la],2)"
#define A_IP3(s) #s "*4(%[a3])"
#define A_IP4(s) #s "*4(%[a3],%[la])"
#define A_IP5(s) #s "*4(%[a3],%[la],2)"
#define AROW(s, i, A)                                                         \
    "vbroadcastss " A ", %%ymm15\n\t"                                         \
    "vfmadd231ps %%ymm13, %%ymm15, %[c" #i "0]\n\t"                          \
    "vfmadd231ps %%ymm14, %%ymm15, %[c" #i "1]\n\t"
#define BROW(s)                                                               \
    "vmovups " #s "*192(%[b]), %%ymm13\n\t"                                  \
    "vmovups " #s "*192+32(%[b]), %%ymm14\n\t"
#define ASTEP_PK(s)                                                           \
    BROW(s) AROW(s, 0, A_PK(s, 0)) AROW(s, 1, A_PK(s, 1))                     \
    AROW(s, 2, A_PK(s, 2)) AROW(s, 3, A_PK(s, 3)) AROW(s, 4, A_PK(s, 4))      \
    AROW(s, 5, A_PK(s, 5))
#define ASTEP_IP(s)                                                           \
    BROW(s) AROW(s, 0, A_IP0(s)) AROW(s, 1, A_IP1(s)) AROW(s, 2, A_IP2(s))    \
    AROW(s, 3, A_IP3(s)) AROW(s, 4, A_IP4(s)) AROW(s, 5, A_IP5(s))
#define ACC_OUT                                                               \
    [c00] "+x"(c00), [c01] "+x"(c01), [c10] "+x"(c10), [c11] "+x"(c11),       \
    [c20] "+x"(c20), [c21] "+x"(c21), [c30] "+x"(c30), [c31] "+x"(c31),       \
    [c40] "+x"(c40), [c41] "+x"(c41), [c50] "+x"(c50), [c51] "+x"(c51)
_Static_assert(BERT_PANEL * sizeof(float) == 192, "BROW's row stride");
#define STORE(i)                                                              \
    {                                                                         \
        float *ci = c + (i) * ldc;                                            \
        if (accumulate) {                                                     \
            _mm256_storeu_ps(ci, _mm256_fmadd_ps(va, c##i##0,                 \
                                                 _mm256_loadu_ps(ci)));       \
            _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(                         \
                                         va, c##i##1,                         \
                                         _mm256_loadu_ps(ci + 8)));           \
        } else {                                                              \
            _mm256_storeu_ps(ci, _mm256_mul_ps(va, c##i##0));                 \
            _mm256_storeu_ps(ci + 8, _mm256_mul_ps(va, c##i##1));             \
        }                                                                     \
    }
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* The tile's rows 0..mr-1 (MROWS: those of ROWS below mr). */
#define MROW(i, X) if ((i) < mr) X(i)
#define MROWS(X)                                                              \
    MROW(0, X) MROW(1, X) MROW(2, X) MROW(3, X) MROW(4, X) MROW(5, X)

/* Every kernel below: rows and mr are constants in each, so each compiles
 * to its own loops.  mr < MR (the short tiles at the end of a block of
 * rows, A packed) computes rows 0..mr-1 alone, each element by the same
 * FMA chain as in the full tile, so the bits are those of the full tile;
 * the asm loops are the full tile's, so those tiles run the C loops. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
ukr6x16(size_t mr, size_t k, const float *a, size_t lda, int rows,
        const float *b, size_t ldb, float *c, size_t ldc, float alpha,
        int accumulate, const bert_pf *pf)
{
    ROWS(DECL)
    const int full = mr == MR; /* the asm loops are for 6 rows */
    /* C's tile is read at the end: start fetching it now */
    if (accumulate)
        MROWS(PF_C)
    /* This tile's share of the next panel's rows (pf->lo..hi) into L2:
     * b + k*ldb is the same third of the next panel, so the tiles of a
     * panel's three thirds together ask for each of its lines once (every
     * tile used to ask for two of the three lines of every row, beside a
     * prefetch of A: three prefetches a step).  These steps run in asm
     * too (see below), a prefetch a step: in C they ran at the C loop's
     * speed, 4% of a 192-deep tile's steps at 22 tiles a panel (a
     * microbenchmark of the slice's tiles: 1.3-2.3% more GFLOP/s). */
    size_t p = 0, l2 = pf->hi > pf->lo ? pf->hi - pf->lo : 0;
    const float *bn = b + (k + pf->lo) * ldb;
    l2 = l2 < k ? l2 : k;
    if (full && ldb == BERT_PANEL && !rows)
        for (; p + 4 <= l2;
             p += 4, a += 4 * MR, b += 4 * BERT_PANEL, bn += 4 * BERT_PANEL)
            __asm__("prefetcht1 (%[n])\n\t" ASTEP_PK(0)
                    "prefetcht1 192(%[n])\n\t" ASTEP_PK(1)
                    "prefetcht1 384(%[n])\n\t" ASTEP_PK(2)
                    "prefetcht1 576(%[n])\n\t" ASTEP_PK(3)
                    : ACC_OUT
                    : [a] "r"(a), [b] "r"(b), [n] "r"(bn)
                    : "xmm13", "xmm14", "xmm15", "memory");
    for (; p < l2; p++, bn += ldb) {
        _mm_prefetch((const char *)bn, _MM_HINT_T1);
        KSTEP_R(MROWS)
    }
    /* Four steps a trip in asm where B has the packed panels' stride (every
     * call of gemm.c's loops): one step is 12 FMAs beside 8 loads, and on
     * Zen 3 a step a trip spent so much on the loop's own increments,
     * compare and branch that the kernel ran at 60-70% of the FMA peak with
     * its operands in L1; unrolled in C, GCC 12 spilled an accumulator to
     * the stack.  A needs no software prefetch: packed, its panels stream
     * from L2 in order; in place, its six rows are six sequential streams. */
    /* The last tile over this third also brings the next tile's third
     * into L1, a line a step (gemm_kernels.h): that tile's first reads
     * would otherwise come from L2 (bench/ab, BERT-base 1 x 128 on the Zen 3
     * VM: 0.97-0.99 of the time). */
    if (ldb == BERT_PANEL && !rows && pf->l1 >= BERT_PF_L1_THIRD) {
        const float *n =
            pf->l1 == BERT_PF_L1_THIRD ? b + 16 : b + k * ldb - 32;
        if (full)
            for (; p + 4 <= k;
                 p += 4, a += 4 * MR, b += 4 * BERT_PANEL, n += 4 * BERT_PANEL)
                __asm__("prefetcht0 (%[n])\n\t"
                        "prefetcht0 192(%[n])\n\t" ASTEP_PK(0) ASTEP_PK(1)
                        "prefetcht0 384(%[n])\n\t"
                        "prefetcht0 576(%[n])\n\t" ASTEP_PK(2) ASTEP_PK(3)
                        : ACC_OUT
                        : [a] "r"(a), [b] "r"(b), [n] "r"(n)
                        : "xmm13", "xmm14", "xmm15", "memory");
        else
#pragma GCC unroll 4
            for (; p < k; p++, n += ldb) {
                _mm_prefetch((const char *)n, _MM_HINT_T0);
                KSTEP_R(MROWS)
            }
    }
    if (full && ldb == BERT_PANEL && !rows)
        for (; p + 4 <= k; p += 4, a += 4 * MR, b += 4 * BERT_PANEL)
            __asm__(ASTEP_PK(0) ASTEP_PK(1) ASTEP_PK(2) ASTEP_PK(3)
                    : ACC_OUT
                    : [a] "r"(a), [b] "r"(b)
                    : "xmm13", "xmm14", "xmm15", "memory");
    if (full && ldb == BERT_PANEL && rows)
        for (; p + 4 <= k; p += 4, a += 4, b += 4 * BERT_PANEL)
            __asm__(ASTEP_IP(0) ASTEP_IP(1) ASTEP_IP(2) ASTEP_IP(3)
                    : ACC_OUT
                    : [a] "r"(a), [a3] "r"(a + 3 * lda),
                      [la] "r"(lda * sizeof(float)), [b] "r"(b)
                    : "xmm13", "xmm14", "xmm15", "memory");
    if (full)
        for (; p < k; p++)
            KSTEP
    else
#pragma GCC unroll 4
        for (; p < k; p++)
            KSTEP_R(MROWS)
    const __m256 va = _mm256_set1_ps(alpha);
    MROWS(STORE)
}

__attribute__((target("avx2,fma")))
void bert__ukr_avx2_short(size_t mr, size_t k, const float *a, const float *b,
                          float *c, size_t ldc, float alpha, int accumulate,
                          const bert_pf *pf)
{
    /* a constant row count in each case: its own loops */
#define SHORT(n)                                                              \
    ukr6x16(n, k, a, 0, 0, b, BERT_PANEL, c, ldc, alpha, accumulate, pf)
    switch (mr) {
    case 1: SHORT(1); break;
    case 2: SHORT(2); break;
    case 3: SHORT(3); break;
    case 4: SHORT(4); break;
    case 5: SHORT(5); break;
    default: SHORT(MR);
    }
#undef SHORT
}

__attribute__((target("avx2,fma")))
void bert__ukr_avx2(size_t k, const float *a, const float *b, size_t ldb,
                    float *c, size_t ldc, float alpha, int accumulate,
                    const bert_pf *pf)
{
    ukr6x16(MR, k, a, 0, 0, b, ldb, c, ldc, alpha, accumulate, pf);
}

__attribute__((target("avx2,fma")))
void bert__ukr_avx2_rows(size_t k, const float *a, size_t lda, const float *b,
                         size_t ldb, float *c, size_t ldc, float alpha,
                         int accumulate, const bert_pf *pf)
{
    ukr6x16(MR, k, a, lda, 1, b, ldb, c, ldc, alpha, accumulate, pf);
}
#endif

#if BERT_HAVE_X86_KERNELS
/* ---- int8 with AVX-VNNI (VEX vpdpbusd on ymm): 6 x 16 ------------------- */
/* vpdpbusd through asm, as in gemm_avx512.c (GCC 12 spills the
 * intrinsic's accumulators); "x" keeps the registers VEX-encodable. */

#define V_DECL(i) __m256i d##i##0 = _mm256_setzero_si256(), d##i##1 = d##i##0;
#define V_STEP(i)                                                             \
    {                                                                         \
        __m256i ai = _mm256_set1_epi32((int)a[i]);                            \
        __asm__("%{vex%} vpdpbusd %[w], %[x], %[c]"                               \
                : [c] "+x"(d##i##0) : [x] "x"(ai), [w] "x"(b0));              \
        __asm__("%{vex%} vpdpbusd %[w], %[x], %[c]"                               \
                : [c] "+x"(d##i##1) : [x] "x"(ai), [w] "x"(b1));              \
    }
/* The int8 output stage of 8 columns of one row (both avx2 kernels):
 * c := rs cs (d - rz csum), or c + that when accumulate. */
__attribute__((target("avx2,fma"))) static inline void
i8_out8(__m256i d, int32_t rz, float rs, const float *cs, const int32_t *csum,
        float *c, int accumulate)
{
    __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(
        d, _mm256_mullo_epi32(_mm256_set1_epi32(rz),
                              _mm256_loadu_si256((const __m256i *)csum))));
    __m256 sc = _mm256_mul_ps(_mm256_set1_ps(rs), _mm256_loadu_ps(cs));
    _mm256_storeu_ps(c, accumulate ? _mm256_fmadd_ps(f, sc, _mm256_loadu_ps(c))
                                   : _mm256_mul_ps(f, sc));
}
#define V_OUT(i)                                                              \
    i8_out8(d##i##0, rz[i], rs[i], cs, csum, c + (i) * ldc, accumulate);      \
    i8_out8(d##i##1, rz[i], rs[i], cs + 8, csum + 8, c + (i) * ldc + 8,       \
            accumulate);
#define V_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

__attribute__((target("avx2,fma,avxvnni")))
void bert__ukr_i8_avx2(size_t kg, const uint32_t *a, const uint32_t *b,
                       float *c, size_t ldc, const float *rs,
                       const int32_t *rz, const float *cs,
                       const int32_t *csum, int accumulate)
{
    V_ROWS(V_DECL)
    for (size_t g = 0; g < kg; g++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b),
                b1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        V_ROWS(V_STEP)
        a += 6;
        b += BERT_PANEL;
    }
    V_ROWS(V_OUT)
}
#endif

#if BERT_HAVE_X86_KERNELS
/* ---- int8 with plain AVX2 (no VNNI): 6 x 8, the same int32 sums ------- */
/* vpmaddubsw, AVX2's u8 x s8 product, saturates each pair of products at
 * int16 (255 x 127 x 2 does not fit: onnxruntime#6004).  vpmaddwd on the
 * values widened to int16 does not: a pair of u8 x s8 products fits int32
 * with room to spare, so the sums are exactly vpdpbusd's.  A arrives
 * widened (four uint16 per group, packed so by gemm_lowp.c), broadcast as
 * one quadword; each group of the B slice (8 columns x 4 int8) is widened
 * here into two vectors of 4 columns x 4 int16.  vpmaddwd then leaves
 * each column's sum in two lanes (values 0-1 and 2-3 of every group),
 * which vphaddd joins once, after the loop (registers: W_STEP). */
#define W_DECL(i) __m256i e##i##0 = _mm256_setzero_si256(), e##i##1 = e##i##0;
/* Through asm, as vpdpbusd above: with intrinsics GCC 12 kept half the
 * accumulators on the stack.  All 16 registers: 12 sums, w0, w1, the
 * broadcast (reused for the second product) and one product. */
#define W_STEP(i)                                                             \
    {                                                                         \
        __m256i ai = _mm256_set1_epi64x((long long)a[i]), t;                  \
        __asm__("vpmaddwd %[w0], %[x], %[t]\n\t"                              \
                "vpaddd %[t], %[c0], %[c0]\n\t"                               \
                "vpmaddwd %[w1], %[x], %[x]\n\t"                              \
                "vpaddd %[x], %[c1], %[c1]"                                   \
                : [c0] "+x"(e##i##0), [c1] "+x"(e##i##1), [x] "+x"(ai),       \
                  [t] "=&x"(t)                                                \
                : [w0] "x"(w0), [w1] "x"(w1));                                \
    }
/* hadd gives columns 0 1 4 5 | 2 3 6 7; the permute puts them in order. */
#define W_OUT(i)                                                              \
    i8_out8(_mm256_permute4x64_epi64(_mm256_hadd_epi32(e##i##0, e##i##1),     \
                                     0xd8),                                   \
            rz[i], rs[i], cs, csum, c + (i) * ldc, accumulate);

__attribute__((target("avx2,fma")))
void bert__ukr_i8_avx2w(size_t kg, const uint64_t *a, const uint32_t *b,
                        float *c, size_t ldc, const float *rs,
                        const int32_t *rz, const float *cs,
                        const int32_t *csum, int accumulate)
{
    V_ROWS(W_DECL)
    for (size_t g = 0; g < kg; g++) {
        __m256i w0 = _mm256_cvtepi8_epi16(
                    _mm_loadu_si128((const __m128i *)b)),
                w1 = _mm256_cvtepi8_epi16(
                    _mm_loadu_si128((const __m128i *)(b + 4)));
        V_ROWS(W_STEP)
        a += 6;
        b += BERT_PANEL;
    }
    V_ROWS(W_OUT)
}
#endif

#if BERT_HAVE_X86_KERNELS
/* ---- the int8 activation side on AVX2 ------------------------------------ */
/* The first n (< 16) floats of x, zeros after (0 is in every row's range,
 * and quantizes to bytes that are never stored). */
__attribute__((target("avx2"))) static void load_tail(const float *x,
                                                      size_t n, __m256 *a,
                                                      __m256 *b)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i n8 = _mm256_set1_epi32((int)n);
    *a = _mm256_maskload_ps(x, _mm256_cmpgt_epi32(n8, idx));
    *b = n > 8 ? _mm256_maskload_ps(
                     x + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - 8),
                                               idx))
               : _mm256_setzero_ps();
}

/* min(v, lo) keeps lo where v is NaN. */
__attribute__((target("avx2"))) void bert__minmax_avx2(const float *x,
                                                       size_t k, float *mn,
                                                       float *mx)
{
    __m256 lo = _mm256_setzero_ps(), hi = lo, a, b;
    size_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m256 v = _mm256_loadu_ps(x + p);
        lo = _mm256_min_ps(v, lo);
        hi = _mm256_max_ps(v, hi);
    }
    if (p < k) {
        load_tail(x + p, k - p, &a, &b);
        lo = _mm256_min_ps(a, lo);
        hi = _mm256_max_ps(a, hi);
    }
    float l[8], h[8];
    _mm256_storeu_ps(l, lo);
    _mm256_storeu_ps(h, hi);
    *mn = l[0], *mx = h[0];
    for (int i = 1; i < 8; i++) {
        *mn = l[i] < *mn ? l[i] : *mn;
        *mx = h[i] > *mx ? h[i] : *mx;
    }
}

/* 16 floats times inv, rounded to nearest even (vcvtps2dq), plus z,
 * clamped to 0..255, as 16 bytes. */
__attribute__((target("avx2"))) static __m128i quant16(__m256 a, __m256 b,
                                                       __m256 vi, __m256i vz)
{
    const __m256i lo = _mm256_setzero_si256(), hi = _mm256_set1_epi32(255);
    __m256i u = _mm256_cvtps_epi32(_mm256_mul_ps(a, vi)),
            v = _mm256_cvtps_epi32(_mm256_mul_ps(b, vi));
    u = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(u, vz), lo), hi);
    v = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, vz), lo), hi);
    /* packs interleaves the 128-bit lanes: u0-3 v0-3 | u4-7 v4-7 */
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(u, v), 0xd8);
    w = _mm256_packus_epi16(w, w); /* u0-7 u0-7 | v0-7 v0-7 */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(w, 0x08));
}

__attribute__((target("avx2"))) void bert__quant_row_avx2(uint8_t *q,
                                                          const float *x,
                                                          size_t k, float inv,
                                                          int32_t z)
{
    const __m256 vi = _mm256_set1_ps(inv);
    const __m256i vz = _mm256_set1_epi32(z);
    size_t p = 0;
    for (; p + 16 <= k; p += 16)
        _mm_storeu_si128((__m128i *)(q + p),
                         quant16(_mm256_loadu_ps(x + p),
                                 _mm256_loadu_ps(x + p + 8), vi, vz));
    if (p < k) {
        __m256 a, b;
        unsigned char t[16];
        load_tail(x + p, k - p, &a, &b);
        _mm_storeu_si128((__m128i *)t, quant16(a, b, vi, vz));
        for (size_t i = 0; i < k - p; i++)
            q[p + i] = t[i];
    }
}
#endif
