/* kernels.c - LayerNorm, activations, softmax and bias rows (see kernels.h).
 *
 * On CPUs with AVX-512F the hot loops (erf GELU, softmax, LayerNorm
 * statistics, cross-entropy) run 16 floats at a time, on AVX2 + FMA CPUs 8
 * at a time; the scalar code is the reference and the fallback.  The
 * vector exp is a degree-7 Taylor polynomial on |r| <= ln2/2 after range
 * reduction (relative error ~1e-7, like expf); erfc is Numerical Recipes'
 * erfcc Chebyshev fit (relative error < 1.2e-7 everywhere), so GELU keeps
 * the exact erf form to float precision (the tanh form differs by
 * 2e-4..1e-3).  No -ffast-math anywhere.
 */
#include "libbert/kernels.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* x86-64 with GCC-style target attributes: the AVX-512 and AVX2 forms
 * below are built, each chosen at run time from the CPU's features. */
#define KERNELS_X86 1
#define AVX512 __attribute__((target("avx512f")))
static int have_avx512(void)
{
    return __builtin_cpu_supports("avx512f");
}

/* The lanes of a 16-float step with `left` floats to go: all 16, or the
 * first `left` of the last, partial step. */
AVX512 static inline __mmask16 tail16(size_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* e^x; 0 below -87.3 (where expf becomes subnormal: subnormals would cost
 * microcode assists downstream and weigh nothing here), clamped above
 * 88.7. */
AVX512 static inline __m512 exp512(__m512 x)
{
    __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)),
                      _mm512_set1_ps(88.72f));
    __m512 n = _mm512_roundscale_ps(
        _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
}

/* 1 + erf(x/sqrt 2) through erfc(|x|/sqrt 2), so both tails keep their
 * relative precision. */
AVX512 static inline __m512 one_plus_erf512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 z = _mm512_mul_ps(_mm512_abs_ps(x),
                             _mm512_set1_ps(0.70710678118654752440f));
    __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.5f), z, one));
    __m512 p = _mm512_set1_ps(0.17087277f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
    p = _mm512_fnmadd_ps(z, z, p);                  /* -z^2 - 1.2655 + ... */
    __m512 erfc = _mm512_mul_ps(t, exp512(p));      /* erfc(|x|/sqrt 2) */
    /* x >= 0: 1 + erf = 2 - erfc;  x < 0: 1 + erf = erfc. */
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.0f), erfc),
                                erfc);
}

/* x/2 (1 + erf(x/sqrt 2)) */
AVX512 static inline __m512 gelu_erf512(__m512 x)
{
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                         one_plus_erf512(x));
}

/* ---- the same functions 8 floats at a time, for AVX2 + FMA CPUs --------- */
/* (Zen 3, Haswell to Alder Lake...: without them GELU's erff and softmax's
 * expf were 12% of BERT-base's time on one 128-token sequence on a Zen 3
 * VM.)  The same polynomials and the same order of operations as the
 * 512-bit versions above; partial steps go through masked loads, so every
 * value of a row takes the same path. */
#define AVX2 __attribute__((target("avx2,fma")))
static int have_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The lanes of an 8-float step with `left` to go (a vmaskmov mask). */
AVX2 static inline __m256i tail8(size_t left)
{
    static const int32_t m[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                  0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256((const __m256i *)(m + 8 - (left < 8 ? left : 8)));
}

/* Loads and stores of the 8 floats at p with `left` to go: plain for a
 * whole step, masked for the last, partial one (vmaskmovps stores are
 * slow on AMD CPUs: on a Zen 3 VM masking every step made the softmax
 * 2.6x and GELU 1.9x slower).  Masked-off lanes load as 0. */
AVX2 static inline __m256 ld8(const float *p, size_t left)
{
    return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, tail8(left));
}

AVX2 static inline void st8(float *p, size_t left, __m256 v)
{
    if (left >= 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, tail8(left), v);
}

/* v in the lanes of a step with `left` to go, x in the others. */
AVX2 static inline __m256 live8(__m256 v, __m256 x, size_t left)
{
    return left >= 8 ? v : _mm256_blendv_ps(x, v, _mm256_castsi256_ps(tail8(left)));
}

