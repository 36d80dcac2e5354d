/*
 * vocab_trainer.c - learns a WordPiece vocabulary from text with the
 * semantics of Hugging Face tokenizers' WordPieceTrainer (a BPE trainer with
 * continuing_subword_prefix "##"), as BertWordPieceTokenizer.train uses it:
 *
 *  1. Every text goes through BERT's normalizer (clean text, CJK characters
 *     split, optional lowercase + accent stripping) and pre-tokenizer
 *     (whitespace, then every punctuation character is its own word): the
 *     tokenizer's own per-character normalizer (bert__normalize_cp) and
 *     character classes, so a word here is exactly a word the tokenizer
 *     will later look up.
 *  2. Words are counted.  The alphabet is every character of the words,
 *     limited to the limit_alphabet most frequent, sorted by code point.
 *  3. The vocabulary starts with the special tokens, then the alphabet; each
 *     word is split into characters, non-initial ones with "##" (added as
 *     they are met).
 *  4. The most frequent adjacent pair (ties: smaller ids first) is merged,
 *     the merged token being a + b without b's "##", until the vocabulary
 *     has vocab_size tokens or the best pair occurs fewer than
 *     min_frequency times.
 * The steps each live in one function that owns what it allocates:
 * bert_vocab_trainer_add counts (count_text), bert_vocab_trainer_learn runs
 * sorted_words, build_alphabet, then on a bpe_t add_special_tokens,
 * add_alphabet, split_words, count_pairs and merge_until.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "libbert/bert_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"
#include "libbert/internal.h"

/* One code point past the last, for tables indexed by code point. */
#define NCODEPOINTS 0x110000

/* Returns buf grown to room for `need` elements of `size` bytes (capacity
 * doubled from `first` as needed, stored in *cap), or NULL when that fails;
 * then buf and *cap are untouched, so the caller still owns buf (unlike
 * `p = realloc(p, n)`, which loses it). */
static void *grow(void *buf, size_t *cap, size_t need, size_t size,
                  size_t first)
{
    if (need <= *cap)
        return buf;
    size_t nc = *cap ? *cap : first;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / size)
            return NULL;
        nc *= 2;
    }
    void *nb = realloc(buf, nc * size);
    if (nb)
        *cap = nc;
    return nb;
}

/* ---- string -> int hash map ------------------------------------------- */

typedef struct {
    char **keys; /* owned copies, NUL-terminated */
    int32_t *vals;
    size_t cap, n; /* cap is 0 or a power of two */
} smap;

