/* test_readers.c - the training data readers (bert_reader_*: CSV, CoNLL,
 * plain text) on well-formed and malformed files written by the test:
 * records in order with their record / line numbers, quoting, skipped empty
 * lines, and errors that name the file and the record or line. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert_train.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/test_readers.XXXXXX";

/* Writes n bytes of s to DIR/name; returns the path (static buffer). */
static const char *put(const char *name, const char *s, size_t n)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(s, 1, n, f);
        fclose(f);
    }
    return path;
}
#define PUT(name, lit) put(name, lit, sizeof lit - 1)

static bert_reader *open_fmt(const char *path, bert_data_format fmt,
                             const char *pair, int *rc, bert_error *err)
{
    bert_reader_params p = bert_reader_default_params();
    p.format = fmt;
    p.pair_column = pair;
    bert_reader *r = NULL;
    *rc = bert_reader_open(path, &p, &r, err);
    return r;
}

static void test_csv(void)
{
    /* quoted commas, quotes and a newline; an empty line; extra column */
    const char *path = PUT("a.csv", "id,text,label,pair\n"
                                    "1,\"good, very\",pos,x\n"
                                    "\n"
                                    "2,\"say \"\"hi\"\"\nthere\",neg,y\n");
    int rc;
    bert_error err;
    bert_reader *r = open_fmt(path, BERT_DATA_CSV, "pair", &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    bert_record rec;
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_STRING_EQUAL(rec.text, "good, very");
    CU_ASSERT_EQUAL(rec.text_len, 10);
    CU_ASSERT_STRING_EQUAL(rec.label, "pos");
    CU_ASSERT_STRING_EQUAL(rec.pair, "x");
    CU_ASSERT_EQUAL(rec.line, 2);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_STRING_EQUAL(rec.text, "say \"hi\"\nthere");
    CU_ASSERT_STRING_EQUAL(rec.label, "neg");
    /* records, not lines: the empty line is none (libcsv skips it), the
     * quoted newline is inside this one */
    CU_ASSERT_EQUAL(rec.line, 3);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 0);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 0);
    bert_reader_free(r);
    bert_reader_free(NULL);
}

static void test_csv_malformed(void)
{
    int rc;
    bert_error err;
    bert_record rec;
    /* a short record: the good ones before it come first, then the error
     * names the file and the record (the header is record 1) */
    const char *path = PUT("short.csv", "text,label\ngood,positive\nbad\n"
                                        "late,negative\n");
    bert_reader *r = open_fmt(path, BERT_DATA_CSV, NULL, &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "short.csv: record 3 has 1 fields"));
    bert_reader_free(r);
    /* a header without the label column, or the pair column asked for */
    path = PUT("nolabel.csv", "text,tag\na,b\n");
    r = open_fmt(path, BERT_DATA_CSV, NULL, &rc, &err);
    CU_ASSERT_EQUAL(rc, BERT_EFORMAT);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "nolabel.csv: header lacks column 'label'"));
    path = PUT("nopair.csv", "text,label\na,b\n");
    r = open_fmt(path, BERT_DATA_CSV, "text_pair", &rc, &err);
    CU_ASSERT_EQUAL(rc, BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "header lacks column 'text_pair'"));
    /* an empty file */
    path = PUT("empty.csv", "");
    r = open_fmt(path, BERT_DATA_CSV, NULL, &rc, &err);
    CU_ASSERT_EQUAL(rc, BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "empty.csv: empty file"));
    /* a file that is not there */
    r = open_fmt("/nonexistent/x.csv", BERT_DATA_CSV, NULL, &rc, &err);
    CU_ASSERT_EQUAL(rc, BERT_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "/nonexistent/x.csv: "));
}

static void test_conll(void)
{
    int rc;
    bert_error err;
    bert_record rec;
    /* blank lines between (and before) sentences, an extra column, no
     * newline at the end */
    const char *path = PUT("a.conll", "\nJohn\tB-PER\nSmith\tI-PER\tNNP\n\n\n"
                                      "Paris\tB-LOC\n.\tO");
    bert_reader *r = open_fmt(path, BERT_DATA_CONLL, NULL, &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL_FATAL(rec.n_words, 2);
    CU_ASSERT_STRING_EQUAL(rec.words[0], "John");
    CU_ASSERT_STRING_EQUAL(rec.tags[1], "I-PER");
    CU_ASSERT_EQUAL(rec.line, 4); /* the blank line that ends it */
    CU_ASSERT_PTR_NULL(rec.text);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL_FATAL(rec.n_words, 2);
    CU_ASSERT_STRING_EQUAL(rec.words[1], ".");
    CU_ASSERT_STRING_EQUAL(rec.tags[1], "O");
    CU_ASSERT_EQUAL(rec.line, 8); /* one past the last line */
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 0);
    bert_reader_free(r);
    /* a line without a TAB: its line number */
    path = PUT("bad.conll", "John\tB-PER\n\nParis B-LOC\n");
    r = open_fmt(path, BERT_DATA_CONLL, NULL, &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), BERT_EFORMAT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "bad.conll:3: expected token<TAB>tag"));
    bert_reader_free(r);
}

static void test_text(void)
{
    int rc;
    bert_error err;
    bert_record rec;
    /* a NUL byte inside a line, a CR kept, an empty line, no final '\n' */
    const char *path = put("a.txt", "one\0two\nthree\r\n\nlast", 20);
    bert_reader *r = open_fmt(path, BERT_DATA_TEXT, NULL, &rc, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL(rec.text_len, 7);
    CU_ASSERT_EQUAL(memcmp(rec.text, "one\0two", 7), 0);
    CU_ASSERT_EQUAL(rec.line, 1);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_STRING_EQUAL(rec.text, "three\r");
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_EQUAL(rec.text_len, 0);
    CU_ASSERT_EQUAL(rec.line, 3);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 1);
    CU_ASSERT_STRING_EQUAL(rec.text, "last");
    CU_ASSERT_EQUAL(rec.line, 4);
    CU_ASSERT_EQUAL(bert_reader_next(r, &rec, &err), 0);
    bert_reader_free(r);
}

static void test_bad_arguments(void)
{
    bert_error err;
    bert_reader *r;
    bert_record rec;
    bert_reader_params p = bert_reader_default_params();
    CU_ASSERT_EQUAL(p.format, BERT_DATA_CSV);
    CU_ASSERT_STRING_EQUAL(p.text_column, "text");
    CU_ASSERT_STRING_EQUAL(p.label_column, "label");
    CU_ASSERT_PTR_NULL(p.pair_column);
    CU_ASSERT_EQUAL(bert_reader_open(NULL, NULL, &r, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_reader_open("x", NULL, NULL, &err), BERT_EINVAL);
    p.format = (bert_data_format)9;
    CU_ASSERT_EQUAL(bert_reader_open("x", &p, &r, &err), BERT_EINVAL);
    p = bert_reader_default_params();
    p.label_column = NULL;
    CU_ASSERT_EQUAL(bert_reader_open("x", &p, &r, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_reader_next(NULL, &rec, &err), BERT_EINVAL);
}

static int setup(void) { return mkdtemp(dir) ? 0 : -1; }

static int teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"csv", test_csv},
        {"csv_malformed", test_csv_malformed},
        {"conll", test_conll},
        {"text", test_text},
        {"bad_arguments", test_bad_arguments},
    };
    return tu_run_suite("readers", setup, teardown, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
