/* gemm_avx2.c - the AVX2 + FMA sgemm micro-kernel (6 x 16; see
 * gemm_kernels.h for the contract).  It reads a third of a 48-column weight
 * panel (ldb = 48), so both x86 tiers share one packed copy of a model. */
#include "libbert/gemm_kernels.h"

#if BERT_HAVE_X86_KERNELS
#include <immintrin.h>

#define MR BERT_AVX2_MR

#define DECL(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = c##i##0;
#define STEP(i)                                                               \
    {                                                                         \
        __m256 ai = _mm256_broadcast_ss(a + (i));                             \
        c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);                           \
        c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);                           \
    }
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

__attribute__((target("avx2,fma")))
void bert__ukr_avx2(size_t k, const float *a, const float *b, size_t ldb,
                    float *c, size_t ldc, float alpha, int accumulate)
{
    ROWS(DECL)
    /* As in the AVX-512 kernel: the next micro-panel into L2 meanwhile
     * (here the next 48-column panel, read after this one's other thirds). */
    const float *bn = b + k * ldb;
    if (accumulate)
        for (int i = 0; i < MR; i++)
            _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
    for (size_t p = 0; p < k; p++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
        _mm_prefetch((const char *)bn, _MM_HINT_T1);
        _mm_prefetch((const char *)(bn + 16), _MM_HINT_T1);
        bn += ldb;
        ROWS(STEP)
        a += MR;
        b += ldb;
    }
    const __m256 va = _mm256_set1_ps(alpha);
    ROWS(STORE)
}
#endif
