/* test_words.c - bert_tokenizer_encode_words against transformers'
 * is_split_into_words=True semantics, built from the text encoder:
 *  - words without spaces give the tokens (ids, type ids, special mask) of
 *    the text of the words joined by single spaces; word_ids are the
 *    word's index (specials -1); offsets are the joined text's minus the
 *    word's start, in code points and bytes (offsets within each word);
 *  - a word that still splits ("New York", "don't") keeps one word id, with
 *    offsets within it; an empty word gives no token but keeps its index;
 *  - pairs: the pair's words count from 0 again, type and seq ids 1;
 *    truncation (longest_first, only_second) and padding as for the
 *    joined texts;
 *  - errors: invalid UTF-8 names the word (byte offset within it), NULL
 *    words, a byte-level BPE tokenizer (BERT_EUNSUPPORTED).
 * Tokenizers: the bert-seq-uncased and bert-token-cased fixtures of
 * $SHARED_DIR/fixtures, roberta-seq of $SHARED_DIR/fixtures-roberta-electra
 * (skips with 77 when the first is absent). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert_tokenizer.h"
#include "tests/testutil.h"

static char shared[4096];
static bert_tokenizer *uncased, *cased;

static bert_tokenizer *load(const char *sub)
{
    char dir[4200];
    bert_tokenizer *t = NULL;
    bert_error err;
    snprintf(dir, sizeof dir, "%s/%s", shared, sub);
    if (bert_tokenizer_load(dir, &t, &err) != BERT_OK)
        return NULL;
    return t;
}

static int setup(void)
{
    uncased = load("fixtures/bert-seq-uncased");
    cased = load("fixtures/bert-token-cased");
    return uncased && cased ? 0 : -1;
}

static int teardown(void)
{
    bert_tokenizer_free(uncased);
    bert_tokenizer_free(cased);
    return 0;
}

static int64_t cp_len(const char *s, size_t n)
{
    int64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* words joined by single spaces into buf; the starts of each word in
 * bytes and code points. */
static size_t join(const char *const *w, size_t n, char *buf, int64_t *bstart,
                   int64_t *cstart)
{
    size_t k = 0;
    int64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            buf[k++] = ' ';
            c++;
        }
        size_t l = strlen(w[i]);
        bstart[i] = (int64_t)k;
        cstart[i] = c;
        memcpy(buf + k, w[i], l);
        k += l;
        c += cp_len(w[i], l);
    }
    buf[k] = '\0';
    return k;
}

/* Words (and pair words) against their joined texts. */
static void against_joined(const bert_tokenizer *t, const char *const *w,
                           size_t n, const char *const *pw, size_t pn,
                           const bert_encode_params *p)
{
    char a[1024], b[1024];
    int64_t ab[32], ac[32], bb[32], bc[32];
    size_t la = join(w, n, a, ab, ac), lb = join(pw, pn, b, bb, bc);
    bert_encoding *ej = bert_encoding_create(), *ew = bert_encoding_create();
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_encode(t, a, la, pn ? b : NULL, lb,
                                                p, ej, &err),
                          BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_encode_words(t, w, NULL, n, pw, NULL,
                                                      pn, p, ew, &err),
                          BERT_OK);
    CU_ASSERT_EQUAL_FATAL(ew->n, ej->n);
    CU_ASSERT_EQUAL(ew->n_overflow_first, ej->n_overflow_first);
    CU_ASSERT_EQUAL(ew->n_overflow_second, ej->n_overflow_second);
    for (size_t i = 0; i < ew->n; i++) {
        CU_ASSERT_EQUAL(ew->ids[i], ej->ids[i]);
        CU_ASSERT_EQUAL(ew->type_ids[i], ej->type_ids[i]);
        CU_ASSERT_EQUAL(ew->special_mask[i], ej->special_mask[i]);
        CU_ASSERT_EQUAL(ew->attention_mask[i], ej->attention_mask[i]);
        CU_ASSERT_EQUAL(ew->seq_ids[i], ej->seq_ids[i]);
        if (ej->seq_ids[i] < 0) {
            CU_ASSERT_EQUAL(ew->word_ids[i], -1);
            CU_ASSERT(ew->offsets[2 * i] == 0 && ew->offsets[2 * i + 1] == 0);
            continue;
        }
        /* the word whose span holds the token in the joined text */
        const int64_t *bs = ej->seq_ids[i] ? bb : ab;
        const int64_t *cs = ej->seq_ids[i] ? bc : ac;
        size_t nw = ej->seq_ids[i] ? pn : n, k = 0;
        while (k + 1 < nw && bs[k + 1] <= ej->byte_offsets[2 * i])
            k++;
        CU_ASSERT_EQUAL(ew->word_ids[i], (int32_t)k);
        CU_ASSERT_EQUAL(ew->byte_offsets[2 * i], ej->byte_offsets[2 * i] - bs[k]);
        CU_ASSERT_EQUAL(ew->byte_offsets[2 * i + 1],
                        ej->byte_offsets[2 * i + 1] - bs[k]);
        CU_ASSERT_EQUAL(ew->offsets[2 * i], ej->offsets[2 * i] - cs[k]);
        CU_ASSERT_EQUAL(ew->offsets[2 * i + 1], ej->offsets[2 * i + 1] - cs[k]);
    }
    bert_encoding_free(ej);
    bert_encoding_free(ew);
}

