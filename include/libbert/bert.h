/*
 * libbert/bert.h - BERT, DistilBERT, RoBERTa and ELECTRA encoder inference
 * on CPUs.
 *
 * Quick tour:
 *
 *   bert_model *m; bert_error err;
 *   if (bert_model_load("models/sst2", NULL, &m, &err)) { puts(err.text); }
 *   bert_session *s;
 *   bert_session_create(m, NULL, &s, &err);
 *   float probs[2]; int label;
 *   if (bert_classify_text(s, "a gorgeous film", 15, NULL, 0, probs, 2,
 *                          &label, &err) == BERT_OK)
 *       printf("%s %.3f\n", bert_model_label(m, label), probs[label]);
 *   bert_session_free(s); bert_model_free(m);
 *
 * A bert_model is immutable after load: share it between threads, each with
 * its own bert_session (the session owns the activation arena and the BLIS
 * thread settings).  Conventions are those of <libbert/bert_tokenizer.h>:
 * every fallible call returns BERT_OK or a negative status and fills its
 * last argument, a bert_error * (NULL when the detail is not wanted), on
 * failure.
 */
#ifndef LIBBERT_BERT_H
#define LIBBERT_BERT_H

#include <libbert/bert_tokenizer.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bert_model bert_model;
typedef struct bert_session bert_session;

/* ---- configuration ----------------------------------------------------- */

typedef enum {
    BERT_TASK_BASE = 0,     /* BertModel / DistilBertModel */
    BERT_TASK_SEQUENCE,     /* *ForSequenceClassification */
    BERT_TASK_TOKEN         /* *ForTokenClassification */
} bert_task;

typedef enum {
    BERT_ACT_GELU = 0,      /* exact erf form ("gelu") */
    BERT_ACT_GELU_TANH,     /* "gelu_new", "gelu_pytorch_tanh" */
    BERT_ACT_RELU
} bert_activation;

typedef enum {
    BERT_PROBLEM_DEFAULT = 0,      /* not given in config.json */
    BERT_PROBLEM_SINGLE_LABEL,     /* "single_label_classification" */
    BERT_PROBLEM_MULTI_LABEL,      /* "multi_label_classification" */
    BERT_PROBLEM_REGRESSION        /* "regression" */
} bert_problem;

/* Matrix-product kernels ("tiers").  AUTO picks from the CPU's features
 * (CPUID and the OS's XCR0), never from its model or brand: AMX where AMX
 * tiles (TILE, BF16, INT8, with the OS's permission) come with AVX-512
 * F/BW/DQ/VL, AVX512-BF16 and AVX512-VNNI; else AVX512 where AVX-512
 * F/BW/DQ/VL are usable, else AVX2 with AVX2+FMA, else BLIS.  The amx,
 * avx512 and avx2 tiers are libbert's own micro-kernels over weights packed
 * once at load (amx is avx512 for fp32, and multiplies bf16 and int8 with
 * AMX tiles); blis runs BLIS's sgemm as BLIS configured itself. */
typedef enum {
    BERT_KERNELS_AUTO = 0,
    BERT_KERNELS_BLIS,
    BERT_KERNELS_AVX2,
    BERT_KERNELS_AVX512,
    BERT_KERNELS_AMX
} bert_kernels;

/* Precision of the products with the weight matrices of the encoder and
 * heads.  FP32 (the default) is exact to Hugging Face within 1e-4.  The
 * others are opt-in and move results by a measured amount
 * (docs/precision.md):
 *  - BF16: weights stored as bfloat16 (half the memory), activations
 *    rounded to bfloat16 as they enter each product, float32 sums
 *    (vdpbf16ps; needs AVX512-BF16 and the avx512 tier);
 *  - INT8: weights quantized once at load (symmetric, per output channel),
 *    activations per row at run time (asymmetric uint8), int32 sums
 *    (vpdpbusd with AVX512-VNNI on the avx512 tier or AVX-VNNI on avx2;
 *    on AVX2 without VNNI, vpmaddwd on widened values: the same sums),
 *    scales applied in the output stage.
 * Embeddings, LayerNorm, softmax, attention's products and the activation
 * functions stay float32 in every precision. */
typedef enum {
    BERT_PRECISION_FP32 = 0,
    BERT_PRECISION_BF16,
    BERT_PRECISION_INT8
} bert_precision;

/* The encoder family (config.json's model_type). */
typedef enum {
    BERT_FAMILY_BERT = 0,   /* "bert" */
    BERT_FAMILY_DISTILBERT, /* "distilbert" */
    BERT_FAMILY_ROBERTA,    /* "roberta", "xlm-roberta" */
    BERT_FAMILY_ELECTRA     /* "electra" */
} bert_family;

