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
 *
 * Input: lines end at '\n' only and may be of any length.  NUL bytes and
 * other control characters are dropped (BERT's clean text); a line that is
 * not valid UTF-8 is skipped with a message naming it, the vocabulary is
 * still learned from the rest, and the exit status is then 2.  Empty files
 * add nothing.
 *
 * The program runs as a pipeline of steps, each in its own function that
 * owns (and frees) what it allocates: parse_args, count_files, sorted_words,
 * build_alphabet, then on a bpe_t: add_special_tokens, add_alphabet,
 * split_words, count_pairs, merge_until, and finally write_output.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <utf8proc.h>

#include "apps/common.h"
#include "libbert/bert_tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#define PROG "bert-vocab"
#define DEFAULT_SPECIAL "[PAD],[UNK],[CLS],[SEP],[MASK]"
/* Room for DIR + "/tokenizer_config.json" in the output paths. */
#define PATH_MAX_LEN 4096
/* Lines of a file reported one by one as invalid UTF-8; the rest are only
 * counted, so that a binary file does not flood the terminal. */
#define MAX_LINE_WARNINGS 5
/* One code point past the last, for tables indexed by code point. */
#define NCODEPOINTS 0x110000

/* Prints the out-of-memory message; returns -1 for `return oom();`. */
static int oom(void)
{
    fprintf(stderr, PROG ": out of memory\n");
    return -1;
}

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

/* ---- options ------------------------------------------------------------ */

typedef struct {
    const char *out, *special;
    long vocab_size, min_frequency, limit_alphabet, max_len, max_lines;
    int lowercase, quiet;
    char **files;
    int nfiles;
} options;

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
            "Input: UTF-8 text; only '\\n' ends a line, lines may be of any "
            "length.  NUL bytes\nand other control characters are dropped.  "
            "A line that is not valid UTF-8 is\nskipped with a message "
            "(FILE:LINE); the vocabulary is still written, and the exit\n"
            "status is 2.  The vocabulary never has fewer tokens than the "
            "special tokens, the\nalphabet and its ##-forms together.\n\n"
            "Exit status: 0 success, 1 usage error, 2 bad input (unreadable "
            "file, invalid UTF-8,\nunwritable DIR, out of memory).\n"
            "\nExamples:\n"
            "  bert-vocab --out my-vocab --vocab-size 30522 corpus.txt\n"
            "  bert-vocab --out my-vocab --vocab-size 8000 --lowercase "
            "part1.txt part2.txt\n"
            "  bert-vocab --out my-vocab --min-frequency 5 --special "
            "'[PAD],[UNK],[CLS],[SEP],[MASK]' corpus.txt\n");
}

/* Parses the value of --`name` as a decimal integer >= min into *v. */
static int parse_count(const char *name, const char *s, long min, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE || x < min) {
        fprintf(stderr, PROG ": --%s: bad number '%s' (want an integer >= %ld)\n",
                name, s, min);
        return -1;
    }
    *v = x;
    return 0;
}

/* Special tokens become lines of vocab.txt, so they must be UTF-8 without
 * line breaks. */
static int check_special(const char *list)
{
    size_t n = strlen(list);
    if (app_utf8_valid(list, n) != n || strpbrk(list, "\n\r")) {
        fprintf(stderr, PROG ": --special: tokens must be UTF-8 without line breaks\n");
        return -1;
    }
    return 0;
}

/* Fills *o from the command line.  Returns -1 to go on, else the exit
 * status (after --help, --version or a usage error). */
