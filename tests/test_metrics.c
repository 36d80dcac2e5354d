/* test_metrics.c - bert_accuracy, bert_macro_f1, bert_perplexity and the
 * seqeval entity counts against cases worked out by hand (the reasoning is
 * in the comments, tag by tag). */
#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

#include "libbert/bert_metrics.h"
#include "tests/testutil.h"

static void test_accuracy(void)
{
    const int32_t gold[] = {0, 0, 1, 1, 2};
    const int32_t pred[] = {0, 1, 1, 1, 0};
    CU_ASSERT_DOUBLE_EQUAL(bert_accuracy(pred, gold, 5), 0.6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(bert_accuracy(pred, gold, 0), 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(bert_accuracy(NULL, gold, 5), 0.0, 0);
}

static void test_macro_f1(void)
{
    const int32_t gold[] = {0, 0, 1, 1, 2};
    const int32_t pred[] = {0, 1, 1, 1, 0};
    /* class 0: tp 1 fp 1 fn 1 -> 2/4 = 0.5; class 1: tp 2 fp 1 fn 0 ->
     * 4/5 = 0.8; class 2: tp 0 -> 0.  Mean over 3: 1.3/3. */
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(pred, gold, 5, 3), 1.3 / 3, 1e-12);
    /* a fourth class seen nowhere counts 0: 1.3/4 */
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(pred, gold, 5, 4), 0.325, 1e-12);
    /* ids outside [0, n_classes) belong to no class: with 2 classes the
     * gold 2 (predicted 0) is still class 0's false positive and nobody's
     * miss, so class 0 stays 0.5, class 1 0.8: (0.5 + 0.8) / 2 */
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(pred, gold, 5, 2), 0.65, 1e-12);
    /* a predicted id out of range is no class's false positive: gold 0,
     * predicted 7 is only class 0's miss: tp 0 -> 0 */
    const int32_t g7[] = {0}, p7[] = {7};
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(p7, g7, 1, 1), 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(pred, gold, 5, 0), 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(pred, gold, 5, 1), 0.5, 1e-12);
    const int32_t all[] = {1, 1};
    CU_ASSERT_DOUBLE_EQUAL(bert_macro_f1(all, all, 2, 2), 0.5, 1e-12);
}

