/*
 * libbert/bert_train.h - train BERT and DistilBERT encoders (and fine-tune
 * RoBERTa and ELECTRA classifiers) on CPUs:
 * fine-tune a Hugging Face model directory or train one from a config.json,
 * for sequence classification, token classification or masked-language
 * modelling.
 *
 *   bert_train_params p = bert_train_default_params();
 *   p.task = BERT_TRAIN_SEQUENCE; p.num_labels = 2; p.labels = names;
 *   p.total_steps = 1000; p.warmup_steps = 100;
 *   bert_trainer *t;
 *   if (bert_trainer_create("models/base", NULL, &p, &t, &err)) ...
 *   for each batch: bert_trainer_accumulate(t, &batch, 1.0f, &loss, &err);
 *                   bert_trainer_update(t, &gnorm, &err);
 *   bert_trainer_save(t, "out", &err);   // config.json + model.safetensors
 *   bert_trainer_free(t);
 *
 * Architectures: BERT (model_type "bert") with absolute positions, and
 * DistilBERT (model_type "distilbert"), each computed as transformers does
 * in training mode:
 *   - DistilBERT has no token types (batch type_ids are ignored) and no
 *     dropout after the attention output projection;
 *   - sequence head: BERT [CLS] -> pooler dense -> tanh -> dropout
 *     (classifier_dropout, default hidden_dropout_prob) -> classifier;
 *     DistilBERT [CLS] -> pre_classifier -> ReLU -> dropout
 *     (seq_classif_dropout) -> classifier;
 *   - token head: dropout (BERT classifier_dropout, DistilBERT dropout) ->
 *     classifier;
 *   - MLM head: transform dense -> activation -> LayerNorm -> decoder tied
 *     to the word embeddings (BERT cls.predictions.*, DistilBERT
 *     vocab_transform / vocab_layer_norm / vocab_projector);
 *   - DistilBERT with sinusoidal_pos_embds: the position embeddings are
 *     the fixed sinusoids and are not trained.
 * The trainer owns one float32 copy of the weights, their gradients and
 * AdamW's two moments.
 *
 * Determinism: dropout masks and initial weights come from a counter-based
 * hash of (seed, step, layer, site, index) and every reduction runs in a
 * fixed order, so the same seed, data order and thread count give
 * bit-identical weights.
 *
 * Conventions are those of <libbert/bert_tokenizer.h> (status codes,
 * bert_error, ownership, no printing, no global state).  A trainer is not
 * thread-safe: use it from one thread at a time (it runs its own threads).
 */
#ifndef LIBBERT_BERT_TRAIN_H
#define LIBBERT_BERT_TRAIN_H

#include <libbert/bert.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bert_trainer bert_trainer;

typedef enum {
    BERT_TRAIN_SEQUENCE = 1, /* (Distil)BertForSequenceClassification */
    BERT_TRAIN_TOKEN,        /* (Distil)BertForTokenClassification */
    BERT_TRAIN_MLM           /* (Distil)BertForMaskedLM (decoder tied to the
                                word embeddings) */
} bert_train_task;

typedef struct bert_train_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_train_task task;      /* default BERT_TRAIN_SEQUENCE */
    size_t num_labels;         /* classes (sequence/token); 0 = config's */
    const char *const *labels; /* num_labels names for id2label, or NULL =
                                  the config's (or LABEL_<i>) */
    float lr;                  /* peak learning rate (default 5e-5) */
    float weight_decay;        /* AdamW decay, not on biases/LayerNorm (0.01) */
    float beta1, beta2, eps;   /* AdamW (0.9, 0.999, 1e-8) */
    size_t warmup_steps;       /* linear warm-up, in optimizer steps (0) */
    size_t total_steps;        /* linear decay to 0 at this step; 0 = none */
    float max_grad_norm;       /* clip by global norm; <= 0: off (1.0) */
    uint64_t seed;             /* weights init and dropout (42) */
    int n_threads;             /* BLIS + OpenMP threads (1) */
    int dropout;               /* 1: config.json's dropout probabilities
                                  during training (default); 0: none */
    float embedding_lr_scale;  /* the word embeddings learn at lr times this
                                  (1.0; < 1 keeps pre-trained vectors) */
} bert_train_params;