/* What config.json says, normalised across BERT, DistilBERT, RoBERTa and
 * ELECTRA. */
typedef struct bert_config {
    int is_distilbert;
    bert_task task;
    bert_activation act;
    bert_problem problem;
    size_t vocab_size;
    size_t hidden;          /* H */
    size_t layers;          /* L */
    size_t heads;           /* NH */
    size_t intermediate;    /* I */
    size_t max_position;    /* P */
    size_t type_vocab;      /* 0 for DistilBERT */
    size_t num_labels;      /* C (0 for base models) */
    float layer_norm_eps;
    float hidden_dropout;   /* training only */
    float attention_dropout;/* training only */
    float classifier_dropout;
    bert_family family;
    size_t embedding_size;  /* E: ELECTRA's embedding width; == hidden for
                               the others */
} bert_config;

/* ---- model ------------------------------------------------------------- */

/* Progress and cancellation of a long call (bert_model_load,
 * bert_classify_batch, bert_tag_batch; each says what done and total
 * count).  Called on the calling thread, between steps; done = total = 0
 * marks a step without a measure.  A nonzero return cancels the call,
 * which returns BERT_ECANCELED as soon as the current step is over (no
 * result of that call is to be used). */
typedef int (*bert_progress_fn)(size_t done, size_t total, void *user_data);

typedef struct bert_model_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    int load_tokenizer;     /* default 1: a model without tokenizer files
                               then fails with BERT_EMISSING */
    bert_kernels kernels;   /* default AUTO: on a CPU with libbert's own
                               kernels, every weight matrix of the encoder
                               and heads is packed once here into their
                               panel layout (one copy shared by the avx512
                               and avx2 tiers; the mapped originals are
                               released from memory).  BLIS: no packing. */
    int n_threads;          /* threads for packing (default 1) */
    const char *pack_cache_dir; /* default NULL: the packed weights are
                               private memory of this process.  A writable
                               directory: they are kept there as a file
                               that every process loading the same
                               model.safetensors maps and shares (the first
                               packs and writes it); files are named after
                               the model file's identity, so a changed model
                               gets a new one, and may be deleted at any
                               time.  Failures fall back to private memory. */
    bert_precision precision; /* default FP32.  BF16 / INT8 pack the weights
                               in that precision at load (with kernels
                               AUTO: the best tier that runs it); a CPU or
                               tier that cannot run it fails the load with
                               BERT_EUNSUPPORTED naming the missing feature,
                               never a silent fallback.  Sessions of such a
                               model need a tier that runs the precision. */
    bert_progress_fn progress; /* default NULL.  Called once with done =
                               total = 0 when config.json is read and
                               model.safetensors mapped, then with done
                               and total in bytes of weights: the bytes of
                               model.safetensors once its tensors are bound
                               (F16/BF16 ones converted), plus those of each
                               weight matrix as it is packed (all at once
                               when mapped from the pack cache); the last
                               call has done == total.  A nonzero return
                               cancels the load: BERT_ECANCELED, *out NULL,
                               nothing left allocated or mapped. */
    void *progress_data;    /* passed to progress */
} bert_model_params;

BERT_API bert_model_params bert_model_default_params(void);

/* Loads a Hugging Face model directory `dir`:
 *  - config.json (BERT, DistilBERT, RoBERTa / XLM-RoBERTa or ELECTRA; see
 *    bert_config and docs/architectures.md),
 *  - model.safetensors, memory-mapped read-only: F32 tensors are used in
 *    place (no copy), F16/BF16 (and misaligned F32) converted once into a
 *    buffer owned by the model; tensors the model does not use (a pooler in
 *    a token-classification file, position_ids buffers) are ignored,
 *  - the tokenizer files (bert_tokenizer_load) when params->load_tokenizer.
 * params NULL means defaults.  Returns BERT_OK and the model in *out (free
 * with bert_model_free), or a negative status with *out = NULL and err
 * filled with a message naming the file and the problem:
 *  BERT_EMISSING      config.json / model.safetensors / a tensor absent
 *  BERT_EUNSUPPORTED  other model_type or architecture, hidden_act,
 *                     position_embedding_type != "absolute", only
 *                     pytorch_model.bin (convert it), sharded checkpoints,
 *                     weight dtype other than F32/F16/BF16
 *  BERT_EFORMAT       malformed JSON / safetensors, wrong-typed or absurd
 *                     config values (checked before any allocation)
 *  BERT_ESHAPE        a tensor's shape contradicts config.json
 *  BERT_EIO, BERT_ENOMEM. */