static void test_perplexity(void)
{
    CU_ASSERT_DOUBLE_EQUAL(bert_perplexity(log(100.0)), 100.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(bert_perplexity(0), 1.0, 0);
}

/* counts of one sentence, or {-1} when the call failed */
static bert_entity_counts one(const char *const *gold,
                              const char *const *pred, size_t n)
{
    bert_entity_counts c = {0, 0, 0};
    bert_error err;
    if (bert_entity_counts_add(&c, gold, pred, n, &err) != BERT_OK)
        c.n_true = c.n_pred = c.n_correct = (size_t)-1;
    return c;
}

#define EXPECT(c, t, p, k)                                                     \
    do {                                                                       \
        bert_entity_counts c_ = (c);                                           \
        CU_ASSERT_EQUAL(c_.n_true, (size_t)(t));                               \
        CU_ASSERT_EQUAL(c_.n_pred, (size_t)(p));                               \
        CU_ASSERT_EQUAL(c_.n_correct, (size_t)(k));                            \
        if (c_.n_true != (size_t)(t) || c_.n_pred != (size_t)(p) ||            \
            c_.n_correct != (size_t)(k))                                       \
            printf("\n  line %d: got true %zu pred %zu correct %zu, want "     \
                   "%d %d %d\n",                                               \
                   __LINE__, c_.n_true, c_.n_pred, c_.n_correct, (t), (p),    \
                   (k));                                                       \
    } while (0)

static void test_entities_iob2(void)
{
    /* I- without B- (IOB1 style) starts an entity: gold (1,2,PER) is
     * predicted as B-PER I-PER */
    const char *g1[] = {"O", "I-PER", "I-PER", "O"};
    const char *p1[] = {"O", "B-PER", "I-PER", "O"};
    EXPECT(one(g1, p1, 4), 1, 1, 1);
    /* a type change in the middle of a span: B-PER I-LOC I-PER is three
     * entities (0,0,PER) (1,1,LOC) (2,2,PER); gold is one (0,2,PER) */
    const char *g2[] = {"B-PER", "I-PER", "I-PER"};
    const char *p2[] = {"B-PER", "I-LOC", "I-PER"};
    EXPECT(one(g2, p2, 3), 1, 3, 0);
    /* a span at the end of the sentence is closed there */
    const char *g3[] = {"O", "B-LOC", "I-LOC"};
    EXPECT(one(g3, g3, 3), 1, 1, 1);
    /* ... and must match its whole extent: (2,2) is not (1,2) */
    const char *p3[] = {"O", "O", "B-LOC"};
    EXPECT(one(g3, p3, 3), 1, 1, 0);
    /* B- after B- of the same type: two entities (0,0) (1,2); the
     * prediction (0,2) matches neither */
    const char *g4[] = {"B-PER", "B-PER", "I-PER"};
    const char *p4[] = {"B-PER", "I-PER", "I-PER"};
    EXPECT(one(g4, p4, 3), 2, 1, 0);
    /* nothing predicted; a false entity in an all-O sentence */
    const char *o2[] = {"O", "O"};
    const char *x2[] = {"B-X", "O"};
    EXPECT(one(o2, x2, 2), 0, 1, 0);
    EXPECT(one(x2, o2, 2), 1, 0, 0);
    /* the empty sentence */
    EXPECT(one(NULL, NULL, 0), 0, 0, 0);
}

static void test_entities_iob1_iobes(void)
{
    /* IOB1: I-ORG I-ORG B-ORG O I-LOC = (0,1,ORG) (2,2,ORG) (4,4,LOC),
     * the same entities as IOB2's B-ORG I-ORG B-ORG O B-LOC */
    const char *g[] = {"I-ORG", "I-ORG", "B-ORG", "O", "I-LOC"};
    const char *p[] = {"B-ORG", "I-ORG", "B-ORG", "O", "B-LOC"};
    EXPECT(one(g, p, 5), 3, 3, 3);
    /* an entity of another type right after, without B-: I-ORG I-LOC is
     * (0,0,ORG) (1,1,LOC) */
    const char *g5[] = {"I-ORG", "I-LOC"};
    const char *p5[] = {"B-ORG", "B-LOC"};
    EXPECT(one(g5, p5, 2), 2, 2, 2);
    /* IOBES: S-PER B-LOC E-LOC E-LOC = (0,0,PER) (1,2,LOC) (3,3,LOC): E-
     * closes an entity, so the second E- starts one */
    const char *s[] = {"S-PER", "B-LOC", "E-LOC", "E-LOC"};
    EXPECT(one(s, s, 4), 3, 3, 3);
    const char *s2[] = {"S-PER", "B-LOC", "I-LOC", "E-LOC"};
    EXPECT(one(s, s2, 4), 3, 2, 1);
    /* tags without a prefix are B- of the whole tag: PER PER O is
     * (0,0,PER) (1,1,PER) */
    const char *u[] = {"PER", "PER", "O"};
    const char *b[] = {"B-PER", "B-PER", "O"};
    EXPECT(one(u, b, 3), 2, 2, 2);
}

static void test_entity_scores(void)
{
    /* three sentences summed: true 1+1+2, predicted 1+3+1, correct 1 */
    bert_entity_counts c = {0, 0, 0};
    bert_error err;
    const char *g1[] = {"O", "I-PER", "I-PER", "O"};
    const char *p1[] = {"O", "B-PER", "I-PER", "O"};
    const char *g2[] = {"B-PER", "I-PER", "I-PER"};
    const char *p2[] = {"B-PER", "I-LOC", "I-PER"};
    const char *g4[] = {"B-PER", "B-PER", "I-PER"};
    const char *p4[] = {"B-PER", "I-PER", "I-PER"};
    CU_ASSERT_EQUAL(bert_entity_counts_add(&c, g1, p1, 4, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_entity_counts_add(&c, g2, p2, 3, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_entity_counts_add(&c, g4, p4, 3, &err), BERT_OK);
    EXPECT(c, 4, 5, 1);
    double P, R, F;
    bert_entity_scores(&c, &P, &R, &F);
    CU_ASSERT_DOUBLE_EQUAL(P, 0.2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(R, 0.25, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(F, 2 * 0.2 * 0.25 / 0.45, 1e-12);
    /* zero denominators give 0, not NaN */
    bert_entity_counts z = {0, 0, 0};
    bert_entity_scores(&z, &P, &R, &F);
    CU_ASSERT(P == 0 && R == 0 && F == 0);
    bert_entity_scores(NULL, &P, NULL, NULL);
    CU_ASSERT(P == 0);
    /* a NULL tag: BERT_EINVAL, c unchanged */
    const char *bad[] = {"O", NULL};
    CU_ASSERT_EQUAL(bert_entity_counts_add(&c, bad, bad, 2, &err), BERT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "NULL"));
    CU_ASSERT_EQUAL(bert_entity_counts_add(NULL, g1, p1, 4, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_entity_counts_add(&c, NULL, p1, 4, NULL), BERT_EINVAL);
    EXPECT(c, 4, 5, 1);
}

static void test_tags_are_iob(void)
{
    const char *a[] = {"O", "B-PER", "I-PER", "B-LOC"};
    CU_ASSERT_EQUAL(bert_tags_are_iob(a, 4), 1);
    const char *b[] = {"O", "S-PER"};
    CU_ASSERT_EQUAL(bert_tags_are_iob(b, 2), 0);
    const char *c[] = {"positive", "negative"};
    CU_ASSERT_EQUAL(bert_tags_are_iob(c, 2), 0);
    const char *d[] = {"O", NULL};
    CU_ASSERT_EQUAL(bert_tags_are_iob(d, 2), 0);
    CU_ASSERT_EQUAL(bert_tags_are_iob(a, 0), 0);
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"accuracy", test_accuracy},
        {"macro_f1", test_macro_f1},
        {"perplexity", test_perplexity},
        {"entities_iob2", test_entities_iob2},
        {"entities_iob1_iobes", test_entities_iob1_iobes},
        {"entity_scores", test_entity_scores},
        {"tags_are_iob", test_tags_are_iob},
    };
    return tu_run_suite("metrics", NULL, NULL, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
