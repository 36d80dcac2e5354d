/* gemm_avx512.c - the AVX-512 sgemm micro-kernel (8 x 48; see
 * gemm_kernels.h for the contract). */
#include "libbert/gemm_kernels.h"

#if BERT_HAVE_X86_KERNELS
#include <immintrin.h>

#define MR BERT_AVX512_MR

/* Row i of the tile: three accumulators (columns 0-15, 16-31, 32-47). */
#define DECL(i)                                                               \
    __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0;
/* A packed (a[p*MR + i]) or, for products with few column tiles, read in
 * place (rows = 1: row i at a + i*lda), as in gemm_avx2.c: attention's
 * P V then needs no packing pass over the probabilities. */
#define A_AT(i) (rows ? a[(i) * lda] : a[i])
#define STEP(i)                                                               \
    {                                                                         \
        __m512 ai = _mm512_set1_ps(A_AT(i));                                  \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                           \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                           \
        c##i##2 = _mm512_fmadd_ps(ai, b2, c##i##2);                           \
    }
#define STORE(i)                                                              \
    {                                                                         \
        float *ci = c + (i) * ldc;                                            \
        if (accumulate) {                                                     \
            _mm512_storeu_ps(ci, _mm512_fmadd_ps(va, c##i##0,                 \
                                                 _mm512_loadu_ps(ci)));       \
            _mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(                        \
                                          va, c##i##1,                        \
                                          _mm512_loadu_ps(ci + 16)));         \
            _mm512_storeu_ps(ci + 32, _mm512_fmadd_ps(                        \
                                          va, c##i##2,                        \
                                          _mm512_loadu_ps(ci + 32)));         \
        } else {                                                              \
            _mm512_storeu_ps(ci, _mm512_mul_ps(va, c##i##0));                 \
            _mm512_storeu_ps(ci + 16, _mm512_mul_ps(va, c##i##1));            \
            _mm512_storeu_ps(ci + 32, _mm512_mul_ps(va, c##i##2));            \
        }                                                                     \
    }
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* The k loop of the kernels below, carrying out the plan pf
 * (gemm_kernels.h) for the next B micro-panel BN, whose rows of 48 values
 * (3 lines) are LD values apart; the remaining arguments are one step.
 * The L2 share, rows [lo,hi), is asked for one line at a time, spread
 * evenly over the whole tile (every s_ steps).  With one or two tiles a
 * panel it has more lines than the tile has steps, and only the first k
 * are asked for, one a step (a row a step there instead: 1.019 of the time
 * for BERT-base at 1 x 16).  Every panel is packed contiguously (LD = 48:
 * row r's lines are lines 3r..3r+2 from its start), so the share is one
 * run of lines.  Before, it was three lines a step over
 * the tile's first hi - lo steps: 36 misses to memory in flight at once,
 * and most likely (no counters in the VMs measured) the tile's loads of A
 * then waited for fill buffers, which a software prefetch holds until its
 * line arrives (bench/ab, BERT-base, Xeon model 207: 0.930 of the time at
 * 1 x 128 on one thread, 0.933 on two, 0.968 at 1 x 512). */
#define PF_ROW(bn, hint)                                                      \
    _mm_prefetch((const char *)(bn), hint);                                   \
    _mm_prefetch((const char *)((bn) + 16), hint);                            \
    _mm_prefetch((const char *)((bn) + 32), hint);
#define PF_KLOOP(K, BN, LD, PF, ...)                                          \
    {                                                                         \
        size_t p_ = 0;                                                        \
        if ((PF).l1) {                                                        \
            for (; p_ < (K); p_++, (BN) += (LD)) {                            \
                PF_ROW(BN, _MM_HINT_T0)                                       \
                __VA_ARGS__                                                   \
            }                                                                 \
        } else if ((PF).hi > (PF).lo) {                                       \
            size_t n_ = 3 * (size_t)((PF).hi - (PF).lo), s_ = (K) / n_,       \
                   at_ = 0;                                                   \
            if (s_ == 0)                                                      \
                s_ = 1;                                                       \
            (BN) += (size_t)(PF).lo * (LD);                                   \
            for (; p_ < (K); p_++) {                                          \
                if (p_ == at_ && n_) {                                        \
                    _mm_prefetch((const char *)(BN), _MM_HINT_T1);            \
                    (BN) += 16;                                               \
                    n_--;                                                     \
                    at_ += s_;                                                \
                }                                                             \
                __VA_ARGS__                                                   \
            }                                                                 \
        }                                                                     \
        for (; p_ < (K); p_++) {                                              \
            __VA_ARGS__                                                       \
        }                                                                     \
    }

/* rows is a constant in each caller below: each gets its own loops. */
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma"),
               always_inline)) static inline void
ukr8x48(size_t k, const float *a, size_t lda, int rows, const float *b,
        size_t ldb, float *c, size_t ldc, float alpha, int accumulate,
        const bert_pf *pf)
{
    ROWS(DECL)
    const float *bn = b + k * ldb; /* the next micro-panel */
    /* C's tile is read at the end: start fetching it now. */
    if (accumulate)
        for (int i = 0; i < MR; i++) {
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + i * ldc + 32), _MM_HINT_T0);
        }
    PF_KLOOP(k, bn, ldb, *pf, {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16),
               b2 = _mm512_loadu_ps(b + 32);
        /* The next rows of the A panel come from L2: ask for them early
         * (in place, A's rows are eight sequential streams). */
        if (!rows)
            _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
        ROWS(STEP)
        a += rows ? 1 : MR;
        b += ldb;
    })
    const __m512 va = _mm512_set1_ps(alpha);
    ROWS(STORE)
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
void bert__ukr_avx512(size_t k, const float *a, const float *b, size_t ldb,
                      float *c, size_t ldc, float alpha, int accumulate,
                      const bert_pf *pf)
{
    ukr8x48(k, a, 0, 0, b, ldb, c, ldc, alpha, accumulate, pf);
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
void bert__ukr_avx512_rows(size_t k, const float *a, size_t lda,
                           const float *b, size_t ldb, float *c, size_t ldc,
                           float alpha, int accumulate, const bert_pf *pf)
{
    ukr8x48(k, a, lda, 1, b, ldb, c, ldc, alpha, accumulate, pf);
}
#endif

#if BERT_HAVE_X86_KERNELS
/* Edge columns: the same 8-row tile for nr < 48 columns, with NV = 1 or 2
 * vectors of accumulators and a masked store of the last, instead of the
 * full tile into a scratch buffer and a copy: attention's products have
 * 64 (head) or sequence-length columns, so every row of them ends in one.
 * The accumulators are named, as in the full tile: written as arrays and
 * loops, GCC 12 kept them on the stack and every FMA waited for the store
 * of the one before (one head's P V at 512 keys: 90 GFLOP/s then, 126
 * now; Q K^T at 128 keys: 103 then, 128 now; bench/gemm_shapes). */
#define E_DECL1(i) __m512 c##i##0 = _mm512_setzero_ps();
#define E_DECL2(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0;
#define E_STEP1(i)                                                            \
    c##i##0 = _mm512_fmadd_ps(_mm512_set1_ps(A_AT(i)), b0, c##i##0);
#define E_STEP2(i)                                                            \
    {                                                                         \
        __m512 ai = _mm512_set1_ps(A_AT(i));                                  \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);                           \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);                           \
    }
/* Vector v of row i: columns 16v.., the last one masked. */
#define E_PUT(i, v, m)                                                        \
    {                                                                         \
        float *cq = c + (i) * ldc + 16 * (v);                                 \
        __m512 r = _mm512_mul_ps(va, c##i##v);                                \
        if (accumulate)                                                       \
            r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, cq));               \
        _mm512_mask_storeu_ps(cq, m, r);                                      \
    }
