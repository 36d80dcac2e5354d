/*
 * libbert/gemm_avx512.h - a BLIS context whose sgemm runs libbert's own
 * AVX-512 micro-kernel.
 *
 * Why: Debian's BLIS 0.9.0 picks its AVX2 ("haswell") configuration on
 * AVX-512 CPUs whose brand string does not reveal the number of FMA units
 * (every VM), so sgemm reaches about half of the fp32 peak.  BLIS's own
 * AVX-512 ("skx") kernels are compiled into libblis.so but not exported
 * (bli_gks_lookup_nat_cntx and bli_cntx_init_skx are hidden symbols); the
 * only switch is the process-wide BLIS_ARCH_TYPE environment variable, read
 * once at BLIS's first call, which a library must not touch.
 *
 * What: a private copy of BLIS's default context (the cntx argument of
 * bli_sgemm_ex) in which the single-precision "native" micro-kernel is a
 * 32x12 AVX-512 FMA kernel with matching cache block sizes.  Everything
 * else stays BLIS's: packing, the five loops, threading through the rntm_t,
 * and the "sup" small-matrix path, which keeps the AVX2 sup kernels for
 * products with a dimension below BERT_AVX512_SUP_THRESH (they are 2x faster
 * than a packed AVX-512 product at ~16 rows).  No global state: the context
 * lives wherever the caller puts it.
 *
 * Header-only (static functions), so that every program that compiles
 * libbert/gemm.c in gets it too.  Include it from one .c file per program
 * (gemm.c in the library, bert-bench for its BLIS measurement).
 */
#ifndef LIBBERT_GEMM_AVX512_H
#define LIBBERT_GEMM_AVX512_H

#include <blis.h>
#include <string.h>

/* Products with m or n below BERT_AVX512_SUP_THRESH, or k below
 * BERT_AVX512_SUP_THRESH_K, go to BLIS's small-matrix kernels (measured
 * crossover: between 32 and 48 rows for BERT shapes; with k = 32, as in
 * QK^T of 32-wide heads, the packed AVX-512 kernel is already faster). */
#define BERT_AVX512_SUP_THRESH 40
#define BERT_AVX512_SUP_THRESH_K 32

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BERT_HAVE_AVX512_KERNEL 1
#else
#define BERT_HAVE_AVX512_KERNEL 0
#endif

static int bert__cpu_has_avx512(void);

/* 1 when the AVX-512 kernel should replace BLIS's default: the CPU has
 * AVX-512F and BLIS chose its AVX2 "haswell" configuration (Intel AVX-512
 * CPUs whose FMA-unit count BLIS cannot read from the brand string, as in
 * VMs).  Not on AMD: BLIS chooses "zen3" there, and Zen 4 runs a 512-bit
 * FMA as two 256-bit halves, so zen3's AVX2 kernels reach the same peak and
 * its small-matrix path, used up to 512 rows, does not re-pack the weights
 * (measured on an EPYC Zen 4 VM: BERT-base 1 x 128 288 ms with BLIS's zen3
 * context against 329 ms with the AVX-512 kernel, 1 x 512 1014 / 1101 ms;
 * docs/performance.md).  Skylake-X servers that BLIS recognises get its own
 * skx kernels. */
static inline int bert__avx512_kernel_preferred(void)
{
    return bert__cpu_has_avx512() && bli_arch_query_id() == BLIS_ARCH_HASWELL;
}

static int bert__cpu_has_avx512(void)
{
#if BERT_HAVE_AVX512_KERNEL
    /* GCC's check includes the OS (XCR0) support of the zmm state.  No
     * __builtin_cpu_init(): libgcc's constructor has run before any library
     * call, and calling it from concurrent session creations would race on
     * libgcc's CPU-model variable. */
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
#else
    return 0;
#endif
}

#if BERT_HAVE_AVX512_KERNEL

/* Micro-tile: MR rows (two zmm vectors) by NR columns; 24 accumulators. */
enum { BERT_AVX512_MR = 32, BERT_AVX512_NR = 12 };
/* Cache blocks: an MC x KC block of A (0.7 MB) stays in L2, a KC x NR
 * micro-panel of B (18 KB) in L1.  Tuned on a 2 MB-L2 Xeon (Sapphire
 * Rapids); BERT-base shapes vary by under 3% for MC 384..960, KC 256..512. */
