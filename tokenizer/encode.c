/*
 * tokenizer/encode.c - bert_tokenizer_encode: the fused normalize /
 * pre-tokenize / WordPiece pass over each sequence, then the BERT
 * post-processing ([CLS] A [SEP] B [SEP]), truncation and padding.
 *
 * Order of the reference, which the per-character loop reproduces:
 *  1. added tokens ([CLS], [MASK], ...) are found on the raw text, leftmost
 *     longest, and become words of their own;
 *  2. clean_text drops NUL, U+FFFD and Cc/Cf/Co characters (except \t\n\r),
 *     and turns whitespace into a space;
 *  3. CJK ideographs become words of their own;
 *  4. strip_accents: canonical decomposition, Mn dropped; lowercase;
 *  5. the normalized characters are split on whitespace and punctuation
 *     (each punctuation character is a word);
 *  6. each word goes through WordPiece.
 * Every normalized character carries the position of the original
 * character it came from: token offsets are [first char start, last char
 * end) in the caller's text.
 */
#include "tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* One normalized character of the word being built. */
typedef struct wchar_ {
    int64_t ob;   /* byte offset of its original character */
    int64_t oc;   /* code-point offset of its original character */
    uint32_t cp;  /* normalized code point */
    uint8_t obl;  /* byte length of the original character */
    uint8_t ccc;  /* canonical combining class (for NFD reordering) */
} wchar_;

typedef struct enc_priv {
    size_t cap;       /* capacity of the public arrays */
    wchar_ *w;        /* word being built */
    size_t w_n, w_cap;
    size_t w_chars;   /* characters in the word (may exceed w_n) */
    wchar_ w_last;    /* last character when w_n stopped growing */
    uint8_t *wb;      /* UTF-8 of the word */
    uint32_t *wmap;   /* byte of wb -> index in w */
    bt_piece *pieces;
    size_t wb_cap;
} enc_priv;

bert_encode_params bert_encode_default_params(void)
{
    bert_encode_params p;
    memset(&p, 0, sizeof p);
    p.truncation = BERT_TRUNCATE_LONGEST_FIRST;
    p.add_special_tokens = 1;
    return p;
}

bert_encoding *bert_encoding_create(void)
{
    bert_encoding *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->priv_ = calloc(1, sizeof(enc_priv));
    if (!e->priv_) {
        free(e);
        return NULL;
    }
    return e;
}

void bert_encoding_free(bert_encoding *e)
{
    if (!e)
        return;
    enc_priv *p = e->priv_;
    free(e->ids);
    free(e->type_ids);
    free(e->attention_mask);
    free(e->special_mask);
    free(e->word_ids);
    free(e->seq_ids);
    free(e->offsets);
    free(e->byte_offsets);
    if (p) {
        free(p->w);
        free(p->wb);
        free(p->wmap);
        free(p->pieces);
        free(p);
    }
    free(e);
}

#define GROW(ptr, n)                                                           \
    do {                                                                       \
        void *np_ = realloc((ptr), (n) * sizeof *(ptr));                       \
        if (!np_)                                                              \
            return BERT_ENOMEM;                                                \
        (ptr) = np_;                                                           \
    } while (0)

/* Makes room for `need` tokens in total (amortised doubling). */
static int enc_reserve(bert_encoding *e, size_t need)
{
    enc_priv *p = e->priv_;
    if (need <= p->cap)
        return BERT_OK;
    /* the largest array holds 2 int64_t per token: beyond that, or when
     * doubling would wrap, no allocation can succeed */
    const size_t max_cap = SIZE_MAX / (2 * sizeof *e->byte_offsets);
    if (need > max_cap)
        return BERT_ENOMEM;
    size_t cap = p->cap ? p->cap : 256;
    while (cap < need)
        cap = cap > max_cap / 2 ? max_cap : cap * 2;
    GROW(e->ids, cap);
    GROW(e->type_ids, cap);
    GROW(e->attention_mask, cap);
    GROW(e->special_mask, cap);
    GROW(e->word_ids, cap);
    GROW(e->seq_ids, cap);
    GROW(e->offsets, 2 * cap);
    GROW(e->byte_offsets, 2 * cap);
    p->cap = cap;
    return BERT_OK;
}

