/*
 * bert-bench - time libbert's encoder, the machine's fp32 FMA peak and BLIS
 * sgemm on the model's shapes, in one run.
 *
 *   bert-bench [--model DIR | --shape NAME] [--batch N]
 *              [--seq N | --mixed MIN-MAX | --lengths L1,L2,...]
 *              [--threads N] [--reps N] [--min-time S] [--text FILE]
 *              [--vocab FILE] [--quiet-wait S] [--no-peak] [--no-blis]
 *              [--json]
 *
 * --shape writes a random-weight model of that shape (see
 * bench/random_model.h) to a temporary directory and loads it through
 * bert_model_load like any checkpoint (memory-mapped).  Inputs are
 * [CLS] w... [SEP] with the same deterministic ids as
 * ../shared/bench/ort/ort_bench.js.  The encoder runs on a packed batch
 * (bert_session_run), timed after a warm-up: median milliseconds per batch,
 * sequences/s, and GFLOP/s counting the dense layers, QK^T/PV and the
 * heads.
 *
 * --text FILE instead times the whole pipeline on the file's lines
 * (tokenize, then run, --batch lines at a time) and reports the
 * tokenizer's share of the time; with --shape it needs --vocab (a
 * vocab.txt, uncased).
 *
 * With --precision bf16 or int8 it also measures the peak of the dot
 * instruction the kernels use (vdpbf16ps, vpdpbusd): that precision's
 * ceiling on this CPU.
 *
 * --json prints one object per line (keys: seq_per_s, median_ms, gflops,
 * blis_gflops, peak_gflops, dot_peak_gflops, ...).  Exit status 0, 1 on usage errors, 2 when
 * the model or input cannot be used.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <blis.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "apps/common.h"
#include "bench/random_model.h"
#include "libbert/bert.h"
#include "libbert/gemm.h"
#include "libbert/cpu.h"

static const char usage[] =
    "usage: bert-bench [--model DIR | --shape NAME] [--batch N]\n"
    "                  [--seq N | --mixed MIN-MAX | --lengths L1,L2,...]\n"
    "                  [--threads N] [--reps N] [--min-time S]\n"
    "                  [--text FILE] [--vocab FILE] [--quiet-wait S]\n"
    "                  [--kernels auto|amx|avx512|avx2|blis]\n"
    "                  [--precision fp32|bf16|int8]\n"
    "                  [--no-peak] [--no-blis] [--json] [--help] [--version]\n";

static const char help_examples[] =
    "\nTimes bert_session_run on a model directory (--model) or on a random\n"
    "model of a named shape (--shape), and reports the median latency,\n"
    "tokens/s and GFLOP/s (--json: one JSON object).\n"
    "\nExamples:\n"
    "  bert-bench --model data/sentiment\n"
    "  bert-bench --shape bert-base --batch 8 --seq 128 --threads 2 --json\n"
    "  bert-bench --model data/sentiment --mixed 16-128 --batch 32\n"
    "  bert-bench --model data/sentiment --text reviews.txt\n"
    "  bert-bench --shape bert-base --kernels avx2    # compare tiers\n"
    "  bert-bench --shape bert-base --precision int8  # reduced precision\n"
    "\nExit status: 0 success, 1 usage error, 2 bad model or run failure.\n";

typedef struct opts {
    const char *model, *shape, *text, *vocab, *lengths;
    size_t batch, seq, mix_lo, mix_hi;
    int threads, reps, json, no_peak, no_blis;
    bert_kernels kernels;
    bert_precision precision;
    double min_time, quiet_wait;
} opts;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- machine load --------------------------------------------------------- */

/* Busy CPU seconds of the whole machine (/proc/stat) and of this process:
 * (machine - own) / wall is how many cores other processes kept busy. */
static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                   &v[8], &v[9]);
    fclose(f);
    if (n < 5)
        return 0;
    unsigned long long busy = 0;
    for (int i = 0; i < n; i++)
        if (i != 3 && i != 4) /* idle, iowait */
            busy += v[i];
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

static double own_cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_utime.tv_sec + 1e-6 * (double)r.ru_utime.tv_usec +
           (double)r.ru_stime.tv_sec + 1e-6 * (double)r.ru_stime.tv_usec;
}

static double loadavg1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* Waits (at most max_s seconds) until other processes use fewer than 0.3
 * cores, as ort_bench.js --quiet-wait does; returns their last load. */
static double wait_quiet(double max_s)
{
    double t0 = app_now(), foreign = 0;
    for (;;) {
        double b0 = machine_busy_s(), c0 = own_cpu_s(), w0 = app_now();
        struct timespec ts = {0, 500000000};
        nanosleep(&ts, NULL);
        foreign = (machine_busy_s() - b0 - (own_cpu_s() - c0)) / (app_now() - w0);
        if (foreign < 0.3 || app_now() - t0 > max_s)
            return foreign;
    }
}

/* ---- FMA peak ------------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
/* 12 independent FMA chains (latency 4 x 2 ports needs >= 8), in named
 * variables so that they stay in registers. */