BERT_API int bert_model_load(const char *dir, const bert_model_params *params,
                             bert_model **out, bert_error *err);

/* The directory of an installed default model, `name` "sentiment" or "ner"
 * (the models make install puts under $(pkgdatadir)/models, the directory
 * `pkg-config --variable=modeldir libbert` prints): MODELDIR/NAME for the
 * first MODELDIR whose NAME holds a config.json among $LIBBERT_MODELDIR
 * (when that environment variable is set and not empty), the models beside
 * the running program (BINDIR/../share/libbert/models, so that an installed
 * tree works from any prefix) and the installed one.  Writes the
 * NUL-terminated path to buf (cap bytes) and returns BERT_OK;
 * BERT_EMISSING when none holds it (buf holds the last path tried, err
 * names them all); BERT_ERANGE when cap is too small; BERT_EINVAL for a
 * NULL argument or a name with a '/'; err filled on failure.  For example:
 *   char dir[4096];
 *   if (bert_default_model_dir("sentiment", dir, sizeof dir, &err) == 0)
 *       rc = bert_model_load(dir, NULL, &m, &err); */
BERT_API int bert_default_model_dir(const char *name, char *buf, size_t cap,
                                    bert_error *err);
/* Unmaps and frees everything; NULL is a no-op.  Sessions created from m
 * must be freed first. */
BERT_API void bert_model_free(bert_model *m);

/* Borrowed; lives as long as m. */
BERT_API const bert_config *bert_model_config(const bert_model *m);
/* Borrowed label name from id2label ("LABEL_<i>" when absent); NULL if out
 * of range or for base models. */
BERT_API const char *bert_model_label(const bert_model *m, int id);
/* Borrowed tokenizer, or NULL when loaded without one. */
BERT_API const bert_tokenizer *bert_model_tokenizer(const bert_model *m);
/* Longest sequence the model accepts (max_position_embeddings, capped by the
 * tokenizer's model_max_length when that is smaller). */
BERT_API size_t bert_model_max_length(const bert_model *m);
/* How the model's token labels become entities, as its config.json records
 * it ("aggregation_strategy", a key libbert's trainer writes for token
 * models: BERT_AGG_FIRST when only each word's first sub-token was
 * labelled), or -1 when it records nothing.  Tools use it as the default
 * aggregation (bert-tag). */
BERT_API int bert_model_aggregation(const bert_model *m);
/* 1 when bert_session_run can produce pooler_output (BertModel with a pooler,
 * BertForSequenceClassification), else 0. */
BERT_API int bert_model_has_pooler(const bert_model *m);
/* Bytes of weights packed at load for libbert's kernels (0 when none were,
 * e.g. kernels = BLIS); with shared not NULL, *shared = 1 when they are
 * mapped from the pack cache (shared between processes). */
BERT_API size_t bert_model_packed_bytes(const bert_model *m, int *shared);
/* The precision m's weight products run in (bert_model_params.precision). */
BERT_API bert_precision bert_model_precision(const bert_model *m);

/* ---- session ----------------------------------------------------------- */

typedef struct bert_session_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    int n_threads;          /* default 1; BLIS and OpenMP work of this session.
                               Keep it at most the cores available: BLIS's and
                               OpenMP's threads spin while they wait, and more
                               threads than cores runs 100x slower or worse
                               (the tools lower --threads to the CPU count).
                               Results do not depend on it, except in the
                               last float bits for runs of up to 256 tokens
                               on 2 threads of models from 512 hidden
                               (docs/performance.md, Threads).  Called from
                               inside an OpenMP parallel region, a session
                               gets one thread (no nested parallelism) */
    size_t max_tokens;      /* arena hint: tokens per run (default 4096);
                               the arena grows if a run needs more */
    bert_kernels kernels;   /* default AUTO (bert_kernels); a tier this CPU
                               cannot run fails with BERT_EUNSUPPORTED.
                               Tiers give the same results to within float
                               rounding (tests: 1e-4 against HF on each). */
} bert_session_params;

/* {n_threads 1, max_tokens 4096, kernels AUTO}. */
BERT_API bert_session_params bert_session_default_params(void);

/* Creates a session running m (borrowed: m must outlive the session).  The
 * activation arena is allocated here for params->max_tokens packed tokens
 * and reused by every run (a run that needs more grows it once; steady-state
 * runs never allocate).  params NULL means defaults.  Returns BERT_OK and
 * *out (free with bert_session_free), or BERT_EINVAL / BERT_ENOMEM with
 * *out = NULL and err filled.  A session is used by one thread at a time;
 * any number of sessions may share m. */
