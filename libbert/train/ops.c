/* libbert/train/ops.c - forward/backward kernels of the trainer.  See ops.h.
 * The kernels are the float instantiation of ops_impl.h; the counter-based
 * random numbers do not depend on the scalar type and live here once. */
#include "libbert/gemm.h"
#include "libbert/kernels.h"
#include "libbert/train/ops.h"

#include <math.h>

/* ---- counter-based random numbers -------------------------------------- */

static uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return bert__t_mix64(bert__t_mask_key(seed, stream) ^ idx);
}

double bert__t_uniform(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return (double)(hash3(seed, stream, idx) >> 11) * (1.0 / 9007199254740992.0);
}

double bert__t_normal(uint64_t seed, uint64_t stream, uint64_t idx)
{
    double u1 = bert__t_uniform(seed, stream, 2 * idx);
    double u2 = bert__t_uniform(seed, stream, 2 * idx + 1);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int bert__t_keep(uint64_t seed, uint64_t stream, uint64_t idx, float p)
{
    return bert__t_keep_at(bert__t_mask_key(seed, stream), idx, p);
}

/* ---- the float kernels ------------------------------------------------- */

/* Products go through libbert's product layer (gemm.h), with the kernels
 * inference uses; the trainer's weights change every step, so they are
 * packed per call like any B operand. */
static void sgemm_layer(void *ctx, int slot, size_t m, size_t n, size_t k,
                        float alpha, const float *a, size_t rsa, size_t csa,
                        const float *b, size_t rsb, size_t csb, float beta,
                        float *c, size_t rsc, size_t csc)
{
    if (slot < 0)
        bert__sgemm(ctx, m, n, k, alpha, a, (ptrdiff_t)rsa, (ptrdiff_t)csa, b,
                    (ptrdiff_t)rsb, (ptrdiff_t)csb, beta, c, (ptrdiff_t)rsc,
                    (ptrdiff_t)csc);
    else
        bert__sgemm1(ctx, slot, m, n, k, alpha, a, (ptrdiff_t)rsa,
                     (ptrdiff_t)csa, b, (ptrdiff_t)rsb, (ptrdiff_t)csb, beta,
                     c, (ptrdiff_t)rsc, (ptrdiff_t)csc);
}

/* Dropout's mask eight hashes at a time (AVX-512F with DQ's 64-bit
 * multiply; below, four with AVX2): the same integers, the same float
 * compare, so the same mask as bert__t_keep_at's loop, bit for bit.
 * Returns 0 (nothing done) on a CPU without them. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX512DQ __attribute__((target("avx512f,avx512dq")))
AVX512DQ static __m512i mix512(__m512i z)
{
    z = _mm512_add_epi64(z, _mm512_set1_epi64((long long)0x9e3779b97f4a7c15ULL));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                           _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ULL));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                           _mm512_set1_epi64((long long)0x94d049bb133111ebULL));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* The uniforms of elements idx .. idx+7 (24 bits each, exact in float). */
AVX512DQ static __m256 uniform8(__m512i key, __m512i idx)
{
    __m512i h = _mm512_srli_epi64(mix512(_mm512_xor_si512(key, idx)), 40);
    return _mm256_mul_ps(_mm512_cvtepi64_ps(h),
                         _mm256_set1_ps(1.0f / 16777216.0f));
}

AVX512DQ static int dropout512(float *out, const float *in, size_t n, float p,
                               float sc, uint64_t key, uint64_t base)
{
    const __m512i k = _mm512_set1_epi64((long long)key);
    const __m512i step = _mm512_set1_epi64(16);
    const __m512 pv = _mm512_set1_ps(p), scv = _mm512_set1_ps(sc);
    __m512i lo = _mm512_add_epi64(_mm512_set1_epi64((long long)base),
                                  _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    __m512i hi = _mm512_add_epi64(lo, _mm512_set1_epi64(8));
    for (size_t i = 0; i < n; i += 16) {
        __m512 u = _mm512_insertf32x8(_mm512_castps256_ps512(uniform8(k, lo)),
                                      uniform8(k, hi), 1);
        __mmask16 keep = _mm512_cmp_ps_mask(u, pv, _CMP_GE_OQ);
        __mmask16 live = n - i >= 16 ? (__mmask16)0xffff
                                     : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(live, in + i);
        _mm512_mask_storeu_ps(out + i, live, _mm512_maskz_mul_ps(keep, x, scv));
        lo = _mm512_add_epi64(lo, step);
        hi = _mm512_add_epi64(hi, step);
    }
    return 1;
}

/* The same with AVX2, four hashes a vector: AVX2 has no 64-bit multiply,
 * so a * c mod 2^64 is put together from three 32 x 32 -> 64 products
 * (the high half of a times c's low half, a's low half times c's high
 * half, shifted up; plus the low halves' product).  On a Zen 3 VM the
 * scalar hashing was 8% of a masked-LM step. */
#define AVX2I __attribute__((target("avx2")))
AVX2I static __m256i mul64(__m256i a, uint64_t c)
{
    const __m256i clo = _mm256_set1_epi64x((long long)(c & 0xffffffffu));
    const __m256i chi = _mm256_set1_epi64x((long long)(c >> 32));
    __m256i cross = _mm256_add_epi64(
        _mm256_mul_epu32(_mm256_srli_epi64(a, 32), clo), _mm256_mul_epu32(a, chi));
    return _mm256_add_epi64(_mm256_mul_epu32(a, clo), _mm256_slli_epi64(cross, 32));
}

AVX2I static __m256i mix256(__m256i z)
{
    z = _mm256_add_epi64(z, _mm256_set1_epi64x((long long)0x9e3779b97f4a7c15ULL));
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xbf58476d1ce4e5b9ULL);
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94d049bb133111ebULL);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

AVX2I static int dropout256(float *out, const float *in, size_t n, float p,
                            float sc, uint64_t key, uint64_t base)
{
    const __m256i k = _mm256_set1_epi64x((long long)key);
    const __m256i step = _mm256_set1_epi64x(8);
    const __m256 pv = _mm256_set1_ps(p), scv = _mm256_set1_ps(sc);
    /* even elements in one vector, odd in the other: their 24-bit hashes
     * interleave into elements 0..7 in order */
    __m256i ev = _mm256_add_epi64(_mm256_set1_epi64x((long long)base),
                                  _mm256_setr_epi64x(0, 2, 4, 6));
    __m256i od = _mm256_add_epi64(ev, _mm256_set1_epi64x(1));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i he = _mm256_srli_epi64(mix256(_mm256_xor_si256(k, ev)), 40);
        __m256i ho = _mm256_srli_epi64(mix256(_mm256_xor_si256(k, od)), 40);
        __m256i h = _mm256_blend_epi32(he, _mm256_slli_epi64(ho, 32), 0xaa);
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(h),
                                 _mm256_set1_ps(1.0f / 16777216.0f));
        __m256 keep = _mm256_cmp_ps(u, pv, _CMP_GE_OQ);
        _mm256_storeu_ps(out + i, _mm256_and_ps(
                                      keep, _mm256_mul_ps(_mm256_loadu_ps(in + i), scv)));
        ev = _mm256_add_epi64(ev, step);
        od = _mm256_add_epi64(od, step);
    }
    for (; i < n; i++)
        out[i] = bert__t_keep_at(key, base + i, p) ? in[i] * sc : 0;
    return 1;
}

static int dropout_fast(float *out, const float *in, size_t n, float p,
                        float sc, uint64_t key, uint64_t base)
{
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
        return dropout512(out, in, n, p, sc, key, base);
    if (__builtin_cpu_supports("avx2"))
        return dropout256(out, in, n, p, sc, key, base);
    return 0;
}
#define OPS_DROPOUT_FAST dropout_fast
#endif

/* A softmax cross-entropy row (MLM's run over the vocabulary) with the
 * inference kernels' vector exp, summed in double, instead of two double
 * exps an entry. */
static int ce_row_fast(float *d, const float *l, int32_t target, size_t C,
                       float scale, double *loss)
{
    return bert__xent_row(d, l, (size_t)target, C, scale, loss) == 0;
}
#define OPS_CE_ROW_FAST ce_row_fast

#define OPS_REAL float
#define OPS(name) bert__t_##name
#define OPS_GEMM sgemm_layer
/* exact GELU's derivative through the inference kernels' vector erf/exp */
#define OPS_GELU_BACKWARD bert__gelu_erf_backward
#include "libbert/train/ops_impl.h"