#define E_STORE1(i) E_PUT(i, 0, last)
#define E_STORE2(i) E_PUT(i, 0, (__mmask16)0xffff) E_PUT(i, 1, last)

#define E_LOAD1 __m512 b0 = _mm512_loadu_ps(b);
#define E_LOAD2 __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#define EDGE_KERNEL(NV, R)                                                    \
    __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))         \
    static void ukr_edge##NV##R(size_t k, const float *a, size_t lda,         \
                                const float *b, size_t ldb, float *c,         \
                                size_t ldc, float alpha, int accumulate,      \
                                __mmask16 last)                               \
    {                                                                         \
        const int rows = R;                                                   \
        ROWS(E_DECL##NV)                                                      \
        for (size_t p = 0; p < k; p++, a += rows ? 1 : MR, b += ldb) {        \
            E_LOAD##NV                                                        \
            ROWS(E_STEP##NV)                                                  \
        }                                                                     \
        const __m512 va = _mm512_set1_ps(alpha);                              \
        ROWS(E_STORE##NV)                                                     \
    }
EDGE_KERNEL(1, 0)
EDGE_KERNEL(2, 0)
EDGE_KERNEL(1, 1)
EDGE_KERNEL(2, 1)

void bert__ukr_avx512_edge(size_t k, const float *a, size_t lda,
                           const float *b, size_t ldb, float *c, size_t ldc,
                           float alpha, int accumulate, size_t nr)
{
    size_t rem = nr > 16 ? nr - 16 : nr;
    __mmask16 last = (__mmask16)((1u << rem) - 1);
    if (nr > 16 && lda)
        ukr_edge21(k, a, lda, b, ldb, c, ldc, alpha, accumulate, last);
    else if (nr > 16)
        ukr_edge20(k, a, 0, b, ldb, c, ldc, alpha, accumulate, last);
    else if (lda)
        ukr_edge11(k, a, lda, b, ldb, c, ldc, alpha, accumulate, last);
    else
        ukr_edge10(k, a, 0, b, ldb, c, ldc, alpha, accumulate, last);
}
#endif

#if BERT_HAVE_X86_KERNELS
/* Columns p..p+7 of the eight rows r[0..7] as o[0..7] (o[j][i] = r[i][p+j]),
 * through in-register 8x8 transposes instead of 64 scalar moves. */
#define TRANSPOSE8(o, r, p)                                                   \
    {                                                                         \
        __m256 r0 = _mm256_loadu_ps(r[0] + p), r1 = _mm256_loadu_ps(r[1] + p); \
        __m256 r2 = _mm256_loadu_ps(r[2] + p), r3 = _mm256_loadu_ps(r[3] + p); \
        __m256 r4 = _mm256_loadu_ps(r[4] + p), r5 = _mm256_loadu_ps(r[5] + p); \
        __m256 r6 = _mm256_loadu_ps(r[6] + p), r7 = _mm256_loadu_ps(r[7] + p); \
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1); \
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3); \
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5); \
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7); \
        __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));       \
        __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));       \
        __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));       \
        __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));       \
        __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));       \
        __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));       \
        __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));       \
        __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));       \
        o[0] = _mm256_permute2f128_ps(u0, u4, 0x20);                          \
        o[1] = _mm256_permute2f128_ps(u1, u5, 0x20);                          \
        o[2] = _mm256_permute2f128_ps(u2, u6, 0x20);                          \
        o[3] = _mm256_permute2f128_ps(u3, u7, 0x20);                          \
        o[4] = _mm256_permute2f128_ps(u0, u4, 0x31);                          \
        o[5] = _mm256_permute2f128_ps(u1, u5, 0x31);                          \
        o[6] = _mm256_permute2f128_ps(u2, u6, 0x31);                          \
        o[7] = _mm256_permute2f128_ps(u3, u7, 0x31);                          \
    }

