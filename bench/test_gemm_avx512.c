/* test_gemm_avx512.c - libbert's sgemm (gemm.c) against a double-precision
 * reference, with the AVX-512 BLIS context forced (where the CPU has
 * AVX-512F) and with the kernels chosen for this CPU, on shapes large enough
 * to take the AVX-512 micro-kernel path (every dimension >= 40), with edge
 * tiles, all stride layouts, alpha/beta, beta = 0 over NaN, 1 and 2
 * threads.  Exit status 0 when every product is within 1e-4 relative. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "libbert/gemm.h"

static unsigned long long rng = 88172645463325252ULL;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

int main(void)
{
    static const size_t shapes[][3] = {
        {40, 40, 40},   {64, 768, 64},  {128, 128, 64}, {128, 64, 128},
        {77, 53, 301},  {33, 97, 45},   {300, 41, 777}, {129, 390, 200},
        {512, 384, 96}, {1000, 50, 40}, {45, 1030, 400}};
    int bad = 0, n_run = 0;
    static const bert_gemm_kernels kinds[] = {BERT_GEMM_AVX512, BERT_GEMM_AUTO};
    for (int run = 0; run < 4; run++) {
        int threads = 1 + run % 2;
        bert_gemm_ctx *g = bert__gemm_ctx_create_with(threads, kinds[run / 2]);
        if (!g)
            return 1;
        printf("kernels %s, %d thread(s)\n", bert__gemm_ctx_kernels(g), threads);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            float *A = malloc(m * k * sizeof *A), *B = malloc(k * n * sizeof *B);
            float *C = malloc(m * n * sizeof *C), *C0 = malloc(m * n * sizeof *C0);
            if (!A || !B || !C || !C0)
                return 1;
            for (size_t i = 0; i < m * k; i++)
                A[i] = frand();
            for (size_t i = 0; i < k * n; i++)
                B[i] = frand();
            for (int lay = 0; lay < 8; lay++) {
                ptrdiff_t rsa = lay & 1 ? 1 : (ptrdiff_t)k, csa = lay & 1 ? (ptrdiff_t)m : 1;
                ptrdiff_t rsb = lay & 2 ? 1 : (ptrdiff_t)n, csb = lay & 2 ? (ptrdiff_t)k : 1;
                ptrdiff_t rsc = lay & 4 ? 1 : (ptrdiff_t)n, csc = lay & 4 ? (ptrdiff_t)m : 1;
                float alpha = lay % 3 ? 1.0f : 0.125f, beta = lay % 2 ? 0.0f : 0.5f;
                for (size_t i = 0; i < m * n; i++) {
                    C0[i] = frand();
                    C[i] = beta == 0.0f ? NAN : C0[i];
                }
                bert__sgemm(g, m, n, k, alpha, A, rsa, csa, B, rsb, csb, beta,
                            C, rsc, csc);
                double worst = 0;
                for (size_t i = 0; i < m; i++)
                    for (size_t j = 0; j < n; j++) {
                        double ref = 0, mag = 0;
                        for (size_t p = 0; p < k; p++) {
                            double x = (double)A[i * rsa + p * csa] * B[p * rsb + j * csb];
                            ref += x;
                            mag += fabs(x);
                        }
                        ref *= alpha;
                        mag *= alpha;
                        if (beta != 0.0f) {
                            ref += (double)beta * C0[i * rsc + j * csc];
                            mag += fabs((double)beta * C0[i * rsc + j * csc]);
                        }
                        double d = fabs(ref - C[i * rsc + j * csc]) / (mag + 1e-30);
                        if (!(d <= worst))
                            worst = isnan(d) ? INFINITY : d;
                    }
                n_run++;
                if (!(worst <= 1e-4)) {
                    printf("FAIL %s %zux%zux%zu layout %d threads %d: rel %g\n",
                           bert__gemm_ctx_kernels(g), m, n, k, lay, threads,
                           worst);
                    bad++;
                }
            }
            free(A), free(B), free(C), free(C0);
        }
        bert__gemm_ctx_free(g);
    }
    printf("%d products, %d bad\n", n_run, bad);
    return bad ? 1 : 0;
}