static void put_token(bert_encoding *e, size_t i, int32_t id, int32_t type, int32_t special,
                      int32_t word, int32_t seq, int64_t cs, int64_t ce, int64_t bs, int64_t be)
{
    e->ids[i] = id;
    e->type_ids[i] = type;
    e->attention_mask[i] = 1;
    e->special_mask[i] = special;
    e->word_ids[i] = word;
    e->seq_ids[i] = seq;
    e->offsets[2 * i] = cs;
    e->offsets[2 * i + 1] = ce;
    e->byte_offsets[2 * i] = bs;
    e->byte_offsets[2 * i + 1] = be;
}

/* ---- one sequence ------------------------------------------------------ */

typedef struct seq_state {
    const bert_tokenizer *t;
    bert_encoding *e;
    enc_priv *p;
    int32_t type, seq;
    int32_t word;     /* next word index */
    size_t max_keep;  /* chars kept per word: max_chars_per_word + 1 */
    size_t start;     /* e->n when the sequence started */
    size_t cap_at;    /* max_length (0 = none), see seen_len() */
    size_t capped;    /* tokens at the first word end >= cap_at, 0 = not yet */
    size_t uncounted; /* tokens after `capped`: counted, never stored (the
                         truncation cannot keep them), so that memory stays
                         O(max_length) whatever the text's length */
} seq_state;

/* The reference stops looking at a sequence once it has max_length tokens
 * at a word end, so longest_first compares those capped lengths (measured
 * with tokenizers 0.23.2: text of 176 and pair of 182 tokens, max_length
 * 128, keep 63 + 62 when the text reaches 129 tokens at a word end and the
 * pair 128).  Called after every word. */
static void note_word_end(seq_state *s)
{
    size_t n = s->e->n - s->start;
    if (s->cap_at && !s->capped && n >= s->cap_at)
        s->capped = n;
}

/* Length of the sequence as the truncation sees it. */
static size_t seen_len(const seq_state *s, size_t n)
{
    return s->capped && s->capped < n ? s->capped : n;
}

static int push_char(seq_state *s, uint32_t cp, uint8_t ccc, int64_t ob, int64_t oc, uint8_t obl)
{
    enc_priv *p = s->p;
    wchar_ c = {ob, oc, cp, obl, ccc};
    s->p->w_chars++;
    if (p->w_n >= s->max_keep) {
        /* The word is already too long: it will be one [UNK]; only its
         * last character matters, and memory stays bounded. */
        p->w_last = c;
        return BERT_OK;
    }
    if (p->w_n == p->w_cap) {
        size_t cap = p->w_cap ? p->w_cap * 2 : 128;
        GROW(p->w, cap);
        p->w_cap = cap;
    }
    size_t k = p->w_n++;
    /* canonical ordering of combining marks (part of NFD) */
    while (ccc && k > 0 && p->w[k - 1].ccc > ccc) {
        p->w[k] = p->w[k - 1];
        k--;
    }
    p->w[k] = c;
    p->w_last = p->w[p->w_n - 1];
    return BERT_OK;
}

