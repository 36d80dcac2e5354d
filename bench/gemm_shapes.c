/* gemm_shapes.c - the products of a BERT forward, one thread, through each
 * kernel tier of libbert's product layer: BLIS's sgemm (blis), libbert's
 * kernels packing the weights per call (unpacked), and libbert's kernels on
 * weights packed once (packed), as a loaded model runs them.
 *
 *   make bench/gemm_shapes && bench/gemm_shapes [avx512|avx2]   (GFLOP/s)
 *
 * The dense products also run on int8 and bf16 weights (gemm_lowp.c) where
 * this CPU and tier run them: G(FL)OP/s count a multiply-add as 2, as for
 * float32.
 *
 * Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), best of 5, so
 * other processes on the machine disturb the figures less.  Dense products
 * are Y(m,out) = X(m,in) W^T, rotating over 24 weight matrices so that they
 * come from memory as in a forward pass; attention products are one head's
 * Q K^T (n,n,hs) and P V (n,hs,n) with rows H = 12 hs apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libbert/gemm.h"

enum { NW = 24 };

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    size_t m, n, k;
    const float *A;
    ptrdiff_t rsa, csa;
    float *const *B; /* nb operands, used in turn */
    bert_wmat *Wm;   /* or nb packed weights */
    int nb;
    ptrdiff_t rsb, csb;
    float *C;
} product;

static double gflops(const product *p, const bert_gemm_ctx *g)
{
    double fl = 2.0 * (double)p->m * (double)p->n * (double)p->k * p->nb;
    int reps = (int)(2e8 / fl) + 1;
    double best = 1e30;
    for (int it = 0; it < 5; it++) {
        double t = cpu_s();
        for (int rr = 0; rr < reps; rr++)
            for (int l = 0; l < p->nb; l++) {
                if (p->Wm)
                    bert__gemm_w(g, 0, p->m, p->A, (size_t)p->rsa, &p->Wm[l],
                                 0.0f, p->C, p->n);
                else
                    bert__sgemm1(g, 0, p->m, p->n, p->k, 1.0f, p->A, p->rsa,
                                 p->csa, p->B[l], p->rsb, p->csb, 0.0f, p->C,
                                 (ptrdiff_t)p->n, 1);
            }
        t = (cpu_s() - t) / reps;
        if (t < best)
            best = t;
    }
    return fl / best / 1e9;
}

int main(int argc, char **argv)
{
    int tier = argc > 1 ? bert__kernels_parse(argv[1]) : BERT_KERNELS_AUTO;
    char why[128];
    bert_gemm_ctx *own = bert__gemm_ctx_create(1, (bert_kernels)tier, why,
                                               sizeof why);
    bert_gemm_ctx *blis = bert__gemm_ctx_create(1, BERT_KERNELS_BLIS, NULL, 0);
    if (!own || !blis) {
        fprintf(stderr, "gemm_shapes: %s\n", why);
        return 1;
    }
    /* 64-byte aligned, as a session's arena is: from malloc (16 bytes past
     * a page) every C tile row straddled two lines, and the products at
     * 4096 rows measured 15-20% slow on the Zen 3 VM. */
    float *A = aligned_alloc(64, 4096 * 3072 * sizeof *A),
          *C = aligned_alloc(64, 4096 * 3072 * sizeof *C);
    float *W[NW];
    static bert_wmat Wp[3][3][NW]; /* precision, shape, matrix */
    static const size_t io[3][2] = {{768, 768}, {768, 3072}, {3072, 768}};
    static const bert_precision precs[3] = {
        BERT_PRECISION_FP32, BERT_PRECISION_INT8, BERT_PRECISION_BF16};
    int have[3];
    for (int q = 0; q < 3; q++)
        have[q] = bert__gemm_ctx_tier(own) != BERT_KERNELS_BLIS &&
                  bert__precision_supported(precs[q], bert__gemm_ctx_tier(own),
                                            NULL, 0);
    if (!A || !C)
        return 1;
    for (size_t i = 0; i < 4096 * 3072; i++)
        A[i] = (float)(i % 7) * 0.01f;
    for (int l = 0; l < NW; l++) {
        if (!(W[l] = malloc(768 * 3072 * sizeof *W[l])))
            return 1;
        for (size_t i = 0; i < 768 * 3072; i++)
            W[l][i] = (float)(i % 5) * 0.01f;
        for (int q = 0; q < 3; q++)
            for (int sh = 0; sh < 3; sh++) {
                Wp[q][sh][l] = (bert_wmat){W[l], NULL, io[sh][1], io[sh][0],
                                           precs[q]};
                if (have[q] && bert__wmat_pack(&Wp[q][sh][l], 1))
                    return 1;
            }
    }
    printf("libbert kernels %s against %s; GFLOP/s (CPU time), 1 thread\n",
           bert__gemm_ctx_kernels(own), bert__gemm_ctx_kernels(blis));
    printf("\ndense X(m,in) W^T, weights from memory: blis / unpacked / "
           "packed fp32 / int8 / bf16 (- where this CPU has none)\n");
    static const size_t ms[] = {1, 4, 16, 32, 64, 128, 256, 512, 4096};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        printf("  m %4zu", ms[i]);
        for (int sh = 0; sh < 3; sh++) {
            size_t in = io[sh][0], out = io[sh][1];
            product p = {ms[i], out, in, A, (ptrdiff_t)in, 1, W, NULL, NW, 1,
                         (ptrdiff_t)in, C};
            printf("   %zu->%zu %6.1f %6.1f", in, out, gflops(&p, blis),
                   gflops(&p, own));
            for (int q = 0; q < 3; q++) {
                product pp = p;
                pp.Wm = Wp[q][sh];
                if (have[q])
                    printf(" %6.1f", gflops(&pp, own));
                else
                    printf("      -");
            }
        }
        printf("\n");
    }
    printf("\none head's attention:  blis / libbert\n");
    static const size_t hss[] = {32, 64}, ns[] = {16, 32, 64, 128, 256, 512};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            size_t hs = hss[a], n = ns[b], H = 12 * hs;
            float *K[1] = {W[0]}, *V[1] = {W[1]};
            product qk = {n, n, hs, A, (ptrdiff_t)H, 1, K, NULL, 1, 1,
                          (ptrdiff_t)H, C};
            product pv = {n, hs, n, A, (ptrdiff_t)n, 1, V, NULL, 1,
                          (ptrdiff_t)H, 1, C};
            printf("  hs %2zu n %4zu   QK^T %6.1f %6.1f   PV %6.1f %6.1f\n", hs,
                   n, gflops(&qk, blis), gflops(&qk, own), gflops(&pv, blis),
                   gflops(&pv, own));
        }
    for (int l = 0; l < NW; l++) {
        free(W[l]);
        for (int q = 0; q < 3; q++)
            for (int sh = 0; sh < 3; sh++)
                bert__wmat_free(&Wp[q][sh][l]);
    }
    free(A);
    free(C);
    bert__gemm_ctx_free(own);
    bert__gemm_ctx_free(blis);
    return 0;
}
