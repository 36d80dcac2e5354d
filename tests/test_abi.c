/* test_abi.c - parameter structs that grow (docs/abi.md):
 *  - every *_default_params() sets size to the struct's size;
 *  - every function that takes a *_params refuses size 0 (a struct not
 *    from the defaults), one byte short of the first sized release, and a
 *    size larger than the library's (headers newer than the library) with
 *    BERT_EINVAL and a message, before reading past the caller's struct;
 *    nested structs (window, batch) must have exactly their size;
 *  - bert__params_read (libbert/internal.h): a caller built against an
 *    older, shorter struct gets its fields and the defaults of the newer
 *    ones.
 * (bert_fit, bert_evaluate and bert_trainer_init_word2vec read their
 * params the same way, after the trainer and dataset: tests/test_fit.)
 * Models: the bert-seq-uncased and bert-token-cased fixtures of
 * $SHARED_DIR/fixtures (the model tests skip without them). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "libbert/bert_train.h"
#include "libbert/internal.h"
#include "tests/testutil.h"

static char seq_dir[4096], tok_dir[4096];
static int have_fixtures;

/* The bad sizes of a struct of `size` bytes. */
static size_t bad_size(int k, size_t size)
{
    return k == 0 ? 0 : k == 1 ? size - 1 : size + 8;
}

/* A params struct copied into a buffer with room past it, its size field
 * replaced by bad size k.  The buffer is zeroed after the struct. */
#define BAD(buf, p, k)                                                         \
    (memset(buf, 0, sizeof buf), memcpy(buf, &(p), sizeof(p)),                 \
     *(size_t *)(void *)(buf) = bad_size(k, sizeof(p)), (const void *)(buf))

static void test_defaults_set_size(void)
{
    CU_ASSERT_EQUAL(bert_model_default_params().size, sizeof(bert_model_params));
    CU_ASSERT_EQUAL(bert_session_default_params().size,
                    sizeof(bert_session_params));
    CU_ASSERT_EQUAL(bert_window_default_params().size,
                    sizeof(bert_window_params));
    CU_ASSERT_EQUAL(bert_batch_default_params().size, sizeof(bert_batch_params));
    bert_classify_params cp = bert_classify_default_params();
    CU_ASSERT_EQUAL(cp.size, sizeof cp);
    CU_ASSERT_EQUAL(cp.window.size, sizeof cp.window);
    CU_ASSERT_EQUAL(cp.batch.size, sizeof cp.batch);
    CU_ASSERT_EQUAL(bert_embed_default_params().size, sizeof(bert_embed_params));
    bert_tag_params tp = bert_tag_default_params();
    CU_ASSERT_EQUAL(tp.size, sizeof tp);
    CU_ASSERT_EQUAL(tp.batch.size, sizeof tp.batch);
    CU_ASSERT_EQUAL(bert_encode_default_params().size,
                    sizeof(bert_encode_params));
    CU_ASSERT_EQUAL(bert_vocab_trainer_default_params().size,
                    sizeof(bert_vocab_trainer_params));
    CU_ASSERT_EQUAL(bert_train_default_params().size, sizeof(bert_train_params));
    CU_ASSERT_EQUAL(bert_reader_default_params().size,
                    sizeof(bert_reader_params));
    CU_ASSERT_EQUAL(bert_dataset_default_params().size,
                    sizeof(bert_dataset_params));
    CU_ASSERT_EQUAL(bert_fit_default_params().size, sizeof(bert_fit_params));
    CU_ASSERT_EQUAL(bert_word2vec_default_params().size,
                    sizeof(bert_word2vec_params));
}