BERT_API int bert_session_create(const bert_model *m,
                                 const bert_session_params *params,
                                 bert_session **out, bert_error *err);
/* NULL is a no-op. */
BERT_API void bert_session_free(bert_session *s);
/* Sets the number of threads of this session's matrix products (BLIS
 * per-call runtime; BLIS's global setting is never touched).  n_threads
 * outside 1..1024 gives BERT_EINVAL. */
BERT_API int bert_session_set_threads(bert_session *s, int n_threads,
                                      bert_error *err);
/* The kernels s runs: "avx512", "avx2" or "blis-<BLIS configuration>"
 * (e.g. "blis-zen3"); with `packed` not NULL, *packed = 1 when the weight
 * products read panels packed at load.  Borrowed, lives as long as s. */
BERT_API const char *bert_session_kernels(const bert_session *s, int *packed);
/* The tier bert_kernels AUTO resolves to on this CPU, and whether this CPU
 * can run tier k (1/0). */
BERT_API bert_kernels bert_kernels_best(void);
BERT_API int bert_kernels_supported(bert_kernels k);
/* The tier named "auto", "avx512", "avx2" or "blis"; -1 for any other
 * string (or NULL). */
BERT_API int bert_kernels_from_name(const char *name);
/* 1 when tier k (AUTO: the best tier for p) runs precision p on this CPU;
 * "fp32", "bf16", "int8" and back (-1 for any other string or NULL). */
BERT_API int bert_precision_supported(bert_precision p, bert_kernels k);
BERT_API const char *bert_precision_name(bert_precision p);
BERT_API int bert_precision_from_name(const char *name);

/* ---- forward pass ------------------------------------------------------ */

/* One sequence of a packed batch: its ids and type ids (NULL = all 0), n
 * tokens, no padding.  Attention runs within each sequence only. */
typedef struct bert_input {
    const int32_t *ids;
    const int32_t *type_ids;
    size_t n;
} bert_input;

/* Caller-owned outputs; any pointer may be NULL when not wanted.  Rows are
 * packed: token-level arrays have sum(n_i) rows, in input order.
 *  logits: sequence task [batch][C]; token task [sum n_i][C]
 *  pooler: [batch][H] (BertModel and BertForSequenceClassification)
 *  hidden: last_hidden_state [sum n_i][H] */
typedef struct bert_outputs {
    float *logits;
    float *pooler;
    float *hidden;
} bert_outputs;

/* Runs the encoder and heads on `batch` >= 1 sequences.  Each sequence must
 * have 1 <= n <= bert_model_max_length(m), ids in [0, vocab_size) and type
 * ids in [0, type_vocab_size) (ignored by DistilBERT), else BERT_EINVAL
 * (err names the sequence and token); BERT_ENOMEM when the arena cannot grow.
 * Outputs not produced by the model (pooler without a pooler, logits of a
 * base model) are left untouched.  Results equal running each sequence
 * alone (up to float rounding: BLIS may block differently).  On failure no
 * output is written, except for BERT_EFORMAT: a logit came out NaN or
 * infinite (a model with non-finite weights); the outputs are then written
 * but meaningless, and every pipeline built on this call (bert_classify_*,
 * bert_token_logits, bert_tag_text, the tools) reports that error instead of
 * a score.  Without out->hidden, all but token-classification
 * models run the last layer for each sequence's first ([CLS]) row only, the
 * one the pooler and classifier read: same outputs up to float rounding, 7%
 * less work for BERT-base. */
BERT_API int bert_session_run(bert_session *s, const bert_input *in,
                              size_t batch, const bert_outputs *out,
                              bert_error *err);

/* ---- pipelines --------------------------------------------------------- */

/* How sequence logits become scores, as transformers' text-classification
 * pipeline's function_to_apply. */
typedef enum {
    BERT_FUNC_DEFAULT = 0,  /* none for regression, sigmoid for multi-label
                               or num_labels == 1, else softmax */
    BERT_FUNC_SOFTMAX,
    BERT_FUNC_SIGMOID,
    BERT_FUNC_NONE
} bert_function;

/* The function BERT_FUNC_DEFAULT resolves to for m, as transformers'
 * text-classification pipeline (4.4x): problem_type regression -> NONE (the
 * raw value); multi_label_classification or num_labels == 1 -> SIGMOID;
 * else single_label_classification or num_labels > 1 -> SOFTMAX; else
 * NONE.  m NULL -> NONE. */
BERT_API bert_function bert_model_function(const bert_model *m);

