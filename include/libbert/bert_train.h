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
 * or, with the pipeline bert-train runs (datasets, shuffled length-bucketed
 * batches, MLM masking, evaluation after each epoch, the best model saved
 * as a complete model directory, resumable state):
 *
 *   bert_dataset *train, *dev;
 *   bert_dataset_load("train.csv", tok, NULL, &train, &err);
 *   bert_dataset_params dp = bert_dataset_default_params();
 *   dp.labels = bert_dataset_labels(train, &dp.num_labels);
 *   bert_dataset_load("dev.csv", tok, &dp, &dev, &err);
 *   bert_fit_params fp = bert_fit_default_params();
 *   fp.out_dir = "out"; fp.tokenizer = tok; fp.tokenizer_dir = "models/base";
 *   p.labels = dp.labels; p.num_labels = dp.num_labels;
 *   p.total_steps = bert_fit_total_steps(train, &fp);
 *   ... bert_trainer_create as above ...
 *   bert_fit(t, train, dev, &fp, NULL, &err);
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
    float layer_lr_decay;      /* layer-wise learning-rate decay (ELECTRA's,
                                  Clark et al. 2020), in (0, 1]: the heads
                                  learn at lr, layer l of L at
                                  lr * d^(L - l), the embeddings at
                                  lr * d^(L + 1), so layers near the input,
                                  which pre-training shaped most, move
                                  least (default 1.0: off; 0.8 in ELECTRA's
                                  fine-tunes) */
    float rdrop;               /* R-Drop (Liang et al. 2021), sequence and
                                  token tasks, >= 0: each training forward
                                  runs the batch twice under different
                                  dropout masks, and the loss is
                                  (CE1 + CE2 + rdrop * (KL(p1||p2) +
                                  KL(p2||p1)) / 2) / 2, the two passes'
                                  mean cross-entropy plus their
                                  disagreement (token task: at the scored
                                  positions).  It costs a second forward
                                  and backward.  0 = off (default); the
                                  paper's GLUE fine-tunes used 0.1 to 1 */
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
 * sequence [batch][C], token [batch*seq_len][C]; MLM [m][vocab_size], one
 * row per scored position (a label >= 0 within its row's length) in batch
 * order (none without labels).  *loss (may be NULL) gets the mean loss
 * when batch->labels is non-NULL. */
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

/* ---- datasets ---------------------------------------------------------- */

/* A tokenized training or evaluation set, what bert_fit and bert_evaluate
 * run on.  It is read from one file whose format follows the task
 * (docs/training.md):
 *  BERT_TRAIN_SEQUENCE  CSV (the bert_reader CSV format): one example a
 *                       record, its text (and pair) encoded with the
 *                       special tokens, its label a class;
 *  BERT_TRAIN_TOKEN     CoNLL: one example a sentence, its words joined by
 *                       spaces and encoded; each word's tag goes to its
 *                       first sub-token (the others are not scored), or
 *                       with label_all_subtokens to every sub-token, a B-X
 *                       tag continued as I-X where I-X is a label already
 *                       known;
 *  BERT_TRAIN_MLM       plain text: every line tokenized without special
 *                       tokens and the stream packed into chunks of
 *                       max_length - 2 tokens framed by [CLS] ... [SEP]
 *                       (a last chunk of 8 tokens or fewer is dropped).
 * Examples longer than max_length tokens are truncated.  A dataset is
 * immutable once loaded: share it between threads and calls freely. */
typedef struct bert_dataset bert_dataset;

typedef struct bert_dataset_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_train_task task;      /* default BERT_TRAIN_SEQUENCE */
    const char *text_column;   /* CSV: default "text" */
    const char *pair_column;   /* CSV: default NULL (no pair) */
    const char *label_column;  /* CSV: default "label" */
    size_t max_length;         /* tokens per example with the special
                                  tokens, at least 8 (default 128) */
    const char *const *labels; /* num_labels names in id order: a label
                                  outside them is an error (an evaluation
                                  set takes its training set's); NULL
                                  (default): the labels of the file, sorted
                                  by bytes with "O" first */
    size_t num_labels;
    int label_all_subtokens;   /* token task (default 0) */
    size_t max_examples;       /* keep only the first N examples; 0
                                  (default): all.  The whole file is still
                                  read and checked */
    /* MLM text: a line the tokenizer refuses (invalid UTF-8, ...) is
     * skipped, and reported here as "FILE:LINE: reason (line skipped)"
     * (NULL, the default: skipped silently). */
    void (*warning)(const char *message, void *user_data);
    void *warning_data;
} bert_dataset_params;

