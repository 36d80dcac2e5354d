/* gemm.c - libbert's matrix products: tier choice, the five loops around
 * libbert's micro-kernels, weight packing, and the BLIS tier.
 *
 * The loops are BLIS's (docs/KernelsHowTo.md), specialised for y = x W^T:
 *
 *   for jc over column blocks  (general B only: pack B into 48-col panels)
 *    for pc over k by KC        (a KC x 48 micro-panel of B stays in L1)
 *     for ic over m by MC       (pack an MC x KC block of A, kept in L2)
 *      for jr over B's panels (NR columns at a time)
 *       for ir over A's MR-row panels: micro-kernel
 *
 * With a packed weight matrix (bert_wmat) the B side is read straight from
 * the panels made at load, so a product packs only its activations: at 128
 * rows BLIS would re-pack every weight on every call, which costs about as
 * much as the arithmetic it feeds (issue #11).
 *
 * Threads split the columns (the weight panels) among themselves, each with
 * its own A block: with few rows, as in one 128-token sequence, that keeps
 * every thread's share of the weights disjoint and needs no barrier.  With
 * few columns and many rows, they split rows as well.  No global state: the
 * packing buffers belong to the context, one set per thread slot.
 *
 * Only the BLIS tier calls into BLIS, through bli_sgemm_ex and a private
 * rntm_t, never BLIS's global thread setting.
 */
#ifdef HAVE_CONFIG_H
#include <config.h> /* autoconf's (libbert/config.h is the model's) */
#endif
#include "libbert/gemm.h"

#include <blis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "libbert/cpu.h"
#include "libbert/gemm_kernels.h"
#include "libbert/gemm_lowp.h"

/* Cache blocking shared by both x86 tiers: a KC x 48 micro-panel of B
 * (36 KB) stays in L1 while the A panels of an MC x KC block (108 KB)
 * stream from L2; general B products pack NCP panels (768 columns) at a
 * time.  (Measured on BERT-base shapes, Sapphire Rapids VM, best of 4
 * alternating runs: KC 192 beat 128 and 256 by 1-5% at 128-4096 rows.) */
#ifndef BERT_GEMM_KC
#define BERT_GEMM_KC 192
#endif
#ifndef BERT_GEMM_MC
#define BERT_GEMM_MC 144
#endif
enum { KC = BERT_GEMM_KC, MC = BERT_GEMM_MC, NCP = 16 };
/* Largest MR of the tiers (edge tiles go through a local tile). */
#define MAX_MR 16
/* A block's panels are padded to whole MR-row tiles, and the avx2 tier's
 * split tail (slice) starts its last panel one slot further: up to
 * MAX_MR - 1 rows beyond mc.  MC need not be a multiple of any MR (a
 * build with MC 256 once overran this buffer into B's panels with the
 * 6-row avx2 tier). */
#define ABUF_FLOATS (((size_t)MC + MAX_MR) * KC)
#define BBUF_FLOATS ((size_t)KC * NCP * BERT_PANEL)

/* lda: A's row stride when read in place, 0 when packed */
typedef void (*bert_ukr_edge_fn)(size_t k, const float *a, size_t lda,
                                 const float *b, size_t ldb, float *c,
                                 size_t ldc, float alpha, int accumulate,
                                 size_t nr);

typedef struct tier_info {
    bert_ukr_fn ukr;
    size_t mr, nr; /* nr divides BERT_PANEL */
    bert_ukr_edge_fn edge; /* full rows of at most edge_nr columns */
    size_t edge_nr;        /* 0: no edge kernel */
    bert_ukr_rows_fn rows; /* ukr with A in place, or NULL */
    bert_ukr_short_fn tail; /* the first mr < MR rows of a tile, or NULL */
    unsigned cpu; /* bert__cpu_features() when the context was made */
} tier_info;

/* Column tiles up to which a slice reads A in place (where the tier has
 * such a kernel) instead of packing it: attention's P V (64 or 32 columns,
 * 2-4 tiles) would make a whole pass over the probabilities to pack them
 * for only 2-4 reads of each (MiniLM at 512 tokens on the Zen 3 VM:
 * bench/ab 0.980 of the time read in place). */
#define INPLACE_TILES 4

struct bert_gemm_ctx {
    bert_kernels tier;
    tier_info ti;
    int n_threads;
    unsigned lowp; /* bit p: this tier runs bert_precision p here */
    rntm_t rntm;   /* BLIS tier */
    float *bufs;   /* n_threads x (A block + B block), 64-byte aligned */
    char name[40];
};

/* ---- tiers ---------------------------------------------------------------- */

bert_kernels bert__kernels_best(void)
{
    unsigned f = bert__cpu_features();
#if BERT_HAVE_X86_KERNELS
    if ((f & BERT_CPU_AMX_TIER) == BERT_CPU_AMX_TIER)
        return BERT_KERNELS_AMX;
    if (f & BERT_CPU_AVX512)
        return BERT_KERNELS_AVX512;
    if (f & BERT_CPU_AVX2)
        return BERT_KERNELS_AVX2;
#endif
    (void)f;
    return BERT_KERNELS_BLIS;
}