AVX2 static inline float hmax256(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

AVX2 static inline float hadd256(__m256 v)
{
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

AVX2 static inline double hadd256d(__m256d v)
{
    __m128d m = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(m, _mm_unpackhi_pd(m, m)));
}

/* The AVX2 forms below work on N (1 to 4) vectors at once, step by step
 * across them: exp and erf are chains of some 30 dependent operations,
 * and with one vector at a time the FP scheduler filled with a single
 * chain's waiting operations.  GELU took 16.4 ns a vector on the Zen 3 VM,
 * 4 vectors at once 9.6 ns (the derivative 1.77x, the softmax 1.28x
 * faster).  Every lane's operations are the same for any N, so are the
 * results, bit for bit. */
#define EACH(j, N) _Pragma("GCC unroll 4") for (int j = 0; j < (N); j++)
/* (GCC 12 would call them, passing the vectors through memory) */
#define AVX2_INLINE AVX2 __attribute__((always_inline)) static inline

/* As exp512, in place on x[0..N).  2^n as two factors 2^(n>>1) and
 * 2^(n - (n>>1)), both normal for every n in [-126, 128]: the first
 * product is exact, so the result is rounded once, as scalef rounds it. */
AVX2_INLINE void exp256n(__m256 *x, int N)
{
    __m256 live[4], n[4], r[4], p[4];
    EACH(j, N) {
        live[j] = _mm256_cmp_ps(x[j], _mm256_set1_ps(-87.3f), _CMP_GE_OQ);
        x[j] = _mm256_min_ps(_mm256_max_ps(x[j], _mm256_set1_ps(-87.3f)),
                             _mm256_set1_ps(88.72f));
    }
    EACH(j, N)
        n[j] = _mm256_round_ps(
            _mm256_mul_ps(x[j], _mm256_set1_ps(1.44269504088896341f)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    EACH(j, N)
        r[j] = _mm256_fnmadd_ps(n[j], _mm256_set1_ps(0.693145751953125f), x[j]);
    EACH(j, N)
        r[j] = _mm256_fnmadd_ps(n[j], _mm256_set1_ps(1.428606765330187e-06f),
                                r[j]);
    static const float c[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120,
                              1.0f / 24,   1.0f / 6,   0.5f,
                              1.0f,        1.0f};
    EACH(j, N)
        p[j] = _mm256_set1_ps(c[0]);
    _Pragma("GCC unroll 8") for (int q = 1; q < 8; q++)
        EACH(j, N)
            p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(c[q]));
    EACH(j, N) {
        __m256i ni = _mm256_cvtps_epi32(n[j]), n1 = _mm256_srai_epi32(ni, 1);
        __m256i n2 = _mm256_sub_epi32(ni, n1), bias = _mm256_set1_epi32(127);
        __m256 s1 = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
        __m256 s2 = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
        x[j] = _mm256_and_ps(live[j],
                             _mm256_mul_ps(_mm256_mul_ps(p[j], s1), s2));
    }
}

AVX2_INLINE __m256 exp256(__m256 x)
{
    exp256n(&x, 1);
    return x;
}

/* As one_plus_erf512, in place on x[0..N). */
AVX2_INLINE void one_plus_erf256n(__m256 *x, int N)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 z[4], t[4], p[4];
    EACH(j, N) {
        z[j] = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x[j]),
                             _mm256_set1_ps(0.70710678118654752440f));
        t[j] = _mm256_div_ps(
            one, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), z[j], one));
    }
    static const float c[] = {0.17087277f,  -0.82215223f, 1.48851587f,
                              -1.13520398f, 0.27886807f,  -0.18628806f,
                              0.09678418f,  0.37409196f,  1.00002368f,
                              -1.26551223f};
    EACH(j, N)
        p[j] = _mm256_set1_ps(c[0]);
    _Pragma("GCC unroll 10") for (int q = 1; q < 10; q++)
        EACH(j, N)
            p[j] = _mm256_fmadd_ps(p[j], t[j], _mm256_set1_ps(c[q]));
    EACH(j, N)
        p[j] = _mm256_fnmadd_ps(z[j], z[j], p[j]);
    exp256n(p, N);
    EACH(j, N) {
        __m256 erfc = _mm256_mul_ps(t[j], p[j]);
        __m256 neg = _mm256_cmp_ps(x[j], _mm256_setzero_ps(), _CMP_LT_OQ);
        x[j] = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), erfc),
                                erfc, neg);
    }
}

