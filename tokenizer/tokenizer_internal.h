/*
 * tokenizer/tokenizer_internal.h - private structures of the WordPiece and
 * byte-level BPE tokenizers, shared by the files of tokenizer/ (never
 * installed).  The BPE pipeline is described in bpe.c; the WordPiece one:
 *
 * Pipeline (the Hugging Face `tokenizers` BERT pipeline, fused into one
 * pass over the input, code point by code point):
 *   raw text --(added/special tokens matched on the raw bytes)--> segments
 *   segment  --(BertNormalizer: clean, CJK, NFD + drop Mn, lowercase)-->
 *            --(BertPreTokenizer: whitespace, punctuation)--> words
 *   word     --(WordPiece greedy longest-match-first on a byte trie)--> ids
 * Each normalized character remembers the original character it came from,
 * which is how offsets into the caller's text are produced.
 */
#ifndef TOKENIZER_INTERNAL_H
#define TOKENIZER_INTERNAL_H

#include <libbert/bert_tokenizer.h>
#include <stdint.h>
#include <stddef.h>

/* ---- character classes (charclass.c) ---------------------------------- */

/* Class bits of a code point, as the reference sees them. */
enum {
    BT_CC_DROP = 1,  /* removed by clean_text: Cc/Cf/Co (Unicode 8.0), NUL, U+FFFD */
    BT_CC_WS = 2,    /* Rust char::is_whitespace (White_Space) */
    BT_CC_PUNCT = 4, /* Unicode 8.0 P* or ASCII punctuation */
    BT_CC_MN = 8,    /* Unicode 8.0 Mn: dropped after NFD when stripping */
    BT_CC_CJK = 16   /* the CJK ranges of BertNormalizer */
};

/* Class bits of any code point (0..0x10FFFF). */
unsigned bert__cp_class(uint32_t c);

/* Max code points one input character can normalize to. */
#define BT_NORM_MAX 24

/* Normalizes one (non-dropped) code point: canonical decomposition when
 * strip_accents (Mn removed), then per-character lowercasing when
 * lowercase.  Writes up to BT_NORM_MAX code points and their canonical
 * combining classes; returns how many. */
int bert__normalize_cp(uint32_t c, int lowercase, int strip_accents,
                       uint32_t *out, uint8_t *ccc);

/* ---- vocabulary (vocab.c) ---------------------------------------------- */

/* Byte trie over the vocabulary for longest-match lookups.  Transitions
 * live in one open-addressing hash keyed by (node, byte); the root's and
 * the continuation root's 256 transitions are direct tables, since every
 * word starts at one of them. */
typedef struct bt_trie {
    int32_t *node_id;     /* (n_nodes) token id ending at node, or -1 */
    size_t n_nodes, cap_nodes;
    uint64_t *keys;       /* (cap) ((node+1) << 8 | byte), 0 = empty */
    int32_t *vals;        /* (cap) child node */
    size_t cap, mask, used;
    int32_t root_next[256];
    int32_t cont_root;    /* node after the continuation prefix, or -1 */
    int32_t cont_next[256];
} bt_trie;

static inline size_t bt_trie_slot(const bt_trie *tr, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 24) & tr->mask;
}

/* Child of `node` by byte b, or -1. */
static inline int32_t bt_trie_get(const bt_trie *tr, int32_t node, uint8_t b)
{
    uint64_t key = ((uint64_t)(node + 1) << 8) | b;
    size_t i = bt_trie_slot(tr, key);
    for (;;) {
        uint64_t k = tr->keys[i];
        if (k == key)
            return tr->vals[i];
        if (k == 0)
            return -1;
        i = (i + 1) & tr->mask;
    }
}

/* A token matched on the raw text before normalization. */
typedef struct bt_added {
    const char *text;     /* points into the tokenizer's string pool */
    size_t len;
    int32_t id;
    uint8_t lstrip, rstrip; /* absorb the whitespace before / after it */
    uint8_t single_word;  /* only when not inside a word */
} bt_added;

/* Tokenizer kinds. */
enum { BT_KIND_WORDPIECE = 0, BT_KIND_BPE = 1 };