static const char *const W1[] = {"Hello", "World", "Ångström", "unaffable",
                                 "naïve", "COVID-19", "東京", "résumé"};
static const char *const W2[] = {"The", "quick", "brown", "fox", "jumps"};

static void test_joined(void)
{
    bert_encode_params p = bert_encode_default_params();
    against_joined(uncased, W1, 8, NULL, 0, &p);
    against_joined(cased, W1, 8, NULL, 0, &p);
    against_joined(uncased, W1, 8, W2, 5, &p);
    against_joined(cased, W2, 5, W1, 8, &p);
    p.add_special_tokens = 0;
    against_joined(cased, W1, 8, W2, 5, &p);
}

static void test_truncation_padding(void)
{
    bert_encode_params p = bert_encode_default_params();
    for (size_t ml = 5; ml <= 20; ml += 3) {
        p.max_length = ml;
        p.truncation = BERT_TRUNCATE_LONGEST_FIRST;
        against_joined(uncased, W1, 8, W2, 5, &p);
        against_joined(cased, W1, 8, NULL, 0, &p);
        p.truncation = BERT_TRUNCATE_ONLY_FIRST;
        if (ml >= 11)
            against_joined(cased, W1, 8, W2, 5, &p);
    }
    p = bert_encode_default_params();
    p.pad_to = 40;
    against_joined(cased, W2, 5, W1, 8, &p);
}

/* The cases transformers documents: a word that splits keeps its index,
 * offsets within it; an empty word keeps its index. */
static void test_split_and_empty_words(void)
{
    static const char *const w[] = {"I", "love", "New York", "", "don't"};
    bert_encoding *e = bert_encoding_create();
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_encode_words(cased, w, NULL, 5, NULL,
                                                      NULL, 0, NULL, e, &err),
                          BERT_OK);
    /* [CLS] I love New York don ' t [SEP] */
    static const char *const tok[] = {"[CLS]", "I", "love", "New", "York",
                                      "don", "'", "t", "[SEP]"};
    static const int32_t wid[] = {-1, 0, 1, 2, 2, 4, 4, 4, -1};
    static const int64_t off[] = {0, 0, 0, 1, 0, 4, 0, 3, 4, 8,
                                  0, 3, 3, 4, 4, 5, 0, 0};
    CU_ASSERT_EQUAL_FATAL(e->n, 9);
    for (size_t i = 0; i < 9; i++) {
        CU_ASSERT_STRING_EQUAL(bert_tokenizer_token(cased, e->ids[i]), tok[i]);
        CU_ASSERT_EQUAL(e->word_ids[i], wid[i]);
        CU_ASSERT_EQUAL(e->offsets[2 * i], off[2 * i]);
        CU_ASSERT_EQUAL(e->offsets[2 * i + 1], off[2 * i + 1]);
        CU_ASSERT_EQUAL(e->type_ids[i], 0);
    }
    /* lens given: the words need not be NUL-terminated */
    static const char *const cut[] = {"Hello!!!", "Worldxyz"};
    static const size_t lens[] = {5, 5};
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, cut, lens, 2, NULL,
                                                NULL, 0, NULL, e, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(e->n, 4);
    /* no words: the special tokens only */
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, NULL, NULL, 0, NULL,
                                                NULL, 0, NULL, e, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(e->n, 2);
    bert_encoding_free(e);
}

static void test_errors(void)
{
    bert_encoding *e = bert_encoding_create();
    bert_error err;
    static const char *const bad[] = {"fine", "caf\xc3", "ok"};
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, bad, NULL, 3, NULL,
                                                NULL, 0, NULL, e, &err),
                    BERT_EUTF8);
    CU_ASSERT_EQUAL(err.byte_offset, 3);
    CU_ASSERT(strstr(err.text, "word 1") != NULL);
    CU_ASSERT_EQUAL(e->n, 0);
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, W2, NULL, 2, bad, NULL,
                                                3, NULL, e, &err),
                    BERT_EUTF8);
    CU_ASSERT(strstr(err.text, "pair word 1") != NULL);
    static const char *const nul[] = {"a", NULL};
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, nul, NULL, 2, NULL,
                                                NULL, 0, NULL, e, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, NULL, NULL, 2, NULL,
                                                NULL, 0, NULL, e, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_tokenizer_encode_words(cased, W2, NULL, 2, NULL,
                                                NULL, 0, NULL, NULL, &err),
                    BERT_EINVAL);
    bert_tokenizer *bpe = load("fixtures-roberta-electra/roberta-seq");
    if (bpe) {
        CU_ASSERT_EQUAL(bert_tokenizer_encode_words(bpe, W2, NULL, 2, NULL,
                                                    NULL, 0, NULL, e, &err),
                        BERT_EUNSUPPORTED);
        bert_tokenizer_free(bpe);
    }
    bert_encoding_free(e);
}

int main(int argc, char **argv)
{
    const char *sh = getenv("SHARED_DIR");
    snprintf(shared, sizeof shared, "%s", sh && *sh ? sh : "../shared");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/fixtures/bert-token-cased/vocab.txt",
             shared);
    if (access(probe, R_OK) != 0) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", probe);
        return 77;
    }
    static const tu_test tests[] = {
        {"words_equal_joined_text", test_joined},
        {"truncation_padding", test_truncation_padding},
        {"split_and_empty_words", test_split_and_empty_words},
        {"errors", test_errors},
    };
    return tu_run_suite("encode_words", setup, teardown, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