AVX2_INLINE __m256 one_plus_erf256(__m256 x)
{
    one_plus_erf256n(&x, 1);
    return x;
}

AVX2 static inline __m256 gelu_erf256(__m256 x)
{
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x),
                         one_plus_erf256(x));
}
#else
#define KERNELS_X86 0
#endif

/* ---- LayerNorm ------------------------------------------------------------ */

/* ln_row's scalar parts from element i on, shared by its vector forms
 * (which run them on the elements past their last whole step): s plus
 * the sum of x[i..C), of the squared deviations from mean, and the
 * output. */
static inline double ln_sum_from(double s, const float *x, size_t i, size_t C)
{
    for (; i < C; i++)
        s += x[i];
    return s;
}

static inline double ln_var_from(double s, const float *x, size_t i, size_t C,
                                 double mean)
{
    for (; i < C; i++) {
        double d = x[i] - mean;
        s += d * d;
    }
    return s;
}

static inline void ln_out_from(float *out, const float *x, const float *weight,
                               const float *bias, size_t i, size_t C,
                               double mean, double rstd)
{
    for (; i < C; i++)
        out[i] = (float)((x[i] - mean) * rstd) * weight[i] + bias[i];
}

#if KERNELS_X86
/* Same as ln_row: sums in double (two 8-lane accumulators). */
AVX512 static void ln_row512(float *out, const float *x, const float *weight,
                             const float *bias, size_t C, float eps)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 16 <= C; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
    }
    double mean = ln_sum_from(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)), x, i, C);
    mean /= (double)C;
    __m512d m = _mm512_set1_pd(mean);
    s0 = _mm512_setzero_pd();
    s1 = _mm512_setzero_pd();
    for (i = 0; i + 16 <= C; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), m);
        __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(
                                       _mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))),
                                   m);
        s0 = _mm512_fmadd_pd(d0, d0, s0);
        s1 = _mm512_fmadd_pd(d1, d1, s1);
    }
    double var = ln_var_from(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)), x, i, C, mean);
    var /= (double)C;
    double rstd = 1.0 / sqrt(var + (double)eps);
    /* (x - mean) * rstd in float: within an ulp of the double form. */
    __m512 mf = _mm512_set1_ps((float)mean), rf = _mm512_set1_ps((float)rstd);
    for (i = 0; i + 16 <= C; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), mf), rf);
        _mm512_storeu_ps(out + i, _mm512_fmadd_ps(v, _mm512_loadu_ps(weight + i),
                                                  _mm512_loadu_ps(bias + i)));
    }
    ln_out_from(out, x, weight, bias, i, C, mean, rstd);
}
#endif

#if KERNELS_X86
/* Same as ln_row512, 8 floats a step (two 4-lane double accumulators). */
AVX2 static void ln_row256(float *out, const float *x, const float *weight,
                           const float *bias, size_t C, float eps)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    size_t i = 0;
    for (; i + 8 <= C; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double mean = ln_sum_from(hadd256d(_mm256_add_pd(s0, s1)), x, i, C);
    mean /= (double)C;
    __m256d m = _mm256_set1_pd(mean);
    s0 = _mm256_setzero_pd();
    s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= C; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
        __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m);
        s0 = _mm256_fmadd_pd(d0, d0, s0);
        s1 = _mm256_fmadd_pd(d1, d1, s1);
    }
    double var = ln_var_from(hadd256d(_mm256_add_pd(s0, s1)), x, i, C, mean);
    var /= (double)C;
    double rstd = 1.0 / sqrt(var + (double)eps);
    __m256 mf = _mm256_set1_ps((float)mean), rf = _mm256_set1_ps((float)rstd);
    for (i = 0; i + 8 <= C; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mf), rf);
        _mm256_storeu_ps(out + i, _mm256_fmadd_ps(v, _mm256_loadu_ps(weight + i),
                                                  _mm256_loadu_ps(bias + i)));
    }
    ln_out_from(out, x, weight, bias, i, C, mean, rstd);
}
#endif

static void ln_row(float *out, const float *x, const float *weight,
                   const float *bias, size_t C, float eps)
{
#if KERNELS_X86
    if (have_avx512()) {
        ln_row512(out, x, weight, bias, C, eps);
        return;
    }
    if (have_avx2()) {
        ln_row256(out, x, weight, bias, C, eps);
        return;
    }
#endif
    double mean = ln_sum_from(0, x, 0, C) / (double)C;
    double var = ln_var_from(0, x, 0, C, mean) / (double)C;
    ln_out_from(out, x, weight, bias, 0, C, mean, 1.0 / sqrt(var + (double)eps));
}

