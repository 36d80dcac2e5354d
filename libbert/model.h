/*
 * libbert/model.h - private structures of a loaded model and a session, and
 * the internal entry points shared by model.c, weights.c, session.c,
 * encoder.c, heads.c, pipeline.c, windows.c and tagger.c.
 */
#ifndef LIBBERT_MODEL_H
#define LIBBERT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "libbert/bert.h"
#include "libbert/config.h"
#include "libbert/gemm.h"
#include "libbert/safetensors.h"

/* ---- weights -------------------------------------------------------------- */

/* One encoder layer; H = hidden, I = intermediate.  Linear weights are
 * PyTorch's (out, in). */
typedef struct bert_layer_w {
    const float *q_w, *k_w, *v_w; /* (H,H) */
    const float *q_b, *k_b, *v_b; /* (H)   */
    const float *o_w, *o_b;       /* (H,H), (H) attention output dense */
    const float *ln1_w, *ln1_b;   /* (H) attention LayerNorm (DistilBERT sa_layer_norm) */
    const float *f1_w, *f1_b;     /* (I,H), (I) intermediate dense / ffn.lin1 */
    const float *f2_w, *f2_b;     /* (H,I), (H) output dense / ffn.lin2 */
    const float *ln2_w, *ln2_b;   /* (H) output LayerNorm (DistilBERT output_layer_norm) */
} bert_layer_w;

typedef struct bert_weights {
    const float *word_emb;        /* (V,E); E = embedding_size (ELECTRA) or H */
    const float *pos_emb;         /* (P,E) */
    const float *type_emb;        /* (TV,E); NULL for DistilBERT */
    const float *emb_ln_w, *emb_ln_b; /* (E) */
    const float *emb_proj_w, *emb_proj_b; /* (H,E),(H): ELECTRA's
                                     embeddings_project when E != H, else NULL */
    bert_layer_w *layers;         /* [L], owned */
    const float *pool_w, *pool_b; /* (H,H),(H): BERT/RoBERTa pooler,
                                     DistilBERT pre_classifier or the
                                     RoBERTa/ELECTRA sequence head's
                                     classifier.dense; NULL when not used */
    const float *cls_w, *cls_b;   /* (C,H),(C): classifier (out_proj of the
                                     RoBERTa/ELECTRA sequence head); NULL for
                                     base models */
} bert_weights;

/* Fills w from the tensors of st according to cfg (names as transformers'
 * state_dict(), prefix "bert."/"distilbert."/"roberta."/"electra."
 * detected).  Tensors that are F32
 * and aligned are used in place; others are converted into *conv (allocated
 * here, owned by the caller, NULL when nothing needed converting).  `label`
 * is the safetensors path for messages.  Returns BERT_EMISSING (tensor
 * absent), BERT_ESHAPE (shape contradicts config), BERT_EUNSUPPORTED (dtype
 * not F32/F16/BF16), BERT_ENOMEM. */
int bert__weights_bind(const bert_cfg *cfg, const bert_st_file *st,
                       const char *label, bert_weights *w, float **conv,
                       bert_error *err);

/* The weight matrices of the products, packed once for libbert's kernels
 * (gemm.h's bert_wmat: the original pointer, and panels when packed). */
typedef struct bert_layer_mats {
    bert_wmat q, k, v, o, f1, f2;
} bert_layer_mats;

typedef struct bert_mats {
    bert_layer_mats *layers;    /* [n_layers], owned */
    size_t n_layers;
    bert_wmat pool, cls;        /* .w NULL when the model has none */
    int packed;                 /* 1 when the panels exist */
    bert_precision prec;        /* of the encoder's matrices */
    size_t packed_bytes;
    void *map;                  /* the panels' cache file mapping (shared
                                   between processes), or NULL when they
                                   are private allocations */
    size_t map_size;
} bert_mats;

/* A load's progress (bert_model_params.progress): done and total in bytes
 * of weights. */
typedef struct bert__progress {
    bert_progress_fn fn;    /* NULL: nothing to report */
    void *data;
    size_t done, total;
} bert__progress;

/* Adds n to p->done and reports done and total; BERT_ECANCELED when the
 * callback asks to stop, else BERT_OK. */
int bert__progress_add(bert__progress *p, size_t n);

/* Fills m->mats from m->w; with kernels other than BLIS (and a CPU that has
 * libbert's kernels), packs every matrix on n_threads threads (the
 * encoder's in prec, which kernels must run; AUTO: the best tier for prec;
 * pooler and classifier in FP32) and releases
 * the pages of the mapped originals (madvise), so one copy stays resident.
 * With cache_dir, the panels come from (or are saved to) a file there that
 * every process loading the same st_path shares (packed.c).  Adds the
 * float32 bytes of the matrices it packs to pr->total, reports once before
 * packing and after each matrix.  BERT_OK, BERT_ENOMEM or BERT_ECANCELED
 * (m->mats freed on failure). */