static size_t utf8_put(uint8_t *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (uint8_t)(0xC0 | (c >> 6));
        o[1] = (uint8_t)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (c >> 12));
        o[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (c >> 18));
    o[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

/* Ends the current word: WordPiece, then its tokens. */
static int flush_word(seq_state *s)
{
    enc_priv *p = s->p;
    bert_encoding *e = s->e;
    const bert_tokenizer *t = s->t;
    if (p->w_chars == 0)
        return BERT_OK;
    size_t n_chars = p->w_chars;
    int32_t word = s->word++;
    const wchar_ *first = &p->w[0], *last = &p->w_last;
    size_t np = 0;
    if (n_chars <= t->max_chars_per_word) {
        size_t need = p->w_n * 4;
        if (need > p->wb_cap) {
            size_t cap = p->wb_cap ? p->wb_cap : 512;
            while (cap < need)
                cap *= 2;
            GROW(p->wb, cap);
            GROW(p->wmap, cap);
            GROW(p->pieces, cap);
            p->wb_cap = cap;
        }
        size_t len = 0;
        for (size_t i = 0; i < p->w_n; i++) {
            size_t k = utf8_put(p->wb + len, p->w[i].cp);
            for (size_t j = 0; j < k; j++)
                p->wmap[len + j] = (uint32_t)i;
            len += k;
        }
        np = bert__wordpiece(t, p->wb, len, p->pieces);
    }
    if (s->capped) {
        s->uncounted += np ? np : 1;
        p->w_n = 0;
        p->w_chars = 0;
        return BERT_OK;
    }
    if (enc_reserve(e, e->n + (np ? np : 1)))
        return BERT_ENOMEM;
    if (np == 0) {
        put_token(e, e->n++, t->special[BERT_TOKEN_UNK], s->type, 0, word, s->seq, first->oc,
                  last->oc + 1, first->ob, last->ob + last->obl);
    } else {
        for (size_t i = 0; i < np; i++) {
            const wchar_ *a = &p->w[p->wmap[p->pieces[i].start]];
            const wchar_ *b = &p->w[p->wmap[p->pieces[i].end - 1]];
            put_token(e, e->n++, p->pieces[i].id, s->type, 0, word, s->seq, a->oc, b->oc + 1,
                      a->ob, b->ob + b->obl);
        }
    }
    p->w_n = 0;
    p->w_chars = 0;
    note_word_end(s);
    return BERT_OK;
}

/* Decodes one code point of already validated UTF-8. */
static uint32_t utf8_get(const uint8_t *s, size_t *n)
{
    uint8_t b = s[0];
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

/* Longest added token at s[0..len), or NULL. */
static const bt_added *match_added(const bert_tokenizer *t, const uint8_t *s, size_t len)
{
    const bt_added *best = NULL;
    for (size_t i = 0; i < t->n_added; i++) {
        const bt_added *a = &t->added[i];
        if (a->len <= len && (!best || a->len > best->len) && memcmp(a->text, s, a->len) == 0)
            best = a;
    }
    return best;
}

/* Handles one normalized character: whitespace ends the word, punctuation
 * is a word of its own, anything else extends the word. */
static int norm_char(seq_state *s, uint32_t d, uint8_t ccc, unsigned cls, int64_t ob, int64_t oc,
                     uint8_t obl)
{
    if (cls & BT_CC_WS)
        return flush_word(s);
    if (cls & BT_CC_PUNCT) {
        if (flush_word(s) || push_char(s, d, 0, ob, oc, obl))
            return BERT_ENOMEM;
        return flush_word(s);
    }
    return push_char(s, d, ccc, ob, oc, obl);
}

static int encode_seq(seq_state *s, const uint8_t *txt, size_t len)
{
    const bert_tokenizer *t = s->t;
    size_t i = 0;
    int64_t cp = 0;
    int rc = BERT_OK;
    uint32_t norm[BT_NORM_MAX];
    uint8_t ccc[BT_NORM_MAX];
    while (i < len) {
        uint8_t b = txt[i];
        if (t->added_first[b]) {
            const bt_added *a = match_added(t, txt + i, len - i);
            if (a) {
                if ((rc = flush_word(s)) || (rc = enc_reserve(s->e, s->e->n + 1)))
                    return rc;
                int64_t nc = 0;
                for (size_t k = 0; k < a->len; k++)
                    nc += (a->text[k] & 0xC0) != 0x80;
                if (s->capped) {
                    s->uncounted++;
                    s->word++;
                } else {
                    put_token(s->e, s->e->n++, a->id, s->type, 0, s->word++, s->seq, cp,
                              cp + nc, (int64_t)i, (int64_t)(i + a->len));
                    note_word_end(s);
                }
                i += a->len;
                cp += nc;
                continue;
            }
        }
        if (b < 0x80) {
            /* ASCII fast path: precomputed class and lowercase */
            unsigned cls = t->ascii_class[b];
            if (cls == 0)
                rc = push_char(s, t->ascii_norm[b], 0, (int64_t)i, cp, 1);
            else if (!(cls & BT_CC_DROP))
                rc = norm_char(s, t->ascii_norm[b], 0, cls, (int64_t)i, cp, 1);
            if (rc)
                return rc;
            i++;
            cp++;
            continue;
        }
        size_t n;
        uint32_t c = utf8_get(txt + i, &n);
        unsigned cls = bert__cp_class(c);
        if (t->clean_text && (cls & (BT_CC_DROP | BT_CC_WS))) {
            if (!(cls & BT_CC_DROP) && (rc = flush_word(s)))
                return rc;
        } else {
            int cjk = t->chinese && (cls & BT_CC_CJK);
            if (cjk && (rc = flush_word(s)))
                return rc;
            if (!t->lowercase && !t->strip_accents) {
                rc = norm_char(s, c, 0, cls, (int64_t)i, cp, (uint8_t)n);
            } else {
                int k = bert__normalize_cp(c, t->lowercase, t->strip_accents, norm, ccc);
                for (int j = 0; j < k && !rc; j++) {
                    unsigned dc = norm[j] == c ? cls : bert__cp_class(norm[j]);
                    rc = norm_char(s, norm[j], t->strip_accents ? ccc[j] : 0, dc, (int64_t)i,
                                   cp, (uint8_t)n);
                }
            }
            if (!rc && cjk)
                rc = flush_word(s);
            if (rc)
                return rc;
        }
        i += n;
        cp++;
    }
    return flush_word(s);
}

/* ---- truncation (the reference's truncate_encodings) -------------------- */

static int truncate_lengths(size_t max_len, bert_truncation strategy, int has_pair, size_t *n1p,
                            size_t *n2p, bert_error *err)
{
    size_t n1 = *n1p, n2 = *n2p;
    if (max_len == 0) {
        *n1p = *n2p = 0;
        return BERT_OK;
    }
    size_t total = n1 + n2;
    if (total <= max_len)
        return BERT_OK;
    size_t to_remove = total - max_len;
    switch (strategy) {
    case BERT_TRUNCATE_LONGEST_FIRST:
        if (has_pair) {
            int swap = n1 > n2;
            size_t a = swap ? n2 : n1, b;
            if (a > max_len)
                b = a;
            else
                b = a > max_len - a ? a : max_len - a;
            if (a + b > max_len) {
                a = max_len / 2;
                b = a + max_len % 2;
            }
            *n1p = swap ? b : a;
            *n2p = swap ? a : b;
            /* never lengthen: truncate() keeps min(n, current) */
            if (*n1p > n1)
                *n1p = n1;
            if (*n2p > n2)
                *n2p = n2;
        } else {
            *n1p = total - to_remove;
        }
        return BERT_OK;
    case BERT_TRUNCATE_ONLY_FIRST:
    case BERT_TRUNCATE_ONLY_SECOND: {
        size_t *target = strategy == BERT_TRUNCATE_ONLY_FIRST ? n1p : n2p;
        if (strategy == BERT_TRUNCATE_ONLY_SECOND && !has_pair)
            return bert__set_error(err, BERT_EINVAL, -1,
                                   "truncation only_second: no second sequence given");
        if (*target > to_remove) {
            *target -= to_remove;
            return BERT_OK;
        }
        return bert__set_error(err, BERT_ETOOLONG, -1,
                               "truncation %s: the sequence to truncate is too short for "
                               "max_length %zu",
                               strategy == BERT_TRUNCATE_ONLY_FIRST ? "only_first" : "only_second",
                               max_len);
    }
    }
    return bert__set_error(err, BERT_EINVAL, -1, "unknown truncation strategy %d", (int)strategy);
}

/* Moves tokens [from, from+n) to `to` in every array. */
static void move_tokens(bert_encoding *e, size_t to, size_t from, size_t n)
{
    if (to == from || n == 0)
        return;
    memmove(e->ids + to, e->ids + from, n * sizeof *e->ids);
    memmove(e->type_ids + to, e->type_ids + from, n * sizeof *e->type_ids);
    memmove(e->attention_mask + to, e->attention_mask + from, n * sizeof *e->attention_mask);
    memmove(e->special_mask + to, e->special_mask + from, n * sizeof *e->special_mask);
    memmove(e->word_ids + to, e->word_ids + from, n * sizeof *e->word_ids);
    memmove(e->seq_ids + to, e->seq_ids + from, n * sizeof *e->seq_ids);
    memmove(e->offsets + 2 * to, e->offsets + 2 * from, 2 * n * sizeof *e->offsets);
    memmove(e->byte_offsets + 2 * to, e->byte_offsets + 2 * from, 2 * n * sizeof *e->byte_offsets);
}

static int check_utf8(const char *what, const char *s, size_t len, bert_error *err)
{
    size_t v = bert__utf8_valid_prefix((const uint8_t *)s, len);
    if (v == len)
        return BERT_OK;
    return bert__set_error(err, BERT_EUTF8, (long long)v, "invalid UTF-8 in %s at byte %zu", what,
                           v);
}

static int encode_impl(const bert_tokenizer *t, const char *text, size_t len, const char *pair,
                       size_t pair_len, const bert_encode_params *params, bert_encoding *e,
                       bert_error *err)
{
    bert_encode_params prm = params ? *params : bert_encode_default_params();
    int has_pair = pair != NULL && pair_len > 0;
    int rc;
    if ((rc = check_utf8("text", text, len, err)))
        return rc;
    if (has_pair && (rc = check_utf8("pair", pair, pair_len, err)))
        return rc;
    int sp = prm.add_special_tokens != 0;
    int32_t cls_id = t->special[BERT_TOKEN_CLS], sep_id = t->special[BERT_TOKEN_SEP];
    if (sp && (cls_id < 0 || sep_id < 0))
        return bert__set_error(err, BERT_EFORMAT, -1, "the vocabulary lacks [CLS] or [SEP]");
    /* A max_length below the special tokens cannot be honoured: refuse it
     * rather than return more tokens than the caller made room for. */
    size_t n_special = sp ? (has_pair ? 3 : 2) : 0;
    if (prm.max_length > 0 && prm.max_length < n_special)
        return bert__set_error(err, BERT_EINVAL, -1,
                               "max_length %zu is smaller than the %zu special tokens", prm.max_length,
                               n_special);

    enc_priv *p = e->priv_;
    seq_state s = {t, e, p, 0, 0, 0, 0, 0, prm.max_length, 0, 0};
    s.max_keep = t->max_chars_per_word < SIZE_MAX - 1 ? t->max_chars_per_word + 1 : SIZE_MAX;
    p->w_n = p->w_chars = 0;

    if ((rc = enc_reserve(e, 8)))
        return rc;
    size_t base = sp ? 1 : 0;
    e->n = base;
    s.start = base;
    if ((rc = encode_seq(&s, (const uint8_t *)text, len)))
        return rc;
    size_t n1 = e->n - base + s.uncounted, n2 = 0, b_start = e->n + (size_t)sp;
    size_t seen1 = seen_len(&s, n1), seen2 = 0;
    if (has_pair) {
        if ((rc = enc_reserve(e, e->n + 1)))
            return rc;
        e->n = b_start;
        s.type = 1;
        s.seq = 1;
        s.word = 0;
        s.start = b_start;
        s.capped = 0;
        s.uncounted = 0;
        if ((rc = encode_seq(&s, (const uint8_t *)pair, pair_len)))
            return rc;
        n2 = e->n - b_start + s.uncounted;
        seen2 = seen_len(&s, n2);
    }
    size_t k1 = seen1, k2 = seen2;
    if (prm.max_length > 0) {
        /* lengths count the special tokens, as the reference does */
        size_t eff = prm.max_length - n_special;
        if ((rc = truncate_lengths(eff, prm.truncation, has_pair, &k1, &k2, err)))
            return rc;
    }
    /* k <= seen <= n: a capped sequence is, for the reference, only as long
     * as its capped length (it stopped tokenizing there). */
    e->n_overflow_first = n1 - k1;
    e->n_overflow_second = n2 - k2;
    size_t n = base + k1;
    if (sp)
        put_token(e, n++, sep_id, 0, 1, -1, -1, 0, 0, 0, 0);
    if (has_pair) {
        move_tokens(e, n, b_start, k2);
        n += k2;
        if (sp) {
            if ((rc = enc_reserve(e, n + 1)))
                return rc;
            put_token(e, n++, sep_id, 1, 1, -1, -1, 0, 0, 0, 0);
        }
    }
    if (sp)
        put_token(e, 0, cls_id, 0, 1, -1, -1, 0, 0, 0, 0);
    if (prm.pad_to > n) {
        int32_t pad_id = t->special[BERT_TOKEN_PAD];
        if (pad_id < 0)
            return bert__set_error(err, BERT_EFORMAT, -1, "the vocabulary lacks [PAD]");
        if ((rc = enc_reserve(e, prm.pad_to)))
            return rc;
        for (; n < prm.pad_to; n++) {
            put_token(e, n, pad_id, 0, 1, -1, -1, 0, 0, 0, 0);
            e->attention_mask[n] = 0;
        }
    }
    e->n = n;
    return BERT_OK;
}

int bert_tokenizer_encode(const bert_tokenizer *t, const char *text, size_t len, const char *pair,
                          size_t pair_len, const bert_encode_params *params, bert_encoding *enc,
                          bert_error *err)
{
    if (!enc)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_encode: enc is NULL");
    enc->n = 0;
    enc->n_overflow_first = enc->n_overflow_second = 0;
    if (!t || (!text && len) || (!pair && pair_len))
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_encode: bad arguments");
    if (!text)
        text = "";
    int rc = encode_impl(t, text, len, pair, pair_len, params, enc, err);
    if (rc) {
        if (rc == BERT_ENOMEM)
            bert__set_error(err, rc, -1, "out of memory");
        enc->n = 0;
        enc->n_overflow_first = enc->n_overflow_second = 0;
    }
    return rc;
}
