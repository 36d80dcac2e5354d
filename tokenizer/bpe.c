/*
 * tokenizer/bpe.c - GPT-2 / RoBERTa byte-level BPE behind the tokenizer API:
 * loading (tokenizer.json of the BPE kind, or vocab.json + merges.txt with
 * tokenizer_config.json), the ByteLevel pre-tokenizer's regex and the merges.
 *
 * Reference: Hugging Face tokenizers (Rust) pre_tokenizers/byte_level.rs and
 * models/bpe/{model,word}.rs:
 *  - each text segment between added tokens is split by GPT-2's regex
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *    (after a space is prepended when add_prefix_space and the segment does
 *    not start with one); every piece is a word;
 *  - a piece's UTF-8 bytes become symbols (byte b is the vocabulary token
 *    spelled bytes_to_unicode(b)); adjacent symbols are merged lowest merge
 *    rank first, leftmost first among equal ranks (a binary heap, as the
 *    reference's Word::merge_all), so a piece of n bytes costs O(n log n);
 *  - offsets: every byte of a character carries that character's span.
 * The merge loop needs no allocation per token: its arrays live in the
 * encoding's scratch and only grow.  Pieces of up to 16 bytes (nearly all
 * words) are remembered in a direct-mapped cache of the encoding (a few
 * hundred kB), which makes the merges run about once per distinct word.
 */
#include "tokenizer/tokenizer_internal.h"
#include "libbert/readall.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <utf8proc.h>

/* ---- bytes_to_unicode ---------------------------------------------------- */

/* GPT-2's reversible byte -> printable character map: '!'..'~', U+00A1..
 * U+00AC and U+00AE..U+00FF map to themselves, the other 68 bytes
 * (0x00-0x20, 0x7F-0xA0, 0xAD) to U+0100 onwards in byte order. */
static int byte_prints(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static uint32_t byte_to_cp(unsigned b)
{
    if (byte_prints(b))
        return b;
    unsigned n = 0;
    for (unsigned k = 0; k < b; k++)
        n += !byte_prints(k);
    return 256 + n;
}

int bert__bytelevel_byte(uint32_t c)
{
    if (c < 0x100)
        return byte_prints(c) ? (int)c : -1;
    c -= 0x100; /* the c-th byte that does not print, in byte order */
    return c < 33 ? (int)c : c < 67 ? (int)(0x7F + c - 33) : c == 67 ? 0xAD : -1;
}

static size_t put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    /* byte_to_cp gives at most U+0143 */
    o[0] = (char)(0xC0 | (c >> 6));
    o[1] = (char)(0x80 | (c & 0x3F));
    return 2;
}

/* ---- merges table ---------------------------------------------------------- */

#define MERGE_EMPTY UINT64_MAX

static uint64_t merge_key(int32_t a, int32_t b)
{
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

static size_t merge_slot(const bt_bpe *m, uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & m->mmask;
}

/* Rank and result of merging ids a and b; 0 when no merge. */
static inline int merge_get(const bt_bpe *m, int32_t a, int32_t b, uint32_t *rank,
                            int32_t *id)
{
    uint64_t key = merge_key(a, b);
    size_t i = merge_slot(m, key);
    for (;;) {
        uint64_t k = m->mkeys[i];
        if (k == key) {
            *rank = m->mrank[i];
            *id = m->mnew[i];
            return 1;
        }
        if (k == MERGE_EMPTY)
            return 0;
        i = (i + 1) & m->mmask;
    }
}

/* Inserts (a,b) -> (rank, id); a later duplicate overwrites, as the
 * reference's HashMap collect does. */
static void merge_put(bt_bpe *m, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
    uint64_t key = merge_key(a, b);
    size_t i = merge_slot(m, key);
    while (m->mkeys[i] != MERGE_EMPTY && m->mkeys[i] != key)
        i = (i + 1) & m->mmask;
    m->mkeys[i] = key;
    m->mrank[i] = rank;
    m->mnew[i] = id;
}

void bert__bpe_free(bt_bpe *m)
{
    if (!m)
        return;
    free(m->mkeys);
    free(m->mrank);
    free(m->mnew);
    free(m);
}

/* ---- the merge loop ---------------------------------------------------------- */

void bert__bpe_scratch_free(bt_bpe_scratch *w)
{
    if (!w)
        return;
    free(w->id);
    free(w->heap);
    free(w);
}

static int scratch_reserve(bt_bpe_scratch *w, size_t n)
{
    if (n <= w->cap)
        return BERT_OK;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < n)
        cap *= 2;
    /* id, len, prev, next: four int32 arrays in one block */
    int32_t *a = realloc(w->id, 4 * cap * sizeof *a);
    if (!a)
        return BERT_ENOMEM;
    uint64_t *h = realloc(w->heap, 2 * cap * sizeof *h);
    if (!h) {
        w->id = a;
        return BERT_ENOMEM;
    }
    w->id = a;
    w->heap = h;
    w->cap = cap;
    return BERT_OK;
}

