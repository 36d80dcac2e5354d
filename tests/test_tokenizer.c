/*
 * tests/test_tokenizer.c - hand-checked cases for each rule of the
 * WordPiece tokenizer, on a small vocabulary written by the test itself
 * (so every id below can be checked by reading VOCAB).
 * Inputs are copied into exact-size heap buffers so sanitizers catch any
 * over-read.
 */
#include <CUnit/Basic.h>
#include <libbert/bert_tokenizer.h>

#include "tests/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* id = line number; line 22 is U+2028 (LINE SEPARATOR), which must not
 * split the file. */
static const char *const VOCAB[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "un", "##aff",
    "##able", "cafe", "caf\xc3\xa9", ",", ".", "!", "$", "\xe4\xb8\xad", "\xe5\x9b\xbd",
    "\xf0\xa0\x9c\x8e", "a", "##a", "\xe2\x80\xa8", "##b", "b", "\xcf\x83", "Hello", "i",
    "\xc3\x9f", "x", "##x", "(", ")", "~", "`", "^", "ab", "c", "##c", "\xd1\x8f", "##\xd1\x8f",
    "\xce\xbf", "##\xce\xb4", "##\xce\xbf", "##\xcf\x83", "\xe1\x84\x92", "##\xe1\x85\xa1",
    "##\xe1\x86\xab", "\xc2\xab", "\xc2\xbb", "\xc2\xbf", "-",
};
#define N_VOCAB (sizeof VOCAB / sizeof VOCAB[0])

static char tmpdir[64];
static char vocab_path[128];
static bert_tokenizer *uncased, *cased;
static bert_encoding *enc;

static int write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs(data, f);
    return fclose(f);
}

static int setup(void)
{
    strcpy(tmpdir, "/tmp/test_tokenizer.XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", tmpdir);
    FILE *f = fopen(vocab_path, "wb");
    if (!f)
        return -1;
    for (size_t i = 0; i < N_VOCAB; i++)
        fprintf(f, "%s\n", VOCAB[i]);
    fclose(f);
    bert_error err;
    if (bert_tokenizer_load_vocab(vocab_path, 1, -1, 1, &uncased, &err) ||
        bert_tokenizer_load_vocab(vocab_path, 0, -1, 1, &cased, &err)) {
        fprintf(stderr, "setup: %s\n", err.text);
        return -1;
    }
    enc = bert_encoding_create();
    return enc ? 0 : -1;
}

static int teardown(void)
{
    bert_tokenizer_free(uncased);
    bert_tokenizer_free(cased);
    bert_encoding_free(enc);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Encodes exact-size heap copies of text (and pair when non-NULL); returns
 * the status. */
static int encode_n(const bert_tokenizer *t, const char *text, size_t n, const char *pair,
                    size_t pn, const bert_encode_params *prm, bert_error *err)
{
    /* exact-size heap copies, so that ASan catches any read past the end */
    char *a = calloc(n ? n : 1, 1), *b = pair ? calloc(pn ? pn : 1, 1) : NULL;
    if (!a || (pair && !b)) {
        free(a);
        free(b);
        return BERT_ENOMEM;
    }
    memcpy(a, text, n);
    if (pair)
        memcpy(b, pair, pn);
    int rc = bert_tokenizer_encode(t, a, n, b, pn, prm, enc, err);
    free(a);
    free(b);
    return rc;
}

/* The tokens of the last encoding, space separated (static buffer). */
static const char *tokens_of(const bert_tokenizer *t)
{
    static char buf[1 << 16];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < enc->n && n + 64 < sizeof buf; i++) {
        const char *tok = bert_tokenizer_token(t, enc->ids[i]);
        n += (size_t)snprintf(buf + n, sizeof buf - n, i ? " %s" : "%s", tok ? tok : "?");
    }
    return buf;
}

/* Asserts that text gives exactly `want` ([CLS] ... [SEP] included). */
#define CHECK_TOKENS(t, text, want)                                                   \
    do {                                                                              \
        bert_error err_;                                                              \
        int rc_ = encode_n((t), (text), sizeof(text) - 1, NULL, 0, NULL, &err_);      \
        CU_ASSERT_EQUAL(rc_, BERT_OK);                                                \
        const char *got_ = tokens_of(t);                                              \
        if (strcmp(got_, (want)) != 0)                                                \
            fprintf(stderr, "\n  %s:%d: want \"%s\"\n    got  \"%s\"\n", __FILE__, __LINE__, \
                    (want), got_);                                                    \
        CU_ASSERT_STRING_EQUAL(got_, (want));                                         \
    } while (0)

/* ---- normalization ----------------------------------------------------- */