/* scores[i] = f(logits[i]) for C = num_labels values (softmax with the max
 * subtracted, sigmoid 1/(1+exp(-x)), or a copy).  logits and scores may be
 * the same array.  Base models (C = 0) write nothing; so does a NULL m,
 * logits or scores. */
BERT_API void bert_apply_function(const bert_model *m, bert_function f,
                                  const float *logits, float *scores);

/* Long inputs.  By default texts are truncated (longest_first, as HF) to
 * max_length tokens including [CLS]/[SEP].  With mode BERT_LONG_WINDOWS a
 * single text (no pair) longer than max_length is covered by windows
 * [CLS] chunk [SEP] whose chunks hold W = max_length - 2 tokens and overlap
 * by `stride` tokens: HF's return_overflowing_tokens + stride semantics
 * (stride is the overlap, not the step; chunks start at 0, W - stride,
 * 2 (W - stride), ... and the last one may be shorter).  stride must be
 * < W.  Pairs are always truncated. */
typedef enum {
    BERT_LONG_TRUNCATE = 0,
    BERT_LONG_WINDOWS
} bert_long_mode;

typedef struct bert_window_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    size_t max_length;  /* tokens per run with specials; 0 (default) or more
                           than bert_model_max_length(m) means that value */
    bert_long_mode mode;/* default BERT_LONG_TRUNCATE */
    size_t stride;      /* overlap between windows; default 0 */
} bert_window_params;

BERT_API bert_window_params bert_window_default_params(void);

/* The batched calls' progress and cancellation: bert_progress_fn (under
 * "model"), called once after each text is tokenized with done = total =
 * 0, then after each model run with the sequences run so far and their
 * total. */

/* How the batched calls pack their sequences into model runs: sequences
 * sorted by token count (shortest first, ties in input order), cut into
 * runs of at most batch_size sequences and max_batch_tokens tokens, each
 * run packed without padding in input order.  Results equal running each
 * text alone up to float rounding (1e-6); they depend only on which
 * sequences share a run, so a given input and params give the same bits
 * every time. */
typedef struct bert_batch_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    size_t batch_size;      /* sequences per model run; default 32, >= 1 */
    size_t max_batch_tokens;/* tokens per model run (a run holds at least one
                               sequence whatever its length); 0 (default):
                               no limit */
    bert_progress_fn progress; /* default NULL */
    void *progress_data;    /* passed to progress */
} bert_batch_params;

/* {batch_size 32, max_batch_tokens 0, progress NULL}. */
BERT_API bert_batch_params bert_batch_default_params(void);

typedef struct bert_classify_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_window_params window;
    bert_function function;     /* default BERT_FUNC_DEFAULT */
    bert_batch_params batch;    /* bert_classify_batch only; defaults of
                                   bert_batch_default_params() */
} bert_classify_params;

BERT_API bert_classify_params bert_classify_default_params(void);

/* Tokenizes text (and pair; NULL or pair_len 0 = none), runs the sequence
 * classification head and writes, for C = num_labels:
 *  logits (may be NULL): C floats; with several windows the MEAN of the
 *    window logits.  Why the mean: every window is an equally valid view of
 *    the text, the mean of logits is the log of the (normalised) geometric
 *    mean of the window probabilities, so no single window dominates, one
 *    confident window cannot flip the result alone, and a text that fits in
 *    one window gives exactly the un-windowed result;
 *  scores (may be NULL): params->function applied to those logits;
 *  *label (may be NULL): the arg-max (first on ties);
 *  *n_windows (may be NULL): model runs made (1 unless windows).
 * n is the capacity of logits/scores (>= C, else BERT_ERANGE).  params NULL
 * = defaults.  Needs a model loaded with its tokenizer.  Returns BERT_OK,
 * BERT_EINVAL (not a sequence model, no tokenizer, bad stride), BERT_EUTF8,
 * BERT_ENOMEM, a failed run's status; err filled (for BERT_EUTF8 with
 * byte_offset). */
BERT_API int bert_classify_text_ex(bert_session *s, const char *text,
                                   size_t len, const char *pair,
                                   size_t pair_len,
                                   const bert_classify_params *params,
                                   float *logits, float *scores, size_t n,
                                   int *label, size_t *n_windows,
                                   bert_error *err);

/* bert_classify_text_ex with default params (truncation, default function)
 * and no logits: scores (n_scores >= num_labels) and the arg-max *label. */
BERT_API int bert_classify_text(bert_session *s, const char *text, size_t len,
                                const char *pair, size_t pair_len,
                                float *scores, size_t n_scores, int *label,
                                bert_error *err);

