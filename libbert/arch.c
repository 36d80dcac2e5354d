/* arch.c - the Hugging Face tensor names of BERT, DistilBERT, RoBERTa and
 * ELECTRA (see arch.h), and the one walk over a checkpoint's tensors. */
#include "libbert/arch.h"

#include <stdio.h>

#include "libbert/train/ops.h" /* BERT_T_ACT_* */

static const bert_arch ARCH_BERT = {
    "bert",
    {"BertForSequenceClassification", "BertForTokenClassification",
     "BertForMaskedLM"},
    "bert.", "bert.embeddings", "bert.encoder.layer",
    {"attention.self.query", "attention.self.key", "attention.self.value"},
    "attention.output.dense", "attention.output.LayerNorm",
    "intermediate.dense", "output.dense", "output.LayerNorm",
    "bert.pooler.dense", NULL,
    "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
    "cls.predictions.bias", "cls.predictions.decoder.bias",
    BERT_T_ACT_TANH, 1, NULL, 0, 0, NULL,
};

static const bert_arch ARCH_DISTILBERT = {
    "distilbert",
    {"DistilBertForSequenceClassification", "DistilBertForTokenClassification",
     "DistilBertForMaskedLM"},
    "distilbert.", "distilbert.embeddings", "distilbert.transformer.layer",
    {"attention.q_lin", "attention.k_lin", "attention.v_lin"},
    "attention.out_lin", "sa_layer_norm", "ffn.lin1", "ffn.lin2",
    "output_layer_norm",
    NULL, "pre_classifier",
    "vocab_transform", "vocab_layer_norm", "vocab_projector.bias", NULL,
    BERT_T_ACT_RELU, 0, NULL, 0, 0, NULL,
};

/* RoBERTa: BERT's encoder under "roberta.", its pooler only in bare
 * RobertaModel checkpoints; the sequence head (RobertaClassificationHead)
 * is dropout, dense, tanh, dropout, out_proj, so it is BERT's
 * pooler-and-classifier path under other names plus one dropout; positions
 * count from padding_idx + 1 (no padding inside a sequence: every real
 * token's position id is its index + pad + 1). */
static const bert_arch ARCH_ROBERTA = {
    "roberta",
    {"RobertaForSequenceClassification", "RobertaForTokenClassification",
     "RobertaForMaskedLM"},
    "roberta.", "roberta.embeddings", "roberta.encoder.layer",
    {"attention.self.query", "attention.self.key", "attention.self.value"},
    "attention.output.dense", "attention.output.LayerNorm",
    "intermediate.dense", "output.dense", "output.LayerNorm",
    "roberta.pooler.dense", "classifier.dense",
    "lm_head.dense", "lm_head.layer_norm", "lm_head.bias", NULL,
    BERT_T_ACT_TANH, 1,
    "classifier.out_proj", 1, 1, NULL,
};

/* ELECTRA (the discriminator): BERT's layers under "electra.", embeddings
 * of width E (embedding_size) projected to H by embeddings_project when
 * they differ, no pooler; ElectraClassificationHead is RoBERTa's head with
 * the exact GELU instead of tanh. */
static const bert_arch ARCH_ELECTRA = {
    "electra",
    {"ElectraForSequenceClassification", "ElectraForTokenClassification",
     "ElectraForMaskedLM"},
    "electra.", "electra.embeddings", "electra.encoder.layer",
    {"attention.self.query", "attention.self.key", "attention.self.value"},
    "attention.output.dense", "attention.output.LayerNorm",
    "intermediate.dense", "output.dense", "output.LayerNorm",
    NULL, "classifier.dense",
    "generator_predictions.dense", "generator_predictions.LayerNorm",
    "generator_lm_head.bias", NULL,
    BERT_T_ACT_GELU, 1,
    "classifier.out_proj", 0, 1, "electra.embeddings_project",
};

const bert_arch *bert__arch_of(bert_family family)
{
    switch (family) {
    case BERT_FAMILY_DISTILBERT: return &ARCH_DISTILBERT;
    case BERT_FAMILY_ROBERTA: return &ARCH_ROBERTA;
    case BERT_FAMILY_ELECTRA: return &ARCH_ELECTRA;
    default: return &ARCH_BERT;
    }
}