BERT_API bert_train_params bert_train_default_params(void);

/* Creates a trainer.  Exactly one of init_dir (a Hugging Face model
 * directory: config.json + model.safetensors; BertModel, BertFor*,
 * BertForMaskedLM, DistilBertModel, DistilBertFor* and DistilBertForMaskedLM
 * checkpoints; head tensors it lacks or whose shape differs are initialised
 * fresh, encoder tensors must all be there) or config_json (a config.json
 * path: every weight initialised from N(0, initializer_range), biases 0,
 * LayerNorm 1/0) must be non-NULL.  The architecture is the config's
 * model_type; the task, not the config's architectures, chooses the head.
 * params NULL = defaults.  Returns BERT_OK and *out, or an error (*out NULL):
 * BERT_EINVAL (bad arguments), BERT_EMISSING / BERT_EFORMAT / BERT_ESHAPE
 * (files), BERT_EUNSUPPORTED (a config libbert cannot run), BERT_ENOMEM. */
BERT_API int bert_trainer_create(const char *init_dir, const char *config_json,
                                 const bert_train_params *params,
                                 bert_trainer **out, bert_error *err);
BERT_API void bert_trainer_free(bert_trainer *t);

/* A padded batch: `batch` rows of `seq_len` tokens, row b real for its first
 * lengths[b] (1..seq_len) tokens; padding ids must still be valid ids.
 * type_ids: BERT only (DistilBERT ignores them).
 * labels: sequence task [batch] class ids; token and MLM tasks
 * [batch*seq_len], a negative value = not scored (padding, [CLS], non-first
 * sub-tokens, unmasked MLM positions). */
typedef struct bert_train_batch {
    size_t batch;
    size_t seq_len;            /* <= max_position_embeddings */
    const int32_t *ids;        /* [batch*seq_len] */
    const int32_t *type_ids;   /* [batch*seq_len] or NULL (all 0) */
    const size_t *lengths;     /* [batch] */
    const int32_t *labels;     /* see above (may be NULL for predict) */
} bert_train_batch;

/* Forward (with dropout) and backward on one batch; the gradient of
 * weight * mean loss is ADDED to the accumulated gradient (gradient
 * accumulation: call it k times with weight 1/k, then update).  The batch's
 * mean loss goes to *loss (may be NULL).  BERT_EINVAL for a bad batch (ids,
 * lengths or labels out of range). */
BERT_API int bert_trainer_accumulate(bert_trainer *t,
                                     const bert_train_batch *batch,
                                     float weight, double *loss,
                                     bert_error *err);

/* Clips the accumulated gradient to max_grad_norm, applies one AdamW step
 * at the scheduled learning rate and zeroes the gradient.  *grad_norm (may
 * be NULL) gets the norm before clipping. */
BERT_API int bert_trainer_update(bert_trainer *t, double *grad_norm,
                                 bert_error *err);

/* Evaluation forward (no dropout, no gradient).  logits (may be NULL):
 * sequence [batch][C], token [batch*seq_len][C]; MLM: not written.  *loss
 * (may be NULL) gets the mean loss when batch->labels is non-NULL. */
BERT_API int bert_trainer_predict(bert_trainer *t,
                                  const bert_train_batch *batch, float *logits,
                                  double *loss, bert_error *err);

/* Writes dir/config.json and dir/model.safetensors (dir must exist) as
 * transformers' save_pretrained would for the task's architecture
 * (BertFor* or DistilBertFor*, with that architecture's config keys and
 * tensor names; the tied MLM decoder weight is not stored).  The tokenizer
 * files are the caller's. */
BERT_API int bert_trainer_save(const bert_trainer *t, const char *dir,
                               bert_error *err);

/* Optimizer state for --resume: weights, both moments, step counters, to
 * one binary file; load checks that the trainer has the same shapes. */
BERT_API int bert_trainer_save_state(const bert_trainer *t, const char *path,
                                     bert_error *err);
