/*
 * tests/test_tokenizer_parity.c - exact parity with Hugging Face tokenizers
 * on the shared corpus (every line of en, multi, nasty and codepoints, with
 * the bert-base-uncased and bert-base-multilingual-cased vocabularies) and
 * on every fixture's expected.json (tokens, ids, type ids, masks, word ids,
 * offsets in code points and bytes, truncated pairs).
 *
 * Needs ../shared (SHARED_DIR); exits 77 (automake SKIP) without it.
 * PARITY_VERBOSE=N prints up to N mismatches per file (default 5).
 */
#include <CUnit/Basic.h>
#include <jansson.h>
#include <libbert/bert_tokenizer.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"

static const char *shared_dir;
static int verbose = 5;

/* ---- helpers ----------------------------------------------------------- */

/* Reads a gzip'd file through gzip -dc (no zlib dependency). */
static char *slurp_gz(const char *path, size_t *len)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
    FILE *f = popen(cmd, "r");
    if (!f)
        return NULL;
    char *buf = tu_read_stream(f, len);
    if (pclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Splits buf in place into lines ending in '\n' (a final line without one
 * counts too); returns the count and line starts/lengths. */
static size_t split_lines(char *buf, size_t len, char ***starts, size_t **lens)
{
    size_t n = 0, cap = 1024;
    *starts = malloc(cap * sizeof **starts);
    *lens = malloc(cap * sizeof **lens);
    size_t s = 0;
    while (s < len) {
        char *nl = memchr(buf + s, '\n', len - s);
        size_t e = nl ? (size_t)(nl - buf) : len;
        if (n == cap) {
            cap *= 2;
            *starts = realloc(*starts, cap * sizeof **starts);
            *lens = realloc(*lens, cap * sizeof **lens);
        }
        (*starts)[n] = buf + s;
        (*lens)[n] = e - s;
        n++;
        s = e + 1;
    }
    return n;
}

static void print_text(const char *s, size_t len)
{
    fputc('"', stderr);
    for (size_t i = 0; i < len && i < 300; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F || c == '"' || c == '\\')
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputc('"', stderr);
    if (len > 300)
        fprintf(stderr, "...");
    fputc('\n', stderr);
}

/* ---- corpus ------------------------------------------------------------ */

static void corpus_case(const char *name, const char *vocab_kind)
{
    char path[4096];
    const char *vdir = strcmp(vocab_kind, "uncased") == 0   ? "bert-base-uncased"
                       : strcmp(vocab_kind, "roberta") == 0 ? "roberta-base"
                                                            : "bert-base-multilingual-cased";
    snprintf(path, sizeof path, "%s/vocab/%s", shared_dir, vdir);
    bert_tokenizer *t;
    bert_error err;
    int rc = bert_tokenizer_load(path, &t, &err);
    if (rc) {
        fprintf(stderr, "load %s: %s\n", path, err.text);
        CU_FAIL_FATAL("tokenizer load");
    }
    size_t tlen = 0, ilen = 0, olen = 0;
    snprintf(path, sizeof path, "%s/corpus/%s.txt", shared_dir, name);
    char *text = tu_read_file(path, &tlen);
    snprintf(path, sizeof path, "%s/corpus/refs/%s.%s.ids.txt.gz", shared_dir, name, vocab_kind);
    char *ids = slurp_gz(path, &ilen);
    snprintf(path, sizeof path, "%s/corpus/refs/%s.%s.offsets.txt.gz", shared_dir, name,
             vocab_kind);
    struct stat st;
    char *offs = stat(path, &st) == 0 ? slurp_gz(path, &olen) : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ids);
    char **tl, **il, **ol = NULL;
    size_t *tn, *in, *on = NULL;
    size_t nt = split_lines(text, tlen, &tl, &tn);
    size_t ni = split_lines(ids, ilen, &il, &in);
    size_t no = offs ? split_lines(offs, olen, &ol, &on) : 0;
    CU_ASSERT_EQUAL(nt, ni);
    if (offs)
        CU_ASSERT_EQUAL(nt, no);
    bert_encoding *e = bert_encoding_create();
    size_t bad_ids = 0, bad_offs = 0, shown = 0;
    char *got = NULL;
    size_t got_cap = 0;
    for (size_t l = 0; l < nt && l < ni; l++) {
        /* exact-size heap copy so sanitizers see any over-read */
        char *line = malloc(tn[l] ? tn[l] : 1);
        memcpy(line, tl[l], tn[l]);
        rc = bert_tokenizer_encode(t, line, tn[l], NULL, 0, NULL, e, &err);
        if (rc) {
            bad_ids++;
            if (shown++ < (size_t)verbose)
                fprintf(stderr, "%s.%s line %zu: encode failed: %s\n", name, vocab_kind, l + 1,
                        err.text);
            free(line);
            continue;
        }
        size_t need = e->n * 24 + 16;
        if (need > got_cap) {
            got_cap = need * 2;
            got = realloc(got, got_cap);
        }
        size_t g = 0;
        for (size_t k = 0; k < e->n; k++)
            g += (size_t)sprintf(got + g, k ? " %d" : "%d", (int)e->ids[k]);
        if (g != in[l] || memcmp(got, il[l], g) != 0) {
            bad_ids++;
            if (shown++ < (size_t)verbose) {
                fprintf(stderr, "%s.%s line %zu ids differ\n  text: ", name, vocab_kind, l + 1);
                print_text(line, tn[l]);
                fprintf(stderr, "  want: %.*s\n  got:  %.*s\n", (int)(in[l] > 400 ? 400 : in[l]),
                        il[l], (int)(g > 400 ? 400 : g), got);
            }
        } else if (offs && l < no) {
            g = 0;
            for (size_t k = 0; k < e->n; k++)
                g += (size_t)sprintf(got + g, k ? " %lld,%lld" : "%lld,%lld",
                                     (long long)e->offsets[2 * k],
                                     (long long)e->offsets[2 * k + 1]);
            if (g != on[l] || memcmp(got, ol[l], g) != 0) {
                bad_offs++;
                if (shown++ < (size_t)verbose) {
                    fprintf(stderr, "%s.%s line %zu offsets differ\n  text: ", name, vocab_kind,
                            l + 1);
                    print_text(line, tn[l]);
                    fprintf(stderr, "  want: %.*s\n  got:  %.*s\n",
                            (int)(on[l] > 400 ? 400 : on[l]), ol[l], (int)(g > 400 ? 400 : g),
                            got);
                }
            }
        }
        free(line);
    }
    fprintf(stderr, "  %s.txt %s: %zu/%zu lines same ids", name, vocab_kind, nt - bad_ids, nt);
    if (offs)
        fprintf(stderr, ", %zu/%zu same offsets", nt - bad_ids - bad_offs, nt);
    fprintf(stderr, "\n");
    CU_ASSERT_EQUAL(bad_ids, 0);
    CU_ASSERT_EQUAL(bad_offs, 0);
    free(got);
    bert_encoding_free(e);
    bert_tokenizer_free(t);
    free(tl);
    free(tn);
    free(il);
    free(in);
    free(ol);
    free(on);
    free(text);
    free(ids);
    free(offs);
}