#define FMA_CHAINS(T, SET1, FMA, CONS)                                       \
    T r0 = SET1(0.f), r1 = SET1(1.f), r2 = SET1(2.f), r3 = SET1(3.f);         \
    T r4 = SET1(4.f), r5 = SET1(5.f), r6 = SET1(6.f), r7 = SET1(7.f);         \
    T r8 = SET1(8.f), r9 = SET1(9.f), r10 = SET1(10.f), r11 = SET1(11.f);     \
    const T x = SET1(0.999999f), y = SET1(1e-7f);                             \
    for (long i = 0; i < iters; i++) {                                        \
        r0 = FMA(r0, x, y); r1 = FMA(r1, x, y); r2 = FMA(r2, x, y);           \
        r3 = FMA(r3, x, y); r4 = FMA(r4, x, y); r5 = FMA(r5, x, y);           \
        r6 = FMA(r6, x, y); r7 = FMA(r7, x, y); r8 = FMA(r8, x, y);           \
        r9 = FMA(r9, x, y); r10 = FMA(r10, x, y); r11 = FMA(r11, x, y);       \
        __asm__ volatile("" : "+" CONS (r0), "+" CONS (r1), "+" CONS (r2),       \
                         "+" CONS (r3), "+" CONS (r4), "+" CONS (r5),            \
                         "+" CONS (r6), "+" CONS (r7), "+" CONS (r8),            \
                         "+" CONS (r9), "+" CONS (r10), "+" CONS (r11));         \
    }                                                                         \
    T sum = r0 + r1 + r2 + r3 + r4 + r5 + r6 + r7 + r8 + r9 + r10 + r11;      \
    float out[sizeof(T) / 4];                                                 \
    memcpy(out, &sum, sizeof out);                                            \
    float s = 0;                                                              \
    for (size_t k = 0; k < sizeof(T) / 4; k++)                                \
        s += out[k];                                                          \
    return s;

__attribute__((target("avx512f"))) static float fma512(long iters)
{
    FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, "v")
}

__attribute__((target("avx2,fma"))) static float fma256(long iters)
{
    FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, "x")
}

/* Best of 10 runs of `chains` (iters steps of 12 instructions, each
 * `flops` G(FL)OP/s-counted operations) on `threads` threads, in
 * G(FL)OP/s.  A peak is the best rate the machine gives, and on a VM
 * whose host's other tenants slow it for stretches of a second or more
 * the best of 3 bursts of 35 ms was at times a third below it (152
 * against 225 GFLOP/s on the Zen 5 VM; BENCHMARKS.md): 10 bursts.  The
 * instruction loops' results are summed into a sink so that none is
 * optimised away. */
static double best_rate(int threads, float (*chains)(long), long iters,
                        double flops)
{
    double best = 0;
    volatile float sink = 0;
    for (int rep = 0; rep < 10; rep++) {
        double t0 = app_now();
        float s = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : s)
#endif
        s += chains(iters);
        double t = app_now() - t0;
        sink += s;
#ifdef _OPENMP
        int nt = threads;
#else
        int nt = 1;
#endif
        double g = (double)nt * (double)iters * 12.0 * flops / t / 1e9;
        if (g > best)
            best = g;
    }
    (void)sink;
    return best;
}
#endif

/* Best of 3 runs of an FMA loop on `threads` threads, in GFLOP/s; *width
 * gets the vector width in bits (0 when unknown). */
static double fma_peak(int threads, int *width)
{
    *width = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned f = bert__cpu_features();
    int w = f & BERT_CPU_AVX512 ? 512 : f & BERT_CPU_AVX2 ? 256 : 0;
    if (!w)
        return 0;
    *width = w;
    /* an FMA: w / 32 lanes, a multiply and an add each */
    return best_rate(threads, w == 512 ? fma512 : fma256, 20000000,
                     (double)(w / 32) * 2.0);
#else
    (void)threads;
    return 0;
#endif
}

/* ---- the reduced-precision dot instruction's peak -------------------------- */

#if defined(__x86_64__) && defined(__GNUC__)
/* 12 independent chains of one dot-product instruction, through asm so that
 * nothing but the instruction runs (intrinsics would let GCC move or copy
 * the accumulators). */
