/*
 * tokenizer/vocab.c - loading a tokenizer: vocab.txt (+ tokenizer_config.json)
 * or tokenizer.json of the BERT WordPiece kind; the token <-> id tables and
 * the byte trie used by WordPiece.
 */
#include "tokenizer/tokenizer_internal.h"
#include "libbert/internal.h"
#include "libbert/readall.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int bert__set_error(bert_error *err, int status, long long byte_offset,
                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bert__verr(err, status, byte_offset, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- hashing ----------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t len)
{
    /* FNV-1a, then a multiply to spread the low bits used by the mask. */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ULL;
    }
    return h * 0x9E3779B97F4A7C15ULL;
}

static int32_t vocab_lookup(const bert_tokenizer *t, const char *s, size_t len)
{
    if (!t->hslots)
        return -1;
    size_t i = (size_t)(hash_bytes(s, len) >> 20) & t->hmask;
    for (;;) {
        int32_t v = t->hslots[i];
        if (v == 0)
            return -1;
        int32_t id = v - 1;
        if (t->tok_len[id] == len && memcmp(t->pool + t->tok_off[id], s, len) == 0)
            return id;
        i = (i + 1) & t->hmask;
    }
}

static int grow_ids(bert_tokenizer *t, size_t need)
{
    if (need > t->n_ids)
        t->n_ids = need;
    if (need <= t->ids_cap)
        return BERT_OK;
    size_t cap = t->ids_cap ? t->ids_cap : 1024;
    while (cap < need)
        cap *= 2;
    uint32_t *o = realloc(t->tok_off, cap * sizeof *o);
    if (!o)
        return BERT_ENOMEM;
    t->tok_off = o;
    uint32_t *l = realloc(t->tok_len, cap * sizeof *l);
    if (!l)
        return BERT_ENOMEM;
    t->tok_len = l;
    for (size_t i = t->ids_cap; i < cap; i++) {
        t->tok_off[i] = UINT32_MAX;
        t->tok_len[i] = 0;
    }
    t->ids_cap = cap;
    return BERT_OK;
}

static int rehash(bert_tokenizer *t, size_t cap)
{
    int32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return BERT_ENOMEM;
    size_t mask = cap - 1;
    for (size_t id = 0; id < t->n_ids; id++) {
        if (t->tok_off[id] == UINT32_MAX)
            continue;
        size_t i = (size_t)(hash_bytes(t->pool + t->tok_off[id], t->tok_len[id]) >> 20) & mask;
        int dup = 0;
        while (slots[i]) {
            int32_t o = slots[i] - 1;
            if (t->tok_len[o] == t->tok_len[id] &&
                memcmp(t->pool + t->tok_off[o], t->pool + t->tok_off[id], t->tok_len[id]) == 0) {
                slots[i] = (int32_t)id + 1; /* the later id wins */
                dup = 1;
                break;
            }
            i = (i + 1) & mask;
        }
        if (!dup)
            slots[i] = (int32_t)id + 1;
    }
    free(t->hslots);
    t->hslots = slots;
    t->hmask = mask;
    return BERT_OK;
}

int bert__vocab_add(bert_tokenizer *t, const char *s, size_t len, int32_t id)
{
    if (id < 0 || len > UINT32_MAX / 2)
        return BERT_EINVAL;
    int rc = grow_ids(t, (size_t)id + 1);
    if (rc)
        return rc;
    if (t->pool_len + len + 1 > t->pool_cap) {
        size_t cap = t->pool_cap ? t->pool_cap : 65536;
        while (cap < t->pool_len + len + 1)
            cap *= 2;
        if (cap > UINT32_MAX)
            return BERT_ENOMEM;
        char *p = realloc(t->pool, cap);
        if (!p)
            return BERT_ENOMEM;
        t->pool = p;
        t->pool_cap = cap;
    }
    memcpy(t->pool + t->pool_len, s, len);
    t->pool[t->pool_len + len] = '\0';
    t->tok_off[id] = (uint32_t)t->pool_len;
    t->tok_len[id] = (uint32_t)len;
    t->pool_len += len + 1;
    t->n_tokens++;
    return BERT_OK;
}

/* ---- trie -------------------------------------------------------------- */

#define trie_slot bt_trie_slot

#define trie_get bt_trie_get