#define CORPUS_TEST(name, kind)                                                \
    static void test_##name##_##kind(void) { corpus_case(#name, #kind); }
CORPUS_TEST(en, uncased)
CORPUS_TEST(en, mcased)
CORPUS_TEST(multi, uncased)
CORPUS_TEST(multi, mcased)
CORPUS_TEST(nasty, uncased)
CORPUS_TEST(nasty, mcased)
CORPUS_TEST(codepoints, uncased)
CORPUS_TEST(codepoints, mcased)
CORPUS_TEST(en, roberta)
CORPUS_TEST(multi, roberta)
CORPUS_TEST(nasty, roberta)

/* roberta-base rebuilt from vocab.json + merges.txt (no tokenizer.json):
 * the same ids and offsets on the nasty lines. */
static void test_roberta_files(void)
{
    char path[4096], tmp[] = "/tmp/libbert-bpe-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmp));
    static const char *const files[] = {"vocab.json", "merges.txt"};
    char *abs = realpath(shared_dir, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(abs);
    for (int i = 0; i < 2; i++) {
        char dst[4200];
        snprintf(path, sizeof path, "%s/vocab/roberta-base/%s", abs, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmp, files[i]);
        if (symlink(path, dst) != 0)
            CU_FAIL_FATAL("symlink");
    }
    free(abs);
    bert_tokenizer *a, *b;
    bert_error err;
    snprintf(path, sizeof path, "%s/vocab/roberta-base", shared_dir);
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load(path, &a, &err), BERT_OK);
    if (bert_tokenizer_load(tmp, &b, &err)) {
        fprintf(stderr, "%s\n", err.text);
        CU_FAIL_FATAL("load vocab.json + merges.txt");
    }
    size_t tlen;
    snprintf(path, sizeof path, "%s/corpus/nasty.txt", shared_dir);
    char *text = tu_read_file(path, &tlen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    bert_encoding *ea = bert_encoding_create(), *eb = bert_encoding_create();
    size_t bad = 0, lines = 0;
    for (size_t s = 0; s < tlen;) {
        char *nl = memchr(text + s, '\n', tlen - s);
        size_t e = nl ? (size_t)(nl - text) : tlen;
        int ra = bert_tokenizer_encode(a, text + s, e - s, NULL, 0, NULL, ea, &err);
        int rb = bert_tokenizer_encode(b, text + s, e - s, NULL, 0, NULL, eb, &err);
        lines++;
        if (ra != rb || ea->n != eb->n || memcmp(ea->ids, eb->ids, ea->n * sizeof *ea->ids) ||
            memcmp(ea->offsets, eb->offsets, 2 * ea->n * sizeof *ea->offsets))
            bad++;
        s = e + 1;
    }
    fprintf(stderr, "  vocab.json + merges.txt: %zu/%zu nasty lines as tokenizer.json\n",
            lines - bad, lines);
    CU_ASSERT_EQUAL(bad, 0);
    bert_encoding_free(ea);
    bert_encoding_free(eb);
    bert_tokenizer_free(a);
    bert_tokenizer_free(b);
    free(text);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp, files[i]);
        unlink(path);
    }
    rmdir(tmp);
}