/* Min-heap of (rank << 32 | position). */
static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v)
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], v = h[--(*n)];
    size_t i = 0, m = *n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (m)
        h[i] = v;
    return top;
}

int bert__bpe_word(const bert_tokenizer *t, bt_bpe_scratch *w, const uint8_t *p, size_t n,
                   bt_piece *out, size_t *n_out)
{
    const bt_bpe *m = t->bpe;
    *n_out = 0;
    if (n == 0)
        return BERT_OK;
    if (n > UINT32_MAX / 2)
        return BERT_ETOOLONG;
    if (n == 1) {
        if (m->byte_id[p[0]] >= 0) {
            out[0].start = 0;
            out[0].end = 1;
            out[0].id = m->byte_id[p[0]];
            *n_out = 1;
        }
        return BERT_OK;
    }
    if (m->ignore_merges) {
        int32_t id = bert__vocab_lookup_mapped(t, p, n);
        if (id >= 0) {
            out[0].start = 0;
            out[0].end = (uint32_t)n;
            out[0].id = id;
            *n_out = 1;
            return BERT_OK;
        }
    }
    /* the cache: a direct-mapped slot per short piece */
    bt_bpe_cached *slot = NULL;
    if (n <= BT_BPE_CACHE_KEY) {
        if (!w->cache && !(w->cache = calloc(BT_BPE_CACHE_SLOTS, sizeof *w->cache)))
            return BERT_ENOMEM;
        if (w->cache_fp != m->fingerprint) {
            /* an encoding may serve several tokenizers in turn */
            memset(w->cache, 0, BT_BPE_CACHE_SLOTS * sizeof *w->cache);
            w->cache_fp = m->fingerprint;
        }
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < n; i++)
            h = (h ^ p[i]) * 16777619u;
        slot = &w->cache[(h ^ (h >> 15)) & (BT_BPE_CACHE_SLOTS - 1)];
        if (slot->klen == n && memcmp(slot->key, p, n) == 0) {
            uint32_t st = 0;
            for (size_t k = 0; k < slot->ntok; k++) {
                out[k].start = st;
                out[k].end = slot->end[k];
                out[k].id = slot->id[k];
                st = slot->end[k];
            }
            *n_out = slot->ntok;
            return BERT_OK;
        }
    }
    if (scratch_reserve(w, n))
        return BERT_ENOMEM;
    int32_t *id = w->id, *len = id + w->cap;
    int32_t *prev = len + w->cap, *next = prev + w->cap;
    uint64_t *heap = w->heap;
    size_t ns = 0, nh = 0;
    /* Symbols: one per byte the vocabulary knows.  An unknown byte is
     * skipped, as the reference does without unk_token: its neighbours
     * become adjacent, and since the reference's offsets are the running
     * sum of the symbols' lengths, the tokens after it shift left by one
     * byte (reproduced, not fixed: offsets must match). */
    for (size_t i = 0; i < n; i++) {
        int32_t b = m->byte_id[p[i]];
        if (b < 0)
            continue;
        id[ns] = b;
        len[ns] = 1;
        prev[ns] = (int32_t)ns - 1;
        next[ns] = -1;
        if (ns)
            next[ns - 1] = (int32_t)ns;
        ns++;
    }
    uint32_t rank;
    int32_t nid;
    for (size_t i = 0; i + 1 < ns; i++)
        if (merge_get(m, id[i], id[i + 1], &rank, &nid))
            heap_push(heap, &nh, ((uint64_t)rank << 32) | i);
    while (nh) {
        uint64_t top = heap_pop(heap, &nh);
        int32_t pos = (int32_t)(top & 0xFFFFFFFFu);
        uint32_t r = (uint32_t)(top >> 32);
        int32_t nx = next[pos];
        /* stale: the symbol was merged away, or its pair changed */
        if (id[pos] < 0 || nx < 0)
            continue;
        if (!merge_get(m, id[pos], id[nx], &rank, &nid) || rank != r)
            continue;
        id[pos] = nid;
        len[pos] += len[nx];
        id[nx] = -1;
        next[pos] = next[nx];
        if (next[nx] >= 0)
            prev[next[nx]] = pos;
        if (prev[pos] >= 0 && merge_get(m, id[prev[pos]], id[pos], &rank, &nid))
            heap_push(heap, &nh, ((uint64_t)rank << 32) | (uint32_t)prev[pos]);
        if (next[pos] >= 0 && merge_get(m, id[pos], id[next[pos]], &rank, &nid))
            heap_push(heap, &nh, ((uint64_t)rank << 32) | (uint32_t)pos);
    }
    size_t k = 0;
    uint32_t at = 0;
    for (int32_t i = ns ? 0 : -1; i >= 0; i = next[i]) {
        out[k].start = at;
        at += (uint32_t)len[i];
        out[k].end = at;
        out[k].id = id[i];
        k++;
    }
    *n_out = k;
    if (slot) {
        slot->klen = (uint8_t)n;
        slot->ntok = (uint8_t)k;
        memcpy(slot->key, p, n);
        for (size_t j = 0; j < k; j++) {
            slot->end[j] = (uint8_t)out[j].end;
            slot->id[j] = out[j].id;
        }
    }
    return BERT_OK;
}