static int trie_new_node(bt_trie *tr, int32_t *out)
{
    if (tr->n_nodes == tr->cap_nodes) {
        size_t cap = tr->cap_nodes ? tr->cap_nodes * 2 : 4096;
        int32_t *n = realloc(tr->node_id, cap * sizeof *n);
        if (!n)
            return BERT_ENOMEM;
        tr->node_id = n;
        tr->cap_nodes = cap;
    }
    tr->node_id[tr->n_nodes] = -1;
    *out = (int32_t)tr->n_nodes++;
    return BERT_OK;
}

/* The table is sized up front from the total token bytes (an upper bound
 * on transitions), so it never needs to grow. */
static int trie_insert(bt_trie *tr, const uint8_t *s, size_t len, int32_t id)
{
    int32_t node = 0;
    for (size_t p = 0; p < len; p++) {
        uint64_t key = ((uint64_t)(node + 1) << 8) | s[p];
        size_t i = trie_slot(tr, key);
        while (tr->keys[i] && tr->keys[i] != key)
            i = (i + 1) & tr->mask;
        if (tr->keys[i] == key) {
            node = tr->vals[i];
        } else {
            int32_t child;
            int rc = trie_new_node(tr, &child);
            if (rc)
                return rc;
            tr->keys[i] = key;
            tr->vals[i] = child;
            tr->used++;
            node = child;
        }
    }
    tr->node_id[node] = id;
    return BERT_OK;
}

static int trie_build(bert_tokenizer *t)
{
    bt_trie *tr = &t->trie;
    size_t total = 16;
    for (size_t id = 0; id < t->n_ids; id++)
        if (t->tok_off[id] != UINT32_MAX)
            total += t->tok_len[id];
    size_t cap = 1024;
    while (cap < total * 2)
        cap *= 2;
    tr->keys = calloc(cap, sizeof *tr->keys);
    tr->vals = malloc(cap * sizeof *tr->vals);
    if (!tr->keys || !tr->vals)
        return BERT_ENOMEM;
    tr->cap = cap;
    tr->mask = cap - 1;
    int32_t root;
    int rc = trie_new_node(tr, &root);
    if (rc)
        return rc;
    for (size_t id = 0; id < t->n_ids; id++) {
        if (t->tok_off[id] == UINT32_MAX || t->tok_len[id] == 0)
            continue;
        const char *s = t->pool + t->tok_off[id];
        /* Only the id that lookups return goes in (duplicates: last wins),
         * and only valid UTF-8: the reference's vocabulary keys are Rust
         * strings, and matches must end on character boundaries. */
        if (vocab_lookup(t, s, t->tok_len[id]) != (int32_t)id)
            continue;
        if (bert__utf8_valid_prefix((const uint8_t *)s, t->tok_len[id]) != t->tok_len[id])
            continue;
        rc = trie_insert(tr, (const uint8_t *)s, t->tok_len[id], (int32_t)id);
        if (rc)
            return rc;
    }
    for (int b = 0; b < 256; b++)
        tr->root_next[b] = trie_get(tr, 0, (uint8_t)b);
    int32_t node = 0;
    for (size_t p = 0; p < t->prefix_len && node >= 0; p++)
        node = trie_get(tr, node, (uint8_t)t->prefix[p]);
    tr->cont_root = node;
    for (int b = 0; b < 256; b++)
        tr->cont_next[b] = node >= 0 ? trie_get(tr, node, (uint8_t)b) : -1;
    return BERT_OK;
}

/* ---- tokenizer object -------------------------------------------------- */

bert_tokenizer *bert__tokenizer_new(void)
{
    bert_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->lowercase = 1;
    t->strip_accents = -1;
    t->chinese = 1;
    t->clean_text = 1;
    t->max_chars_per_word = 100;
    memcpy(t->prefix, "##", 3);
    t->prefix_len = 2;
    for (int i = 0; i < 5; i++)
        t->special[i] = -1;
    return t;
}

void bert_tokenizer_free(bert_tokenizer *t)
{
    if (!t)
        return;
    free(t->pool);
    free(t->tok_off);
    free(t->tok_len);
    free(t->hslots);
    free(t->trie.node_id);
    free(t->trie.keys);
    free(t->trie.vals);
    free(t->added);
    bert__bpe_free(t->bpe);
    free(t);
}