BERT_API bert_dataset_params bert_dataset_default_params(void);

/* Reads and tokenizes path with tok (borrowed for the call only) into *out
 * (free with bert_dataset_free).  params NULL = defaults.  Returns BERT_OK,
 * or with *out NULL: the reader's errors (bert_reader_open and _next:
 * BERT_EIO, BERT_EFORMAT); BERT_EFORMAT for a label or tag outside fixed
 * labels ("train.csv: record 7: unknown label 'x'", "train.conll:12:
 * unknown tag 'B-X'"); the tokenizer's error for a CSV text or CoNLL
 * sentence it refuses (BERT_EUTF8, ...: its reason after the place);
 * BERT_EINVAL (NULL arguments, max_length below 8, a vocabulary without
 * [CLS], [SEP] or [PAD]); BERT_ENOMEM.  An empty file is no error: the
 * dataset has 0 examples. */
BERT_API int bert_dataset_load(const char *path, const bert_tokenizer *tok,
                               const bert_dataset_params *params,
                               bert_dataset **out, bert_error *err);
BERT_API void bert_dataset_free(bert_dataset *d);

/* Number of examples (0 for NULL). */
BERT_API size_t bert_dataset_count(const bert_dataset *d);

/* The label names in id order (borrowed, valid as long as d) and their
 * number in *n_labels (may be NULL): what bert_train_params.labels and a
 * dev set's bert_dataset_params.labels take.  NULL and 0 for MLM. */
BERT_API const char *const *bert_dataset_labels(const bert_dataset *d,
                                                size_t *n_labels);

/* ---- the training loop ------------------------------------------------- */

/* What bert_fit reports to its progress callback. */
typedef enum {
    BERT_FIT_STEP = 1,  /* after each optimizer step */
    BERT_FIT_STOPPED,   /* time_limit passed at that step: the epoch ends
                           there (evaluated, saved) and so does the run */
    BERT_FIT_EPOCH      /* an epoch evaluated, before its saves */
} bert_fit_event;

/* Evaluation of a model on a dataset (bert_evaluate, BERT_FIT_EPOCH). */
typedef struct bert_eval_result {
    double score;      /* what picks the best model (higher is better):
                          sequence accuracy; token entity F1 when the tags
                          are IOB, else token accuracy; MLM minus the loss */
    double loss;       /* mean loss per example */
    double accuracy;   /* sequence: of the examples; token: of the words
                          (the first sub-token's prediction; words cut by
                          truncation count as "O") */
    double macro_f1;   /* sequence */
    double precision, recall, f1; /* token with IOB tags: entities as
                          seqeval counts them (bert_entity_counts_add),
                          over the words bert-tag's aggregation finds
                          ("U.S." is four: U . S .), each tagged by its
                          first token: the entities bert-tag prints by
                          default for a model bert-train wrote
                          (aggregation "first"), given the sentence's words
                          joined by spaces */
    double perplexity; /* MLM: bert_perplexity(loss) */
    int entities;      /* token: 1 when the entity scores were computed */
    size_t n;          /* examples evaluated */
    char text[256];    /* the line bert-train prints, e.g. "dev loss 0.3120
                          accuracy 0.9000 macro-F1 0.8990 (10 examples)" */
} bert_eval_result;