static void test_clean_text(void)
{
    CHECK_TOKENS(uncased, "hel\0lo", "[CLS] hello [SEP]");              /* NUL */
    CHECK_TOKENS(uncased, "hel\x01lo\x7f", "[CLS] hello [SEP]");        /* Cc */
    CHECK_TOKENS(uncased, "hel\xef\xbf\xbdlo", "[CLS] hello [SEP]");    /* U+FFFD */
    CHECK_TOKENS(uncased, "hel\xe2\x80\x8blo", "[CLS] hello [SEP]");    /* U+200B (Cf) */
    CHECK_TOKENS(uncased, "\xef\xbb\xbfhello", "[CLS] hello [SEP]");    /* BOM */
    CHECK_TOKENS(uncased, "hel\xc2\xadlo", "[CLS] hello [SEP]");        /* soft hyphen */
    CHECK_TOKENS(uncased, "hel\xee\x80\x80lo", "[CLS] hello [SEP]");    /* U+E000 (Co) */
    CHECK_TOKENS(uncased, "hello\x0bworld", "[CLS] [UNK] [SEP]");       /* \v is Cc: dropped */
    CHECK_TOKENS(uncased, "hello\xc2\x85world", "[CLS] [UNK] [SEP]");   /* U+0085 too */
    /* whitespace of every kind separates words */
    CHECK_TOKENS(uncased, "hello\tworld\rhello\nworld", "[CLS] hello world hello world [SEP]");
    CHECK_TOKENS(uncased, "hello\xc2\xa0world\xe3\x80\x80hello", "[CLS] hello world hello [SEP]");
    CHECK_TOKENS(uncased, "hello\xe2\x80\xa8world", "[CLS] hello world [SEP]"); /* U+2028 */
    /* unassigned code points (U+E0000) are kept, so the word is unknown */
    CHECK_TOKENS(uncased, "hel\xf3\xa0\x80\x80lo", "[CLS] [UNK] [SEP]");
}

static void test_cjk(void)
{
    CHECK_TOKENS(uncased, "\xe4\xb8\xad\xe5\x9b\xbd", "[CLS] \xe4\xb8\xad \xe5\x9b\xbd [SEP]");
    /* astral ideograph (Ext-B) is a word of its own too */
    CHECK_TOKENS(uncased, "a\xf0\xa0\x9c\x8e" "b", "[CLS] a \xf0\xa0\x9c\x8e b [SEP]");
    CHECK_TOKENS(cased, "a\xe4\xb8\xad" "b", "[CLS] a \xe4\xb8\xad b [SEP]");
}

static void test_lowercase_accents(void)
{
    CHECK_TOKENS(uncased, "HELLO World", "[CLS] hello world [SEP]");
    CHECK_TOKENS(uncased, "Caf\xc3\xa9", "[CLS] cafe [SEP]");             /* precomposed */
    CHECK_TOKENS(uncased, "CAFE\xcc\x81", "[CLS] cafe [SEP]");            /* E + U+0301 */
    CHECK_TOKENS(uncased, "\xc4\xb0", "[CLS] i [SEP]");                   /* U+0130 */
    CHECK_TOKENS(uncased, "\xc3\x9f", "[CLS] \xc3\x9f [SEP]");            /* sharp s stays */
    /* per-character lowercasing: final sigma stays sigma */
    CHECK_TOKENS(uncased, "\xce\x9f\xce\x94\xce\x9f\xce\xa3",
                 "[CLS] \xce\xbf ##\xce\xb4 ##\xce\xbf ##\xcf\x83 [SEP]");
    /* Hangul syllables decompose to conjoining jamo (NFD) */
    CHECK_TOKENS(uncased, "\xed\x95\x9c",
                 "[CLS] \xe1\x84\x92 ##\xe1\x85\xa1 ##\xe1\x86\xab [SEP]");
    /* the cased model keeps case and accents */
    CHECK_TOKENS(cased, "caf\xc3\xa9", "[CLS] caf\xc3\xa9 [SEP]");
    CHECK_TOKENS(cased, "Hello hello", "[CLS] Hello hello [SEP]");
    CHECK_TOKENS(cased, "\xed\x95\x9c", "[CLS] [UNK] [SEP]");
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(uncased), 1);
    CU_ASSERT_EQUAL(bert_tokenizer_strip_accents(uncased), 1);
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(cased), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_strip_accents(cased), 0);
}

static void test_punctuation(void)
{
    CHECK_TOKENS(uncased, "hello,world!", "[CLS] hello , world ! [SEP]");
    /* ASCII symbols count as punctuation although Unicode says S* */
    CHECK_TOKENS(uncased, "$(a)~`^", "[CLS] $ ( a ) ~ ` ^ [SEP]");
    /* Unicode P* */
    CHECK_TOKENS(uncased, "\xc2\xab" "a\xc2\xbb\xc2\xbf", "[CLS] \xc2\xab a \xc2\xbb \xc2\xbf [SEP]");
    CHECK_TOKENS(uncased, "un-aff", "[CLS] un - [UNK] [SEP]");
}

/* ---- special tokens and WordPiece ---------------------------------------- */

