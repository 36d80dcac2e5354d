/* test_embed.c - sentence embeddings (bert_embed_texts, bert_pool) against
 * the fixtures: expected.safetensors holds Hugging Face's last_hidden_state
 * and attention_mask for texts.txt, from which the test pools the expected
 * embeddings itself (sentence-transformers' mean over the mask, or the
 * [CLS] row, then optionally x / max(||x||, 1e-12)).  The hand-computed
 * bert_pool cases run without ../shared; the fixture cases are skipped
 * (status 77, with a message) when it is absent. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "libbert/safetensors.h"
#include "tests/testutil.h"

#define TOL 1e-4

static char fixtures[4096];

static void test_pool_by_hand(void)
{
    /* 3 tokens, H = 2 */
    const float h[] = {1, 2, 3, 4, 5, 0};
    float out[2] = {-1, -1};
    CU_ASSERT_EQUAL(bert_pool(h, 3, 2, BERT_POOL_MEAN, 0, out, NULL), BERT_OK);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 3.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 2.0, 1e-6);
    CU_ASSERT_EQUAL(bert_pool(h, 3, 2, BERT_POOL_CLS, 0, out, NULL), BERT_OK);
    CU_ASSERT(out[0] == 1 && out[1] == 2);
    /* mean (3, 2) normalised: / sqrt(13) */
    CU_ASSERT_EQUAL(bert_pool(h, 3, 2, BERT_POOL_MEAN, 1, out, NULL), BERT_OK);
    CU_ASSERT_DOUBLE_EQUAL(out[0], 3 / sqrt(13.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(out[1], 2 / sqrt(13.0), 1e-6);
    /* a zero vector stays zero (the norm is clamped at 1e-12) */
    const float z[] = {0, 0};
    CU_ASSERT_EQUAL(bert_pool(z, 1, 2, BERT_POOL_CLS, 1, out, NULL), BERT_OK);
    CU_ASSERT(out[0] == 0 && out[1] == 0);
    bert_error err;
    CU_ASSERT_EQUAL(bert_pool(NULL, 1, 2, BERT_POOL_CLS, 0, out, &err),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(err.status, BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_pool(h, 0, 2, BERT_POOL_CLS, 0, out, NULL),
                    BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_pool(h, 1, 2, (bert_pooling)7, 0, out, &err),
                    BERT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "pooling 7"));
    bert_embed_params p = bert_embed_default_params();
    CU_ASSERT_EQUAL(p.pooling, BERT_POOL_MEAN);
    CU_ASSERT_EQUAL(p.normalize, 0);
    CU_ASSERT_EQUAL(p.max_length, 0);
}

/* expected[b][H] for pooling/normalize from HF's hidden states and mask */
static void expected_pool(const float *hid, const int64_t *mask, size_t B,
                          size_t S, size_t H, bert_pooling pool, int norm,
                          float *out)
{
    for (size_t b = 0; b < B; b++) {
        float *o = out + b * H;
        double cnt = 0;
        for (size_t s = 0; s < S; s++)
            cnt += mask[b * S + s] != 0;
        for (size_t h = 0; h < H; h++) {
            double acc = 0;
            if (pool == BERT_POOL_CLS) {
                acc = hid[(b * S) * H + h];
            } else {
                for (size_t s = 0; s < S; s++)
                    if (mask[b * S + s])
                        acc += hid[(b * S + s) * H + h];
                acc /= cnt;
            }
            o[h] = (float)acc;
        }
        if (norm) {
            double ss = 0;
            for (size_t h = 0; h < H; h++)
                ss += (double)o[h] * o[h];
            double nr = sqrt(ss) > 1e-12 ? sqrt(ss) : 1e-12;
            for (size_t h = 0; h < H; h++)
                o[h] = (float)(o[h] / nr);
        }
    }
}

static void check_fixture(const char *name)
{
    char dir[8192], path[8300];
    snprintf(dir, sizeof dir, "%s/%s", fixtures, name);
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    bert_st_file st;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert__st_open(path, &st, &err), BERT_OK);
    const bert_st_tensor *th = bert__st_find(&st, "last_hidden_state");
    const bert_st_tensor *tm = bert__st_find(&st, "attention_mask");
    CU_ASSERT_PTR_NOT_NULL_FATAL(th);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tm);
    size_t B = th->shape[0], S = th->shape[1], H = th->shape[2];
    float *hid = malloc(th->nelem * sizeof *hid);
    int64_t *mask = malloc(tm->nelem * sizeof *mask);
    bert__st_to_f32(th, hid);
    CU_ASSERT_EQUAL_FATAL(bert__st_to_i64(tm, mask), BERT_OK);

    /* texts.txt: one example per '\n' line, a TAB makes a pair */
    snprintf(path, sizeof path, "%s/texts.txt", dir);
    size_t len;
    char *txt = tu_read_file(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(txt);
    const char **texts = calloc(B, sizeof *texts), **pairs = calloc(B, sizeof *pairs);
    size_t *lens = calloc(B, sizeof *lens), *plens = calloc(B, sizeof *plens);
    size_t b = 0;
    for (char *line = txt, *end = txt + len; line < end && b < B; b++) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            nl = end;
        char *tab = memchr(line, '\t', (size_t)(nl - line));
        texts[b] = line;
        lens[b] = (size_t)((tab ? tab : nl) - line);
        if (tab) {
            pairs[b] = tab + 1;
            plens[b] = (size_t)(nl - tab - 1);
        }
        line = nl + 1;
    }
    CU_ASSERT_EQUAL_FATAL(b, B);

    bert_model *m;
    bert_session *s;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(dir, NULL, &m, &err), BERT_OK);
    /* a small arena: the texts take several runs */
    bert_session_params sp = bert_session_default_params();
    sp.max_tokens = 256;
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, &sp, &s, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(bert_model_config(m)->hidden, H);
    float *got = malloc(B * H * sizeof *got), *want = malloc(B * H * sizeof *want);
    static const struct {
        bert_pooling pool;
        int norm;
        const char *name;
    } modes[] = {{BERT_POOL_MEAN, 0, "mean"},
                 {BERT_POOL_CLS, 0, "cls"},
                 {BERT_POOL_MEAN, 1, "mean+normalize"},
                 {BERT_POOL_CLS, 1, "cls+normalize"}};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        bert_embed_params p = bert_embed_default_params();
        p.pooling = modes[k].pool;
        p.normalize = modes[k].norm;
        int rc = bert_embed_texts(s, texts, lens, pairs, plens, B, &p, got,
                                  B * H, &err);
        CU_ASSERT_EQUAL(rc, BERT_OK);
        if (rc != BERT_OK) {
            printf("\n  %s %s: %s: %s", name, modes[k].name, bert_strerror(rc),
                   err.text);
            continue;
        }
        expected_pool(hid, mask, B, S, H, modes[k].pool, modes[k].norm, want);
        double md = 0;
        for (size_t i = 0; i < B * H; i++)
            if (fabs(got[i] - want[i]) > md)
                md = fabs(got[i] - want[i]);
        printf("\n  %s %s: %zu texts, max diff %.3g", name, modes[k].name, B, md);
        CU_ASSERT(md < TOL);
    }
    /* too small an output: BERT_ERANGE, out untouched */
    got[0] = 42;
    CU_ASSERT_EQUAL(bert_embed_texts(s, texts, lens, pairs, plens, B, NULL, got,
                                     B * H - 1, &err),
                    BERT_ERANGE);
    CU_ASSERT_EQUAL(got[0], 42);
    /* NUL-terminated texts (lens NULL), no pairs; invalid UTF-8 names the
     * text and leaves out untouched */
    const char *two[] = {"a gorgeous film", "\xff"};
    CU_ASSERT_EQUAL(bert_embed_texts(s, two, NULL, NULL, NULL, 1, NULL, got, H,
                                     &err),
                    BERT_OK);
    CU_ASSERT_NOT_EQUAL(got[0], 42);
    got[0] = 42;
    CU_ASSERT_EQUAL(bert_embed_texts(s, two, NULL, NULL, NULL, 2, NULL, got,
                                     2 * H, &err),
                    BERT_EUTF8);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "text 1"));
    CU_ASSERT_EQUAL(got[0], 42);
    CU_ASSERT_EQUAL(bert_embed_texts(NULL, two, NULL, NULL, NULL, 1, NULL, got,
                                     H, &err),
                    BERT_EINVAL);
    bert_session_free(s);
    bert_model_free(m);
    free(got);
    free(want);
    free(texts);
    free(pairs);
    free(lens);
    free(plens);
    free(txt);
    free(hid);
    free(mask);
    bert__st_close(&st);
}

