/*
 * tagger.c - transformers' token-classification pipeline in C.
 *
 * The post-processing of TokenClassificationPipeline, step for step:
 *   softmax per token -> gather_pre_entities (skip special tokens, decide
 *   is_subword, [UNK] takes its surface text) -> aggregate (NONE/SIMPLE: one
 *   entity per token; FIRST/AVERAGE/MAX: aggregate_words) -> group_entities
 *   (B-/I- grouping, except NONE) -> drop ignore_labels.
 * With a stride, the text is cut into overlapping windows exactly as HF
 * tokenizers' overflowing tokens are, each window is post-processed alone,
 * and aggregate_overlapping_entities merges the results.
 *
 * Strings (words and entity names) live in one arena per result; entities
 * refer to it by offset until the public arrays are built at the end, so
 * growing the arena never leaves a dangling pointer.
 */
#include "libbert/bert.h"
#include "libbert/internal.h"
#include "libbert/model.h"
#include "libbert/windows.h"
#include "tokenizer/tokenizer_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- private state ----------------------------------------------------- */

/* A token that survived the special-token filter (HF "pre_entity"). */
typedef struct pre_entity {
    size_t word, word_len;      /* arena */
    const float *scores;        /* [C] probabilities */
    int64_t start, end, bstart, bend;
    int32_t index;
    int is_subword;
} pre_entity;

/* A token-, word- or group-level entity before publication. */
typedef struct ent {
    int label;
    float score;
    int32_t index;
    int64_t start, end, bstart, bend;
    size_t word, word_len;      /* arena */
    size_t name, name_len;      /* arena: label or entity_group */
} ent;

typedef struct tag_priv {
    char *arena;
    size_t alen, acap;
    char *tmp;                  /* decode scratch */
    size_t tlen, tcap;
    char *piece, *piece2;       /* one decoded token */
    size_t piece_cap, piece2_cap;
    float *probs;
    size_t probs_cap;
    float *avg;                 /* [C] AVERAGE scratch */
    size_t avg_cap;
    pre_entity *pre;
    size_t pre_cap;
    int byte_level;             /* the window's tokens are byte-level BPE */
    ent *tok;                   /* token or word entities of a window */
    size_t tok_cap;
    ent *grp;                   /* groups of a window */
    size_t grp_cap;
    ent *wfirst;                /* FIRST words for NONE/SIMPLE */
    size_t wfirst_cap;
    ent *ents;                  /* kept entities, all windows */
    size_t n_ents, ents_cap;
    ent *words;                 /* kept words, all windows */
    size_t n_words, words_cap;
    ent *merged;
    size_t merged_cap;
    bert_entity *pub;
    size_t pub_cap;
    bert_tag_word *pubw;
    size_t pubw_cap;
    /* bert_tag_text scratch */
    bert_encoding *enc;         /* the text's tokens, no special tokens */
    struct bert__windows *win;  /* its windows (windows.h) */
    const char **labels;
    size_t labels_cap;
    /* per token of the laid-out windows, as their ids */
    const char **tokstr;
    size_t tokstr_cap;
    int32_t *wmask;
    int64_t *woff, *wboff;
    size_t wmask_cap, woff_cap, wboff_cap;
} tag_priv;

/* Appends n bytes + NUL to the arena; returns the offset or (size_t)-1. */
static size_t arena_put(tag_priv *P, const char *s, size_t n)
{
    if (bert__grow(&P->arena, &P->acap, P->alen + n + 1, 1))
        return (size_t)-1;
    size_t off = P->alen;
    if (n)
        memcpy(P->arena + off, s, n);
    P->arena[off + n] = '\0';
    P->alen += n + 1;
    return off;
}

static int tmp_put(tag_priv *P, const char *s, size_t n)
{
    if (bert__grow(&P->tmp, &P->tcap, P->tlen + n + 1, 1))
        return -1;
    memcpy(P->tmp + P->tlen, s, n);
    P->tlen += n;
    P->tmp[P->tlen] = '\0';
    return 0;
}

bert_tag_params bert_tag_default_params(void)
{
    static const char *const ignore_o[] = {"O"};
    bert_tag_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.aggregation = BERT_AGG_NONE;
    p.ignore_labels = ignore_o;
    p.n_ignore = 1;
    p.stride = -1;
    p.batch = bert_batch_default_params();
    return p;
}

bert_tag_result *bert_tag_result_create(void)
{
    bert_tag_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->priv_ = calloc(1, sizeof(tag_priv));
    if (!r->priv_) {
        free(r);
        return NULL;
    }
    return r;
}

void bert_tag_result_free(bert_tag_result *r)
{
    if (!r)
        return;
    tag_priv *P = r->priv_;
    if (P) {
        free(P->arena);
        free(P->tmp);
        free(P->piece);
        free(P->piece2);
        free(P->probs);
        free(P->avg);
        free(P->pre);
        free(P->tok);
        free(P->grp);
        free(P->wfirst);
        free(P->ents);
        free(P->words);
        free(P->merged);
        free(P->pub);
        free(P->pubw);
        bert_encoding_free(P->enc);
        free(P->labels);
        bert__windows_free(P->win);
        free(P->tokstr);
        free(P->wmask);
        free(P->woff);
        free(P->wboff);
        free(P);
    }
    free(r);
}