/* dst[p*ld + i] = src[i*ss + p] for i < 8, p < kc: eight contiguous source
 * rows become kc groups of 8.  Packs the AVX-512 kernel's 8-row A panels
 * (ld 8) and the panels of a transposed B (ld BERT_PANEL). */
__attribute__((target("avx2")))
void bert__transpose8(float *restrict dst, size_t ld, const float *src,
                      ptrdiff_t ss, size_t kc)
{
    const float *r[8];
    for (int i = 0; i < 8; i++)
        r[i] = src + (ptrdiff_t)i * ss;
    size_t p = 0;
    for (; p + 8 <= kc; p += 8, dst += 8 * ld) {
        __m256 o[8];
        TRANSPOSE8(o, r, p)
        for (int j = 0; j < 8; j++)
            _mm256_storeu_ps(dst + j * ld, o[j]);
    }
    for (; p < kc; p++, dst += ld)
        for (int i = 0; i < 8; i++)
            dst[i] = r[i][p];
}

/* dst[p*6 + i] = src[i*ss + p] for i < 6, p < kc: the AVX2 kernel's 6-row
 * A panels (on a Zen 3 VM the scalar loop it replaces was a tenth of
 * MiniLM's time on one 512-token sequence, packing the attention
 * probabilities for P V).  Rows 6 and 7 of the transposes repeat row 5
 * and are not stored. */