void bert__layernorm_forward(float *out, const float *inp, const float *weight,
                             const float *bias, size_t T, size_t C, float eps)
{
    for (size_t t = 0; t < T; t++)
        ln_row(out + t * C, inp + t * C, weight, bias, C, eps);
}

void bert__add_layernorm_forward(float *out, const float *a, const float *b,
                                 const float *weight, const float *bias,
                                 size_t T, size_t C, float eps)
{
    for (size_t t = 0; t < T; t++) {
        float *o = out + t * C;
        const float *x = a + t * C, *y = b + t * C;
        for (size_t i = 0; i < C; i++)
            o[i] = x[i] + y[i];
        ln_row(o, o, weight, bias, C, eps);
    }
}

/* ---- activations ---------------------------------------------------------- */

#if KERNELS_X86
/* x = gelu(x + bias[i % C]) over n values (bias NULL: none). */
AVX512 static void bias_gelu_erf512(float *x, const float *bias, size_t T,
                                    size_t C)
{
    for (size_t t = 0; t < T; t++, x += C) {
        size_t i = 0;
        for (; i + 16 <= C; i += 16) {
            __m512 v = _mm512_loadu_ps(x + i);
            if (bias)
                v = _mm512_add_ps(v, _mm512_loadu_ps(bias + i));
            _mm512_storeu_ps(x + i, gelu_erf512(v));
        }
        if (i < C) {
            __mmask16 k = tail16(C - i);
            __m512 v = _mm512_maskz_loadu_ps(k, x + i);
            if (bias)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias + i));
            _mm512_mask_storeu_ps(x + i, k, gelu_erf512(v));
        }
    }
}
#endif

#if KERNELS_X86
AVX2 static void bias_gelu_erf256(float *x, const float *bias, size_t T,
                                  size_t C)
{
    for (size_t t = 0; t < T; t++, x += C) {
        size_t i = 0;
        for (; i + 32 <= C; i += 32) { /* 4 vectors at once (exp256n) */
            __m256 v[4], e[4];
            EACH(j, 4) {
                v[j] = _mm256_loadu_ps(x + i + 8 * j);
                if (bias)
                    v[j] = _mm256_add_ps(v[j],
                                         _mm256_loadu_ps(bias + i + 8 * j));
                e[j] = v[j];
            }
            one_plus_erf256n(e, 4);
            EACH(j, 4)
                _mm256_storeu_ps(x + i + 8 * j,
                                 _mm256_mul_ps(_mm256_mul_ps(
                                                   _mm256_set1_ps(0.5f), v[j]),
                                               e[j]));
        }
        for (; i < C; i += 8) {
            __m256 v = ld8(x + i, C - i);
            if (bias)
                v = _mm256_add_ps(v, ld8(bias + i, C - i));
            st8(x + i, C - i, gelu_erf256(v));
        }
    }
}
#endif

void bert__gelu_erf_forward(float *x, size_t n)
{
    const float r = 0.70710678118654752440f; /* 1/sqrt(2) */
#if KERNELS_X86
    if (have_avx512()) {
        bias_gelu_erf512(x, NULL, 1, n);
        return;
    }
    if (have_avx2()) {
        bias_gelu_erf256(x, NULL, 1, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * r));
}

#if KERNELS_X86
AVX512 static void gelu_erf_backward512(float *dinp, const float *dout,
                                        const float *inp, size_t n)
{
    const __m512 half = _mm512_set1_ps(0.5f);
    const __m512 c = _mm512_set1_ps(0.39894228040143267794f); /* 1/sqrt(2pi) */
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 k = tail16(n - i);
        __m512 x = _mm512_maskz_loadu_ps(k, inp + i);
        __m512 pdf = exp512(_mm512_mul_ps(_mm512_mul_ps(half, x),
                                          _mm512_sub_ps(_mm512_setzero_ps(), x)));
        __m512 d = _mm512_fmadd_ps(_mm512_mul_ps(x, c), pdf,
                                   _mm512_mul_ps(half, one_plus_erf512(x)));
        __m512 g = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, dout + i), d,
                                   _mm512_maskz_loadu_ps(k, dinp + i));
        _mm512_mask_storeu_ps(dinp + i, k, g);
    }
}
#endif

