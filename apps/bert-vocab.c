/*
 * bert-vocab - learn a WordPiece vocabulary from text files, with the
 * semantics of Hugging Face tokenizers' WordPieceTrainer (a BPE trainer with
 * continuing_subword_prefix "##"), as BertWordPieceTokenizer.train uses it:
 *
 *  1. Every line goes through BERT's normalizer (clean text, CJK characters
 *     split, optional lowercase + accent stripping) and pre-tokenizer
 *     (whitespace, then every punctuation character is its own word).
 *  2. Words are counted.  The alphabet is every character of the words,
 *     limited to the --limit-alphabet most frequent (default 1000, as
 *     BertWordPieceTokenizer.train), sorted by code point.
 *  3. The vocabulary starts with the special tokens, then the alphabet; each
 *     word is split into characters, non-initial ones with "##" (added as
 *     they are met).
 *  4. The most frequent adjacent pair (ties: smaller ids first) is merged,
 *     the merged token being a + b without b's "##", until the vocabulary
 *     has --vocab-size tokens or the best pair occurs fewer than
 *     --min-frequency times.
 * Writes OUT/vocab.txt (one token per line, id order) and
 * OUT/tokenizer_config.json.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "apps/common.h"
#include "libbert/bert_tokenizer.h"

/* ---- string -> int hash map ------------------------------------------- */

typedef struct {
    char **keys;
    int32_t *vals;
    size_t cap, n;
} smap;