static const char *const special_default[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

int bert__added_add(bert_tokenizer *t, size_t len, int32_t id, int lstrip, int rstrip,
                    int single_word)
{
    if (len == 0 || id < 0)
        return BERT_OK;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) {
            t->added[i].lstrip = (uint8_t)(lstrip != 0);
            t->added[i].rstrip = (uint8_t)(rstrip != 0);
            t->added[i].single_word = (uint8_t)(single_word != 0);
            return BERT_OK;
        }
    bt_added *a = realloc(t->added, (t->n_added + 1) * sizeof *a);
    if (!a)
        return BERT_ENOMEM;
    t->added = a;
    /* text is re-pointed into the pool in finish(); keep the id for now */
    a[t->n_added].text = NULL;
    a[t->n_added].len = len;
    a[t->n_added].id = id;
    a[t->n_added].lstrip = (uint8_t)(lstrip != 0);
    a[t->n_added].rstrip = (uint8_t)(rstrip != 0);
    a[t->n_added].single_word = (uint8_t)(single_word != 0);
    t->n_added++;
    return BERT_OK;
}

/* A special token registered by name: flags of an earlier registration
 * (tokenizer.json's added_tokens) are kept. */
static int add_added(bert_tokenizer *t, const char *s, size_t len, int32_t id)
{
    (void)s;
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id)
            return BERT_OK;
    return bert__added_add(t, len, id, 0, 0, 0);
}

static size_t hash_cap(const bert_tokenizer *t)
{
    size_t cap = 1024;
    while (cap < t->n_tokens * 2 + 2)
        cap *= 2;
    return cap;
}

int bert__tokenizer_hash(bert_tokenizer *t, bert_error *err)
{
    if (rehash(t, hash_cap(t)) != BERT_OK)
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory building the vocabulary");
    return BERT_OK;
}