#if KERNELS_X86
AVX2 static void gelu_erf_backward256(float *dinp, const float *dout,
                                      const float *inp, size_t n)
{
    const __m256 half = _mm256_set1_ps(0.5f);
    const __m256 c = _mm256_set1_ps(0.39894228040143267794f); /* 1/sqrt(2pi) */
    size_t i = 0;
    for (; i + 32 <= n; i += 32) { /* 4 vectors at once (exp256n) */
        __m256 x[4], pdf[4], e[4];
        EACH(j, 4) {
            x[j] = _mm256_loadu_ps(inp + i + 8 * j);
            pdf[j] = _mm256_mul_ps(_mm256_mul_ps(half, x[j]),
                                   _mm256_sub_ps(_mm256_setzero_ps(), x[j]));
            e[j] = x[j];
        }
        exp256n(pdf, 4);
        one_plus_erf256n(e, 4);
        EACH(j, 4) {
            __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(x[j], c), pdf[j],
                                       _mm256_mul_ps(half, e[j]));
            _mm256_storeu_ps(dinp + i + 8 * j,
                             _mm256_fmadd_ps(_mm256_loadu_ps(dout + i + 8 * j),
                                             d,
                                             _mm256_loadu_ps(dinp + i + 8 * j)));
        }
    }
    for (; i < n; i += 8) {
        __m256 x = ld8(inp + i, n - i);
        __m256 pdf = exp256(_mm256_mul_ps(_mm256_mul_ps(half, x),
                                          _mm256_sub_ps(_mm256_setzero_ps(), x)));
        __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(x, c), pdf,
                                   _mm256_mul_ps(half, one_plus_erf256(x)));
        __m256 g = _mm256_fmadd_ps(ld8(dout + i, n - i), d, ld8(dinp + i, n - i));
        st8(dinp + i, n - i, g);
    }
}
#endif

void bert__gelu_erf_backward(float *dinp, const float *dout, const float *inp,
                             size_t n)
{
#if KERNELS_X86
    if (have_avx512()) {
        gelu_erf_backward512(dinp, dout, inp, n);
        return;
    }
    if (have_avx2()) {
        gelu_erf_backward256(dinp, dout, inp, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float d = 0.5f * (1.0f + erff(x * 0.70710678118654752440f)) +
                  x * 0.39894228040143267794f * expf(-0.5f * x * x);
        dinp[i] += dout[i] * d;
    }
}

#if KERNELS_X86
AVX512 static void xent_row512(float *d, const float *l, size_t target,
                               size_t C, float scale, double *loss)
{
    __m512 mv = _mm512_set1_ps(-INFINITY);
    for (size_t c = 0; c < C; c += 16) {
        __mmask16 k = tail16(C - c);
        mv = _mm512_mask_max_ps(mv, k, mv, _mm512_maskz_loadu_ps(k, l + c));
    }
    float mx = _mm512_reduce_max_ps(mv);
    /* e^(l - max) (into d when there is one), summed in double */
    __m512 m = _mm512_set1_ps(mx);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (size_t c = 0; c < C; c += 16) {
        __mmask16 k = tail16(C - c);
        __m512 e = _mm512_maskz_mov_ps(
            k, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, l + c), m)));
        if (d)
            _mm512_mask_storeu_ps(d + c, k, e);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    }
    double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    *loss = log(sum) + (double)mx - (double)l[target];
    if (!d)
        return;
    __m512 f = _mm512_set1_ps((float)((double)scale / sum));
    for (size_t c = 0; c < C; c += 16) {
        __mmask16 k = tail16(C - c);
        _mm512_mask_storeu_ps(d + c, k,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(k, d + c), f));
    }
    d[target] -= scale;
}
#endif

#if KERNELS_X86
/* As xent_row512.  Masked-off lanes load as 0, so the max takes -inf
 * there and the sums 0. */