#define DOT_CHAINS(T, ZERO, INSN, CONS)                                       \
    T r0 = ZERO, r1 = ZERO, r2 = ZERO, r3 = ZERO, r4 = ZERO, r5 = ZERO;       \
    T r6 = ZERO, r7 = ZERO, r8 = ZERO, r9 = ZERO, r10 = ZERO, r11 = ZERO;     \
    T x = ZERO, y = ZERO;                                                     \
    __asm__ volatile("" : "+" CONS(x), "+" CONS(y));                          \
    for (long i = 0; i < iters; i++) {                                        \
        __asm__ volatile(INSN " %[x], %[y], %[a0]\n\t"                        \
                         INSN " %[x], %[y], %[a1]\n\t"                        \
                         INSN " %[x], %[y], %[a2]\n\t"                        \
                         INSN " %[x], %[y], %[a3]\n\t"                        \
                         INSN " %[x], %[y], %[a4]\n\t"                        \
                         INSN " %[x], %[y], %[a5]\n\t"                        \
                         INSN " %[x], %[y], %[a6]\n\t"                        \
                         INSN " %[x], %[y], %[a7]\n\t"                        \
                         INSN " %[x], %[y], %[a8]\n\t"                        \
                         INSN " %[x], %[y], %[a9]\n\t"                        \
                         INSN " %[x], %[y], %[a10]\n\t"                       \
                         INSN " %[x], %[y], %[a11]"                           \
                         : [a0] "+" CONS(r0), [a1] "+" CONS(r1),              \
                           [a2] "+" CONS(r2), [a3] "+" CONS(r3),              \
                           [a4] "+" CONS(r4), [a5] "+" CONS(r5),              \
                           [a6] "+" CONS(r6), [a7] "+" CONS(r7),              \
                           [a8] "+" CONS(r8), [a9] "+" CONS(r9),              \
                           [a10] "+" CONS(r10), [a11] "+" CONS(r11)           \
                         : [x] CONS(x), [y] CONS(y));                         \
    }                                                                         \
    __asm__ volatile("" ::CONS(r0), CONS(r1), CONS(r2), CONS(r3), CONS(r4),   \
                     CONS(r5), CONS(r6), CONS(r7), CONS(r8), CONS(r9),        \
                     CONS(r10), CONS(r11));                                    \
    return 0.0f;

__attribute__((target("avx512f,avx512bf16"))) static float dot_bf16(long iters)
{
    DOT_CHAINS(__m512, _mm512_setzero_ps(), "vdpbf16ps", "v")
}

__attribute__((target("avx512f,avx512vnni"))) static float dot_vnni512(long iters)
{
    DOT_CHAINS(__m512i, _mm512_setzero_si512(), "vpdpbusd", "v")
}

__attribute__((target("avx2,avxvnni"))) static float dot_vnni256(long iters)
{
    DOT_CHAINS(__m256i, _mm256_setzero_si256(), "%{vex%} vpdpbusd", "x")
}

/* The widened int8 kernel's pair (AVX2 without VNNI): six chains of
 * vpmaddwd into a temporary and vpaddd into the sum, 12 instructions. */
#define MADD_PAIR(i)                                                          \
    "vpmaddwd %[x], %[y], %[t" #i "]\n\t"                                     \
    "vpaddd %[t" #i "], %[a" #i "], %[a" #i "]\n\t"
__attribute__((target("avx2"))) static float dot_madd256(long iters)
{
    __m256i r0 = _mm256_setzero_si256(), r1 = r0, r2 = r0, r3 = r0, r4 = r0,
            r5 = r0, x = r0, y = r0, t0, t1, t2, t3, t4, t5;
    __asm__ volatile("" : "+x"(x), "+x"(y));
    for (long i = 0; i < iters; i++)
        __asm__ volatile(MADD_PAIR(0) MADD_PAIR(1) MADD_PAIR(2) MADD_PAIR(3)
                             MADD_PAIR(4) MADD_PAIR(5)
                         : [a0] "+x"(r0), [a1] "+x"(r1), [a2] "+x"(r2),
                           [a3] "+x"(r3), [a4] "+x"(r4), [a5] "+x"(r5),
                           [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2),
                           [t3] "=&x"(t3), [t4] "=&x"(t4), [t5] "=&x"(t5)
                         : [x] "x"(x), [y] "x"(y));
    __asm__ volatile("" ::"x"(r0), "x"(r1), "x"(r2), "x"(r3), "x"(r4),
                     "x"(r5));
    return 0.0f;
}
#endif

/* The peak of the instruction that the reduced-precision kernels of this
 * tier multiply with (vdpbf16ps for bf16, vpdpbusd for int8, or vpmaddwd
 * with its vpaddd where the avx2 tier widens int8 for want of VNNI), in
 * G(FL)OP/s counting a multiply-add as 2 as for float32; *insn names it.
 * 0 where there is none to measure (fp32, the amx and blis tiers).  bf16's bound on
 * its speed against fp32 is this over the FMA peak: on the Xeon VM of
 * BENCHMARKS.md vdpbf16ps issues at half the FMA's rate. */
