/* random_model.c - random-weight model directories for bert-bench. */
#include "bench/random_model.h"
#include "libbert/arch.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VOCAB = 30522, MAX_POS = 512, TYPES = 2, LABELS = 2 };

static const bench_shape shapes[] = {
    {"bert-base", 0, 12, 768, 12, 3072},
    {"distilbert-base", 1, 6, 768, 12, 3072},
    {"distilbert-base-like", 0, 6, 768, 12, 3072}, /* the ORT shape */
    {"minilm-l6-h384", 0, 6, 384, 12, 1536},
    {"bert-tiny", 0, 2, 128, 2, 512},
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
    return sh->layers * layer + 2.0 * H * H + 2.0 * H * LABELS;
}

double bench_flops_cls(const bench_shape *sh, size_t n)
{
    double H = sh->hidden, I = sh->inter, T = (double)n;
    double layer = 2.0 * T * (4.0 * H * H + 2.0 * H * I) + 4.0 * T * T * H;
    double last = 2.0 * T * 2.0 * H * H                 /* keys, values */
                  + 2.0 * (2.0 * H * H + 2.0 * H * I)   /* query, output, FFN */
                  + 4.0 * T * H;                        /* one query row */
    return (sh->layers - 1) * layer + last + 2.0 * H * H + 2.0 * H * LABELS;
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
    bert_arch_shape shape = {VOCAB, MAX_POS, sh->distil ? 0 : TYPES,
                             H, H, I, (size_t)sh->layers, LABELS,
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

static int write_config(const char *dir, const bench_shape *sh, char *err,
                        size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (sh->distil)
        fprintf(f,
                "{\n  \"architectures\": [\"DistilBertForSequenceClassification\"],\n"
                "  \"model_type\": \"distilbert\",\n  \"vocab_size\": %d,\n"
                "  \"dim\": %d,\n  \"n_layers\": %d,\n  \"n_heads\": %d,\n"
                "  \"hidden_dim\": %d,\n  \"activation\": \"gelu\",\n"
                "  \"max_position_embeddings\": %d,\n  \"pad_token_id\": 0,\n"
                "  \"id2label\": {\"0\": \"NEGATIVE\", \"1\": \"POSITIVE\"}\n}\n",
                VOCAB, sh->hidden, sh->layers, sh->heads, sh->inter, MAX_POS);
    else
        fprintf(f,
                "{\n  \"architectures\": [\"BertForSequenceClassification\"],\n"
                "  \"model_type\": \"bert\",\n  \"vocab_size\": %d,\n"
                "  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n"
                "  \"num_attention_heads\": %d,\n  \"intermediate_size\": %d,\n"
                "  \"hidden_act\": \"gelu\",\n  \"max_position_embeddings\": %d,\n"
                "  \"type_vocab_size\": %d,\n  \"layer_norm_eps\": 1e-12,\n"
                "  \"pad_token_id\": 0,\n"
                "  \"id2label\": {\"0\": \"NEGATIVE\", \"1\": \"POSITIVE\"}\n}\n",
                VOCAB, sh->hidden, sh->layers, sh->heads, sh->inter, MAX_POS,
                TYPES);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int bench_write_random_model(const char *dir, const bench_shape *sh,
                             unsigned long long seed, char *err,
                             size_t errlen)
{
    tensor_list l = {0};
    char path[4096];
    char *hdr = NULL;
    float *buf = NULL;
    FILE *f = NULL;
    int rc = -1;

    if (write_config(dir, sh, err, errlen))
        return -1;
    if (build_list(sh, &l)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* Header: names are plain ASCII, no escaping needed. */
    size_t cap = 256 + l.n * 200, len = 0, off = 0, maxelem = 0;
    hdr = malloc(cap + 64);
    if (!hdr) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    len += (size_t)snprintf(hdr + len, cap - len,
                            "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < l.n; i++) {
        const tensor_spec *t = &l.t[i];
        size_t ne = t->rows * (t->cols ? t->cols : 1);
        if (ne > maxelem)
            maxelem = ne;
        if (t->cols)
            len += (size_t)snprintf(hdr + len, cap - len,
                                    ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu,%zu],"
                                    "\"data_offsets\":[%zu,%zu]}",
                                    t->name, t->rows, t->cols, off, off + 4 * ne);
        else
            len += (size_t)snprintf(hdr + len, cap - len,
                                    ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu],"
                                    "\"data_offsets\":[%zu,%zu]}",
                                    t->name, t->rows, off, off + 4 * ne);
        off += 4 * ne;
    }
    hdr[len++] = '}';
    while ((8 + len) % 64) /* data section 64-byte aligned in the file */
        hdr[len++] = ' ';

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    unsigned char n8[8];
    for (int i = 0; i < 8; i++)
        n8[i] = (unsigned char)((uint64_t)len >> (8 * i));
    buf = malloc(maxelem * sizeof *buf);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (fwrite(n8, 1, 8, f) != 8 || fwrite(hdr, 1, len, f) != len)
        goto io;
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    /* Uniform in [-a, a] has std a / sqrt(3): std 0.02 as BERT's init. */
    const float a = 0.02f * sqrtf(3.0f);
    for (size_t i = 0; i < l.n; i++) {
        const tensor_spec *t = &l.t[i];
        size_t ne = t->rows * (t->cols ? t->cols : 1);
        for (size_t j = 0; j < ne; j++) {
            float u = a * (2.0f * (float)(next(&s) >> 40) / 16777216.0f - 1.0f);
            buf[j] = t->fill == FILL_ONE ? 1.0f + u : u;
        }
        if (fwrite(buf, sizeof *buf, ne, f) != ne)
            goto io;
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto io;
    }
    f = NULL;
    rc = 0;
    goto out;
io:
    snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
out:
    if (f)
        fclose(f);
    free(buf);
    free(hdr);
    free(l.t);
    return rc;
}