int bert__mats_build(bert_model *m, bert_kernels kernels,
                     bert_precision prec, int n_threads,
                     const char *cache_dir, const char *st_path,
                     bert__progress *pr);
void bert__mats_free(bert_mats *mm);

/* ---- model ---------------------------------------------------------------- */

struct bert_model {
    bert_cfg cfg;
    bert_st_file st;            /* the mapping */
    bert_weights w;
    bert_mats mats;             /* the products' view of w, maybe packed */
    float *conv;                /* converted (F16/BF16/misaligned) tensors */
    bert_tokenizer *tok;        /* NULL when loaded without tokenizer */
    size_t max_len;             /* bert_model_max_length() */
    int has_pooler_out;         /* pooler output exists (BERT with pooler) */
};

/* BERT_OK when m is a `task` model (sequence or token classification),
 * else BERT_EINVAL with err naming its architecture: the check of every
 * pipeline. */
int bert__model_task(const bert_model *m, bert_task task, bert_error *err);

/* ---- session -------------------------------------------------------------- */

struct bert_session {
    const bert_model *m;
    bert_gemm_ctx *gemm;
    int n_threads;
    /* Activation arena: one block, pointed into by the buffers below; sized
     * for cap_tokens packed tokens and sequences up to cap_seq tokens. */
    float *arena;
    size_t cap_tokens, cap_seq;
    float *x;      /* (T,H) hidden state */
    float *q, *k, *v; /* (T,H) each */
    float *ctx;    /* (T,H) attention context, merged heads */
    float *tmp;    /* (T,H) projection output */
    float *inter;  /* (T,I) feed-forward intermediate */
    float *scores; /* (cap_seq, cap_seq) one head's attention matrix */
    float *tp;     /* the tensor-parallel layers' scratch (encoder.c) */
    size_t tp_cap; /* its floats, for n_threads threads */
    size_t score_chunk; /* bert__score_chunk of this CPU's L2 */
    /* Pipeline scratch (grown on demand, reused across calls). */
    bert_encoding *enc;
    struct bert__windows *win;    /* a long text's windows (windows.h) */
    float *acc;                   /* [C] a text's logits */
    size_t acc_cap;
    struct bert__batch *batch;    /* the batched calls' scratch */
};

/* ---- batched pipelines (pipeline.c) ---------------------------------------
 * The engine of bert_classify_batch and bert_tag_batch: sequences gathered
 * into the session's scratch, then run in length-sorted packed runs. */

/* One model sequence of a batched call: tokens [off, off + n) of the token
 * buffers, logit rows from `row` of the logits buffer, of text `item`. */
typedef struct bert__seq {
    size_t off, n, row, item;
    int status;
} bert__seq;

/* The session's scratch for the batched calls, grown on demand. */
struct bert__batch {
    int32_t *ids, *tids;
    size_t ntok, tok_cap, tids_cap;
    bert__seq *seq;
    size_t nseq, seq_cap;
    size_t *ord;            /* sequence indices, length-sorted */
    size_t ord_cap;
    bert_input *in;
    size_t in_cap;
    float *logits;          /* rows of all sequences */
    size_t logits_cap;
    float *run;             /* one run's logits */
    size_t run_cap;
};

/* The session's batch scratch, emptied; NULL when out of memory. */
struct bert__batch *bert__batch_begin(bert_session *s);
/* Appends a sequence of n tokens (ids; type ids, NULL = all 0) of text
 * `item`.  BERT_ENOMEM on failure. */
int bert__batch_add(struct bert__batch *b, size_t item, const int32_t *ids,
                    const int32_t *tids, size_t n);
/* Runs every sequence of b in length-sorted packed runs (bert_batch_params)
 * into b->logits: C floats per sequence, or per token with token_rows,
 * from row seq->row.  A failed run is retried one sequence at a time; each
 * failing one gets seq->status and is passed to fail() with its run's
 * error.  Returns BERT_OK, BERT_ENOMEM or BERT_ECANCELED (err filled). */
int bert__batch_run(bert_session *s, struct bert__batch *b,
                    const bert_batch_params *bp, int token_rows, size_t C,
                    bert_error *err,
                    void (*fail)(void *, const bert__seq *,
                                 const bert_error *),
                    void *fail_data);
/* Frees the scratch; NULL is a no-op. */
void bert__batch_free(struct bert__batch *b);