/* ---- fixtures ---------------------------------------------------------- */

/* Compares an int array of the encoding with a JSON array (null = -1). */
static int same_ints(json_t *want, const int32_t *got, size_t n)
{
    if (!json_is_array(want) || json_array_size(want) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(want, i);
        long long w = json_is_null(v) ? -1 : json_integer_value(v);
        if (w != got[i])
            return 0;
    }
    return 1;
}

static int same_pairs(json_t *want, const int64_t *got, size_t n)
{
    if (!json_is_array(want) || json_array_size(want) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(want, i);
        if (json_integer_value(json_array_get(v, 0)) != got[2 * i] ||
            json_integer_value(json_array_get(v, 1)) != got[2 * i + 1])
            return 0;
    }
    return 1;
}

static int same_tokens(json_t *want, const bert_tokenizer *t, const bert_encoding *e)
{
    if (!json_is_array(want) || json_array_size(want) != e->n)
        return 0;
    for (size_t i = 0; i < e->n; i++) {
        const char *tok = bert_tokenizer_token(t, e->ids[i]);
        const char *w = json_string_value(json_array_get(want, i));
        if (!tok || !w || strcmp(tok, w) != 0)
            return 0;
    }
    return 1;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = malloc(n ? n : 1);
    memcpy(d, s, n);
    return d;
}

static void fixture_dir(const char *dir, size_t *n_ex, size_t *n_bad)
{
    char path[4700];
    bert_tokenizer *t;
    bert_error err;
    if (bert_tokenizer_load(dir, &t, &err)) {
        fprintf(stderr, "load %s: %s\n", dir, err.text);
        (*n_ex)++;
        (*n_bad)++;
        return;
    }
    snprintf(path, sizeof path, "%s/expected.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!j) {
        fprintf(stderr, "%s:%d: %s\n", path, je.line, je.text);
        (*n_ex)++;
        (*n_bad)++;
        bert_tokenizer_free(t);
        return;
    }
    bert_encode_params prm = bert_encode_default_params();
    prm.max_length = (size_t)json_integer_value(json_object_get(j, "max_length"));
    bert_encoding *e = bert_encoding_create();
    size_t i;
    json_t *ex;
    json_array_foreach(json_object_get(j, "examples"), i, ex)
    {
        json_t *jt = json_object_get(ex, "text"), *jp = json_object_get(ex, "text_pair");
        size_t tl = json_string_length(jt), pl = json_is_string(jp) ? json_string_length(jp) : 0;
        char *text = dup_bytes(json_string_value(jt), tl);
        char *pair = json_is_string(jp) ? dup_bytes(json_string_value(jp), pl) : NULL;
        (*n_ex)++;
        int rc = bert_tokenizer_encode(t, text, tl, pair, pl, &prm, e, &err);
        const char *what = NULL;
        if (rc)
            what = err.text;
        else if (!same_ints(json_object_get(ex, "input_ids"), e->ids, e->n))
            what = "input_ids";
        else if (!same_tokens(json_object_get(ex, "tokens"), t, e))
            what = "tokens";
        else if (!same_ints(json_object_get(ex, "token_type_ids"), e->type_ids, e->n))
            what = "token_type_ids";
        else if (!same_ints(json_object_get(ex, "attention_mask"), e->attention_mask, e->n))
            what = "attention_mask";
        else if (!same_ints(json_object_get(ex, "special_tokens_mask"), e->special_mask, e->n))
            what = "special_tokens_mask";
        else if (!same_ints(json_object_get(ex, "word_ids"), e->word_ids, e->n))
            what = "word_ids";
        else if (!same_ints(json_object_get(ex, "sequence_ids"), e->seq_ids, e->n))
            what = "sequence_ids";
        else if (!same_pairs(json_object_get(ex, "offsets"), e->offsets, e->n))
            what = "offsets";
        else if (!same_pairs(json_object_get(ex, "offsets_utf8"), e->byte_offsets, e->n))
            what = "offsets_utf8";
        else if ((size_t)json_integer_value(json_object_get(ex, "untruncated_num_tokens")) !=
                 e->n + e->n_overflow_first + e->n_overflow_second)
            what = "untruncated_num_tokens";
        if (what) {
            (*n_bad)++;
            fprintf(stderr, "%s example %zu: %s differ\n  text: ", dir, i, what);
            print_text(text, tl);
            if (pair) {
                fprintf(stderr, "  pair: ");
                print_text(pair, pl);
            }
            json_t *wid = json_object_get(ex, "input_ids");
            size_t k0 = 0;
            while (k0 < e->n && k0 < json_array_size(wid) &&
                   json_integer_value(json_array_get(wid, k0)) == e->ids[k0])
                k0++;
            k0 = k0 > 5 ? k0 - 5 : 0;
            fprintf(stderr, "  n want %zu got %zu; from token %zu\n  want:", json_array_size(wid),
                    e->n, k0);
            for (size_t k = k0; k < json_array_size(wid) && k < k0 + 20; k++)
                fprintf(stderr, " %d", (int)json_integer_value(json_array_get(wid, k)));
            fprintf(stderr, "\n  got: ");
            for (size_t k = k0; k < e->n && k < k0 + 20; k++)
                fprintf(stderr, " %d", (int)e->ids[k]);
            fprintf(stderr, "\n");
        }
        free(text);
        free(pair);
    }
    bert_encoding_free(e);
    json_decref(j);
    bert_tokenizer_free(t);
}