/* The result of one text of bert_classify_batch. */
typedef struct bert_classify_result {
    int status;             /* BERT_OK, or why this text has no result:
                               BERT_EUTF8 (error.byte_offset set), BERT_EINVAL
                               (NULL text, no tokens), BERT_ETOOLONG, or the
                               status of its failed model run (BERT_EFORMAT:
                               non-finite logits) */
    int label;              /* arg-max of the logits (first on ties); -1 on
                               failure */
    size_t n_tokens;        /* tokens of its encoding: truncated to
                               max_length, or whole in window mode */
    size_t n_overflow;      /* tokens truncation dropped (text and pair) */
    size_t n_windows;       /* model sequences it took (1 unless windows) */
    bert_error error;       /* status != BERT_OK: the message */
} bert_classify_result;

/* Classifies n texts at once: texts[i] of lens[i] bytes (lens NULL:
 * NUL-terminated), each with pairs[i] as a sentence pair when pairs and
 * pairs[i] are non-NULL (pair_lens NULL: NUL-terminated).  Every text is
 * tokenized (truncated, or windows as bert_classify_text_ex), then all
 * sequences are run in packed runs as params->batch says (length-sorted,
 * no padding).  For text i, with C = num_labels:
 *  results[i]: its status, label, token counts, windows, error message;
 *  logits[i*C .. i*C+C) (logits may be NULL): as bert_classify_text_ex
 *    (the mean over windows);
 *  scores[i*C .. i*C+C) (scores may be NULL): params->function applied.
 * A text that fails (invalid UTF-8, a failed model run: a run that fails
 * is retried one sequence at a time to find which) gets its status and
 * message in results[i] and zero rows; the others are unaffected.  n_out
 * is the capacity of logits and scores in floats (< n*C: BERT_ERANGE).
 * params NULL = defaults.  Needs a model loaded with its tokenizer.
 * Returns BERT_OK when every text was tried (check each results[i].status),
 * else with err filled: BERT_EINVAL (not a sequence-classification model,
 * no tokenizer, NULL texts or results, bad stride or batch_size),
 * BERT_ERANGE, BERT_ENOMEM, BERT_ECANCELED (params->batch.progress said
 * so).  Scratch memory is the session's, reused by the next call. */
BERT_API int bert_classify_batch(bert_session *s, const char *const *texts,
                                 const size_t *lens,
                                 const char *const *pairs,
                                 const size_t *pair_lens, size_t n,
                                 const bert_classify_params *params,
                                 bert_classify_result *results,
                                 float *logits, float *scores, size_t n_out,
                                 bert_error *err);

/* Token logits for a whole text, windowed when params->mode is
 * BERT_LONG_WINDOWS (else truncated).  Tokenizes text into enc (caller's,
 * bert_encoding_create; untruncated in window mode, so offsets and word_ids
 * cover the whole text) and writes enc->n rows of C = num_labels logits to
 * logits (n_logits floats available; too few: BERT_ERANGE with enc filled,
 * so the caller can size the buffer from enc->n and call again).
 * Merge rule for tokens seen by several windows: each token takes the row
 * from the window in which it is farthest from a window edge (most context
 * on both sides; ties go to the earlier window); [CLS] comes from the first
 * window and the final [SEP] from the last.  Works for token-classification
 * models only (else BERT_EINVAL).  *n_windows (may be NULL) receives the
 * number of model runs.  On failure err is filled. */
BERT_API int bert_token_logits(bert_session *s, const char *text, size_t len,
                               const bert_window_params *params,
                               bert_encoding *enc, float *logits,
                               size_t n_logits, size_t *n_windows,
                               bert_error *err);

/* ---- sentence embeddings ---- */

/* How a text's token states become one vector (sentence-transformers'
 * Pooling module). */
typedef enum {
    BERT_POOL_MEAN = 0, /* mean of the last hidden state over the tokens the
                           attention mask covers ([CLS] and [SEP] included;
                           padding never, since runs are packed):
                           pooling_mode_mean_tokens */
    BERT_POOL_CLS       /* the [CLS] (first) row of the last hidden state,
                           not the pooler's output: pooling_mode_cls_token */
} bert_pooling;

typedef struct bert_embed_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_pooling pooling;   /* default BERT_POOL_MEAN */
    int normalize;          /* 1: divide each embedding by its L2 norm
                               (max(norm, 1e-12), as torch's F.normalize in
                               sentence-transformers' Normalize module);
                               default 0 */
    size_t max_length;      /* tokens per text with specials; 0 (default) or
                               more than bert_model_max_length(m) means that
                               value; longer texts are truncated
                               (longest_first, as HF) */
} bert_embed_params;