int bert__tokenizer_finish(bert_tokenizer *t, bert_error *err)
{
    if (rehash(t, hash_cap(t)) != BERT_OK ||
        (t->kind == BT_KIND_WORDPIECE && trie_build(t) != BERT_OK))
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory building the vocabulary");
    if (t->strip_accents < 0)
        t->strip_accents = t->lowercase;
    for (size_t i = 0; i < t->n_added; i++) {
        int32_t id = t->added[i].id;
        t->added[i].text = t->pool + t->tok_off[id];
        t->added_first[(uint8_t)t->added[i].text[0]] = 1;
    }
    if (t->kind == BT_KIND_WORDPIECE && t->special[BERT_TOKEN_UNK] < 0)
        return bert__set_error(err, BERT_EFORMAT, -1,
                               "the vocabulary has no unknown token ([UNK], or the "
                               "unk_token tokenizer_config.json names)");
    for (int c = 0; c < 128; c++) {
        unsigned cls = bert__cp_class((uint32_t)c);
        if (!t->clean_text)
            cls &= ~(unsigned)BT_CC_DROP;
        if (cls & BT_CC_DROP)
            cls = BT_CC_DROP;
        t->ascii_class[c] = (uint8_t)cls;
        t->ascii_norm[c] = (uint8_t)((t->lowercase && c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    return BERT_OK;
}

/* Resolves the special-token strings to ids and registers them as tokens
 * matched on the raw text (transformers adds them with normalized=false). */
static int set_specials(bert_tokenizer *t, char *names[5])
{
    for (int i = 0; i < 5; i++) {
        static const char *const bpe_default[5] = {"<pad>", "<unk>", "<s>", "</s>", "<mask>"};
        const char *s =
            names[i] ? names[i] : t->kind == BT_KIND_BPE ? bpe_default[i] : special_default[i];
        int32_t id = -1;
        /* lookups need the hash table; it is built after all tokens are
         * in, so scan linearly here (five tokens, once per load) */
        size_t len = strlen(s);
        for (size_t k = 0; k < t->n_ids && id < 0; k++)
            if (t->tok_off[k] != UINT32_MAX && t->tok_len[k] == len &&
                memcmp(t->pool + t->tok_off[k], s, len) == 0)
                id = (int32_t)k;
        /* duplicates: the last id wins, as for every lookup */
        for (size_t k = id >= 0 ? (size_t)id + 1 : t->n_ids; k < t->n_ids; k++)
            if (t->tok_off[k] != UINT32_MAX && t->tok_len[k] == len &&
                memcmp(t->pool + t->tok_off[k], s, len) == 0)
                id = (int32_t)k;
        t->special[i] = id;
        if (id >= 0) {
            int rc = add_added(t, s, len, id);
            if (rc)
                return rc;
        }
    }
    return BERT_OK;
}

/* ---- files ------------------------------------------------------------- */

static int read_file(const char *path, char **out, size_t *len, bert_error *err)
{
    int odd;
    FILE *f = bert__fopen_regular(path, &odd);
    if (!f && odd)
        return bert__set_error(err, BERT_EFORMAT, -1, "%s: not a regular file", path);
    if (!f)
        return bert__set_error(err, errno == ENOENT ? BERT_EMISSING : BERT_EIO, -1,
                               "%s: %s", path, strerror(errno));
    int rc = bert__read_all(f, 0, out, len);
    fclose(f);
    if (rc == BERT_ENOMEM)
        return bert__set_error(err, rc, -1, "%s: out of memory", path);
    if (rc)
        return bert__set_error(err, rc, -1, "%s: read error", path);
    return BERT_OK;
}

static int load_vocab_txt(bert_tokenizer *t, const char *path, bert_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    /* One token per line, split on '\n' only: real vocabularies contain
     * U+2028 and other line-breaking characters as tokens.  A '\r' before
     * the '\n' is part of a CRLF line end (transformers reads the file in
     * text mode, which drops it), not of the token. */
    size_t start = 0;
    int32_t id = 0;
    while (start < len) {
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        size_t tl = end - start;
        if (nl && tl > 0 && buf[end - 1] == '\r')
            tl--;
        rc = bert__vocab_add(t, buf + start, tl, id++);
        if (rc) {
            free(buf);
            return bert__set_error(err, rc, -1, "%s: out of memory", path);
        }
        start = end + 1;
    }
    free(buf);
    if (id == 0)
        return bert__set_error(err, BERT_EFORMAT, -1, "%s: empty vocabulary", path);
    return BERT_OK;
}

/* Reads and parses a JSON object file with jansson flags `flags` (on top of
 * JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL).  A read error or a file that is
 * not regular is reported as such, never as a parse position. */
static int load_json(const char *path, size_t flags, json_t **out, bert_error *err)
{
    json_error_t je;
    char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | flags, &je);
    free(buf);
    if (!j)
        return bert__set_error(err, BERT_EFORMAT, -1, "%s:%d:%d: %s", path, je.line,
                               je.column, je.text);
    if (!json_is_object(j)) {
        json_decref(j);
        return bert__set_error(err, BERT_EFORMAT, -1, "%s: not a JSON object", path);
    }
    *out = j;
    return BERT_OK;
}

/* A token entry of tokenizer_config.json: a string or {"content": ...}. */
static const char *json_token_str(json_t *v)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_object(v) && json_is_string(json_object_get(v, "content")))
        return json_string_value(json_object_get(v, "content"));
    return NULL;
}

static int json_flag(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_boolean(v))
        return json_is_true(v);
    return dflt;
}

/* tokenizer_config.json: flags, model_max_length and the special tokens. */
static void apply_config(bert_tokenizer *t, json_t *cfg, char *names[5])
{
    static const char *const keys[5] = {"pad_token", "unk_token", "cls_token", "sep_token",
                                        "mask_token"};
    t->lowercase = json_flag(cfg, "do_lower_case", t->lowercase);
    t->chinese = json_flag(cfg, "tokenize_chinese_chars", t->chinese);
    json_t *sa = json_object_get(cfg, "strip_accents");
    if (json_is_boolean(sa))
        t->strip_accents = json_is_true(sa);
    json_t *mml = json_object_get(cfg, "model_max_length");
    if (json_is_integer(mml) && json_integer_value(mml) > 0 &&
        json_integer_value(mml) < 1000000000)
        t->model_max_length = (size_t)json_integer_value(mml);
    else if (json_is_real(mml) && json_real_value(mml) > 0 && json_real_value(mml) < 1e9)
        t->model_max_length = (size_t)json_real_value(mml);
    for (int i = 0; i < 5; i++) {
        const char *s = json_token_str(json_object_get(cfg, keys[i]));
        if (s && !names[i])
            names[i] = strdup(s);
    }
}

