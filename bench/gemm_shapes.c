/* gemm_shapes.c - BLIS sgemm on the products of a BERT forward, through
 * BLIS's small-matrix ("sup") path, through its packed path, and as libbert
 * runs them (gemm.c's context for this CPU).  This is how the thresholds in
 * gemm.c (tune_zen3) and gemm_avx512.h were chosen.
 *
 *   make bench/gemm_shapes && bench/gemm_shapes      (1 thread, GFLOP/s)
 *
 * Dense products are Y(m,out) = X(m,in) W^T with W read in place as libbert
 * reads weights (k-contiguous), rotating over 24 weight matrices so that
 * they come from memory as in a forward pass; attention products are one
 * head's Q K^T (n,n,hs) and P V (n,hs,n) with rows H = 12 hs apart. */
#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libbert/gemm.h"

enum { NW = 24 };

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void set_thresh(cntx_t *c, dim_t v)
{
    bli_blksz_set_def(v, BLIS_FLOAT, &c->l3_sup_thresh[BLIS_MT]);
    bli_blksz_set_def(v, BLIS_FLOAT, &c->l3_sup_thresh[BLIS_NT]);
    bli_blksz_set_def(v, BLIS_FLOAT, &c->l3_sup_thresh[BLIS_KT]);
}

typedef struct {
    size_t m, n, k;
    const float *A;
    ptrdiff_t rsa, csa;
    float *const *B; /* nb operands, used in turn */
    int nb;
    ptrdiff_t rsb, csb;
    float *C;
} product;

/* GFLOP/s of the best of 5 timings; cx NULL runs libbert's bert__sgemm1. */
static double gflops(const product *p, cntx_t *cx, const bert_gemm_ctx *g)
{
    rntm_t r = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &r);
    float one = 1, zero = 0;
    double fl = 2.0 * (double)p->m * (double)p->n * (double)p->k * p->nb;
    int reps = (int)(2e8 / fl) + 1, best_set = 0;
    double best = 0;
    for (int it = 0; it < 5; it++) {
        double t = now_s();
        for (int rr = 0; rr < reps; rr++)
            for (int l = 0; l < p->nb; l++) {
                if (cx)
                    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE,
                                 (dim_t)p->m, (dim_t)p->n, (dim_t)p->k, &one,
                                 (float *)p->A, p->rsa, p->csa, p->B[l],
                                 p->rsb, p->csb, &zero, p->C, (inc_t)p->n, 1,
                                 cx, &r);
                else
                    bert__sgemm1(g, p->m, p->n, p->k, 1.0f, p->A, p->rsa,
                                 p->csa, p->B[l], p->rsb, p->csb, 0.0f, p->C,
                                 (ptrdiff_t)p->n, 1);
            }
        t = (now_s() - t) / reps;
        if (!best_set || t < best)
            best = t, best_set = 1;
    }
    return fl / best / 1e9;
}

int main(void)
{
    cntx_t sup, packed;
    memcpy(&sup, bli_gks_query_cntx(), sizeof sup);
    packed = sup;
    set_thresh(&sup, 1 << 30); /* every product is "small" */
    set_thresh(&packed, 1);    /* none is */
    bert_gemm_ctx *g = bert__gemm_ctx_create(1);
    float *A = malloc(4096 * 3072 * sizeof *A), *C = malloc(4096 * 3072 * sizeof *C);
    float *W[NW];
    if (!g || !A || !C)
        return 1;
    for (size_t i = 0; i < 4096 * 3072; i++)
        A[i] = (float)(i % 7) * 0.01f;
    for (int l = 0; l < NW; l++) {
        if (!(W[l] = malloc(768 * 3072 * sizeof *W[l])))
            return 1;
        for (size_t i = 0; i < 768 * 3072; i++)
            W[l][i] = (float)(i % 5) * 0.01f;
    }
    printf("BLIS configuration %s, libbert kernels %s; GFLOP/s, 1 thread\n",
           bli_arch_string(bli_arch_query_id()), bert__gemm_ctx_kernels(g));
    printf("\ndense X(m,in) W^T, weights from memory:  sup / packed / libbert\n");
    static const size_t ms[] = {4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        printf("  m %4zu", ms[i]);
        static const size_t io[2][2] = {{768, 768}, {3072, 768}};
        for (int s = 0; s < 2; s++) {
            size_t in = io[s][0], out = io[s][1];
            product p = {ms[i], out, in, A, (ptrdiff_t)in, 1, W, NW, 1,
                         (ptrdiff_t)in, C};
            printf("   %zu->%zu %6.1f %6.1f %6.1f", in, out,
                   gflops(&p, &sup, NULL), gflops(&p, &packed, NULL),
                   gflops(&p, NULL, g));
        }
        printf("\n");
    }
    printf("\none head's attention:  sup / packed / libbert\n");
    static const size_t hss[] = {32, 64}, ns[] = {16, 32, 64, 128, 256, 512};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            size_t hs = hss[a], n = ns[b], H = 12 * hs;
            float *K[1] = {W[0]}, *V[1] = {W[1]};
            product qk = {n, n, hs, A, (ptrdiff_t)H, 1, K, 1, 1, (ptrdiff_t)H, C};
            product pv = {n, hs, n, A, (ptrdiff_t)n, 1, V, 1, (ptrdiff_t)H, 1, C};
            printf("  hs %2zu n %4zu   QK^T %6.1f %6.1f %6.1f   PV %6.1f %6.1f "
                   "%6.1f\n",
                   hs, n, gflops(&qk, &sup, NULL), gflops(&qk, &packed, NULL),
                   gflops(&qk, NULL, g), gflops(&pv, &sup, NULL),
                   gflops(&pv, &packed, NULL), gflops(&pv, NULL, g));
        }
    for (int l = 0; l < NW; l++)
        free(W[l]);
    free(A);
    free(C);
    bert__gemm_ctx_free(g);
    return 0;
}