static double dot_peak(int threads, bert_precision prec, bert_kernels tier,
                       const char **insn)
{
    *insn = "";
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned f = bert__cpu_features();
    /* 1 vdpbf16ps zmm, 2 vpdpbusd zmm, 3 vpdpbusd ymm, 4 vpmaddwd ymm */
    int kind = 0;
    if (prec == BERT_PRECISION_BF16 && tier == BERT_KERNELS_AVX512 &&
        (f & BERT_CPU_AVX512_BF16))
        kind = 1;
    else if (prec == BERT_PRECISION_INT8 && tier == BERT_KERNELS_AVX512 &&
             (f & BERT_CPU_AVX512_VNNI))
        kind = 2;
    else if (prec == BERT_PRECISION_INT8 && tier == BERT_KERNELS_AVX2 &&
             (f & BERT_CPU_AVX_VNNI))
        kind = 3;
    else if (prec == BERT_PRECISION_INT8 && tier == BERT_KERNELS_AVX2)
        kind = 4;
    if (!kind)
        return 0;
    /* multiply-adds per instruction: 16 lanes x 2 bf16 pairs; 16 or 8
     * lanes x 4 byte pairs; 8 lanes x 2 int16 pairs over vpmaddwd and
     * its vpaddd, 8 an instruction */
    static const struct {
        const char *name;
        float (*chains)(long);
        double macs;
    } dot[4] = {{"vdpbf16ps zmm", dot_bf16, 32},
                {"vpdpbusd zmm", dot_vnni512, 64},
                {"vpdpbusd ymm", dot_vnni256, 32},
                {"vpmaddwd+vpaddd ymm", dot_madd256, 8}};
    *insn = dot[kind - 1].name;
    return best_rate(threads, dot[kind - 1].chains, 10000000,
                     dot[kind - 1].macs * 2.0);
#else
    (void)threads, (void)prec, (void)tier;
    return 0;
#endif
}

/* ---- the product layer alone on the model's shapes ----------------------- */

/* The dense products of one encoder layer on T packed tokens, each as
 * libbert calls them: Y (T,out) = X (T,in) W^T with W (out,in) row-major,
 * through the product layer with the given tier (weights packed once, as a
 * model is, where the tier is libbert's).  Returns GFLOP/s (total flops /
 * sum of per-shape median times), 0 when the tier is not available. */
static double layer_gflops(size_t T, size_t H, size_t I, int threads,
                           bert_kernels tier)
{
    const size_t shp[6][2] = {{H, H}, {H, H}, {H, H}, {H, H}, {I, H}, {H, I}};
    size_t maxw = I * H, maxx = T * (I > H ? I : H);
    float *W = malloc(maxw * sizeof *W), *X = malloc(maxx * sizeof *X),
          *Y = malloc(maxx * sizeof *Y);
    bert_gemm_ctx *g = bert__gemm_ctx_create(threads, tier, NULL, 0);
    if (!W || !X || !Y || !g) {
        free(W), free(X), free(Y);
        bert__gemm_ctx_free(g);
        return 0;
    }
    for (size_t i = 0; i < maxw; i++)
        W[i] = (float)((i * 7919) % 1000) * 1e-4f - 0.05f;
    for (size_t i = 0; i < maxx; i++)
        X[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
    double flops = 0, tsum = 0;
    for (int s = 0; s < 6; s++) {
        size_t out = shp[s][0], in = shp[s][1];
        bert_wmat wm = {W, NULL, out, in, BERT_PRECISION_FP32};
        if (tier != BERT_KERNELS_BLIS && bert__wmat_pack(&wm, threads) != 0)
            break;
        double t[7];
        int reps = 7;
        for (int r = -1; r < reps; r++) {
            double t0 = app_now();
            bert__gemm_w(g, -1, T, X, in, &wm, 0.0f, Y, out);
            if (r >= 0)
                t[r] = app_now() - t0;
        }
        bert__wmat_free(&wm);
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        flops += 2.0 * (double)T * (double)out * (double)in;
        tsum += t[reps / 2];
    }
    free(W), free(X), free(Y);
    bert__gemm_ctx_free(g);
    return tsum > 0 ? flops / tsum / 1e9 : 0;
}

/* ---- inputs --------------------------------------------------------------- */

/* [CLS] w... [SEP], w depending on (b, t), every id below the vocabulary
 * size V.  For V >= 30000 (BERT's 30522) the ids of ort_bench.js: w in
 * [1000, 30000), [CLS] 101, [SEP] 102.  A smaller vocabulary (the bundled
 * models have 12000) spreads w over [V/10, V) and takes 101/102 when they
 * exist, else the last two ids. */
static void fill_ids(int32_t *ids, size_t b, size_t n, size_t V)
{
    size_t lo = V >= 30000 ? 1000 : V / 10, span = V >= 30000 ? 29000 : V - lo;
    int32_t cls = V > 102 ? 101 : (int32_t)(V >= 2 ? V - 2 : 0);
    int32_t sep = V > 102 ? 102 : (int32_t)(V - 1);
    for (size_t t = 0; t < n; t++) {
        int32_t id = (int32_t)(lo + (b * 7919 + t * 104729) % span);
        if (t == 0)
            id = cls;
        if (t == n - 1)
            id = sep;
        ids[t] = id;
    }
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0 || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Lengths of the batch: --lengths list (its count is the batch), --mixed
 * uniform draws from a fixed-seed LCG, or --seq for all. */
static size_t *make_lengths(const opts *o, size_t *batch)
{
    size_t n = o->batch;
    if (o->lengths) {
        n = 1;
        for (const char *p = o->lengths; *p; p++)
            n += *p == ',';
    }
    size_t *len = calloc(n, sizeof *len);
    if (!len)
        return NULL;
    if (o->lengths) {
        const char *p = o->lengths;
        for (size_t i = 0; i < n; i++) {
            char *end;
            unsigned long v = strtoul(p, &end, 10);
            if (end == p || v == 0 || (*end && *end != ',')) {
                free(len);
                return NULL;
            }
            len[i] = v;
            p = *end ? end + 1 : end;
        }
    } else if (o->mix_lo) {
        uint64_t s = 12345;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            len[i] = o->mix_lo + (size_t)((s >> 33) % (o->mix_hi - o->mix_lo + 1));
        }
    } else {
        for (size_t i = 0; i < n; i++)
            len[i] = o->seq;
    }
    *batch = n;
    return len;
}

/* ---- model ---------------------------------------------------------------- */

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    int rc = -1;
    if (a && b) {
        char buf[65536];
        size_t k;
        rc = 0;
        while ((k = fread(buf, 1, sizeof buf, a)) > 0)
            if (fwrite(buf, 1, k, b) != k)
                rc = -1;
        if (ferror(a))
            rc = -1;
    }
    if (a)
        fclose(a);
    if (b && fclose(b) != 0)
        rc = -1;
    return rc;
}