__attribute__((target("avx2")))
void bert__transpose6(float *restrict dst, const float *src, ptrdiff_t ss,
                      size_t kc)
{
    const float *r[8];
    for (int i = 0; i < 8; i++)
        r[i] = src + (ptrdiff_t)(i < 6 ? i : 5) * ss;
    size_t p = 0;
    for (; p + 8 <= kc; p += 8, dst += 8 * 6) {
        __m256 o[8];
        TRANSPOSE8(o, r, p)
        for (int j = 0; j < 8; j++) {
            _mm_storeu_ps(dst + j * 6, _mm256_castps256_ps128(o[j]));
            _mm_storel_pi((__m64 *)(dst + j * 6 + 4), _mm256_extractf128_ps(o[j], 1));
        }
    }
    for (; p < kc; p++, dst += 6)
        for (int i = 0; i < 6; i++)
            dst[i] = r[i][p];
}
#endif

#if BERT_HAVE_X86_KERNELS
/* ---- reduced precision: int8 (AVX512-VNNI) and bf16 (AVX512-BF16) ------- */

#define I8_DECL(i)                                                            \
    __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0,              \
            c##i##2 = c##i##0;
/* vpdpbusd through asm: GCC 12 compiles _mm512_dpbusd_epi32 in this loop
 * into a copy and a stack spill per accumulator per step (measured: half
 * the instruction's throughput); the asm keeps the 24 accumulators in
 * registers, as the float kernel's FMAs are. */
#define DPBUSD(acc, a, b)                                                     \
    __asm__("vpdpbusd %[w], %[x], %[c]" : [c] "+v"(acc) : [x] "v"(a), [w] "v"(b))