/* ---- GPT-2's pre-tokenization regex -------------------------------------------- */

enum { CL_L = 1, CL_N = 2, CL_S = 3, CL_O = 4 };

/* \p{L}, \p{N}, \s (White_Space) or anything else, of the character at
 * s[0..len) (valid UTF-8); its byte length in *n. */
static inline int char_class(const uint8_t *s, size_t *n)
{
    uint8_t b = s[0];
    if (b < 0x80) {
        *n = 1;
        if ((b | 0x20) >= 'a' && (b | 0x20) <= 'z')
            return CL_L;
        if (b >= '0' && b <= '9')
            return CL_N;
        if (b == ' ' || (b >= 0x09 && b <= 0x0D))
            return CL_S;
        return CL_O;
    }
    uint32_t c;
    if (b < 0xE0) {
        *n = 2;
        c = ((uint32_t)(b & 0x1F) << 6) | (s[1] & 0x3F);
    } else if (b < 0xF0) {
        *n = 3;
        c = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    } else {
        *n = 4;
        c = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
            ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    }
    if (bert__cp_class(c) & BT_CC_WS)
        return CL_S;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return CL_L;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return CL_N;
    default:
        return CL_O;
    }
}

/* End of the run of class cl starting at i. */
static size_t run_end(const uint8_t *s, size_t len, size_t i, int cl)
{
    while (i < len) {
        size_t n;
        if (char_class(s + i, &n) != cl)
            break;
        i += n;
    }
    return i;
}

