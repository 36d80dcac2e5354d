/*
 * libbert/gemm_lowp.h - the reduced-precision (int8, bf16) side of the
 * weight products, used by gemm.c (see gemm_lowp.c).
 */
#ifndef LIBBERT_GEMM_LOWP_H
#define LIBBERT_GEMM_LOWP_H

#include <stddef.h>

#include "libbert/gemm.h"

/* 32-bit groups per panel column of a k-deep matrix in precision p. */
size_t bert__lp_groups(size_t k, bert_precision p);
/* Bytes of the dot panels (and, for int8, scales and sums) of (n,k). */
size_t bert__lp_size(size_t n, size_t k, bert_precision p);
/* Packs W->w in W->prec (INT8 or BF16) into W->panels.  BERT_OK or
 * BERT_ENOMEM. */
int bert__lp_pack(bert_wmat *W, int n_threads);
/* Rows [0,m) of Y_w := X W_w^T (added to Y_w when acc), columns
 * [c0[w],c1[w]) (c0 a multiple of BERT_PANEL), for nw matrices packed in
 * the same precision (INT8 or BF16) with the same k: the activations are
 * quantized once for all of them.  tier's micro-kernels (AVX512 or AVX2,
 * which must run that precision here); cpu: the CPU's features
 * (bert__cpu_features, read when the context was made), which choose
 * between the avx2 tier's VNNI and widening int8 kernels.  buf: scratch
 * of `bytes` bytes, 64-byte aligned.  0, or -1 when buf cannot hold one block of rows (k
 * absurdly large): nothing was written. */
int bert__lp_part(bert_kernels tier, unsigned cpu, const float *X,
                  size_t ldx, size_t nw,
                  const bert_wmat *const *W, const size_t *c0,
                  const size_t *c1, int acc, float *const *Y, size_t ldy,
                  size_t m, void *buf, size_t bytes);

#endif