static void test_special_in_text(void)
{
    CHECK_TOKENS(uncased, "hello [MASK] world", "[CLS] hello [MASK] world [SEP]");
    CU_ASSERT_EQUAL(enc->ids[2], 4);
    CU_ASSERT_EQUAL(enc->special_mask[2], 0);
    CU_ASSERT_EQUAL(enc->word_ids[2], 1);
    CU_ASSERT_EQUAL(enc->word_ids[3], 2);
    CU_ASSERT_EQUAL(enc->offsets[4], 6);
    CU_ASSERT_EQUAL(enc->offsets[5], 12);
    /* matched on the raw text, even inside a word, case-sensitively */
    CHECK_TOKENS(uncased, "x[SEP]x", "[CLS] x [SEP] x [SEP]");
    CHECK_TOKENS(uncased, "[sep]", "[CLS] [UNK] [UNK] [UNK] [SEP]");
}

static void test_wordpiece(void)
{
    CHECK_TOKENS(uncased, "unaffable", "[CLS] un ##aff ##able [SEP]");
    CHECK_TOKENS(uncased, "worlds", "[CLS] world ##s [SEP]");
    CHECK_TOKENS(uncased, "helloq", "[CLS] [UNK] [SEP]");
    CHECK_TOKENS(uncased, "abc", "[CLS] ab ##c [SEP]"); /* longest match first */
    /* 100 characters are fine, 101 are [UNK]; characters, not bytes */
    char w[512];
    memset(w, 'x', 101);
    bert_error err;
    CU_ASSERT_EQUAL(encode_n(uncased, w, 100, NULL, 0, NULL, &err), BERT_OK);
    CU_ASSERT_EQUAL(enc->n, 102);
    CU_ASSERT_EQUAL(encode_n(uncased, w, 101, NULL, 0, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] [UNK] [SEP]");
    CU_ASSERT_EQUAL(enc->offsets[3], 101);
    for (int i = 0; i < 101; i++)
        memcpy(w + 2 * i, "\xd1\x8f", 2);
    CU_ASSERT_EQUAL(encode_n(uncased, w, 140, NULL, 0, NULL, &err), BERT_OK); /* 70 chars */
    CU_ASSERT_EQUAL(enc->n, 72);
    CU_ASSERT_EQUAL(enc->offsets[2 * 70], 69);
    CU_ASSERT_EQUAL(enc->byte_offsets[2 * 70], 138);
    CU_ASSERT_EQUAL(encode_n(uncased, w, 202, NULL, 0, NULL, &err), BERT_OK); /* 101 chars */
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] [UNK] [SEP]");
}

static void test_vocab(void)
{
    CU_ASSERT_EQUAL(bert_tokenizer_vocab_size(uncased), N_VOCAB);
    CU_ASSERT_EQUAL(bert_tokenizer_find(uncased, "\xe2\x80\xa8", 3), 22);
    CU_ASSERT_EQUAL(bert_tokenizer_find(uncased, "##b", 3), 23); /* line after U+2028 */
    CU_ASSERT_EQUAL(bert_tokenizer_find(uncased, "nope", 4), -1);
    CU_ASSERT_STRING_EQUAL(bert_tokenizer_token(uncased, 26), "Hello");
    CU_ASSERT_PTR_NULL(bert_tokenizer_token(uncased, (int32_t)N_VOCAB));
    CU_ASSERT_PTR_NULL(bert_tokenizer_token(uncased, -1));
    CU_ASSERT_EQUAL(bert_tokenizer_special(uncased, BERT_TOKEN_PAD), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_special(uncased, BERT_TOKEN_UNK), 1);
    CU_ASSERT_EQUAL(bert_tokenizer_special(uncased, BERT_TOKEN_CLS), 2);
    CU_ASSERT_EQUAL(bert_tokenizer_special(uncased, BERT_TOKEN_SEP), 3);
    CU_ASSERT_EQUAL(bert_tokenizer_special(uncased, BERT_TOKEN_MASK), 4);
}

/* ---- encoding ---------------------------------------------------------- */

static void test_offsets(void)
{
    bert_error err;
    const char s[] = "Caf\xc3\xa9! \xe4\xb8\xad";
    CU_ASSERT_EQUAL(encode_n(uncased, s, sizeof s - 1, NULL, 0, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] cafe ! \xe4\xb8\xad [SEP]");
    const int64_t cp[] = {0, 0, 0, 4, 4, 5, 6, 7, 0, 0};
    const int64_t by[] = {0, 0, 0, 5, 5, 6, 7, 10, 0, 0};
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(enc->offsets[i], cp[i]);
        CU_ASSERT_EQUAL(enc->byte_offsets[i], by[i]);
    }
    const int32_t words[] = {-1, 0, 1, 2, -1};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(enc->word_ids[i], words[i]);
        CU_ASSERT_EQUAL(enc->attention_mask[i], 1);
        CU_ASSERT_EQUAL(enc->special_mask[i], i == 0 || i == 4);
        CU_ASSERT_EQUAL(enc->seq_ids[i], (i == 0 || i == 4) ? -1 : 0);
    }
}