int bert__kernels_supported(bert_kernels k, char *why, size_t n)
{
    unsigned f = bert__cpu_features();
    const char *miss = NULL;
    switch (k) {
    case BERT_KERNELS_AUTO:
    case BERT_KERNELS_BLIS:
        return 1;
    case BERT_KERNELS_AVX512:
        if (!BERT_HAVE_X86_KERNELS)
            miss = "the avx512 kernels are built for x86-64 only";
        else if (!(f & BERT_CPU_AVX512))
            miss = "this CPU (or OS) lacks AVX-512 F/BW/DQ/VL";
        break;
    case BERT_KERNELS_AMX:
        if (!BERT_HAVE_X86_KERNELS)
            miss = "the amx kernels are built for x86-64 only";
        else if (!(f & BERT_CPU_AMX))
            miss = "this CPU (or OS) lacks AMX tiles (TILE, BF16, INT8)";
        else if ((f & BERT_CPU_AMX_TIER) != BERT_CPU_AMX_TIER)
            miss = "the amx tier also needs AVX-512 F/BW/DQ/VL, AVX512-BF16 "
                   "and AVX512-VNNI";
        break;
    case BERT_KERNELS_AVX2:
        if (!BERT_HAVE_X86_KERNELS)
            miss = "the avx2 kernels are built for x86-64 only";
        else if (!(f & BERT_CPU_AVX2))
            miss = "this CPU (or OS) lacks AVX2 and FMA";
        break;
    default:
        miss = "unknown kernel tier";
    }
    if (miss && why && n)
        snprintf(why, n, "%s", miss);
    return miss == NULL;
}

const char *bert__kernels_name(bert_kernels k)
{
    switch (k) {
    case BERT_KERNELS_AUTO: return "auto";
    case BERT_KERNELS_BLIS: return "blis";
    case BERT_KERNELS_AVX2: return "avx2";
    case BERT_KERNELS_AVX512: return "avx512";
    case BERT_KERNELS_AMX: return "amx";
    }
    return "?";
}

int bert__kernels_parse(const char *s)
{
    static const bert_kernels all[] = {BERT_KERNELS_AUTO, BERT_KERNELS_BLIS,
                                       BERT_KERNELS_AVX2, BERT_KERNELS_AVX512,
                                       BERT_KERNELS_AMX};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, bert__kernels_name(all[i])))
            return (int)all[i];
    return -1;
}

/* ---- context -------------------------------------------------------------- */

static size_t slot_floats(void)
{
    return ABUF_FLOATS + BBUF_FLOATS;
}

bert_gemm_ctx *bert__gemm_ctx_create(int n_threads, bert_kernels k, char *why,
                                     size_t why_n)
{
    if (k == BERT_KERNELS_AUTO)
        k = bert__kernels_best();
    if (!bert__kernels_supported(k, why, why_n))
        return NULL;
    bert_gemm_ctx *g = calloc(1, sizeof *g);
    if (!g) {
        if (why && why_n)
            snprintf(why, why_n, "out of memory");
        return NULL;
    }
    g->tier = k;
    rntm_t init = BLIS_RNTM_INITIALIZER;
    g->rntm = init;
#ifdef HAVE_BLI_RNTM_DISABLE_L3_SUP
    /* BLIS 0.9's small-matrix kernels (its haswell and zen configurations)
     * read past the end of A for some shapes: on a Zen 3 CPU, under
     * AddressSanitizer, a 13 x 64 x 300 product on 2 threads faulted on
     * an unmapped page inside BLIS (tests/test_gemm).  Without ASan such
     * a read can fault too where A ends a mapping.  The large-matrix path
     * reads only what it packs.  This costs AUTO nothing: it picks the
     * blis tier only on CPUs without AVX2, which BLIS has no sup kernels
     * for. */
    bli_rntm_disable_l3_sup(&g->rntm);
#endif
#if BERT_HAVE_X86_KERNELS
    if (k == BERT_KERNELS_AVX512 || k == BERT_KERNELS_AMX)
        g->ti = (tier_info){bert__ukr_avx512, BERT_AVX512_MR, BERT_AVX512_NR,
                            bert__ukr_avx512_edge, BERT_AVX512_EDGE_NR,
                            bert__ukr_avx512_rows, NULL, 0};
    else if (k == BERT_KERNELS_AVX2)
        g->ti = (tier_info){bert__ukr_avx2, BERT_AVX2_MR, BERT_AVX2_NR, NULL, 0,
                            bert__ukr_avx2_rows, bert__ukr_avx2_short, 0};
#endif
    g->ti.cpu = bert__cpu_features();
    for (int p = BERT_PRECISION_BF16; p <= BERT_PRECISION_INT8; p++)
        if (bert__precision_supported((bert_precision)p, k, NULL, 0))
            g->lowp |= 1u << p;
    if (k == BERT_KERNELS_BLIS)
        snprintf(g->name, sizeof g->name, "blis-%s",
                 bli_arch_string(bli_arch_query_id()));
    else
        snprintf(g->name, sizeof g->name, "%s", bert__kernels_name(k));
    if (bert__gemm_ctx_set_threads(g, n_threads) != 0) {
        free(g);
        if (why && why_n)
            snprintf(why, why_n, "out of memory");
        return NULL;
    }
    return g;
}

bert_kernels bert__gemm_ctx_tier(const bert_gemm_ctx *g)
{
    return g->tier;
}

const char *bert__gemm_ctx_kernels(const bert_gemm_ctx *g)
{
    return g->name;
}