static int parse_args(int argc, char **argv, options *o)
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
    *o = (options){.special = DEFAULT_SPECIAL, .vocab_size = 30000,
                   .min_frequency = 2, .limit_alphabet = 1000, .max_len = 512};
    opterr = 0; /* our own messages, prefixed "bert-vocab:" */
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, ":qhV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'v': bad = parse_count("vocab-size", optarg, 1, &o->vocab_size); break;
        case 'm': bad = parse_count("min-frequency", optarg, 0, &o->min_frequency); break;
        case 'a': bad = parse_count("limit-alphabet", optarg, 0, &o->limit_alphabet); break;
        case 'M': bad = parse_count("model-max-length", optarg, 1, &o->max_len); break;
        case 'n': bad = parse_count("max-lines", optarg, 0, &o->max_lines); break;
        case 'l': o->lowercase = 1; break;
        case 's': o->special = optarg; bad = check_special(optarg); break;
        case 'q': o->quiet = 1; break;
        case 'h': usage(stdout); return EXIT_OK;
        case 'V': printf("bert-vocab (libbert) %s\n", BERT_VERSION_STRING); return EXIT_OK;
        case ':':
            fprintf(stderr, PROG ": %s: missing value\n", argv[optind - 1]);
            bad = 1;
            break;
        default: /* optopt names an unknown short option; 0 for a long one */
            if (optopt)
                fprintf(stderr, PROG ": -%c: unknown option\n", optopt);
            else
                fprintf(stderr, PROG ": %s: unknown option\n", argv[optind - 1]);
            bad = 1;
        }
    }
    if (!bad && (!o->out || !*o->out)) {
        fprintf(stderr, PROG ": --out DIR is required\n");
        bad = 1;
    } else if (!bad && optind >= argc) {
        fprintf(stderr, PROG ": no input FILE\n");
        bad = 1;
    } else if (!bad && strlen(o->out) + 32 > PATH_MAX_LEN) {
        fprintf(stderr, PROG ": %s: path too long\n", o->out);
        bad = 1;
    }
    if (bad) {
        fprintf(stderr, "Try 'bert-vocab --help'.\n");
        return EXIT_USAGE;
    }
    o->files = argv + optind;
    o->nfiles = argc - optind;
    return -1;
}

/* ---- BERT normalizer + pre-tokenizer --------------------------------- */

/* Character classes come from the tokenizer itself (Unicode 8.0 tables, as
 * Hugging Face's BertNormalizer and pre-tokenizer see them), so a word here
 * is exactly a word the tokenizer will later look up. */
static unsigned cp_class(int32_t c) { return bert__cp_class((uint32_t)c); }

/* ---- step 1: read and count the words ---------------------------------- */

/* The words of the input and their counts, filled line by line. */
typedef struct {
    int lowercase;
    smap index;           /* word -> its slot in count */
    int64_t *count;
    size_t capcount;
    char *word;           /* the word being read, UTF-8 */
    size_t wlen, wcap;
    utf8proc_int32_t *cps; /* the current line as code points */
    size_t capcps;
} counter;

enum { LINE_OK = 0, LINE_INVALID = 1, LINE_OOM = -1, LINE_TOO_LONG = -2 };

static void counter_free(counter *c)
{
    smap_free(&c->index);
    free(c->count);
    free(c->word);
    free(c->cps);
    memset(c, 0, sizeof *c);
}

/* Counts the word being read, if any, and starts the next one. */
static int end_word(counter *c)
{
    if (c->wlen == 0)
        return LINE_OK;
    int32_t *slot = smap_get(&c->index, c->word, c->wlen, 1);
    if (!slot)
        return LINE_OOM;
    if (*slot < 0) {
        if (c->index.n > INT32_MAX)
            return LINE_OOM; /* ids are int32 */
        int64_t *nb = grow(c->count, &c->capcount, c->index.n, sizeof *nb, 4096);
        if (!nb)
            return LINE_OOM;
        c->count = nb;
        *slot = (int32_t)(c->index.n - 1);
        c->count[*slot] = 0;
    }
    c->count[*slot]++;
    c->wlen = 0;
    return LINE_OK;
}

static int put_cp(counter *c, int32_t cp)
{
    /* word lengths are int32 further on */
    if (c->wlen > INT32_MAX - 8)
        return LINE_TOO_LONG;
    char *nb = grow(c->word, &c->wcap, c->wlen + 8, 1, 256);
    if (!nb)
        return LINE_OOM;
    c->word = nb;
    c->wlen += (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)c->word + c->wlen);
    return LINE_OK;
}

/* Decodes s[0..n) into c->cps (canonically decomposed when lower-casing):
 * the number of code points, or a negative LINE_ code. */
