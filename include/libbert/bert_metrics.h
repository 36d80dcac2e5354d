/*
 * libbert/bert_metrics.h - evaluation metrics of classifiers and taggers,
 * computed as bert-train reports them (and as scikit-learn and seqeval
 * define them):
 *
 *   double acc = bert_accuracy(pred, gold, n);
 *   double f1 = bert_macro_f1(pred, gold, n, num_labels);
 *
 *   bert_entity_counts c = {0};
 *   for each sentence: bert_entity_counts_add(&c, gold_tags, pred_tags, n, &err);
 *   double p, r, f;
 *   bert_entity_scores(&c, &p, &r, &f);
 *
 * No model is needed: these are pure functions of the labels.  Conventions
 * are those of <libbert/bert_tokenizer.h>.
 */
#ifndef LIBBERT_BERT_METRICS_H
#define LIBBERT_BERT_METRICS_H

#include <libbert/bert_tokenizer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- classification ---------------------------------------------------- */

/* The fraction of i in [0, n) with pred[i] == gold[i]; 0 when n is 0 or an
 * array is NULL. */
BERT_API double bert_accuracy(const int32_t *pred, const int32_t *gold,
                              size_t n);

/* Macro-averaged F1 over the classes 0 .. n_classes-1: the mean of the
 * per-class F1 = 2 tp / (2 tp + fp + fn), a class with no true positive
 * counting 0 -- including a class that occurs in neither gold nor pred, so
 * this is scikit-learn's f1_score(average="macro",
 * labels=range(n_classes), zero_division=0).  Ids outside [0, n_classes)
 * belong to no class (a gold id there is a miss of no class, a predicted
 * one a false positive of none).  0 when n_classes is 0 or an array is NULL
 * with n > 0. */
BERT_API double bert_macro_f1(const int32_t *pred, const int32_t *gold,
                              size_t n, size_t n_classes);

/* ---- masked language modelling ----------------------------------------- */

/* exp(mean_loss): the perplexity of a mean cross-entropy in nats. */
BERT_API double bert_perplexity(double mean_loss);

/* ---- entities (seqeval / conlleval) ------------------------------------ */

/* Entity counts, summed over sentences. */
typedef struct bert_entity_counts {
    size_t n_true;    /* entities in the gold tags (seqeval's support) */
    size_t n_pred;    /* entities in the predicted tags */
    size_t n_correct; /* predicted entities with exactly the span and type
                         of a gold entity */
} bert_entity_counts;

/* Adds one sentence of n tags to c.  Entities are read from the tags as
 * seqeval does by default (mode None, the conlleval rules), so IOB1 and
 * IOB2 (and IOBES) tags all work:
 *  - a tag is "O" or PREFIX-TYPE; an entity is a maximal run of tags of one
 *    TYPE; B- (and S-) always starts a new entity, I- (or E-) continues the
 *    entity before it when that has the same type and did not end with E-
 *    or S-, else starts one (an I- without a B- is an entity; a type change
 *    in the middle of a span splits it in two);
 *  - an entity still open at the end of the sentence ends there;
 *  - a tag that is neither "O" nor X-TYPE (no '-' after its first letter)
 *    is a B- of the type named by the whole tag.
 * gold and pred are arrays of n NUL-terminated tags (borrowed for the
 * call).  Returns BERT_OK, or BERT_EINVAL (c NULL, an array or a tag NULL),
 * leaving c unchanged. */
BERT_API int bert_entity_counts_add(bert_entity_counts *c,
                                    const char *const *gold,
                                    const char *const *pred, size_t n,
                                    bert_error *err);

/* Micro-averaged precision n_correct / n_pred, recall n_correct / n_true
 * and F1 2PR / (P + R) of c, each 0 where its denominator is 0 (seqeval
 * with zero_division=0).  Any output pointer may be NULL. */
BERT_API void bert_entity_scores(const bert_entity_counts *c,
                                 double *precision, double *recall,
                                 double *f1);

/* 1 when every one of the n labels is "O", "B-TYPE" or "I-TYPE" (an IOB
 * tag set, for which entity scores make sense), else 0 (also for n 0 or a
 * NULL label). */
BERT_API int bert_tags_are_iob(const char *const *labels, size_t n);

#ifdef __cplusplus
}
#endif
#endif