/* Every fixture directory of one folder; returns the number of
 * directories (0 when the folder is absent). */
static size_t fixture_folder(const char *folder, size_t *n_ex, size_t *n_bad)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", shared_dir, folder);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *de;
    size_t n_dirs = 0;
    while ((de = readdir(d))) {
        char sub[4600];
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s/expected.json", path, de->d_name);
        if (stat(sub, &st) != 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        n_dirs++;
        fixture_dir(sub, n_ex, n_bad);
    }
    closedir(d);
    return n_dirs;
}

static void test_fixtures(void)
{
    size_t n_ex = 0, n_bad = 0;
    size_t n_dirs = fixture_folder("fixtures", &n_ex, &n_bad);
    CU_ASSERT(n_dirs >= 5);
    /* the RoBERTa and ELECTRA fixtures live in a folder of their own */
    n_dirs += fixture_folder("fixtures-roberta-electra", &n_ex, &n_bad);
    fprintf(stderr, "  fixtures: %zu/%zu examples identical in %zu directories\n", n_ex - n_bad,
            n_ex, n_dirs);
    CU_ASSERT(n_ex > 0);
    CU_ASSERT_EQUAL(n_bad, 0);
}

/* ---- runner ------------------------------------------------------------ */

int main(int argc, char **argv)
{
    static char buf[4096];
    shared_dir = getenv("SHARED_DIR");
    if (!shared_dir) {
        const char *top = getenv("top_srcdir");
        snprintf(buf, sizeof buf, "%s/../shared", top ? top : ".");
        shared_dir = buf;
    }
    struct stat st;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/corpus/refs", shared_dir);
    if (stat(probe, &st) != 0) {
        printf("SKIP: %s not found; the parity test needs ../shared\n", probe);
        return 77;
    }
    if (getenv("PARITY_VERBOSE"))
        verbose = atoi(getenv("PARITY_VERBOSE"));
    static const tu_test tests[] = {
        {"fixtures", test_fixtures},
        {"en_uncased", test_en_uncased},
        {"en_mcased", test_en_mcased},
        {"multi_uncased", test_multi_uncased},
        {"multi_mcased", test_multi_mcased},
        {"nasty_uncased", test_nasty_uncased},
        {"nasty_mcased", test_nasty_mcased},
        {"codepoints_uncased", test_codepoints_uncased},
        {"codepoints_mcased", test_codepoints_mcased},
        {"en_roberta", test_en_roberta},
        {"multi_roberta", test_multi_roberta},
        {"nasty_roberta", test_nasty_roberta},
        {"roberta_files", test_roberta_files},
    };
    return tu_run_suite("parity", NULL, NULL, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
