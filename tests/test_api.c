/* test_api.c - contracts of the public API that the adversarial run of
 * issue 15 found broken:
 *  - every public function takes NULL where its siblings do (returns an
 *    error, 0 or NULL; never crashes): bert_model_function,
 *    bert_apply_function, the bert_trainer_* getters and state calls,
 *    bert_tag_text / bert_tag_aggregate with ignore_labels NULL and
 *    n_ignore 3;
 *  - bert_utf8_valid stops at the first byte the tokenizers refuse;
 *  - bert_default_model_dir's search order and errors;
 *  - a regression model (problem_type "regression") scores with the raw
 *    logits, as transformers' text-classification pipeline
 *    (function_to_apply none): the bert-seq-uncased fixture with its
 *    config.json marked regression must give scores equal to the logits
 *    Hugging Face computed (expected.json), while num_labels > 1 without it
 *    keeps softmax.
 * Fixtures from $SHARED_DIR/fixtures (skipped, 77, without them). */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "libbert/bert_train.h"
#include "tests/testutil.h"

static char fix_seq[4096], fix_tok[4096], tmpdir[64];

static int setup(void)
{
    const char *sh = getenv("SHARED_DIR");
    snprintf(fix_seq, sizeof fix_seq, "%s/fixtures/bert-seq-uncased",
             sh && *sh ? sh : "../shared");
    snprintf(fix_tok, sizeof fix_tok, "%s/fixtures/bert-token-cased",
             sh && *sh ? sh : "../shared");
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_api.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void)
{
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- NULL arguments (item 9) --------------------------------------------- */

static void test_null_model_functions(void)
{
    float l[2] = {1, 2}, sc[2] = {-1, -1};
    CU_ASSERT_EQUAL(bert_model_function(NULL), BERT_FUNC_NONE);
    bert_apply_function(NULL, BERT_FUNC_DEFAULT, l, sc);
    CU_ASSERT_EQUAL(sc[0], -1);
    bert_model *m;
    bert_error err;
    if (bert_model_load(fix_seq, NULL, &m, &err) != BERT_OK) {
        CU_FAIL("fixture");
        return;
    }
    bert_apply_function(m, BERT_FUNC_SOFTMAX, NULL, sc);
    bert_apply_function(m, BERT_FUNC_SOFTMAX, l, NULL);
    CU_ASSERT_EQUAL(sc[0], -1);
    bert_apply_function(m, BERT_FUNC_SOFTMAX, l, sc);
    CU_ASSERT_DOUBLE_EQUAL(sc[0] + sc[1], 1.0, 1e-6);
    CU_ASSERT_EQUAL(bert_model_function(m), BERT_FUNC_SOFTMAX);
    bert_model_free(m);
}

static void test_null_trainer(void)
{
    bert_error err;
    CU_ASSERT_EQUAL(bert_trainer_steps(NULL), 0);
    CU_ASSERT_EQUAL(bert_trainer_num_params(NULL), 0);
    CU_ASSERT_EQUAL(bert_trainer_max_length(NULL, NULL), 0);
    CU_ASSERT_EQUAL(bert_trainer_lr(NULL), 0.0);
    CU_ASSERT_PTR_NULL(bert_trainer_label(NULL, 0));
    CU_ASSERT_PTR_NULL(bert_trainer_config(NULL));
    CU_ASSERT_EQUAL(bert_trainer_save_state(NULL, "/tmp/x", &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_trainer_load_state(NULL, "/tmp/x", &err), BERT_EINVAL);
    bert_trainer_free(NULL);
}

static void test_null_ignore_labels(void)
{
    bert_model *m;
    bert_session *s;
    bert_error err;
    if (bert_model_load(fix_tok, NULL, &m, &err) != BERT_OK) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
    bert_tag_result *r = bert_tag_result_create();
    bert_tag_params p = bert_tag_default_params();
    p.ignore_labels = NULL;
    p.n_ignore = 3;
    const char t[] = "Angela Merkel visited Paris.";
    CU_ASSERT_EQUAL(bert_tag_text(s, t, strlen(t), &p, r, &err), BERT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "ignore_labels"));
    bert_tag_tokens in;
    memset(&in, 0, sizeof in);
    CU_ASSERT_EQUAL(bert_tag_aggregate(&in, &p, r, &err), BERT_EINVAL);
    p.n_ignore = 0; /* NULL with 0: keep everything */
    CU_ASSERT_EQUAL(bert_tag_text(s, t, strlen(t), &p, r, &err), BERT_OK);
    bert_tag_result_free(r);
    bert_session_free(s);
    bert_model_free(m);
}

/* ---- regression scores (the tools item) ----------------------------------- */

/* tmpdir/NAME: the fixture's files linked, config.json with problem_type
 * set to `problem` (NULL: removed). */
static int copy_fixture(const char *name, const char *problem, char *out,
                        size_t cap)
{
    static const char *const files[] = {"model.safetensors", "vocab.txt",
                                        "tokenizer.json",
                                        "tokenizer_config.json",
                                        "special_tokens_map.json"};
    char a[8300], b[8300];
    snprintf(out, cap, "%s/%s", tmpdir, name);
    if (mkdir(out, 0755))
        return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", fix_seq, files[i]);
        snprintf(b, sizeof b, "%s/%s", out, files[i]);
        if (access(a, F_OK) == 0 && symlink(a, b))
            return -1;
    }
    snprintf(a, sizeof a, "%s/config.json", fix_seq);
    snprintf(b, sizeof b, "%s/config.json", out);
    json_t *c = json_load_file(a, 0, NULL);
    if (!c)
        return -1;
    if (problem)
        json_object_set_new(c, "problem_type", json_string(problem));
    else
        json_object_del(c, "problem_type");
    int rc = json_dump_file(c, b, JSON_INDENT(1));
    json_decref(c);
    return rc;
}

