/* gemm.c - the BLIS wrapper: strided sgemm with a per-session rntm_t and
 * BLIS context.  With gemm_avx512.c, the only files of libbert that include
 * <blis.h>; never touches BLIS's global thread setting or configuration.
 *
 * The context is a private copy of BLIS's default one.  Where BLIS runs its
 * AVX2 kernels on an AVX-512 CPU, the copy's sgemm micro-kernel is libbert's
 * AVX-512 kernel (gemm_avx512.h says why and when; products with a
 * dimension below 40 keep BLIS's own small-matrix kernels).  In BLIS's zen3
 * context only the small-matrix thresholds change (tune_zen3). */
#include "libbert/gemm.h"

#include <blis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/gemm_avx512.h"

struct bert_gemm_ctx {
    rntm_t rntm;
    int n_threads;
    char kernels[32]; /* "avx512" or "blis-<configuration>" */
    cntx_t cntx;
};

/* BLIS's zen3 context sends a product to its small-matrix ("sup") kernels
 * when m < 512, n < 200 or k < 240.  For libbert's operands (weights read
 * transposed, k-contiguous) those are dot-product kernels, and on a Zen 4
 * core they lose to the packed path from 16 rows: X(128,768) W^T runs at 77
 * GFLOP/s against 95 packed, X(128,3072) W^T (the feed-forward output) at
 * 37 against 94; so a BERT-base 1 x 128 forward spent a third of its time
 * in products that take 15 ms packed.  Measured crossovers (EPYC Zen 4 VM,
 * 1 thread, cold weights; docs/performance.md): dense products from 16
 * rows, Q K^T from 64-128 keys; P V (n = head size) stays faster on the
 * small-matrix kernels up to 512 keys.  Hence m < 16, n < 65 or k < 32. */
static void tune_zen3(cntx_t *cx)
{
    if (bli_arch_query_id() != BLIS_ARCH_ZEN3)
        return;
    bli_blksz_set_def(16, BLIS_FLOAT, &cx->l3_sup_thresh[BLIS_MT]);
    bli_blksz_set_def(65, BLIS_FLOAT, &cx->l3_sup_thresh[BLIS_NT]);
    bli_blksz_set_def(32, BLIS_FLOAT, &cx->l3_sup_thresh[BLIS_KT]);
}

bert_gemm_ctx *bert__gemm_ctx_create_with(int n_threads,
                                          bert_gemm_kernels kernels)
{
    bert_gemm_ctx *g = malloc(sizeof *g);
    if (!g)
        return NULL;
    rntm_t init = BLIS_RNTM_INITIALIZER;
    g->rntm = init;
    bert__gemm_ctx_set_threads(g, n_threads);
    int want = kernels == BERT_GEMM_AVX512 ||
               (kernels == BERT_GEMM_AUTO && bert__avx512_kernel_preferred());
    if (want && bert__blis_cntx_avx512(&g->cntx))
        strcpy(g->kernels, "avx512");
    else {
        memcpy(&g->cntx, bli_gks_query_cntx(), sizeof g->cntx);
        tune_zen3(&g->cntx);
        snprintf(g->kernels, sizeof g->kernels, "blis-%s",
                 bli_arch_string(bli_arch_query_id()));
    }
    return g;
}

bert_gemm_ctx *bert__gemm_ctx_create(int n_threads)
{
    return bert__gemm_ctx_create_with(n_threads, BERT_GEMM_AUTO);
}

const char *bert__gemm_ctx_kernels(const bert_gemm_ctx *g)
{
    return g->kernels;
}

void bert__gemm_ctx_set_threads(bert_gemm_ctx *g, int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    g->n_threads = n_threads;
    bli_rntm_set_num_threads((dim_t)n_threads, &g->rntm);
}

int bert__gemm_ctx_threads(const bert_gemm_ctx *g)
{
    return g ? g->n_threads : 1;
}

void bert__gemm_ctx_free(bert_gemm_ctx *g)
{
    free(g);
}

void bert__sgemm(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                 float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                 const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                 float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0)
        return;
    /* BLIS 0.9.0's typed API takes non-const pointers; it only reads A, B,
     * alpha and beta.  BLIS copies the rntm_t before using it, so a const
     * session context is never modified. */
    rntm_t rntm;
    cntx_t *cntx = NULL;
    if (g) {
        rntm = g->rntm;
        /* BLIS only reads the context. */
        cntx = (cntx_t *)&g->cntx;
    } else {
        rntm_t init = BLIS_RNTM_INITIALIZER;
        rntm = init;
        bli_rntm_set_num_threads(1, &rntm);
    }
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (float *)A, (inc_t)rsa, (inc_t)csa,
                 (float *)B, (inc_t)rsb, (inc_t)csb, &beta, C, (inc_t)rsc,
                 (inc_t)csc, cntx, &rntm);
}

void bert__sgemm1(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                  float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                  float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0)
        return;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (float *)A, (inc_t)rsa, (inc_t)csa,
                 (float *)B, (inc_t)rsb, (inc_t)csb, &beta, C, (inc_t)rsc,
                 (inc_t)csc, g ? (cntx_t *)&g->cntx : NULL, &rntm);
}