size_t bert__bytelevel_next(const uint8_t *s, size_t len, size_t i)
{
    size_t n0;
    int c0 = char_class(s + i, &n0);
    /* 's|'t|'re|'ve|'m|'ll|'d */
    if (s[i] == '\'' && i + 1 < len) {
        uint8_t a = s[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return i + 2;
        if (i + 2 < len) {
            uint8_t b = s[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return i + 3;
        }
    }
    /*  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ with the optional space */
    if (s[i] == ' ' && i + 1 < len) {
        size_t n1;
        int c1 = char_class(s + i + 1, &n1);
        if (c1 != CL_S)
            return run_end(s, len, i + 1 + n1, c1);
    }
    if (c0 != CL_S)
        return run_end(s, len, i + n0, c0);
    /* \s+(?!\S) | \s+ : a whitespace run keeps its last character for the
     * next piece when a non-space follows (unless it is the only one) */
    size_t e = i + n0, last = i;
    while (e < len) {
        size_t n;
        if (char_class(s + e, &n) != CL_S)
            break;
        last = e;
        e += n;
    }
    if (e == len || last == i)
        return e;
    return last;
}

/* ---- loading ------------------------------------------------------------------ */

static int load_json_file(const char *path, json_t **out, bert_error *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!j) {
        struct stat st;
        if (stat(path, &st) != 0)
            return bert__set_error(err, BERT_EMISSING, -1, "%s: %s", path, strerror(errno));
        return bert__set_error(err, BERT_EFORMAT, -1, "%s:%d:%d: %s", path, je.line, je.column,
                               je.text);
    }
    *out = j;
    return BERT_OK;
}

/* model.vocab / vocab.json: an object of token -> id. */
static int load_vocab_object(bert_tokenizer *t, json_t *vocab, const char *path,
                             bert_error *err)
{
    if (!json_is_object(vocab))
        return bert__set_error(err, BERT_EFORMAT, -1,
                               "%s: the vocabulary must be a JSON object of token -> id, not %s",
                               path, json_is_array(vocab) ? "an array" : "another value");
    if (json_object_size(vocab) == 0)
        return bert__set_error(err, BERT_EFORMAT, -1, "%s: the vocabulary is empty", path);
    const char *key;
    size_t klen;
    json_t *val;
    void *tmp;
    json_object_keylen_foreach_safe(vocab, tmp, key, klen, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) >= (json_int_t)(1 << 24))
            return bert__set_error(err, BERT_EFORMAT, -1,
                                   "%s: token \"%.40s\" has no valid id (ids must be integers "
                                   "0..16777215)",
                                   path, key);
        if (bert__vocab_add(t, key, klen, (int32_t)json_integer_value(val)))
            return bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
    }
    return BERT_OK;
}

/* Splits "a b" (one space) into its halves; 0 when malformed. */
static int split_merge(const char *s, size_t len, size_t *alen, const char **b, size_t *blen)
{
    const char *sp = memchr(s, ' ', len);
    if (!sp || sp == s || (size_t)(sp - s) + 1 >= len || memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1))
        return 0;
    *alen = (size_t)(sp - s);
    *b = sp + 1;
    *blen = len - *alen - 1;
    return 1;
}

typedef struct merge_src {
    const char *a, *b;
    size_t alen, blen;
} merge_src;

