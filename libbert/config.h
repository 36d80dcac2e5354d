/*
 * libbert/config.h - read a Hugging Face config.json (BERT, DistilBERT,
 * RoBERTa / XLM-RoBERTa, ELECTRA).
 *
 * Internal API (bert__config_*), usable by inference and training.
 *
 * Keys read:
 *   BERT:       hidden_size, num_hidden_layers, num_attention_heads,
 *               intermediate_size, hidden_act, max_position_embeddings,
 *               type_vocab_size, layer_norm_eps, hidden_dropout_prob,
 *               attention_probs_dropout_prob, classifier_dropout,
 *               position_embedding_type (must be "absolute" or absent)
 *   DistilBERT: dim, n_layers, n_heads, hidden_dim, activation, dropout,
 *               attention_dropout, seq_classif_dropout; layer_norm_eps is
 *               1e-12 (hard-coded in transformers), no token types
 *   both:       architectures (first entry), model_type, vocab_size,
 *               problem_type, num_labels, id2label, pad_token_id
 *   RoBERTa:    as BERT; pad_token_id (default 1) is RoBERTa's padding_idx
 *               for the position ids
 *   ELECTRA:    as BERT, plus embedding_size (E, default 128; E <= hidden)
 *   libbert's:  aggregation_strategy ("none", "simple", "first", "average",
 *               "max"; transformers keeps an unknown key as an attribute)
 * Task: from architectures[0] (Bert|DistilBert|Roberta|XLMRoberta|Electra)
 * (Model|ForSequenceClassification|ForTokenClassification); *ForMaskedLM /
 * *ForPreTraining load as the base encoder.  Without architectures,
 * model_type gives the base model.
 * Labels: id2label (keys "0".."n-1") when present, else num_labels names
 * "LABEL_<i>"; sequence/token models default to 2 labels as transformers.
 *
 * Sanity bounds (checked before anything is allocated from these numbers):
 *   1 <= layers <= 256, 1 <= hidden <= 65536, 1 <= heads <= hidden and
 *   hidden % heads == 0, 1 <= intermediate <= 262144, 1 <= vocab <= 2^24,
 *   1 <= max_position <= 65536, 0 <= type_vocab <= 1024 (BERT: >= 1),
 *   num_labels <= 65536 (>= 1 for classification), 0 < eps < 1.
 */
#ifndef LIBBERT_CONFIG_H
#define LIBBERT_CONFIG_H

#include <stddef.h>

#include "libbert/bert.h"

#define BERT_CFG_MAX_LAYERS 256
#define BERT_CFG_MAX_HIDDEN 65536
#define BERT_CFG_MAX_INTERMEDIATE 262144
#define BERT_CFG_MAX_VOCAB (1u << 24)
#define BERT_CFG_MAX_POSITION 65536
#define BERT_CFG_MAX_TYPES 1024
#define BERT_CFG_MAX_LABELS 65536

/* A parsed config.json: the public part plus what only the library needs. */
typedef struct bert_cfg {
    bert_config pub;          /* what bert_model_config() returns */
    char architecture[96];    /* architectures[0], or "" */
    char model_type[32];      /* "bert", "distilbert", "roberta",
                                 "xlm-roberta" or "electra" */
    char **labels;            /* pub.num_labels names (owned), or NULL */
    int pad_token_id;         /* -1 when absent */
    size_t pos_offset;        /* the first token's position id: padding_idx
                                 + 1 where the architecture counts positions
                                 from it (RoBERTa: arch.h pos_from_pad), else
                                 0; pub.max_position - pos_offset positions
                                 are usable (at least one: checked) */
    int sinusoidal_pos;       /* DistilBERT sinusoidal_pos_embds (weights are
                                 still stored, so it changes nothing here) */
    /* Read for training and written back, never an error: a value that is
     * not a number in range gives the default. */
    float init_range;         /* initializer_range (0.02), fresh weights */
    float qa_dropout;         /* DistilBERT qa_dropout (0.1) */
    int aggregation;          /* "aggregation_strategy" (libbert's key: how
                                 the token labels were trained to become
                                 entities): a bert_aggregation, or -1 */
} bert_cfg;

/* Parses `len` bytes of JSON at `json`.  `label` (e.g. the file path)
 * prefixes messages.  Returns BERT_OK and fills *cfg (free with
 * bert__config_free), or on failure leaves *cfg zeroed and returns
 * BERT_EFORMAT (malformed JSON, wrong-typed or out-of-bounds value),
 * BERT_EUNSUPPORTED (other model type / architecture / activation /
 * position_embedding_type; the message says what is supported),
 * BERT_ENOMEM. */
int bert__config_parse(const char *json, size_t len, const char *label,
                       bert_cfg *cfg, bert_error *err);

/* Reads and parses the file `path` (at most 16 MB).  Missing file:
 * BERT_EMISSING. */
int bert__config_load(const char *path, bert_cfg *cfg, bert_error *err);

/* Writes cfg as a config.json that transformers loads (keys sorted, its
 * spelling of each family's keys) with architectures = [architecture]
 * (e.g. "BertForMaskedLM", which cfg's task cannot tell from BertModel);
 * id2label/label2id/num_labels unless cfg->pub.task is BERT_TASK_BASE.
 * BERT_OK, BERT_ENOMEM or BERT_EIO (naming path). */
int bert__config_write(const bert_cfg *cfg, const char *architecture,
                       const char *path, bert_error *err);

/* Frees the labels; zeroes *cfg.  NULL is a no-op. */
void bert__config_free(bert_cfg *cfg);

/* Name of an activation as config.json spells it ("gelu", "gelu_new",
 * "relu"). */
const char *bert__act_name(bert_activation a);

#endif
