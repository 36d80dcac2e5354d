/* test_batch.c - the batched pipelines.  bert_classify_batch against
 * bert_classify_text_ex, text by text:
 *  - one sequence per run (batch_size 1) gives the same bits; packed,
 *    length-sorted runs (batch_size 3, a token cap) the same within float
 *    rounding, results in input order, pairs included;
 *  - window mode: the mean over windows, n_windows as the single call;
 *  - a text that cannot be classified (invalid UTF-8, NULL) fails alone,
 *    with its status, message and byte offset; the others are unaffected;
 *  - the progress callback sees every run and cancels with BERT_ECANCELED;
 *  - misuse: a token model, too small an output, batch_size 0.
 * bert_tag_batch against bert_tag_text: every aggregation, stride windows of
 * a long text among short ones; per-text errors, cancel, misuse.
 * Models: the bert-seq-uncased and bert-token-cased fixtures of
 * $SHARED_DIR/fixtures (skips with 77 when absent). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "tests/testutil.h"

static char fixtures[4096];
static bert_model *m;
static bert_session *s;
static char *texts_buf;
static const char *texts[64];
static size_t lens[64], n_texts;

static int setup(void)
{
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/bert-seq-uncased", fixtures);
    snprintf(path, sizeof path, "%s/texts.txt", dir);
    size_t len;
    if (!(texts_buf = tu_read_file(path, &len)))
        return -1;
    /* one text per line */
    char *p = texts_buf;
    while (*p && n_texts < 64) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        texts[n_texts] = p;
        lens[n_texts++] = strlen(p);
        if (!nl)
            break;
        p = nl + 1;
    }
    bert_error err;
    if (bert_model_load(dir, NULL, &m, &err) != BERT_OK ||
        bert_session_create(m, NULL, &s, &err) != BERT_OK) {
        fprintf(stderr, "%s: %s\n", dir, err.text);
        return -1;
    }
    return 0;
}

static int teardown(void)
{
    bert_session_free(s);
    bert_model_free(m);
    free(texts_buf);
    return 0;
}

static double maxdiff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - (double)b[i]);
        if (!(x <= d))
            d = isnan(x) ? INFINITY : x;
    }
    return d;
}

/* Classifies texts (with pairs) in one batch and one by one; exact: the
 * same bits expected. */
static void compare(const char *const *tx, const size_t *ln,
                    const char *const *pairs, size_t n,
                    const bert_classify_params *p, int exact)
{
    size_t C = bert_model_config(m)->num_labels;
    bert_classify_result *r = calloc(n, sizeof *r);
    float *lg = calloc(n * C, sizeof *lg), *sc = calloc(n * C, sizeof *sc);
    float *l1 = calloc(C, sizeof *l1), *s1 = calloc(C, sizeof *s1);
    bert_error err;
    int rc = bert_classify_batch(s, tx, ln, pairs, NULL, n, p, r, lg, sc,
                                 n * C, &err);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    for (size_t i = 0; i < n; i++) {
        int label;
        size_t nw;
        const char *pair = pairs ? pairs[i] : NULL;
        rc = bert_classify_text_ex(s, tx[i], ln[i], pair,
                                   pair ? strlen(pair) : 0, p, l1, s1, C,
                                   &label, &nw, &err);
        CU_ASSERT_EQUAL(rc, BERT_OK);
        CU_ASSERT_EQUAL(r[i].status, BERT_OK);
        CU_ASSERT_EQUAL(r[i].label, label);
        CU_ASSERT_EQUAL(r[i].n_windows, nw);
        CU_ASSERT(r[i].n_tokens >= 2);
        if (exact) {
            CU_ASSERT(memcmp(lg + i * C, l1, C * sizeof *l1) == 0);
            CU_ASSERT(memcmp(sc + i * C, s1, C * sizeof *s1) == 0);
        } else {
            CU_ASSERT(maxdiff(lg + i * C, l1, C) < 1e-5);
            CU_ASSERT(maxdiff(sc + i * C, s1, C) < 1e-5);
        }
    }
    free(r);
    free(lg);
    free(sc);
    free(l1);
    free(s1);
}

static void test_one_per_run(void)
{
    bert_classify_params p = bert_classify_default_params();
    p.batch.batch_size = 1;
    compare(texts, lens, NULL, n_texts, &p, 1);
}