enum { BERT_AVX512_MC = 480, BERT_AVX512_KC = 384, BERT_AVX512_NC = 3072 };

/* C(m,n) := alpha * A B + beta * C for one micro-tile, BLIS 0.9 calling
 * convention.  A is packed column by column (a[i + p*MR]), B row by row
 * (b[j + p*NR]); m <= MR and n <= NR (edge tiles go through a local
 * buffer); beta == 0 never reads C. */
#define MR BERT_AVX512_MR
#define NR BERT_AVX512_NR
__attribute__((target("avx512f")))
static void bert__sgemm_avx512_32x12(dim_t m, dim_t n, dim_t k,
                               float *restrict alpha, float *restrict a,
                               float *restrict b, float *restrict beta,
                               float *restrict c, inc_t rs_c, inc_t cs_c,
                               auxinfo_t *restrict data,
                               cntx_t *restrict cntx)
{
    (void)data;
    (void)cntx;
    __m512 lo[NR], hi[NR];
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++) {
        lo[j] = _mm512_setzero_ps();
        hi[j] = _mm512_setzero_ps();
    }
    for (dim_t p = 0; p < k; p++) {
        __m512 a0 = _mm512_loadu_ps(a), a1 = _mm512_loadu_ps(a + 16);
        _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
#pragma GCC unroll 12
        for (int j = 0; j < NR; j++) {
            __m512 bj = _mm512_set1_ps(b[j]);
            lo[j] = _mm512_fmadd_ps(a0, bj, lo[j]);
            hi[j] = _mm512_fmadd_ps(a1, bj, hi[j]);
        }
        a += MR;
        b += NR;
    }
    const __m512 va = _mm512_set1_ps(*alpha);
    const float bt = *beta;
    if (m == MR && n == NR && rs_c == 1) {
        if (bt == 0.0f) {
#pragma GCC unroll 12
            for (int j = 0; j < NR; j++) {
                _mm512_storeu_ps(c + j * cs_c, _mm512_mul_ps(va, lo[j]));
                _mm512_storeu_ps(c + j * cs_c + 16, _mm512_mul_ps(va, hi[j]));
            }
        } else {
            const __m512 vb = _mm512_set1_ps(bt);
#pragma GCC unroll 12
            for (int j = 0; j < NR; j++) {
                float *cj = c + j * cs_c;
                _mm512_storeu_ps(cj, _mm512_fmadd_ps(va, lo[j],
                                 _mm512_mul_ps(vb, _mm512_loadu_ps(cj))));
                _mm512_storeu_ps(cj + 16, _mm512_fmadd_ps(va, hi[j],
                                 _mm512_mul_ps(vb, _mm512_loadu_ps(cj + 16))));
            }
        }
        return;
    }
    /* Edge tile or general strides. */
    float ct[MR * NR] __attribute__((aligned(64)));
#pragma GCC unroll 12
    for (int j = 0; j < NR; j++) {
        _mm512_store_ps(ct + j * MR, _mm512_mul_ps(va, lo[j]));
        _mm512_store_ps(ct + j * MR + 16, _mm512_mul_ps(va, hi[j]));
    }
    for (dim_t j = 0; j < n; j++)
        for (dim_t i = 0; i < m; i++) {
            float *cij = c + i * rs_c + j * cs_c;
            *cij = bt == 0.0f ? ct[i + j * MR] : ct[i + j * MR] + bt * *cij;
        }
}
#undef MR
#undef NR

/* y := alpha x for n elements (BLIS 0.9 scal2v kernel).  BLIS packs the
 * 32-row panels of the micro-kernel with its generic scal2m, which has no
 * packing-kernel slot beyond 31 rows and calls scal2v once per column: 32
 * elements of a weight row-major matrix, one per row (stride = row
 * length), into a contiguous panel column.  Two 16-lane gathers replace
 * BLIS's element-by-element loop (+8% on 128-row products). */
