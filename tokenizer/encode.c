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
#include "libbert/internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

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
    /* byte-level BPE */
    bt_bpe_scratch bpe;
    bt_piece *bp;     /* tokens of one piece */
    size_t bp_cap;
    uint8_t *seg;     /* a segment with its prefix space (add_prefix_space) */
    size_t seg_cap;
} enc_priv;

bert_encode_params bert_encode_default_params(void)
{
    bert_encode_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
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
        free(p->bpe.id);
        free(p->bpe.heap);
        free(p->bpe.cache);
        free(p->bp);
        free(p->seg);
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
        uint32_t c = bert__utf8_get(txt + i, &n);
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

/* ---- byte-level BPE sequence ------------------------------------------- */

/* Tokens of one pre-tokenizer piece p[0..n) (a word).  p[0] is the virtual
 * prefix space when virt; the piece's first real byte is at byte ob and
 * code point oc of the sequence's text.  Each token's span is that of the
 * characters its bytes belong to; the prefix space shares the span of the
 * segment's first character, vlen bytes (NormalizedString::prepend).  With
 * trim_offsets the spaces at a token's ends are left out
 * (RobertaProcessing's process_offsets, byte arithmetic). */
static int bpe_piece(seq_state *s, const uint8_t *p, size_t n, int virt, int64_t ob, int64_t oc,
                     int64_t vlen)
{
    enc_priv *pr = s->p;
    bert_encoding *e = s->e;
    const bert_tokenizer *t = s->t;
    const bt_bpe *m = t->bpe;
    if (n > pr->bp_cap) {
        size_t cap = pr->bp_cap ? pr->bp_cap : 256;
        while (cap < n)
            cap *= 2;
        GROW(pr->bp, cap);
        pr->bp_cap = cap;
    }
    size_t nt;
    int rc = bert__bpe_word(t, &pr->bpe, p, n, pr->bp, &nt);
    if (rc)
        return rc;
    if ((rc = enc_reserve(e, e->n + nt)))
        return rc;
    int32_t word = s->word++;
    /* cursors: code points of p[virt..ka) and p[virt..ke) */
    size_t ka = (size_t)virt, ke = (size_t)virt;
    int64_t ca = 0, ce_ = 0;
    for (size_t k = 0; k < nt; k++) {
        size_t a = pr->bp[k].start, b = pr->bp[k].end;
        while (a > (size_t)virt && (p[a] & 0xC0) == 0x80)
            a--;
        size_t z = b;
        while (z < n && (p[z] & 0xC0) == 0x80)
            z++;
        int64_t bs, be, cs, ce;
        if (a < (size_t)virt) {
            bs = ob;
            cs = oc;
        } else {
            for (; ka < a; ka++)
                ca += (p[ka] & 0xC0) != 0x80;
            bs = ob + (int64_t)(a - (size_t)virt);
            cs = oc + ca;
        }
        for (; ke < z; ke++)
            ce_ += (p[ke] & 0xC0) != 0x80;
        be = ob + (int64_t)(z - (size_t)virt);
        ce = oc + ce_;
        if (z <= (size_t)virt) { /* the prefix space alone */
            be = ob + vlen;
            ce = oc + 1;
        }
        if (m->trim_offsets) {
            size_t a0 = pr->bp[k].start, lead = 0, trail = 0;
            while (a0 + lead < b && p[a0 + lead] == ' ')
                lead++;
            while (trail < b - a0 && p[b - 1 - trail] == ' ')
                trail++;
            int first = e->n == s->start || bs == 0;
            if (lead > 0 && !(first && m->pp_add_prefix_space && lead == 1)) {
                int64_t nbs = bs + (int64_t)lead < be ? bs + (int64_t)lead : be;
                cs = nbs == be ? ce : cs + (nbs - bs);
                bs = nbs;
            }
            if (trail > 0 && be >= (int64_t)trail) {
                int64_t nbe = be - (int64_t)trail > bs ? be - (int64_t)trail : bs;
                ce = nbe == bs ? cs : ce - (be - nbe);
                be = nbe;
            }
        }
        put_token(e, e->n++, pr->bp[k].id, s->type, 0, word, s->seq, cs, ce, bs, be);
    }
    note_word_end(s);
    return BERT_OK;
}

/* Pre-tokenizes the segment txt[0..len) (between added tokens; at byte ob
 * and code point oc of the text) and encodes its pieces. */
static int bpe_segment(seq_state *s, const uint8_t *txt, size_t len, int64_t ob, int64_t oc)
{
    enc_priv *pr = s->p;
    if (len == 0)
        return BERT_OK;
    int virt = s->t->bpe->add_prefix_space && txt[0] != ' ';
    /* byte length of the segment's first character */
    int64_t vlen = txt[0] < 0xC0 ? 1 : txt[0] < 0xE0 ? 2 : txt[0] < 0xF0 ? 3 : 4;
    const uint8_t *buf = txt;
    size_t blen = len;
    if (virt) {
        if (len + 1 > pr->seg_cap) {
            size_t cap = pr->seg_cap ? pr->seg_cap : 1024;
            while (cap < len + 1)
                cap *= 2;
            GROW(pr->seg, cap);
            pr->seg_cap = cap;
        }
        pr->seg[0] = ' ';
        memcpy(pr->seg + 1, txt, len);
        buf = pr->seg;
        blen = len + 1;
    }
    size_t i = 0;
    int64_t cp = 0; /* code points of buf[virt..i) */
    int rc;
    while (i < blen) {
        size_t j = bert__bytelevel_next(buf, blen, i);
        int v = virt && i == 0;
        /* the piece's first real byte: after the virtual space */
        int64_t pob = ob + (int64_t)i - (virt && i > 0 ? 1 : 0);
        if ((rc = bpe_piece(s, buf + i, j - i, v, pob, oc + cp, vlen)))
            return rc;
        for (size_t k = i + (size_t)v; k < j; k++)
            cp += (buf[k] & 0xC0) != 0x80;
        i = j;
    }
    return BERT_OK;
}

/* Length of the whitespace character ending at s[i) (i > 0), or 0. */
static size_t ws_before(const uint8_t *s, size_t i)
{
    size_t k = i - 1;
    while (k > 0 && (s[k] & 0xC0) == 0x80)
        k--;
    size_t n;
    uint32_t c = s[k] < 0x80 ? (n = 1, s[k]) : bert__utf8_get(s + k, &n);
    return (bert__cp_class(c) & BT_CC_WS) ? i - k : 0;
}

/* Length of the whitespace character at s[i] (i < len), or 0. */
static size_t ws_at(const uint8_t *s, size_t i)
{
    size_t n;
    uint32_t c = s[i] < 0x80 ? (n = 1, s[i]) : bert__utf8_get(s + i, &n);
    return (bert__cp_class(c) & BT_CC_WS) ? n : 0;
}

/* Rust regex's Unicode \w (Alphabetic, marks, decimal digits, connector
 * punctuation), approximated by general categories: letters, marks, Nd,
 * Nl, Pc. */
static int is_word_cp(uint32_t c)
{
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

/* single_word: the match s[a..b) is not inside a word (AddedVocabulary's
 * ends_with_word / starts_with_word: no \w just before or just after;
 * the text before is read from lo, the end of the previous match). */
static int single_word_ok(const uint8_t *s, size_t len, size_t lo, size_t a, size_t b)
{
    size_t n;
    if (a > lo) {
        size_t k = a - 1;
        while (k > lo && (s[k] & 0xC0) == 0x80)
            k--;
        if (is_word_cp(s[k] < 0x80 ? s[k] : bert__utf8_get(s + k, &n)))
            return 0;
    }
    if (b < len && is_word_cp(s[b] < 0x80 ? s[b] : bert__utf8_get(s + b, &n)))
        return 0;
    return 1;
}

static int64_t count_cp(const uint8_t *s, size_t a, size_t b)
{
    int64_t n = 0;
    for (size_t k = a; k < b; k++)
        n += (s[k] & 0xC0) != 0x80;
    return n;
}

/* One sequence: added tokens found on the raw text (leftmost longest, with
 * their lstrip/rstrip), the segments between them byte-level BPE'd. */
static int encode_seq_bpe(seq_state *s, const uint8_t *txt, size_t len)
{
    const bert_tokenizer *t = s->t;
    size_t seg = 0, i = 0;
    int64_t seg_cp = 0, cp = 0;
    int rc;
    while (i < len) {
        uint8_t b = txt[i];
        const bt_added *a = t->added_first[b] ? match_added(t, txt + i, len - i) : NULL;
        if (a && a->single_word && !single_word_ok(txt, len, seg, i, i + a->len)) {
            /* discarded; the reference's matcher resumes after it */
            cp += count_cp(txt, i, i + a->len);
            i += a->len;
            continue;
        }
        if (a) {
            size_t st = i, en = i + a->len;
            if (a->lstrip)
                for (size_t w; st > seg && (w = ws_before(txt, st)) > 0;)
                    st -= w;
            if (a->rstrip)
                for (size_t w; en < len && (w = ws_at(txt, en)) > 0;)
                    en += w;
            int64_t cst = cp - count_cp(txt, st, i);
            if ((rc = bpe_segment(s, txt + seg, st - seg, (int64_t)seg, seg_cp)))
                return rc;
            if ((rc = enc_reserve(s->e, s->e->n + 1)))
                return rc;
            int64_t cen = cp + count_cp(txt, i, en);
            put_token(s->e, s->e->n++, a->id, s->type, 0, s->word++, s->seq, cst, cen,
                      (int64_t)st, (int64_t)en);
            note_word_end(s);
            i = seg = en;
            cp = seg_cp = cen;
            continue;
        }
        cp += (b & 0xC0) != 0x80;
        i++;
    }
    return bpe_segment(s, txt + seg, len - seg, (int64_t)seg, seg_cp);
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

/* One side of an encode call: a text, or (words non-NULL) n words already
 * split, as transformers' is_split_into_words. */
typedef struct side {
    const char *text;
    size_t len;
    const char *const *words;
    const size_t *lens; /* NULL: NUL-terminated words */
    size_t n;
} side;

static size_t word_len(const side *sd, size_t i)
{
    return sd->lens ? sd->lens[i] : strlen(sd->words[i]);
}

static int check_side(const char *what, const side *sd, bert_error *err)
{
    if (!sd->words)
        return check_utf8(what, sd->text, sd->len, err);
    for (size_t i = 0; i < sd->n; i++) {
        if (!sd->words[i])
            return bert__set_error(err, BERT_EINVAL, -1, "%s word %zu is NULL", what, i);
        size_t n = word_len(sd, i);
        size_t v = bert__utf8_valid_prefix((const uint8_t *)sd->words[i], n);
        if (v != n)
            return bert__set_error(err, BERT_EUTF8, (long long)v,
                                   "invalid UTF-8 in %s word %zu at byte %zu", what, i, v);
    }
    return BERT_OK;
}

/* Encodes one side: the text as one sequence, or each word as its own
 * (normalised and pre-tokenized alone, so its offsets are within the
 * word) with the word's index as the word id of all its tokens. */
static int encode_side(seq_state *s, const side *sd, int bpe)
{
    if (!sd->words)
        return bpe ? encode_seq_bpe(s, (const uint8_t *)sd->text, sd->len)
                   : encode_seq(s, (const uint8_t *)sd->text, sd->len);
    for (size_t i = 0; i < sd->n; i++) {
        size_t before = s->e->n;
        int rc = encode_seq(s, (const uint8_t *)sd->words[i], word_len(sd, i));
        if (rc)
            return rc;
        for (size_t k = before; k < s->e->n; k++)
            s->e->word_ids[k] = (int32_t)i;
    }
    return BERT_OK;
}

static int encode_impl(const bert_tokenizer *t, const side *first, const side *second,
                       const bert_encode_params *params, bert_encoding *e, bert_error *err)
{
    bert_encode_params prm;
    if (BERT__PARAMS(prm, params, bert_encode_default_params, err))
        return BERT_EINVAL;
    int has_pair = second->words ? second->n > 0 : second->text != NULL && second->len > 0;
    int rc;
    if ((rc = check_side("text", first, err)))
        return rc;
    if (has_pair && (rc = check_side("pair", second, err)))
        return rc;
    if (first->words && t->kind == BT_KIND_BPE)
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "pre-split words need a WordPiece tokenizer (byte-level BPE "
                               "marks word starts with a prefix space)");
    int sp = prm.add_special_tokens != 0;
    int32_t cls_id = t->special[BERT_TOKEN_CLS], sep_id = t->special[BERT_TOKEN_SEP];
    if (sp && (cls_id < 0 || sep_id < 0))
        return bert__set_error(err, BERT_EFORMAT, -1, "the vocabulary lacks [CLS] or [SEP]");
    int bpe = t->kind == BT_KIND_BPE;
    /* RoBERTa: <s> A </s></s> B </s>, every type id 0 */
    size_t mid = sp ? (bpe ? 2 : 1) : 0;
    /* A max_length below the special tokens cannot be honoured: refuse it
     * rather than return more tokens than the caller made room for. */
    size_t n_special = sp ? (has_pair ? 2 + mid : 2) : 0;
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
    int32_t type_b = bpe ? 0 : 1;
    if ((rc = encode_side(&s, first, bpe)))
        return rc;
    size_t n1 = e->n - base + s.uncounted, n2 = 0, b_start = e->n + mid;
    size_t seen1 = seen_len(&s, n1), seen2 = 0;
    if (has_pair) {
        if ((rc = enc_reserve(e, e->n + mid)))
            return rc;
        e->n = b_start;
        s.type = type_b;
        s.seq = 1;
        s.word = 0;
        s.start = b_start;
        s.capped = 0;
        s.uncounted = 0;
        if ((rc = encode_side(&s, second, bpe)))
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
        /* the pair starts at b_start >= n + mid - 1: the second </s> of
         * RoBERTa goes in before the pair's tokens move down */
        if (sp && bpe) {
            move_tokens(e, n + 1, b_start, k2);
            put_token(e, n++, sep_id, 0, 1, -1, -1, 0, 0, 0, 0);
        } else {
            move_tokens(e, n, b_start, k2);
        }
        n += k2;
        if (sp) {
            if ((rc = enc_reserve(e, n + 1)))
                return rc;
            put_token(e, n++, sep_id, type_b, 1, -1, -1, 0, 0, 0, 0);
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

/* encode_impl, leaving enc empty (and naming an out-of-memory) on failure:
 * the tail of both public encoders. */
static int encode_sides(const bert_tokenizer *t, const side *a, const side *b,
                        const bert_encode_params *params, bert_encoding *enc,
                        bert_error *err)
{
    int rc = encode_impl(t, a, b, params, enc, err);
    if (rc) {
        if (rc == BERT_ENOMEM)
            bert__set_error(err, rc, -1, "out of memory");
        enc->n = 0;
        enc->n_overflow_first = enc->n_overflow_second = 0;
    }
    return rc;
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
    side a = {text, len, NULL, NULL, 0}, b = {pair, pair_len, NULL, NULL, 0};
    return encode_sides(t, &a, &b, params, enc, err);
}

int bert_tokenizer_encode_words(const bert_tokenizer *t, const char *const *words,
                                const size_t *lens, size_t n_words,
                                const char *const *pair_words, const size_t *pair_lens,
                                size_t n_pair_words, const bert_encode_params *params,
                                bert_encoding *enc, bert_error *err)
{
    if (!enc)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_encode_words: enc is NULL");
    enc->n = 0;
    enc->n_overflow_first = enc->n_overflow_second = 0;
    static const char *const none[1] = {""};
    if (!t || (!words && n_words) || (!pair_words && n_pair_words))
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_encode_words: bad arguments");
    side a = {NULL, 0, words ? words : none, lens, n_words};
    side b = {NULL, 0, pair_words ? pair_words : none, pair_lens, n_pair_words};
    return encode_sides(t, &a, &b, params, enc, err);
}