static uint64_t hstr(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
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

/* Returns the slot for key (inserting with value -1 when absent); NULL on
 * OOM. */
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

/* ---- BERT normalizer + pre-tokenizer --------------------------------- */

static int is_cjk(int32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int is_punct(int32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
        (c >= 123 && c <= 126))
        return 1;
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

static int is_ws(int32_t c)
{
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        return 1;
    return utf8proc_category(c) == UTF8PROC_CATEGORY_ZS;
}

static int is_control(int32_t c)
{
    if (c == '\t' || c == '\n' || c == '\r')
        return 0;
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_CO;
}

typedef struct {
    int lowercase;
    /* word counting */
    smap words;
    int64_t *counts;
    size_t ncounts;
    char *wbuf;
    size_t wlen, wcap;
} ctx_t;

static int add_word(ctx_t *c)
{
    if (c->wlen == 0)
        return 0;
    int32_t *slot = smap_get(&c->words, c->wbuf, c->wlen, 1);
    if (!slot)
        return -1;
    if (*slot < 0) {
        if (c->words.n > c->ncounts) {
            size_t nc = c->ncounts ? c->ncounts * 2 : 4096;
            int64_t *nb = realloc(c->counts, nc * sizeof *nb);
            if (!nb)
                return -1;
            c->counts = nb;
            c->ncounts = nc;
        }
        *slot = (int32_t)(c->words.n - 1);
        c->counts[*slot] = 0;
    }
    c->counts[*slot]++;
    c->wlen = 0;
    return 0;
}

static int put_cp(ctx_t *c, int32_t cp)
{
    if (c->wlen + 8 > c->wcap) {
        size_t nc = c->wcap ? c->wcap * 2 : 256;
        char *nb = realloc(c->wbuf, nc);
        if (!nb)
            return -1;
        c->wbuf = nb;
        c->wcap = nc;
    }
    c->wlen += (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)c->wbuf + c->wlen);
    return 0;
}

static int process_line(ctx_t *c, const char *s, size_t n)
{
    utf8proc_int32_t *cps = NULL;
    utf8proc_ssize_t len, want = (utf8proc_ssize_t)n + 1;
    int opt = c->lowercase ? UTF8PROC_DECOMPOSE : 0;
    for (;;) {
        utf8proc_int32_t *nb = realloc(cps, (size_t)want * sizeof *cps);
        if (!nb) {
            free(cps);
            return -1;
        }
        cps = nb;
        len = utf8proc_decompose((const utf8proc_uint8_t *)s,
                                 (utf8proc_ssize_t)n, cps, want, opt);
        if (len <= want)
            break;
        want = len;
    }
    if (len < 0) {
        free(cps);
        return 0;
    }
    int rc = 0;
    for (utf8proc_ssize_t i = 0; i < len && !rc; i++) {
        int32_t cp = cps[i];
        if (cp == 0 || cp == 0xFFFD || is_control(cp))
            continue;
        if (c->lowercase) {
            if (utf8proc_category(cp) == UTF8PROC_CATEGORY_MN)
                continue;
            cp = utf8proc_tolower(cp);
        }
        if (is_ws(cp)) {
            rc = add_word(c);
        } else if (is_punct(cp) || is_cjk(cp)) {
            rc = add_word(c);
            if (!rc)
                rc = put_cp(c, cp);
            if (!rc)
                rc = add_word(c);
        } else {
            rc = put_cp(c, cp);
        }
    }
    if (!rc)
        rc = add_word(c);
    free(cps);
    return rc;
}

/* ---- BPE training ------------------------------------------------------ */

typedef struct {
    int32_t *sym;
    int32_t len;
    int64_t count;
    int64_t stamp;
} word_t;

typedef struct {
    int32_t a, b;
    int64_t count;
    int32_t *where;
    size_t nwhere, capwhere;
} pair_t;

typedef struct {
    int64_t count;
    int32_t pid;
    int32_t a, b;
} hent;

static int hless(const hent *x, const hent *y) /* x below y in a max-heap */
{
    if (x->count != y->count)
        return x->count < y->count;
    if (x->a != y->a)
        return x->a > y->a;
    return x->b > y->b;
}

typedef struct {
    hent *h;
    size_t n, cap;
} heap_t;

static int hpush(heap_t *hp, hent e)
{
    if (hp->n == hp->cap) {
        size_t nc = hp->cap ? hp->cap * 2 : 4096;
        hent *nb = realloc(hp->h, nc * sizeof *nb);
        if (!nb)
            return -1;
        hp->h = nb;
        hp->cap = nc;
    }
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

typedef struct {
    /* vocab */
    char **tok;
    size_t ntok, captok;
    smap vmap;
    /* pairs */
    pair_t *pairs;
    size_t npairs, cappairs;
    uint64_t *pkeys; /* open addressing: (a<<32|b)+1, 0 empty */
    int32_t *pvals;
    size_t pcap;
} bpe_t;

static int32_t vocab_add(bpe_t *b, const char *s, size_t n)
{
    int32_t *slot = smap_get(&b->vmap, s, n, 1);
    if (!slot)
        return -1;
    if (*slot >= 0)
        return *slot;
    if (b->ntok == b->captok) {
        size_t nc = b->captok ? b->captok * 2 : 1024;
        char **nb = realloc(b->tok, nc * sizeof *nb);
        if (!nb)
            return -1;
        b->tok = nb;
        b->captok = nc;
    }
    b->tok[b->ntok] = malloc(n + 1);
    if (!b->tok[b->ntok])
        return -1;
    memcpy(b->tok[b->ntok], s, n);
    b->tok[b->ntok][n] = 0;
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

/* Pair id of (a, b), created when absent; -1 on OOM. */
static int32_t pair_id(bpe_t *b, int32_t x, int32_t y)
{
    if ((b->npairs + 1) * 2 > b->pcap) {
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
    }
    uint64_t key = (((uint64_t)(uint32_t)x << 32) | (uint32_t)y) + 1;
    size_t j = hpair(key) & (b->pcap - 1);
    while (b->pkeys[j]) {
        if (b->pkeys[j] == key)
            return b->pvals[j];
        j = (j + 1) & (b->pcap - 1);
    }
    if (b->npairs == b->cappairs) {
        size_t nc = b->cappairs ? b->cappairs * 2 : 1 << 16;
        pair_t *np = realloc(b->pairs, nc * sizeof *np);
        if (!np)
            return -1;
        b->pairs = np;
        b->cappairs = nc;
    }
    pair_t *p = &b->pairs[b->npairs];
    memset(p, 0, sizeof *p);
    p->a = x;
    p->b = y;
    b->pkeys[j] = key;
    b->pvals[j] = (int32_t)b->npairs;
    return (int32_t)b->npairs++;
}

static int pair_where(pair_t *p, int32_t w)
{
    if (p->nwhere && p->where[p->nwhere - 1] == w)
        return 0;
    if (p->nwhere == p->capwhere) {
        size_t nc = p->capwhere ? p->capwhere * 2 : 4;
        int32_t *nb = realloc(p->where, nc * sizeof *nb);
        if (!nb)
            return -1;
        p->where = nb;
        p->capwhere = nc;
    }
    p->where[p->nwhere++] = w;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

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

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: bert-vocab [options] --out DIR FILE...\n"
            "Learns a WordPiece vocabulary (Hugging Face WordPieceTrainer "
            "semantics) from text files\n(one text per line) and writes "
            "DIR/vocab.txt and DIR/tokenizer_config.json.\n\n"
            "  --out DIR             output directory (created)\n"
            "  --vocab-size N        target vocabulary size (default 30000)\n"
            "  --min-frequency N     least count of a merged pair (default 2)\n"
            "  --limit-alphabet N    keep the N most frequent characters "
            "(default 1000; 0 = all)\n"
            "  --lowercase           lower-case and strip accents (uncased "
            "model)\n"
            "  --special TOKENS      comma-separated special tokens, first ids\n"
            "                        (default [PAD],[UNK],[CLS],[SEP],[MASK])\n"
            "  --model-max-length N  for tokenizer_config.json (default 512)\n"
            "  --max-lines N         read at most N lines per file (0 = all)\n"
            "  -q, --quiet           no progress on stderr\n"
            "  --help, --version\n\n"
            "Exit status: 0 success, 1 usage error, 2 bad input.\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'},
        {"vocab-size", required_argument, 0, 'v'},
        {"min-frequency", required_argument, 0, 'm'},
        {"limit-alphabet", required_argument, 0, 'a'},
        {"lowercase", no_argument, 0, 'l'},
        {"special", required_argument, 0, 's'},
        {"model-max-length", required_argument, 0, 'M'},
        {"max-lines", required_argument, 0, 'n'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    const char *out = NULL, *special = "[PAD],[UNK],[CLS],[SEP],[MASK]";
    long vsize = 30000, minf = 2, limit = 1000, maxlen = 512, maxlines = 0;
    int lower = 0, quiet = 0, o;
    while ((o = getopt_long(argc, argv, "qhV", opts, NULL)) != -1) {
        char *end = NULL;
        switch (o) {
        case 'o': out = optarg; break;
        case 'v': vsize = strtol(optarg, &end, 10); break;
        case 'm': minf = strtol(optarg, &end, 10); break;
        case 'a': limit = strtol(optarg, &end, 10); break;
        case 'M': maxlen = strtol(optarg, &end, 10); break;
        case 'n': maxlines = strtol(optarg, &end, 10); break;
        case 'l': lower = 1; break;
        case 's': special = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("bert-vocab (libbert) %s\n", BERT_VERSION_STRING); return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
        if (end && (*end || vsize < 1 || minf < 0 || limit < 0 || maxlen < 1 ||
                    maxlines < 0)) {
            fprintf(stderr, "bert-vocab: bad number '%s'\n", optarg);
            return EXIT_USAGE;
        }
    }
    if (!out || optind >= argc) {
        fprintf(stderr, "bert-vocab: need --out DIR and at least one FILE\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.lowercase = lower;
    char *line = NULL;
    size_t cap = 0;
    for (int i = optind; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            fprintf(stderr, "bert-vocab: %s: %s\n", argv[i], strerror(errno));
            return EXIT_BADINPUT;
        }
        long n, k = 0;
        while ((n = app_read_line(f, &line, &cap)) >= 0) {
            if (process_line(&c, line, (size_t)n)) {
                fprintf(stderr, "bert-vocab: out of memory\n");
                return EXIT_BADINPUT;
            }
            if (maxlines && ++k >= maxlines)
                break;
        }
        fclose(f);
    }
    free(line);
    if (!quiet)
        fprintf(stderr, "bert-vocab: %zu distinct words\n", c.words.n);
    /* words sorted (deterministic order) */
    size_t nw = c.words.n;
    char **wl = malloc((nw + 1) * sizeof *wl);
    int64_t *wc = malloc((nw + 1) * sizeof *wc);
    if (!wl || !wc)
        return EXIT_BADINPUT;
    size_t k = 0;
    for (size_t i = 0; i < c.words.cap; i++)
        if (c.words.keys[i])
            wl[k++] = c.words.keys[i];
    qsort(wl, nw, sizeof *wl, cmp_str);
    for (size_t i = 0; i < nw; i++)
        wc[i] = c.counts[*smap_get(&c.words, wl[i], strlen(wl[i]), 0)];

    bpe_t b;
    memset(&b, 0, sizeof b);
    /* special tokens */
    {
        const char *s = special;
        while (*s) {
            const char *e = strchr(s, ',');
            size_t n = e ? (size_t)(e - s) : strlen(s);
            if (n && vocab_add(&b, s, n) < 0)
                return EXIT_BADINPUT;
            s += n + (e ? 1 : 0);
        }
    }
    /* alphabet */
    smap amap;
    memset(&amap, 0, sizeof amap);
    cpc *alpha = NULL;
    size_t nalpha = 0, capalpha = 0;
    for (size_t i = 0; i < nw; i++) {
        const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)wl[i];
        utf8proc_int32_t cp;
        utf8proc_ssize_t n;
        while (*p && (n = utf8proc_iterate(p, -1, &cp)) > 0) {
            char key[8];
            int kl = (int)utf8proc_encode_char(cp, (utf8proc_uint8_t *)key);
            int32_t *slot = smap_get(&amap, key, (size_t)kl, 1);
            if (!slot)
                return EXIT_BADINPUT;
            if (*slot < 0) {
                if (nalpha == capalpha) {
                    capalpha = capalpha ? capalpha * 2 : 256;
                    alpha = realloc(alpha, capalpha * sizeof *alpha);
                    if (!alpha)
                        return EXIT_BADINPUT;
                }
                *slot = (int32_t)nalpha;
                alpha[nalpha].cp = cp;
                alpha[nalpha].n = 0;
                nalpha++;
            }
            alpha[*slot].n += wc[i];
            p += n;
        }
    }
    if (limit && (size_t)limit < nalpha) {
        qsort(alpha, nalpha, sizeof *alpha, cmp_cpc_freq);
        nalpha = (size_t)limit;
    }
    qsort(alpha, nalpha, sizeof *alpha, cmp_cpc_cp);
    smap keep;
    memset(&keep, 0, sizeof keep);
    for (size_t i = 0; i < nalpha; i++) {
        char key[8];
        int kl = (int)utf8proc_encode_char(alpha[i].cp, (utf8proc_uint8_t *)key);
        if (vocab_add(&b, key, (size_t)kl) < 0 || !smap_get(&keep, key, (size_t)kl, 1))
            return EXIT_BADINPUT;
    }
    /* words -> symbols */
    word_t *words = calloc(nw ? nw : 1, sizeof *words);
    if (!words)
        return EXIT_BADINPUT;
    for (size_t i = 0; i < nw; i++) {
        size_t bl = strlen(wl[i]);
        words[i].sym = malloc((bl + 1) * sizeof(int32_t));
        words[i].count = wc[i];
        words[i].stamp = -1;
        if (!words[i].sym)
            return EXIT_BADINPUT;
        const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)wl[i];
        utf8proc_int32_t cp;
        utf8proc_ssize_t n;
        int first = 1;
        while (*p && (n = utf8proc_iterate(p, -1, &cp)) > 0) {
            char key[12];
            int kl = (int)utf8proc_encode_char(cp, (utf8proc_uint8_t *)key + 2);
            p += n;
            if (!smap_get(&keep, key + 2, (size_t)kl, 0))
                continue; /* character outside the alphabet */
            int32_t id;
            if (first)
                id = vocab_add(&b, key + 2, (size_t)kl);
            else {
                key[0] = key[1] = '#';
                id = vocab_add(&b, key, (size_t)kl + 2);
            }
            if (id < 0)
                return EXIT_BADINPUT;
            words[i].sym[words[i].len++] = id;
            first = 0;
        }
    }
    /* initial pair counts */
    for (size_t i = 0; i < nw; i++)
        for (int32_t j = 0; j + 1 < words[i].len; j++) {
            int32_t pid = pair_id(&b, words[i].sym[j], words[i].sym[j + 1]);
            if (pid < 0 || pair_where(&b.pairs[pid], (int32_t)i))
                return EXIT_BADINPUT;
            b.pairs[pid].count += words[i].count;
        }
    heap_t hp = {0};
    for (size_t i = 0; i < b.npairs; i++)
        if (b.pairs[i].count > 0 &&
            hpush(&hp, (hent){b.pairs[i].count, (int32_t)i, b.pairs[i].a, b.pairs[i].b}))
            return EXIT_BADINPUT;
    int32_t *touched = NULL;
    size_t ntouched = 0, captouched = 0;
    int64_t iter = 0;
    char *mbuf = NULL;
    size_t mcap = 0;
    while (b.ntok < (size_t)vsize && hp.n > 0) {
        hent e = hpop(&hp);
        pair_t *pp = &b.pairs[e.pid];
        if (e.count != pp->count) {
            if (pp->count > 0 && hpush(&hp, (hent){pp->count, e.pid, pp->a, pp->b}))
                return EXIT_BADINPUT;
            continue;
        }
        if (pp->count < minf || pp->count <= 0)
            break;
        /* new token */
        const char *sa = b.tok[pp->a], *sb = b.tok[pp->b];
        if (strncmp(sb, "##", 2) == 0)
            sb += 2;
        size_t la = strlen(sa), lb = strlen(sb);
        if (la + lb + 1 > mcap) {
            mcap = (la + lb + 1) * 2;
            mbuf = realloc(mbuf, mcap);
            if (!mbuf)
                return EXIT_BADINPUT;
        }
        memcpy(mbuf, sa, la);
        memcpy(mbuf + la, sb, lb);
        int32_t nid = vocab_add(&b, mbuf, la + lb);
        if (nid < 0)
            return EXIT_BADINPUT;
        int32_t A = pp->a, Bb = pp->b;
        iter++;
        ntouched = 0;
        size_t nwh = pp->nwhere;
        int32_t *wh = pp->where;
        pp->where = NULL;
        pp->nwhere = pp->capwhere = 0;
        for (size_t q = 0; q < nwh; q++) {
            word_t *w = &words[wh[q]];
            if (w->stamp == iter)
                continue;
            w->stamp = iter;
            int has = 0;
            for (int32_t j = 0; j + 1 < w->len; j++)
                if (w->sym[j] == A && w->sym[j + 1] == Bb) {
                    has = 1;
                    break;
                }
            if (!has)
                continue;
            /* remove all pairs of this word, merge, add all pairs back */
            for (int32_t j = 0; j + 1 < w->len; j++) {
                int32_t pid = pair_id(&b, w->sym[j], w->sym[j + 1]);
                if (pid < 0)
                    return EXIT_BADINPUT;
                b.pairs[pid].count -= w->count;
            }
            int32_t o2 = 0;
            for (int32_t j = 0; j < w->len; j++) {
                if (j + 1 < w->len && w->sym[j] == A && w->sym[j + 1] == Bb) {
                    w->sym[o2++] = nid;
                    j++;
                } else {
                    w->sym[o2++] = w->sym[j];
                }
            }
            w->len = o2;
            for (int32_t j = 0; j + 1 < w->len; j++) {
                int32_t pid = pair_id(&b, w->sym[j], w->sym[j + 1]);
                if (pid < 0)
                    return EXIT_BADINPUT;
                pp = NULL; /* pairs may have moved */
                b.pairs[pid].count += w->count;
                if (w->sym[j] == nid || w->sym[j + 1] == nid) {
                    if (pair_where(&b.pairs[pid], wh[q]))
                        return EXIT_BADINPUT;
                    if (ntouched == captouched) {
                        captouched = captouched ? captouched * 2 : 256;
                        touched = realloc(touched, captouched * sizeof *touched);
                        if (!touched)
                            return EXIT_BADINPUT;
                    }
                    touched[ntouched++] = pid;
                }
            }
        }
        free(wh);
        for (size_t q = 0; q < ntouched; q++) {
            pair_t *tp = &b.pairs[touched[q]];
            if (tp->count > 0 &&
                hpush(&hp, (hent){tp->count, touched[q], tp->a, tp->b}))
                return EXIT_BADINPUT;
        }
        if (!quiet && b.ntok % 1000 == 0)
            fprintf(stderr, "\rbert-vocab: %zu tokens", b.ntok);
    }
    if (!quiet)
        fprintf(stderr, "\rbert-vocab: %zu tokens\n", b.ntok);
    mkdir(out, 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.txt", out);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bert-vocab: %s: %s\n", path, strerror(errno));
        return EXIT_BADINPUT;
    }
    for (size_t i = 0; i < b.ntok; i++)
        fprintf(f, "%s\n", b.tok[i]);
    if (fclose(f) || app_write_tokenizer_config(out, lower, (size_t)maxlen)) {
        fprintf(stderr, "bert-vocab: cannot write into %s\n", out);
        return EXIT_BADINPUT;
    }
    return EXIT_OK;
}
