/*
 * libbert/gemm_kernels.h - libbert's own sgemm micro-kernels.
 *
 * A micro-kernel computes one MR x NR tile of C = A B from a packed A
 * micro-panel (column by column: a[p*MR + i]) and a B micro-panel (row by
 * row: b[p*ldb + j], j < NR):
 *
 *     accumulate == 0:  C := alpha * A B
 *     accumulate != 0:  C := C + alpha * A B
 *
 * C is row-major with row stride ldc (edge tiles and other C layouts go
 * through a local tile in gemm.c).  Vectors run along C's rows (the output
 * channels of a Linear), so a tile is stored with plain vector stores and B
 * needs NR-wide panels: libbert packs every weight matrix once into
 * 48-column panels (BERT_PANEL), which the AVX-512 kernel reads whole and
 * the AVX2 kernel as three 16-column thirds.  8 rows by 48 columns rather
 * than BLIS's usual 12 x 32 shape: BERT's row counts are multiples of 8
 * more often than of 12 (no wasted tile rows at 128 or 512 tokens), and a
 * step loads 3 B vectors and 8 scalars for 24 FMAs instead of 2 and 12.
 *
 * Each kernel is compiled for its instruction set with a target attribute,
 * so the library builds with the distribution's default flags and chooses
 * at run time from the CPU's features (cpu.h).
 */
#ifndef LIBBERT_GEMM_KERNELS_H
#define LIBBERT_GEMM_KERNELS_H

#include <stddef.h>

/* Width of the packed B panels (weights), in floats. */
#define BERT_PANEL 48

typedef void (*bert_ukr_fn)(size_t k, const float *a, const float *b,
                            size_t ldb, float *c, size_t ldc, float alpha,
                            int accumulate);

#if defined(__x86_64__) && defined(__GNUC__)
#define BERT_HAVE_X86_KERNELS 1
/* 8 x 48: 24 zmm accumulators, three B vectors, one broadcast. */
enum { BERT_AVX512_MR = 8, BERT_AVX512_NR = 48 };
void bert__ukr_avx512(size_t k, const float *a, const float *b, size_t ldb,
                      float *c, size_t ldc, float alpha, int accumulate);
/* dst[p*ld + i] = src[i*ss + p] for i < 8, p < kc (needs AVX2): packs
 * 8-row A panels (ld 8) and transposed B panels (ld BERT_PANEL). */
void bert__transpose8(float *restrict dst, size_t ld, const float *src,
                      ptrdiff_t ss, size_t kc);
/* 6 x 16: 12 ymm accumulators, two B vectors, one broadcast. */
enum { BERT_AVX2_MR = 6, BERT_AVX2_NR = 16 };
void bert__ukr_avx2(size_t k, const float *a, const float *b, size_t ldb,
                    float *c, size_t ldc, float alpha, int accumulate);
#else
#define BERT_HAVE_X86_KERNELS 0
#endif

#endif