/* Sizes checked by the functions that need no model. */
static void test_sizes_no_model(void)
{
    unsigned char buf[1024];
    bert_error err;
    for (int k = 0; k < 3; k++) {
        bert_vocab_trainer_params vp = bert_vocab_trainer_default_params();
        bert_vocab_trainer *vt = NULL;
        CU_ASSERT_EQUAL(bert_vocab_trainer_create(BAD(buf, vp, k), &vt, &err),
                        BERT_EINVAL);
        CU_ASSERT_PTR_NULL(vt);
        CU_ASSERT(strstr(err.text, "params->size") != NULL);
        bert_train_params trp = bert_train_default_params();
        bert_trainer *t = NULL;
        CU_ASSERT_EQUAL(bert_trainer_create(NULL, "/nonexistent/config.json",
                                            BAD(buf, trp, k), &t, &err),
                        BERT_EINVAL);
        bert_reader_params rp = bert_reader_default_params();
        bert_reader *r = NULL;
        CU_ASSERT_EQUAL(bert_reader_open("/nonexistent.csv", BAD(buf, rp, k),
                                         &r, &err),
                        BERT_EINVAL);
        bert_tag_params tp = bert_tag_default_params();
        bert_tag_result *res = bert_tag_result_create();
        bert_tag_tokens tt;
        memset(&tt, 0, sizeof tt);
        CU_ASSERT_EQUAL(bert_tag_aggregate(&tt, BAD(buf, tp, k), res, &err),
                        BERT_EINVAL);
        bert_tag_result_free(res);
        bert_model_params mp = bert_model_default_params();
        bert_model *m = NULL;
        CU_ASSERT_EQUAL(bert_model_load("/nonexistent", BAD(buf, mp, k), &m,
                                        &err),
                        BERT_EINVAL);
    }
    /* the message says what to do */
    bert_reader_params rp = bert_reader_default_params();
    bert_reader *r;
    CU_ASSERT_EQUAL(bert_reader_open("/nonexistent.csv", BAD(buf, rp, 0), &r,
                                     &err),
                    BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "bert_reader_default_params") != NULL);
    CU_ASSERT_EQUAL(bert_reader_open("/nonexistent.csv", BAD(buf, rp, 2), &r,
                                     &err),
                    BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "newer headers") != NULL);
}

/* Sizes checked by the functions that run a model. */
static void test_sizes_models(void)
{
    if (!have_fixtures)
        return;
    unsigned char buf[1024];
    bert_error err;
    bert_model *m, *tm;
    bert_session *s, *ts;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(seq_dir, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_model_load(tok_dir, NULL, &tm, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_session_create(tm, NULL, &ts, &err), BERT_OK);
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    bert_encoding *enc = bert_encoding_create();
    const char *texts[1] = {"a gorgeous film"};
    bert_classify_result res[1];
    float out[4096];
    for (int k = 0; k < 3; k++) {
        bert_session_params sp = bert_session_default_params();
        bert_session *s2 = NULL;
        CU_ASSERT_EQUAL(bert_session_create(m, BAD(buf, sp, k), &s2, &err),
                        BERT_EINVAL);
        CU_ASSERT_PTR_NULL(s2);
        bert_encode_params ep = bert_encode_default_params();
        CU_ASSERT_EQUAL(bert_tokenizer_encode(tok, "a", 1, NULL, 0,
                                              BAD(buf, ep, k), enc, &err),
                        BERT_EINVAL);
        bert_classify_params cp = bert_classify_default_params();
        CU_ASSERT_EQUAL(bert_classify_text_ex(s, "a", 1, NULL, 0,
                                              BAD(buf, cp, k), NULL, out, 8,
                                              NULL, NULL, &err),
                        BERT_EINVAL);
        CU_ASSERT(strstr(err.text, "params->size") != NULL);
        CU_ASSERT_EQUAL(bert_classify_batch(s, texts, NULL, NULL, NULL, 1,
                                            BAD(buf, cp, k), res, NULL, NULL,
                                            0, &err),
                        BERT_EINVAL);
        bert_embed_params bp = bert_embed_default_params();
        CU_ASSERT_EQUAL(bert_embed_texts(s, texts, NULL, NULL, NULL, 1,
                                         BAD(buf, bp, k), out, 4096, &err),
                        BERT_EINVAL);
        CU_ASSERT(strstr(err.text, "params->size") != NULL);
        bert_window_params wp = bert_window_default_params();
        CU_ASSERT_EQUAL(bert_token_logits(ts, "a", 1, BAD(buf, wp, k), enc,
                                          out, 4096, NULL, &err),
                        BERT_EINVAL);
        CU_ASSERT(strstr(err.text, "params->size") != NULL);
        bert_tag_params tp = bert_tag_default_params();
        bert_tag_result *tr = bert_tag_result_create();
        bert_error te;
        CU_ASSERT_EQUAL(bert_tag_text(ts, "a", 1, BAD(buf, tp, k), tr, &err),
                        BERT_EINVAL);
        CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, NULL, 1, BAD(buf, tp, k),
                                       &tr, &te, &err),
                        BERT_EINVAL);
        bert_tag_result_free(tr);
        bert_dataset_params dp = bert_dataset_default_params();
        bert_dataset *d = NULL;
        CU_ASSERT_EQUAL(bert_dataset_load("/nonexistent.csv", tok,
                                          BAD(buf, dp, k), &d, &err),
                        BERT_EINVAL);
        CU_ASSERT(d == NULL && strstr(err.text, "params->size") != NULL);
    }
    /* nested structs must have exactly their size */
    bert_classify_params cp = bert_classify_default_params();
    cp.window.size = 0;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, NULL, NULL, NULL, 1, &cp,
                                        res, NULL, NULL, 0, &err),
                    BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "bert_classify_params.window") != NULL);
    cp = bert_classify_default_params();
    cp.batch.size = sizeof cp.batch + 1;
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, NULL, NULL, NULL, 1, &cp,
                                        res, NULL, NULL, 0, &err),
                    BERT_EINVAL);
    bert_tag_params tp = bert_tag_default_params();
    tp.batch.size = 0;
    bert_tag_result *tr = bert_tag_result_create();
    bert_error te;
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, NULL, 1, &tp, &tr, &te, &err),
                    BERT_EINVAL);
    /* and the defaults work */
    CU_ASSERT_EQUAL(bert_tag_batch(ts, texts, NULL, 1, NULL, &tr, &te, &err),
                    BERT_OK);
    CU_ASSERT_EQUAL(bert_classify_batch(s, texts, NULL, NULL, NULL, 1, NULL,
                                        res, NULL, NULL, 0, &err),
                    BERT_OK);
    bert_tag_result_free(tr);
    bert_encoding_free(enc);
    bert_session_free(ts);
    bert_model_free(tm);
    bert_session_free(s);
    bert_model_free(m);
}

