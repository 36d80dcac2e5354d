/* bert-mkmodel - writes a random-weight BERT sequence-classification model
 * directory (config.json + model.safetensors, F32), for load-time and memory
 * measurements.  Not installed.
 *
 *   bert-mkmodel OUTDIR [--vocab DIR] [--hidden 768] [--layers 12]
 *                [--heads 12] [--intermediate 3072] [--max-position 512]
 *                [--labels 2] [--seed 1]
 *
 * --vocab DIR copies DIR/vocab.txt (and tokenizer_config.json when present)
 * and sets vocab_size from it; default vocab_size is 30522 with no vocab.
 * Weights are uniform in [-0.05, 0.05), LayerNorm weights 1 and biases 0,
 * streamed to disk tensor by tensor (no full copy in memory).
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libbert/arch.h"

typedef struct {
    char name[128];
    size_t d0, d1; /* d1 == 0: 1-D */
    int kind;      /* 0 random, 1 ones, 2 zeros */
} tspec;

typedef struct {
    tspec *t;
    size_t n, cap;
} list;

/* One tensor of the architecture table: LayerNorm weights 1, biases 0. */
static int add(void *ctx, const bert_arch_tensor *x)
{
    list *l = ctx;
    if (l->n == l->cap)
        return -1;
    tspec *t = &l->t[l->n++];
    int ln = x->role == BERT_R_LNE || x->role == BERT_R_LN1 ||
             x->role == BERT_R_LN2;
    snprintf(t->name, sizeof t->name, "%s", x->name);
    t->d0 = x->d0;
    t->d1 = x->d1;
    t->kind = !ln ? 0 : x->bias ? 2 : 1;
    return 0;
}

static uint64_t rng_state;
static float frand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 0.1f - 0.05f;
}