typedef struct walk {
    bert_arch_fn fn;
    void *ctx;
    char name[192];
} walk;

/* The tensor named w->name. */
static int emit(walk *w, bert_arch_role role, size_t layer, int bias,
                size_t d0, size_t d1, int optional)
{
    bert_arch_tensor t = {w->name, role, layer, bias, d0, d1, optional};
    return w->fn(w->ctx, &t);
}

/* MOD.weight [d0, d1] (d1 0: a LayerNorm's [d0]) and MOD.bias [d0]. */
static int pair(walk *w, bert_arch_role role, size_t layer, const char *mod,
                size_t d0, size_t d1, int optional)
{
    snprintf(w->name, sizeof w->name, "%s.weight", mod);
    int rc = emit(w, role, layer, 0, d0, d1, optional);
    snprintf(w->name, sizeof w->name, "%s.bias", mod);
    return rc ? rc : emit(w, role, layer, 1, d0, 0, optional);
}

int bert__arch_tensors(const bert_arch *A, const bert_arch_shape *s,
                       bert_arch_fn fn, void *ctx)
{
    walk w = {fn, ctx, ""};
    char mod[160];
    size_t H = s->H, I = s->I, E = s->E;
    int rc;
#define TRY(x)                                                                 \
    do {                                                                       \
        if ((rc = (x)) != 0)                                                   \
            return rc;                                                         \
    } while (0)
#define NAME(...) snprintf(w.name, sizeof w.name, __VA_ARGS__)
    NAME("%s.word_embeddings.weight", A->emb);
    TRY(emit(&w, BERT_R_WTE, 0, 0, s->V, E, 0));
    NAME("%s.position_embeddings.weight", A->emb);
    TRY(emit(&w, BERT_R_WPE, 0, 0, s->P, E, 0));
    if (s->TV) {
        NAME("%s.token_type_embeddings.weight", A->emb);
        TRY(emit(&w, BERT_R_WTT, 0, 0, s->TV, E, 0));
    }
    snprintf(mod, sizeof mod, "%s.LayerNorm", A->emb);
    TRY(pair(&w, BERT_R_LNE, 0, mod, E, 0, 0));
    if (A->proj && E != H)
        TRY(pair(&w, BERT_R_EP, 0, A->proj, H, E, 0));
    static const bert_arch_role qkv[3] = {BERT_R_Q, BERT_R_K, BERT_R_V};
    for (size_t l = 0; l < s->L; l++) {
#define LAYER(M) (snprintf(mod, sizeof mod, "%s.%zu.%s", A->layer, l, M), mod)
        for (size_t j = 0; j < 3; j++)
            TRY(pair(&w, qkv[j], l, LAYER(A->qkv[j]), H, H, 0));
        TRY(pair(&w, BERT_R_AO, l, LAYER(A->ao), H, H, 0));
        TRY(pair(&w, BERT_R_LN1, l, LAYER(A->ln1), H, 0, 0));
        TRY(pair(&w, BERT_R_FC, l, LAYER(A->fc), I, H, 0));
        TRY(pair(&w, BERT_R_FC2, l, LAYER(A->fc2), H, I, 0));
        TRY(pair(&w, BERT_R_LN2, l, LAYER(A->ln2), H, 0, 0));
#undef LAYER
    }
    if (s->pooler && A->pooler)
        TRY(pair(&w, BERT_R_POOL, 0, A->pooler, H, H, s->pooler == 2));
    if (s->head && A->head)
        TRY(pair(&w, BERT_R_HEAD, 0, A->head, H, H, 0));
    if (s->C)
        TRY(pair(&w, BERT_R_CLS, 0,
                 s->head && A->cls_seq ? A->cls_seq : "classifier", s->C, H,
                 0));
    if (s->mlm) {
        TRY(pair(&w, BERT_R_MT, 0, A->mt, H, H, 0));
        TRY(pair(&w, BERT_R_MLN, 0, A->mln, H, 0, 0));
        NAME("%s", A->mbias);
        TRY(emit(&w, BERT_R_MBIAS, 0, 1, s->V, 0, 0));
    }
#undef NAME
#undef TRY
    return 0;
}