static uint64_t hstr(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int smap_grow(smap *m)
{
    size_t nc = m->cap ? m->cap * 2 : 1024;
    char **nk = calloc(nc, sizeof *nk);
    int32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = hstr(m->keys[i], strlen(m->keys[i])) & (nc - 1);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
    return 0;
}

/* The value slot of key k[0..n): with `insert`, a new key gets the value -1.
 * NULL when the key is absent (without `insert`) or on out of memory. */
static int32_t *smap_get(smap *m, const char *k, size_t n, int insert)
{
    if (insert && (m->n + 1) * 2 > m->cap && smap_grow(m))
        return NULL;
    if (!m->cap)
        return NULL;
    size_t j = hstr(k, n) & (m->cap - 1);
    while (m->keys[j]) {
        if (strlen(m->keys[j]) == n && memcmp(m->keys[j], k, n) == 0)
            return &m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    if (!insert)
        return NULL;
    char *c = malloc(n + 1);
    if (!c)
        return NULL;
    memcpy(c, k, n);
    c[n] = 0;
    m->keys[j] = c;
    m->vals[j] = -1;
    m->n++;
    return &m->vals[j];
}

static void smap_free(smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}


/* ---- step 1: normalize, pre-tokenize and count the words ---------------- */

/* The words of the input and their counts, filled text by text. */
typedef struct {
    int lowercase;
    smap index;           /* word -> its slot in count */
    int64_t *count;
    size_t capcount;
    uint32_t *wcp;        /* the word being read, as code points */
    uint8_t *wccc;        /* their canonical combining classes */
    size_t wlen, wcap;
    size_t wbytes;        /* its length in UTF-8 */
    char *word;           /* its UTF-8, when counted */
    size_t capword;
} counter;

enum { TEXT_OK = 0, TEXT_OOM = -1, TEXT_TOO_LONG = -2 };

static void counter_free(counter *c)
{
    smap_free(&c->index);
    free(c->count);
    free(c->wcp);
    free(c->wccc);
    free(c->word);
    memset(c, 0, sizeof *c);
}

/* Counts the word being read, if any, and starts the next one. */
static int end_word(counter *c)
{
    if (c->wlen == 0)
        return TEXT_OK;
    char *wb = grow(c->word, &c->capword, c->wbytes + 1, 1, 256);
    if (!wb)
        return TEXT_OOM;
    c->word = wb;
    size_t n = 0;
    for (size_t i = 0; i < c->wlen; i++)
        n += (size_t)utf8proc_encode_char((utf8proc_int32_t)c->wcp[i],
                                          (utf8proc_uint8_t *)c->word + n);
    int32_t *slot = smap_get(&c->index, c->word, n, 1);
    if (!slot)
        return TEXT_OOM;
    if (*slot < 0) {
        if (c->index.n > INT32_MAX)
            return TEXT_OOM; /* ids are int32 */
        int64_t *nb = grow(c->count, &c->capcount, c->index.n, sizeof *nb, 4096);
        if (!nb)
            return TEXT_OOM;
        c->count = nb;
        *slot = (int32_t)(c->index.n - 1);
        c->count[*slot] = 0;
    }
    c->count[*slot]++;
    c->wlen = 0;
    c->wbytes = 0;
    return TEXT_OK;
}

/* Appends a code point to the word, combining marks in canonical order
 * (the reordering step of NFD, as the tokenizer does it). */
static int put_cp(counter *c, uint32_t cp, uint8_t ccc)
{
    /* word lengths are int32 further on */
    if (c->wbytes > INT32_MAX - 8)
        return TEXT_TOO_LONG;
    if (c->wlen == c->wcap) {
        size_t cap = c->wcap;
        uint32_t *a = grow(c->wcp, &cap, c->wlen + 1, sizeof *a, 256);
        if (!a)
            return TEXT_OOM;
        c->wcp = a;
        cap = c->wcap;
        uint8_t *b = grow(c->wccc, &cap, c->wlen + 1, 1, 256);
        if (!b)
            return TEXT_OOM;
        c->wccc = b;
        c->wcap = cap;
    }
    size_t k = c->wlen++;
    while (ccc && k > 0 && c->wccc[k - 1] > ccc) {
        c->wcp[k] = c->wcp[k - 1];
        c->wccc[k] = c->wccc[k - 1];
        k--;
    }
    c->wcp[k] = cp;
    c->wccc[k] = ccc;
    c->wbytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    return TEXT_OK;
}

/* One normalized character: whitespace ends the word, punctuation is a
 * word of its own, anything else extends the word. */
static int norm_char(counter *c, uint32_t d, uint8_t ccc, unsigned cls)
{
    int rc;
    if (cls & BT_CC_WS)
        return end_word(c);
    if (cls & BT_CC_PUNCT) {
        if ((rc = end_word(c)) || (rc = put_cp(c, d, 0)))
            return rc;
        return end_word(c);
    }
    return put_cp(c, d, ccc);
}

/* Normalizes and pre-tokenizes s[0..n) (valid UTF-8) and counts its words,
 * code point by code point as the tokenizer's encoder does. */
static int count_text(counter *c, const char *s, size_t n)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s, *end = p + n;
    uint32_t norm[BT_NORM_MAX];
    uint8_t ccc[BT_NORM_MAX];
    int rc = TEXT_OK;
    while (p < end && !rc) {
        utf8proc_int32_t cp;
        p += utf8proc_iterate(p, end - p, &cp); /* validated before */
        uint32_t u = (uint32_t)cp;
        unsigned cls = bert__cp_class(u);
        if (cls & BT_CC_DROP)
            continue;
        if (cls & BT_CC_WS) {
            rc = end_word(c);
            continue;
        }
        /* BERT's CJK characters are words of their own */
        int cjk = (cls & BT_CC_CJK) != 0;
        if (cjk && (rc = end_word(c)))
            break;
        if (!c->lowercase) {
            rc = norm_char(c, u, 0, cls);
        } else {
            int k = bert__normalize_cp(u, 1, 1, norm, ccc);
            for (int j = 0; j < k && !rc; j++)
                rc = norm_char(c, norm[j], ccc[j],
                               norm[j] == u ? cls : bert__cp_class(norm[j]));
        }
        if (!rc && cjk)
            rc = end_word(c);
    }
    if (!rc)
        rc = end_word(c);
    return rc;
}

/* ---- step 2: the words in byte order ----------------------------------- */

typedef struct {
    const char *s; /* borrowed from the counter */
    int64_t count;
} wcount;

static int cmp_wcount(const void *a, const void *b)
{
    return strcmp(((const wcount *)a)->s, ((const wcount *)b)->s);
}

/* The counted words sorted by bytes, so that everything after is
 * deterministic (HF walks its hash map in random order).  NULL on out of
 * memory. */
static wcount *sorted_words(const counter *c, size_t *n)
{
    wcount *w = malloc((c->index.n + 1) * sizeof *w);
    if (!w)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < c->index.cap; i++)
        if (c->index.keys[i])
            w[k++] = (wcount){c->index.keys[i], c->count[c->index.vals[i]]};
    qsort(w, k, sizeof *w, cmp_wcount);
    *n = k;
    return w;
}

