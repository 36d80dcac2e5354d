/*
 * libbert/gemm.h - the one matrix-product layer of libbert (inference and
 * training).
 *
 * Matrices are described by a pointer and two element strides (row stride
 * rs, column stride cs), as BLIS does: a row-major (R,C) matrix has (rs,cs)
 * = (C,1); reading the same memory as its transpose uses (rs,cs) = (1,C).
 *
 * A context runs one kernel tier (bert_kernels in bert.h):
 *  - avx512, avx2: libbert's own micro-kernels (gemm_kernels.h) inside the
 *    BLIS five-loop structure written here; products whose B operand is a
 *    weight matrix packed once (bert_wmat) pack only the activations (and
 *    the avx2 tier reads them in place in products of at most 4 column
 *    tiles, such as attention's P V);
 *  - blis: bli_sgemm_ex with BLIS's own configuration, through BLIS's
 *    public API only, its small-matrix path turned off where the rntm_t
 *    API allows (gemm.c says why) (the fallback for CPUs without AVX2,
 *    and the reference the other tiers are compared with).
 * Nothing here depends on BLIS internals, so any BLIS version with the
 * typed API (0.8 and later) builds and runs every tier.
 */
#ifndef LIBBERT_GEMM_H
#define LIBBERT_GEMM_H

#include <stddef.h>

#include "libbert/bert.h"

typedef struct bert_gemm_ctx bert_gemm_ctx;

/* Width of the packed weight panels (bert_wmat below), in floats: the
 * column granularity of the products' thread splits. */
#define BERT_PANEL 48

/* A weight matrix W (n,k) in PyTorch's Linear layout, used as the B = W^T
 * operand of y = x W^T.  `panels`, when not NULL, holds W^T packed once for
 * libbert's kernels, 64-byte aligned, in the layout of W's precision:
 *  - FP32: k is cut into blocks of KC rows (192), and block b holds, for
 *    each 48-column panel j, its kc x 48 floats row by row (columns past n
 *    are zero), at panels + b*KC*np*48 + j*kc*48 with np = ceil(n/48): the
 *    order in which the loops read them;
 *  - INT8 and BF16 ("dot panels", gemm_lowp.c): k is cut into groups of G
 *    values (4 int8, 2 bf16: the 32 bits one lane of vpdpbusd / vdpbf16ps
 *    multiplies), and panel j holds its ceil(k/G) groups one after the
 *    other, each 48 columns x 32 bits; no k blocks (int8 sums stay in
 *    int32 across the whole k).  INT8 panels are followed by each output
 *    channel's scale (float) and sum of its int8 weights (int32), np*48 of
 *    each.  The same panels serve the avx512 and avx2 tiers. */
typedef struct bert_wmat {
    const float *w;
    void *panels;
    size_t n, k;
    bert_precision prec;   /* of the panels; FP32 when there are none */
} bert_wmat;

/* The tier AUTO resolves to on this CPU, from its features alone:
 * AVX512 with AVX-512 F/BW/DQ/VL, else AVX2 with AVX2+FMA, else BLIS. */
bert_kernels bert__kernels_best(void);
/* 1 when this CPU (and OS) can run tier k; otherwise 0 and, if why is not
 * NULL, the missing feature in why (n bytes). */
int bert__kernels_supported(bert_kernels k, char *why, size_t n);
/* "avx512", "avx2", "blis". */
const char *bert__kernels_name(bert_kernels k);
/* Parses a tier name ("auto", "avx512", "avx2", "blis"); -1 if unknown. */
int bert__kernels_parse(const char *s);

/* A context running products on n_threads (>= 1) threads with tier k
 * (AUTO: bert__kernels_best()).  NULL when k is not supported here (why
 * says what is missing) or out of memory (why says so). */
bert_gemm_ctx *bert__gemm_ctx_create(int n_threads, bert_kernels k, char *why,
                                     size_t why_n);
/* The resolved tier, and its name ("avx512", "avx2" or "blis-<BLIS
 * configuration>", e.g. "blis-zen3"; lives as long as g). */
bert_kernels bert__gemm_ctx_tier(const bert_gemm_ctx *g);
const char *bert__gemm_ctx_kernels(const bert_gemm_ctx *g);
/* Changes the thread count (smaller than 1 means 1); 0, or -1 when out of
 * memory (the old count is kept). */
int bert__gemm_ctx_set_threads(bert_gemm_ctx *g, int n_threads);
int bert__gemm_ctx_threads(const bert_gemm_ctx *g);
/* NULL is a no-op. */
void bert__gemm_ctx_free(bert_gemm_ctx *g);

/* C := alpha * A B + beta * C with A (m,k), B (k,n), C (m,n).  beta == 0
 * means C is only written (its old contents may be NaN).  m, n or k == 0 is
 * allowed (k == 0 scales C by beta).  A and B are only read.  Runs on g's
 * threads; g must not be NULL. */
