/* test_vocab_trainer.c - the library's WordPiece vocabulary trainer
 * (bert_vocab_trainer) against the vocabularies apps/bert-vocab learned
 * from tests/data/vocab_corpus.txt before the trainer moved into the
 * library (tests/data/vocab_corpus.{cased400,uncased300}.txt, recorded from
 * that binary), and its contracts: a text is counted whole or not at all,
 * errors, progress. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert_tokenizer.h"
#include "tests/testutil.h"

static const char *srcdir(void)
{
    const char *s = getenv("top_srcdir");
    return s && *s ? s : ".";
}

/* Feeds tests/data/vocab_corpus.txt line by line (as bert-vocab reads it),
 * learns with p and compares with the recorded vocab.txt `want`. */
static void learn_and_compare(const bert_vocab_trainer_params *p,
                              const char *want)
{
    char path[4096];
    size_t len, wlen;
    snprintf(path, sizeof path, "%s/tests/data/vocab_corpus.txt", srcdir());
    char *text = tu_read_file(path, &len);
    snprintf(path, sizeof path, "%s/tests/data/%s", srcdir(), want);
    char *expect = tu_read_file(path, &wlen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expect);
    bert_vocab_trainer *vt;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_create(p, &vt, &err), BERT_OK);
    for (char *s = text, *end = text + len; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, s, n, &err), BERT_OK);
        s += n + 1;
    }
    CU_ASSERT(bert_vocab_trainer_n_words(vt) > 100);
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_learn(vt, &err), BERT_OK);
    /* token by token against the recorded file */
    size_t n = bert_vocab_trainer_size(vt), i = 0, bad = 0;
    for (char *s = expect, *end = expect + wlen; s < end; i++) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t k = nl ? (size_t)(nl - s) : (size_t)(end - s);
        const char *got = bert_vocab_trainer_token(vt, i);
        if (!got || strlen(got) != k || memcmp(got, s, k) != 0) {
            if (bad++ < 5)
                printf("\n  %s: token %zu is '%s', want '%.*s'", want, i,
                       got ? got : "(none)", (int)k, s);
        }
        s += k + 1;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(n, i);
    CU_ASSERT_PTR_NULL(bert_vocab_trainer_token(vt, n));
    bert_vocab_trainer_free(vt);
    free(text);
    free(expect);
}

static void test_same_as_bert_vocab_cased(void)
{
    bert_vocab_trainer_params p = bert_vocab_trainer_default_params();
    p.vocab_size = 400;
    learn_and_compare(&p, "vocab_corpus.cased400.txt");
}

static void test_same_as_bert_vocab_uncased(void)
{
    bert_vocab_trainer_params p = bert_vocab_trainer_default_params();
    p.vocab_size = 300;
    p.lowercase = 1;
    p.limit_alphabet = 60;
    learn_and_compare(&p, "vocab_corpus.uncased300.txt");
}

/* The hand-worked example of tests/apps_vocab.sh: words hug x3, pug x2,
 * pun, bun, hugs, ","; merges ##ug, hug, pug, ##un, then stop at counts of
 * 1 (min_frequency 2). */
static void test_hand_example(void)
{
    bert_vocab_trainer *vt;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_create(NULL, &vt, &err), BERT_OK);
    const char *t = "hug hug hug, pug pug\npun bun hugs";
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, t, strlen(t), &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_vocab_trainer_n_words(vt), 6);
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_learn(vt, &err), BERT_OK);
    static const char *want[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                 ",", "b", "g", "h", "n", "p", "s", "u", "##u",
                                 "##n", "##g", "##s", "##ug", "hug", "pug",
                                 "##un"};
    size_t nw = sizeof want / sizeof want[0];
    CU_ASSERT_EQUAL(bert_vocab_trainer_size(vt), nw);
    for (size_t i = 0; i < nw && i < bert_vocab_trainer_size(vt); i++)
        CU_ASSERT_STRING_EQUAL(bert_vocab_trainer_token(vt, i), want[i]);
    /* learned once; adding after is refused */
    CU_ASSERT_EQUAL(bert_vocab_trainer_learn(vt, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, "x", 1, &err), BERT_EINVAL);
    bert_vocab_trainer_free(vt);
    bert_vocab_trainer_free(NULL);
}

static void test_invalid_utf8_counts_nothing(void)
{
    bert_vocab_trainer *vt;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_create(NULL, &vt, &err), BERT_OK);
    const char bad[] = "good words \xff then more";
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, bad, sizeof bad - 1, &err),
                    BERT_EUTF8);
    CU_ASSERT_EQUAL(err.byte_offset, 11);
    CU_ASSERT_EQUAL(bert_vocab_trainer_n_words(vt), 0);
    /* NUL bytes and control characters are dropped, not errors */
    const char nul[] = "a\0b \x01" "c";
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, nul, sizeof nul - 1, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(bert_vocab_trainer_n_words(vt), 2); /* "ab", "c" */
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(NULL, "a", 1, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, NULL, 1, &err), BERT_EINVAL);
    bert_vocab_trainer_free(vt);
}

static void test_bad_params(void)
{
    bert_vocab_trainer *vt = (bert_vocab_trainer *)&vt;
    bert_error err;
    bert_vocab_trainer_params p = bert_vocab_trainer_default_params();
    p.special_tokens = "[PAD],[A\nB]";
    CU_ASSERT_EQUAL(bert_vocab_trainer_create(&p, &vt, &err), BERT_EINVAL);
    CU_ASSERT_PTR_NULL(vt);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "line break"));
    p.special_tokens = "\xc3";
    CU_ASSERT_EQUAL(bert_vocab_trainer_create(&p, &vt, &err), BERT_EINVAL);
    p = bert_vocab_trainer_default_params();
    p.vocab_size = 0;
    CU_ASSERT_EQUAL(bert_vocab_trainer_create(&p, &vt, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_vocab_trainer_create(NULL, NULL, &err), BERT_EINVAL);
}

static void count_progress(size_t n, void *user)
{
    size_t *seen = user;
    if (n == 1000)
        seen[0]++;
    else
        seen[1]++;
}

static void test_progress(void)
{
    /* 3000 distinct words w0 .. w2999: merges past 1000 tokens */
    size_t seen[2] = {0, 0};
    bert_vocab_trainer_params p = bert_vocab_trainer_default_params();
    p.vocab_size = 1500;
    p.min_frequency = 1;
    p.progress = count_progress;
    p.progress_user = seen;
    bert_vocab_trainer *vt;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_create(&p, &vt, &err), BERT_OK);
    char w[32];
    for (int i = 0; i < 3000; i++) {
        int n = snprintf(w, sizeof w, "w%d ", i);
        CU_ASSERT_EQUAL(bert_vocab_trainer_add(vt, w, (size_t)n, &err), BERT_OK);
    }
    CU_ASSERT_EQUAL_FATAL(bert_vocab_trainer_learn(vt, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_vocab_trainer_size(vt), 1500);
    CU_ASSERT(seen[0] >= 1);
    CU_ASSERT_EQUAL(seen[1], 0);
    bert_vocab_trainer_free(vt);
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"same_as_bert_vocab_cased", test_same_as_bert_vocab_cased},
        {"same_as_bert_vocab_uncased", test_same_as_bert_vocab_uncased},
        {"hand_example", test_hand_example},
        {"invalid_utf8_counts_nothing", test_invalid_utf8_counts_nothing},
        {"bad_params", test_bad_params},
        {"progress", test_progress},
    };
    return tu_run_suite("vocab_trainer", NULL, NULL, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