/* ---- step 3: the alphabet ----------------------------------------------- */

typedef struct {
    int32_t cp;
    int64_t n;
} cpc;

static int cmp_cpc_freq(const void *a, const void *b)
{
    const cpc *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

static int cmp_cpc_cp(const void *a, const void *b)
{
    const cpc *x = a, *y = b;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

/* The alphabet: every character of the words, or the `limit` most frequent
 * (counting each word count times; ties: smaller code point) when limit > 0,
 * sorted by code point.  Returns it (*n entries) or NULL on out of memory. */
static cpc *build_alphabet(const wcount *w, size_t nw, long limit, size_t *n)
{
    /* a table indexed by code point: 9 MB, untouched pages stay unmapped */
    int64_t *freq = calloc(NCODEPOINTS, sizeof *freq);
    if (!freq)
        return NULL;
    size_t distinct = 0;
    for (size_t i = 0; i < nw; i++) {
        const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)w[i].s;
        utf8proc_int32_t cp;
        utf8proc_ssize_t k;
        while (*p && (k = utf8proc_iterate(p, -1, &cp)) > 0) {
            distinct += freq[cp] == 0;
            freq[cp] += w[i].count;
            p += k;
        }
    }
    cpc *alpha = malloc((distinct + 1) * sizeof *alpha);
    if (!alpha) {
        free(freq);
        return NULL;
    }
    size_t na = 0;
    for (int32_t cp = 0; cp < NCODEPOINTS; cp++)
        if (freq[cp])
            alpha[na++] = (cpc){cp, freq[cp]};
    free(freq);
    if (limit && (size_t)limit < na) {
        qsort(alpha, na, sizeof *alpha, cmp_cpc_freq);
        na = (size_t)limit;
        qsort(alpha, na, sizeof *alpha, cmp_cpc_cp);
    }
    *n = na;
    return alpha;
}

/* ---- BPE training ------------------------------------------------------ */

typedef struct {
    int32_t *sym; /* token ids */
    int32_t len;
    int64_t count;
    int64_t stamp; /* the last merge that looked at this word */
} word_t;

typedef struct {
    int32_t a, b;
    int64_t count;
    int32_t *where; /* words that hold or held the pair (may repeat) */
    size_t nwhere, capwhere;
} pair_t;

/* A heap entry: the pair's count when pushed (stale when it differs). */
typedef struct {
    int64_t count;
    int32_t pid;
    int32_t a, b;
} hent;

typedef struct {
    hent *h;
    size_t n, cap;
} heap_t;

typedef struct {
    /* the vocabulary: id -> token and token -> id */
    char **tok;
    size_t ntok, captok;
    smap ids;
    /* the words as symbol sequences */
    word_t *words;
    size_t nwords;
    /* every adjacent pair seen, and (a, b) -> pair id, open addressing on
     * ((a << 32 | b) + 1), 0 meaning empty */
    pair_t *pairs;
    size_t npairs, cappairs;
    uint64_t *pkeys;
    int32_t *pvals;
    size_t pcap;
    heap_t heap; /* pairs by count, then smaller (a, b) */
    /* scratch space of the merge loop */
    int32_t *touched;
    size_t ntouched, captouched;
    char *merged;
    size_t capmerged;
} bpe_t;

static void bpe_free(bpe_t *b)
{
    for (size_t i = 0; i < b->ntok; i++)
        free(b->tok[i]);
    free(b->tok);
    smap_free(&b->ids);
    for (size_t i = 0; i < b->nwords; i++)
        free(b->words[i].sym);
    free(b->words);
    for (size_t i = 0; i < b->npairs; i++)
        free(b->pairs[i].where);
    free(b->pairs);
    free(b->pkeys);
    free(b->pvals);
    free(b->heap.h);
    free(b->touched);
    free(b->merged);
    memset(b, 0, sizeof *b);
}

/* x is below y in the max-heap: fewer occurrences, or the same number and
 * a larger (a, b), so that ties go to the pair of smaller ids as in HF. */
static int hless(const hent *x, const hent *y)
{
    if (x->count != y->count)
        return x->count < y->count;
    if (x->a != y->a)
        return x->a > y->a;
    return x->b > y->b;
}

static int hpush(heap_t *hp, hent e)
{
    hent *nb = grow(hp->h, &hp->cap, hp->n + 1, sizeof *nb, 4096);
    if (!nb)
        return -1;
    hp->h = nb;
    size_t i = hp->n++;
    hp->h[i] = e;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(&hp->h[p], &hp->h[i]))
            break;
        hent t = hp->h[p];
        hp->h[p] = hp->h[i];
        hp->h[i] = t;
        i = p;
    }
    return 0;
}