/* ---- the WordPiece decoder (convert_tokens_to_string) ------------------- */

/* Replaces every `from` in buf[0..*len) by `to` (left to right,
 * non-overlapping, as Rust's str::replace), using *scratch. */
static int replace_all(char **buf, size_t *len, size_t *cap, char **scratch,
                       size_t *scap, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), i = 0, o = 0;
    if (*len < fl)
        return 0;
    for (i = 0; i + fl <= *len; i++)
        if (memcmp(*buf + i, from, fl) == 0)
            break;
    if (i + fl > *len)
        return 0;          /* no match: nothing to do */
    i = 0;
    /* worst case: every byte starts a match */
    size_t need = *len / fl * (tl > fl ? tl : fl) + *len + 1;
    if (bert__grow(scratch, scap, need, 1))
        return -1;
    while (i < *len) {
        if (i + fl <= *len && memcmp(*buf + i, from, fl) == 0) {
            memcpy(*scratch + o, to, tl);
            o += tl;
            i += fl;
        } else {
            (*scratch)[o++] = (*buf)[i++];
        }
    }
    char *t = *buf;
    size_t tc = *cap;
    *buf = *scratch;
    *cap = *scap;
    *scratch = t;
    *scap = tc;
    *len = o;
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 with *bad set to the
 * length of its maximal invalid subpart (Unicode's "substitution of
 * maximal subparts", as Rust's from_utf8_lossy). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned char b = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    *bad = 1;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        need = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        if (b == 0xE0)
            lo = 0xA0;
        if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        if (b == 0xF0)
            lo = 0x90;
        if (b == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    size_t k = 1;
    for (; k < need && k < n; k++) {
        unsigned char c = s[k];
        if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF))
            break;
    }
    if (k == need)
        return need;
    *bad = k;
    return 0;
}

/* tokenizers' ByteLevel decoder (convert_tokens_to_string of RoBERTa):
 * each token whose characters are all in the byte map gives those bytes,
 * any other its own UTF-8; the concatenation is read as UTF-8 with U+FFFD
 * for invalid parts (from_utf8_lossy).  No cleanup. */
static int decode_words_bytes(tag_priv *P, const size_t *word,
                              const size_t *wlen, size_t n, size_t stride_el,
                              size_t *off, size_t *len)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += *(const size_t *)((const char *)wlen + i * stride_el);
    /* piece: the raw bytes; tmp: the decoded text (<= 3 bytes per byte) */
    if (bert__grow(&P->piece, &P->piece_cap, total + 1, 1) ||
        bert__grow(&P->tmp, &P->tcap, 3 * total + 1, 1))
        return -1;
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        size_t w = *(const size_t *)((const char *)word + i * stride_el);
        size_t wl = *(const size_t *)((const char *)wlen + i * stride_el);
        const unsigned char *t = (const unsigned char *)P->arena + w;
        size_t k = 0, start = nb;
        while (k < wl) {
            size_t cl;
            int b = bert__bytelevel_byte(bert__utf8_get(t + k, &cl));
            if (b < 0)
                break;
            P->piece[nb++] = (char)b;
            k += cl;
        }
        if (k < wl) { /* not all mapped: the token's own bytes */
            memcpy(P->piece + start, t, wl);
            nb = start + wl;
        }
    }
    P->tlen = 0;
    for (size_t k = 0; k < nb;) {
        size_t bad, m = utf8_seq((const unsigned char *)P->piece + k, nb - k,
                                 &bad);
        if (m) {
            memcpy(P->tmp + P->tlen, P->piece + k, m);
            P->tlen += m;
            k += m;
        } else {
            memcpy(P->tmp + P->tlen, "\xEF\xBF\xBD", 3);
            P->tlen += 3;
            k += bad;
        }
    }
    P->tmp[P->tlen] = '\0';
    size_t o = arena_put(P, P->tmp, P->tlen);
    if (o == (size_t)-1)
        return -1;
    *off = o;
    *len = P->tlen;
    return 0;
}

/* tokenizers' WordPiece decoder with cleanup (decode_chain), per token:
 * tokens after the first lose their leading "##" or gain a leading space,
 * then the cleanup replacements run on that token alone; the pieces are
 * concatenated.  The words are arena strings found through `word` and
 * `wlen` fields spaced `stride_el` bytes apart; the result is appended to
 * the arena. */
