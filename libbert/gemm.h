/*
 * libbert/gemm.h - the one matrix-product entry point of libbert.
 *
 * gemm.c is the only file that includes <blis.h>.  Matrices are described by
 * a pointer and two element strides (row stride rs, column stride cs), as
 * BLIS does: a row-major (R,C) matrix has (rs,cs) = (C,1); reading the same
 * memory as its transpose uses (rs,cs) = (1,C).  So PyTorch Linear weights
 * W (OC,C) are used as W^T with (1,C) and no copy.
 */
#ifndef LIBBERT_GEMM_H
#define LIBBERT_GEMM_H

#include <stddef.h>

/* Per-session BLIS runtime (thread count).  Opaque; one per session, never
 * shared between concurrently running threads. */
typedef struct bert_gemm_ctx bert_gemm_ctx;

/* Which sgemm micro-kernel a context runs. */
typedef enum bert_gemm_kernels {
    BERT_GEMM_AUTO = 0,     /* the best for this CPU (bert__gemm_ctx_kernels
                               says which was chosen) */
    BERT_GEMM_BLIS,         /* BLIS's default context, as BLIS configured it */
    BERT_GEMM_AVX512        /* libbert's AVX-512 kernel (gemm_avx512.h);
                               BLIS's default where the CPU lacks AVX-512F */
} bert_gemm_kernels;

/* Creates a context running GEMMs on n_threads (>= 1) threads with the
 * BERT_GEMM_AUTO kernels.  NULL when out of memory. */
bert_gemm_ctx *bert__gemm_ctx_create(int n_threads);
/* The same with a chosen kernel (tests and benchmarks compare them). */
bert_gemm_ctx *bert__gemm_ctx_create_with(int n_threads,
                                          bert_gemm_kernels kernels);
/* "avx512" or "blis-<BLIS configuration>" (e.g. "blis-zen3"); lives as
 * long as g. */
const char *bert__gemm_ctx_kernels(const bert_gemm_ctx *g);
/* Changes the thread count (>= 1; smaller values mean 1). */
void bert__gemm_ctx_set_threads(bert_gemm_ctx *g, int n_threads);
int bert__gemm_ctx_threads(const bert_gemm_ctx *g);
/* NULL is a no-op. */
void bert__gemm_ctx_free(bert_gemm_ctx *g);

/* C := alpha * A B + beta * C with A (m,k), B (k,n), C (m,n), each given by
 * pointer and (row stride, column stride) in elements.  beta == 0 means C is
 * only written (its old contents may be NaN).  m, n or k == 0 is allowed
 * (k == 0 scales C by beta).  A and B are read only; g NULL runs single
 * threaded.  Never fails. */
void bert__sgemm(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                 float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                 const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                 float *C, ptrdiff_t rsc, ptrdiff_t csc);

/* The same on one thread whatever g's thread count (g still gives the
 * kernels): for products run inside the caller's own parallel region. */
void bert__sgemm1(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                  float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                  const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                  float *C, ptrdiff_t rsc, ptrdiff_t csc);

#endif