static hent hpop(heap_t *hp)
{
    hent top = hp->h[0];
    hp->h[0] = hp->h[--hp->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < hp->n && hless(&hp->h[m], &hp->h[l]))
            m = l;
        if (r < hp->n && hless(&hp->h[m], &hp->h[r]))
            m = r;
        if (m == i)
            break;
        hent t = hp->h[m];
        hp->h[m] = hp->h[i];
        hp->h[i] = t;
        i = m;
    }
    return top;
}

/* The id of token s[0..n), added at the end of the vocabulary when new; -1
 * on out of memory. */
static int32_t vocab_add(bpe_t *b, const char *s, size_t n)
{
    int32_t *slot = smap_get(&b->ids, s, n, 1);
    if (!slot)
        return -1;
    if (*slot >= 0)
        return *slot;
    if (b->ntok >= INT32_MAX)
        return -1;
    char **nb = grow(b->tok, &b->captok, b->ntok + 1, sizeof *nb, 1024);
    if (!nb)
        return -1;
    b->tok = nb;
    char *t = malloc(n + 1);
    if (!t)
        return -1;
    memcpy(t, s, n);
    t[n] = 0;
    b->tok[b->ntok] = t;
    *slot = (int32_t)b->ntok;
    return (int32_t)b->ntok++;
}

