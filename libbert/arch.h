/*
 * libbert/arch.h - the Hugging Face tensor names of each architecture: one
 * table, read by the loader (weights.c), the trainer (train/trainer.c) and
 * anything else that names tensors.
 *
 * BERT, DistilBERT, RoBERTa and ELECTRA are the same post-LayerNorm encoder
 * with the same parameter slots (ELECTRA adds embeddings_project); they
 * differ in tensor names and in a few details of the computation, which
 * are listed here too so that one struct says everything that differs.
 */
#ifndef LIBBERT_ARCH_H
#define LIBBERT_ARCH_H

#include <stddef.h>

#include "libbert/bert.h"

typedef struct bert_arch {
    const char *model_type;
    const char *arch[3];     /* architectures[0] for SEQUENCE, TOKEN, MLM */
    const char *prefix;      /* of encoder tensors in *For* checkpoints (a
                                bare *Model checkpoint has none) */
    const char *emb;         /* embeddings module */
    const char *layer;       /* layer list, then ".<l>." */
    const char *qkv[3], *ao, *ln1, *fc, *fc2, *ln2; /* modules in a layer */
    const char *pooler;      /* the encoder's pooler (BERT, RoBERTa), or NULL */
    const char *head;        /* the sequence head's dense layer where it is
                                not the pooler (pre_classifier,
                                classifier.dense), or NULL */
    const char *mt, *mln;    /* MLM transform dense and LayerNorm */
    const char *mbias;       /* MLM output bias (decoder tied to the word
                                embeddings, so its weight is never stored) */
    const char *mbias_alt;   /* older name of mbias, or NULL */
    int pool_act;            /* BERT_T_ACT_*: tanh pooler / ReLU / GELU */
    int ao_dropout;          /* dropout on the attention output projection
                                (DistilBERT has none there) */
    const char *cls_seq;     /* sequence classifier module, NULL =
                                "classifier" */
    int pos_from_pad;        /* position ids start at pad_token_id + 1 */
    int head_in_dropout;     /* dropout on the [CLS] features before the
                                head's dense layer too */
    const char *proj;        /* embeddings_project module (E != H), or NULL */
} bert_arch;

/* The table entry of a family (XLM-RoBERTa shares RoBERTa's names). */
const bert_arch *bert__arch_of(bert_family family);

/* What a checkpoint holds, for bert__arch_tensors. */
typedef struct bert_arch_shape {
    size_t V, P, TV;  /* vocabulary, positions, token types (0: none) */
    size_t E, H, I, L; /* embedding width, hidden, intermediate, layers */
    size_t C;         /* classifier outputs, 0: no classifier */
    int pooler;       /* 0 none, 1 required, 2 optional */
    int head;         /* the sequence head's own dense layer (A->head) */
    int mlm;          /* MLM transform, LayerNorm and output bias */
} bert_arch_shape;

/* What each tensor is, for the callers' own storage. */
typedef enum {
    BERT_R_WTE, BERT_R_WPE, BERT_R_WTT, BERT_R_LNE, BERT_R_EP,
    BERT_R_Q, BERT_R_K, BERT_R_V, BERT_R_AO, BERT_R_LN1, BERT_R_FC,
    BERT_R_FC2, BERT_R_LN2, BERT_R_POOL, BERT_R_HEAD, BERT_R_CLS, BERT_R_MT,
    BERT_R_MLN, BERT_R_MBIAS
} bert_arch_role;

typedef struct bert_arch_tensor {
    const char *name;  /* full name, A->prefix included for the encoder */
    bert_arch_role role;
    size_t layer;      /* for the per-layer roles */
    int bias;          /* the .bias of a module (LayerNorm: its beta) */
    size_t d0, d1;     /* shape; d1 0: one-dimensional */
    int optional;
} bert_arch_tensor;

typedef int (*bert_arch_fn)(void *ctx, const bert_arch_tensor *t);

/* Calls fn for every tensor of a checkpoint of shape s in A's names, in a
 * fixed order (embeddings, layers, pooler, head, classifier, MLM head);
 * stops at and returns fn's first nonzero result, else 0. */
int bert__arch_tensors(const bert_arch *A, const bert_arch_shape *s,
                       bert_arch_fn fn, void *ctx);

#endif
