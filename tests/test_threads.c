/* test_threads.c - the encoder's ways of sharing a run among threads
 * against one thread, on random BERT models (bench/random_model.c):
 *  - tensor-parallel layers (each thread owns heads and feed-forward
 *    columns; from 512 hidden, up to 256 rows, 2 threads);
 *  - the row split (64 rows a thread and more);
 *  - products split by columns (fewer rows, or hidden below 512).
 * Hidden states, pooler output and logits must agree with one thread's to
 * within float rounding (the tensor-parallel sums of partial products round
 * differently), on every tier with packed weights this CPU runs and with 2,
 * 3 and 4 threads.  Needs no shared data. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/random_model.h"
#include "libbert/bert.h"
#include "tests/testutil.h"

/* Hidden states are LayerNorm outputs of magnitude 1: rounding of sums of
 * 512 to 1,024 terms of 0.02-scaled weights stays far below this. */
#define TOL 2e-5

static char dir_wide[64], dir_narrow[64];

static int make_model(char *dir, size_t n, int hidden, int heads, int inter)
{
    bench_shape sh = {"test", 0, 2, hidden, heads, inter, 1000, 300, 3};
    char err[256];
    snprintf(dir, n, "/tmp/libbert-threads-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    if (bench_write_random_model(dir, &sh, 7, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static void remove_model(const char *dir)
{
    char p[128];
    if (!dir[0])
        return;
    snprintf(p, sizeof p, "%s/config.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    unlink(p);
    rmdir(dir);
}

static int setup(void)
{
    if (make_model(dir_wide, sizeof dir_wide, 512, 8, 1024) ||
        make_model(dir_narrow, sizeof dir_narrow, 256, 4, 512))
        return -1;
    return 0;
}

static int teardown(void)
{
    remove_model(dir_wide);
    remove_model(dir_narrow);
    return 0;
}

typedef struct run_out {
    float *hidden, *pooler, *logits;
} run_out;

/* Runs `batch` sequences of the given lengths (deterministic ids) on a
 * session of tier k created with `created` threads and then set to
 * `threads`, into o (allocated here). */
static int run_set(const bert_model *m, bert_kernels k, int created,
                   int threads, const size_t *len, size_t batch, run_out *o)
{
    bert_session_params sp = bert_session_default_params();
    sp.n_threads = created;
    sp.kernels = k;
    bert_session *s = NULL;
    bert_error err;
    if (bert_session_create(m, &sp, &s, &err) != BERT_OK)
        return -1;
    if (threads != created &&
        bert_session_set_threads(s, threads, &err) != BERT_OK) {
        bert_session_free(s);
        return -1;
    }
    size_t T = 0, H = bert_model_config(m)->hidden;
    bert_input in[8];
    int32_t *ids[8];
    for (size_t b = 0; b < batch; b++) {
        ids[b] = malloc(len[b] * sizeof **ids);
        for (size_t t = 0; t < len[b]; t++)
            ids[b][t] = (int32_t)((b * 7919 + t * 104729) % 1000);
        in[b] = (bert_input){ids[b], NULL, len[b]};
        T += len[b];
    }
    o->hidden = malloc(T * H * sizeof(float));
    o->pooler = malloc(batch * H * sizeof(float));
    o->logits = malloc(batch * 3 * sizeof(float));
    bert_outputs out = {o->logits, o->pooler, o->hidden};
    int rc = bert_session_run(s, in, batch, &out, &err);
    for (size_t b = 0; b < batch; b++)
        free(ids[b]);
    bert_session_free(s);
    return rc == BERT_OK ? 0 : -1;
}

static int run(const bert_model *m, bert_kernels k, int threads,
               const size_t *len, size_t batch, run_out *o)
{
    return run_set(m, k, threads, threads, len, batch, o);
}

static double maxdiff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= d))
            d = isnan(e) ? INFINITY : e;
    }
    return d;
}

static void free_out(run_out *o)
{
    free(o->hidden), free(o->pooler), free(o->logits);
}

/* The random model in dir (no vocabulary), or NULL with the error shown. */
static bert_model *load(const char *dir)
{
    bert_model *m = NULL;
    bert_error err;
    bert_model_params mp = bert_model_default_params();
    mp.load_tokenizer = 0;
    if (bert_model_load(dir, &mp, &m, &err) != BERT_OK) {
        printf("\n  %s: %s", dir, err.text);
        return NULL;
    }
    return m;
}

