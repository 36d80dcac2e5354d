/*
 * libbert/bert_tokenizer.h - BERT WordPiece and RoBERTa byte-level BPE
 * tokenizers with Hugging Face parity.
 *
 * This header also holds what every libbert API shares: status codes, the
 * error detail struct and the export macro.  <libbert/bert.h> includes it.
 *
 * Contract conventions (they hold for every function unless it says
 * otherwise):
 *  - Fallible functions return BERT_OK (0) or a negative bert_status.
 *  - On failure, a non-NULL bert_error * receives a one-line message that
 *    names the file, line, byte offset or tensor concerned.
 *  - Objects returned through an out-parameter are owned by the caller and
 *    released with the matching *_free function; *_free(NULL) is a no-op.
 *  - Returned const pointers are borrowed: valid until their owner is freed.
 *  - The library never prints, never exits, and keeps no global mutable
 *    state.  A loaded tokenizer is immutable and may be shared by threads.
 */
#ifndef LIBBERT_BERT_TOKENIZER_H
#define LIBBERT_BERT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BERT_API __attribute__((visibility("default")))
#else
#define BERT_API
#endif

#define BERT_VERSION_MAJOR 0
#define BERT_VERSION_MINOR 1
#define BERT_VERSION_PATCH 0
#define BERT_VERSION_STRING "0.1.0"

/* ---- status codes ------------------------------------------------------ */

/* X-macro: name, value, static message. */
#define BERT_STATUS_MAP(XX)                                                    \
    XX(OK, 0, "success")                                                       \
    XX(ENOMEM, -1, "out of memory")                                            \
    XX(EIO, -2, "I/O error")                                                   \
    XX(EFORMAT, -3, "malformed file")                                          \
    XX(ESHAPE, -4, "tensor shape mismatch")                                    \
    XX(EMISSING, -5, "missing file or tensor")                                 \
    XX(EINVAL, -6, "invalid argument")                                         \
    XX(EUTF8, -7, "invalid UTF-8")                                             \
    XX(ETOOLONG, -8, "input exceeds a limit")                                  \
    XX(EUNSUPPORTED, -9, "unsupported model or option")                        \
    XX(ERANGE, -10, "output buffer too small")

typedef enum {
#define BERT_STATUS_ENUM_(name, val, msg) BERT_##name = val,
    BERT_STATUS_MAP(BERT_STATUS_ENUM_)
#undef BERT_STATUS_ENUM_
} bert_status;

/* Static text for a status code; never NULL (unknown codes give a generic
 * message). */
BERT_API const char *bert_strerror(int status);

/* Filled on failure by functions that take one.  `byte_offset` is the offset
 * of the offending byte in the input (invalid UTF-8) or -1. */
typedef struct bert_error {
    int status;
    long long byte_offset;
    char text[512];
} bert_error;

/* ---- tokenizer --------------------------------------------------------- */

typedef struct bert_tokenizer bert_tokenizer;

/* Which special token. */
typedef enum {
    BERT_TOKEN_PAD,
    BERT_TOKEN_UNK,
    BERT_TOKEN_CLS,
    BERT_TOKEN_SEP,
    BERT_TOKEN_MASK
} bert_special_token;

/* Loads the tokenizer of a Hugging Face model directory `dir`:
 * tokenizer.json when present (BERT WordPiece, or GPT-2/RoBERTa byte-level
 * BPE with RobertaProcessing; other kinds, e.g. XLM-R's Unigram, give
 * BERT_EUNSUPPORTED), else vocab.json + merges.txt (byte-level BPE), else
 * vocab.txt (WordPiece); tokenizer_config.json is optional (HF defaults when
 * absent).  Normalizer / add_prefix_space / trim_offsets flags come from
 * these files.  For BPE, special tokens are <s> (CLS), </s> (SEP), <pad>,
 * <unk>, <mask>, and pairs are <s> A </s></s> B </s> with type ids 0.
 * Returns BERT_OK and a tokenizer in *out, or an error (and *out = NULL). */
BERT_API int bert_tokenizer_load(const char *dir, bert_tokenizer **out,
                                 bert_error *err);

/* Builds a tokenizer from a vocab.txt file (split on '\n' only) and explicit
 * flags.  strip_accents: -1 = follow lowercase, 0 = no, 1 = yes. */
BERT_API int bert_tokenizer_load_vocab(const char *vocab_txt, int lowercase,
                                       int strip_accents,
                                       int tokenize_chinese_chars,
                                       bert_tokenizer **out, bert_error *err);