/* Makes the arena hold T packed tokens with sequences up to maxn tokens;
 * reallocates only when it must grow.  BERT_ENOMEM on failure (the old
 * arena is kept). */
int bert__session_reserve(bert_session *s, size_t T, size_t maxn);

/* ---- the encoder's forward pass (encoder.c) --------------------------------
 * One forward for inference and training: a session runs it over its model
 * and arena (bert__encoder_forward); the trainer over its parameters, with a
 * bert__keep that adds dropout and keeps what its backward pass reads. */

/* What a forward reads and where it works: the config, the embeddings' and
 * layers' weights (biases and norms from w->layers, the products' matrices
 * from mats), the product context, and the activation buffers as in
 * bert_session (training uses only tmp; scores holds cap_seq^2 floats). */
typedef struct bert__enc {
    const bert_cfg *cfg;
    const bert_weights *w;
    const bert_layer_mats *mats;  /* [layers] */
    const bert_gemm_ctx *gemm;
    int n_threads;
    float *x, *q, *k, *v, *ctx, *tmp, *inter, *scores;
    size_t cap_seq;
    float *tp;      /* the tensor-parallel layers' scratch (NULL: none) */
    size_t tp_cap;  /* its floats */
    size_t score_chunk; /* inference: floats of scores a chunk of query
                           rows holds (0: SCORE_CHUNK, encoder.c) */
} bert__enc;

/* One layer's activations kept for the backward pass, on the packed rows. */
typedef struct bert__keep_layer {
    float *q, *k, *v;       /* (T,H) each */
    float *probs;           /* attention probabilities before dropout: per
                               sequence b in order, NH blocks of n_b x n_b,
                               head by head */
    float *dropped;         /* scratch of the same size for them after
                               dropout (written only when attention dropout
                               is on; read by this layer's forward only, so
                               layers may share it) */
    float *ctx;             /* (T,H) merged heads */
    float *r1, *mean1, *rstd1, *x1; /* attention block: the residual sum
                               (T,H) before its LayerNorm, the norm's mean
                               and 1/std (T), the block's output (T,H) */
    float *fch, *fca;       /* (T,I) feed-forward before / after act */
    float *r2, *mean2, *rstd2, *x2; /* output block, as r1..x1 */
} bert__keep_layer;

/* Training's extension of the forward.  Dropout masks are
 * bert__t_keep(seed, bert__t_stream(micro, layer, site), element index)
 * (libbert/train/ops.h), which the backward pass regenerates. */
typedef struct bert__keep {
    float *emb, *emean, *erstd; /* (T,E) summed embeddings, their norm's
                                   statistics (T) */
    float *x0e;             /* (T,E) the normalised, dropped-out embeddings:
                               the projection's input (ELECTRA); x0 where
                               there is no projection */
    float *x0;              /* (T,H) the first layer's input */
    int32_t *pos;           /* (T) position ids */
    bert__keep_layer *layers; /* [layers] */
    float p_hidden, p_att, p_ao; /* dropout probabilities, 0 = off */
    uint64_t seed, micro;
} bert__keep;

/* Embeddings + L layers on the packed batch (T rows of `batch` sequences).
 * Inference (kp NULL): result in e->x; with cls_only as in
 * bert__encoder_forward.  Training (kp, cls_only 0): every activation in
 * kp, the result in kp->layers[L-1].x2.  Inputs are validated by the
 * caller. */
/* Floats of attention scores an inference chunk of query rows holds, for
 * an L2 of l2_bytes (0: unknown). */
size_t bert__score_chunk(size_t l2_bytes);

void bert__encode(const bert__enc *e, const bert_input *in, size_t batch,
                  size_t T, int cls_only, const bert__keep *kp);

/* Floats of scratch the encoder's tensor-parallel layers need for T rows on
 * nt threads (0 when they are not used at nt: the arena adds this). */
size_t bert__encode_tp_floats(const bert_config *c, int nt, size_t T);

/* Encoder: embeddings + L layers on the packed batch; result in s->x (T,H).
 * With cls_only, only the first row of each sequence is final (the other
 * rows hold the previous layer's states): for callers that read nothing
 * else (pooler, sequence logits), the last layer then computes keys and
 * values for all rows but the rest for the [CLS] rows only.  Inputs are
 * validated by the caller. */
void bert__encoder_forward(bert_session *s, const bert_input *in,
                           size_t batch, size_t T, int cls_only);

/* Heads on s->x: pooler (B,H), sequence logits (B,C), token logits (T,C).
 * Any output may be NULL. */
void bert__heads_forward(bert_session *s, const bert_input *in, size_t batch,
                         size_t T, float *pooler, float *logits);

#endif