BERT_API bert_embed_params bert_embed_default_params(void);

/* Pools n rows of H floats (one text's last hidden state, hidden[n][H])
 * into out[H]: their mean (summed in double) or the first row, then the
 * optional L2 normalisation.  For callers of bert_session_run.  Returns
 * BERT_OK or BERT_EINVAL (a NULL array, n or H 0, unknown pooling) with
 * err filled. */
BERT_API int bert_pool(const float *hidden, size_t n, size_t H,
                       bert_pooling pooling, int normalize, float *out,
                       bert_error *err);

/* Embeds n texts with the session's model (any task: the encoder's last
 * hidden state is pooled, heads are not run): texts[i] of lens[i] bytes
 * (lens NULL: NUL-terminated), each with pairs[i] as a sentence pair when
 * pairs is non-NULL and pairs[i] non-NULL (pair_lens NULL: NUL-terminated).
 * Writes out[i*H .. i*H+H) for text i, H = bert_model_config(m)->hidden;
 * n_out is the capacity of out in floats (< n*H: BERT_ERANGE).  Texts are
 * run several at a time (packed, no padding) within the session's arena;
 * each result equals embedding the text alone, up to float rounding.
 * params NULL = defaults.  Needs a model loaded with its tokenizer.
 * Returns BERT_OK; BERT_EINVAL, BERT_EUTF8 (the message names the text,
 * byte_offset is in it), BERT_ENOMEM or a failed run's status, with err
 * filled; on failure out is untouched. */
BERT_API int bert_embed_texts(bert_session *s, const char *const *texts,
                              const size_t *lens, const char *const *pairs,
                              const size_t *pair_lens, size_t n,
                              const bert_embed_params *params, float *out,
                              size_t n_out, bert_error *err);

/* ---- token-classification pipeline ---- */

/* transformers' TokenClassificationPipeline, aggregation_strategy:
 *  NONE    one entity per token ("entity" = its label, with "index");
 *  SIMPLE  adjacent tokens grouped by B-/I- tag (two B- tags = two
 *          entities; a word may be split between entities);
 *  FIRST, AVERAGE, MAX  one tag per word first (the first sub-token's tag;
 *          the arg-max of the mean probability vector; the tag of the
 *          sub-token with the highest probability), then grouped as SIMPLE.
 * A token is a sub-word when its vocabulary text ("##ing") is not as long
 * (in code points) as the text its offsets cover; [UNK] never is. */
typedef enum {
    BERT_AGG_NONE = 0,
    BERT_AGG_SIMPLE,
    BERT_AGG_FIRST,
    BERT_AGG_AVERAGE,
    BERT_AGG_MAX
} bert_aggregation;

/* The aggregation to use when the caller names none: the model's
 * (bert_model_aggregation), else BERT_AGG_FIRST, which never splits a word
 * between entities.  The default of bert-tag and of PostgreSQL's
 * bert_tag(model, text, 'default'). */
BERT_API bert_aggregation bert_model_default_aggregation(const bert_model *m);

typedef struct bert_tag_params {
    size_t size;            /* sizeof this struct, set by the default
                               function: start from it (docs/abi.md) */
    bert_aggregation aggregation; /* default BERT_AGG_NONE (as HF) */
    /* Entities whose label (NONE) or group (others) is one of these are
     * dropped.  Default {"O"}, n_ignore 1; n_ignore 0 keeps everything.
     * Borrowed for the duration of the call. */
    const char *const *ignore_labels;
    size_t n_ignore;
    /* -1 (default): truncate the text to the model's maximum length.
     * >= 0: cover the whole text with windows of the model's maximum length
     * overlapping by `stride` tokens (HF's stride: the overlap, not the
     * step); needs aggregation != NONE and stride < max length - 2.
     * Entities found in several windows are merged as HF does (the longer
     * one, then the higher score, wins). */
    long stride;
    bert_batch_params batch;    /* bert_tag_batch only; defaults of
                                   bert_batch_default_params() */
} bert_tag_params;

BERT_API bert_tag_params bert_tag_default_params(void);

/* One entity.  Strings are NUL-terminated and owned by the result. */
typedef struct bert_entity {
    const char *entity;     /* NONE: the token's label ("B-PER"); else the
                               entity_group ("PER": the first label with
                               its "B-"/"I-" style prefix removed) */
    const char *word;       /* the tokens decoded as HF's
                               convert_tokens_to_string (WordPiece decoder,
                               "##" joined, cleanup); for the exact text
                               use the offsets */
    float score;            /* probability (mean over a group) */
    int label;              /* label id of `entity` (first of a group) */
    int32_t index;          /* NONE: token index in its window; else -1 */
    int64_t start, end;     /* code-point [start, end) in the text */
    int64_t byte_start, byte_end; /* the same in bytes */
} bert_entity;