BERT_API void bert_tokenizer_free(bert_tokenizer *t);

BERT_API size_t bert_tokenizer_vocab_size(const bert_tokenizer *t);
/* Borrowed token text (NUL-terminated) of id, or NULL when out of range. */
BERT_API const char *bert_tokenizer_token(const bert_tokenizer *t, int32_t id);
/* Id of an exact token string, or -1 when absent. */
BERT_API int32_t bert_tokenizer_find(const bert_tokenizer *t, const char *tok,
                                     size_t len);
/* Id of a special token, or -1 when the vocabulary lacks it. */
BERT_API int32_t bert_tokenizer_special(const bert_tokenizer *t,
                                        bert_special_token which);
/* model_max_length from tokenizer_config.json (0 when absent or huge). */
BERT_API size_t bert_tokenizer_model_max_length(const bert_tokenizer *t);
/* The tokenizer's model. */
typedef enum {
    BERT_TOKENIZER_WORDPIECE = 0, /* BERT, DistilBERT, ELECTRA */
    BERT_TOKENIZER_BPE            /* GPT-2's byte-level BPE (RoBERTa) */
} bert_tokenizer_kind;
BERT_API bert_tokenizer_kind bert_tokenizer_get_kind(const bert_tokenizer *t);
/* Normalizer flags in effect (1/0). */
BERT_API int bert_tokenizer_lowercase(const bert_tokenizer *t);
BERT_API int bert_tokenizer_strip_accents(const bert_tokenizer *t);

/* ---- encoding ---------------------------------------------------------- */

typedef enum {
    BERT_TRUNCATE_LONGEST_FIRST = 0,
    BERT_TRUNCATE_ONLY_FIRST,
    BERT_TRUNCATE_ONLY_SECOND
} bert_truncation;

typedef struct bert_encode_params {
    size_t max_length;          /* 0 = no truncation; counts special tokens */
    bert_truncation truncation; /* default BERT_TRUNCATE_LONGEST_FIRST */
    size_t pad_to;              /* 0 = no padding; else pad with [PAD] to this */
    int add_special_tokens;     /* default 1: [CLS] A [SEP] (B [SEP]) */
} bert_encode_params;

BERT_API bert_encode_params bert_encode_default_params(void);

/* The result of one encode call.  The arrays are owned by the encoding and
 * grow as needed (amortised, reused across calls: no allocation per token).
 * All arrays have `n` entries.  Offsets are [start, end) into the caller's
 * original text (seq_ids 0) or pair text (seq_ids 1); [0,0] for special and
 * padding tokens. */
typedef struct bert_encoding {
    size_t n;                /* number of tokens (including padding) */
    int32_t *ids;            /* token ids */
    int32_t *type_ids;       /* 0 for the first segment, 1 for the second */
    int32_t *attention_mask; /* 1 for real tokens, 0 for padding */
    int32_t *special_mask;   /* 1 for [CLS]/[SEP]/[PAD] added by us */
    int32_t *word_ids;       /* index of the pre-token word, -1 for specials */
    int32_t *seq_ids;        /* 0 or 1, -1 for special tokens */
    int64_t *offsets;        /* 2*n: code-point [start,end) per token */
    int64_t *byte_offsets;   /* 2*n: byte [start,end) per token */
    size_t n_overflow_first; /* tokens of text dropped by truncation */
    size_t n_overflow_second;/* tokens of pair dropped by truncation */
    void *priv_;             /* scratch, owned by the encoding */
} bert_encoding;

/* Creates an empty encoding (reusable across calls and tokenizers).
 * Returns NULL when out of memory. */
BERT_API bert_encoding *bert_encoding_create(void);
BERT_API void bert_encoding_free(bert_encoding *e);

/* Encodes `text` (len bytes, UTF-8, need not be NUL-terminated) and the
 * optional `pair` (NULL = no pair).  An empty pair (pair_len 0, non-NULL) is
 * encoded as no pair, as transformers' tokenizer(a, text_pair="") does.
 * params NULL means bert_encode_default_params().
 * Invalid UTF-8 gives BERT_EUTF8 with err->byte_offset set (offset into text,
 * or into pair with the message saying so).  Thread-safe for distinct
 * encodings.  On failure enc->n is 0. */
BERT_API int bert_tokenizer_encode(const bert_tokenizer *t, const char *text,
                                   size_t len, const char *pair,
                                   size_t pair_len,
                                   const bert_encode_params *params,
                                   bert_encoding *enc, bert_error *err);

#ifdef __cplusplus
}
#endif
#endif