int bert__gemm_ctx_set_threads(bert_gemm_ctx *g, int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    if (g->tier != BERT_KERNELS_BLIS && (n_threads > g->n_threads || !g->bufs)) {
        float *b = NULL;
        size_t bytes = (size_t)n_threads * slot_floats() * sizeof(float);
        if (posix_memalign((void **)&b, 64, bytes) != 0)
            return -1;
        free(g->bufs);
        g->bufs = b;
    }
    g->n_threads = n_threads;
    bli_rntm_set_num_threads((dim_t)n_threads, &g->rntm);
    return 0;
}

int bert__gemm_ctx_threads(const bert_gemm_ctx *g)
{
    return g ? g->n_threads : 1;
}

void bert__gemm_ctx_free(bert_gemm_ctx *g)
{
    if (!g)
        return;
    free(g->bufs);
    free(g);
}

/* ---- packing -------------------------------------------------------------- */

/* A (mc,kc) at A with strides (rsa,csa) into MR-row panels: panel r holds
 * a[p*MR + i] = A(r*MR + i, p); rows past mc are zero. */
static void pack_a(float *restrict dst, const float *A, ptrdiff_t rsa,
                   ptrdiff_t csa, size_t mc, size_t kc, size_t MR)
{
    for (size_t r = 0; r < mc; r += MR, dst += MR * kc) {
        size_t mr = mc - r < MR ? mc - r : MR;
        const float *src = A + (ptrdiff_t)r * rsa;
#if BERT_HAVE_X86_KERNELS
        if (csa == 1 && mr == 8 && MR == 8) {
            /* The AVX-512 tier's panels (only it has MR 8; AVX2 suffices). */
            bert__transpose8(dst, 8, src, rsa, kc);
            continue;
        }
        if (csa == 1 && mr == 6 && MR == 6) {
            /* The AVX2 tier's. */
            bert__transpose6(dst, src, rsa, kc);
            continue;
        }
#endif
        if (csa == 1) {
            /* Row-major activations: each row is read contiguously. */
            for (size_t i = 0; i < mr; i++) {
                const float *s = src + (ptrdiff_t)i * rsa;
                for (size_t p = 0; p < kc; p++)
                    dst[p * MR + i] = s[p];
            }
        } else if (rsa == 1 && mr == MR) {
            /* Transposed activations (the trainer's weight gradients, dY^T
             * X): each of the kc columns holds the MR rows side by side. */
            if (MR == 8) /* a constant size: inlined, not a libc call */
                for (size_t p = 0; p < kc; p++)
                    memcpy(dst + p * 8, src + (ptrdiff_t)p * csa,
                           8 * sizeof *dst);
            else if (MR == 6) /* the avx2 tier's */
                for (size_t p = 0; p < kc; p++)
                    memcpy(dst + p * 6, src + (ptrdiff_t)p * csa,
                           6 * sizeof *dst);
            else
                for (size_t p = 0; p < kc; p++)
                    memcpy(dst + p * MR, src + (ptrdiff_t)p * csa,
                           MR * sizeof *dst);
            continue;
        } else {
            for (size_t p = 0; p < kc; p++)
                for (size_t i = 0; i < mr; i++)
                    dst[p * MR + i] =
                        src[(ptrdiff_t)i * rsa + (ptrdiff_t)p * csa];
        }
        for (size_t i = mr; i < MR; i++)
            for (size_t p = 0; p < kc; p++)
                dst[p * MR + i] = 0.0f;
    }
}

/* B (kc,nc) with strides (rsb,csb) into BERT_PANEL-column panels of kc rows
 * (dst + j*ld_panel); columns past nc are zero. */
static void pack_b(float *restrict dst, size_t ld_panel, const float *B,
                   ptrdiff_t rsb, ptrdiff_t csb, size_t kc, size_t nc,
                   int avx2)
{
    (void)avx2;
    for (size_t j0 = 0; j0 < nc; j0 += BERT_PANEL, dst += ld_panel) {
        size_t w = nc - j0 < BERT_PANEL ? nc - j0 : BERT_PANEL, j = 0;
#if BERT_HAVE_X86_KERNELS
        /* B^T row-major (weights, keys): 8 columns at a time through
         * register transposes; the rest below. */
        if (avx2 && rsb == 1)
            for (; j + 8 <= w; j += 8)
                bert__transpose8(dst + j, BERT_PANEL,
                                 B + (ptrdiff_t)(j0 + j) * csb, csb, kc);
#endif
        if (j == 0 && csb == 1) {
            /* Row-major B: each panel row is a contiguous run. */
            for (size_t p = 0; p < kc; p++)
                memcpy(dst + p * BERT_PANEL, B + (ptrdiff_t)p * rsb + j0,
                       w * sizeof(float));
            j = w;
        }
        for (; j < w; j++) {
            const float *s = B + (ptrdiff_t)(j0 + j) * csb;
            for (size_t p = 0; p < kc; p++)
                dst[p * BERT_PANEL + j] = s[(ptrdiff_t)p * rsb];
        }
        for (j = w; j < BERT_PANEL; j++)
            for (size_t p = 0; p < kc; p++)
                dst[p * BERT_PANEL + j] = 0.0f;
    }
}