static void test_packed(void)
{
    bert_classify_params p = bert_classify_default_params();
    compare(texts, lens, NULL, n_texts, &p, 0);
    p.batch.batch_size = 3;
    p.batch.max_batch_tokens = 40;
    compare(texts, lens, NULL, n_texts, &p, 0);
    /* sentence pairs: each text with the next */
    const char *pairs[64];
    for (size_t i = 0; i < n_texts; i++)
        pairs[i] = i % 3 == 2 ? NULL : texts[(i + 1) % n_texts];
    compare(texts, lens, pairs, n_texts, &p, 0);
    /* truncation: a short max_length cuts most texts */
    p.window.max_length = 8;
    compare(texts, lens, pairs, n_texts, &p, 0);
}

static void test_windows(void)
{
    /* all texts joined: a long one between short ones */
    size_t total = 0;
    for (size_t i = 0; i < n_texts; i++)
        total += lens[i] + 1;
    char *all = malloc(total + 1), *q = all;
    for (size_t i = 0; i < n_texts; i++) {
        memcpy(q, texts[i], lens[i]);
        q += lens[i];
        *q++ = ' ';
    }
    *q = '\0';
    const char *tx[4] = {texts[0], all, texts[1], all};
    size_t ln[4] = {lens[0], (size_t)(q - all), lens[1], 600};
    while (ln[3] > 0 && ((unsigned char)all[ln[3]] & 0xc0) == 0x80)
        ln[3]--;
    bert_classify_params p = bert_classify_default_params();
    p.window.mode = BERT_LONG_WINDOWS;
    p.window.max_length = 32;
    p.window.stride = 7;
    p.batch.batch_size = 5;
    compare(tx, ln, NULL, 4, &p, 0);
    p.batch.batch_size = 1;
    compare(tx, ln, NULL, 4, &p, 1);
    free(all);
}

static void test_item_errors(void)
{
    size_t C = bert_model_config(m)->num_labels;
    const char *tx[4] = {texts[0], "caf\xc3 au lait", NULL, texts[2]};
    size_t ln[4] = {lens[0], 12, 0, lens[2]};
    bert_classify_result r[4];
    float sc[4 * 8], s1[8];
    int label;
    bert_error err;
    CU_ASSERT_FATAL(C <= 8);
    memset(sc, 0x7f, sizeof sc);
    CU_ASSERT_EQUAL(bert_classify_batch(s, tx, ln, NULL, NULL, 4, NULL, r,
                                        NULL, sc, 4 * C, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(r[1].status, BERT_EUTF8);
    CU_ASSERT_EQUAL(r[1].error.byte_offset, 3);
    CU_ASSERT(r[1].error.text[0] != '\0');
    CU_ASSERT_EQUAL(r[1].label, -1);
    CU_ASSERT_EQUAL(sc[1 * C], 0.0f);
    CU_ASSERT_EQUAL(r[2].status, BERT_EINVAL);
    CU_ASSERT_EQUAL(r[2].label, -1);
    for (size_t i = 0; i < 4; i += 3) {
        CU_ASSERT_EQUAL(r[i].status, BERT_OK);
        CU_ASSERT_EQUAL(r[i].error.text[0], '\0');
        CU_ASSERT_EQUAL(bert_classify_text(s, tx[i], ln[i], NULL, 0, s1, C,
                                           &label, NULL),
                        BERT_OK);
        CU_ASSERT_EQUAL(r[i].label, label);
        CU_ASSERT(maxdiff(sc + i * C, s1, C) < 1e-5);
    }
}

typedef struct {
    size_t calls, tokenized, last_done, total, cancel_at;
} progress_log;

static int on_progress(size_t done, size_t total, void *data)
{
    progress_log *g = data;
    g->calls++;
    if (total == 0) {
        g->tokenized++;
        return 0;
    }
    CU_ASSERT(done > g->last_done);
    g->last_done = done;
    g->total = total;
    return g->cancel_at && done >= g->cancel_at;
}

static void test_progress_cancel(void)
{
    size_t C = bert_model_config(m)->num_labels;
    bert_classify_result *r = calloc(n_texts, sizeof *r);
    bert_classify_params p = bert_classify_default_params();
    progress_log g;
    memset(&g, 0, sizeof g);
    p.batch.batch_size = 4;
    p.batch.progress = on_progress;
    p.batch.progress_data = &g;
    bert_error err;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, lens, NULL, NULL, n_texts,
                                        &p, r, NULL, NULL, 0, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(g.tokenized, n_texts);
    CU_ASSERT_EQUAL(g.total, n_texts);
    CU_ASSERT_EQUAL(g.last_done, n_texts);
    CU_ASSERT_EQUAL(g.calls, n_texts + (n_texts + 3) / 4);
    memset(&g, 0, sizeof g);
    g.cancel_at = 4;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, lens, NULL, NULL, n_texts,
                                        &p, r, NULL, NULL, 0, &err),
                    BERT_ECANCELED);
    CU_ASSERT_EQUAL(err.status, BERT_ECANCELED);
    CU_ASSERT_EQUAL(g.last_done, 4);
    (void)C;
    free(r);
}