static int decode_words(tag_priv *P, const size_t *word, const size_t *wlen,
                        size_t n, size_t stride_el, size_t *off, size_t *len)
{
    static const char *const rep[][2] = {
        {" .", "."},       {" ?", "?"},       {" !", "!"},
        {" ,", ","},       {" ' ", "'"},      {" n't", "n't"},
        {" 'm", "'m"},     {" do not", " don't"},
        {" 's", "'s"},     {" 've", "'ve"},   {" 're", "'re"},
    };
    const size_t nrep = sizeof rep / sizeof rep[0];
    if (P->byte_level)
        return decode_words_bytes(P, word, wlen, n, stride_el, off, len);
    P->tlen = 0;
    if (bert__grow(&P->tmp, &P->tcap, 1, 1))
        return -1;
    P->tmp[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t w = *(const size_t *)((const char *)word + i * stride_el);
        size_t wl = *(const size_t *)((const char *)wlen + i * stride_el);
        size_t plen = 0;
        int space = 0;
        if (i != 0) {
            if (wl >= 2 && memcmp(P->arena + w, "##", 2) == 0) {
                w += 2;
                wl -= 2;
            } else {
                space = 1;
            }
        }
        if (bert__grow(&P->piece, &P->piece_cap, wl + 2, 1))
            return -1;
        if (space)
            P->piece[plen++] = ' ';
        memcpy(P->piece + plen, P->arena + w, wl);
        plen += wl;
        for (size_t r = 0; r < nrep; r++)
            if (replace_all(&P->piece, &plen, &P->piece_cap, &P->piece2,
                            &P->piece2_cap, rep[r][0], rep[r][1]))
                return -1;
        if (tmp_put(P, P->piece, plen))
            return -1;
    }
    size_t o = arena_put(P, P->tmp, P->tlen);
    if (o == (size_t)-1)
        return -1;
    *off = o;
    *len = P->tlen;
    return 0;
}

/* ---- aggregation --------------------------------------------------------- */

static size_t cp_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

int bert__tag_is_subword(const char *tok, const char *text, size_t len,
                         int64_t s, int64_t e, int64_t bs, int byte_level,
                         int is_unk)
{
    if (is_unk) /* the unknown token stands for a whole word */
        return 0;
    if (byte_level)
        /* no continuing_subword_prefix: HF's fallback rule, a sub-word is
         * a token neither preceded by nor starting with a space
         * (sentence[start - 1:start + 1] has no " ") */
        return s > 0 && bs > 0 && text[bs - 1] != ' ' &&
               ((size_t)bs >= len || text[bs] != ' ');
    /* WordPiece has a continuing_subword_prefix: a sub-word is a token
     * whose text is not as long as the span it covers */
    return cp_count(tok, strlen(tok)) != (size_t)(e - s);
}

/* get_tag: ("B", rest) / ("I", rest) / ("I", label). */
static void get_tag(const char *label, int *is_b, const char **tag)
{
    if (label[0] == 'B' && label[1] == '-') {
        *is_b = 1;
        *tag = label + 2;
    } else if (label[0] == 'I' && label[1] == '-') {
        *is_b = 0;
        *tag = label + 2;
    } else {
        *is_b = 0;
        *tag = label;
    }
}

/* Params the pipelines cannot use: ignore_labels NULL with n_ignore > 0. */
static int bad_params(const bert_tag_params *p, bert_error *err)
{
    if (p->n_ignore && !p->ignore_labels)
        return bert__err(err, BERT_EINVAL,
                         "ignore_labels is NULL but n_ignore is %zu",
                         p->n_ignore);
    return BERT_OK;
}

static int is_ignored(const bert_tag_params *p, const char *name)
{
    for (size_t i = 0; i < p->n_ignore; i++)
        if (p->ignore_labels[i] && strcmp(p->ignore_labels[i], name) == 0)
            return 1;
    return 0;
}

/* aggregate_word over pre-entities [a, b). */
static int aggregate_word(tag_priv *P, const bert_tag_tokens *in,
                          bert_aggregation agg, size_t a, size_t b, ent *e)
{
    const pre_entity *pe = P->pre;
    size_t C = in->n_labels;
    size_t idx;
    float score;
    if (decode_words(P, &pe[a].word, &pe[a].word_len, b - a,
                     sizeof(pre_entity), &e->word, &e->word_len))
        return -1;
    if (agg == BERT_AGG_FIRST) {
        idx = bert__argmax(pe[a].scores, C);
        score = pe[a].scores[idx];
    } else if (agg == BERT_AGG_MAX) {
        /* max(entities, key=scores.max()): the first maximum wins */
        size_t best = a;
        float bestv = pe[a].scores[bert__argmax(pe[a].scores, C)];
        for (size_t i = a + 1; i < b; i++) {
            float v = pe[i].scores[bert__argmax(pe[i].scores, C)];
            if (v > bestv) {
                bestv = v;
                best = i;
            }
        }
        idx = bert__argmax(pe[best].scores, C);
        score = pe[best].scores[idx];
    } else {
        /* np.nanmean(stack, axis=0) in float32: the rows are summed in
         * order in float32, then divided by the count */
        float *avg = P->avg;
        for (size_t c = 0; c < C; c++) {
            float acc = 0.0f;
            for (size_t i = a; i < b; i++)
                acc += pe[i].scores[c];
            avg[c] = (float)((double)acc / (double)(b - a));
        }
        idx = bert__argmax(avg, C);
        score = avg[idx];
    }
    e->label = (int)idx;
    e->score = score;
    e->index = -1;
    e->start = pe[a].start;
    e->end = pe[b - 1].end;
    e->bstart = pe[a].bstart;
    e->bend = pe[b - 1].bend;
    e->name = 0;
    e->name_len = 0;
    return 0;
}