/* Resolves the merges (rank = position) once the vocabulary is hashed. */
static int build_merges(bert_tokenizer *t, const merge_src *ms, size_t n, const char *path,
                        bert_error *err)
{
    bt_bpe *m = t->bpe;
    size_t cap = 1024;
    while (cap < n * 2 + 2)
        cap *= 2;
    m->mkeys = malloc(cap * sizeof *m->mkeys);
    m->mrank = calloc(cap, sizeof *m->mrank); /* zeroed: the fingerprint */
    m->mnew = calloc(cap, sizeof *m->mnew);   /* reads every slot */
    if (!m->mkeys || !m->mrank || !m->mnew)
        return bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
    for (size_t i = 0; i < cap; i++)
        m->mkeys[i] = MERGE_EMPTY;
    m->mmask = cap - 1;
    char *buf = NULL;
    size_t buf_cap = 0;
    int rc = BERT_OK;
    for (size_t i = 0; i < n && rc == BERT_OK; i++) {
        int32_t a = bert_tokenizer_find(t, ms[i].a, ms[i].alen);
        int32_t b = bert_tokenizer_find(t, ms[i].b, ms[i].blen);
        if (a < 0 || b < 0) {
            rc = bert__set_error(err, BERT_EFORMAT, -1,
                                 "%s: merge %zu \"%.*s %.*s\" names a token that is not in the "
                                 "vocabulary (\"%.*s\")",
                                 path, i + 1, (int)(ms[i].alen > 40 ? 40 : ms[i].alen), ms[i].a,
                                 (int)(ms[i].blen > 40 ? 40 : ms[i].blen), ms[i].b,
                                 (int)((a < 0 ? ms[i].alen : ms[i].blen) > 40
                                           ? 40
                                           : (a < 0 ? ms[i].alen : ms[i].blen)),
                                 a < 0 ? ms[i].a : ms[i].b);
            break;
        }
        size_t l = ms[i].alen + ms[i].blen;
        if (l > buf_cap) {
            buf_cap = l * 2 + 64;
            char *nb = realloc(buf, buf_cap);
            if (!nb) {
                rc = bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        memcpy(buf, ms[i].a, ms[i].alen);
        memcpy(buf + ms[i].alen, ms[i].b, ms[i].blen);
        int32_t id = bert_tokenizer_find(t, buf, l);
        if (id < 0) {
            rc = bert__set_error(err, BERT_EFORMAT, -1,
                                 "%s: merge %zu \"%.*s %.*s\" makes \"%.*s\", which is not in "
                                 "the vocabulary",
                                 path, i + 1, (int)(ms[i].alen > 40 ? 40 : ms[i].alen), ms[i].a,
                                 (int)(ms[i].blen > 40 ? 40 : ms[i].blen), ms[i].b,
                                 (int)(l > 80 ? 80 : l), buf);
            break;
        }
        merge_put(m, a, b, (uint32_t)i, id);
    }
    free(buf);
    return rc;
}

static uint64_t fnv64(uint64_t h, const void *data, size_t n)
{
    const uint8_t *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* The byte -> id table, the mapped strings, and the fingerprint of the
 * tables bert__bpe_word reads (identical tables give identical results, so
 * an encoding's cache can be reused across tokenizers that match). */
static void build_byte_ids(bert_tokenizer *t)
{
    bt_bpe *m = t->bpe;
    for (unsigned b = 0; b < 256; b++) {
        char s[4];
        size_t n = put_utf8(s, byte_to_cp(b));
        m->byte_id[b] = bert_tokenizer_find(t, s, n);
        m->byte_str_len[b] = (uint8_t)n;
        memcpy(m->byte_str[b], s, n);
    }
    uint64_t h = 1469598103934665603ULL;
    h = fnv64(h, m->byte_id, sizeof m->byte_id);
    h = fnv64(h, &m->ignore_merges, sizeof m->ignore_merges);
    h = fnv64(h, m->mkeys, (m->mmask + 1) * sizeof *m->mkeys);
    h = fnv64(h, m->mrank, (m->mmask + 1) * sizeof *m->mrank);
    h = fnv64(h, m->mnew, (m->mmask + 1) * sizeof *m->mnew);
    if (m->ignore_merges) {
        h = fnv64(h, t->pool, t->pool_len);
        h = fnv64(h, t->tok_off, t->n_ids * sizeof *t->tok_off);
    }
    m->fingerprint = h | 1; /* never 0, the empty cache's value */
}

int32_t bert__vocab_lookup_mapped(const bert_tokenizer *t, const uint8_t *p, size_t n)
{
    const bt_bpe *m = t->bpe;
    char buf[256];
    if (n > sizeof buf / 2)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + k, m->byte_str[p[i]], m->byte_str_len[p[i]]);
        k += m->byte_str_len[p[i]];
    }
    return bert_tokenizer_find(t, buf, k);
}

/* The BPE state of t, with the WordPiece normalizer flags (which
 * bert_tokenizer_lowercase() and friends report) off: byte-level BPE has no
 * normalizer. */
static bt_bpe *bpe_new(bert_tokenizer *t)
{
    bt_bpe *m = calloc(1, sizeof *m);
    if (m)
        m->trim_offsets = 1;
    t->lowercase = t->strip_accents = t->chinese = t->clean_text = 0;
    return m;
}

/* merges.txt: an optional "#version" line, then "a b" per line. */
static int load_merges_txt(bert_tokenizer *t, const char *path, bert_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return bert__set_error(err, errno == ENOENT ? BERT_EMISSING : BERT_EIO, -1, "%s: %s",
                               path, strerror(errno));
    char *buf;
    size_t len;
    int rc = bert__read_all(f, 0, &buf, &len);
    fclose(f);
    if (rc)
        return bert__set_error(err, rc, -1, "%s: read error", path);
    merge_src *ms = NULL;
    size_t n = 0, cap = 0, line = 0;
    for (size_t s = 0; s < len && rc == BERT_OK;) {
        const char *nl = memchr(buf + s, '\n', len - s);
        size_t e = nl ? (size_t)(nl - buf) : len;
        size_t l = e - s;
        line++;
        if (l > 0 && buf[s + l - 1] == '\r')
            l--;
        if (l > 0 && !(line == 1 && l >= 8 && memcmp(buf + s, "#version", 8) == 0)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 4096;
                merge_src *nm = realloc(ms, cap * sizeof *ms);
                if (!nm) {
                    rc = bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
                    break;
                }
                ms = nm;
            }
            merge_src *m = &ms[n];
            m->a = buf + s;
            if (!split_merge(buf + s, l, &m->alen, &m->b, &m->blen)) {
                rc = bert__set_error(err, BERT_EFORMAT, -1,
                                     "%s:%zu: a merge must be two tokens separated by one "
                                     "space",
                                     path, line);
                break;
            }
            n++;
        }
        s = e + 1;
    }
    if (rc == BERT_OK && n == 0)
        rc = bert__set_error(err, BERT_EFORMAT, -1, "%s: no merges", path);
    if (rc == BERT_OK)
        rc = bert__tokenizer_hash(t, err);
    if (rc == BERT_OK)
        rc = build_merges(t, ms, n, path, err);
    free(ms);
    free(buf);
    return rc;
}

/* model.merges of tokenizer.json: "a b" strings or [a, b] pairs. */
static int load_merges_json(bert_tokenizer *t, json_t *merges, const char *path, bert_error *err)
{
    if (!json_is_array(merges))
        return bert__set_error(err, BERT_EFORMAT, -1, "%s: model.merges must be an array", path);
    size_t n = json_array_size(merges);
    merge_src *ms = calloc(n ? n : 1, sizeof *ms);
    if (!ms)
        return bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
    int rc = BERT_OK;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(merges, i);
        if (json_is_string(v)) {
            ms[i].a = json_string_value(v);
            if (split_merge(ms[i].a, json_string_length(v), &ms[i].alen, &ms[i].b, &ms[i].blen))
                continue;
        } else if (json_is_array(v) && json_array_size(v) == 2 &&
                   json_is_string(json_array_get(v, 0)) && json_is_string(json_array_get(v, 1))) {
            ms[i].a = json_string_value(json_array_get(v, 0));
            ms[i].alen = json_string_length(json_array_get(v, 0));
            ms[i].b = json_string_value(json_array_get(v, 1));
            ms[i].blen = json_string_length(json_array_get(v, 1));
            continue;
        }
        rc = bert__set_error(err, BERT_EFORMAT, -1,
                             "%s: model.merges[%zu] is not \"a b\" or [\"a\", \"b\"]", path, i);
        break;
    }
    if (rc == BERT_OK)
        rc = bert__tokenizer_hash(t, err);
    if (rc == BERT_OK)
        rc = build_merges(t, ms, n, path, err);
    free(ms);
    return rc;
}