static utf8proc_ssize_t decode_line(counter *c, const char *s, size_t n)
{
    int opt = c->lowercase ? UTF8PROC_DECOMPOSE : 0;
    size_t want = n + 1;
    for (;;) {
        utf8proc_int32_t *nb = grow(c->cps, &c->capcps, want, sizeof *nb, 256);
        if (!nb)
            return LINE_OOM;
        c->cps = nb;
        utf8proc_ssize_t len = utf8proc_decompose(
            (const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, c->cps,
            (utf8proc_ssize_t)c->capcps, opt);
        if (len == UTF8PROC_ERROR_NOMEM)
            return LINE_OOM;
        if (len < 0)
            return -3; /* invalid UTF-8 (or a length utf8proc cannot take) */
        if ((size_t)len <= c->capcps)
            return len;
        want = (size_t)len; /* decomposition grew the line: try again */
    }
}

/* Normalizes and pre-tokenizes one line and counts its words. */
static int count_line(counter *c, const char *s, size_t n)
{
    utf8proc_ssize_t len = decode_line(c, s, n);
    if (len == -3)
        return LINE_INVALID;
    if (len < 0)
        return (int)len;
    int rc = LINE_OK;
    for (utf8proc_ssize_t i = 0; i < len && !rc; i++) {
        int32_t cp = c->cps[i];
        unsigned cls = cp_class(cp);
        if (cls & BT_CC_DROP)
            continue;
        if (c->lowercase) {
            if (cls & BT_CC_MN)
                continue;
            cp = utf8proc_tolower(cp);
            cls = cp_class(cp);
        }
        if (cls & BT_CC_WS) {
            rc = end_word(c);
        } else if (cls & (BT_CC_PUNCT | BT_CC_CJK)) {
            rc = end_word(c);
            if (!rc)
                rc = put_cp(c, cp);
            if (!rc)
                rc = end_word(c);
        } else {
            rc = put_cp(c, cp);
        }
    }
    if (!rc)
        rc = end_word(c);
    return rc;
}

/* Counts the words of the first max_lines lines (0: all) of path.  Returns
 * 0, 1 when lines were skipped as invalid UTF-8 (reported), or -1 after
 * printing why the file could not be read. */
static int count_file(counter *c, const char *path, long max_lines)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    long n, lineno = 0, skipped = 0;
    int rc = 0;
    while ((n = app_read_line(f, &line, &cap)) >= 0) {
        lineno++;
        int r = count_line(c, line, (size_t)n);
        if (r == LINE_INVALID) {
            if (++skipped <= MAX_LINE_WARNINGS)
                fprintf(stderr, PROG ": %s:%ld: not valid UTF-8, line skipped\n",
                        path, lineno);
        } else if (r == LINE_TOO_LONG) {
            fprintf(stderr, PROG ": %s:%ld: a word of more than 2 GiB\n", path, lineno);
            rc = -1;
            break;
        } else if (r) {
            rc = oom();
            break;
        }
        if (max_lines && lineno >= max_lines)
            break;
    }
    int err = errno; /* of the read that ended the loop, if it failed */
    if (!rc && n == -2)
        rc = oom();
    else if (!rc && ferror(f)) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(err));
        rc = -1;
    }
    if (skipped > MAX_LINE_WARNINGS)
        fprintf(stderr, PROG ": %s: %ld lines not valid UTF-8 skipped in all\n",
                path, skipped);
    free(line);
    fclose(f);
    return rc ? rc : skipped > 0;
}

