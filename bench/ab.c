/* ab.c - two builds of libbert in one process, run in alternation on the
 * same batch, so that a change's effect on speed can be told apart from a
 * noisy machine's drift.
 *
 *   make bench/ab
 *   bench/ab OLD/libbert.so NEW/libbert.so MODEL_DIR [options]
 *
 * On the 2-vCPU VMs these sessions run on, the same bert-bench binary's
 * time moves by 10-40% between runs a minute apart (the host's other
 * tenants), so two binaries timed one after the other cannot resolve a
 * change of a few percent.  Here each round runs both builds once, back to
 * back, in an order that alternates, and the statistic is the median over
 * rounds of new time / old time: a slow stretch of the host slows both
 * runs of a round alike.
 *
 * Each library is opened with RTLD_DEEPBIND, so that its calls to its own
 * public functions stay inside it.  Both must have this tree's public API
 * (bert.h; tests/test_abi checks that it does not change).  The model is
 * loaded by each build (each packs its own weights); MODEL_DIR is any model
 * directory, e.g. one made by bert-mkmodel:
 *
 *   apps/bert-mkmodel /tmp/bb --hidden 768 --layers 12 --heads 12 \
 *       --intermediate 3072
 *   bench/ab old.so .libs/libbert.so /tmp/bb --batch 32 --seq 128
 *
 * Prints one line: the median ratio, its quartiles, the ratio of the
 * summed times, and the old build's mean time per batch.  Exit status 0,
 * 1 on usage errors, 2 when a library or the model cannot be loaded. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libbert/bert.h"

typedef struct build {
    const char *path;
    void *dl;
    bert_model_params (*model_params)(void);
    int (*model_load)(const char *, const bert_model_params *, bert_model **,
                      bert_error *);
    const bert_config *(*config)(const bert_model *);
    size_t (*max_length)(const bert_model *);
    bert_session_params (*session_params)(void);
    int (*session_create)(const bert_model *, const bert_session_params *,
                          bert_session **, bert_error *);
    int (*run)(bert_session *, const bert_input *, size_t,
               const bert_outputs *, bert_error *);
    int (*kernels_from_name)(const char *);
    int (*precision_from_name)(const char *);
    bert_model *m;
    bert_session *s;
} build;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define SYM(b, field, name)                                                   \
    (*(void **)&(b)->field = dlsym((b)->dl, name)) != NULL

/* Opens b's library and loads the model with it: 0, -2 for an unknown tier
 * or precision name, -1 when the library or the model cannot be loaded. */