static void test_empty_and_blank(void)
{
    CHECK_TOKENS(uncased, "", "[CLS] [SEP]");
    CHECK_TOKENS(uncased, " \t \xe3\x80\x80 ", "[CLS] [SEP]");
    CHECK_TOKENS(uncased, "\xe2\x80\x8b", "[CLS] [SEP]");
    bert_error err;
    /* an empty pair is no pair (transformers' tokenizer(a, text_pair="")) */
    CU_ASSERT_EQUAL(encode_n(uncased, "a", 1, "", 0, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a [SEP]");
    /* no special tokens */
    bert_encode_params p = bert_encode_default_params();
    p.add_special_tokens = 0;
    CU_ASSERT_EQUAL(encode_n(uncased, "a b", 3, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "a b");
}

static void test_pair_and_truncation(void)
{
    bert_error err;
    bert_encode_params p = bert_encode_default_params();
    const char a[] = "a a a a", b[] = "b b b b b b";
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a a [SEP] b b b b b b [SEP]");
    const int32_t types[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 13; i++)
        CU_ASSERT_EQUAL(enc->type_ids[i], types[i]);
    CU_ASSERT_EQUAL(enc->word_ids[6], 0); /* word ids restart in the pair */
    CU_ASSERT_EQUAL(enc->seq_ids[6], 1);
    CU_ASSERT_EQUAL(enc->seq_ids[5], -1);
    /* longest_first: 10 - 3 specials = 7 = 3 + 4 (the longer keeps more) */
    p.max_length = 10;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a [SEP] b b b b [SEP]");
    CU_ASSERT_EQUAL(enc->n_overflow_first, 1);
    CU_ASSERT_EQUAL(enc->n_overflow_second, 2);
    /* only the longer one shrinks when the shorter fits in half */
    p.max_length = 12;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a a [SEP] b b b b b [SEP]");
    /* only_first / only_second */
    p.max_length = 11;
    p.truncation = BERT_TRUNCATE_ONLY_FIRST;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a [SEP] b b b b b b [SEP]");
    p.truncation = BERT_TRUNCATE_ONLY_SECOND;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a a [SEP] b b b b [SEP]");
    /* the sequence to cut is too short: an error, as in the reference */
    p.max_length = 8;
    p.truncation = BERT_TRUNCATE_ONLY_FIRST;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_ETOOLONG);
    CU_ASSERT_EQUAL(enc->n, 0);
    p.truncation = BERT_TRUNCATE_ONLY_SECOND;
    CU_ASSERT_EQUAL(encode_n(uncased, "a", 1, NULL, 0, &p, &err), BERT_OK); /* fits */
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, NULL, 0, &(bert_encode_params){4, BERT_TRUNCATE_ONLY_SECOND, 0, 1}, &err),
                    BERT_EINVAL);
    /* single sequence */
    p.truncation = BERT_TRUNCATE_LONGEST_FIRST;
    p.max_length = 4;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a [SEP]");
    /* max_length below the special tokens cannot be honoured: an error
     * (it used to return 3 tokens for max_length 1) */
    p.max_length = 1;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(enc->n, 0);
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, NULL, 0, &p, &err), BERT_EINVAL);
    p.max_length = 2;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] [SEP]");
    p.max_length = 3;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, b, 11, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] [SEP] [SEP]");
    /* without special tokens max_length 1 is fine */
    p.max_length = 1;
    p.add_special_tokens = 0;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 7, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "a");
}

/* Item 15: tokens past max_length are counted, not stored; the result is
 * the same as with them stored (n_overflow counts them all). */