typedef struct bert_fit_progress {
    bert_fit_event event;
    size_t epoch;          /* the epoch, from 1 */
    size_t epochs;         /* the last epoch this call runs */
    size_t step;           /* optimizer steps taken (bert_trainer_steps) */
    size_t total_steps;    /* of the whole schedule (bert_fit_total_steps) */
    size_t done, todo;     /* examples of this epoch trained on, of todo */
    size_t examples;       /* examples trained on by this call */
    double loss;           /* STEP, STOPPED: moving average of the
                              micro-batch losses (0.98 old + 0.02 new,
                              restarted each epoch); EPOCH: the epoch's mean
                              micro-batch loss */
    double lr;             /* the learning rate of the next step */
    double grad_norm;      /* STEP, STOPPED: the step's gradient norm before
                              clipping */
    double rate;           /* examples per second in this epoch */
    double epoch_seconds;  /* since this epoch started */
    double seconds;        /* since bert_fit started */
    const bert_eval_result *eval; /* EPOCH: the dev set's evaluation
                              (borrowed for the call); NULL without one */
    int improved;          /* EPOCH: the best so far (then saved) */
} bert_fit_progress;

/* Called by bert_fit on its thread; a nonzero return cancels the run, which
 * then returns BERT_ECANCELED as soon as the current step is over: at once
 * after a step, after the epoch's saves at BERT_FIT_EPOCH. */
typedef int (*bert_fit_fn)(const bert_fit_progress *p, void *user_data);

typedef struct bert_fit_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    double epochs;          /* passes over the training set (3); a fraction
                               makes the last pass that part of the set */
    size_t stop_after_epochs; /* > 0: stop after that many epochs, the
                               schedule still spanning `epochs` (0) */
    size_t batch_size;      /* examples per micro-batch (32) */
    size_t accum;           /* micro-batches per optimizer step (1) */
    double mlm_probability; /* MLM: share of tokens masked, 80% [MASK], 10%
                               random, 10% kept (0.15) */
    uint64_t seed;          /* epoch order and masks (42) */
    size_t eval_batch_size; /* examples per evaluation batch (64) */
    double time_limit;      /* seconds; > 0: after the step that passes it
                               the epoch ends, is evaluated and saved, and
                               the run stops (0: none) */
    const char *out_dir;    /* NULL (default): nothing is written; else
                               after each epoch that improves on the best
                               score, the model directory
                               (bert_trainer_save_model_dir) */
    const bert_tokenizer *tokenizer; /* with out_dir: the tokenizer the data
                               were tokenized with, and the directory it */
    const char *tokenizer_dir;       /* was loaded from (its files are
                               copied into out_dir) */
    int save_state;         /* with out_dir: the resume state
                               (bert_fit_save_state) after every epoch (0) */
    double save_every;      /* seconds; with save_state, also this often
                               inside an epoch (0: off) */
    bert_fit_fn progress;   /* NULL (default): no reports */
    void *progress_data;    /* passed to progress */
    bert_trainer *generator; /* NULL (default); else replaced-token
                               detection (ELECTRA's objective): the datasets
                               are text (BERT_TRAIN_MLM), this masked-LM
                               trainer (the same vocabulary; run forward
                               only, never updated) fills each masked
                               position with a token drawn from its
                               prediction, and the trainer being fitted, a
                               token classifier of 2 labels (0 original, 1
                               replaced), learns which tokens were replaced,
                               at every real token but [CLS] and [SEP] */
} bert_fit_params;

BERT_API bert_fit_params bert_fit_default_params(void);

/* Where a run stands: all zero for a fresh run.  bert_fit continues from
 * it and keeps it up to date. */
typedef struct bert_fit_state {
    size_t epoch;   /* epochs finished */
    size_t offset;  /* examples of the next epoch already trained on */
    double best;    /* when has_best: the best epoch's score (the model
                       saved in out_dir is that epoch's) */
    int has_best;
} bert_fit_state;

/* Optimizer steps bert_fit takes for the whole schedule of params->epochs
 * on train: what bert_train_params.total_steps should be.  0 for NULL or
 * bad params. */
BERT_API size_t bert_fit_total_steps(const bert_dataset *train,
                                     const bert_fit_params *params);