static uint64_t hpair(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* Doubles the (a, b) -> pair id table. */
static int pair_table_grow(bpe_t *b)
{
    size_t nc = b->pcap ? b->pcap * 2 : 1 << 16;
    uint64_t *nk = calloc(nc, sizeof *nk);
    int32_t *nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < b->pcap; i++)
        if (b->pkeys[i]) {
            size_t j = hpair(b->pkeys[i]) & (nc - 1);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = b->pkeys[i];
            nv[j] = b->pvals[i];
        }
    free(b->pkeys);
    free(b->pvals);
    b->pkeys = nk;
    b->pvals = nv;
    b->pcap = nc;
    return 0;
}

/* The pair id of (x, y), created (count 0) when absent; -1 on out of
 * memory.  Creating a pair may move b->pairs. */
static int32_t pair_id(bpe_t *b, int32_t x, int32_t y)
{
    if ((b->npairs + 1) * 2 > b->pcap && pair_table_grow(b))
        return -1;
    uint64_t key = (((uint64_t)(uint32_t)x << 32) | (uint32_t)y) + 1;
    size_t j = hpair(key) & (b->pcap - 1);
    while (b->pkeys[j]) {
        if (b->pkeys[j] == key)
            return b->pvals[j];
        j = (j + 1) & (b->pcap - 1);
    }
    if (b->npairs >= INT32_MAX)
        return -1;
    pair_t *np = grow(b->pairs, &b->cappairs, b->npairs + 1, sizeof *np, 1 << 16);
    if (!np)
        return -1;
    b->pairs = np;
    b->pairs[b->npairs] = (pair_t){.a = x, .b = y};
    b->pkeys[j] = key;
    b->pvals[j] = (int32_t)b->npairs;
    return (int32_t)b->npairs++;
}

/* Records that word w holds pair p (once per run of calls for the same
 * word). */
static int pair_where(pair_t *p, int32_t w)
{
    if (p->nwhere && p->where[p->nwhere - 1] == w)
        return 0;
    int32_t *nb = grow(p->where, &p->capwhere, p->nwhere + 1, sizeof *nb, 4);
    if (!nb)
        return -1;
    p->where = nb;
    p->where[p->nwhere++] = w;
    return 0;
}

/* ---- step 4: the initial vocabulary and symbols ------------------------- */

/* The comma-separated special tokens take the first ids (empty items and
 * repeats are skipped). */
static int add_special_tokens(bpe_t *b, const char *list)
{
    const char *s = list;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n && vocab_add(b, s, n) < 0)
            return -1;
        s += n + (e ? 1 : 0);
    }
    return 0;
}

/* The alphabet comes next, in code-point order; *kept becomes a table
 * (by code point) of its characters, for split_words. */
static int add_alphabet(bpe_t *b, const cpc *alpha, size_t n,
                        unsigned char **kept)
{
    *kept = calloc(NCODEPOINTS, 1);
    if (!*kept)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char key[8];
        int kl = (int)utf8proc_encode_char(alpha[i].cp, (utf8proc_uint8_t *)key);
        if (vocab_add(b, key, (size_t)kl) < 0)
            return -1;
        (*kept)[alpha[i].cp] = 1;
    }
    return 0;
}

/* One word as symbols: its characters in the alphabet (others are dropped),
 * the first one kept as is, the following ones as "##c", which join the
 * vocabulary when first met. */