/* Counts every file: 0, 1 when some lines were skipped, or -1 on error. */
static int count_files(counter *c, const options *o)
{
    int skipped = 0;
    for (int i = 0; i < o->nfiles; i++) {
        int r = count_file(c, o->files[i], o->max_lines);
        if (r < 0)
            return -1;
        skipped |= r;
    }
    if (!o->quiet)
        fprintf(stderr, PROG ": %zu distinct words\n", c->index.n);
    return skipped;
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
    if (!w) {
        oom();
        return NULL;
    }
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
    if (!freq) {
        oom();
        return NULL;
    }
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
        oom();
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
            return oom();
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
        return oom();
    for (size_t i = 0; i < n; i++) {
        char key[8];
        int kl = (int)utf8proc_encode_char(alpha[i].cp, (utf8proc_uint8_t *)key);
        if (vocab_add(b, key, (size_t)kl) < 0)
            return oom();
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
        return oom();
    b->nwords = nw;
    for (size_t i = 0; i < nw; i++) {
        b->words[i].count = w[i].count;
        b->words[i].stamp = -1;
        if (split_word(b, &b->words[i], w[i].s, kept))
            return oom();
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
                return oom();
            b->pairs[pid].count += w->count;
        }
    }
    for (size_t i = 0; i < b->npairs; i++) {
        const pair_t *p = &b->pairs[i];
        if (p->count > 0 && hpush(&b->heap, (hent){p->count, (int32_t)i, p->a, p->b}))
            return oom();
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
    return rc ? oom() : 0;
}

/* Merges the best pair until the vocabulary has vocab_size tokens, the best
 * pair occurs fewer than min_frequency times, or no pair is left. */
static int merge_until(bpe_t *b, long vocab_size, long min_frequency, int quiet)
{
    int tty = isatty(STDERR_FILENO);
    int64_t merges = 0;
    while (b->ntok < (size_t)vocab_size && b->heap.n > 0) {
        hent e = hpop(&b->heap);
        const pair_t *p = &b->pairs[e.pid];
        if (e.count != p->count) { /* stale: queue it again as it is now */
            if (p->count > 0 && hpush(&b->heap, (hent){p->count, e.pid, p->a, p->b}))
                return oom();
            continue;
        }
        if (p->count < min_frequency || p->count <= 0)
            break;
        int32_t nid = merged_token(b, p->a, p->b);
        if (nid < 0)
            return oom();
        if (merge_pair(b, e.pid, nid, ++merges))
            return -1;
        if (!quiet && tty && b->ntok % 1000 == 0)
            fprintf(stderr, "\r" PROG ": %zu tokens", b->ntok);
    }
    /* the running count only on a terminal: in a log, "\r" lines are noise */
    if (!quiet)
        fprintf(stderr, "%s" PROG ": %zu tokens\n", tty ? "\r" : "", b->ntok);
    return 0;
}

/* ---- step 6: the output ------------------------------------------------- */

/* Writes DIR/vocab.txt (one token per line, in id order) and
 * DIR/tokenizer_config.json; DIR is created when missing. */
static int write_output(const options *o, const bpe_t *b)
{
    if (mkdir(o->out, 0755) && errno != EEXIST) {
        fprintf(stderr, PROG ": %s: %s\n", o->out, strerror(errno));
        return -1;
    }
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof path, "%s/vocab.txt", o->out); /* fits: parse_args */
    char tmp[PATH_MAX_LEN + 64];
    FILE *f = app_create(path, tmp);
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < b->ntok; i++) {
        fputs(b->tok[i], f);
        putc('\n', f);
    }
    if (app_commit(f, tmp, path)) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (app_write_tokenizer_config(o->out, o->lowercase, (size_t)o->max_len)) {
        fprintf(stderr, PROG ": %s/tokenizer_config.json: %s\n", o->out,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the pipeline ------------------------------------------------------- */

/* Steps 1-4: the vocabulary's first tokens and the words as symbols in *b.
 * The counted words are freed before the merges, which need only the
 * symbols.  Returns 0, 1 when input lines were skipped, or -1. */
static int prepare(const options *o, bpe_t *b)
{
    counter c = {.lowercase = o->lowercase};
    wcount *words = NULL;
    cpc *alpha = NULL;
    unsigned char *kept = NULL;
    size_t nw = 0, nalpha = 0;
    int skipped = count_files(&c, o);
    int rc = -1;
    if (skipped < 0 || !(words = sorted_words(&c, &nw)) ||
        !(alpha = build_alphabet(words, nw, o->limit_alphabet, &nalpha)) ||
        add_special_tokens(b, o->special) ||
        add_alphabet(b, alpha, nalpha, &kept) ||
        split_words(b, words, nw, kept) || count_pairs(b))
        goto done;
    rc = skipped;
done:
    free(kept);
    free(alpha);
    free(words);
    counter_free(&c);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    int st = parse_args(argc, argv, &o);
    if (st >= 0)
        return st;
    bpe_t b = {0};
    int skipped = prepare(&o, &b);
    st = EXIT_BADINPUT;
    if (skipped >= 0 &&
        !merge_until(&b, o.vocab_size, o.min_frequency, o.quiet) &&
        !write_output(&o, &b))
        st = skipped ? EXIT_BADINPUT : EXIT_OK;
    bpe_free(&b);
    return st;
}