/* aggregate_words: groups by is_subword into out[]; returns the count or
 * (size_t)-1. */
static size_t aggregate_words(tag_priv *P, const bert_tag_tokens *in,
                              bert_aggregation agg, size_t npre, ent **out,
                              size_t *cap)
{
    size_t n = 0, a = 0;
    if (npre == 0)
        return 0;
    for (size_t i = 1; i <= npre; i++) {
        if (i < npre && P->pre[i].is_subword)
            continue;
        if (bert__grow(out, cap, n + 1, sizeof(ent)))
            return (size_t)-1;
        if (aggregate_word(P, in, agg, a, i, &(*out)[n]))
            return (size_t)-1;
        n++;
        a = i;
    }
    return n;
}

/* group_sub_entities over e[a, b) into *g. */
static int group_sub(tag_priv *P, const bert_tag_tokens *in, const ent *e,
                     size_t a, size_t b, ent *g)
{
    const char *first = in->labels[e[a].label];
    const char *dash = strchr(first, '-');
    const char *grp = dash ? dash + 1 : first;
    double sum = 0.0;
    for (size_t i = a; i < b; i++)
        sum += e[i].score;
    g->label = e[a].label;
    g->score = (float)(sum / (double)(b - a));
    g->index = -1;
    g->start = e[a].start;
    g->end = e[b - 1].end;
    g->bstart = e[a].bstart;
    g->bend = e[b - 1].bend;
    if (decode_words(P, &e[a].word, &e[a].word_len, b - a, sizeof(ent),
                     &g->word, &g->word_len))
        return -1;
    size_t o = arena_put(P, grp, strlen(grp));
    if (o == (size_t)-1)
        return -1;
    g->name = o;
    g->name_len = strlen(grp);
    return 0;
}

/* group_entities over e[0, n) into P->grp; returns the count or -1. */
static size_t group_entities(tag_priv *P, const bert_tag_tokens *in,
                             const ent *e, size_t n)
{
    size_t ng = 0, a = 0;
    if (n == 0)
        return 0;
    for (size_t i = 1; i <= n; i++) {
        if (i < n) {
            int bi, last_bi;
            const char *tag, *last_tag;
            get_tag(in->labels[e[i].label], &bi, &tag);
            get_tag(in->labels[e[i - 1].label], &last_bi, &last_tag);
            if (strcmp(tag, last_tag) == 0 && !bi)
                continue;
        }
        if (bert__grow(&P->grp, &P->grp_cap, ng + 1, sizeof(ent)))
            return (size_t)-1;
        if (group_sub(P, in, e, a, i, &P->grp[ng]))
            return (size_t)-1;
        ng++;
        a = i;
    }
    return ng;
}

static int keep_entity(tag_priv *P, const ent *e)
{
    if (bert__grow(&P->ents, &P->ents_cap, P->n_ents + 1, sizeof(ent)))
        return -1;
    P->ents[P->n_ents++] = *e;
    return 0;
}

/* Words of later windows are kept only past the last kept word. */
static int keep_words(tag_priv *P, const ent *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (P->n_words && w[i].start < P->words[P->n_words - 1].end)
            continue;
        if (bert__grow(&P->words, &P->words_cap, P->n_words + 1, sizeof(ent)))
            return -1;
        P->words[P->n_words++] = w[i];
    }
    return 0;
}

