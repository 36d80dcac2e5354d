/* libbert/train/trainer.h - the trainer's internals (shared with tests). */
#ifndef LIBBERT_TRAIN_TRAINER_H
#define LIBBERT_TRAIN_TRAINER_H

#include "libbert/bert_train.h"
#include "libbert/config.h"
#include "libbert/gemm.h"
#include "libbert/model.h"

/* Parameter tensors, in the order of one contiguous allocation.  Per-layer
 * tensors are stacked [L, ...]; Q, K and V of a layer are adjacent so that
 * they form one [3H, H] matrix (and one [3H] bias).  DistilBERT uses the
 * same slots: no P_WTT (size 0), P_POOLW/B = pre_classifier, P_MTW..P_MBIAS
 * = vocab_transform, vocab_layer_norm, vocab_projector.bias. */
enum {
    P_WTE, P_WPE, P_WTT, P_LNEW, P_LNEB,
    P_QKVW, P_QKVB, P_AOW, P_AOB, P_LN1W, P_LN1B,
    P_FCW, P_FCB, P_FC2W, P_FC2B, P_LN2W, P_LN2B,
    P_POOLW, P_POOLB, P_CLSW, P_CLSB,
    P_MTW, P_MTB, P_MLNW, P_MLNB, P_MBIAS,
    P_EPW, P_EPB, /* ELECTRA's embeddings_project (H,E), (H) when E != H */
    P_COUNT
};

#include "libbert/arch.h"

typedef struct bert_trainer {
    bert_cfg cfg;              /* config (labels owned) */
    const bert_arch *arch;     /* names and details (libbert/arch.h) */
    bert_train_params p;
    bert_train_task task;
    size_t V, H, L, NH, I, P, TV, C;
    size_t E;                  /* embedding width: ELECTRA's embedding_size,
                                  else H */
    int act;                   /* BERT_T_ACT_* */
    float init_range;
    float head_dropout;        /* dropout before the classifier */
    float qa_dropout;          /* DistilBERT config key, kept for saving */
    int freeze_wpe;            /* DistilBERT sinusoidal_pos_embds: position
                                  embeddings are fixed, never updated */
    int fresh_head;            /* made from a directory that lacked some of
                                  the head's tensors (initialised fresh) */
    size_t sizes[P_COUNT];
    size_t nparams;
    float *params, *grads, *m, *v;
    float *pt[P_COUNT], *gt[P_COUNT];
    size_t steps;              /* optimizer steps done */
    uint64_t micro;            /* accumulate calls done (dropout streams) */
    /* activations, grown on demand */
    float *acts;
    size_t acts_cap;
    int32_t *ibuf;             /* the packed batch's ids, types, labels,
                                  positions, MLM rows */
    size_t ibuf_cap;
    bert_input *in;            /* its sequences */
    size_t in_cap;
    void *rd;                  /* R-Drop's doubled batch (twice) */
    size_t rd_cap;
    /* the encoder forward's view of the parameters (bind_views) */
    bert_weights ew;
    bert_layer_w *lw;          /* [L] */
    bert_layer_mats *lm;       /* [L] */
    bert__keep_layer *kl;      /* [L] the activations kept per layer */
    bert_gemm_ctx *gemm;       /* the products' threads and kernels */
} bert_trainer;

/* One forward (train: dropout on) + optional backward on a batch;
 * internal entry point shared by accumulate/predict and the tests. */
int bert__t_run(bert_trainer *t, const bert_train_batch *b, int train,
                int backward, float weight, float *logits, double *loss,
                bert_error *err);

#endif