/* Huge pages, because a product streams its weights from memory (85 M
 * floats for BERT-base, far beyond any cache): with 4 KB pages every 4 KB
 * of panels is a TLB miss, and the hardware prefetchers stop at every
 * page boundary.  (bench/ab, BERT-base on one thread, Sapphire Rapids VM:
 * 0.98 of the time at 1 x 128 and 1 x 512.)  The leading alignment slack
 * of a 2 MB-aligned allocation is address space, never touched. */
void *bert__big_alloc(size_t bytes)
{
    enum { HUGE = 2u << 20 };
    void *p = NULL;
    size_t align = bytes >= HUGE ? HUGE : 64;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (align == HUGE)
        (void)madvise(p, bytes & ~(size_t)4095, MADV_HUGEPAGE);
#endif
    return p;
}

int bert__wmat_pack(bert_wmat *W, int n_threads)
{
    if (W->prec != BERT_PRECISION_FP32)
        return bert__lp_pack(W, n_threads);
    size_t np = (W->n + BERT_PANEL - 1) / BERT_PANEL;
    size_t per = W->k * BERT_PANEL;
    float *p = NULL;
    if (np == 0 || W->k == 0)
        return BERT_OK;
    if (per > SIZE_MAX / sizeof(float) / np ||
        !(p = bert__big_alloc(np * per * sizeof(float))))
        return BERT_ENOMEM;
    const float *w = W->w;
    size_t n = W->n, k = W->k;
    int avx2 = bert__kernels_supported(BERT_KERNELS_AVX2, NULL, 0);
    (void)n_threads;
    /* KC-row blocks one after the other, each holding every panel's kc x 48
     * block: the order the loops read them in, so a product streams its
     * weights from memory sequentially. */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(n_threads) \
    if (n_threads > 1)
#endif
    for (size_t j = 0; j < np; j++) {
        size_t nc = n - j * BERT_PANEL < BERT_PANEL ? n - j * BERT_PANEL
                                                     : BERT_PANEL;
        for (size_t pc = 0; pc < k; pc += KC) {
            size_t kc = k - pc < KC ? k - pc : KC;
            /* W^T's columns are W's rows: strides (1, k). */
            pack_b(p + pc * np * BERT_PANEL + j * kc * BERT_PANEL, 0,
                   w + j * BERT_PANEL * k + pc, 1, (ptrdiff_t)k, kc, nc,
                   avx2);
        }
    }
    W->panels = p;
    return BERT_OK;
}

size_t bert__wmat_size(size_t n, size_t k, bert_precision p)
{
    if (p != BERT_PRECISION_FP32)
        return bert__lp_size(n, k, p);
    return (n + BERT_PANEL - 1) / BERT_PANEL * k * BERT_PANEL * sizeof(float);
}

unsigned bert__wmat_layout(bert_precision p)
{
    return (unsigned)p << 24 | (unsigned)KC << 8 | BERT_PANEL;
}

size_t bert__wmat_packed_bytes(const bert_wmat *W)
{
    return W->panels ? bert__wmat_size(W->n, W->k, W->prec) : 0;
}

void bert__wmat_free(bert_wmat *W)
{
    free(W->panels);
    W->panels = NULL;
}

/* ---- the loops ------------------------------------------------------------ */

/* Where one slice of a product goes: the panels of its B for this k
 * block (panel j at bp + j*ld_panel, rows BERT_PANEL apart), the columns
 * computed, and C at its first column. */
typedef struct target {
    const float *bp;
    size_t ncol;
    float *C;
    size_t off; /* C's first column is column off of bp's first panel */
} target;

/* One KC slice: C (m, ncol) op= alpha * A (m,kc) Bp for each target, with
 * A packed once per MC block for all of them.  acc: add to C (else
 * overwrite).  abuf holds ABUF_FLOATS (an MC x KC block and padding). */
