/* gemm_lowp.c - the reduced-precision weight products (int8, bf16): their
 * panels, the quantization of both sides, and the loops around the
 * micro-kernels of gemm_kernels.h.
 *
 * One more panel layout of the packed-weight layer, not a second engine:
 * the weights are packed once at load (bert__wmat_pack), gemm.c's bert__gemm_w
 * splits the work among threads exactly as for float32, and each thread
 * calls bert__lp_part for its rows and whole 48-column panels.
 *
 * Layout ("dot panels", gemm.h): k in groups of 32 bits (4 int8 or 2 bf16,
 * what one lane of vpdpbusd / vdpbf16ps multiplies and sums), each panel
 * ceil(k/G) groups of 48 columns.  There are no k blocks: int8 sums must
 * stay in int32 over the whole k before the scales apply, and a panel of
 * BERT-base's widest product (k = 3072) is 147 KB of int8, streamed from
 * L2 with the next panel prefetched.
 *
 * Quantization (int8), the choices of ONNX Runtime's dynamic quantization
 * with finer scales: weights symmetric per output channel (scale
 * max|w|/127, values -127..127, so their sums need no zero point);
 * activations asymmetric per row (scale (max - min)/255 with 0 inside the
 * range, zero point round(-min/scale)), quantized as each product packs
 * them.  vpdpbusd multiplies uint8 by int8 exactly and adds four products
 * per lane into int32 without saturating (the pre-VNNI vpmaddubsw
 * saturates pairs at int16: onnxruntime#6004).  CPUs with AVX2 but no
 * VNNI get the same sums from vpmaddwd on values widened to int16
 * (bert__ukr_i8_avx2w), for which A is packed widened.  The output stage
 * subtracts zero point x column sum and applies both scales. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/cpu.h"
#include "libbert/gemm.h"
#include "libbert/gemm_kernels.h"
#include "libbert/gemm_lowp.h"

/* Rows of activations quantized at a time (an MC block: 96 x 768 int8 is
 * 72 KB, in L2 with the panel being read); half of that for long runs of
 * wide outputs.  Measured (bench/gemm_shapes, CPU time, quiet Xeon VM):
 * 768 -> 3072 at 2048-4096 rows ran at 486-511 GOP/s with 96-row blocks
 * and 577-584 with 48, while every other BERT-base shape and row count was
 * 2-5% slower with 48.  Such outputs (4096 x 3072 floats, 50 MB) are
 * written to memory, a block's rows as that many concurrent streams;
 * fewer rows per block is the likely reason, not verified further. */
enum { LP_MC = 96, LP_MC_WIDE = 48, LP_WIDE_COLS = 2048, LP_WIDE_ROWS = 1024 };

static size_t group_of(bert_precision p)
{
    return p == BERT_PRECISION_INT8 ? 4 : 2;
}

size_t bert__lp_groups(size_t k, bert_precision p)
{
    return (k + group_of(p) - 1) / group_of(p);
}

size_t bert__lp_size(size_t n, size_t k, bert_precision p)
{
    size_t np = (n + BERT_PANEL - 1) / BERT_PANEL;
    size_t bytes = np * bert__lp_groups(k, p) * BERT_PANEL * 4;
    if (p == BERT_PRECISION_INT8)
        bytes += np * BERT_PANEL * (sizeof(float) + sizeof(int32_t));
    return bytes;
}

/* ---- float -> bf16 and int8 ---------------------------------------------- */

/* Round to nearest even, as vcvtneps2bf16 does for normal numbers (it
 * flushes denormal inputs to zero; weights that small contribute nothing
 * at bf16 precision either way).  NaN stays NaN. */
static uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* Round to nearest even for |v| < 2^22 (in the default rounding mode, as
 * vcvtps2dq does): adding and removing 1.5 * 2^23 leaves no fraction bits.
 * Inline, where nearbyintf is a library call per weight (x86-64 has no
 * SSE4.1 roundss in its baseline). */
static float rne(float v)
{
    volatile float big = 12582912.0f; /* keeps the compiler from folding */
    return fabsf(v) < 4194304.0f ? (v + big) - big : v;
}

