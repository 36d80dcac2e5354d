/* random_model.c - random-weight model directories for bert-bench. */
#include "bench/random_model.h"
#include "libbert/arch.h"
#include "libbert/config.h"
#include "libbert/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TYPES = 2 };
#define VOCAB(sh) ((sh)->vocab ? (sh)->vocab : 30522)
#define MAX_POS(sh) ((sh)->max_pos ? (sh)->max_pos : 512)
#define LABELS(sh) ((sh)->labels ? (sh)->labels : 2)

static const bench_shape shapes[] = {
    {"bert-base", 0, 12, 768, 12, 3072, 0, 0, 0},
    {"distilbert-base", 1, 6, 768, 12, 3072, 0, 0, 0},
    {"distilbert-base-like", 0, 6, 768, 12, 3072, 0, 0, 0}, /* the ORT shape */
    {"minilm-l6-h384", 0, 6, 384, 12, 1536, 0, 0, 0},
    {"bert-tiny", 0, 2, 128, 2, 512, 0, 0, 0},
};

const bench_shape *bench_shape_find(const char *name)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (strcmp(shapes[i].name, name) == 0)
            return &shapes[i];
    return NULL;
}

const char *bench_shape_names(void)
{
    return "bert-base|distilbert-base|distilbert-base-like|minilm-l6-h384|"
           "bert-tiny";
}

double bench_flops(const bench_shape *sh, size_t n)
{
    double H = sh->hidden, I = sh->inter, T = (double)n;
    double layer = 2.0 * T * (4.0 * H * H + 2.0 * H * I) /* dense */
                   + 4.0 * T * T * H;                     /* QK^T, PV */
    return sh->layers * layer + 2.0 * H * H + 2.0 * H * (double)LABELS(sh);
}

double bench_flops_cls(const bench_shape *sh, size_t n)
{
    double H = sh->hidden, I = sh->inter, T = (double)n;
    double layer = 2.0 * T * (4.0 * H * H + 2.0 * H * I) + 4.0 * T * T * H;
    double last = 2.0 * T * 2.0 * H * H                 /* keys, values */
                  + 2.0 * (2.0 * H * H + 2.0 * H * I)   /* query, output, FFN */
                  + 4.0 * T * H;                        /* one query row */
    return (sh->layers - 1) * layer + last + 2.0 * H * H +
           2.0 * H * (double)LABELS(sh);
}

/* ---- tensor list ---------------------------------------------------------- */

/* Every tensor is random as in a trained checkpoint; LayerNorm weights
 * around 1. */
typedef enum { FILL_RANDOM, FILL_ONE, FILL_ZERO } fill_kind;

typedef struct {
    char name[96];
    size_t rows, cols; /* cols 0: a vector of `rows` */
    fill_kind fill;
} tensor_spec;

typedef struct {
    tensor_spec *t;
    size_t n, cap;
} tensor_list;

/* One tensor of the architecture's table (libbert/arch.h). */
static int add(void *ctx, const bert_arch_tensor *x)
{
    tensor_list *l = ctx;
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 64;
        tensor_spec *nt = realloc(l->t, nc * sizeof *nt);
        if (!nt)
            return -1;
        l->t = nt;
        l->cap = nc;
    }
    tensor_spec *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, "%s", x->name);
    t->rows = x->d0;
    t->cols = x->d1;
    int ln = x->role == BERT_R_LNE || x->role == BERT_R_LN1 ||
             x->role == BERT_R_LN2;
    t->fill = !ln ? FILL_RANDOM : x->bias ? FILL_ZERO : FILL_ONE;
    return 0;
}

/* A sequence classifier: BertForSequenceClassification (pooler) or
 * DistilBertForSequenceClassification (pre_classifier). */
static int build_list(const bench_shape *sh, tensor_list *l)
{
    size_t H = (size_t)sh->hidden, I = (size_t)sh->inter;
    bert_arch_shape shape = {VOCAB(sh), MAX_POS(sh), sh->distil ? 0 : TYPES,
                             H, H, I, (size_t)sh->layers, LABELS(sh),
                             !sh->distil, sh->distil, 0};
    return bert__arch_tensors(
        bert__arch_of(sh->distil ? BERT_FAMILY_DISTILBERT : BERT_FAMILY_BERT),
        &shape, add, l);
}