static int copy_file(const char *from, const char *to, size_t *lines)
{
    FILE *a = fopen(from, "rb"), *b;
    if (!a)
        return -1;
    if (!(b = fopen(to, "wb"))) {
        fclose(a);
        return -1;
    }
    char buf[65536];
    size_t n, nl = 0, last = '\n';
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) {
        for (size_t i = 0; i < n; i++)
            nl += buf[i] == '\n';
        last = (unsigned char)buf[n - 1];
        fwrite(buf, 1, n, b);
    }
    fclose(a);
    int bad = fclose(b) != 0;
    if (lines)
        *lines = nl + (last != '\n');
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    size_t H = 768, L = 12, NH = 12, I = 3072, P = 512, C = 2, V = 30522;
    unsigned long seed = 1;
    const char *out = NULL, *vocab = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t *dst = NULL;
        if (i + 1 < argc) {
            if (!strcmp(a, "--hidden"))
                dst = &H;
            else if (!strcmp(a, "--layers"))
                dst = &L;
            else if (!strcmp(a, "--heads"))
                dst = &NH;
            else if (!strcmp(a, "--intermediate"))
                dst = &I;
            else if (!strcmp(a, "--max-position"))
                dst = &P;
            else if (!strcmp(a, "--labels"))
                dst = &C;
            else if (!strcmp(a, "--seed")) {
                seed = strtoul(argv[++i], NULL, 10);
                continue;
            } else if (!strcmp(a, "--vocab")) {
                vocab = argv[++i];
                continue;
            }
        }
        if (dst) {
            *dst = (size_t)strtoul(argv[++i], NULL, 10);
            continue;
        }
        if (a[0] == '-' || out) {
            fprintf(stderr, "usage: bert-mkmodel OUTDIR [--vocab DIR] "
                            "[--hidden N] [--layers N] [--heads N] "
                            "[--intermediate N] [--max-position N] "
                            "[--labels N] [--seed N]\n");
            return a[0] == '-' && strcmp(a, "--help") == 0 ? 0 : 1;
        }
        out = a;
    }
    if (!out || !H || !L || !NH || H % NH || !I || !P || !C) {
        fprintf(stderr, "bert-mkmodel: need OUTDIR and sane sizes\n");
        return 1;
    }
    rng_state = 0x9E3779B97F4A7C15ull ^ (seed * 0x2545F4914F6CDD1Dull);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        perror(out);
        return 2;
    }
    char path[4096];
    if (vocab) {
        char from[4096];
        snprintf(from, sizeof from, "%s/vocab.txt", vocab);
        snprintf(path, sizeof path, "%s/vocab.txt", out);
        if (copy_file(from, path, &V) != 0) {
            fprintf(stderr, "bert-mkmodel: cannot copy %s\n", from);
            return 2;
        }
        snprintf(from, sizeof from, "%s/tokenizer_config.json", vocab);
        snprintf(path, sizeof path, "%s/tokenizer_config.json", out);
        copy_file(from, path, NULL);
    }

    /* Tensor list, in HF order: the names of libbert's architecture table. */
    list tl = {calloc(16 * L + 16, sizeof(tspec)), 0, 16 * L + 16};
    bert_arch_shape dims = {V, P, 2, H, H, I, L, C, 1, 0, 0};
    if (!tl.t || bert__arch_tensors(bert__arch_of(BERT_FAMILY_BERT), &dims,
                                    add, &tl)) {
        fprintf(stderr, "bert-mkmodel: out of memory or a table past its "
                        "count\n");
        return 2;
    }
    tspec *t = tl.t;
    size_t nt = tl.n;

    /* Header. */
    json_t *hdr = json_object();
    json_object_set_new(hdr, "__metadata__", json_pack("{s:s}", "format", "pt"));
    size_t off = 0;
    for (size_t i = 0; i < nt; i++) {
        size_t n = t[i].d0 * (t[i].d1 ? t[i].d1 : 1) * 4;
        json_t *shape = t[i].d1 ? json_pack("[I,I]", (json_int_t)t[i].d0,
                                            (json_int_t)t[i].d1)
                                : json_pack("[I]", (json_int_t)t[i].d0);
        json_object_set_new(hdr, t[i].name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", "F32",
                                      "shape", shape, "data_offsets",
                                      (json_int_t)off, (json_int_t)(off + n)));
        off += n;
    }
    char *hs = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t hl = strlen(hs), pad = (8 - hl % 8) % 8;
    uint64_t hlen = hl + pad;
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 2;
    }
    unsigned char lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(lb, 1, 8, f);
    fwrite(hs, 1, hl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    float chunk[4096];
    for (size_t i = 0; i < nt; i++) {
        size_t n = t[i].d0 * (t[i].d1 ? t[i].d1 : 1);
        while (n) {
            size_t k = n < 4096 ? n : 4096;
            for (size_t j = 0; j < k; j++)
                chunk[j] = t[i].kind == 0 ? frand() : t[i].kind == 1 ? 1.0f : 0.0f;
            fwrite(chunk, 4, k, f);
            n -= k;
        }
    }
    if (fclose(f) != 0) {
        perror(path);
        return 2;
    }
    free(hs);
    json_decref(hdr);
    free(t);

    /* config.json */
    json_t *cfg = json_pack(
        "{s:[s],s:s,s:I,s:I,s:I,s:I,s:I,s:s,s:I,s:I,s:f,s:s,s:f,s:f,s:I}",
        "architectures", "BertForSequenceClassification", "model_type", "bert",
        "vocab_size", (json_int_t)V, "hidden_size", (json_int_t)H,
        "num_hidden_layers", (json_int_t)L, "num_attention_heads",
        (json_int_t)NH, "intermediate_size", (json_int_t)I, "hidden_act",
        "gelu", "max_position_embeddings", (json_int_t)P, "type_vocab_size",
        (json_int_t)2, "layer_norm_eps", 1e-12, "position_embedding_type",
        "absolute", "hidden_dropout_prob", 0.1, "attention_probs_dropout_prob",
        0.1, "pad_token_id", (json_int_t)0);
    json_t *id2 = json_object();
    for (size_t c = 0; c < C; c++) {
        char k[32], v[32];
        snprintf(k, sizeof k, "%zu", c);
        snprintf(v, sizeof v, "LABEL_%zu", c);
        json_object_set_new(id2, k, json_string(v));
    }
    json_object_set_new(cfg, "id2label", id2);
    snprintf(path, sizeof path, "%s/config.json", out);
    if (json_dump_file(cfg, path, JSON_INDENT(2)) != 0) {
        perror(path);
        return 2;
    }
    json_decref(cfg);
    printf("%s: %zu tensors, %.1f MB of F32 weights (H=%zu L=%zu NH=%zu "
           "I=%zu P=%zu V=%zu C=%zu)\n",
           out, nt, off / 1e6, H, L, NH, I, P, V, C);
    return 0;
}
