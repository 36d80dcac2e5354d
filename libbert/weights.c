/* weights.c - bind transformers' state_dict() names in a safetensors file to
 * the model's weight pointers, checking every shape against config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/model.h"

typedef struct slot {
    char name[192];
    const float **dst;
    int ndim;
    size_t d0, d1;
    int optional;
    const bert_st_tensor *t;
} slot;

typedef struct slots {
    slot *a;
    size_t n, cap;
    const char *prefix;
} slots;

static void add(slots *S, const float **dst, size_t d0, size_t d1, int ndim,
                int optional, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static void add(slots *S, const float **dst, size_t d0, size_t d1, int ndim,
                int optional, const char *fmt, ...)
{
    slot *s = &S->a[S->n++];
    va_list ap;
    int k = snprintf(s->name, sizeof s->name, "%s", S->prefix);
    va_start(ap, fmt);
    vsnprintf(s->name + k, sizeof s->name - (size_t)k, fmt, ap);
    va_end(ap);
    s->dst = dst;
    s->d0 = d0;
    s->d1 = d1;
    s->ndim = ndim;
    s->optional = optional;
    s->t = NULL;
}

static void shape_str(char *buf, size_t n, const bert_st_tensor *t)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%zu", d ? ", " : "",
                              t->shape[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

int bert__weights_bind(const bert_cfg *cfg, const bert_st_file *st,
                       const char *label, bert_weights *w, float **conv,
                       bert_error *err)
{
    const bert_config *c = &cfg->pub;
    size_t H = c->hidden, I = c->intermediate, L = c->layers;
    size_t C = c->num_labels, E = c->embedding_size;
    int distil = c->is_distilbert;
    int roberta = c->family == BERT_FAMILY_ROBERTA;
    int electra = c->family == BERT_FAMILY_ELECTRA;
    int rc = BERT_OK;
    slots S = {0};
    float *buf = NULL;

    memset(w, 0, sizeof *w);
    *conv = NULL;
    w->layers = calloc(L, sizeof *w->layers);
    S.cap = 16 * L + 16;
    S.a = calloc(S.cap, sizeof *S.a);
    if (!w->layers || !S.a) {
        rc = bert__err(err, BERT_ENOMEM, "%s: out of memory", label);
        goto out;
    }

    /* Prefix: "bert." / "distilbert." for the *For* heads and MLM files,
     * none for a bare BertModel; take whichever the file has. */
    const char *pfx = distil    ? "distilbert."
                      : roberta ? "roberta."
                      : electra ? "electra."
                                : "bert.";
    char probe[64];
    snprintf(probe, sizeof probe, "%sembeddings.word_embeddings.weight", pfx);
    S.prefix = bert__st_find(st, probe) ? pfx : "";

    add(&S, &w->word_emb, c->vocab_size, E, 2, 0,
        "embeddings.word_embeddings.weight");
    add(&S, &w->pos_emb, c->max_position, E, 2, 0,
        "embeddings.position_embeddings.weight");
    if (!distil)
        add(&S, &w->type_emb, c->type_vocab, E, 2, 0,
            "embeddings.token_type_embeddings.weight");
    add(&S, &w->emb_ln_w, E, 0, 1, 0, "embeddings.LayerNorm.weight");
    add(&S, &w->emb_ln_b, E, 0, 1, 0, "embeddings.LayerNorm.bias");
    if (electra && E != H) {
        add(&S, &w->emb_proj_w, H, E, 2, 0, "embeddings_project.weight");
        add(&S, &w->emb_proj_b, H, 0, 1, 0, "embeddings_project.bias");
    }
    for (size_t l = 0; l < L; l++) {
        bert_layer_w *y = &w->layers[l];
        if (distil) {
            const char *p = "transformer.layer";
            add(&S, &y->q_w, H, H, 2, 0, "%s.%zu.attention.q_lin.weight", p, l);
            add(&S, &y->q_b, H, 0, 1, 0, "%s.%zu.attention.q_lin.bias", p, l);
            add(&S, &y->k_w, H, H, 2, 0, "%s.%zu.attention.k_lin.weight", p, l);
            add(&S, &y->k_b, H, 0, 1, 0, "%s.%zu.attention.k_lin.bias", p, l);
            add(&S, &y->v_w, H, H, 2, 0, "%s.%zu.attention.v_lin.weight", p, l);
            add(&S, &y->v_b, H, 0, 1, 0, "%s.%zu.attention.v_lin.bias", p, l);
            add(&S, &y->o_w, H, H, 2, 0, "%s.%zu.attention.out_lin.weight", p,
                l);
            add(&S, &y->o_b, H, 0, 1, 0, "%s.%zu.attention.out_lin.bias", p, l);
            add(&S, &y->ln1_w, H, 0, 1, 0, "%s.%zu.sa_layer_norm.weight", p, l);
            add(&S, &y->ln1_b, H, 0, 1, 0, "%s.%zu.sa_layer_norm.bias", p, l);
            add(&S, &y->f1_w, I, H, 2, 0, "%s.%zu.ffn.lin1.weight", p, l);
            add(&S, &y->f1_b, I, 0, 1, 0, "%s.%zu.ffn.lin1.bias", p, l);
            add(&S, &y->f2_w, H, I, 2, 0, "%s.%zu.ffn.lin2.weight", p, l);
            add(&S, &y->f2_b, H, 0, 1, 0, "%s.%zu.ffn.lin2.bias", p, l);
            add(&S, &y->ln2_w, H, 0, 1, 0, "%s.%zu.output_layer_norm.weight", p,
                l);
            add(&S, &y->ln2_b, H, 0, 1, 0, "%s.%zu.output_layer_norm.bias", p,
                l);
        } else {
            const char *p = "encoder.layer";
            add(&S, &y->q_w, H, H, 2, 0, "%s.%zu.attention.self.query.weight",
                p, l);
            add(&S, &y->q_b, H, 0, 1, 0, "%s.%zu.attention.self.query.bias", p,
                l);
            add(&S, &y->k_w, H, H, 2, 0, "%s.%zu.attention.self.key.weight", p,
                l);
            add(&S, &y->k_b, H, 0, 1, 0, "%s.%zu.attention.self.key.bias", p, l);
            add(&S, &y->v_w, H, H, 2, 0, "%s.%zu.attention.self.value.weight",
                p, l);
            add(&S, &y->v_b, H, 0, 1, 0, "%s.%zu.attention.self.value.bias", p,
                l);
            add(&S, &y->o_w, H, H, 2, 0,
                "%s.%zu.attention.output.dense.weight", p, l);
            add(&S, &y->o_b, H, 0, 1, 0, "%s.%zu.attention.output.dense.bias",
                p, l);
            add(&S, &y->ln1_w, H, 0, 1, 0,
                "%s.%zu.attention.output.LayerNorm.weight", p, l);
            add(&S, &y->ln1_b, H, 0, 1, 0,
                "%s.%zu.attention.output.LayerNorm.bias", p, l);
            add(&S, &y->f1_w, I, H, 2, 0, "%s.%zu.intermediate.dense.weight", p,
                l);
            add(&S, &y->f1_b, I, 0, 1, 0, "%s.%zu.intermediate.dense.bias", p,
                l);
            add(&S, &y->f2_w, H, I, 2, 0, "%s.%zu.output.dense.weight", p, l);
            add(&S, &y->f2_b, H, 0, 1, 0, "%s.%zu.output.dense.bias", p, l);
            add(&S, &y->ln2_w, H, 0, 1, 0, "%s.%zu.output.LayerNorm.weight", p,
                l);
            add(&S, &y->ln2_b, H, 0, 1, 0, "%s.%zu.output.LayerNorm.bias", p, l);
        }
    }
    /* Pooler: required by BertForSequenceClassification, used by BertModel
     * and RobertaModel when the file has it, ignored by token models (and
     * RobertaFor*, built with add_pooling_layer=False); ELECTRA has none. */
    if ((c->family == BERT_FAMILY_BERT && c->task != BERT_TASK_TOKEN) ||
        (roberta && c->task == BERT_TASK_BASE)) {
        int opt = c->task == BERT_TASK_BASE;
        add(&S, &w->pool_w, H, H, 2, opt, "pooler.dense.weight");
        add(&S, &w->pool_b, H, 0, 1, opt, "pooler.dense.bias");
    }
    /* Heads have no prefix. */
    S.prefix = "";
    if (distil && c->task == BERT_TASK_SEQUENCE) {
        add(&S, &w->pool_w, H, H, 2, 0, "pre_classifier.weight");
        add(&S, &w->pool_b, H, 0, 1, 0, "pre_classifier.bias");
    }
    if ((roberta || electra) && c->task == BERT_TASK_SEQUENCE) {
        /* RobertaClassificationHead / ElectraClassificationHead */
        add(&S, &w->pool_w, H, H, 2, 0, "classifier.dense.weight");
        add(&S, &w->pool_b, H, 0, 1, 0, "classifier.dense.bias");
        add(&S, &w->cls_w, C, H, 2, 0, "classifier.out_proj.weight");
        add(&S, &w->cls_b, C, 0, 1, 0, "classifier.out_proj.bias");
    } else if (c->task != BERT_TASK_BASE) {
        add(&S, &w->cls_w, C, H, 2, 0, "classifier.weight");
        add(&S, &w->cls_b, C, 0, 1, 0, "classifier.bias");
    }

    /* Pass 1: find, check dtype and shape, count what needs converting. */
    size_t nconv = 0;
    for (size_t i = 0; i < S.n; i++) {
        slot *s = &S.a[i];
        s->t = bert__st_find(st, s->name);
        if (!s->t) {
            if (s->optional)
                continue;
            rc = bert__err(err, BERT_EMISSING,
                           "%s: tensor '%s' is missing (needed by %s)", label,
                           s->name, cfg->architecture);
            goto out;
        }
        if (s->t->dtype != BERT_DT_F32 && s->t->dtype != BERT_DT_F16 &&
            s->t->dtype != BERT_DT_BF16) {
            rc = bert__err(err, BERT_EUNSUPPORTED,
                           "%s: tensor '%s' has dtype %s; weights must be F32, "
                           "F16 or BF16",
                           label, s->name, bert__st_dtype_name(s->t->dtype));
            goto out;
        }
        if (s->t->ndim != s->ndim || s->t->shape[0] != s->d0 ||
            (s->ndim == 2 && s->t->shape[1] != s->d1)) {
            char got[96], want[64];
            shape_str(got, sizeof got, s->t);
            if (s->ndim == 2)
                snprintf(want, sizeof want, "[%zu, %zu]", s->d0, s->d1);
            else
                snprintf(want, sizeof want, "[%zu]", s->d0);
            rc = bert__err(err, BERT_ESHAPE,
                           "%s: tensor '%s' has shape %s but config.json "
                           "implies %s",
                           label, s->name, got, want);
            goto out;
        }
        if (!bert__st_f32_direct(s->t))
            nconv += s->t->nelem;
    }
    if (nconv) {
        buf = malloc(nconv * sizeof *buf);
        if (!buf) {
            rc = bert__err(err, BERT_ENOMEM,
                           "%s: out of memory converting %zu weights to F32",
                           label, nconv);
            goto out;
        }
    }
    /* Pass 2: point or convert. */
    size_t at = 0;
    for (size_t i = 0; i < S.n; i++) {
        slot *s = &S.a[i];
        if (!s->t)
            continue;
        const float *d = bert__st_f32_direct(s->t);
        if (!d) {
            bert__st_to_f32(s->t, buf + at);
            d = buf + at;
            at += s->t->nelem;
        }
        *s->dst = d;
    }
    /* An optional pooler needs both halves. */
    if (!w->pool_w || !w->pool_b)
        w->pool_w = w->pool_b = NULL;
    *conv = buf;
    buf = NULL;

out:
    free(S.a);
    free(buf);
    if (rc != BERT_OK) {
        free(w->layers);
        memset(w, 0, sizeof *w);
    }
    return rc;
}