static int json_bool(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* An added token entry: {"content", "id"?, "lstrip", "rstrip", ...}. */
static int add_added_json(bert_tokenizer *t, json_t *a, int32_t id)
{
    json_t *content = json_object_get(a, "content");
    if (!json_is_string(content) || json_string_length(content) == 0)
        return BERT_OK;
    const char *s = json_string_value(content);
    size_t n = json_string_length(content);
    if ((size_t)id >= t->n_ids || t->tok_off[id] == UINT32_MAX) {
        if (bert__vocab_add(t, s, n, id))
            return BERT_ENOMEM;
    }
    return bert__added_add(t, n, id, json_bool(a, "lstrip", 0), json_bool(a, "rstrip", 0),
                           json_bool(a, "single_word", 0));
}

/* tokenizer.json of the BPE kind.  names[] receives the special tokens'
 * strings the post-processor names. */
int bert__bpe_load_json(bert_tokenizer *t, json_t *j, const char *path, char *names[5],
                        bert_error *err)
{
    json_t *model = json_object_get(j, "model");
    t->kind = BT_KIND_BPE;
    if (!(t->bpe = bpe_new(t)))
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    json_t *norm = json_object_get(j, "normalizer");
    if (norm && !json_is_null(norm)) {
        const char *nt = json_string_value(json_object_get(norm, "type"));
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "%s: normalizer \"%s\" is not supported with a BPE model (the "
                               "byte-level BPE of GPT-2/RoBERTa has none)",
                               path, nt ? nt : "?");
    }
    json_t *pre = json_object_get(j, "pre_tokenizer");
    const char *pt = json_string_value(json_object_get(pre, "type"));
    if (!pt || strcmp(pt, "ByteLevel") != 0 || !json_bool(pre, "use_regex", 1))
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "%s: pre_tokenizer \"%s\" is not supported with a BPE model (only "
                               "ByteLevel with use_regex)",
                               path, pt ? pt : "null");
    t->bpe->add_prefix_space = json_bool(pre, "add_prefix_space", 0);
    json_t *pp = json_object_get(j, "post_processor");
    const char *ppt = json_string_value(json_object_get(pp, "type"));
    if (!ppt || strcmp(ppt, "RobertaProcessing") != 0)
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "%s: post_processor \"%s\" is not supported with a BPE model "
                               "(only RobertaProcessing: <s> A </s></s> B </s>)",
                               path, ppt ? ppt : "null");
    t->bpe->trim_offsets = json_bool(pp, "trim_offsets", 1);
    t->bpe->pp_add_prefix_space = json_bool(pp, "add_prefix_space", 0);
    const char *c = json_string_value(json_array_get(json_object_get(pp, "cls"), 0));
    const char *s = json_string_value(json_array_get(json_object_get(pp, "sep"), 0));
    if (c && !names[BERT_TOKEN_CLS] && !(names[BERT_TOKEN_CLS] = strdup(c)))
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    if (s && !names[BERT_TOKEN_SEP] && !(names[BERT_TOKEN_SEP] = strdup(s)))
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    json_t *v = json_object_get(model, "dropout");
    if (v && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0))
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "%s: BPE dropout is not supported (inference is deterministic)",
                               path);
    if (json_bool(model, "byte_fallback", 0))
        return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                               "%s: BPE byte_fallback is not supported", path);
    static const char *const affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        v = json_object_get(model, affixes[i]);
        if (json_is_string(v) && json_string_length(v) > 0)
            return bert__set_error(err, BERT_EUNSUPPORTED, -1,
                                   "%s: BPE %s is not supported (byte-level BPE has none)", path,
                                   affixes[i]);
    }
    t->bpe->ignore_merges = json_bool(model, "ignore_merges", 0);
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    if (unk && !names[BERT_TOKEN_UNK] && !(names[BERT_TOKEN_UNK] = strdup(unk)))
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    int rc = load_vocab_object(t, json_object_get(model, "vocab"), path, err);
    if (rc)
        return rc;
    /* added tokens outside the model vocabulary get their own ids */
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(j, "added_tokens"), i, a)
    {
        json_t *idv = json_object_get(a, "id");
        if (!json_is_integer(idv) || json_integer_value(idv) < 0 ||
            json_integer_value(idv) >= (json_int_t)(1 << 24))
            return bert__set_error(err, BERT_EFORMAT, -1, "%s: added_tokens[%zu] has no valid id",
                                   path, i);
        if (add_added_json(t, a, (int32_t)json_integer_value(idv)))
            return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    }
    rc = load_merges_json(t, json_object_get(model, "merges"), path, err);
    if (rc)
        return rc;
    build_byte_ids(t);
    return BERT_OK;
}