static int load_tokenizer_json(bert_tokenizer *t, const char *path, char *names[5],
                               bert_error *err)
{
    json_t *j;
    int rc = load_json(path, 0, &j, err);
    if (rc)
        return rc;
    rc = BERT_EUNSUPPORTED;
    json_t *model = json_object_get(j, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    /* Files of 2020 have no model type: recognise the kind by its keys. */
    if (json_is_object(model) && !type) {
        if (json_object_get(model, "merges"))
            type = "BPE";
        else if (json_is_array(json_object_get(model, "vocab")))
            type = "Unigram";
        else if (json_object_get(model, "continuing_subword_prefix") ||
                 json_object_get(model, "max_input_chars_per_word"))
            type = "WordPiece";
    }
    if (!json_is_object(model) || !type) {
        bert__set_error(err, BERT_EFORMAT, -1,
                        "%s: no \"model\" object of a known kind (a \"type\", or the keys of "
                        "WordPiece or BPE)",
                        path);
        rc = BERT_EFORMAT;
        goto out;
    }
    if (strcmp(type, "BPE") == 0) {
        rc = bert__bpe_load_json(t, j, path, names, err);
        goto out;
    }
    if (strcmp(type, "WordPiece") != 0) {
        bert__set_error(err, rc, -1,
                        "%s: model type \"%s\" is not supported; libbert loads WordPiece "
                        "(BERT, DistilBERT, ELECTRA) and byte-level BPE (GPT-2, RoBERTa)%s",
                        path, type,
                        strcmp(type, "Unigram") == 0
                            ? " tokenizers; Unigram (SentencePiece, e.g. XLM-RoBERTa) is not "
                              "supported"
                            : "");
        goto out;
    }
    json_t *norm = json_object_get(j, "normalizer");
    if (!json_is_null(norm) && norm) {
        const char *nt = json_string_value(json_object_get(norm, "type"));
        if (!nt || strcmp(nt, "BertNormalizer") != 0) {
            bert__set_error(err, rc, -1,
                            "%s: normalizer \"%s\" is not supported (only BertNormalizer)", path,
                            nt ? nt : "?");
            goto out;
        }
        t->clean_text = json_flag(norm, "clean_text", 1);
        t->chinese = json_flag(norm, "handle_chinese_chars", 1);
        t->lowercase = json_flag(norm, "lowercase", 1);
        json_t *sa = json_object_get(norm, "strip_accents");
        t->strip_accents = json_is_boolean(sa) ? json_is_true(sa) : -1;
    } else {
        t->clean_text = t->chinese = t->lowercase = 0;
        t->strip_accents = 0;
    }
    json_t *pre = json_object_get(j, "pre_tokenizer");
    const char *pt = json_string_value(json_object_get(pre, "type"));
    if (!pt || strcmp(pt, "BertPreTokenizer") != 0) {
        bert__set_error(err, rc, -1,
                        "%s: pre_tokenizer \"%s\" is not supported (only BertPreTokenizer)",
                        path, pt ? pt : "null");
        goto out;
    }
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab) || json_object_size(vocab) == 0) {
        bert__set_error(err, BERT_EFORMAT, -1, "%s: model.vocab is missing or empty", path);
        rc = BERT_EFORMAT;
        goto out;
    }
    const char *key;
    size_t klen;
    json_t *val;
    void *tmp;
    json_object_keylen_foreach_safe(vocab, tmp, key, klen, val)
    {
        if (!json_is_integer(val) || json_integer_value(val) < 0 ||
            json_integer_value(val) > INT32_MAX - 1) {
            bert__set_error(err, BERT_EFORMAT, -1, "%s: bad id for token \"%.40s\"", path, key);
            rc = BERT_EFORMAT;
            goto out;
        }
        if (bert__vocab_add(t, key, klen, (int32_t)json_integer_value(val))) {
            bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
            rc = BERT_ENOMEM;
            goto out;
        }
    }
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    if (unk && !names[BERT_TOKEN_UNK])
        names[BERT_TOKEN_UNK] = strdup(unk);
    json_t *pfx = json_object_get(model, "continuing_subword_prefix");
    if (json_is_string(pfx)) {
        size_t n = json_string_length(pfx);
        if (n >= sizeof t->prefix) {
            bert__set_error(err, BERT_EFORMAT, -1, "%s: continuing_subword_prefix too long", path);
            rc = BERT_EFORMAT;
            goto out;
        }
        memcpy(t->prefix, json_string_value(pfx), n + 1);
        t->prefix_len = n;
    }
    json_t *mc = json_object_get(model, "max_input_chars_per_word");
    if (json_is_integer(mc) && json_integer_value(mc) >= 0)
        t->max_chars_per_word = (size_t)json_integer_value(mc);
    /* Added tokens are matched on the raw text; those outside the model
     * vocabulary get their own ids. */
    json_t *added = json_object_get(j, "added_tokens");
    size_t i;
    json_t *a;
    json_array_foreach(added, i, a)
    {
        json_t *content = json_object_get(a, "content");
        json_t *idv = json_object_get(a, "id");
        if (!json_is_string(content) || !json_is_integer(idv) || json_integer_value(idv) < 0 ||
            json_integer_value(idv) > INT32_MAX - 1)
            continue;
        const char *s = json_string_value(content);
        size_t n = json_string_length(content);
        int32_t id = (int32_t)json_integer_value(idv);
        if ((size_t)id >= t->n_ids || t->tok_off[id] == UINT32_MAX) {
            if (bert__vocab_add(t, s, n, id)) {
                rc = bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
                goto out;
            }
        }
        if (add_added(t, s, n, id)) {
            rc = bert__set_error(err, BERT_ENOMEM, -1, "%s: out of memory", path);
            goto out;
        }
    }
    /* The post-processor names [CLS] and [SEP]. */
    json_t *pp = json_object_get(j, "post_processor");
    const char *ppt = json_string_value(json_object_get(pp, "type"));
    if (ppt && strcmp(ppt, "BertProcessing") == 0) {
        const char *c = json_string_value(json_array_get(json_object_get(pp, "cls"), 0));
        const char *s = json_string_value(json_array_get(json_object_get(pp, "sep"), 0));
        if (c && !names[BERT_TOKEN_CLS])
            names[BERT_TOKEN_CLS] = strdup(c);
        if (s && !names[BERT_TOKEN_SEP])
            names[BERT_TOKEN_SEP] = strdup(s);
    }
    rc = BERT_OK;