/* Byte-level BPE (bpe.c). */
typedef struct bt_bpe {
    int32_t byte_id[256];    /* id of the token spelling byte b, or -1 */
    char byte_str[256][2];   /* bytes_to_unicode(b) in UTF-8 */
    uint8_t byte_str_len[256];
    /* merges: open addressing on (left id << 32 | right id) */
    uint64_t *mkeys;         /* (mmask+1), UINT64_MAX = empty */
    uint32_t *mrank;         /* merge rank (line order) */
    int32_t *mnew;           /* id of the merged token */
    size_t mmask;
    int add_prefix_space;    /* ByteLevel pre-tokenizer */
    int trim_offsets;        /* RobertaProcessing: offsets without the spaces */
    int pp_add_prefix_space; /* RobertaProcessing's add_prefix_space */
    int ignore_merges;       /* a whole piece in the vocabulary is one token */
    uint64_t fingerprint;    /* hash of everything bert__bpe_word reads */
} bt_bpe;

/* A cached BPE result: pieces of up to BT_BPE_CACHE_KEY bytes (nearly every
 * word) keep their tokens in a direct-mapped table. */
#define BT_BPE_CACHE_KEY 16
#define BT_BPE_CACHE_SLOTS 4096
typedef struct bt_bpe_cached {
    uint8_t klen;            /* 0 = empty */
    uint8_t ntok;
    uint8_t key[BT_BPE_CACHE_KEY];
    uint8_t end[BT_BPE_CACHE_KEY];   /* token k ends at byte end[k] */
    int32_t id[BT_BPE_CACHE_KEY];
} bt_bpe_cached;

/* Scratch of the merge loop, owned by an encoding (grows, never shrinks),
 * and its cache: an encoding is used by one thread at a time, so the cache
 * needs no lock, and the loaded tokenizer stays immutable. */
typedef struct bt_bpe_scratch {
    int32_t *id;             /* 4*cap: symbol id, length in bytes, prev, next */
    uint64_t *heap;          /* 2*cap candidate merges */
    size_t cap;
    bt_bpe_cached *cache;    /* BT_BPE_CACHE_SLOTS, allocated on first use */
    uint64_t cache_fp;       /* bt_bpe.fingerprint of the tokenizer whose
                                results it holds (not its address: a freed
                                tokenizer's memory may hold a new one) */
} bt_bpe_scratch;

struct bert_tokenizer {
    /* id -> token */
    size_t n_ids;         /* max id + 1 */
    size_t ids_cap;       /* allocated entries of tok_off/tok_len */
    char *pool;           /* NUL-terminated token strings */
    size_t pool_len, pool_cap;
    uint32_t *tok_off;    /* (n_ids) offset in pool, UINT32_MAX if no token */
    uint32_t *tok_len;    /* (n_ids) */
    /* token -> id: open addressing, slot holds id + 1, 0 = empty */
    int32_t *hslots;
    size_t hmask;
    size_t n_tokens;      /* distinct tokens */

    bt_trie trie;

    bt_added *added;      /* sorted by nothing; few entries */
    size_t n_added;
    uint8_t added_first[256]; /* 1 if some added token starts with byte */

    int kind;             /* BT_KIND_* */
    bt_bpe *bpe;          /* BT_KIND_BPE only */

    int32_t special[5];   /* indexed by bert_special_token */
    int lowercase, strip_accents, chinese, clean_text;
    size_t max_chars_per_word;
    size_t model_max_length;
    char prefix[16];      /* continuing_subword_prefix, usually "##" */
    size_t prefix_len;

    /* ASCII fast path, derived from the flags at load time */
    uint8_t ascii_class[128]; /* BT_CC_* bits as the pipeline needs them */
    uint8_t ascii_norm[128];  /* lowercased byte when lowercase */
};

/* Adds token text -> id (id may repeat: the last line wins for lookups, as
 * in transformers' load_vocab).  Returns BERT_OK or BERT_ENOMEM. */