static void slice(const tier_info *t, size_t m, size_t kc, const float *A,
                  ptrdiff_t rsa, ptrdiff_t csa, size_t nt, const target *tg,
                  size_t ld_panel, ptrdiff_t rsc, ptrdiff_t csc, float alpha,
                  int acc, float *abuf)
{
    const size_t MR = t->mr, NR = t->nr;
    float tile[MAX_MR * BERT_PANEL] __attribute__((aligned(64)));
    size_t tiles = 0;
    for (size_t w = 0; w < nt; w++)
        tiles += (tg[w].off % NR + tg[w].ncol + NR - 1) / NR;
    int inplace = t->rows && csa == 1 && rsa > 0 && tiles <= INPLACE_TILES;
    for (size_t ic = 0; ic < m; ic += MC) {
        size_t mc = m - ic < MC ? m - ic : MC;
        bert_pf plan[MC]; /* one per MR-row tile */
        bert__pf_plans(plan, (mc + MR - 1) / MR, kc);
        /* With a tail kernel, 6 q + 1 or 2 rows end in two tiles of 4 and
         * 3 or 4 rows from row `split` on, instead of a full tile and one
         * of 1 or 2 rows: 4 rows are 8 accumulators, enough to cover the
         * FMA latency, where 2 rows (4) ran at about half the full tile's
         * rate (Zen 3, in L1: 45 against 86 GFLOP/s; 4 rows: 80).  Each
         * tile has its own MR-row panel slot. */
        size_t split = mc, rem = mc % MR;
        if (t->tail && MR == 6 && mc > MR && (rem == 1 || rem == 2))
            split = mc - MR - rem;
        if (!inplace && split < mc) {
            pack_a(abuf, A + (ptrdiff_t)ic * rsa, rsa, csa, split + 4, kc, MR);
            pack_a(abuf + (split / MR + 1) * MR * kc,
                   A + (ptrdiff_t)(ic + split + 4) * rsa, rsa, csa,
                   mc - split - 4, kc, MR);
        } else if (!inplace)
            pack_a(abuf, A + (ptrdiff_t)ic * rsa, rsa, csa, mc, kc, MR);
        for (size_t w = 0; w < nt; w++) {
            /* tiles of NR columns from the panel's start; the first one
             * may begin before the wanted columns (skip of them) */
            size_t off = tg[w].off, end = off + tg[w].ncol;
            for (size_t jt = off / NR * NR; jt < end; jt += NR) {
                const float *b = tg[w].bp + (jt / BERT_PANEL) * ld_panel +
                                 jt % BERT_PANEL;
                size_t nr = end - jt < NR ? end - jt : NR;
                size_t skip = off > jt ? off - jt : 0;
                size_t mr;
                for (size_t ir = 0, ti = 0; ir < mc; ir += mr, ti++) {
                    mr = ir == split ? 4 : mc - ir < MR ? mc - ir : MR;
                    const float *a = abuf + ti * MR * kc;
                    const bert_pf *pf = &plan[ti];
                    bert_pf third;
                    if (pf->l1 && NR < BERT_PANEL) { /* the avx2 tier */
                        third = *pf;
                        third.l1 = jt % BERT_PANEL + NR < BERT_PANEL
                                       ? BERT_PF_L1_THIRD
                                       : BERT_PF_L1_PANEL;
                        pf = &third;
                    }
                    float *c = tg[w].C + (ptrdiff_t)(ic + ir) * rsc +
                               (ptrdiff_t)(jt + skip - off) * csc;
                    /* full rows of at most edge_nr columns */
                    int edge = mr == MR && csc == 1 && !skip &&
                               nr <= t->edge_nr;
                    size_t lda = 0; /* A in place: its row stride */
                    if (inplace) {
                        const float *ai = A + (ptrdiff_t)(ic + ir) * rsa;
                        if (mr == MR && nr == NR && !skip && csc == 1) {
                            t->rows(kc, ai, (size_t)rsa, b, BERT_PANEL, c,
                                    (size_t)rsc, alpha, acc, pf);
                            continue;
                        }
                        if (edge) { /* the edge kernel reads it in place */
                            a = ai;
                            lda = (size_t)rsa;
                        } else { /* this tile's panel alone, packed */
                            pack_a(abuf, ai, rsa, csa, mr, kc, MR);
                            a = abuf;
                        }
                    }
                    if (mr == MR && nr == NR && !skip && csc == 1) {
                        t->ukr(kc, a, b, BERT_PANEL, c, (size_t)rsc, alpha,
                               acc, pf);
                        continue;
                    }
                    if (mr < MR && nr == NR && !skip && csc == 1 && t->tail) {
                        t->tail(mr, kc, a, b, c, (size_t)rsc, alpha, acc, pf);
                        continue;
                    }
                    if (edge) {
                        t->edge(kc, a, lda, b, BERT_PANEL, c, (size_t)rsc,
                                alpha, acc, nr);
                        continue;
                    }
                    t->ukr(kc, a, b, BERT_PANEL, tile, NR, alpha, 0, pf);
                    for (size_t i = 0; i < mr; i++)
                        for (size_t j = skip; j < nr; j++) {
                            float *cij = c + (ptrdiff_t)i * rsc +
                                         (ptrdiff_t)(j - skip) * csc;
                            float v = tile[i * NR + j];
                            *cij = acc ? *cij + v : v;
                        }
                }
            }
        }
    }
}

/* Weight matrices one product may share its activations with (Q, K, V). */
#define MAX_W 4

/* A product: general (A times B, into C), or with packed weights: X (A)
 * times each W_w^T into Y_w (row stride rsc), the matrices' panels side by
 * side as one column space of sum(ceil(n_w/48)) panels, which the threads
 * split among themselves. */
typedef struct job {
    const tier_info *t;
    bert_kernels tier;
    size_t k, n; /* n: columns (packed: 48 x the panels of all W) */
    float alpha, beta;
    const float *A;
    ptrdiff_t rsa, csa;
    const float *B; /* general B, C */
    ptrdiff_t rsb, csb;
    float *C;
    ptrdiff_t rsc, csc;
    size_t nw; /* packed weights (csc 1), or 0 */
    const bert_wmat *const *ws;
    float *const *ys;
} job;

/* Columns [c0,c1) of W_w that the panel range [p0,p1) of the joint column
 * space covers (c0 == c1 when none). */
static void w_range(const job *jb, size_t w, size_t p0, size_t p1,
                    size_t *c0, size_t *c1)
{
    size_t off = 0;
    for (size_t v = 0; v < w; v++)
        off += (jb->ws[v]->n + BERT_PANEL - 1) / BERT_PANEL;
    size_t np = (jb->ws[w]->n + BERT_PANEL - 1) / BERT_PANEL;
    size_t lo = p0 > off ? p0 - off : 0, hi = p1 > off ? p1 - off : 0;
    hi = hi < np ? hi : np;
    lo = lo < hi ? lo : hi;
    *c0 = lo * BERT_PANEL;
    *c1 = hi * BERT_PANEL < jb->ws[w]->n ? hi * BERT_PANEL : jb->ws[w]->n;
    if (*c1 < *c0)
        *c1 = *c0;
}