AVX2 static void xent_row256(float *d, const float *l, size_t target,
                             size_t C, float scale, double *loss)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 mv = ninf;
    for (size_t c = 0; c < C; c += 8)
        mv = _mm256_max_ps(mv, live8(ld8(l + c, C - c), ninf, C - c));
    float mx = hmax256(mv);
    __m256 m = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    size_t c = 0;
    for (; c + 32 <= C; c += 32) { /* 4 vectors at once (exp256n) */
        __m256 e[4];
        EACH(j, 4)
            e[j] = _mm256_sub_ps(_mm256_loadu_ps(l + c + 8 * j), m);
        exp256n(e, 4);
        EACH(j, 4) {
            if (d)
                _mm256_storeu_ps(d + c + 8 * j, e[j]);
            s0 = _mm256_add_pd(s0,
                               _mm256_cvtps_pd(_mm256_castps256_ps128(e[j])));
            s1 = _mm256_add_pd(s1,
                               _mm256_cvtps_pd(_mm256_extractf128_ps(e[j], 1)));
        }
    }
    for (; c < C; c += 8) {
        __m256 e = live8(exp256(_mm256_sub_ps(ld8(l + c, C - c), m)),
                         _mm256_setzero_ps(), C - c);
        if (d)
            st8(d + c, C - c, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double sum = hadd256d(_mm256_add_pd(s0, s1));
    *loss = log(sum) + (double)mx - (double)l[target];
    if (!d)
        return;
    __m256 f = _mm256_set1_ps((float)((double)scale / sum));
    for (c = 0; c < C; c += 8)
        st8(d + c, C - c, _mm256_mul_ps(ld8(d + c, C - c), f));
    d[target] -= scale;
}
#endif

int bert__xent_row(float *d, const float *l, size_t target, size_t C,
                   float scale, double *loss)
{
#if KERNELS_X86
    if (have_avx512() && C > 0 && target < C) {
        xent_row512(d, l, target, C, scale, loss);
        return 0;
    }
    if (have_avx2() && C > 0 && target < C) {
        xent_row256(d, l, target, C, scale, loss);
        return 0;
    }
#endif
    (void)d; (void)l; (void)target; (void)C; (void)scale; (void)loss;
    return -1;
}

void bert__gelu_tanh_forward(float *x, size_t n)
{
    const float c = 0.79788456080286535588f; /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
    }
}

void bert__relu_forward(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void bert__tanh_forward(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tanhf(x[i]);
}

/* ---- softmax -------------------------------------------------------------- */

#if KERNELS_X86
AVX512 static void softmax512(float *x, size_t T, size_t n, size_t ld,
                              float scale, const float *mask)
{
    const __m512 vs = _mm512_set1_ps(scale);
    for (size_t t = 0; t < T; t++) {
        float *row = x + t * ld;
        __m512 vmx = _mm512_set1_ps(-INFINITY);
        size_t i = 0;
        for (; i < n; i += 16) {
            __mmask16 k = tail16(n - i);
            __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + i), vs);
            if (mask)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, mask + i));
            vmx = _mm512_mask_max_ps(vmx, k, vmx, v);
        }
        float mx = _mm512_reduce_max_ps(vmx);
        if (mx == -INFINITY) {
            memset(row, 0, n * sizeof *row);
            continue;
        }
        const __m512 m = _mm512_set1_ps(mx);
        __m512 sum = _mm512_setzero_ps();
        for (i = 0; i < n; i += 16) {
            __mmask16 k = tail16(n - i);
            /* The scaled, masked score again rather than stored by the
             * first pass: one pass over the row less.  exp512(-inf) is 0:
             * masked keys get no weight. */
            __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + i), vs);
            if (mask)
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, mask + i));
            __m512 e = exp512(_mm512_sub_ps(v, m));
            e = _mm512_maskz_mov_ps(k, e);
            _mm512_mask_storeu_ps(row + i, k, e);
            sum = _mm512_add_ps(sum, e);
        }
        const __m512 inv = _mm512_set1_ps((float)(1.0 / (double)_mm512_reduce_add_ps(sum)));
        for (i = 0; i < n; i += 16) {
            __mmask16 k = tail16(n - i);
            _mm512_mask_storeu_ps(row + i, k,
                                  _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + i), inv));
        }
    }
}
#endif