/* Writes the random model for o->shape into a fresh temporary directory,
 * loads it (mapped), then removes the files (the mapping stays valid). */
static int load_shape(const opts *o, const bench_shape *sh, bert_model **m,
                      double *write_s)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200], err[512];
    snprintf(dir, sizeof dir, "%s/bert-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bert-bench: mkdtemp %s: %s\n", dir, strerror(errno));
        return -1;
    }
    double t0 = app_now();
    int rc = bench_write_random_model(dir, sh, 1, err, sizeof err);
    *write_s = app_now() - t0;
    if (rc)
        fprintf(stderr, "bert-bench: %s\n", err);
    if (!rc && o->vocab) {
        snprintf(path, sizeof path, "%s/vocab.txt", dir);
        if ((rc = copy_file(o->vocab, path)))
            fprintf(stderr, "bert-bench: cannot copy %s\n", o->vocab);
    }
    if (!rc) {
        bert_model_params mp = bert_model_default_params();
        mp.kernels = o->kernels;
        mp.precision = o->precision;
        mp.load_tokenizer = o->vocab != NULL;
        bert_error e;
        if ((rc = bert_model_load(dir, &mp, m, &e)))
            fprintf(stderr, "bert-bench: %s\n", e.text);
    }
    static const char *files[] = {"config.json", "model.safetensors", "vocab.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return rc ? -1 : 0;
}

/* ---- main ----------------------------------------------------------------- */

typedef struct result {
    size_t batch, tokens, maxlen, iters;
    double median_ms, min_ms, cpu_median_ms, seq_per_s, gflops;
    double foreign, foreign_before;
} result;

/* Times bert_session_run on the batch: warm-up (>= 1 run, >= 0.5 s), then
 * o->reps runs, or >= 5 runs and >= min_time seconds (at most 1000). */