/* C := beta C over rows [0,m) and columns [j0,j1) (beta 0: zeros). */
static void scale_c(float *C, ptrdiff_t rsc, ptrdiff_t csc, size_t m,
                    size_t j0, size_t j1, float beta)
{
    if (beta == 1.0f)
        return;
    for (size_t i = 0; i < m; i++)
        for (size_t j = j0; j < j1; j++) {
            float *c = C + (ptrdiff_t)i * rsc + (ptrdiff_t)j * csc;
            *c = beta == 0.0f ? 0.0f : *c * beta;
        }
}

static void run_part(const job *jb, size_t i0, size_t i1, size_t j0,
                     size_t j1, float *buf);

/* Rows [0,m) of X (already offset by row i0) times columns [c0[w],c1[w])
 * of each W_w (c0 a multiple of BERT_PANEL) over the depth [k0,k1), into
 * Y_w (row i0 on): the packed-weights part of run_part, and one thread's
 * share of a tensor-parallel product (bert__gemm_w_part). */
static void run_packed_cols(const job *jb, size_t i0, size_t m,
                            const size_t *c0, const size_t *c1, size_t k0,
                            size_t k1, float *buf)
{
    size_t nw = jb->nw, k = jb->k;
    const float *A = jb->A + (ptrdiff_t)i0 * jb->rsa;
    float *Y[MAX_W];
    for (size_t w = 0; w < nw; w++) {
        Y[w] = jb->ys[w] + (ptrdiff_t)i0 * jb->rsc;
        if (jb->beta != 1.0f && (jb->beta != 0.0f || k1 == k0))
            scale_c(Y[w], jb->rsc, 1, m, c0[w], c1[w], jb->beta);
    }
    if (k1 == k0)
        return;
    int acc0 = jb->beta != 0.0f;
    if (jb->ws[0]->prec != BERT_PRECISION_FP32) {
        /* (whole depth only: bert__gemm_w_part takes FP32 panels) */
        if (bert__lp_part(jb->tier, jb->t->cpu, A, (size_t)jb->rsa, nw,
                          jb->ws, c0, c1, acc0, Y, (size_t)jb->rsc, m, buf,
                          slot_floats() * sizeof(float)) == 0)
            return;
        /* k too deep for the scratch: float32 from the originals. */
        for (size_t w = 0; w < nw; w++) {
            job f = *jb;
            f.nw = 0;
            f.n = jb->ws[w]->n;
            f.B = jb->ws[w]->w;
            f.rsb = 1;
            f.csb = (ptrdiff_t)k;
            f.C = jb->ys[w];
            f.beta = acc0 ? 1.0f : 0.0f;
            f.A = jb->A;
            if (c1[w] > c0[w])
                run_part(&f, i0, i0 + m, c0[w], c1[w], buf);
        }
        return;
    }
    target tg[MAX_W];
    /* The KC blocks that [k0,k1) overlaps; within block pb (depth kb as
     * packed) rows s0..s1 of every panel, which lie (s1 - s0) x 48 floats
     * from row s0 on, the panels kb x 48 apart. */
    for (size_t pb = k0 / KC * KC; pb < k1; pb += KC) {
        size_t kb = k - pb < KC ? k - pb : KC;
        size_t s0 = k0 > pb ? k0 - pb : 0;
        size_t s1 = k1 < pb + kb ? k1 - pb : kb;
        for (size_t w = 0; w < nw; w++) {
            size_t np = (jb->ws[w]->n + BERT_PANEL - 1) / BERT_PANEL;
            tg[w].bp = (const float *)jb->ws[w]->panels +
                       pb * np * BERT_PANEL +
                       (c0[w] / BERT_PANEL) * kb * BERT_PANEL +
                       s0 * BERT_PANEL;
            tg[w].ncol = c1[w] - c0[w];
            tg[w].C = Y[w] + c0[w];
            tg[w].off = c0[w] % BERT_PANEL;
        }
        slice(jb->t, m, s1 - s0, A + (ptrdiff_t)(pb + s0) * jb->csa, jb->rsa,
              jb->csa, nw, tg, kb * BERT_PANEL, jb->rsc, 1, jb->alpha,
              acc0 || pb + s0 > k0, buf);
    }
}

/* The packed-weights part of run_part: rows [0,m) of X (already offset),
 * panels [p0,p1) of the joint column space. */
static void run_packed(const job *jb, size_t i0, size_t m, size_t p0,
                       size_t p1, float *buf)
{
    size_t c0[MAX_W], c1[MAX_W];
    for (size_t w = 0; w < jb->nw; w++)
        w_range(jb, w, p0, p1, &c0[w], &c1[w]);
    run_packed_cols(jb, i0, m, c0, c1, 0, jb->k, buf);
}

/* What one thread computes: rows [i0,i1) and columns [j0,j1), j0 a
 * multiple of BERT_PANEL (packed weights: of the joint column space). */