void bert__sgemm(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                 float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                 const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                 float *C, ptrdiff_t rsc, ptrdiff_t csc);

/* The same on one thread, for products run inside the caller's own
 * parallel region: `slot` (0 <= slot < the context's thread count, the
 * caller's thread number) picks that thread's packing buffers, so
 * concurrent calls with distinct slots may share g. */
void bert__sgemm1(const bert_gemm_ctx *g, int slot, size_t m, size_t n,
                  size_t k, float alpha, const float *A, ptrdiff_t rsa,
                  ptrdiff_t csa, const float *B, ptrdiff_t rsb, ptrdiff_t csb,
                  float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc);

/* Y (m, W->n) := X (m, W->k) W^T + beta * Y for row-major X and Y (row
 * strides ldx, ldy), from W's packed panels where it has them and the tier
 * is libbert's, else as bert__sgemm.  slot < 0: on g's threads (split by
 * columns of W where rows are few); slot >= 0: one thread, as sgemm1. */
void bert__gemm_w(const bert_gemm_ctx *g, int slot, size_t m, const float *X,
                  size_t ldx, const bert_wmat *W, float beta, float *Y,
                  size_t ldy);

/* The same for nw (at most 4 share the fast path) matrices of one k and
 * precision: Y[w] := X W[w]^T + beta Y[w], all with row stride ldy.  The
 * activations are packed (int8: quantized) once for all of them, and
 * threads split their panels together, so Q, K and V cost one product's
 * overhead and, with the column split, one barrier instead of three. */
void bert__gemm_wn(const bert_gemm_ctx *g, int slot, size_t m, const float *X,
                   size_t ldx, size_t nw, const bert_wmat *const *W,
                   float beta, float *const *Y, size_t ldy);

/* One thread's share of a tensor-parallel product (encoder.c): for each of
 * the nw (at most 4) matrices, Y[w][:, c0:c1] := X[:, k0:k1] W[w][c0:c1,
 * k0:k1]^T + beta Y[w][:, c0:c1] on rows [0,m), X and Y given at their
 * column 0.  Every W[w] must pass bert__gemm_w_part_ok and have the same k;
 * c0 <= c1 <= n, k0 <= k1 <= k, beta 0 or 1.  A c0 inside a 48-column panel
 * costs that panel's whole tile (through a scratch tile).
 * Products over disjoint depths sum to the whole one, up to rounding.
 * slot: the calling thread's buffers, as in bert__sgemm1. */
int bert__gemm_w_part_ok(const bert_gemm_ctx *g, const bert_wmat *W);
void bert__gemm_w_part(const bert_gemm_ctx *g, int slot, size_t m,
                       const float *X, size_t ldx, size_t nw,
                       const bert_wmat *const *W, size_t k0, size_t k1,
                       size_t c0, size_t c1, float beta, float *const *Y,
                       size_t ldy);

/* Packs W->w into W->panels (allocated here) in W->prec's layout on
 * n_threads threads (INT8: symmetric per output channel, scale max|w|/127;
 * BF16: rounded to nearest even).  BERT_OK or BERT_ENOMEM. */
int bert__wmat_pack(bert_wmat *W, int n_threads);
/* Memory for the products' large operands: packed weights, a session's
 * activations, the trainer's tensors.  64-byte aligned; from 2 MB on, on
 * a 2 MB boundary and marked for transparent huge pages (madvise; THP's
 * default mode on Debian is "madvise").  Released with free(); NULL when
 * out of memory. */
void *bert__big_alloc(size_t bytes);
/* Bytes of the packed form of an (n,k) matrix in precision p, and a number
 * that changes whenever that layout does (for files that store panels). */
size_t bert__wmat_size(size_t n, size_t k, bert_precision p);
unsigned bert__wmat_layout(bert_precision p);

/* 1 when tier k (AUTO: the tier bert__precision_tier picks) runs products
 * in precision p on this CPU; otherwise 0 and the missing feature in why.
 * FP32: every tier; INT8: avx512 with AVX512-VNNI, avx2 with AVX-VNNI;
 * BF16: avx512 with AVX512-BF16. */
int bert__precision_supported(bert_precision p, bert_kernels k, char *why,
                              size_t n);
/* The tier AUTO means for precision p: the best tier that runs it (FP32:
 * bert__kernels_best()); BERT_KERNELS_AUTO when none does. */
bert_kernels bert__precision_tier(bert_precision p);
/* "fp32", "bf16", "int8"; parse: -1 if unknown. */
const char *bert__precision_name(bert_precision p);
int bert__precision_parse(const char *s);
/* Bytes of W's panels (0 when not packed). */
size_t bert__wmat_packed_bytes(const bert_wmat *W);
void bert__wmat_free(bert_wmat *W);

#endif