static int time_runs(const opts *o, bert_session *s, const bert_input *in,
                     size_t batch, const bert_outputs *out, result *r)
{
    if (o->quiet_wait > 0)
        r->foreign_before = wait_quiet(o->quiet_wait);
    double w0 = app_now();
    for (int i = 0; i < 1 || app_now() - w0 < 0.5; i++) {
        bert_error err;
        int rc = bert_session_run(s, in, batch, out, &err);
        if (rc) {
            fprintf(stderr, "bert-bench: run: %s: %s\n", bert_strerror(rc),
                    err.text);
            return -1;
        }
    }
    size_t cap = o->reps > 0 ? (size_t)o->reps : 1000, n = 0;
    double *t = malloc(cap * sizeof *t);
    if (!t)
        return -1;
    double mb0 = machine_busy_s(), oc0 = own_cpu_s(), s0 = app_now();
    double *cpu = malloc(cap * sizeof *cpu);
    if (!cpu) {
        free(t);
        return -1;
    }
    while (n < cap && (o->reps > 0 || n < 5 || app_now() - s0 < o->min_time)) {
        double c = own_cpu_s(), a = app_now();
        bert_session_run(s, in, batch, out, NULL);
        t[n] = app_now() - a;
        cpu[n++] = own_cpu_s() - c;
    }
    double wall = app_now() - s0;
    r->foreign = (machine_busy_s() - mb0 - (own_cpu_s() - oc0)) / wall;
    qsort(t, n, sizeof *t, cmp_double);
    r->iters = n;
    r->median_ms = 1e3 * t[n / 2];
    r->min_ms = 1e3 * t[0];
    qsort(cpu, n, sizeof *cpu, cmp_double);
    r->cpu_median_ms = 1e3 * cpu[n / 2];
    free(t);
    free(cpu);
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.batch = 1, .seq = 128, .threads = 1, .min_time = 2.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t z;
        if (!strcmp(a, "--json")) { o.json = 1; continue; }
        if (!strcmp(a, "--no-peak")) { o.no_peak = 1; continue; }
        if (!strcmp(a, "--no-blis")) { o.no_blis = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            fputs(help_examples, stdout);
            return EXIT_OK;
        }
        if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("bert-bench (libbert) %s\n", BERT_VERSION_STRING);
            return EXIT_OK;
        }
        if (!v) {
            fprintf(stderr, "bert-bench: %s needs a value\n%s", a, usage);
            return EXIT_USAGE;
        }
        i++;
        if (!strcmp(a, "--model")) o.model = v;
        else if (!strcmp(a, "--shape")) o.shape = v;
        else if (!strcmp(a, "--text")) o.text = v;
        else if (!strcmp(a, "--vocab")) o.vocab = v;
        else if (!strcmp(a, "--lengths")) o.lengths = v;
        else if (!strcmp(a, "--kernels") && bert__kernels_parse(v) >= 0)
            o.kernels = (bert_kernels)bert__kernels_parse(v);
        else if (!strcmp(a, "--precision") && bert_precision_from_name(v) >= 0)
            o.precision = (bert_precision)bert_precision_from_name(v);
        else if (!strcmp(a, "--batch") && !parse_size(v, &z)) o.batch = z;
        else if (!strcmp(a, "--seq") && !parse_size(v, &z)) o.seq = z;
        else if (!strcmp(a, "--threads") && !parse_size(v, &z) && z <= 1024)
            o.threads = (int)z;
        else if (!strcmp(a, "--reps") && !parse_size(v, &z) && z <= 100000)
            o.reps = (int)z;
        else if (!strcmp(a, "--min-time") && atof(v) > 0) o.min_time = atof(v);
        else if (!strcmp(a, "--quiet-wait") && atof(v) >= 0) o.quiet_wait = atof(v);
        else if (!strcmp(a, "--mixed")) {
            char *end;
            unsigned long lo = strtoul(v, &end, 10), hi = 0;
            if (*end == '-')
                hi = strtoul(end + 1, &end, 10);
            if (*end || lo == 0 || hi < lo) {
                fprintf(stderr, "bert-bench: --mixed wants MIN-MAX\n");
                return EXIT_USAGE;
            }
            o.mix_lo = lo;
            o.mix_hi = hi;
        } else {
            fprintf(stderr, "bert-bench: bad option %s %s\n%s", a, v, usage);
            return EXIT_USAGE;
        }
    }
    if (!o.model == !o.shape) {
        fprintf(stderr, "bert-bench: give exactly one of --model or --shape\n%s",
                usage);
        return EXIT_USAGE;
    }
    const bench_shape *sh = NULL;
    bench_shape model_shape;
    if (o.shape && !(sh = bench_shape_find(o.shape))) {
        fprintf(stderr, "bert-bench: unknown shape %s (%s)\n", o.shape,
                bench_shape_names());
        return EXIT_USAGE;
    }
    if (o.text && o.shape && !o.vocab) {
        fprintf(stderr, "bert-bench: --text with --shape needs --vocab FILE\n");
        return EXIT_USAGE;
    }

    bert_model *m = NULL;
    double write_s = 0, t0 = app_now();
    if (sh) {
        if (load_shape(&o, sh, &m, &write_s))
            return EXIT_BADINPUT;
    } else {
        bert_error e;
        bert_model_params mp = bert_model_default_params();
        mp.load_tokenizer = o.text != NULL;
        mp.kernels = o.kernels;
        mp.precision = o.precision;
        if (bert_model_load(o.model, &mp, &m, &e)) {
            fprintf(stderr, "bert-bench: %s\n", e.text);
            return EXIT_BADINPUT;
        }
    }
    double load_s = app_now() - t0 - write_s;
    const bert_config *cfg = bert_model_config(m);
    if (!sh) {
        model_shape = (bench_shape){o.model, cfg->is_distilbert, (int)cfg->layers,
                                    (int)cfg->hidden, (int)cfg->heads,
                                    (int)cfg->intermediate, cfg->vocab_size,
                                    cfg->max_position, cfg->num_labels};
        sh = &model_shape;
    }
    const char *name = o.shape ? o.shape : o.model;

    bert_session_params sp = bert_session_default_params();
    sp.n_threads = o.threads;
    sp.kernels = o.kernels;
    bert_session *s = NULL;
    bert_error e;
    if (bert_session_create(m, &sp, &s, &e)) {
        fprintf(stderr, "bert-bench: %s\n", e.text);
        bert_model_free(m);
        return EXIT_BADINPUT;
    }
    size_t C = cfg->num_labels ? cfg->num_labels : 1;
    size_t maxlen = bert_model_max_length(m);
    int status = EXIT_OK;
    result r = {0};
    r.foreign_before = -1;
    double tok_share = -1, tok_s = 0, run_s = 0, text_mb = 0;
    size_t *len = NULL;
    bert_input *in = NULL;
    int32_t *ids = NULL;
    float *logits = NULL;

    if (!o.text) {
        size_t batch;
        len = make_lengths(&o, &batch);
        if (!len) {
            fprintf(stderr, "bert-bench: bad --lengths\n");
            status = EXIT_USAGE;
            goto done;
        }
        size_t T = 0, mx = 0;
        for (size_t b = 0; b < batch; b++) {
            if (len[b] > maxlen) {
                fprintf(stderr, "bert-bench: length %zu > model maximum %zu\n",
                        len[b], maxlen);
                status = EXIT_USAGE;
                goto done;
            }
            T += len[b];
            mx = len[b] > mx ? len[b] : mx;
        }
        in = calloc(batch, sizeof *in);
        ids = malloc(T * sizeof *ids);
        logits = malloc(batch * C * sizeof *logits);
        if (!in || !ids || !logits) {
            fprintf(stderr, "bert-bench: out of memory\n");
            status = EXIT_BADINPUT;
            goto done;
        }
        double flops = 0;
        for (size_t b = 0, off = 0; b < batch; off += len[b], b++) {
            fill_ids(ids + off, b, len[b], cfg->vocab_size);
            in[b].ids = ids + off;
            in[b].n = len[b];
            /* Counted as run: sequence logits alone take the [CLS]-only
             * last layer (bert_session_run). */
            flops += cfg->task == BERT_TASK_SEQUENCE ? bench_flops_cls(sh, len[b])
                                                     : bench_flops(sh, len[b]);
        }
        bert_outputs out = {.logits = cfg->num_labels ? logits : NULL};
        if (time_runs(&o, s, in, batch, &out, &r)) {
            status = EXIT_BADINPUT;
            goto done;
        }
        r.batch = batch;
        r.tokens = T;
        r.maxlen = mx;
        r.seq_per_s = (double)batch / (r.median_ms / 1e3);
        r.gflops = flops / (r.median_ms / 1e3) / 1e9;
    } else {
        /* Whole pipeline over the file, --batch lines at a time. */
        const bert_tokenizer *tok = bert_model_tokenizer(m);
        FILE *f = fopen(o.text, "rb");
        if (!f || !tok) {
            fprintf(stderr, "bert-bench: %s: %s\n", o.text,
                    f ? "model has no tokenizer" : strerror(errno));
            if (f)
                fclose(f);
            status = EXIT_BADINPUT;
            goto done;
        }
        size_t nb = o.batch;
        bert_encoding **enc = calloc(nb, sizeof *enc);
        in = calloc(nb, sizeof *in);
        logits = malloc(nb * C * sizeof *logits);
        char *line = NULL;
        size_t cap = 0;
        int ok = enc && in && logits;
        for (size_t i = 0; ok && i < nb; i++)
            ok = (enc[i] = bert_encoding_create()) != NULL;
        bert_encode_params ep = bert_encode_default_params();
        ep.max_length = maxlen;
        bert_outputs out = {.logits = cfg->num_labels ? logits : NULL};
        double flops = 0, mb0 = machine_busy_s(), oc0 = own_cpu_s(), s0 = app_now();
        size_t lines = 0, toks = 0;
        long n;
        int eof = 0;
        while (ok && !eof) {
            size_t k = 0;
            double a = app_now();
            while (k < nb) {
                if ((n = app_read_line(f, &line, &cap)) < 0) {
                    eof = 1;
                    break;
                }
                text_mb += (double)(n + 1) / 1e6;
                if (bert_tokenizer_encode(tok, line, (size_t)n, NULL, 0, &ep,
                                          enc[k], &e))
                    continue; /* invalid UTF-8: skipped */
                in[k].ids = enc[k]->ids;
                in[k].type_ids = enc[k]->type_ids;
                in[k].n = enc[k]->n;
                toks += enc[k]->n;
                flops += cfg->task == BERT_TASK_SEQUENCE
                             ? bench_flops_cls(sh, enc[k]->n)
                             : bench_flops(sh, enc[k]->n);
                k++;
            }
            double b = app_now();
            tok_s += b - a;
            bert_error err;
            if (k && bert_session_run(s, in, k, &out, &err)) {
                fprintf(stderr, "bert-bench: run: %s\n", err.text);
                ok = 0;
            }
            run_s += app_now() - b;
            lines += k;
        }
        double wall = app_now() - s0;
        r.foreign = (machine_busy_s() - mb0 - (own_cpu_s() - oc0)) / wall;
        fclose(f);
        free(line);
        for (size_t i = 0; enc && i < nb; i++)
            bert_encoding_free(enc[i]);
        free(enc);
        if (!ok) {
            status = EXIT_BADINPUT;
            goto done;
        }
        r.batch = lines;
        r.tokens = toks;
        r.iters = 1;
        r.median_ms = 1e3 * (tok_s + run_s);
        r.seq_per_s = (double)lines / (tok_s + run_s);
        r.gflops = flops / run_s / 1e9;
        tok_share = tok_s / (tok_s + run_s);
    }

    /* Peak and BLIS after the model run, so they see the same machine. */
    int width = 0;
    double peak = o.no_peak ? 0 : fma_peak(o.threads, &width);
    double peak1 = o.no_peak ? 0 : o.threads == 1 ? peak : fma_peak(1, &width);
    double blis = 0, own = 0;
    int packed = 0;
    const char *kernels = bert_session_kernels(s, &packed);
    bert_kernels tier = (bert_kernels)bert__kernels_parse(kernels);
    const char *dot_insn = "";
    double dot = o.no_peak ? 0
                           : dot_peak(o.threads, bert_model_precision(m),
                                      tier, &dot_insn);
    if (!o.no_blis) {
        size_t T = o.text ? r.tokens / (r.batch ? r.batch : 1) * o.batch : r.tokens;
        if (T == 0)
            T = 1;
        blis = layer_gflops(T, (size_t)sh->hidden, (size_t)sh->inter,
                            o.threads, BERT_KERNELS_BLIS);
        if (tier != BERT_KERNELS_BLIS && (int)tier >= 0)
            own = layer_gflops(T, (size_t)sh->hidden, (size_t)sh->inter,
                               o.threads, tier);
    }
    double load = loadavg1();
    char feats[128];
    bert__cpu_feature_names(bert__cpu_features(), feats, sizeof feats);
    if (o.json) {
        printf("{\"engine\":\"libbert\",\"model\":\"%s\",\"threads\":%d,"
               "\"batch\":%zu,\"seq\":%zu,\"tokens\":%zu,\"iters\":%zu,"
               "\"median_ms\":%.3f,\"min_ms\":%.3f,\"cpu_median_ms\":%.3f,"
               "\"seq_per_s\":%.2f,"
               "\"gflops\":%.1f,\"peak_gflops\":%.1f,\"peak_1t_gflops\":%.1f,"
               "\"peak_vector_bits\":%d,\"pct_of_peak\":%.1f,"
               "\"blis_gflops\":%.1f,\"kernels_gflops\":%.1f,"
               "\"load_s\":%.3f,\"loadavg1\":%.2f,\"foreign_cores\":%.2f,"
               "\"foreign_before\":%.2f,\"gemm_kernels\":\"%s\","
               "\"packed\":%d,\"precision\":\"%s\",\"cpu_features\":\"%s\","
               "\"dot_peak_gflops\":%.1f,\"dot_insn\":\"%s\"",
               name, o.threads, r.batch, r.maxlen, r.tokens, r.iters,
               r.median_ms, r.min_ms, r.cpu_median_ms, r.seq_per_s, r.gflops,
               peak, peak1, width,
               peak > 0 ? 100.0 * r.gflops / peak : 0.0, blis, own, load_s,
               load, r.foreign, r.foreign_before, kernels, packed,
               bert_precision_name(bert_model_precision(m)), feats, dot,
               dot_insn);
        if (o.text)
            printf(",\"text_mb\":%.3f,\"tokenize_s\":%.3f,\"run_s\":%.3f,"
                   "\"tokenizer_share\":%.4f",
                   text_mb, tok_s, run_s, tok_share);
        printf("}\n");
    } else {
        printf("model        %s (L=%d H=%d heads=%d I=%d), loaded in %.0f ms\n",
               name, sh->layers, sh->hidden, sh->heads, sh->inter, 1e3 * load_s);
        printf("threads      %d, kernels %s (%s %s weights; cpu: %s)\n",
               o.threads, kernels, packed ? "packed" : "unpacked",
               bert_precision_name(bert_model_precision(m)), feats);
        if (o.text) {
            printf("text         %s: %zu lines, %.2f MB, %zu tokens\n", o.text,
                   r.batch, text_mb, r.tokens);
            printf("pipeline     %.1f seq/s, %.3f s total (tokenize %.3f s, "
                   "encoder %.3f s)\n",
                   r.seq_per_s, tok_s + run_s, tok_s, run_s);
            printf("tokenizer    %.1f%% of the time, %.2f MB/s\n",
                   100 * tok_share, tok_s > 0 ? text_mb / tok_s : 0.0);
            printf("encoder      %.1f GFLOP/s\n", r.gflops);
        } else {
            printf("batch        %zu sequences, %zu tokens (longest %zu)\n",
                   r.batch, r.tokens, r.maxlen);
            printf("time         median %.3f ms per batch (min %.3f, %zu runs; "
                   "CPU time median %.3f ms)\n",
                   r.median_ms, r.min_ms, r.iters, r.cpu_median_ms);
            printf("throughput   %.2f seq/s, %.1f GFLOP/s\n", r.seq_per_s,
                   r.gflops);
        }
        if (peak > 0)
            printf("fma peak     %.1f GFLOP/s on %d thread(s) (%d-bit FMA loop; "
                   "1 thread %.1f): encoder at %.1f%%\n",
                   peak, o.threads, width, peak1, 100.0 * r.gflops / peak);
        if (dot > 0)
            printf("dot peak     %.1f G(FL)OP/s on %d thread(s) (%s loop, a "
                   "multiply-add as 2%s%.2fx the FMA peak): encoder at "
                   "%.1f%%\n",
                   dot, o.threads, dot_insn, peak > 0 ? "; " : "",
                   peak > 0 ? dot / peak : 0.0, 100.0 * r.gflops / dot);
        if (!o.no_blis)
            printf("one layer    %.1f GFLOP/s BLIS sgemm, %.1f %s kernels "
                   "(packed) on its dense shapes\n",
                   blis, own, kernels);
        printf("machine      load average %.2f, other processes used %.2f "
               "cores meanwhile\n",
               load, r.foreign);
    }
done:
    free(len);
    free(in);
    free(ids);
    free(logits);
    bert_session_free(s);
    bert_model_free(m);
    return status;
}