static int split_word(bpe_t *b, word_t *w, const char *s,
                      const unsigned char *kept)
{
    w->sym = malloc((strlen(s) + 1) * sizeof *w->sym);
    if (!w->sym)
        return -1;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    utf8proc_int32_t cp;
    utf8proc_ssize_t n;
    int first = 1;
    while (*p && (n = utf8proc_iterate(p, -1, &cp)) > 0) {
        p += n;
        if (!kept[cp])
            continue;
        char key[12] = {'#', '#'};
        int kl = (int)utf8proc_encode_char(cp, (utf8proc_uint8_t *)key + 2);
        int32_t id = first ? vocab_add(b, key + 2, (size_t)kl)
                           : vocab_add(b, key, (size_t)kl + 2);
        if (id < 0)
            return -1;
        w->sym[w->len++] = id;
        first = 0;
    }
    return 0;
}

static int split_words(bpe_t *b, const wcount *w, size_t nw,
                       const unsigned char *kept)
{
    b->words = calloc(nw ? nw : 1, sizeof *b->words);
    if (!b->words)
        return -1;
    b->nwords = nw;
    for (size_t i = 0; i < nw; i++) {
        b->words[i].count = w[i].count;
        b->words[i].stamp = -1;
        if (split_word(b, &b->words[i], w[i].s, kept))
            return -1;
    }
    return 0;
}

/* Counts every adjacent pair of every word (count times) and queues the
 * pairs. */
static int count_pairs(bpe_t *b)
{
    for (size_t i = 0; i < b->nwords; i++) {
        const word_t *w = &b->words[i];
        for (int32_t j = 0; j + 1 < w->len; j++) {
            int32_t pid = pair_id(b, w->sym[j], w->sym[j + 1]);
            if (pid < 0 || pair_where(&b->pairs[pid], (int32_t)i))
                return -1;
            b->pairs[pid].count += w->count;
        }
    }
    for (size_t i = 0; i < b->npairs; i++) {
        const pair_t *p = &b->pairs[i];
        if (p->count > 0 && hpush(&b->heap, (hent){p->count, (int32_t)i, p->a, p->b}))
            return -1;
    }
    return 0;
}

/* ---- step 5: the merges ------------------------------------------------- */

/* The id of the token that merging (x, y) makes: x + y without y's "##". */
static int32_t merged_token(bpe_t *b, int32_t x, int32_t y)
{
    const char *sa = b->tok[x], *sb = b->tok[y];
    if (strncmp(sb, "##", 2) == 0)
        sb += 2;
    size_t la = strlen(sa), lb = strlen(sb);
    char *nb = grow(b->merged, &b->capmerged, la + lb + 1, 1, 64);
    if (!nb)
        return -1;
    b->merged = nb;
    memcpy(b->merged, sa, la);
    memcpy(b->merged + la, sb, lb);
    return vocab_add(b, b->merged, la + lb);
}

static int has_pair(const word_t *w, int32_t x, int32_t y)
{
    for (int32_t j = 0; j + 1 < w->len; j++)
        if (w->sym[j] == x && w->sym[j + 1] == y)
            return 1;
    return 0;
}

/* Adds `sign` times the word's count to each of its pairs' counts; when
 * adding, records the pairs that hold `nid` (new) as touched and the word
 * as holding them. */
static int recount_word(bpe_t *b, int32_t wi, int sign, int32_t nid)
{
    const word_t *w = &b->words[wi];
    for (int32_t j = 0; j + 1 < w->len; j++) {
        int32_t pid = pair_id(b, w->sym[j], w->sym[j + 1]);
        if (pid < 0)
            return -1;
        b->pairs[pid].count += sign * w->count;
        if (sign > 0 && (w->sym[j] == nid || w->sym[j + 1] == nid)) {
            if (pair_where(&b->pairs[pid], wi))
                return -1;
            int32_t *nt = grow(b->touched, &b->captouched, b->ntouched + 1,
                               sizeof *nt, 256);
            if (!nt)
                return -1;
            b->touched = nt;
            b->touched[b->ntouched++] = pid;
        }
    }
    return 0;
}

/* Replaces every (x, y), left to right, in word wi by nid, keeping the pair
 * counts right: the word's pairs are taken out and put back. */