#if KERNELS_X86
AVX2 static void softmax256(float *x, size_t T, size_t n, size_t ld,
                            float scale, const float *mask)
{
    const __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    for (size_t t = 0; t < T; t++) {
        float *row = x + t * ld;
        __m256 vmx = ninf;
        size_t i = 0;
        for (; i < n; i += 8) {
            __m256 v = _mm256_mul_ps(ld8(row + i, n - i), vs);
            if (mask)
                v = _mm256_add_ps(v, ld8(mask + i, n - i));
            vmx = _mm256_max_ps(vmx, live8(v, ninf, n - i));
        }
        float mx = hmax256(vmx);
        if (mx == -INFINITY) {
            memset(row, 0, n * sizeof *row);
            continue;
        }
        const __m256 m = _mm256_set1_ps(mx);
        __m256 sum = _mm256_setzero_ps();
        for (i = 0; i + 32 <= n; i += 32) { /* 4 vectors at once */
            __m256 e[4];
            EACH(j, 4) {
                __m256 v = _mm256_mul_ps(_mm256_loadu_ps(row + i + 8 * j), vs);
                if (mask)
                    v = _mm256_add_ps(v, _mm256_loadu_ps(mask + i + 8 * j));
                e[j] = _mm256_sub_ps(v, m);
            }
            exp256n(e, 4);
            EACH(j, 4) {
                _mm256_storeu_ps(row + i + 8 * j, e[j]);
                sum = _mm256_add_ps(sum, e[j]);
            }
        }
        for (; i < n; i += 8) {
            __m256 v = _mm256_mul_ps(ld8(row + i, n - i), vs);
            if (mask)
                v = _mm256_add_ps(v, ld8(mask + i, n - i));
            __m256 e = live8(exp256(_mm256_sub_ps(v, m)), _mm256_setzero_ps(), n - i);
            st8(row + i, n - i, e);
            sum = _mm256_add_ps(sum, e);
        }
        const __m256 inv = _mm256_set1_ps((float)(1.0 / (double)hadd256(sum)));
        for (i = 0; i < n; i += 8)
            st8(row + i, n - i, _mm256_mul_ps(ld8(row + i, n - i), inv));
    }
}
#endif

void bert__softmax_forward(float *x, size_t T, size_t n, size_t ld,
                           float scale, const float *mask)
{
#if KERNELS_X86
    if (have_avx512()) {
        softmax512(x, T, n, ld, scale, mask);
        return;
    }
    if (have_avx2()) {
        softmax256(x, T, n, ld, scale, mask);
        return;
    }
#endif
    for (size_t t = 0; t < T; t++) {
        float *row = x + t * ld;
        float mx = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            float v = row[i] * scale + (mask ? mask[i] : 0.0f);
            row[i] = v;
            if (v > mx)
                mx = v;
        }
        if (mx == -INFINITY) {
            memset(row, 0, n * sizeof *row);
            continue;
        }
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            float e = expf(row[i] - mx);
            row[i] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);
        for (size_t i = 0; i < n; i++)
            row[i] *= inv;
    }
}

/* ---- bias ----------------------------------------------------------------- */

void bert__bias_fill(float *out, const float *bias, size_t T, size_t OC)
{
    for (size_t t = 0; t < T; t++)
        memcpy(out + t * OC, bias, OC * sizeof *out);
}

/* ---- fused epilogues ------------------------------------------------------ */

void bert__bias_act_forward(float *x, const float *bias, size_t T, size_t C,
                            bert_activation act)
{
#if KERNELS_X86
    if (act == BERT_ACT_GELU && have_avx512()) {
        bias_gelu_erf512(x, bias, T, C);
        return;
    }
    if (act == BERT_ACT_GELU && have_avx2()) {
        bias_gelu_erf256(x, bias, T, C);
        return;
    }
#endif
    for (size_t t = 0; t < T; t++) {
        float *row = x + t * C;
        if (bias)
            for (size_t i = 0; i < C; i++)
                row[i] += bias[i];
        switch (act) {
        case BERT_ACT_GELU:
            bert__gelu_erf_forward(row, C);
            break;
        case BERT_ACT_GELU_TANH:
            bert__gelu_tanh_forward(row, C);
            break;
        case BERT_ACT_RELU:
            bert__relu_forward(row, C);
            break;
        }
    }
}

void bert__bias_add_layernorm_forward(float *x, const float *y,
                                      const float *bias, const float *weight,
                                      const float *lnbias, size_t T, size_t C,
                                      float eps)
{
    for (size_t t = 0; t < T; t++) {
        float *o = x + t * C;
        const float *r = y + t * C;
        for (size_t i = 0; i < C; i++)
            o[i] = o[i] + (r[i] + bias[i]);
        ln_row(o, o, weight, lnbias, C, eps);
    }
}