static int open_build(build *b, const char *dir, int threads,
                      const char *kernels, const char *precision)
{
    b->dl = dlopen(b->path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!b->dl) {
        fprintf(stderr, "ab: %s\n", dlerror());
        return -1;
    }
    if (!(SYM(b, model_params, "bert_model_default_params") &&
          SYM(b, model_load, "bert_model_load") &&
          SYM(b, config, "bert_model_config") &&
          SYM(b, max_length, "bert_model_max_length") &&
          SYM(b, session_params, "bert_session_default_params") &&
          SYM(b, session_create, "bert_session_create") &&
          SYM(b, run, "bert_session_run") &&
          SYM(b, kernels_from_name, "bert_kernels_from_name") &&
          SYM(b, precision_from_name, "bert_precision_from_name"))) {
        fprintf(stderr, "ab: %s: not a libbert with this API\n", b->path);
        return -1;
    }
    bert_model_params mp = b->model_params();
    mp.load_tokenizer = 0;
    bert_error e;
    if (precision) {
        int p = b->precision_from_name(precision);
        if (p < 0) {
            fprintf(stderr, "ab: unknown --precision %s\n", precision);
            return -2;
        }
        mp.precision = (bert_precision)p;
    }
    if (kernels) {
        int k = b->kernels_from_name(kernels);
        if (k < 0) {
            fprintf(stderr, "ab: unknown --kernels %s\n", kernels);
            return -2;
        }
        mp.kernels = (bert_kernels)k;
    }
    if (b->model_load(dir, &mp, &b->m, &e)) {
        fprintf(stderr, "ab: %s: %s\n", b->path, e.text);
        return -1;
    }
    bert_session_params sp = b->session_params();
    sp.n_threads = threads;
    sp.kernels = mp.kernels;
    if (b->session_create(b->m, &sp, &b->s, &e)) {
        fprintf(stderr, "ab: %s: %s\n", b->path, e.text);
        return -1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ab OLD.so NEW.so MODEL_DIR [--batch N] [--seq N] "
            "[--threads N]\n"
            "          [--rounds N] [--kernels auto|amx|avx512|avx2|blis]\n"
            "          [--precision fp32|bf16|int8]\n"
            "Runs the two builds of libbert in alternation on one batch "
            "(defaults: 1 x 128,\n1 thread, 20 rounds) and prints the "
            "median of new time / old time.\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    if (argc < 4) {
        usage(stderr);
        return 1;
    }
    build bs[2] = {{.path = argv[1]}, {.path = argv[2]}};
    const char *dir = argv[3], *kernels = NULL, *precision = NULL;
    long batch = 1, seq = 128, threads = 1, rounds = 20;
    for (int i = 4; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long *dst = !strcmp(o, "--batch")     ? &batch
                    : !strcmp(o, "--seq")     ? &seq
                    : !strcmp(o, "--threads") ? &threads
                    : !strcmp(o, "--rounds")  ? &rounds
                                              : NULL;
        if (v && dst) {
            *dst = strtol(v, NULL, 10);
        } else if (v && !strcmp(o, "--kernels")) {
            kernels = v;
        } else if (v && !strcmp(o, "--precision")) {
            precision = v;
        } else {
            usage(stderr);
            return 1;
        }
        i++;
    }
    if (batch < 1 || seq < 1 || threads < 1 || rounds < 1 || batch > 4096 ||
        rounds > 100000) {
        usage(stderr);
        return 1;
    }
    for (int v = 0; v < 2; v++) {
        int rc = open_build(&bs[v], dir, (int)threads, kernels, precision);
        if (rc)
            return rc == -2 ? 1 : 2; /* an unknown name is a usage error */
    }
    const bert_config *cfg = bs[0].config(bs[0].m);
    if (!cfg->num_labels) {
        fprintf(stderr, "ab: MODEL_DIR needs a classification head\n");
        return 1;
    }
    if ((size_t)seq > bs[0].max_length(bs[0].m) || cfg->vocab_size < 200) {
        fprintf(stderr, "ab: --seq %ld longer than the model's %zu positions "
                        "(or a vocabulary under 200)\n",
                seq, bs[0].max_length(bs[0].m));
        return 1;
    }
    /* The batch: deterministic ids past the special tokens. */
    size_t T = (size_t)batch * (size_t)seq;
    int32_t *ids = malloc(T * sizeof *ids);
    bert_input *in = calloc((size_t)batch, sizeof *in);
    float *logits = malloc((size_t)batch * cfg->num_labels * sizeof *logits);
    double *ratio = malloc((size_t)rounds * sizeof *ratio);
    if (!ids || !in || !logits || !ratio) {
        fprintf(stderr, "ab: out of memory\n");
        return 2;
    }
    for (size_t i = 0; i < T; i++)
        ids[i] = (int32_t)(110 + (i * 7919) % (cfg->vocab_size - 110));
    for (long b = 0; b < batch; b++) {
        in[b].ids = ids + b * seq;
        in[b].n = (size_t)seq;
    }
    bert_outputs out = {.logits = logits};
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < 2; w++) { /* warm-up */
            bert_error e;
            if (bs[v].run(bs[v].s, in, (size_t)batch, &out, &e)) {
                fprintf(stderr, "ab: %s: %s\n", bs[v].path, e.text);
                return 2;
            }
        }
    double sum[2] = {0, 0};
    for (long r = 0; r < rounds; r++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int v = (int)((r + k) % 2);
            double t0 = now();
            bs[v].run(bs[v].s, in, (size_t)batch, &out, NULL);
            t[v] = now() - t0;
            sum[v] += t[v];
        }
        ratio[r] = t[1] / t[0];
    }
    qsort(ratio, (size_t)rounds, sizeof *ratio, cmp_double);
    printf("%ld x %ld, %ld thread(s), %ld rounds: new/old time median %.3f "
           "(quartiles %.3f-%.3f), sums %.3f; old %.2f ms a batch\n",
           batch, seq, threads, rounds, ratio[rounds / 2], ratio[rounds / 4],
           ratio[3 * rounds / 4], sum[1] / sum[0], 1e3 * sum[0] / rounds);
    /* The libraries stay loaded until exit: their sessions' OpenMP
     * threads are not ours to stop. */
    free(ratio);
    free(logits);
    free(in);
    free(ids);
    return 0;
}