out:
    json_decref(j);
    return rc;
}

static int path_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* src: the vocabulary file read, named in the messages of the checks. */
static int finish_load(bert_tokenizer *t, char *names[5], bert_tokenizer **out, bert_error *err,
                       int rc, const char *src)
{
    if (rc == BERT_OK) {
        rc = set_specials(t, names);
        if (rc)
            bert__set_error(err, rc, -1, "out of memory");
    }
    if (rc == BERT_OK) {
        rc = bert__tokenizer_finish(t, err);
        if (rc && err && src) {
            char msg[sizeof err->text];
            snprintf(msg, sizeof msg, "%s", err->text);
            bert__set_error(err, rc, -1, "%s: %s", src, msg);
        }
    }
    for (int i = 0; i < 5; i++)
        free(names[i]);
    if (rc) {
        bert_tokenizer_free(t);
        *out = NULL;
        return rc;
    }
    *out = t;
    return BERT_OK;
}

int bert_tokenizer_load(const char *dir, bert_tokenizer **out, bert_error *err)
{
    if (!out)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_load: out is NULL");
    *out = NULL;
    if (!dir)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_load: dir is NULL");
    size_t dl = strlen(dir);
    char *path = malloc(dl + 32);
    if (!path)
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    bert_tokenizer *t = bert__tokenizer_new();
    char *names[5] = {0};
    int rc = BERT_OK;
    if (!t) {
        free(path);
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    }
    json_t *cfg = NULL;
    snprintf(path, dl + 32, "%s/tokenizer_config.json", dir);
    if (path_exists(path)) {
        /* transformers writes "no limit" as model_max_length
         * 1000000000000000019884624838656 (int(1e30)), too big for a
         * json_int_t: numbers are read as doubles (apply_config treats
         * 1e9 and more as no limit) */
        rc = load_json(path, JSON_DECODE_INT_AS_REAL, &cfg, err);
        if (rc)
            goto done;
    }
    snprintf(path, dl + 32, "%s/tokenizer.json", dir);
    if (path_exists(path)) {
        rc = load_tokenizer_json(t, path, names, err);
        /* only model_max_length and special token names come from the
         * config: tokenizer.json's normalizer is authoritative */
        if (rc == BERT_OK && cfg) {
            bert_tokenizer tmp = *t;
            apply_config(&tmp, cfg, names);
            t->model_max_length = tmp.model_max_length;
            /* transformers' RobertaTokenizerFast makes the pre-tokenizer
             * and post-processor follow the config's flags */
            if (t->kind == BT_KIND_BPE) {
                t->bpe->add_prefix_space =
                    json_flag(cfg, "add_prefix_space", t->bpe->add_prefix_space);
                t->bpe->pp_add_prefix_space =
                    json_flag(cfg, "add_prefix_space", t->bpe->pp_add_prefix_space);
                t->bpe->trim_offsets = json_flag(cfg, "trim_offsets", t->bpe->trim_offsets);
            }
        }
    } else if (snprintf(path, dl + 32, "%s/merges.txt", dir) > 0 && path_exists(path)) {
        rc = bert__bpe_load_files(t, dir, cfg, names, err);
        if (rc == BERT_OK && cfg) {
            bert_tokenizer tmp = *t;
            apply_config(&tmp, cfg, names);
            t->model_max_length = tmp.model_max_length;
        }
    } else {
        if (cfg)
            apply_config(t, cfg, names);
        snprintf(path, dl + 32, "%s/vocab.txt", dir);
        rc = load_vocab_txt(t, path, err);
        if (rc == BERT_EMISSING) {
            snprintf(path, dl + 32, "%s/sentencepiece.bpe.model", dir);
            if (path_exists(path))
                rc = bert__set_error(err, BERT_EUNSUPPORTED, -1,
                                     "%s: a SentencePiece model (XLM-RoBERTa's Unigram) is not "
                                     "supported; libbert loads WordPiece and byte-level BPE",
                                     path);
            else
                bert__set_error(err, rc, -1,
                                "%s: no tokenizer.json, vocab.txt or vocab.json + merges.txt "
                                "found",
                                dir);
        }
    }
done:
    json_decref(cfg);
    rc = finish_load(t, names, out, err, rc, path);
    free(path);
    return rc;
}