static void test_misuse(void)
{
    size_t C = bert_model_config(m)->num_labels;
    bert_classify_result r[2];
    float sc[16];
    bert_error err;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, lens, NULL, NULL, 2, NULL,
                                        r, NULL, sc, 2 * C - 1, &err),
                    BERT_ERANGE);
    bert_classify_params p = bert_classify_default_params();
    p.batch.batch_size = 0;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, lens, NULL, NULL, 2, &p, r,
                                        NULL, NULL, 0, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_classify_batch(s, NULL, lens, NULL, NULL, 2, NULL, r,
                                        NULL, NULL, 0, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, lens, NULL, NULL, 0, NULL,
                                        NULL, NULL, NULL, 0, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(bert_classify_batch(NULL, texts, lens, NULL, NULL, 2,
                                        NULL, r, NULL, NULL, 0, &err),
                    BERT_EINVAL);
    /* a token-classification model */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/bert-token-cased", fixtures);
    bert_model *tm;
    bert_session *ts;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(dir, NULL, &tm, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_session_create(tm, NULL, &ts, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_classify_batch(ts, texts, lens, NULL, NULL, 2, NULL,
                                        r, NULL, NULL, 0, &err),
                    BERT_EINVAL);
    bert_session_free(ts);
    bert_model_free(tm);
}

/* ---- bert_tag_batch ------------------------------------------------------- */

/* results of bert_tag_batch equal bert_tag_text's: the same entities and
 * words, scores within float rounding. */
static void same_tags(const bert_tag_result *a, const bert_tag_result *b)
{
    CU_ASSERT_EQUAL(a->n, b->n);
    CU_ASSERT_EQUAL(a->n_words, b->n_words);
    CU_ASSERT_EQUAL(a->n_windows, b->n_windows);
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        const bert_entity *x = &a->entities[i], *y = &b->entities[i];
        CU_ASSERT_STRING_EQUAL(x->entity, y->entity);
        CU_ASSERT_STRING_EQUAL(x->word, y->word);
        CU_ASSERT_EQUAL(x->label, y->label);
        CU_ASSERT_EQUAL(x->index, y->index);
        CU_ASSERT(x->start == y->start && x->end == y->end);
        CU_ASSERT(x->byte_start == y->byte_start && x->byte_end == y->byte_end);
        CU_ASSERT(fabs((double)x->score - (double)y->score) < 1e-5);
    }
    for (size_t i = 0; i < a->n_words && i < b->n_words; i++) {
        const bert_tag_word *x = &a->words[i], *y = &b->words[i];
        CU_ASSERT_EQUAL(x->label, y->label);
        CU_ASSERT(x->byte_start == y->byte_start && x->byte_end == y->byte_end);
        CU_ASSERT(fabs((double)x->score - (double)y->score) < 1e-5);
    }
}

static void tag_compare(bert_session *ts,
                        const char *const *tx, const size_t *ln, size_t n,
                        const bert_tag_params *p)
{
    bert_tag_result **r = calloc(n, sizeof *r);
    bert_error *errs = calloc(n, sizeof *errs), err;
    bert_tag_result *one = bert_tag_result_create();
    for (size_t i = 0; i < n; i++)
        r[i] = bert_tag_result_create();
    CU_ASSERT_EQUAL_FATAL(bert_tag_batch(ts, tx, ln, n, p, r, errs, &err),
                          BERT_OK);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(errs[i].status, BERT_OK);
        CU_ASSERT_EQUAL(bert_tag_text(ts, tx[i], ln[i], p, one, &err),
                        BERT_OK);
        same_tags(r[i], one);
    }
    for (size_t i = 0; i < n; i++)
        bert_tag_result_free(r[i]);
    bert_tag_result_free(one);
    free(r);
    free(errs);
}

static int tag_open(bert_model **tm, bert_session **ts)
{
    char dir[4200];
    bert_error err;
    snprintf(dir, sizeof dir, "%s/bert-token-cased", fixtures);
    if (bert_model_load(dir, NULL, tm, &err) != BERT_OK)
        return -1;
    return bert_session_create(*tm, NULL, ts, &err) == BERT_OK ? 0 : -1;
}