__attribute__((target("avx512f")))
static void bert__scal2v_avx512(conj_t conjx, dim_t n, float *restrict alpha,
                                float *restrict x, inc_t incx,
                                float *restrict y, inc_t incy,
                                cntx_t *restrict cntx)
{
    (void)conjx; /* real */
    (void)cntx;
    const float a = *alpha;
    if (a == 0.0f) { /* BLIS semantics: y = 0 whatever x holds */
        for (dim_t i = 0; i < n; i++)
            y[i * incy] = 0.0f;
        return;
    }
    if (incy == 1 && incx > 0 && incx < ((inc_t)1 << 26)) {
        const __m512i idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                              14, 15),
            _mm512_set1_epi32((int)incx));
        const __m512 va = _mm512_set1_ps(a);
        for (dim_t i = 0; i < n; i += 16) {
            __mmask16 k = n - i >= 16 ? (__mmask16)0xffff
                                      : (__mmask16)((1u << (n - i)) - 1);
            __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, idx,
                                                x + i * incx, 4);
            _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(va, v));
        }
        return;
    }
    for (dim_t i = 0; i < n; i++)
        y[i * incy] = a * x[i * incx];
}

static void bert__avx512_set_blksz(cntx_t *cx, bszid_t id, dim_t v)
{
    bli_blksz_set_def(v, BLIS_FLOAT, &cx->blkszs[id]);
    bli_blksz_set_max(v, BLIS_FLOAT, &cx->blkszs[id]);
}

#endif

/* Copies BLIS's default context into *cx and, when the CPU supports
 * AVX-512F, installs the AVX-512 sgemm micro-kernel and its block sizes
 * (whatever bert__avx512_kernel_preferred says: tests and benchmarks use it
 * to compare).
 * Returns 1 when installed, 0 when *cx is the plain default copy.  Call it
 * once (per model or session) and pass cx to bli_sgemm_ex; the context is
 * then only read, so several threads may share it. */
static int bert__blis_cntx_avx512(cntx_t *cx)
{
    memcpy(cx, bli_gks_query_cntx(), sizeof *cx);
#if BERT_HAVE_AVX512_KERNEL
    if (!bert__cpu_has_avx512())
        return 0;
    /* The macro-kernel calls the "virtual" micro-kernel, which for real
     * types is the native one: set both, for float only. */
    bli_func_set_dt((void_fp)bert__sgemm_avx512_32x12, BLIS_FLOAT,
                    &cx->l3_nat_ukrs[BLIS_GEMM_UKR]);
    bli_func_set_dt((void_fp)bert__sgemm_avx512_32x12, BLIS_FLOAT,
                    &cx->l3_vir_ukrs[BLIS_GEMM_UKR]);
    /* Only packing (through scal2m) uses scal2v in an sgemm. */
    bli_func_set_dt((void_fp)bert__scal2v_avx512, BLIS_FLOAT,
                    &cx->l1v_kers[BLIS_SCAL2V_KER]);
    /* FALSE: the kernel prefers column-stored C (contiguous along m);
     * BLIS transposes row-major problems to match. */
    bli_mbool_set_dt(FALSE, BLIS_FLOAT,
                     &cx->l3_nat_ukrs_prefs[BLIS_GEMM_UKR]);
    bert__avx512_set_blksz(cx, BLIS_MR, BERT_AVX512_MR);
    bert__avx512_set_blksz(cx, BLIS_NR, BERT_AVX512_NR);
    bert__avx512_set_blksz(cx, BLIS_MC, BERT_AVX512_MC);
    bert__avx512_set_blksz(cx, BLIS_KC, BERT_AVX512_KC);
    bert__avx512_set_blksz(cx, BLIS_NC, BERT_AVX512_NC);
    bli_blksz_set_def(BERT_AVX512_SUP_THRESH, BLIS_FLOAT,
                      &cx->l3_sup_thresh[BLIS_MT]);
    bli_blksz_set_def(BERT_AVX512_SUP_THRESH, BLIS_FLOAT,
                      &cx->l3_sup_thresh[BLIS_NT]);
    bli_blksz_set_def(BERT_AVX512_SUP_THRESH_K, BLIS_FLOAT,
                      &cx->l3_sup_thresh[BLIS_KT]);
    return 1;
#else
    return 0;
#endif
}

#endif