int bert_tokenizer_load_vocab(const char *vocab_txt, int lowercase, int strip_accents,
                              int tokenize_chinese_chars, bert_tokenizer **out,
                              bert_error *err)
{
    if (!out)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_load_vocab: out is NULL");
    *out = NULL;
    if (!vocab_txt)
        return bert__set_error(err, BERT_EINVAL, -1, "bert_tokenizer_load_vocab: path is NULL");
    bert_tokenizer *t = bert__tokenizer_new();
    char *names[5] = {0};
    if (!t)
        return bert__set_error(err, BERT_ENOMEM, -1, "out of memory");
    t->lowercase = lowercase != 0;
    t->strip_accents = strip_accents < 0 ? -1 : strip_accents != 0;
    t->chinese = tokenize_chinese_chars != 0;
    int rc = load_vocab_txt(t, vocab_txt, err);
    return finish_load(t, names, out, err, rc, vocab_txt);
}

/* ---- accessors --------------------------------------------------------- */

size_t bert_tokenizer_vocab_size(const bert_tokenizer *t)
{
    return t ? t->n_ids : 0;
}

const char *bert_tokenizer_token(const bert_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n_ids || t->tok_off[id] == UINT32_MAX)
        return NULL;
    return t->pool + t->tok_off[id];
}

int32_t bert_tokenizer_find(const bert_tokenizer *t, const char *tok, size_t len)
{
    if (!t || (!tok && len))
        return -1;
    return vocab_lookup(t, tok, len);
}

int32_t bert_tokenizer_special(const bert_tokenizer *t, bert_special_token which)
{
    if (!t || (int)which < 0 || (int)which >= 5)
        return -1;
    return t->special[which];
}

size_t bert_tokenizer_model_max_length(const bert_tokenizer *t)
{
    return t ? t->model_max_length : 0;
}

bert_tokenizer_kind bert_tokenizer_get_kind(const bert_tokenizer *t)
{
    return t && t->kind == BT_KIND_BPE ? BERT_TOKENIZER_BPE : BERT_TOKENIZER_WORDPIECE;
}

int bert_tokenizer_lowercase(const bert_tokenizer *t)
{
    return t ? t->lowercase : 0;
}

int bert_tokenizer_strip_accents(const bert_tokenizer *t)
{
    return t ? t->strip_accents : 0;
}