static void run_part(const job *jb, size_t i0, size_t i1, size_t j0,
                     size_t j1, float *buf)
{
    size_t m = i1 - i0, k = jb->k;
    if (m == 0 || j1 <= j0)
        return;
    if (jb->nw) {
        run_packed(jb, i0, m, j0 / BERT_PANEL,
                   (j1 + BERT_PANEL - 1) / BERT_PANEL, buf);
        return;
    }
    const float *A = jb->A + (ptrdiff_t)i0 * jb->rsa;
    float *C = jb->C + (ptrdiff_t)i0 * jb->rsc;
    if (jb->beta != 1.0f && (jb->beta != 0.0f || k == 0))
        scale_c(C, jb->rsc, jb->csc, m, j0, j1, jb->beta);
    if (k == 0)
        return;
    int acc0 = jb->beta != 0.0f;
    float *abuf = buf, *bbuf = buf + ABUF_FLOATS;
    for (size_t jc = j0; jc < j1; jc += NCP * BERT_PANEL) {
        size_t nc = j1 - jc < NCP * BERT_PANEL ? j1 - jc : NCP * BERT_PANEL;
        for (size_t pc = 0; pc < k; pc += KC) {
            size_t kc = k - pc < KC ? k - pc : KC;
            pack_b(bbuf, kc * BERT_PANEL,
                   jb->B + (ptrdiff_t)pc * jb->rsb + (ptrdiff_t)jc * jb->csb,
                   jb->rsb, jb->csb, kc, nc, 1);
            target tg = {bbuf, nc, C + (ptrdiff_t)jc * jb->csc, 0};
            slice(jb->t, m, kc, A + (ptrdiff_t)pc * jb->csa, jb->rsa, jb->csa,
                  1, &tg, kc * BERT_PANEL, jb->rsc, jb->csc, jb->alpha,
                  acc0 || pc > 0, abuf);
        }
    }
}

/* Splits m x n among nt threads: tn column groups (whole panels) times tm
 * row groups (whole MR panels), minimising the largest share. */
static void split(size_t m, size_t n, size_t MR, int nt, int *tm, int *tn)
{
    size_t mp = (m + MR - 1) / MR, np = (n + BERT_PANEL - 1) / BERT_PANEL;
    size_t best = SIZE_MAX;
    *tm = *tn = 1;
    for (int c = 1; c <= nt; c++) {
        if (nt % c)
            continue;
        int r = nt / c;
        if ((size_t)c > np || (size_t)r > mp)
            continue;
        size_t share = ((np + (size_t)c - 1) / (size_t)c) *
                       ((mp + (size_t)r - 1) / (size_t)r);
        /* Prefer column splits on ties: each thread then reads only its own
         * part of the weights. */
        if (share < best || (share == best && c > *tn)) {
            best = share;
            *tm = r;
            *tn = c;
        }
    }
}

static void part_range(size_t units, int parts, int id, size_t *u0, size_t *u1)
{
    size_t q = units / (size_t)parts, r = units % (size_t)parts;
    size_t i = (size_t)id;
    *u0 = i * q + (i < r ? i : r);
    *u1 = *u0 + q + (i < r);
}

static void run(const bert_gemm_ctx *g, int slot, size_t m, size_t n,
                const job *jb)
{
    if (slot >= 0 || g->n_threads == 1) {
        float *buf = g->bufs + (size_t)(slot > 0 ? slot : 0) * slot_floats();
        float *own = NULL;
        if (slot >= g->n_threads) {
            /* A caller with more threads than the context: correct, if
             * slower, with a buffer of its own. */
            if (posix_memalign((void **)&own, 64,
                               slot_floats() * sizeof(float)) != 0)
                abort(); /* cannot report from here; sizes are small */
            buf = own;
        }
        run_part(jb, 0, m, 0, n, buf);
        free(own);
        return;
    }
    int tm, tn;
    split(m, n, jb->t->mr, g->n_threads, &tm, &tn);
    int nt = tm * tn;
    size_t mp = (m + jb->t->mr - 1) / jb->t->mr;
    size_t np = (n + BERT_PANEL - 1) / BERT_PANEL;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    {
#ifdef _OPENMP
        int id = omp_get_thread_num(), got = omp_get_num_threads();
#else
        int id = 0, got = 1;
#endif
        /* OpenMP may give fewer threads than asked (a region nested in the
         * caller's gets one): split among those, or parts go missing */
        int rm = tm, rn = tn;
        if (got != nt)
            split(m, n, jb->t->mr, got, &rm, &rn);
        size_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
        if (id < rm * rn) {
            part_range(mp, rm, id / rn, &r0, &r1);
            part_range(np, rn, id % rn, &c0, &c1);
        }
        size_t i0 = r0 * jb->t->mr, i1 = r1 * jb->t->mr;
        size_t j0 = c0 * BERT_PANEL, j1 = c1 * BERT_PANEL;
        run_part(jb, i0, i1 < m ? i1 : m, j0, j1 < n ? j1 : n,
                 g->bufs + (size_t)id * slot_floats());
    }
}

static void blis_gemm(const bert_gemm_ctx *g, int one, size_t m, size_t n,
                      size_t k, float alpha, const float *A, ptrdiff_t rsa,
                      ptrdiff_t csa, const float *B, ptrdiff_t rsb,
                      ptrdiff_t csb, float beta, float *C, ptrdiff_t rsc,
                      ptrdiff_t csc)
{
    /* BLIS 0.9's typed API takes non-const pointers; it only reads A, B,
     * alpha and beta, and copies the rntm_t before using it. */
    rntm_t rntm = g->rntm;
    if (one)
        bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (float *)A, (inc_t)rsa, (inc_t)csa,
                 (float *)B, (inc_t)rsb, (inc_t)csb, &beta, C, (inc_t)rsc,
                 (inc_t)csc, NULL, &rntm);
}