/* A struct that grew: release 1 had {size, a}, release 2 appended b. */
typedef struct grown {
    size_t size;
    int a;
    int b;
} grown;

static void test_older_caller(void)
{
    grown def = {sizeof(grown), 1, 2}, p;
    bert_error err;
    /* a caller of release 1: its a, the default b */
    struct {
        size_t size;
        int a;
    } old = {offsetof(grown, b), 10};
    p = def;
    CU_ASSERT_EQUAL(bert__params_read(&p, sizeof p, &old, offsetof(grown, b),
                                      "grown_default", &err),
                    0);
    CU_ASSERT_EQUAL(p.size, sizeof(grown));
    CU_ASSERT_EQUAL(p.a, 10);
    CU_ASSERT_EQUAL(p.b, 2);
    /* a caller of release 2: both */
    grown cur = {sizeof(grown), 10, 20};
    p = def;
    CU_ASSERT_EQUAL(bert__params_read(&p, sizeof p, &cur, offsetof(grown, b),
                                      "grown_default", &err),
                    0);
    CU_ASSERT(p.a == 10 && p.b == 20);
    /* NULL: the defaults */
    p = def;
    CU_ASSERT_EQUAL(bert__params_read(&p, sizeof p, NULL, offsetof(grown, b),
                                      "grown_default", &err),
                    0);
    CU_ASSERT(p.a == 1 && p.b == 2);
    /* below the first release, or from the future */
    old.size = offsetof(grown, b) - 1;
    CU_ASSERT_EQUAL(bert__params_read(&p, sizeof p, &old, offsetof(grown, b),
                                      "grown_default", &err),
                    BERT_EINVAL);
    cur.size = sizeof(grown) + 4;
    CU_ASSERT_EQUAL(bert__params_read(&p, sizeof p, &cur, offsetof(grown, b),
                                      "grown_default", &err),
                    BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "grown_default()") != NULL);
}

int main(int argc, char **argv)
{
    const char *sh = getenv("SHARED_DIR");
    snprintf(seq_dir, sizeof seq_dir, "%s/fixtures/bert-seq-uncased",
             sh && *sh ? sh : "../shared");
    snprintf(tok_dir, sizeof tok_dir, "%s/fixtures/bert-token-cased",
             sh && *sh ? sh : "../shared");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/config.json", tok_dir);
    have_fixtures = access(probe, R_OK) == 0;
    static const tu_test tests[] = {
        {"defaults_set_size", test_defaults_set_size},
        {"sizes_checked_no_model", test_sizes_no_model},
        {"sizes_checked_with_models", test_sizes_models},
        {"older_caller_keeps_new_defaults", test_older_caller},
    };
    int rc = tu_run_suite("abi", NULL, NULL, tests,
                          sizeof tests / sizeof tests[0], argc, argv);
    if (!have_fixtures)
        printf("note: %s not found (set SHARED_DIR); the model checks did "
               "not run\n", tok_dir);
    return rc;
}
