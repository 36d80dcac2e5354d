/*
 * libbert/bert.h - BERT / DistilBERT encoder inference on CPUs.
 *
 * Quick tour:
 *
 *   bert_model *m; bert_error err;
 *   if (bert_model_load("models/sst2", NULL, &m, &err)) { puts(err.text); }
 *   bert_session *s;
 *   bert_session_create(m, NULL, &s, &err);
 *   float probs[2]; int label;
 *   bert_classify_text(s, "a gorgeous film", 15, NULL, 0, probs, 2, &label);
 *   printf("%s %.3f\n", bert_model_label(m, label), probs[label]);
 *   bert_session_free(s); bert_model_free(m);
 *
 * A bert_model is immutable after load: share it between threads, each with
 * its own bert_session (the session owns the activation arena and the BLIS
 * thread settings).  Conventions are those of <libbert/bert_tokenizer.h>.
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

/* What config.json says, normalised across BERT and DistilBERT. */
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
} bert_config;

/* ---- model ------------------------------------------------------------- */

typedef struct bert_model_params {
    int load_tokenizer;     /* default 1: a model without tokenizer files
                               then fails with BERT_EMISSING */
} bert_model_params;

BERT_API bert_model_params bert_model_default_params(void);

/* Loads a Hugging Face model directory: config.json, model.safetensors
 * (memory-mapped; F32 used in place, F16/BF16 converted once) and the
 * tokenizer files.  params NULL means defaults.  On failure returns a
 * negative status, sets *out = NULL and fills err (which names the file and
 * the problem). */
BERT_API int bert_model_load(const char *dir, const bert_model_params *params,
                             bert_model **out, bert_error *err);
BERT_API void bert_model_free(bert_model *m);

/* Borrowed; lives as long as m. */
BERT_API const bert_config *bert_model_config(const bert_model *m);
/* Borrowed label name from id2label ("LABEL_<i>" when absent); NULL if out
 * of range. */
BERT_API const char *bert_model_label(const bert_model *m, int id);
/* Borrowed tokenizer, or NULL when loaded without one. */
BERT_API const bert_tokenizer *bert_model_tokenizer(const bert_model *m);
/* Longest sequence the model accepts (max_position_embeddings, capped by the
 * tokenizer's model_max_length when that is smaller). */
BERT_API size_t bert_model_max_length(const bert_model *m);

/* ---- session ----------------------------------------------------------- */

typedef struct bert_session_params {
    int n_threads;          /* default 1; BLIS and OpenMP work of this session */
    size_t max_tokens;      /* arena hint: tokens per run (default 4096);
                               the arena grows if a run needs more */
} bert_session_params;

BERT_API bert_session_params bert_session_default_params(void);

BERT_API int bert_session_create(const bert_model *m,
                                 const bert_session_params *params,
                                 bert_session **out, bert_error *err);
BERT_API void bert_session_free(bert_session *s);
/* Detail of the session's last failure ("" if none).  Borrowed; overwritten
 * by the next call on s. */
BERT_API const char *bert_session_errmsg(const bert_session *s);
BERT_API int bert_session_set_threads(bert_session *s, int n_threads);

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

/* Runs the encoder and heads on `batch` sequences.  Each sequence must have
 * 1 <= n <= bert_model_max_length(m) and ids in range, else BERT_EINVAL with
 * the detail in bert_session_errmsg.  Results equal running each sequence
 * alone. */
BERT_API int bert_session_run(bert_session *s, const bert_input *in,
                              size_t batch, const bert_outputs *out);

/* ---- pipelines --------------------------------------------------------- */

/* How sequence logits become scores, as transformers' text-classification
 * pipeline's function_to_apply. */
typedef enum {
    BERT_FUNC_DEFAULT = 0,  /* sigmoid for multi-label or num_labels == 1,
                               else softmax */
    BERT_FUNC_SOFTMAX,
    BERT_FUNC_SIGMOID,
    BERT_FUNC_NONE
} bert_function;

/* scores[i] = f(logits[i]) for C = num_labels values. */
BERT_API void bert_apply_function(const bert_model *m, bert_function f,
                                  const float *logits, float *scores);

/* Tokenizes text (and pair), truncating to the model's maximum, runs the
 * sequence head and writes num_labels scores (softmax or sigmoid as
 * BERT_FUNC_DEFAULT) to scores (n_scores >= num_labels) and the arg-max to
 * *label.  Long texts: see bert_classify_params. */
BERT_API int bert_classify_text(bert_session *s, const char *text, size_t len,
                                const char *pair, size_t pair_len,
                                float *scores, size_t n_scores, int *label);

#ifdef __cplusplus
}
#endif
#endif