static void test_tag_batch(void)
{
    bert_model *tm;
    bert_session *ts;
    CU_ASSERT_EQUAL_FATAL(tag_open(&tm, &ts), 0);
    bert_tag_params p = bert_tag_default_params();
    static const bert_aggregation aggs[] = {BERT_AGG_NONE, BERT_AGG_SIMPLE,
                                            BERT_AGG_FIRST, BERT_AGG_AVERAGE,
                                            BERT_AGG_MAX};
    for (size_t a = 0; a < 5; a++) {
        p.aggregation = aggs[a];
        p.batch.batch_size = a + 1;
        tag_compare(ts, texts, lens, n_texts, &p);
    }
    /* stride windows: a long text (several windows) between short ones */
    size_t total = 0;
    for (size_t i = 0; i < n_texts; i++)
        total += lens[i] + 1;
    char *all = malloc(4 * total + 1), *q = all;
    for (int rep = 0; rep < 4; rep++)
        for (size_t i = 0; i < n_texts; i++) {
            memcpy(q, texts[i], lens[i]);
            q += lens[i];
            *q++ = ' ';
        }
    const char *tx[3] = {texts[0], all, texts[3]};
    size_t ln[3] = {lens[0], (size_t)(q - all), lens[3]};
    p.aggregation = BERT_AGG_FIRST;
    p.stride = 16;
    p.batch.batch_size = 4;
    p.batch.max_batch_tokens = 700;
    tag_compare(ts, tx, ln, 3, &p);
    free(all);
    bert_session_free(ts);
    bert_model_free(tm);
}

static void test_tag_batch_errors(void)
{
    bert_model *tm;
    bert_session *ts;
    CU_ASSERT_EQUAL_FATAL(tag_open(&tm, &ts), 0);
    const char *tx[3] = {texts[0], "Paris \xff", NULL};
    size_t ln[3] = {lens[0], 7, 0};
    bert_tag_result *r[3] = {bert_tag_result_create(),
                             bert_tag_result_create(),
                             bert_tag_result_create()};
    bert_tag_result *one = bert_tag_result_create();
    bert_error errs[3], err;
    CU_ASSERT_EQUAL(bert_tag_batch(ts, tx, ln, 3, NULL, r, errs, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(errs[0].status, BERT_OK);
    CU_ASSERT_EQUAL(errs[1].status, BERT_EUTF8);
    CU_ASSERT_EQUAL(errs[1].byte_offset, 6);
    CU_ASSERT_EQUAL(r[1]->n, 0);
    CU_ASSERT_EQUAL(errs[2].status, BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_tag_text(ts, tx[0], ln[0], NULL, one, &err),
                    BERT_OK);
    same_tags(r[0], one);
    /* cancel after the first run */
    progress_log g;
    memset(&g, 0, sizeof g);
    g.cancel_at = 1;
    bert_tag_params p = bert_tag_default_params();
    p.batch.batch_size = 1;
    p.batch.progress = on_progress;
    p.batch.progress_data = &g;
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, lens, 3, &p, r, errs, &err),
                    BERT_ECANCELED);
    CU_ASSERT_EQUAL(g.last_done, 1);
    CU_ASSERT_EQUAL(r[0]->n, 0);
    /* misuse: a sequence model, NULL arrays, batch_size 0 */
    CU_ASSERT_EQUAL(bert_tag_batch(s, texts, lens, 3, NULL, r, errs, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, lens, 3, NULL, NULL, errs, &err),
                    BERT_EINVAL);
    p.batch.batch_size = 0;
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, lens, 3, &p, r, errs, &err),
                    BERT_EINVAL);
    p = bert_tag_default_params();
    p.aggregation = BERT_AGG_FIRST;
    p.stride = 62; /* the fixture's maximum length is 64 */
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, lens, 3, &p, r, errs, &err),
                    BERT_EINVAL);
    for (int i = 0; i < 3; i++)
        bert_tag_result_free(r[i]);
    bert_tag_result_free(one);
    bert_session_free(ts);
    bert_model_free(tm);
}

int main(int argc, char **argv)
{
    const char *sh = getenv("SHARED_DIR");
    snprintf(fixtures, sizeof fixtures, "%s/fixtures",
             sh && *sh ? sh : "../shared");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/bert-seq-uncased/texts.txt", fixtures);
    if (access(probe, R_OK) != 0) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", probe);
        return 77;
    }
    static const tu_test all[] = {
        {"one_sequence_per_run_same_bits", test_one_per_run},
        {"packed_runs_pairs_truncation", test_packed},
        {"windows", test_windows},
        {"item_errors", test_item_errors},
        {"progress_cancel", test_progress_cancel},
        {"misuse", test_misuse},
        {"tag_batch_equals_tag_text", test_tag_batch},
        {"tag_batch_errors_cancel_misuse", test_tag_batch_errors},
    };
    return tu_run_suite("classify_batch", setup, teardown, all,
                        sizeof all / sizeof all[0], argc, argv);
}