/* Trains t on train from *state (NULL: a fresh run) to params->epochs.
 * Each epoch's order is a function of the seed and the epoch alone:
 * examples shuffled, sorted by length inside windows of 50 batches (less
 * padding), the batches shuffled; MLM masks are a function of the seed,
 * the epoch and the example.  So a run continued from a state (saved, or
 * left by a cancel) ends with the same weights as one never cut.  After
 * each epoch: the dev set's evaluation (bert_evaluate; without dev, minus
 * the epoch's train loss is the score), the model saved into out_dir when
 * the score beats state->best, the state saved when save_state.  *state
 * (may be NULL) follows along: on any return it says where t's weights
 * are.  The datasets must be of t's task, with t's labels (with
 * params->generator: text, for replaced-token detection).  Returns
 * BERT_OK; BERT_ECANCELED (the callback); BERT_EINVAL (NULL t or train,
 * an empty train, bad params, datasets that do not fit t, MLM without
 * [MASK] in the vocabulary), BERT_ENOMEM, the trainer's errors, the
 * savers' (BERT_EIO, with the file named). */
BERT_API int bert_fit(bert_trainer *t, const bert_dataset *train,
                      const bert_dataset *dev, const bert_fit_params *params,
                      bert_fit_state *state, bert_error *err);

/* Evaluates t (no dropout, no gradient) on d: the metrics of its task as
 * bert_eval_result says; MLM masks drawn from params->seed alone, the same
 * every epoch.  With params->generator, replaced-token detection on text d
 * (masks and draws from params->seed alone): loss per scored token,
 * accuracy over the scored tokens, precision, recall and F1 of "replaced",
 * score minus the loss.  params NULL = defaults (seed, mlm_probability and
 * eval_batch_size are used).
 * Returns BERT_OK, BERT_EINVAL (a dataset not of t's task or labels),
 * BERT_ENOMEM or the trainer's error. */
BERT_API int bert_evaluate(bert_trainer *t, const bert_dataset *d,
                           const bert_fit_params *params,
                           bert_eval_result *res, bert_error *err);

/* The resume state in dir (save: created when missing, not its parents):
 * trainer_state.bin (bert_trainer_save_state: weights, AdamW moments,
 * steps) and trainer_progress.txt (the state's epoch, best score and
 * offset), each written whole or not at all.  Load fills t and *state from
 * them, for bert_fit to continue.  Returns BERT_OK, BERT_EIO ("cannot
 * write DIR/trainer_state.bin: ..."), BERT_EMISSING / BERT_EFORMAT /
 * BERT_ESHAPE (bert_trainer_load_state's, or "cannot read
 * DIR/trainer_progress.txt"), BERT_EINVAL. */
BERT_API int bert_fit_save_state(const bert_trainer *t, const char *dir,
                                 const bert_fit_state *state,
                                 bert_error *err);
BERT_API int bert_fit_load_state(bert_trainer *t, const char *dir,
                                 bert_fit_state *state, bert_error *err);

/* ---- model directories and initialisation ------------------------------ */

/* Loads the tokenizer of model directory dir to train with (free with
 * bert_tokenizer_free): byte-level BPE (RoBERTa) as bert_tokenizer_load
 * reads it; WordPiece from dir/vocab.txt with BertTokenizer's defaults
 * (accents stripped when lowercasing, CJK characters split) and
 * do_lower_case `lowercase` (1, 0; -1: the directory's): the tokenizer that
 * the tokenizer_config.json bert_trainer_save_model_dir writes describes.
 * Returns bert_tokenizer_load's and bert_tokenizer_load_vocab's statuses. */
BERT_API int bert_tokenizer_load_for_training(const char *dir, int lowercase,
                                              bert_tokenizer **out,
                                              bert_error *err);

/* Writes a complete Hugging Face model directory into dir (created when
 * missing, not its parents): config.json and model.safetensors
 * (bert_trainer_save, staged in a hidden directory inside dir and renamed
 * into place), then the tokenizer files of tok, loaded from tokenizer_dir:
 * byte-level BPE (RoBERTa) files copied as they are; WordPiece: vocab.txt
 * copied, tokenizer_config.json (BertTokenizer, DistilBertTokenizer for a
 * DistilBERT; tok's do_lower_case, model_max_length the model's
 * positions) and special_tokens_map.json written.  Every file is written
 * whole or not at all: a failure leaves the previous file.  Returns
 * BERT_OK, BERT_EINVAL (a NULL argument), BERT_EIO naming the file. */
BERT_API int bert_trainer_save_model_dir(const bert_trainer *t,
                                         const bert_tokenizer *tok,
                                         const char *tokenizer_dir,
                                         const char *dir, bert_error *err);