static int8_t q8_of(float w, float inv)
{
    float v = rne(w * inv);
    if (v != v)
        return 0;
    return (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
}

/* Panel jp of W packed in W->prec (gemm.h's layout) into p. */
static void pack_panel(unsigned char *p, const bert_wmat *W, size_t jp)
{
    size_t n = W->n, k = W->k, kg = bert__lp_groups(k, W->prec);
    size_t np = (n + BERT_PANEL - 1) / BERT_PANEL;
    uint32_t *panel = (uint32_t *)p + jp * kg * BERT_PANEL;
    memset(panel, 0, kg * BERT_PANEL * 4);
    float *scale = NULL;
    int32_t *sum = NULL;
    if (W->prec == BERT_PRECISION_INT8) {
        scale = (float *)(p + np * kg * BERT_PANEL * 4);
        sum = (int32_t *)(scale + np * BERT_PANEL);
    }
    for (size_t c = 0; c < BERT_PANEL; c++) {
        size_t j = jp * BERT_PANEL + c;
        if (W->prec == BERT_PRECISION_INT8) {
            scale[j] = 0.0f;
            sum[j] = 0;
        }
        if (j >= n)
            continue;
        const float *w = W->w + j * k;
        /* Value q of column c is byte or half q % G of group q / G, in
         * memory order (little-endian lanes, as the instructions read). */
        unsigned char *col = (unsigned char *)(panel + c);
        if (W->prec == BERT_PRECISION_BF16) {
            for (size_t q = 0; q < k; q++) {
                uint16_t h = bf16_of(w[q]);
                memcpy(col + (q / 2) * BERT_PANEL * 4 + (q % 2) * 2, &h, 2);
            }
            continue;
        }
        float mx = 0.0f;
        for (size_t q = 0; q < k; q++)
            mx = fabsf(w[q]) > mx ? fabsf(w[q]) : mx;
        float inv = mx > 0.0f && mx <= 3e38f ? 127.0f / mx : 0.0f;
        int32_t s = 0;
        for (size_t q = 0; q < k; q++) {
            int8_t v = q8_of(w[q], inv);
            memcpy(col + (q / 4) * BERT_PANEL * 4 + q % 4, &v, 1);
            s += v;
        }
        scale[j] = mx / 127.0f;
        sum[j] = s;
    }
}

int bert__lp_pack(bert_wmat *W, int n_threads)
{
    size_t np = (W->n + BERT_PANEL - 1) / BERT_PANEL;
    size_t bytes = bert__lp_size(W->n, W->k, W->prec);
    unsigned char *p = NULL;
    if (np == 0 || W->k == 0)
        return BERT_OK;
    if (!(p = bert__big_alloc(bytes)))
        return BERT_ENOMEM;
    (void)n_threads;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(n_threads) \
    if (n_threads > 1)
#endif
    for (size_t jp = 0; jp < np; jp++)
        pack_panel(p, W, jp);
    W->panels = p;
    return BERT_OK;
}

/* ---- the activation side ------------------------------------------------- */

typedef struct lp_tier {
    int avx512;    /* else avx2 (int8 only) */
    int amx;       /* AMX tiles (the amx tier, k in whole tiles) */
    int wide;      /* avx2 without VNNI: A's groups as four uint16 */
    size_t mr, nr; /* nr divides BERT_PANEL */
} lp_tier;

/* The activation side runs on the x86 kernels only (bert__lp_part returns
 * -1 without them): min/max and quantization are theirs. */
static void minmax(const lp_tier *t, const float *x, size_t k, float *mn,
                   float *mx)
{
#if BERT_HAVE_X86_KERNELS
    if (t->avx512)
        bert__minmax_avx512(x, k, mn, mx);
    else
        bert__minmax_avx2(x, k, mn, mx);
#else
    (void)t, (void)x, (void)k;
    *mn = *mx = 0.0f;
#endif
}

/* Row x (k) as uint8 into q (k bytes); its scale and zero point. */
static void quant_row(const lp_tier *t, uint8_t *q, const float *x, size_t k,
                      float *scale, int32_t *zero)
{
    float mn, mx;
    minmax(t, x, k, &mn, &mx);
    float s = (mx - mn) / 255.0f;
    if (!(s > 0.0f))
        s = 1.0f; /* all zeros (or NaN, which the scale then carries) */
    float inv = 1.0f / s, zf = nearbyintf(-mn * inv);
    int32_t z = zf >= 0.0f && zf <= 255.0f ? (int32_t)zf : 0;
    *scale = isfinite(s) ? s : NAN;
    *zero = z;
#if BERT_HAVE_X86_KERNELS
    if (t->avx512)
        bert__quant_row_avx512(q, x, k, inv, z);
    else
        bert__quant_row_avx2(q, x, k, inv, z);
#else
    (void)t, (void)q;
#endif
}

static void bf16_row(const lp_tier *t, uint16_t *h, const float *x, size_t k)
{
#if BERT_HAVE_X86_KERNELS
    if (t->avx512) {
        bert__bf16_row_avx512(h, x, k);
        return;
    }
#endif
    (void)t;
    for (size_t p = 0; p < k; p++)
        h[p] = bf16_of(x[p]);
}

/* Row i (< mc) of X as groups into row, or zeros past mc. */
static void pack_row(const lp_tier *t, bert_precision prec, uint32_t *row,
                     float *rs, int32_t *rz, const float *X, size_t ldx,
                     size_t i, size_t mc, size_t k, size_t kg)
{
    row[kg - 1] = 0; /* the padding of a last partial group */
    if (i >= mc) {
        rs[i] = 0.0f;
        rz[i] = 0;
        memset(row, 0, kg * 4);
    } else if (prec == BERT_PRECISION_INT8) {
        quant_row(t, (uint8_t *)row, X + i * ldx, k, &rs[i], &rz[i]);
    } else {
        bf16_row(t, (uint16_t *)row, X + i * ldx, k);
    }
}

/* Group u (four uint8) as four uint16, low byte first (wide tiles). */
static uint64_t widen(uint32_t u)
{
    return (uint64_t)(u & 0xff) | (uint64_t)(u >> 8 & 0xff) << 16 |
           (uint64_t)(u >> 16 & 0xff) << 32 | (uint64_t)(u >> 24) << 48;
}

/* Rows [0,mc) of X into MR-row panels of groups: panel r holds
 * a[g*MR + i] = group g of row r*MR + i (rows past mc zero; t->wide:
 * uint64 groups, widened), with each row's scale and zero point (int8).
 * rows: scratch of MR rows of kg*4 bytes each.  AMX reads rows as they
 * are: row i at dst + i*kg. */
static void pack_a(const lp_tier *t, bert_precision prec, uint32_t *dst,
                   float *rs, int32_t *rz, const float *X, size_t ldx,
                   size_t mc, size_t k, size_t kg, uint32_t *rows)
{
    size_t MR = t->mr;
    if (t->amx) {
        for (size_t i = 0; i < (mc + MR - 1) / MR * MR; i++)
            pack_row(t, prec, dst + i * kg, rs, rz, X, ldx, i, mc, k, kg);
        return;
    }
    size_t step = kg * MR * (t->wide ? 2 : 1); /* a panel, in uint32 */
    for (size_t r = 0; r < mc; r += MR, dst += step) {
        for (size_t i = 0; i < MR; i++)
            pack_row(t, prec, rows + i * kg, rs, rz, X, ldx, r + i, mc, k,
                     kg);
#if BERT_HAVE_X86_KERNELS
        if (MR == 8) {
            /* 32-bit groups moved as floats: the transposes only shuffle
             * bits, they never compute with them. */
            bert__transpose8((float *)dst, 8, (const float *)rows,
                             (ptrdiff_t)kg, kg);
            continue;
        }
#endif
        for (size_t g = 0; g < kg; g++)
            for (size_t i = 0; i < MR; i++) {
                uint32_t u = rows[i * kg + g];
                if (t->wide)
                    ((uint64_t *)dst)[g * MR + i] = widen(u);
                else
                    dst[g * MR + i] = u;
            }
    }
}

/* ---- the loops ----------------------------------------------------------- */

static void ukr(const lp_tier *t, bert_precision prec, size_t kg,
                const uint32_t *a, const uint32_t *b, float *c, size_t ldc,
                const float *rs, const int32_t *rz, const float *cs,
                const int32_t *csum, int acc, const bert_pf *pf)
{
#if BERT_HAVE_X86_KERNELS
    if (t->amx) {
        /* 16 x 48 sums, then the output stage (in place for int8). */
        float s[16 * BERT_PANEL] __attribute__((aligned(64)));
        bert__ukr_amx(prec == BERT_PRECISION_INT8, kg, a, kg, b, s);
        if (prec == BERT_PRECISION_INT8) {
            bert__i8_out_avx512((const int32_t *)s, c, ldc, rs, rz, cs, csum,
                                acc);
            bert__i8_out_avx512((const int32_t *)s + 8 * BERT_PANEL,
                                c + 8 * ldc, ldc, rs + 8, rz + 8, cs, csum,
                                acc);
            return;
        }
        for (size_t i = 0; i < 16; i++)
            for (size_t j = 0; j < BERT_PANEL; j++)
                c[i * ldc + j] = acc ? c[i * ldc + j] + s[i * BERT_PANEL + j]
                                     : s[i * BERT_PANEL + j];
        return;
    }
    if (prec == BERT_PRECISION_BF16)
        bert__ukr_bf16_avx512(kg, a, b, c, ldc, acc, pf);
    else if (t->avx512)
        bert__ukr_i8_avx512(kg, a, b, c, ldc, rs, rz, cs, csum, acc, pf);
    else if (t->wide)
        bert__ukr_i8_avx2w(kg, (const uint64_t *)a, b, c, ldc, rs, rz, cs,
                           csum, acc);
    else
        bert__ukr_i8_avx2(kg, a, b, c, ldc, rs, rz, cs, csum, acc);
#else
    (void)t, (void)prec, (void)kg, (void)a, (void)b, (void)c, (void)ldc;
    (void)rs, (void)rz, (void)cs, (void)csum, (void)acc, (void)pf;
#endif
}

int bert__lp_part(bert_kernels tier, unsigned cpu, const float *X,
                  size_t ldx, size_t nw,
                  const bert_wmat *const *W, const size_t *c0,
                  const size_t *c1, int acc, float *const *Y, size_t ldy,
                  size_t m, void *buf, size_t bytes)
{
    bert_precision prec = W[0]->prec;
    size_t k = W[0]->k, kg = bert__lp_groups(k, prec);
    /* The amx tier runs k in whole tiles (16 groups: every BERT width)
     * and anything else with its AVX-512 kernels. */
    lp_tier t = {tier == BERT_KERNELS_AVX512 || tier == BERT_KERNELS_AMX,
                 tier == BERT_KERNELS_AMX && kg % 16 == 0,
                 tier == BERT_KERNELS_AVX2 && !(cpu & BERT_CPU_AVX_VNNI), 0,
                 0};
#if BERT_HAVE_X86_KERNELS
    t.mr = t.amx ? 16 : t.avx512 ? BERT_AVX512_MR : BERT_AVX2_MR;
    t.nr = t.amx      ? BERT_PANEL
           : t.avx512 ? BERT_AVX512_NR
           : t.wide   ? BERT_AVX2W_NR
                      : BERT_AVX2_NR;
#else
    (void)cpu;
    return -1;
#endif
    size_t rowb = (t.mr * kg * 4 + 63) & ~(size_t)63, gb = t.wide ? 8 : 4;
    /* buf: MR rows of scratch, then per block row a scale, a zero point
     * and its groups (gb bytes each). */
    if (bytes < rowb + 64)
        return -1;
    size_t mcl = (bytes - rowb - 64) / (kg * gb + 8), ncols = 0;
    for (size_t w = 0; w < nw; w++)
        ncols += c1[w] - c0[w];
    size_t cap = m >= LP_WIDE_ROWS && ncols >= LP_WIDE_COLS ? LP_MC_WIDE : LP_MC;
    mcl = mcl > cap ? cap : mcl;
    mcl -= mcl % t.mr;
    if (mcl < t.mr)
        return -1; /* k beyond any sane model: the caller uses float32 */
    uint32_t *rows = buf;
    float *rs = (float *)((char *)buf + rowb);
    int32_t *rz = (int32_t *)(rs + mcl);
    uint32_t *ap = (uint32_t *)(((uintptr_t)(rz + mcl) + 63) & ~(uintptr_t)63);
    float tile[16 * BERT_PANEL] __attribute__((aligned(64)));
#if BERT_HAVE_X86_KERNELS
    if (t.amx)
        bert__amx_begin();
#endif
    for (size_t ic = 0; ic < m; ic += mcl) {
        size_t mc = m - ic < mcl ? m - ic : mcl;
        /* The activations once for every matrix (Q, K and V share them). */
        pack_a(&t, prec, ap, rs, rz, X + ic * ldx, ldx, mc, k, kg, rows);
        bert_pf plan[LP_MC]; /* one per tile of t.mr rows */
        bert__pf_plans(plan, (mc + t.mr - 1) / t.mr, kg);
        for (size_t w = 0; w < nw; w++) {
            size_t np = (W[w]->n + BERT_PANEL - 1) / BERT_PANEL;
            const uint32_t *panels = W[w]->panels;
            const float *scale = (const float *)(panels + np * kg * BERT_PANEL);
            const int32_t *sum = (const int32_t *)(scale + np * BERT_PANEL);
            for (size_t jc = c0[w]; jc < c1[w]; jc += t.nr) {
                size_t jp = jc / BERT_PANEL, jn = jc % BERT_PANEL;
                size_t nr = c1[w] - jc < t.nr ? c1[w] - jc : t.nr;
                const uint32_t *b = panels + jp * kg * BERT_PANEL + jn;
                const float *cs = scale + jc;
                const int32_t *csum = sum + jc;
                for (size_t ir = 0; ir < mc; ir += t.mr) {
                    size_t mr = mc - ir < t.mr ? mc - ir : t.mr;
                    const uint32_t *a = ap + ir * kg * (gb / 4);
                    float *c = Y[w] + (ic + ir) * ldy + jc;
                    const bert_pf *pf = &plan[ir / t.mr];
                    if (mr == t.mr && nr == t.nr) {
                        ukr(&t, prec, kg, a, b, c, ldy, rs + ir, rz + ir, cs,
                            csum, acc, pf);
                        continue;
                    }
                    ukr(&t, prec, kg, a, b, tile, t.nr, rs + ir, rz + ir, cs,
                        csum, 0, pf);
                    for (size_t i = 0; i < mr; i++)
                        for (size_t j = 0; j < nr; j++) {
                            float *cij = c + i * ldy + j;
                            *cij = acc ? *cij + tile[i * t.nr + j]
                                       : tile[i * t.nr + j];
                        }
                }
            }
        }
    }
#if BERT_HAVE_X86_KERNELS
    if (t.amx)
        bert__amx_end();
#endif
    return 0;
}

/* ---- which tiers run what ------------------------------------------------ */

/* Why tier k (resolved, supported by this CPU) cannot run p, or NULL. */
static const char *precision_missing(bert_precision p, bert_kernels k)
{
    unsigned f = bert__cpu_features();
    if (k == BERT_KERNELS_AMX) /* the tier itself needs all of them */
        return NULL;
    switch (p) {
    case BERT_PRECISION_FP32:
        return NULL;
    case BERT_PRECISION_INT8:
        if (k == BERT_KERNELS_AVX512)
            return f & BERT_CPU_AVX512_VNNI ? NULL
                   : "int8 on the avx512 tier needs AVX512-VNNI, which "
                     "this CPU lacks";
        if (k == BERT_KERNELS_AVX2) /* VNNI or widened (same sums) */
            return NULL;
        return "the blis tier runs fp32 only";
    case BERT_PRECISION_BF16:
        if (k == BERT_KERNELS_AVX512)
            return f & BERT_CPU_AVX512_BF16 ? NULL
                   : "bf16 needs AVX512-BF16, which this CPU lacks";
        if (k == BERT_KERNELS_AVX2)
            return "bf16 runs on the avx512 tier only (AVX2 has no bf16 "
                   "arithmetic)";
        return "the blis tier runs fp32 only";
    }
    return "unknown precision";
}

int bert__precision_supported(bert_precision p, bert_kernels k, char *why,
                              size_t n)
{
    const char *miss = NULL;
    if (k == BERT_KERNELS_AUTO && p != BERT_PRECISION_FP32) {
        if (bert__precision_tier(p) == BERT_KERNELS_AUTO)
            miss = p == BERT_PRECISION_INT8
                       ? "int8 needs AVX2 (with FMA), or AVX-512 "
                         "F/BW/DQ/VL with AVX512-VNNI, and this CPU has "
                         "neither"
                   : p == BERT_PRECISION_BF16
                       ? "bf16 needs AVX512-BF16 (with AVX-512 F/BW/DQ/VL), "
                         "which this CPU lacks"
                       : "unknown precision";
    } else if (!bert__kernels_supported(k, why, n)) {
        return 0;
    } else {
        if (k == BERT_KERNELS_AUTO)
            k = bert__kernels_best();
        miss = precision_missing(p, k);
    }
    if (miss && why && n) {
        size_t l = strlen(miss) < n - 1 ? strlen(miss) : n - 1;
        memcpy(why, miss, l);
        why[l] = '\0';
    }
    return miss == NULL;
}

bert_kernels bert__precision_tier(bert_precision p)
{
    if (p == BERT_PRECISION_FP32)
        return bert__kernels_best();
    static const bert_kernels order[] = {BERT_KERNELS_AMX, BERT_KERNELS_AVX512,
                                         BERT_KERNELS_AVX2};
    for (size_t i = 0; i < 3; i++)
        if (bert__kernels_supported(order[i], NULL, 0) &&
            !precision_missing(p, order[i]))
            return order[i];
    return BERT_KERNELS_AUTO;
}

const char *bert__precision_name(bert_precision p)
{
    switch (p) {
    case BERT_PRECISION_FP32: return "fp32";
    case BERT_PRECISION_BF16: return "bf16";
    case BERT_PRECISION_INT8: return "int8";
    }
    return "?";
}

int bert__precision_parse(const char *s)
{
    static const bert_precision all[] = {
        BERT_PRECISION_FP32, BERT_PRECISION_BF16, BERT_PRECISION_INT8};
    for (size_t i = 0; s && i < 3; i++)
        if (!strcmp(s, bert__precision_name(all[i])))
            return (int)all[i];
    return -1;
}