static void check_model(const char *dir, const char *what, int exact)
{
    static const size_t lens[][4] = {
        {130},        /* one sentence: tensor-parallel at 512 hidden */
        {5, 60, 100}, /* a small packed batch */
        {40},         /* few rows */
        {200, 200},   /* 400 rows: the row split on 2 threads */
        {300},        /* one long sentence: its scores taken in chunks of
                         query rows, of other sizes on each thread count */
    };
    static const size_t nb[] = {1, 3, 1, 2, 1};
    static const bert_kernels tiers[] = {BERT_KERNELS_AMX, BERT_KERNELS_AVX512,
                                         BERT_KERNELS_AVX2};
    static const char *names[] = {"amx", "avx512", "avx2"};
    bert_model *m = load(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    size_t H = bert_model_config(m)->hidden;
    for (size_t ti = 0; ti < sizeof tiers / sizeof *tiers; ti++) {
        if (!bert_kernels_supported(tiers[ti])) {
            printf("\n  %s: tier %s not supported on this CPU: skipped",
                   what, names[ti]);
            continue;
        }
        for (size_t c = 0; c < sizeof nb / sizeof *nb; c++) {
            run_out one, par;
            size_t T = 0;
            for (size_t b = 0; b < nb[c]; b++)
                T += lens[c][b];
            CU_ASSERT_EQUAL_FATAL(run(m, tiers[ti], 1, lens[c], nb[c], &one),
                                  0);
            for (int threads = 2; threads <= 4; threads++) {
                CU_ASSERT_EQUAL_FATAL(
                    run(m, tiers[ti], threads, lens[c], nb[c], &par), 0);
                double dh = maxdiff(one.hidden, par.hidden, T * H);
                double dp = maxdiff(one.pooler, par.pooler, nb[c] * H);
                double dl = maxdiff(one.logits, par.logits, nb[c] * 3);
                printf("\n  %s %s, %zu rows, %d threads: hidden %.3g "
                       "pooler %.3g logits %.3g",
                       what, names[ti], T, threads, dh, dp, dl);
                CU_ASSERT(dh <= TOL);
                CU_ASSERT(dp <= TOL);
                CU_ASSERT(dl <= TOL);
                /* The row and column splits compute every row as one
                 * thread does, bit for bit: all runs of the narrow model,
                 * and where the tensor-parallel layers do not run. */
                if (exact || T > 256 || threads > 2)
                    CU_ASSERT(dh == 0 && dp == 0 && dl == 0);
                free_out(&par);
            }
            free_out(&one);
        }
    }
    bert_model_free(m);
}

/* A 2-thread session run from inside the caller's own parallel region:
 * OpenMP gives the nested regions one thread, and every split (the
 * tensor-parallel layers, the row split, the products' column split, the
 * pooler's and classifier's) must then do all the work on it: one
 * thread's bits. */
static void test_nested(void)
{
#ifdef _OPENMP
    static const size_t lens[2] = {130, 40};
    const char *dirs[2] = {dir_wide, dir_narrow};
    for (int d = 0; d < 2; d++) {
        bert_model *m = load(dirs[d]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        size_t H = bert_model_config(m)->hidden;
        for (int c = 0; c < 2; c++) {
            run_out one, nested = {NULL, NULL, NULL};
            CU_ASSERT_EQUAL_FATAL(
                run(m, BERT_KERNELS_AUTO, 1, &lens[c], 1, &one), 0);
            int rc = -1;
#pragma omp parallel num_threads(2)
            {
#pragma omp master
                rc = run(m, BERT_KERNELS_AUTO, 2, &lens[c], 1, &nested);
            }
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            double dh = maxdiff(one.hidden, nested.hidden, lens[c] * H);
            double dp = maxdiff(one.pooler, nested.pooler, H);
            double dl = maxdiff(one.logits, nested.logits, 3);
            printf("\n  nested 2-thread session, hidden %zu, %zu rows: hidden "
                   "%.3g pooler %.3g logits %.3g", H, lens[c], dh, dp, dl);
            CU_ASSERT(dh == 0 && dp == 0 && dl == 0);
            free_out(&one);
            free_out(&nested);
        }
        bert_model_free(m);
    }
#else
    printf("\n  built without OpenMP: nothing to nest");
#endif
}

/* A session created with one thread and set to two runs as one created
 * with two (its next run grows the arena by the tensor-parallel scratch),
 * and back to one as one thread. */
static void test_set_threads(void)
{
    static const size_t len[1] = {130};
    bert_model *m = load(dir_wide);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    size_t H = bert_model_config(m)->hidden;
    run_out one, two, up, down;
    CU_ASSERT_EQUAL_FATAL(run(m, BERT_KERNELS_AUTO, 1, len, 1, &one), 0);
    CU_ASSERT_EQUAL_FATAL(run(m, BERT_KERNELS_AUTO, 2, len, 1, &two), 0);
    CU_ASSERT_EQUAL_FATAL(run_set(m, BERT_KERNELS_AUTO, 1, 2, len, 1, &up), 0);
    CU_ASSERT_EQUAL_FATAL(run_set(m, BERT_KERNELS_AUTO, 2, 1, len, 1, &down),
                          0);
    CU_ASSERT(maxdiff(two.hidden, up.hidden, 130 * H) == 0);
    CU_ASSERT(maxdiff(two.logits, up.logits, 3) == 0);
    CU_ASSERT(maxdiff(one.hidden, down.hidden, 130 * H) == 0);
    CU_ASSERT(maxdiff(one.logits, down.logits, 3) == 0);
    free_out(&one), free_out(&two), free_out(&up), free_out(&down);
    bert_model_free(m);
}

static void test_wide(void)
{
    check_model(dir_wide, "hidden 512", 0);
}

static void test_narrow(void)
{
    check_model(dir_narrow, "hidden 256", 1);
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"hidden 512 (tensor-parallel layers)", test_wide},
        {"hidden 256 (row and column splits)", test_narrow},
        {"a session nested in the caller's parallel region", test_nested},
        {"bert_session_set_threads", test_set_threads},
    };
    return tu_run_suite("threads", setup, teardown, tests,
                        sizeof tests / sizeof *tests, argc, argv);
}