/* Tokens per text, with the special tokens, that the model directory
 * bert_trainer_save_model_dir(t, tok, ...) writes will take: its
 * bert_model_max_length, where bert-tag cuts a text and bert-classify
 * starts windows.  The positions of t (RoBERTa's minus padding_idx + 1);
 * for a byte-level BPE tok, whose files are copied, capped by its
 * model_max_length (WordPiece's is written as the positions); 0 for a NULL
 * argument.  bert-train scores its dev set
 * at this length, whatever --max-length the training examples have, so
 * that the dev figures describe what the tools print. */
BERT_API size_t bert_trainer_max_length(const bert_trainer *t,
                                        const bert_tokenizer *tok);

/* Writes dir/tokenizer_config.json as transformers' BertTokenizer saves it
 * (do_lower_case, model_max_length), whole or not at all.  BERT_EIO
 * ("DIR/tokenizer_config.json: reason"), BERT_EINVAL. */
BERT_API int bert_write_tokenizer_config(const char *dir, int lowercase,
                                         size_t model_max_length,
                                         bert_error *err);

/* How bert_trainer_align_head found the head of init_dir. */
typedef enum {
    BERT_HEAD_KEPT = 0,    /* the same labels in the same order, another
                              count, or no classifier: nothing to do */
    BERT_HEAD_REORDERED,   /* the same names in another order: the
                              classifier's rows now follow t's labels */
    BERT_HEAD_OTHER_NAMES  /* as many labels, other names: rows kept in
                              order, as transformers does */
} bert_head_match;

/* A trainer made from init_dir (a sequence or token model) with labels of
 * the same names in another order (bert_train_params.labels) would keep
 * each row of classifier.weight and classifier.bias on the wrong name: this
 * permutes them to follow t's labels.  *match (may be NULL) says what was
 * found.  A directory that does not load as a model, an MLM trainer: KEPT.
 * Returns BERT_OK, BERT_EINVAL, BERT_EUNSUPPORTED (a classifier it cannot
 * reorder), BERT_ENOMEM. */
BERT_API int bert_trainer_align_head(bert_trainer *t, const char *init_dir,
                                     bert_head_match *match,
                                     bert_error *err);

/* Sets the position embeddings to the sinusoids of Vaswani et al. (std
 * 0.05) instead of noise: helps encoders trained from scratch (+2-3 entity
 * F1 on CoNLL-2003, docs/training.md).  Returns BERT_OK, BERT_EINVAL (t
 * NULL), BERT_EMISSING (no position embeddings). */
BERT_API int bert_trainer_init_sinusoidal_positions(bert_trainer *t,
                                                    bert_error *err);

/* word2vec skip-gram with negative sampling over an MLM dataset's token
 * ids (special tokens skipped): windows of up to `window` tokens (randomly
 * shrunk), `negatives` negatives from the unigram^0.75 table, frequent
 * tokens subsampled at 1e-4, the learning rate decaying linearly from lr.
 * One thread, deterministic. */
typedef struct bert_word2vec_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    double epochs;          /* passes (1; may be fractional) */
    size_t window;          /* (5) */
    size_t negatives;       /* (5) */
    double lr;              /* (0.025) */
    uint64_t seed;          /* (42) */
    double std;             /* the vectors' standard deviation (0.05) */
    bert_progress_fn progress; /* (done, total) tokens after each example;
                               nonzero: BERT_ECANCELED.  NULL default */
    void *progress_data;
} bert_word2vec_params;

BERT_API bert_word2vec_params bert_word2vec_default_params(void);

/* Trains word vectors on text (an MLM dataset) and makes them t's word
 * embeddings, scaled to params->std, the [PAD] row zero; the rest of t is
 * untouched.  Returns BERT_OK, BERT_EINVAL (not an MLM dataset, an id
 * beyond t's vocabulary, bad params), BERT_ECANCELED, BERT_ENOMEM. */
BERT_API int bert_trainer_init_word2vec(bert_trainer *t,
                                        const bert_dataset *text,
                                        const bert_word2vec_params *params,
                                        bert_error *err);

#ifdef __cplusplus
}
#endif
#endif