/* One word (tokens joined by the sub-word rule above) with the tag the
 * aggregation gives it (FIRST for NONE and SIMPLE); nothing is ignored.
 * For CoNLL-style output.  With stride windows, a word seen by several
 * windows keeps the tag of the first window that saw it. */
typedef struct bert_tag_word {
    int label;
    float score;
    int64_t start, end;
    int64_t byte_start, byte_end;
} bert_tag_word;

/* Result of a tagging call.  Reusable: each call replaces the contents.
 * Arrays are owned by the result and valid until the next call or free. */
typedef struct bert_tag_result {
    size_t n;                   /* entities */
    bert_entity *entities;
    size_t n_words;
    bert_tag_word *words;
    size_t n_windows;           /* model runs (1 without stride) */
    void *priv_;
} bert_tag_result;

/* NULL when out of memory. */
BERT_API bert_tag_result *bert_tag_result_create(void);
BERT_API void bert_tag_result_free(bert_tag_result *r);

/* The post-processing alone, from given logits (no model needed): what HF
 * computes from one window of a tokenized text. */
typedef struct bert_tag_tokens {
    const char *text;           /* the text the offsets point into */
    size_t len;                 /* its length in bytes */
    size_t n;                   /* tokens in the window */
    const int32_t *ids;         /* [n] token ids */
    const char *const *tokens;  /* [n] vocabulary strings of ids */
    const int64_t *offsets;     /* [2n] code-point [start, end) */
    const int64_t *byte_offsets;/* [2n] byte [start, end) */
    const int32_t *special_mask;/* [n] 1 = added special token, skipped */
    const float *logits;        /* [n][n_labels]; softmax is applied here */
    size_t n_labels;
    const char *const *labels;  /* [n_labels] id2label */
    int32_t unk_id;             /* tokens with this id take their text */
    int byte_level;             /* 0: WordPiece ("##" sub-words, WordPiece
                                   decoder); 1: byte-level BPE (RoBERTa): a
                                   sub-word is a token not preceded by a
                                   space, words decoded from the bytes */
} bert_tag_tokens;

/* Aggregates one window into out (replacing its contents).  params NULL =
 * defaults (stride is ignored).  Returns BERT_OK, BERT_EINVAL (bad arrays
 * or offsets outside the text, detail in err) or BERT_ENOMEM. */
BERT_API int bert_tag_aggregate(const bert_tag_tokens *in,
                                const bert_tag_params *params,
                                bert_tag_result *out, bert_error *err);

/* Tags text (len bytes of UTF-8) with the session's token-classification
 * model.  params NULL = defaults.  Returns BERT_OK; BERT_EUTF8
 * (err->byte_offset set), BERT_EINVAL (not a token-classification model,
 * bad stride), BERT_ENOMEM, or the status of a failed model run.  On
 * failure out->n is 0. */
BERT_API int bert_tag_text(bert_session *s, const char *text, size_t len,
                           const bert_tag_params *params,
                           bert_tag_result *out, bert_error *err);

/* Tags n texts at once with the session's token-classification model:
 * texts[i] of lens[i] bytes (lens NULL: NUL-terminated) into results[i]
 * (each from bert_tag_result_create; contents replaced), exactly what
 * bert_tag_text gives for each text (windows, aggregation, merge) up to
 * float rounding, but the windows of all texts run together in packed
 * length-sorted runs as params->batch says.  All windows of all texts are
 * held at once: call it on a bounded number of texts.  errors[i] receives
 * text i's status (BERT_OK, or BERT_EUTF8 with byte_offset, BERT_EINVAL for
 * a NULL text, the status of its failed model run) and message; a failed
 * text has an empty result and does not affect the others.  params NULL =
 * defaults.  Returns BERT_OK when every text was tried, else with err
 * filled (and every result emptied): BERT_EINVAL (not a token model, NULL
 * arrays, bad params), BERT_ENOMEM, BERT_ECANCELED (the progress callback
 * said so). */
BERT_API int bert_tag_batch(bert_session *s, const char *const *texts,
                            const size_t *lens, size_t n,
                            const bert_tag_params *params,
                            bert_tag_result *const *results,
                            bert_error *errors, bert_error *err);

#ifdef __cplusplus
}
#endif
#endif