BERT_API int bert_trainer_load_state(bert_trainer *t, const char *path,
                                     bert_error *err);

/* Mutable view of one parameter tensor, by its Hugging Face name (e.g.
 * "bert.embeddings.word_embeddings.weight",
 * "distilbert.embeddings.word_embeddings.weight"; Q/K/V are views into the
 * trainer's fused layout and are contiguous too): *data and *n elements.
 * For initialising weights from elsewhere between updates.  BERT_EMISSING
 * when the model has no such tensor. */
BERT_API int bert_trainer_tensor(bert_trainer *t, const char *name,
                                 float **data, size_t *n, bert_error *err);

/* Optimizer steps taken so far; learning rate the next update will use. */
BERT_API size_t bert_trainer_steps(const bert_trainer *t);
BERT_API double bert_trainer_lr(const bert_trainer *t);
/* The model's configuration (borrowed); labels via bert_trainer_label. */
BERT_API const bert_config *bert_trainer_config(const bert_trainer *t);
BERT_API const char *bert_trainer_label(const bert_trainer *t, size_t id);
/* Number of trainable float parameters. */
BERT_API size_t bert_trainer_num_params(const bert_trainer *t);

/* ---- data readers ------------------------------------------------------ */

/* The training data formats bert-train reads (docs/training.md):
 *  CSV    a header row naming the columns, then one example per record:
 *         text[,text_pair],label (RFC 4180 quoting: fields may hold commas,
 *         quotes and newlines; an empty line is skipped);
 *  CONLL  token<TAB>tag per line (further TAB columns are ignored), a blank
 *         line between sentences;
 *  TEXT   one text per line.
 * Lines end at '\n' only (a '\r' before it belongs to the line). */
typedef enum {
    BERT_DATA_CSV = 0,
    BERT_DATA_CONLL,
    BERT_DATA_TEXT
} bert_data_format;

typedef struct bert_reader_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_data_format format;  /* default BERT_DATA_CSV */
    const char *text_column;  /* CSV: default "text" */
    const char *pair_column;  /* CSV: default NULL (no pair) */
    const char *label_column; /* CSV: default "label" */
} bert_reader_params;

BERT_API bert_reader_params bert_reader_default_params(void);

/* One example, borrowed from the reader until its next call. */
typedef struct bert_record {
    const char *text;   /* CSV, TEXT: NUL-terminated (a TEXT line may also
                           hold NUL bytes: use text_len) */
    size_t text_len;
    const char *pair;   /* CSV with a pair column, else NULL */
    size_t pair_len;
    const char *label;  /* CSV, else NULL */
    size_t n_words;     /* CONLL: the sentence's tokens and tags */
    const char *const *words;
    const char *const *tags;
    long line;          /* where it is, for messages: CSV the record number
                           (the header is record 1; records, not lines: a
                           quoted field may span lines and empty lines are
                           no records); TEXT the line number;
                           CONLL the line that ended the sentence (its
                           blank line, or one past the last line) */
} bert_record;

typedef struct bert_reader bert_reader;

/* Opens path (free with bert_reader_free).  params NULL = defaults.  A CSV
 * file is parsed whole here: BERT_EFORMAT for malformed CSV, an empty file
 * or a header without a named column; BERT_EIO (a file that cannot be
 * read), BERT_ENOMEM, BERT_EINVAL.  Messages start with the path. */
BERT_API int bert_reader_open(const char *path,
                              const bert_reader_params *params,
                              bert_reader **out, bert_error *err);

/* The next example, in file order, into *rec: returns 1, 0 at the end, or a
 * negative status with the message naming the place ("data.csv: record 7
 * has 1 fields", "train.conll:12: expected token<TAB>tag"): BERT_EFORMAT,
 * BERT_ENOMEM.  Examples before a bad record are all returned first, so a
 * caller sees the first problem of the file. */
BERT_API int bert_reader_next(bert_reader *r, bert_record *rec,
                              bert_error *err);

BERT_API void bert_reader_free(bert_reader *r);

#ifdef __cplusplus
}
#endif
#endif
