/*
 * libbert/gemm_avx512.h - a BLIS context whose sgemm runs libbert's own
 * AVX-512 micro-kernel.
 *
 * Why: Debian's BLIS 0.9.0 picks its AVX2 ("haswell") configuration on
 * AVX-512 CPUs whose brand string does not reveal the number of FMA units
 * (every VM), so sgemm reaches about half of the fp32 peak.  BLIS's own
 * AVX-512 ("skx") kernels are compiled into libblis.so but not exported
 * (bli_gks_lookup_nat_cntx and bli_cntx_init_skx are hidden symbols); the
 * only switch is the process-wide BLIS_ARCH_TYPE environment variable, read
 * once at BLIS's first call, which a library must not touch.
 *
 * What: a private copy of BLIS's default context (the cntx argument of
 * bli_sgemm_ex) in which the single-precision "native" micro-kernel is a
 * 32x12 AVX-512 FMA kernel with matching cache block sizes.  Everything
 * else stays BLIS's: packing, the five loops, threading through the rntm_t,
 * and the "sup" small-matrix path, which keeps the AVX2 sup kernels for
 * products with a dimension below BERT_AVX512_SUP_THRESH (they are 2x faster
 * than a packed AVX-512 product at ~16 rows).  No global state: the context
 * lives wherever the caller puts it.
 *
 * Files that include this header also include <blis.h>.
 */
#ifndef LIBBERT_GEMM_AVX512_H
#define LIBBERT_GEMM_AVX512_H

#include <blis.h>

/* Products with m, n or k below this go to BLIS's small-matrix kernels
 * (measured crossover: between 32 and 48 rows for BERT shapes). */
#define BERT_AVX512_SUP_THRESH 40

/* 1 when the CPU and OS support AVX-512F, else 0. */
int bert__cpu_has_avx512(void);

/* Copies BLIS's default context into *cx and, when the CPU supports
 * AVX-512F, installs the AVX-512 sgemm micro-kernel and its block sizes.
 * Returns 1 when installed, 0 when *cx is the plain default copy.  Call it
 * once (per model or session) and pass cx to bli_sgemm_ex; the context is
 * then only read, so several threads may share it. */
int bert__blis_cntx_avx512(cntx_t *cx);

#endif