#define I8_STEP(i)                                                            \
    {                                                                         \
        __m512i ai = _mm512_set1_epi32((int)a[i]);                            \
        DPBUSD(c##i##0, ai, b0);                                              \
        DPBUSD(c##i##1, ai, b1);                                              \
        DPBUSD(c##i##2, ai, b2);                                              \
    }
#define I8_SAVE(i)                                                            \
    _mm512_store_si512(t + (i) * 48, c##i##0);                                \
    _mm512_store_si512(t + (i) * 48 + 16, c##i##1);                           \
    _mm512_store_si512(t + (i) * 48 + 32, c##i##2);

/* C := rs[i] cs[j] (t(i,j) - rz[i] csum[j]) (+ C) for an 8 x 48 tile of
 * int32 sums.  Apart from the loop: with the output stage's eight
 * constants live after it, GCC 12 spilled accumulators inside the loop. */
__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
void bert__i8_out_avx512(const int32_t *t, float *c, size_t ldc, const float *rs,
                   const int32_t *rz, const float *cs, const int32_t *csum,
                   int accumulate)
{
    for (int q = 0; q < 48; q += 16) {
        const __m512 scl = _mm512_loadu_ps(cs + q);
        const __m512i sum = _mm512_loadu_si512(csum + q);
        for (int i = 0; i < MR; i++) {
            __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(
                _mm512_load_si512(t + i * 48 + q),
                _mm512_mullo_epi32(_mm512_set1_epi32(rz[i]), sum)));
            __m512 sc = _mm512_mul_ps(_mm512_set1_ps(rs[i]), scl);
            float *cq = c + i * ldc + q;
            _mm512_storeu_ps(cq, accumulate
                                     ? _mm512_fmadd_ps(f, sc, _mm512_loadu_ps(cq))
                                     : _mm512_mul_ps(f, sc));
        }
    }
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,fma")))
void bert__ukr_i8_avx512(size_t kg, const uint32_t *a, const uint32_t *b,
                         float *c, size_t ldc, const float *rs,
                         const int32_t *rz, const float *cs,
                         const int32_t *csum, int accumulate,
                         const bert_pf *pf)
{
    ROWS(I8_DECL)
    /* As in the float kernel: the next panel follows this one. */
    const uint32_t *bn = b + kg * BERT_PANEL;
    PF_KLOOP(kg, bn, BERT_PANEL, *pf, {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 16),
                b2 = _mm512_loadu_si512(b + 32);
        _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
        ROWS(I8_STEP)
        a += MR;
        b += BERT_PANEL;
    })
    int32_t t[MR * 48] __attribute__((aligned(64)));
    ROWS(I8_SAVE)
    bert__i8_out_avx512(t, c, ldc, rs, rz, cs, csum, accumulate);
}

#define BF_STEP(i)                                                            \
    {                                                                         \
        __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);                 \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, ai, b0);                          \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, ai, b1);                          \
        c##i##2 = _mm512_dpbf16_ps(c##i##2, ai, b2);                          \
    }

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16,fma")))
void bert__ukr_bf16_avx512(size_t kg, const uint32_t *a, const uint32_t *b,
                           float *c, size_t ldc, int accumulate,
                           const bert_pf *pf)
{
    ROWS(DECL)
    const uint32_t *bn = b + kg * BERT_PANEL;
    PF_KLOOP(kg, bn, BERT_PANEL, *pf, {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b),
                 b1 = (__m512bh)_mm512_loadu_si512(b + 16),
                 b2 = (__m512bh)_mm512_loadu_si512(b + 32);
        _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
        ROWS(BF_STEP)
        a += MR;
        b += BERT_PANEL;
    })
    const __m512 va = _mm512_set1_ps(1.0f);
    ROWS(STORE)
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))
void bert__minmax_avx512(const float *x, size_t k, float *mn, float *mx)
{
    __m512 lo = _mm512_setzero_ps(), hi = lo;
    size_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512 v = _mm512_loadu_ps(x + p);
        lo = _mm512_min_ps(lo, v);
        hi = _mm512_max_ps(hi, v);
    }
    if (p < k) {
        __mmask16 m = (__mmask16)((1u << (k - p)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + p); /* zeros: 0 is in range */
        lo = _mm512_min_ps(lo, v);
        hi = _mm512_max_ps(hi, v);
    }
    *mn = _mm512_reduce_min_ps(lo);
    *mx = _mm512_reduce_max_ps(hi);
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))
void bert__quant_row_avx512(uint8_t *q, const float *x, size_t k, float inv,
                            int32_t z)
{
    const __m512 vi = _mm512_set1_ps(inv);
    const __m512i vz = _mm512_set1_epi32(z), lo = _mm512_setzero_si512(),
                  hi = _mm512_set1_epi32(255);
    size_t p = 0;
    for (; p + 16 <= k; p += 16) {
        __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + p), vi));
        v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, vz), lo), hi);
        _mm_storeu_si128((__m128i *)(q + p), _mm512_cvtepi32_epi8(v));
    }
    if (p < k) {
        __mmask16 m = (__mmask16)((1u << (k - p)) - 1);
        __m512i v = _mm512_cvtps_epi32(
            _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + p), vi));
        v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, vz), lo), hi);
        _mm512_mask_cvtepi32_storeu_epi8(q + p, m, v);
    }
}

__attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512bf16")))
void bert__bf16_row_avx512(uint16_t *h, const float *x, size_t k)
{
    size_t p = 0;
    for (; p + 16 <= k; p += 16)
        _mm256_storeu_si256((__m256i *)(h + p),
                            (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + p)));
    if (p < k) {
        __mmask16 m = (__mmask16)((1u << (k - p)) - 1);
        _mm256_mask_storeu_epi16(
            h + p, m,
            (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + p)));
    }
}
#endif