static void test_long_truncated(void)
{
    bert_error err;
    size_t nw = 50000;
    char *a = malloc(2 * nw), *b = malloc(2 * nw);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    for (size_t i = 0; i < nw; i++) {
        a[2 * i] = 'a';
        b[2 * i] = 'b';
        a[2 * i + 1] = b[2 * i + 1] = ' ';
    }
    bert_encode_params p = bert_encode_default_params();
    p.max_length = 10;
    CU_ASSERT_EQUAL(encode_n(uncased, a, 2 * nw, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a a a a a a [SEP]");
    CU_ASSERT_EQUAL(enc->n_overflow_first, nw - 8);
    CU_ASSERT_EQUAL(encode_n(uncased, a, 2 * nw, b, 2 * nw - 2, &p, &err), BERT_OK);
    /* both capped at 10 (equal): longest_first keeps 3 + 4, as before */
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a a a [SEP] b b b b [SEP]");
    CU_ASSERT_EQUAL(enc->n_overflow_first, nw - 3);
    CU_ASSERT_EQUAL(enc->n_overflow_second, nw - 1 - 4);
    free(a);
    free(b);
}

static void test_padding(void)
{
    bert_error err;
    bert_encode_params p = bert_encode_default_params();
    p.pad_to = 6;
    CU_ASSERT_EQUAL(encode_n(uncased, "a b", 3, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] a b [SEP] [PAD] [PAD]");
    const int32_t mask[] = {1, 1, 1, 1, 0, 0}, spec[] = {1, 0, 0, 1, 1, 1};
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(enc->attention_mask[i], mask[i]);
        CU_ASSERT_EQUAL(enc->special_mask[i], spec[i]);
    }
    CU_ASSERT_EQUAL(enc->word_ids[5], -1);
    CU_ASSERT_EQUAL(enc->type_ids[5], 0);
    /* a pad_to no allocation can hold: ENOMEM, not an endless doubling */
    const size_t huge[] = {((size_t)1 << 63) + 1, SIZE_MAX, SIZE_MAX / 2 + 7};
    for (int i = 0; i < 3; i++) {
        p.pad_to = huge[i];
        CU_ASSERT_EQUAL(encode_n(uncased, "a b", 3, NULL, 0, &p, &err), BERT_ENOMEM);
        CU_ASSERT_EQUAL(enc->n, 0);
    }
    p.pad_to = 2; /* shorter than the sequence: no-op */
    CU_ASSERT_EQUAL(encode_n(uncased, "a b", 3, NULL, 0, &p, &err), BERT_OK);
    CU_ASSERT_EQUAL(enc->n, 4);
}

/* ---- invalid UTF-8 ----------------------------------------------------- */

static void expect_utf8_error(const char *s, size_t n, long long off)
{
    bert_error err;
    int rc = encode_n(uncased, s, n, NULL, 0, NULL, &err);
    CU_ASSERT_EQUAL(rc, BERT_EUTF8);
    CU_ASSERT_EQUAL(err.byte_offset, off);
    CU_ASSERT_EQUAL(enc->n, 0);
    if (rc != BERT_EUTF8 || err.byte_offset != off)
        fprintf(stderr, "\n  want offset %lld, got rc %d offset %lld\n", off, rc, err.byte_offset);
}

static void test_invalid_utf8(void)
{
    expect_utf8_error("ab\xc3", 3, 2);                 /* truncated at the end */
    expect_utf8_error("ab\xe4\xb8", 4, 2);             /* truncated 3-byte */
    expect_utf8_error("a\xc0\xaf", 3, 1);              /* overlong '/' */
    expect_utf8_error("\xe0\x80\xaf", 3, 0);           /* overlong, 3 bytes */
    expect_utf8_error("\xf0\x80\x80\xaf", 4, 0);       /* overlong, 4 bytes */
    expect_utf8_error("abc\xed\xa0\x80", 6, 3);        /* surrogate U+D800 */
    expect_utf8_error("abc\xf4\x90\x80\x80", 7, 3);    /* above U+10FFFF */
    expect_utf8_error("x\xf5\x80\x80\x80", 5, 1);      /* byte > F4 */
    expect_utf8_error("xy\xff", 3, 2);
    expect_utf8_error("hello \x80", 7, 6);             /* lone continuation */
    expect_utf8_error("\xc3(", 2, 0);                  /* bad continuation */
    expect_utf8_error("abcdefghijklmnop\xc3", 17, 16); /* after the 8-byte fast path */
    bert_error err;
    CU_ASSERT_EQUAL(encode_n(uncased, "ok", 2, "x\xc3", 2, NULL, &err), BERT_EUTF8);
    CU_ASSERT_EQUAL(err.byte_offset, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "pair"));
    /* the largest code point and a 4-byte character are fine */
    CU_ASSERT_EQUAL(encode_n(uncased, "\xf4\x8f\xbf\xbf", 4, NULL, 0, NULL, &err), BERT_OK);
}

/* ---- long inputs ------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_megabyte_lines(void)
{
    const size_t n = 1 << 20;
    char *s = malloc(n);
    bert_error err;
    /* one 1 MB word: one [UNK] spanning it, in linear time */
    memset(s, 'x', n);
    double t0 = now();
    CU_ASSERT_EQUAL(bert_tokenizer_encode(uncased, s, n, NULL, 0, NULL, enc, &err), BERT_OK);
    double t_word = now() - t0;
    CU_ASSERT_STRING_EQUAL(tokens_of(uncased), "[CLS] [UNK] [SEP]");
    CU_ASSERT_EQUAL(enc->byte_offsets[3], (int64_t)n);
    /* 1 MB of prose: "hello world, " repeated */
    static const char unit[] = "hello world, "; /* 13 bytes, 3 tokens */
    size_t reps = n / 13;
    for (size_t i = 0; i < reps; i++)
        memcpy(s + 13 * i, unit, 13);
    t0 = now();
    CU_ASSERT_EQUAL(bert_tokenizer_encode(uncased, s, 13 * reps, NULL, 0, NULL, enc, &err),
                    BERT_OK);
    double t_prose = now() - t0;
    CU_ASSERT_EQUAL(enc->n, 3 * reps + 2);
    CU_ASSERT_EQUAL(enc->byte_offsets[2 * (3 * reps)], (int64_t)(13 * reps - 2));
    /* a word of CJK ideographs: each is a word (1 MB, no spaces) */
    size_t k = n / 3;
    for (size_t i = 0; i < k; i++)
        memcpy(s + 3 * i, "\xe4\xb8\xad", 3);
    t0 = now();
    CU_ASSERT_EQUAL(bert_tokenizer_encode(uncased, s, 3 * k, NULL, 0, NULL, enc, &err), BERT_OK);
    double t_cjk = now() - t0;
    CU_ASSERT_EQUAL(enc->n, k + 2);
    fprintf(stderr, " [1 MB: word %.3fs, prose %.3fs, CJK %.3fs] ", t_word, t_prose, t_cjk);
    /* a generous bound: quadratic behaviour would take minutes */
    CU_ASSERT(t_word < 5.0 && t_prose < 5.0 && t_cjk < 5.0);
    free(s);
}