/* ---- writing -------------------------------------------------------------- */

static uint64_t next(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* config.json through libbert's one config writer: a sequence classifier,
 * labels NEGATIVE, POSITIVE (two) or LABEL_i, erf GELU, eps 1e-12. */
static int write_config(const char *dir, const bench_shape *sh, char *err,
                        size_t errlen)
{
    char path[4096], names[64][16];
    char *labels[64];
    size_t C = LABELS(sh);
    if (C > 64) {
        snprintf(err, errlen, "at most 64 labels");
        return -1;
    }
    for (size_t i = 0; i < C; i++) {
        if (C == 2)
            snprintf(names[i], sizeof names[i], "%s",
                     i ? "POSITIVE" : "NEGATIVE");
        else
            snprintf(names[i], sizeof names[i], "LABEL_%zu", i);
        labels[i] = names[i];
    }
    bert_cfg c;
    memset(&c, 0, sizeof c);
    c.pub = (bert_config){sh->distil, BERT_TASK_SEQUENCE, BERT_ACT_GELU,
                          BERT_PROBLEM_SINGLE_LABEL, VOCAB(sh),
                          (size_t)sh->hidden, (size_t)sh->layers,
                          (size_t)sh->heads, (size_t)sh->inter, MAX_POS(sh),
                          sh->distil ? 0 : TYPES, C, 1e-12f, 0.1f, 0.1f, 0.1f,
                          sh->distil ? BERT_FAMILY_DISTILBERT : BERT_FAMILY_BERT,
                          (size_t)sh->hidden};
    snprintf(c.model_type, sizeof c.model_type, "%s",
             sh->distil ? "distilbert" : "bert");
    c.labels = labels;
    c.pad_token_id = 0;
    c.init_range = 0.02f;
    c.qa_dropout = 0.1f;
    c.aggregation = -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    bert_error e;
    if (bert__config_write(&c, sh->distil ? "DistilBertForSequenceClassification"
                                          : "BertForSequenceClassification",
                           path, &e)) {
        snprintf(err, errlen, "%s", e.text);
        return -1;
    }
    return 0;
}

/* The random values, tensor after tensor from one generator (the order the
 * writer fills them in): uniform in [-a, a], whose std a / sqrt(3) is
 * BERT's 0.02, plus 1 for LayerNorm weights. */
typedef struct {
    uint64_t *s;
    int one;
} fill_ctx;

static void fill_random(void *ctx, size_t at, void *buf, size_t n)
{
    const fill_ctx *c = ctx;
    const float a = 0.02f * sqrtf(3.0f);
    float *f = buf;
    (void)at;
    for (size_t j = 0; j < n / sizeof *f; j++) {
        float u = a * (2.0f * (float)(next(c->s) >> 40) / 16777216.0f - 1.0f);
        f[j] = c->one ? 1.0f + u : u;
    }
}

int bench_write_random_model(const char *dir, const bench_shape *sh,
                             unsigned long long seed, char *err,
                             size_t errlen)
{
    tensor_list l = {0};
    char path[4096];
    int rc = -1;
    if (write_config(dir, sh, err, errlen))
        return -1;
    bert_st_wtensor *w = NULL;
    fill_ctx *fc = NULL;
    if (build_list(sh, &l) || !(w = calloc(l.n, sizeof *w)) ||
        !(fc = calloc(l.n, sizeof *fc))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < l.n; i++) {
        const tensor_spec *t = &l.t[i];
        fc[i] = (fill_ctx){&s, t->fill == FILL_ONE};
        w[i] = (bert_st_wtensor){t->name, BERT_DT_F32, t->cols ? 2 : 1,
                                 {t->rows, t->cols}, NULL, fill_random,
                                 &fc[i]};
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    bert_error e;
    if (bert__st_write(path, w, l.n, &e))
        snprintf(err, errlen, "%s", e.text);
    else
        rc = 0;
out:
    free(w);
    free(fc);
    free(l.t);
    return rc;
}