static void test_fixture_base(void) { check_fixture("bert-base-gelu-new"); }
static void test_fixture_seq(void) { check_fixture("bert-seq-uncased"); }
static void test_fixture_distil(void) { check_fixture("distilbert-seq-uncased"); }
static void test_fixture_token(void) { check_fixture("bert-token-cased"); }

int main(int argc, char **argv)
{
    const char *sh = getenv("SHARED_DIR");
    snprintf(fixtures, sizeof fixtures, "%s/fixtures", sh && *sh ? sh : "../shared");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/bert-seq-uncased/expected.safetensors",
             fixtures);
    static const tu_test hand[] = {{"pool_by_hand", test_pool_by_hand}};
    static const tu_test all[] = {
        {"pool_by_hand", test_pool_by_hand},
        {"fixture_base_model", test_fixture_base},
        {"fixture_sequence_model", test_fixture_seq},
        {"fixture_distilbert", test_fixture_distil},
        {"fixture_token_model", test_fixture_token},
    };
    if (access(probe, R_OK) != 0) {
        int rc = tu_run_suite("embed", NULL, NULL, hand, 1, argc, argv);
        printf("SKIP: the fixture tests need %s (set SHARED_DIR); only the "
               "hand-computed pooling ran\n", probe);
        return rc ? rc : 77;
    }
    return tu_run_suite("embed", NULL, NULL, all, sizeof all / sizeof all[0],
                        argc, argv);
}