static int merge_word(bpe_t *b, int32_t wi, int32_t x, int32_t y, int32_t nid)
{
    if (recount_word(b, wi, -1, nid))
        return -1;
    word_t *w = &b->words[wi];
    int32_t o = 0;
    for (int32_t j = 0; j < w->len; j++) {
        if (j + 1 < w->len && w->sym[j] == x && w->sym[j + 1] == y) {
            w->sym[o++] = nid;
            j++;
        } else {
            w->sym[o++] = w->sym[j];
        }
    }
    w->len = o;
    return recount_word(b, wi, +1, nid);
}

/* Merges pair pid into the new token nid in every word that holds it, then
 * queues the pairs made with nid.  `merge` numbers this merge, so that a
 * word listed twice is done once. */
static int merge_pair(bpe_t *b, int32_t pid, int32_t nid, int64_t merge)
{
    int32_t x = b->pairs[pid].a, y = b->pairs[pid].b;
    /* the list is taken over: merging adds to other pairs' lists and may
     * move b->pairs */
    int32_t *where = b->pairs[pid].where;
    size_t nwhere = b->pairs[pid].nwhere;
    b->pairs[pid].where = NULL;
    b->pairs[pid].nwhere = b->pairs[pid].capwhere = 0;
    b->ntouched = 0;
    int rc = 0;
    for (size_t q = 0; q < nwhere && !rc; q++) {
        word_t *w = &b->words[where[q]];
        if (w->stamp == merge)
            continue;
        w->stamp = merge;
        if (has_pair(w, x, y))
            rc = merge_word(b, where[q], x, y, nid);
    }
    free(where);
    for (size_t q = 0; q < b->ntouched && !rc; q++) {
        const pair_t *p = &b->pairs[b->touched[q]];
        if (p->count > 0)
            rc = hpush(&b->heap, (hent){p->count, b->touched[q], p->a, p->b});
    }
    return rc ? -1 : 0;
}

/* Merges the best pair until the vocabulary has vocab_size tokens, the best
 * pair occurs fewer than min_frequency times, or no pair is left. */
static int merge_until(bpe_t *b, const bert_vocab_trainer_params *p)
{
    int64_t merges = 0;
    while (b->ntok < p->vocab_size && b->heap.n > 0) {
        hent e = hpop(&b->heap);
        const pair_t *pr = &b->pairs[e.pid];
        if (e.count != pr->count) { /* stale: queue it again as it is now */
            if (pr->count > 0 && hpush(&b->heap, (hent){pr->count, e.pid, pr->a, pr->b}))
                return -1;
            continue;
        }
        if (pr->count < (int64_t)p->min_frequency || pr->count <= 0)
            break;
        int32_t nid = merged_token(b, pr->a, pr->b);
        if (nid < 0)
            return -1;
        if (merge_pair(b, e.pid, nid, ++merges))
            return -1;
        if (p->progress && b->ntok % 1000 == 0)
            p->progress(b->ntok, p->progress_user);
    }
    return 0;
}

/* ---- the public API ------------------------------------------------------ */

struct bert_vocab_trainer {
    bert_vocab_trainer_params p;
    char *special;  /* owned copy of p.special_tokens */
    counter c;
    bpe_t b;
    int learned;
};

#define DEFAULT_SPECIAL "[PAD],[UNK],[CLS],[SEP],[MASK]"

bert_vocab_trainer_params bert_vocab_trainer_default_params(void)
{
    bert_vocab_trainer_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.vocab_size = 30000;
    p.min_frequency = 2;
    p.limit_alphabet = 1000;
    p.lowercase = 0;
    p.special_tokens = DEFAULT_SPECIAL;
    return p;
}