/* Post-processes one window, appending its kept entities and words. */
static int tag_window(tag_priv *P, const bert_tag_tokens *in,
                      const bert_tag_params *p, bert_error *err)
{
    size_t n = in->n, C = in->n_labels;
    if (n && (!in->ids || !in->tokens || !in->offsets || !in->byte_offsets ||
              !in->special_mask || !in->logits))
        return bert__err(err, BERT_EINVAL, "bert_tag_aggregate: NULL array");
    if (C == 0 || !in->labels)
        return bert__err(err, BERT_EINVAL, "bert_tag_aggregate: no labels");
    for (size_t c = 0; c < C; c++)
        if (!in->labels[c])
            return bert__err(err, BERT_EINVAL,
                             "bert_tag_aggregate: label %zu is NULL", c);
    if ((unsigned)p->aggregation > BERT_AGG_MAX)
        return bert__err(err, BERT_EINVAL,
                         "bert_tag_aggregate: unknown aggregation %d",
                         (int)p->aggregation);
    if (n && !in->text && in->len)
        return bert__err(err, BERT_EINVAL, "bert_tag_aggregate: NULL text");

    /* softmax as numpy: exp(x - max) / sum, in float32 */
    if (bert__grow(&P->probs, &P->probs_cap, n * C + 1, sizeof(float)) ||
        bert__grow(&P->avg, &P->avg_cap, C, sizeof(float)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t t = 0; t < n; t++)
        bert__softmax_scores(P->probs + t * C, in->logits + t * C, C, 1);

    P->byte_level = in->byte_level != 0;

    /* gather_pre_entities */
    size_t npre = 0;
    if (bert__grow(&P->pre, &P->pre_cap, n + 1, sizeof(pre_entity)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t t = 0; t < n; t++) {
        if (in->special_mask[t])
            continue;
        int64_t s = in->offsets[2 * t], e = in->offsets[2 * t + 1];
        int64_t bs = in->byte_offsets[2 * t], be = in->byte_offsets[2 * t + 1];
        if (s < 0 || e < s || bs < 0 || be < bs || (uint64_t)be > in->len)
            return bert__err(err, BERT_EINVAL,
                             "bert_tag_aggregate: token %zu has offsets "
                             "[%lld,%lld) bytes [%lld,%lld) outside the text",
                             t, (long long)s, (long long)e, (long long)bs,
                             (long long)be);
        const char *tok = in->tokens[t] ? in->tokens[t] : "";
        size_t toklen = strlen(tok);
        const char *ref = in->text + bs;
        size_t reflen = (size_t)(be - bs);
        pre_entity *pe = &P->pre[npre++];
        int unk = in->ids[t] == in->unk_id;
        pe->is_subword = bert__tag_is_subword(tok, in->text, in->len, s, e,
                                              bs, in->byte_level, unk);
        size_t o;
        if (unk) {
            o = arena_put(P, ref, reflen);
            pe->word_len = reflen;
        } else {
            o = arena_put(P, tok, toklen);
            pe->word_len = toklen;
        }
        if (o == (size_t)-1)
            return bert__err(err, BERT_ENOMEM, "out of memory");
        pe->word = o;
        pe->scores = P->probs + t * C;
        pe->start = s;
        pe->end = e;
        pe->bstart = bs;
        pe->bend = be;
        pe->index = (int32_t)t;
    }

    /* aggregate */
    size_t ntok;
    bert_aggregation agg = p->aggregation;
    if (agg == BERT_AGG_NONE || agg == BERT_AGG_SIMPLE) {
        if (bert__grow(&P->tok, &P->tok_cap, npre + 1, sizeof(ent)))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        for (size_t i = 0; i < npre; i++) {
            const pre_entity *pe = &P->pre[i];
            ent *e = &P->tok[i];
            size_t idx = bert__argmax(pe->scores, C);
            e->label = (int)idx;
            e->score = pe->scores[idx];
            e->index = pe->index;
            e->start = pe->start;
            e->end = pe->end;
            e->bstart = pe->bstart;
            e->bend = pe->bend;
            e->word = pe->word;
            e->word_len = pe->word_len;
            e->name = arena_put(P, in->labels[idx], strlen(in->labels[idx]));
            e->name_len = strlen(in->labels[idx]);
            if (e->name == (size_t)-1)
                return bert__err(err, BERT_ENOMEM, "out of memory");
        }
        ntok = npre;
        /* words for CoNLL output: FIRST */
        size_t nw = aggregate_words(P, in, BERT_AGG_FIRST, npre, &P->wfirst,
                                    &P->wfirst_cap);
        if (nw == (size_t)-1 || keep_words(P, P->wfirst, nw))
            return bert__err(err, BERT_ENOMEM, "out of memory");
    } else {
        ntok = aggregate_words(P, in, agg, npre, &P->tok, &P->tok_cap);
        if (ntok == (size_t)-1 || keep_words(P, P->tok, ntok))
            return bert__err(err, BERT_ENOMEM, "out of memory");
    }

    if (agg == BERT_AGG_NONE) {
        for (size_t i = 0; i < ntok; i++)
            if (!is_ignored(p, in->labels[P->tok[i].label]) &&
                keep_entity(P, &P->tok[i]))
                return bert__err(err, BERT_ENOMEM, "out of memory");
        return BERT_OK;
    }
    size_t ng = group_entities(P, in, P->tok, ntok);
    if (ng == (size_t)-1)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t i = 0; i < ng; i++)
        if (!is_ignored(p, P->arena + P->grp[i].name) &&
            keep_entity(P, &P->grp[i]))
            return bert__err(err, BERT_ENOMEM, "out of memory");
    return BERT_OK;
}

static void reset(bert_tag_result *r)
{
    tag_priv *P = r->priv_;
    P->alen = 0;
    P->n_ents = 0;
    P->n_words = 0;
    r->n = 0;
    r->entities = NULL;
    r->n_words = 0;
    r->words = NULL;
    r->n_windows = 0;
}

/* aggregate_overlapping_entities: a stable sort by start, then for entities
 * starting inside the previous one the longer (then higher-scoring) wins. */
static int merge_overlapping(tag_priv *P)
{
    size_t n = P->n_ents;
    if (n == 0)
        return 0;
    /* insertion sort: stable, and the lists are nearly sorted already */
    for (size_t i = 1; i < n; i++) {
        ent x = P->ents[i];
        size_t j = i;
        while (j > 0 && P->ents[j - 1].start > x.start) {
            P->ents[j] = P->ents[j - 1];
            j--;
        }
        P->ents[j] = x;
    }
    if (bert__grow(&P->merged, &P->merged_cap, n + 1, sizeof(ent)))
        return -1;
    size_t m = 0;
    ent prev = P->ents[0];
    for (size_t i = 0; i < n; i++) {
        const ent *e = &P->ents[i];
        if (prev.start <= e->start && e->start < prev.end) {
            int64_t cl = e->end - e->start, pl = prev.end - prev.start;
            if (cl > pl || (cl == pl && e->score > prev.score))
                prev = *e;
        } else {
            P->merged[m++] = prev;
            prev = *e;
        }
    }
    P->merged[m++] = prev;
    memcpy(P->ents, P->merged, m * sizeof(ent));
    P->n_ents = m;
    return 0;
}

/* Builds the public arrays (pointers into the arena, now stable). */
static int publish(bert_tag_result *r, bert_error *err)
{
    tag_priv *P = r->priv_;
    if (bert__grow(&P->pub, &P->pub_cap, P->n_ents + 1,
                   sizeof(bert_entity)) ||
        bert__grow(&P->pubw, &P->pubw_cap, P->n_words + 1,
                   sizeof(bert_tag_word)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t i = 0; i < P->n_ents; i++) {
        const ent *e = &P->ents[i];
        bert_entity *o = &P->pub[i];
        o->entity = P->arena + e->name;
        o->word = P->arena + e->word;
        o->score = e->score;
        o->label = e->label;
        o->index = e->index;
        o->start = e->start;
        o->end = e->end;
        o->byte_start = e->bstart;
        o->byte_end = e->bend;
    }
    for (size_t i = 0; i < P->n_words; i++) {
        const ent *e = &P->words[i];
        bert_tag_word *o = &P->pubw[i];
        o->label = e->label;
        o->score = e->score;
        o->start = e->start;
        o->end = e->end;
        o->byte_start = e->bstart;
        o->byte_end = e->bend;
    }
    r->n = P->n_ents;
    r->entities = P->pub;
    r->n_words = P->n_words;
    r->words = P->pubw;
    return BERT_OK;
}

int bert_tag_aggregate(const bert_tag_tokens *in, const bert_tag_params *params,
                       bert_tag_result *out, bert_error *err)
{
    bert_tag_params def;
    if (!out || !out->priv_)
        return bert__err(err, BERT_EINVAL, "bert_tag_aggregate: NULL result");
    reset(out);
    if (!in)
        return bert__err(err, BERT_EINVAL, "bert_tag_aggregate: NULL input");
    if (BERT__PARAMS(def, params, bert_tag_default_params, err))
        return BERT_EINVAL;
    const bert_tag_params *p = &def;
    int rc = bad_params(p, err);
    if (rc)
        return rc;
    rc = tag_window(out->priv_, in, p, err);
    if (rc)
        return rc;
    out->n_windows = 1;
    return publish(out, err);
}

/* ---- running the model --------------------------------------------------- */

/* What running m with params p needs, checked once per call: a
 * token-classification model with its tokenizer and labels, and a stride
 * the windows can take.  BERT_OK or BERT_EINVAL with err filled. */
static int tag_check(const bert_model *m, const bert_tag_params *p,
                     bert_error *err)
{
    const bert_config *cfg = bert_model_config(m);
    int rc = bert__model_task(m, BERT_TASK_TOKEN, err);
    if (rc)
        return rc;
    if (!bert_model_tokenizer(m))
        return bert__err(err, BERT_EINVAL, "the model has no tokenizer");
    size_t C = cfg->num_labels, maxlen = bert_model_max_length(m);
    if (C == 0 || maxlen < 3)
        return bert__err(err, BERT_EINVAL, "the model has %zu labels and a "
                         "maximum length of %zu", C, maxlen);
    if (p->stride >= 0 && p->aggregation == BERT_AGG_NONE)
        return bert__err(err, BERT_EINVAL, "a stride needs an aggregation "
                         "other than none (as in transformers)");
    if (p->stride >= 0 && (size_t)p->stride >= maxlen - 2)
        return bert__err(err, BERT_EINVAL, "stride %ld must be less than "
                         "the maximum length minus the 2 special tokens "
                         "(%zu)", p->stride, maxlen - 2);
    return bad_params(p, err);
}

/* Tokenizes text (without special tokens; truncated unless strided) into
 * P->enc and plans its windows (windows.h: as tokenizers' overflowing
 * encodings, step W - stride) in P->win, for a call tag_check passed. */
static int tag_prepare(const bert_model *m, const char *text, size_t len,
                       const bert_tag_params *p, bert_tag_result *out,
                       bert_error *err)
{
    tag_priv *P = out->priv_;
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    size_t C = bert_model_config(m)->num_labels;
    size_t maxlen = bert_model_max_length(m);
    if (bert__grow(&P->labels, &P->labels_cap, C, sizeof(char *)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t c = 0; c < C; c++) {
        P->labels[c] = bert_model_label(m, (int)c);
        if (!P->labels[c])
            P->labels[c] = "";
    }
    if ((!P->enc && !(P->enc = bert_encoding_create())) ||
        (!P->win && !(P->win = bert__windows_create())))
        return bert__err(err, BERT_ENOMEM, "out of memory");

    /* tokens of the text without special tokens; truncated unless strided */
    bert_encode_params ep = bert_encode_default_params();
    ep.add_special_tokens = 0;
    ep.max_length = p->stride >= 0 ? 0 : maxlen - 2;
    int rc = bert_tokenizer_encode(tok, text ? text : "", len, NULL, 0, &ep,
                                   P->enc, err);
    if (rc)
        return rc;
    int32_t cls = bert_tokenizer_special(tok, BERT_TOKEN_CLS);
    int32_t sep = bert_tokenizer_special(tok, BERT_TOKEN_SEP);
    if (cls < 0 || sep < 0)
        return bert__err(err, BERT_EINVAL,
                         "the vocabulary lacks [CLS] or [SEP]");
    bert__windows_plan(P->win, P->enc->ids, P->enc->n, cls, sep, maxlen,
                       p->stride >= 0 ? (size_t)p->stride : 0);
    return BERT_OK;
}

/* The per-token arrays of windows [g0, g1), laid out by the engine: special
 * mask, offsets and token strings, back to back as the windows' ids. */
static int tag_fill(const bert_model *m, tag_priv *P, size_t g0, size_t g1,
                    bert_error *err)
{
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    const struct bert__windows *w = P->win;
    const bert_encoding *E = P->enc;
    size_t ntok = 0;
    for (size_t i = 0; i < g1 - g0; i++)
        ntok += w->in[i].n;
    if (bert__grow(&P->wmask, &P->wmask_cap, ntok, sizeof(int32_t)) ||
        bert__grow(&P->woff, &P->woff_cap, 2 * ntok, sizeof(int64_t)) ||
        bert__grow(&P->wboff, &P->wboff_cap, 2 * ntok, sizeof(int64_t)) ||
        bert__grow(&P->tokstr, &P->tokstr_cap, ntok, sizeof(char *)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = g0; i < g1; i++) {
        size_t a, b;
        bert__windows_span(w, i, &a, &b);
        const int32_t *ids = w->in[i - g0].ids;
        for (size_t j = 0; j < b - a + 2; j++, k++) {
            int special = j == 0 || j == b - a + 1;
            size_t src = a + j - 1;
            P->wmask[k] = special;
            for (int h = 0; h < 2; h++) {
                P->woff[2 * k + h] = special ? 0 : E->offsets[2 * src + h];
                P->wboff[2 * k + h] =
                    special ? 0 : E->byte_offsets[2 * src + h];
            }
            const char *ts = bert_tokenizer_token(tok, ids[j]);
            P->tokstr[k] = ts ? ts : "";
        }
    }
    return BERT_OK;
}

/* Post-processes windows [g0, g1), laid out by the engine and tag_fill,
 * their token logits in `logits`. */
static int tag_post(const bert_model *m, tag_priv *P, const char *text,
                    size_t len, const bert_tag_params *p, size_t g0,
                    size_t g1, const float *logits, bert_error *err)
{
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    size_t C = bert_model_config(m)->num_labels, k = 0;
    for (size_t i = g0; i < g1; i++) {
        bert_tag_tokens tt;
        tt.text = text ? text : "";
        tt.len = len;
        tt.n = P->win->in[i - g0].n;
        tt.ids = P->win->in[i - g0].ids;
        tt.tokens = P->tokstr + k;
        tt.offsets = P->woff + 2 * k;
        tt.byte_offsets = P->wboff + 2 * k;
        tt.special_mask = P->wmask + k;
        tt.logits = logits + k * C;
        tt.n_labels = C;
        tt.labels = P->labels;
        tt.unk_id = bert_tokenizer_special(tok, BERT_TOKEN_UNK);
        tt.byte_level = bert_tokenizer_get_kind(tok) == BERT_TOKENIZER_BPE;
        int rc = tag_window(P, &tt, p, err);
        if (rc)
            return rc;
        k += tt.n;
    }
    return BERT_OK;
}

/* Merges the windows' entities and publishes them into out. */
static int tag_finish(bert_tag_result *out, bert_error *err)
{
    tag_priv *P = out->priv_;
    size_t nwin = P->win->count;
    if (nwin > 1 && merge_overlapping(P))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    out->n_windows = nwin;
    return publish(out, err);
}

/* bert_tag_text's call, for its bert__windows_fn. */
typedef struct tag_call {
    const bert_model *m;
    tag_priv *P;
    const char *text;
    size_t len;
    const bert_tag_params *p;
} tag_call;

/* bert__windows_fn of bert_tag_text: post-processes each run's windows. */
static int tag_run_post(void *data, const struct bert__windows *w, size_t g0,
                        size_t g1, const float *logits, bert_error *err)
{
    const tag_call *c = data;
    (void)w;
    int rc = tag_fill(c->m, c->P, g0, g1, err);
    return rc ? rc : tag_post(c->m, c->P, c->text, c->len, c->p, g0, g1,
                              logits, err);
}

int bert_tag_text(bert_session *s, const char *text, size_t len,
                  const bert_tag_params *params, bert_tag_result *out,
                  bert_error *err)
{
    bert_tag_params def;
    const bert_tag_params *p = &def;
    if (!out || !out->priv_)
        return bert__err(err, BERT_EINVAL, "bert_tag_text: NULL result");
    reset(out);
    if (BERT__PARAMS(def, params, bert_tag_default_params, err))
        return BERT_EINVAL;
    if (!s || (!text && len))
        return bert__err(err, BERT_EINVAL, "bert_tag_text: NULL argument");
    const bert_model *m = s->m;
    tag_priv *P = out->priv_;
    tag_call call = {m, P, text, len, p};
    int rc = tag_check(m, p, err);
    if (rc == BERT_OK)
        rc = tag_prepare(m, text, len, p, out, err);
    /* windows run 8 at a time (bounded memory), each run post-processed */
    if (rc == BERT_OK)
        rc = bert__windows_run(s, P->win, 8, 0, tag_run_post, &call, err);
    if (rc == BERT_OK)
        rc = tag_finish(out, err);
    if (rc)
        reset(out);
    return rc;
}

/* bert_tag_batch's per-text failure of a model run. */
static void tag_fail(void *data, const bert__seq *q, const bert_error *e)
{
    bert_error *te = (bert_error *)data + q->item;
    if (te->status == BERT_OK) /* the first failed window tells */
        *te = *e;
}

int bert_tag_batch(bert_session *s, const char *const *texts,
                   const size_t *lens, size_t n,
                   const bert_tag_params *params,
                   bert_tag_result *const *results, bert_error *errors,
                   bert_error *err)
{
    bert_tag_params def;
    const bert_tag_params *p = &def;
    if (!s)
        return bert__err(err, BERT_EINVAL, "session is NULL");
    if (BERT__PARAMS(def, params, bert_tag_default_params, err) ||
        bert__params_nested(p->batch.size, sizeof p->batch,
                            "bert_tag_params.batch", err))
        return BERT_EINVAL;
    const bert_model *m = s->m;
    if (n == 0)
        return BERT_OK;
    if (!texts || !results || !errors)
        return bert__err(err, BERT_EINVAL, "%s is NULL",
                         !texts ? "texts" : !results ? "results" : "errors");
    if (p->batch.batch_size < 1)
        return bert__err(err, BERT_EINVAL, "batch_size is 0");
    int rc = tag_check(m, p, err);
    if (rc)
        return rc;
    size_t C = bert_model_config(m)->num_labels;
    for (size_t i = 0; i < n; i++)
        if (!results[i] || !results[i]->priv_)
            return bert__err(err, BERT_EINVAL, "result %zu is NULL", i);
    struct bert__batch *b = bert__batch_begin(s);
    size_t *first = malloc(n * sizeof *first);
    if (!b || !first) {
        free(first);
        return bert__err(err, BERT_ENOMEM, "out of memory");
    }
    /* every window of every text, laid out in its result's engine */
    for (size_t i = 0; i < n && rc == BERT_OK; i++) {
        bert_error *e = &errors[i];
        tag_priv *P = results[i]->priv_;
        memset(e, 0, sizeof *e);
        e->byte_offset = -1;
        reset(results[i]);
        first[i] = b->nseq;
        size_t len = lens ? lens[i] : texts[i] ? strlen(texts[i]) : 0;
        int r1 = texts[i] ? tag_prepare(m, texts[i], len, p, results[i], e)
                          : bert__err(e, BERT_EINVAL, "text %zu is NULL", i);
        if (r1 == BERT_OK && (r1 = bert__windows_fill(P->win, 0,
                                                      P->win->count)))
            bert__err(e, r1, "out of memory");
        if (r1 == BERT_OK)
            r1 = tag_fill(m, P, 0, P->win->count, e);
        if (r1 != BERT_OK) {
            e->status = r1;
            continue;
        }
        if (bert__windows_add(P->win, b, i))
            rc = bert__err(err, BERT_ENOMEM, "out of memory");
        if (rc == BERT_OK && p->batch.progress &&
            p->batch.progress(0, 0, p->batch.progress_data))
            rc = bert__err(err, BERT_ECANCELED, "canceled after tokenizing "
                           "%zu of %zu texts", i + 1, n);
    }
    if (rc == BERT_OK)
        rc = bert__batch_run(s, b, &p->batch, 1, C, err, tag_fail, errors);
    for (size_t i = 0; i < n && rc == BERT_OK; i++) {
        bert_error *e = &errors[i];
        tag_priv *P = results[i]->priv_;
        if (e->status != BERT_OK)
            continue;
        /* the windows' rows follow each other in b->logits, in window
         * order */
        size_t len = lens ? lens[i] : strlen(texts[i]);
        int r1 = tag_post(m, P, texts[i], len, p, 0, P->win->count,
                          b->logits + b->seq[first[i]].row * C, e);
        if (r1 == BERT_OK)
            r1 = tag_finish(results[i], e);
        if (r1 != BERT_OK) {
            e->status = r1;
            reset(results[i]);
        }
    }
    for (size_t i = 0; i < n; i++)
        if (rc != BERT_OK || errors[i].status != BERT_OK)
            reset(results[i]);
    free(first);
    return rc;
}