static void sgemm_any(const bert_gemm_ctx *g, int slot, size_t m, size_t n,
                      size_t k, float alpha, const float *A, ptrdiff_t rsa,
                      ptrdiff_t csa, const float *B, ptrdiff_t rsb,
                      ptrdiff_t csb, float beta, float *C, ptrdiff_t rsc,
                      ptrdiff_t csc)
{
    if (m == 0 || n == 0)
        return;
    if (g->tier == BERT_KERNELS_BLIS) {
        blis_gemm(g, slot >= 0, m, n, k, alpha, A, rsa, csa, B, rsb, csb,
                  beta, C, rsc, csc);
        return;
    }
    job jb = {&g->ti, g->tier, k, n, alpha, beta, A, rsa, csa, B, rsb, csb,
              C, rsc, csc, 0, NULL, NULL};
    run(g, slot, m, n, &jb);
}

void bert__sgemm(const bert_gemm_ctx *g, size_t m, size_t n, size_t k,
                 float alpha, const float *A, ptrdiff_t rsa, ptrdiff_t csa,
                 const float *B, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                 float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    sgemm_any(g, -1, m, n, k, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc,
              csc);
}

void bert__sgemm1(const bert_gemm_ctx *g, int slot, size_t m, size_t n,
                  size_t k, float alpha, const float *A, ptrdiff_t rsa,
                  ptrdiff_t csa, const float *B, ptrdiff_t rsb, ptrdiff_t csb,
                  float beta, float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    sgemm_any(g, slot < 0 ? 0 : slot, m, n, k, alpha, A, rsa, csa, B, rsb,
              csb, beta, C, rsc, csc);
}

/* Whether W's panels serve this context's tier (else the product runs
 * from the float32 originals). */
static int panels_usable(const bert_gemm_ctx *g, const bert_wmat *W)
{
    if (g->tier == BERT_KERNELS_BLIS || !W->panels)
        return 0;
    /* Sessions refuse a tier that cannot run the precision; from elsewhere,
     * stay correct with float32. */
    return W->prec == BERT_PRECISION_FP32 || (g->lowp & 1u << W->prec);
}

void bert__gemm_wn(const bert_gemm_ctx *g, int slot, size_t m, const float *X,
                   size_t ldx, size_t nw, const bert_wmat *const *W,
                   float beta, float *const *Y, size_t ldy)
{
    if (m == 0 || nw == 0)
        return;
    int joint = nw <= MAX_W;
    size_t np = 0;
    for (size_t w = 0; w < nw && joint; w++) {
        joint = panels_usable(g, W[w]) && W[w]->k == W[0]->k &&
                W[w]->prec == W[0]->prec && W[w]->n > 0;
        np += (W[w]->n + BERT_PANEL - 1) / BERT_PANEL;
    }
    if (!joint) {
        for (size_t w = 0; w < nw; w++) {
            if (W[w]->n == 0)
                continue;
            if (panels_usable(g, W[w])) {
                bert__gemm_wn(g, slot, m, X, ldx, 1, &W[w], beta, &Y[w], ldy);
                continue;
            }
            sgemm_any(g, slot, m, W[w]->n, W[w]->k, 1.0f, X, (ptrdiff_t)ldx, 1,
                      W[w]->w, 1, (ptrdiff_t)W[w]->k, beta, Y[w],
                      (ptrdiff_t)ldy, 1);
        }
        return;
    }
    job jb = {&g->ti, g->tier, W[0]->k, np * BERT_PANEL, 1.0f, beta, X,
              (ptrdiff_t)ldx, 1, NULL, 0, 0, NULL, (ptrdiff_t)ldy, 1, nw, W, Y};
    run(g, slot, m, jb.n, &jb);
}

void bert__gemm_w(const bert_gemm_ctx *g, int slot, size_t m, const float *X,
                  size_t ldx, const bert_wmat *W, float beta, float *Y,
                  size_t ldy)
{
    bert__gemm_wn(g, slot, m, X, ldx, 1, &W, beta, &Y, ldy);
}

int bert__gemm_w_part_ok(const bert_gemm_ctx *g, const bert_wmat *W)
{
    return panels_usable(g, W) && W->prec == BERT_PRECISION_FP32;
}

void bert__gemm_w_part(const bert_gemm_ctx *g, int slot, size_t m,
                       const float *X, size_t ldx, size_t nw,
                       const bert_wmat *const *W, size_t k0, size_t k1,
                       size_t c0, size_t c1, float beta, float *const *Y,
                       size_t ldy)
{
    if (m == 0 || nw == 0 || c1 <= c0)
        return;
    size_t lo[MAX_W], hi[MAX_W];
    for (size_t w = 0; w < nw; w++) {
        lo[w] = c0;
        hi[w] = c1;
    }
    job jb = {&g->ti, g->tier, W[0]->k, 0, 1.0f, beta, X, (ptrdiff_t)ldx, 1,
              NULL, 0, 0, NULL, (ptrdiff_t)ldy, 1, nw, W, Y};
    run_packed_cols(&jb, 0, m, lo, hi, k0, k1,
                    g->bufs + (size_t)slot * slot_floats());
}