/* ---- loading ----------------------------------------------------------- */

static void test_load_dirs(void)
{
    char dir[256], path[320];
    bert_tokenizer *t = NULL;
    bert_error err;
    snprintf(dir, sizeof dir, "%s/m1", tmpdir);
    mkdir(dir, 0700);
    /* vocab.txt + tokenizer_config.json: flags come from the config */
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < N_VOCAB; i++)
        fprintf(f, "%s\n", VOCAB[i]);
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    write_file(path, "{\"do_lower_case\": false, \"model_max_length\": 64}");
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load(dir, &t, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(t), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_model_max_length(t), 64);
    CU_ASSERT_EQUAL(encode_n(t, "Hello", 5, NULL, 0, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(t), "[CLS] Hello [SEP]");
    bert_tokenizer_free(t);
    /* malformed JSON names the file, line and column */
    write_file(path, "{\n  \"do_lower_case\": tru\n}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "tokenizer_config.json:2:"));
    remove(path);
    /* tokenizer.json of another kind is refused */
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(path, "{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "WordLevel"));
    write_file(path, "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "Unigram"));
    write_file(path, "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0}},\n"
                     " \"normalizer\": {\"type\": \"NFKC\"}, \"pre_tokenizer\": null}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "NFKC"));
    write_file(path, "{\"model\": {\"type\": \"WordPiece\",\n \"vocab\": [1,}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "tokenizer.json:2:"));
    /* a minimal BERT tokenizer.json works and its flags are used */
    write_file(path,
               "{\"added_tokens\": [{\"id\": 4, \"content\": \"[MASK]\", \"special\": true}],"
               " \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true,"
               " \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},"
               " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
               " \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\","
               " \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 3,"
               " \"vocab\": {\"[PAD]\": 0, \"[UNK]\": 1, \"[CLS]\": 2, \"[SEP]\": 3, \"[MASK]\": 4,"
               " \"ab\": 5, \"##c\": 6}}}");
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load(dir, &t, &err), BERT_OK);
    CU_ASSERT_EQUAL(encode_n(t, "ABC abcc [MASK]", 15, NULL, 0, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(t), "[CLS] ab ##c [UNK] [MASK] [SEP]");
    bert_tokenizer_free(t);
    /* missing directory */
    CU_ASSERT_EQUAL(bert_tokenizer_load("/nonexistent/model", &t, &err), BERT_EMISSING);
    bert_tokenizer_free(NULL);
    bert_encoding_free(NULL);
}

/* ---- byte-level BPE ---------------------------------------------------- */

/* A tiny RoBERTa-style vocabulary ("\u0120" is the byte-level space). */
static const char BPE_VOCAB[] =
    "{\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"<unk>\": 3, \"h\": 4, \"e\": 5, \"l\": 6,"
    " \"o\": 7, \"\u0120\": 8, \"w\": 9, \"r\": 10, \"d\": 11, \"he\": 12, \"ll\": 13,"
    " \"hell\": 14, \"hello\": 15, \"\u0120w\": 16, \"\u0120wo\": 17, \"<mask>\": 18, \"!\": 19,"
    " \"\u0120wor\": 20, \"or\": 21}";
static const char BPE_MERGES[] = "#version: 0.2\nh e\nl l\nhe ll\nhell o\n\u0120 w\n\u0120w o\n"
                                 "o r\n\u0120wo r\n";

/* Writes dir/vocab.json and dir/merges.txt (NULL = the tiny ones) and
 * dir/tokenizer_config.json when cfg is non-NULL; returns the load status. */
static int load_bpe(const char *dir, const char *vocab, const char *merges, const char *cfg,
                    bert_tokenizer **t, bert_error *err)
{
    char path[320];
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    write_file(path, vocab ? vocab : BPE_VOCAB);
    snprintf(path, sizeof path, "%s/merges.txt", dir);
    write_file(path, merges ? merges : BPE_MERGES);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (cfg)
        write_file(path, cfg);
    else
        remove(path);
    return bert_tokenizer_load(dir, t, err);
}

/* Offsets of the last encoding as "s,e s,e ..." (code points). */
static const char *offsets_of(void)
{
    static char buf[4096];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < enc->n && n + 48 < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, i ? " %lld,%lld" : "%lld,%lld",
                              (long long)enc->offsets[2 * i], (long long)enc->offsets[2 * i + 1]);
    return buf;
}

static void test_bpe(void)
{
    char dir[256];
    bert_tokenizer *t = NULL;
    bert_error err;
    snprintf(dir, sizeof dir, "%s/bpe", tmpdir);
    CU_ASSERT_EQUAL_FATAL(load_bpe(dir, NULL, NULL, NULL, &t, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_tokenizer_special(t, BERT_TOKEN_CLS), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_special(t, BERT_TOKEN_PAD), 1);
    CU_ASSERT_EQUAL(bert_tokenizer_special(t, BERT_TOKEN_SEP), 2);
    CU_ASSERT_EQUAL(bert_tokenizer_special(t, BERT_TOKEN_MASK), 18);
    CU_ASSERT_EQUAL(bert_tokenizer_get_kind(t), BERT_TOKENIZER_BPE);
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(t), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_strip_accents(t), 0);
    /* merges by rank: (Ġ w) then (Ġw o) before (o r), then (Ġwo r);
     * trim_offsets leaves the space out of Ġwor's span */
    CHECK_TOKENS(t, "hello world!", "<s> hello \u0120wor l d ! </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,5 6,9 9,10 10,11 11,12 0,0");
    CU_ASSERT_EQUAL(enc->word_ids[3], 1);
    CU_ASSERT_EQUAL(enc->word_ids[4], 1);
    /* <mask> absorbs the spaces before it (lstrip) */
    CHECK_TOKENS(t, "hello  <mask>!", "<s> hello <mask> ! </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,5 5,13 13,14 0,0");
    /* a byte the vocabulary lacks is dropped (no unk_token in the model):
     * its neighbours merge, and offsets are the running sum of the kept
     * symbols' lengths, as in the reference's Word::get_offsets */
    CHECK_TOKENS(t, "hez", "<s> he </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,2 0,0");
    CHECK_TOKENS(t, "hze", "<s> he </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,2 0,0");
    CHECK_TOKENS(t, "zhe", "<s> he </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,2 0,0");
    /* pairs: <s> A </s></s> B </s>, all type ids 0 */
    CU_ASSERT_EQUAL(encode_n(t, "hello", 5, "world", 5, NULL, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(t), "<s> hello </s> </s> w or l d </s>");
    for (size_t i = 0; i < enc->n; i++)
        CU_ASSERT_EQUAL(enc->type_ids[i], 0);
    CU_ASSERT_EQUAL(enc->seq_ids[4], 1);
    /* truncation counts the four added tokens */
    bert_encode_params prm = bert_encode_default_params();
    prm.max_length = 7;
    prm.pad_to = 9;
    CU_ASSERT_EQUAL(encode_n(t, "hello", 5, "world", 5, &prm, &err), BERT_OK);
    CU_ASSERT_STRING_EQUAL(tokens_of(t), "<s> hello </s> </s> w or </s> <pad> <pad>");
    CU_ASSERT_EQUAL(enc->n_overflow_second, 2);
    CU_ASSERT_EQUAL(enc->attention_mask[7], 0);
    bert_tokenizer_free(t);
    /* add_prefix_space from tokenizer_config.json */
    CU_ASSERT_EQUAL_FATAL(
        load_bpe(dir, NULL, NULL, "{\"add_prefix_space\": true, \"model_max_length\": 9}", &t,
                 &err),
        BERT_OK);
    CU_ASSERT_EQUAL(bert_tokenizer_model_max_length(t), 9);
    CHECK_TOKENS(t, "world", "<s> \u0120wor l d </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,3 3,4 4,5 0,0");
    bert_tokenizer_free(t);
    /* the prefix space alone shares the first character's span (seen
     * without trim_offsets); "\n" has no token in this vocabulary */
    CU_ASSERT_EQUAL_FATAL(
        load_bpe(dir, NULL, NULL, "{\"add_prefix_space\": true, \"trim_offsets\": false}", &t,
                 &err),
        BERT_OK);
    CHECK_TOKENS(t, "\nhe", "<s> \u0120 he </s>");
    CU_ASSERT_STRING_EQUAL(offsets_of(), "0,0 0,1 1,3 0,0");
    CHECK_TOKENS(t, "hello  world", "<s> \u0120 hello \u0120 \u0120wor l d </s>");
    bert_tokenizer_free(t);
    /* the encoding's cache of merge results never serves another
     * tokenizer's results (here: the same vocabulary without "h e") */
    CU_ASSERT_EQUAL_FATAL(load_bpe(dir, NULL, "l l\n", NULL, &t, &err), BERT_OK);
    CHECK_TOKENS(t, "hez", "<s> h e </s>");
    bert_tokenizer_free(t);

    /* bad files are refused with a message naming the problem */
    CU_ASSERT_EQUAL(load_bpe(dir, "[\"h\", \"e\"]", NULL, NULL, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "JSON object"));
    CU_ASSERT_EQUAL(load_bpe(dir, "{\"h\": \"one\"}", NULL, NULL, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no valid id"));
    CU_ASSERT_EQUAL(load_bpe(dir, NULL, "h e\nh x\n", NULL, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "not in the vocabulary"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "merges.txt"));
    CU_ASSERT_EQUAL(load_bpe(dir, NULL, "h e\nh o\n", NULL, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "\"ho\""));
    CU_ASSERT_EQUAL(load_bpe(dir, NULL, "h e x\n", NULL, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "merges.txt:1"));
    /* tokenizer.json of the BPE kind: the same pipeline; a model without
     * "type" (2020 files) is recognised by its merges */
    char path[512];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    write_file(path, "{\"added_tokens\": [{\"id\": 18, \"content\": \"<mask>\", \"lstrip\": true}],"
                     " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\","
                     " \"add_prefix_space\": false, \"trim_offsets\": true},"
                     " \"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 2],"
                     " \"cls\": [\"<s>\", 0], \"trim_offsets\": true, \"add_prefix_space\": false},"
                     " \"model\": {\"vocab\": {\"<s>\": 0, \"<pad>\": 1, \"</s>\": 2, \"h\": 4,"
                     " \"e\": 5, \"he\": 6, \"<mask>\": 18}, \"merges\": [\"h e\"]}}");
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load(dir, &t, &err), BERT_OK);
    CHECK_TOKENS(t, "he <mask>", "<s> he <mask> </s>");
    bert_tokenizer_free(t);
    /* single_word: an added token inside a word is not matched */
    write_file(path, "{\"added_tokens\": [{\"id\": 7, \"content\": \"eh\", \"single_word\": true}],"
                     " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\"},"
                     " \"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 2],"
                     " \"cls\": [\"<s>\", 0]}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0,"
                     " \"<pad>\": 1, \"</s>\": 2, \"h\": 4, \"e\": 5, \"he\": 6, \"\u0120\": 8},"
                     " \"merges\": [\"h e\"]}}");
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load(dir, &t, &err), BERT_OK);
    CHECK_TOKENS(t, "eh heh eh", "<s> eh \u0120 he h \u0120 eh </s>");
    bert_tokenizer_free(t);
    write_file(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"h\": 0},"
                     " \"merges\": [[\"h\", \"q\"]]}, \"normalizer\": null,"
                     " \"pre_tokenizer\": {\"type\": \"ByteLevel\"},"
                     " \"post_processor\": {\"type\": \"RobertaProcessing\"}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "not in the vocabulary"));
    write_file(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"h\": 0}, \"merges\": []},"
                     " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Metaspace\"}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "Metaspace"));
    write_file(path, "{\"model\": {\"type\": \"BPE\", \"vocab\": [\"h\"], \"merges\": []},"
                     " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\"},"
                     " \"post_processor\": {\"type\": \"RobertaProcessing\"}}");
    CU_ASSERT_EQUAL(bert_tokenizer_load(dir, &t, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "JSON object"));
    remove(path);
    /* XLM-R's SentencePiece model alone is refused, not mistaken for absent */
    char sdir[300];
    snprintf(sdir, sizeof sdir, "%s/spm", tmpdir);
    mkdir(sdir, 0700);
    snprintf(path, sizeof path, "%s/sentencepiece.bpe.model", sdir);
    write_file(path, "x");
    CU_ASSERT_EQUAL(bert_tokenizer_load(sdir, &t, &err), BERT_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "SentencePiece"));
}

/* ---- runner ------------------------------------------------------------ */

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"clean_text", test_clean_text},
        {"cjk", test_cjk},
        {"lowercase_accents", test_lowercase_accents},
        {"punctuation", test_punctuation},
        {"special_in_text", test_special_in_text},
        {"wordpiece", test_wordpiece},
        {"vocab", test_vocab},
        {"offsets", test_offsets},
        {"empty_and_blank", test_empty_and_blank},
        {"pair_and_truncation", test_pair_and_truncation},
        {"padding", test_padding},
        {"long_truncated", test_long_truncated},
        {"invalid_utf8", test_invalid_utf8},
        {"megabyte_lines", test_megabyte_lines},
        {"load_dirs", test_load_dirs},
        {"bpe", test_bpe},
    };
    return tu_run_suite("tokenizer", setup, teardown, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