int bert__vocab_add(bert_tokenizer *t, const char *s, size_t len, int32_t id);
/* Builds the trie and the ASCII tables once the vocabulary is complete. */
int bert__tokenizer_finish(bert_tokenizer *t, bert_error *err);
/* Builds the token -> id hash early (bert_tokenizer_find works after it;
 * finish() rebuilds it).  BERT_OK or BERT_ENOMEM (err set). */
int bert__tokenizer_hash(bert_tokenizer *t, bert_error *err);
/* Registers a token matched on the raw text (or updates its flags).
 * BERT_OK or BERT_ENOMEM. */
int bert__added_add(bert_tokenizer *t, size_t len, int32_t id, int lstrip, int rstrip,
                    int single_word);
/* Empty tokenizer with Hugging Face defaults, or NULL when out of memory. */
bert_tokenizer *bert__tokenizer_new(void);

/* Sets err (when non-NULL) and returns status. */
int bert__set_error(bert_error *err, int status, long long byte_offset,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- WordPiece (wordpiece.c) ------------------------------------------- */

/* Emits the pieces of one normalized word (UTF-8, `len` bytes, `n_chars`
 * code points) through `emit`, as (start byte, end byte, id) in the word.
 * Returns the number of pieces, or 0 when the word becomes one [UNK]
 * (unsegmentable or longer than max_chars_per_word): then nothing is
 * emitted and the caller emits [UNK] over the whole word. */
typedef struct bt_piece {
    uint32_t start, end;
    int32_t id;
} bt_piece;
size_t bert__wordpiece(const bert_tokenizer *t, const uint8_t *w, size_t len,
                       bt_piece *out);

/* ---- byte-level BPE (bpe.c) ------------------------------------------- */

struct json_t;
/* Fills t from a parsed tokenizer.json whose model is BPE; names[] gets the
 * special tokens' strings (strdup'd).  BERT_EUNSUPPORTED for pipelines other
 * than GPT-2's (normalizer, pre-tokenizer, post-processor, BPE options),
 * BERT_EFORMAT for a bad vocabulary or merges. */
int bert__bpe_load_json(bert_tokenizer *t, struct json_t *j, const char *path, char *names[5],
                        bert_error *err);
/* Fills t from dir/vocab.json + dir/merges.txt and the parsed
 * tokenizer_config.json cfg (may be NULL). */
int bert__bpe_load_files(bert_tokenizer *t, const char *dir, struct json_t *cfg,
                         char *names[5], bert_error *err);
void bert__bpe_free(bt_bpe *m);
void bert__bpe_scratch_free(bt_bpe_scratch *w);
/* End of the pre-tokenizer piece that starts at s[i] (i < len). */
size_t bert__bytelevel_next(const uint8_t *s, size_t len, size_t i);
/* BPE of one piece p[0..n): tokens as byte ranges of p in out[] (room for n),
 * their count in *n_out.  BERT_OK or BERT_ENOMEM. */
int bert__bpe_word(const bert_tokenizer *t, bt_bpe_scratch *w, const uint8_t *p, size_t n,
                   bt_piece *out, size_t *n_out);
/* Id of the token spelling the bytes p[0..n) (mapped), or -1. */
int32_t bert__vocab_lookup_mapped(const bert_tokenizer *t, const uint8_t *p, size_t n);
/* GPT-2's byte-level map read backwards: the byte that character c of a
 * byte-level token stands for, or -1 for a character outside the map. */
int bert__bytelevel_byte(uint32_t c);

/* ---- UTF-8 ------------------------------------------------------------- */

/* Returns the length of the longest valid UTF-8 prefix of s (strict: no
 * overlongs, surrogates or values above U+10FFFF). */
size_t bert__utf8_valid_prefix(const uint8_t *s, size_t len);

/* Decodes one code point of already validated UTF-8 at s; its length in
 * bytes in *n. */
static inline uint32_t bert__utf8_get(const uint8_t *s, size_t *n)
{
    uint8_t b = s[0];
    if (b < 0x80) {
        *n = 1;
        return b;
    }
    if (b < 0xE0) {
        *n = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if (b < 0xF0) {
        *n = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *n = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
           ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

#endif