/* vocab.json + merges.txt, as transformers' RobertaConverter builds the
 * fast tokenizer: ByteLevel(add_prefix_space), RobertaProcessing, and the
 * special tokens of tokenizer_config.json (defaults <s> </s> <unk> <pad>
 * <mask>, <mask> with lstrip). */
int bert__bpe_load_files(bert_tokenizer *t, const char *dir, json_t *cfg, char *names[5],
                         bert_error *err)
{
    size_t dl = strlen(dir);
    char *path = malloc(dl + 32);
    if (!path)
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    t->kind = BT_KIND_BPE;
    int rc = BERT_OK;
    if (!(t->bpe = bpe_new(t))) {
        rc = bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
        goto out;
    }
    snprintf(path, dl + 32, "%s/vocab.json", dir);
    json_t *vocab = NULL;
    if ((rc = load_json_file(path, &vocab, err)))
        goto out;
    rc = load_vocab_object(t, vocab, path, err);
    json_decref(vocab);
    if (rc)
        goto out;
    static const char *const defaults[5] = {"<pad>", "<unk>", "<s>", "</s>", "<mask>"};
    static const char *const keys[5] = {"pad_token", "unk_token", "cls_token", "sep_token",
                                        "mask_token"};
    json_t *dec = json_object_get(cfg, "added_tokens_decoder");
    for (int k = 0; k < 5; k++) {
        json_t *v = json_object_get(cfg, keys[k]);
        const char *s = json_is_string(v) ? json_string_value(v)
                        : json_is_string(json_object_get(v, "content"))
                            ? json_string_value(json_object_get(v, "content"))
                            : defaults[k];
        if (!names[k] && !(names[k] = strdup(s))) {
            rc = bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
            goto out;
        }
    }
    /* the added tokens with their flags: added_tokens_decoder when the
     * config has it, else RobertaTokenizer's defaults */
    if (json_is_object(dec)) {
        const char *key;
        json_t *a;
        json_object_foreach(dec, key, a)
        {
            char *end;
            long id = strtol(key, &end, 10);
            if (*end || id < 0 || id >= (1 << 24)) {
                rc = bert__set_error(err, BERT_EFORMAT, -1,
                                     "%s/tokenizer_config.json: added_tokens_decoder key \"%.20s\" "
                                     "is not an id",
                                     dir, key);
                goto out;
            }
            if (add_added_json(t, a, (int32_t)id)) {
                rc = bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
                goto out;
            }
        }
    }
    t->bpe->add_prefix_space = json_bool(cfg, "add_prefix_space", 0);
    t->bpe->pp_add_prefix_space = t->bpe->add_prefix_space;
    t->bpe->trim_offsets = json_bool(cfg, "trim_offsets", 1);
    snprintf(path, dl + 32, "%s/merges.txt", dir);
    if ((rc = load_merges_txt(t, path, err)))
        goto out;
    build_byte_ids(t);
    /* <mask> strips the spaces before it (RobertaTokenizer's AddedToken
     * default) when no added_tokens_decoder said otherwise */
    if (!json_is_object(dec)) {
        int32_t mid = bert_tokenizer_find(t, names[BERT_TOKEN_MASK], strlen(names[BERT_TOKEN_MASK]));
        if (mid >= 0 && bert__added_add(t, strlen(names[BERT_TOKEN_MASK]), mid, 1, 0, 0)) {
            rc = bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
            goto out;
        }
    }
out:
    free(path);
    return rc;
}
