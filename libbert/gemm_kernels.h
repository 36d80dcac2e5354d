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
#include <stdint.h>

#include "libbert/gemm.h" /* BERT_PANEL, the packed B panels' width */

/* What a kernel brings in, while it runs, of the B micro-panel laid out
 * after its own (b + k*ldb: the next panel of a packed weight matrix):
 * rows [lo, hi) into L2, one row a step from the first, or with l1 all of
 * it into L1 (the AVX-512 kernels then ignore lo and hi).  The AVX2
 * kernel reads a third of a panel, and its next tile reads the next third:
 * for it gemm.c turns l1 into BERT_PF_L1_THIRD (bring the following third
 * of this panel into L1) or BERT_PF_L1_PANEL (this was the last third:
 * the next panel's first one), besides lo and hi.  A kernel may ignore
 * it: it only moves data earlier. */
typedef struct bert_pf {
    unsigned lo, hi, l1;
} bert_pf;
enum { BERT_PF_L1_THIRD = 2, BERT_PF_L1_PANEL = 3 };

/* The plan for tile t of the n tiles (in order) that run over one B
 * micro-panel of k rows.  The L2 rows are spread over the tiles, [0,k) in
 * n consecutive ranges: the whole next panel's misses in the first tile
 * slowed it.  The last tile (of several) also brings the whole next panel
 * into L1, where the next panel's first tile would otherwise miss on every
 * row.  (Against every tile fetching the whole next panel into L2,
 * BERT-base and MiniLM on Zen 5: 2-6% less time for the encoder;
 * BENCHMARKS.md, thirteenth session.) */
static inline bert_pf bert__pf_plan(size_t t, size_t n, size_t k)
{
    return (bert_pf){(unsigned)(t * k / n), (unsigned)((t + 1) * k / n),
                     n > 1 && t == n - 1};
}

/* The plans of tiles 0..n-1 into plan[0..n): made once per block of rows,
 * not per kernel call, whose two divisions were measurable. */
static inline void bert__pf_plans(bert_pf *plan, size_t n, size_t k)
{
    for (size_t t = 0; t < n; t++)
        plan[t] = bert__pf_plan(t, n, k);
}

typedef void (*bert_ukr_fn)(size_t k, const float *a, const float *b,
                            size_t ldb, float *c, size_t ldc, float alpha,
                            int accumulate, const bert_pf *pf);

#if defined(__x86_64__) && defined(__GNUC__)
#define BERT_HAVE_X86_KERNELS 1
/* 8 x 48: 24 zmm accumulators, three B vectors, one broadcast. */
enum { BERT_AVX512_MR = 8, BERT_AVX512_NR = 48 };
void bert__ukr_avx512(size_t k, const float *a, const float *b, size_t ldb,
                      float *c, size_t ldc, float alpha, int accumulate,
                      const bert_pf *pf);
/* The same tile for the first nr (1..BERT_AVX512_EDGE_NR) columns only:
 * C is read and written in those columns alone (masked), B still read 48
 * wide (panels are zero-padded to it).  Wider edges need all three
 * vectors: the loops run the full kernel into a tile for them. */
enum { BERT_AVX512_EDGE_NR = 32 };
void bert__ukr_avx512_edge(size_t k, const float *a, size_t lda,
                           const float *b, size_t ldb, float *c, size_t ldc,
                           float alpha, int accumulate, size_t nr);
/* The full tile with A read in place (row i at a + i*lda, row-major), as
 * bert__ukr_avx2_rows; the edge kernel above does the same when lda is
 * not 0 (0: A packed).  Exactly the same sums as packed. */
void bert__ukr_avx512_rows(size_t k, const float *a, size_t lda,
                           const float *b, size_t ldb, float *c, size_t ldc,
                           float alpha, int accumulate, const bert_pf *pf);
/* dst[p*ld + i] = src[i*ss + p] for i < 8, p < kc (needs AVX2): packs
 * 8-row A panels (ld 8) and transposed B panels (ld BERT_PANEL). */
void bert__transpose8(float *restrict dst, size_t ld, const float *src,
                      ptrdiff_t ss, size_t kc);
/* dst[p*6 + i] = src[i*ss + p] for i < 6, p < kc (needs AVX2): packs the
 * AVX2 kernel's 6-row A panels. */
void bert__transpose6(float *restrict dst, const float *src, ptrdiff_t ss,
                      size_t kc);
/* 6 x 16: 12 ymm accumulators, two B vectors, one broadcast. */
enum { BERT_AVX2_MR = 6, BERT_AVX2_NR = 16 };
void bert__ukr_avx2(size_t k, const float *a, const float *b, size_t ldb,
                    float *c, size_t ldc, float alpha, int accumulate,
                    const bert_pf *pf);
/* The same tile with A read in place: row i of the tile is a + i*lda
 * (row-major, k values), so a product whose A is used by few column tiles
 * needs no packing pass over it.  Exactly the same sums as packed. */
void bert__ukr_avx2_rows(size_t k, const float *a, size_t lda, const float *b,
                         size_t ldb, float *c, size_t ldc, float alpha,
                         int accumulate, const bert_pf *pf);
/* The tile's first mr rows only (1 <= mr < 6; 6 runs the full kernel),
 * B a third of a packed panel (ldb BERT_PANEL): the short tiles at the end
 * of a block of rows (gemm.c), with the same sums as the full kernel's
 * rows. */