int bert_vocab_trainer_create(const bert_vocab_trainer_params *params,
                              bert_vocab_trainer **out, bert_error *err)
{
    if (!out)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_vocab_trainer_create: out is NULL");
    *out = NULL;
    bert_vocab_trainer_params p;
    if (BERT__PARAMS(p, params, bert_vocab_trainer_default_params, err))
        return BERT_EINVAL;
    if (!p.special_tokens)
        p.special_tokens = "";
    size_t ns = strlen(p.special_tokens);
    /* special tokens become lines of vocab.txt */
    if (bert_utf8_valid(p.special_tokens, ns) != ns ||
        strpbrk(p.special_tokens, "\n\r"))
        return bert__set_error(err, BERT_EINVAL, -1,
                    "special tokens must be UTF-8 without line breaks");
    if (p.vocab_size < 1 || p.vocab_size > INT32_MAX)
        return bert__set_error(err, BERT_EINVAL, -1, "vocab_size must be in [1, 2^31)");
    bert_vocab_trainer *t = calloc(1, sizeof *t);
    if (!t || !(t->special = malloc(ns + 1))) {
        free(t);
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    }
    memcpy(t->special, p.special_tokens, ns + 1);
    p.special_tokens = t->special;
    t->p = p;
    t->c.lowercase = p.lowercase != 0;
    *out = t;
    return BERT_OK;
}

void bert_vocab_trainer_free(bert_vocab_trainer *t)
{
    if (!t)
        return;
    counter_free(&t->c);
    bpe_free(&t->b);
    free(t->special);
    free(t);
}

int bert_vocab_trainer_add(bert_vocab_trainer *t, const char *text, size_t len,
                           bert_error *err)
{
    if (!t || (!text && len))
        return bert__set_error(err, BERT_EINVAL, -1, "bert_vocab_trainer_add: NULL argument");
    if (t->learned)
        return bert__set_error(err, BERT_EINVAL, -1,
                    "bert_vocab_trainer_add: the vocabulary was already learned");
    /* a text is counted whole or not at all */
    size_t ok = bert_utf8_valid(text, len);
    if (ok != len) {
        return bert__set_error(err, BERT_EUTF8, (long long)ok,
                               "not valid UTF-8");
    }
    int rc = count_text(&t->c, text, len);
    if (rc == TEXT_TOO_LONG) {
        t->c.wlen = t->c.wbytes = 0;
        return bert__set_error(err, BERT_ETOOLONG, -1, "a word of more than 2 GiB");
    }
    if (rc)
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    return BERT_OK;
}

size_t bert_vocab_trainer_n_words(const bert_vocab_trainer *t)
{
    return t ? t->c.index.n : 0;
}

int bert_vocab_trainer_learn(bert_vocab_trainer *t, bert_error *err)
{
    if (!t)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_vocab_trainer_learn: t is NULL");
    if (t->learned)
        return bert__set_error(err, BERT_EINVAL, -1,
                    "bert_vocab_trainer_learn: the vocabulary was already learned");
    t->learned = 1;
    bpe_t *b = &t->b;
    wcount *words = NULL;
    cpc *alpha = NULL;
    unsigned char *kept = NULL;
    size_t nw = 0, nalpha = 0;
    int rc = -1;
    /* steps 2-4; the counted words are freed before the merges, which need
     * only the symbols */
    if ((words = sorted_words(&t->c, &nw)) &&
        (alpha = build_alphabet(words, nw, (long)t->p.limit_alphabet, &nalpha)) &&
        !add_special_tokens(b, t->special) &&
        !add_alphabet(b, alpha, nalpha, &kept) &&
        !split_words(b, words, nw, kept) && !count_pairs(b))
        rc = 0;
    free(kept);
    free(alpha);
    free(words);
    counter_free(&t->c);
    if (!rc)
        rc = merge_until(b, &t->p);
    if (rc) {
        bpe_free(b);
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    }
    return BERT_OK;
}

size_t bert_vocab_trainer_size(const bert_vocab_trainer *t)
{
    return t ? t->b.ntok : 0;
}

const char *bert_vocab_trainer_token(const bert_vocab_trainer *t, size_t id)
{
    return t && id < t->b.ntok ? t->b.tok[id] : NULL;
}