/* Kernel tiers by name, and what AUTO resolves to can always run. */
/* bert_utf8_valid: the strict rule (Rust's str) the tokenizers apply. */
static void test_utf8_valid(void)
{
    static const struct {
        const char *s;
        size_t len, want;
    } cases[] = {
        {"plain ASCII", 11, 11},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 14},
        {"ab\xc0\x80", 4, 2},          /* overlong */
        {"ab\xed\xa0\x80", 5, 2},      /* surrogate */
        {"ab\xf4\x90\x80\x80", 6, 2},  /* above U+10FFFF */
        {"ab\xe2\x82", 4, 2},          /* truncated */
        {"ab\x80", 3, 2},              /* stray continuation byte */
        {"\xff", 1, 0},
        {"", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CU_ASSERT_EQUAL(bert_utf8_valid(cases[i].s, cases[i].len),
                        cases[i].want);
    CU_ASSERT_EQUAL(bert_utf8_valid(NULL, 3), 0);
}

static void test_kernels_names(void)
{
    CU_ASSERT_EQUAL(bert_kernels_from_name("auto"), BERT_KERNELS_AUTO);
    CU_ASSERT_EQUAL(bert_kernels_from_name("avx512"), BERT_KERNELS_AVX512);
    CU_ASSERT_EQUAL(bert_kernels_from_name("avx2"), BERT_KERNELS_AVX2);
    CU_ASSERT_EQUAL(bert_kernels_from_name("blis"), BERT_KERNELS_BLIS);
    CU_ASSERT_EQUAL(bert_kernels_from_name("AVX2"), -1);
    CU_ASSERT_EQUAL(bert_kernels_from_name(""), -1);
    CU_ASSERT_EQUAL(bert_kernels_from_name(NULL), -1);
    CU_ASSERT(bert_kernels_supported(bert_kernels_best()));
    CU_ASSERT(bert_kernels_supported(BERT_KERNELS_BLIS));
    CU_ASSERT_FALSE(bert_kernels_supported((bert_kernels)42));
    /* precisions: names and back */
    const bert_precision ps[3] = {BERT_PRECISION_FP32, BERT_PRECISION_BF16,
                                  BERT_PRECISION_INT8};
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(bert_precision_from_name(bert_precision_name(ps[i])),
                        (int)ps[i]);
    CU_ASSERT_EQUAL(bert_precision_from_name("int8"), BERT_PRECISION_INT8);
    CU_ASSERT_EQUAL(bert_precision_from_name("fp16"), -1);
    CU_ASSERT_EQUAL(bert_precision_from_name(NULL), -1);
}

/* bert_model_has_pooler: BertForSequenceClassification has one,
 * BertForTokenClassification none. */
static void test_has_pooler(void)
{
    bert_model *m;
    bert_error err;
    CU_ASSERT_EQUAL(bert_model_has_pooler(NULL), 0);
    CU_ASSERT_EQUAL_FATAL(bert_model_load(fix_seq, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_model_has_pooler(m), 1);
    bert_model_free(m);
    CU_ASSERT_EQUAL_FATAL(bert_model_load(fix_tok, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_model_has_pooler(m), 0);
    bert_model_free(m);
}

static void test_regression_raw_scores(void)
{
    char dir[8300], path[8300];
    CU_ASSERT_EQUAL_FATAL(copy_fixture("regression", "regression", dir, sizeof dir), 0);
    snprintf(path, sizeof path, "%s/expected.json", fix_seq);
    json_error_t je;
    json_t *ex = json_load_file(path, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &je);
    if (!ex)
        fprintf(stderr, "%s: %s\n", path, je.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    bert_model *m;
    bert_session *s;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(dir, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_model_function(m), BERT_FUNC_NONE);
    json_t *exs = json_object_get(ex, "examples");
    size_t i, n = 0;
    json_t *e;
    double maxd = 0;
    json_array_foreach(exs, i, e) {
        json_t *jt = json_object_get(e, "text"), *jp = json_object_get(e, "text_pair");
        const char *t = json_string_value(jt), *pr = json_string_value(jp);
        size_t tl = json_string_length(jt), pl = pr ? json_string_length(jp) : 0;
        json_t *lg = json_object_get(e, "logits");
        if (!t || json_array_size(lg) != 2)
            continue;
        float sc[2];
        int label;
        int rc = bert_classify_text(s, t, tl, pr, pl, sc, 2, &label, &err);
        CU_ASSERT_EQUAL(rc, BERT_OK);
        for (int k = 0; k < 2 && rc == BERT_OK; k++) {
            double d = fabs(sc[k] - json_number_value(json_array_get(lg, k)));
            if (d > maxd)
                maxd = d;
        }
        n++;
    }
    printf("\n  regression: %zu examples, scores vs HF logits max diff %.3g\n",
           n, maxd);
    CU_ASSERT(n > 0);
    CU_ASSERT(maxd < 1e-4);
    bert_session_free(s);
    bert_model_free(m);
    json_decref(ex);
    /* single_label_classification: softmax, as before */
    CU_ASSERT_EQUAL_FATAL(copy_fixture("single", "single_label_classification", dir, sizeof dir), 0);
    CU_ASSERT_EQUAL_FATAL(bert_model_load(dir, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_model_function(m), BERT_FUNC_SOFTMAX);
    bert_model_free(m);
}

/* bert_default_model_dir: $LIBBERT_MODELDIR first, the places it tried in
 * the error, the argument checks. */
static void test_default_model_dir(void)
{
    char base[200], dir[4096], want[300], cmd[400];
    bert_error err;
    snprintf(base, sizeof base, "%s/models", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/sentiment' && : > "
             "'%s/sentiment/config.json'", base, base);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    setenv("LIBBERT_MODELDIR", base, 1);
    snprintf(want, sizeof want, "%s/sentiment", base);
    CU_ASSERT_EQUAL(bert_default_model_dir("sentiment", dir, sizeof dir, &err),
                    BERT_OK);
    CU_ASSERT_STRING_EQUAL(dir, want);
    /* a name that is nowhere: every place tried is named */
    CU_ASSERT_EQUAL(bert_default_model_dir("nosuch", dir, sizeof dir, &err),
                    BERT_EMISSING);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "nosuch"));
    snprintf(want, sizeof want, "%s/nosuch or ", base);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, want));
    CU_ASSERT_EQUAL(bert_default_model_dir("sentiment", dir, 8, &err),
                    BERT_ERANGE);
    CU_ASSERT_EQUAL(bert_default_model_dir("a/b", dir, sizeof dir, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_default_model_dir(NULL, dir, sizeof dir, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_default_model_dir("ner", NULL, 0, &err), BERT_EINVAL);
    unsetenv("LIBBERT_MODELDIR");
}

int main(int argc, char **argv)
{
    const char *sh = getenv("SHARED_DIR");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/fixtures/bert-seq-uncased/expected.json",
             sh && *sh ? sh : "../shared");
    if (access(probe, R_OK) != 0) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", probe);
        return 77;
    }
    static const tu_test tests[] = {
        {"null_model_functions", test_null_model_functions},
        {"null_trainer", test_null_trainer},
        {"null_ignore_labels", test_null_ignore_labels},
        {"regression_raw_scores", test_regression_raw_scores},
        {"kernels_names", test_kernels_names},
        {"utf8_valid", test_utf8_valid},
        {"default_model_dir", test_default_model_dir},
        {"has_pooler", test_has_pooler},
    };
    return tu_run_suite("api", setup, teardown, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