void bert__ukr_avx2_short(size_t mr, size_t k, const float *a, const float *b,
                          float *c, size_t ldc, float alpha, int accumulate,
                          const bert_pf *pf);
typedef void (*bert_ukr_short_fn)(size_t mr, size_t k, const float *a,
                                  const float *b, float *c, size_t ldc,
                                  float alpha, int accumulate,
                                  const bert_pf *pf);
typedef void (*bert_ukr_rows_fn)(size_t k, const float *a, size_t lda,
                                 const float *b, size_t ldb, float *c,
                                 size_t ldc, float alpha, int accumulate,
                                 const bert_pf *pf);

/* Reduced-precision micro-kernels over "dot panels" (gemm.h): k in kg
 * groups of 32 bits; A packed as a[g*MR + i] (group g of row i), B as
 * b[g*ldb + j] (group g of column j, ldb = BERT_PANEL).
 *
 * int8: A holds uint8 activations (row i quantized with scale rs[i] and
 * zero point rz[i]), B int8 weights (column j: scale cs[j], sum of its
 * weights csum[j]); C(i,j) := rs[i] cs[j] (acc(i,j) - rz[i] csum[j])
 * (+ C(i,j) when accumulate), acc the exact int32 sum of u8 x s8 products
 * (vpdpbusd: four products per lane, no saturation; the int32 sum cannot
 * overflow below k = 66,000).
 * bf16: A and B hold bfloat16 pairs; C := acc (+ C when accumulate), acc
 * the float32 sum of vdpbf16ps. */
void bert__ukr_i8_avx512(size_t kg, const uint32_t *a, const uint32_t *b,
                         float *c, size_t ldc, const float *rs,
                         const int32_t *rz, const float *cs,
                         const int32_t *csum, int accumulate,
                         const bert_pf *pf);
void bert__ukr_bf16_avx512(size_t kg, const uint32_t *a, const uint32_t *b,
                           float *c, size_t ldc, int accumulate,
                           const bert_pf *pf);
/* 6 x 16 with AVX-VNNI (VEX vpdpbusd on ymm); b, cs and csum point at a
 * 16-column third of a panel (ldb stays BERT_PANEL). */
void bert__ukr_i8_avx2(size_t kg, const uint32_t *a, const uint32_t *b,
                       float *c, size_t ldc, const float *rs,
                       const int32_t *rz, const float *cs,
                       const int32_t *csum, int accumulate);
/* 6 x 8 with plain AVX2, for CPUs without VNNI: exactly the int32 sums
 * and outputs of bert__ukr_i8_avx2 (vpmaddwd on values widened to int16,
 * which cannot saturate).  A's groups arrive widened: a[g*6 + i] holds
 * the four values of group g of row i as uint16 (low value first); b, cs
 * and csum point at an 8-column slice of a panel (ldb BERT_PANEL). */
enum { BERT_AVX2W_NR = 8 };
void bert__ukr_i8_avx2w(size_t kg, const uint64_t *a, const uint32_t *b,
                        float *c, size_t ldc, const float *rs,
                        const int32_t *rz, const float *cs,
                        const int32_t *csum, int accumulate);
/* Row quantization and conversion for the A side (need AVX-512 F/BW and,
 * for bf16, AVX512-BF16):
 * q[p] = clamp(round(x[p] / s) + z, 0, 255) for p < k; bf16 round to
 * nearest even into h[p]. */
void bert__quant_row_avx512(uint8_t *q, const float *x, size_t k, float inv,
                            int32_t z);
void bert__minmax_avx512(const float *x, size_t k, float *mn, float *mx);
void bert__bf16_row_avx512(uint16_t *h, const float *x, size_t k);
/* The same two for int8 with AVX2 (the avx2 tier): for finite rows, bit
 * for bit the AVX-512 pair's results. */
void bert__quant_row_avx2(uint8_t *q, const float *x, size_t k, float inv,
                          int32_t z);
void bert__minmax_avx2(const float *x, size_t k, float *mn, float *mx);
/* The int8 output stage of bert__ukr_i8_avx512 alone: rows 0-7 of the
 * int32 sums t (48 columns, row stride 48) into C as above.  c may be t
 * itself (ldc 48): each 16 lanes are read before they are written. */
void bert__i8_out_avx512(const int32_t *t, float *c, size_t ldc,
                         const float *rs, const int32_t *rz, const float *cs,
                         const int32_t *csum, int accumulate);

/* AMX (gemm_amx.c): bert__amx_begin configures the tile registers of the
 * calling thread (7 tiles of 16 x 64 bytes), bert__amx_end releases them.
 * Between the two, bert__ukr_amx writes the 16 x 48 sums of rows a
 * (row-major groups of 32 bits, lda groups apart, 16 rows) times one dot
 * panel b (ldb BERT_PANEL) over kg groups (a multiple of 16) into c (16 x
 * 48, row stride 48): int32 u8 x s8 sums (tdpbusd) when int8, else
 * float32 sums of bf16 pairs (tdpbf16ps).  AMX-TILE, AMX-BF16, AMX-INT8
 * and the OS's permission (cpu.c) are the caller's to check. */
void bert__amx_begin(void);
void bert__amx_end(void);
void bert__ukr_amx(int int8, size_t kg, const uint32_t *a, size_t lda,
                   const uint32_t *b, void *c);
#else
#define BERT_HAVE_X86_KERNELS 0
#endif

#endif
