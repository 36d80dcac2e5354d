/* evaluate.c - a trainer's model measured on a dataset (bert_evaluate in
 * bert_train.h): accuracy and macro-F1 of the classes, word-level accuracy
 * and seqeval's entity scores of the tags (over the words bert-tag finds,
 * so that they score what bert-tag prints), MLM loss and perplexity,
 * through <libbert/bert_metrics.h>. */
#include <stdlib.h>
#include <string.h>

#include "libbert/bert_metrics.h"
#include "libbert/internal.h"
#include "libbert/train/dataset.h"

/* What one pass over the dataset collects. */
typedef struct {
    int32_t *pred;   /* sequence: class per example */
    int32_t **wpred; /* token: tag per CoNLL word, per example */
    int32_t **hpred; /* token: tag per word as bert-tag finds them (each
                        word's first token, as aggregation "first") */
    double loss;     /* summed per example */
} preds;

/* The predicted tag of each of n words from its first token's logits
 * (first[w]: the token; -1, a word cut by truncation, gets "O" (o)): for
 * the CoNLL words (e->first_tok) and for the words bert-tag finds
 * (e->hw_first). */
static int32_t *word_tags(const int32_t *first, int32_t n,
                          const float *logits, size_t C, int32_t o)
{
    int32_t *wp = malloc(((size_t)n + 1) * sizeof *wp);
    for (int32_t w = 0; wp && w < n; w++)
        wp[w] = first[w] < 0
                    ? o
                    : (int32_t)bert__argmax(logits + (size_t)first[w] * C, C);
    return wp;
}

/* Runs t over d in batches of bs, shortest first. */
static int predict_all(bert_trainer *t, const bert_dataset *d,
                       const bert_fit_params *p, preds *pr, bert_error *err)
{
    size_t n = d->n, C = d->n_labels, bs = p->eval_batch_size, V;
    V = bert_trainer_config(t)->vocab_size;
    size_t *idx = malloc((n + 1) * sizeof *idx), lcap = 0;
    bert__padded bb = {0};
    float *logits = NULL;
    int o = -1;
    for (size_t i = 0; i < C; i++)
        if (strcmp(d->labels[i], "O") == 0)
            o = (int)i;
    int rc = idx ? bert__length_order(d, idx) : BERT_ENOMEM;
    for (size_t s = 0; rc == BERT_OK && s < n; s += bs) {
        size_t nb = n - s < bs ? n - s : bs;
        bert_train_batch b;
        if ((rc = bert__padded_fill(&bb, d, idx + s, nb, V, p->mlm_probability,
                                   p->seed, &b)))
            break;
        size_t rows = d->task == BERT_TRAIN_SEQUENCE ? nb : nb * b.seq_len;
        if (d->task != BERT_TRAIN_MLM && rows * C > lcap) {
            float *nl = realloc(logits, rows * C * sizeof(float));
            if (!nl) {
                rc = BERT_ENOMEM;
                break;
            }
            logits = nl;
            lcap = rows * C;
        }
        double loss;
        if ((rc = bert_trainer_predict(t, &b, logits, &loss, err)))
            break;
        pr->loss += loss * (double)nb;
        for (size_t i = 0; i < nb; i++) {
            size_t k = idx[s + i];
            if (d->task == BERT_TRAIN_SEQUENCE)
                pr->pred[k] = (int32_t)bert__argmax(logits + i * C, C);
            else if (d->task == BERT_TRAIN_TOKEN) {
                const float *lk = logits + i * b.seq_len * C;
                const bert__example *e = &d->ex[k];
                int32_t ot = o >= 0 ? o : 0;
                pr->wpred[k] = word_tags(e->first_tok, e->nwords, lk, C, ot);
                pr->hpred[k] = word_tags(e->hw_first, e->nhw, lk, C, ot);
                if (!pr->wpred[k] || !pr->hpred[k])
                    rc = BERT_ENOMEM;
            }
        }
    }
    if (rc == BERT_ENOMEM)
        bert__err(err, rc, "out of memory");
    free(idx);
    free(logits);
    bert__padded_free(&bb);
    return rc;
}

/* ---- the metrics of each task ------------------------------------------ */

static int score_sequence(const bert_dataset *d, const preds *pr,
                          bert_eval_result *res)
{
    size_t n = d->n;
    int32_t *gold = malloc((n + 1) * sizeof *gold);
    if (!gold)
        return BERT_ENOMEM;
    for (size_t i = 0; i < n; i++)
        gold[i] = d->ex[i].label;
    res->accuracy = bert_accuracy(pr->pred, gold, n);
    res->macro_f1 = bert_macro_f1(pr->pred, gold, n, d->n_labels);
    free(gold);
    res->score = res->accuracy;
    snprintf(res->text, sizeof res->text,
             "dev loss %.4f accuracy %.4f macro-F1 %.4f (%zu examples)",
             res->loss, res->accuracy, res->macro_f1, n);
    return BERT_OK;
}

/* Word level: every sentence's words in one row for the accuracy, their
 * tag names per sentence for the entities. */
static int score_token(const bert_dataset *d, const preds *pr,
                       bert_eval_result *res)
{
    size_t n = d->n, C = d->n_labels, words = 0, maxw = 0;
    for (size_t i = 0; i < n; i++) {
        words += (size_t)d->ex[i].nwords;
        if ((size_t)d->ex[i].nwords > maxw)
            maxw = (size_t)d->ex[i].nwords;
        if ((size_t)d->ex[i].nhw > maxw)
            maxw = (size_t)d->ex[i].nhw;
    }
    const char *const *L = (const char *const *)d->labels;
    int32_t *fg = malloc((words + 1) * sizeof *fg);
    int32_t *fp = malloc((words + 1) * sizeof *fp);
    const char **tg = malloc((maxw + 1) * sizeof *tg);
    const char **tp = malloc((maxw + 1) * sizeof *tp);
    /* "I-X" for each label "B-X" (else the label): a CoNLL word that is
     * several words for bert-tag ("U.S.") continues its entity in them */
    char **cont = calloc(C + 1, sizeof *cont);
    int rc = fg && fp && tg && tp && cont ? BERT_OK : BERT_ENOMEM;
    for (size_t c = 0; rc == BERT_OK && c < C; c++)
        if (strncmp(L[c], "B-", 2) == 0) {
            size_t len = strlen(L[c]);
            if (!(cont[c] = malloc(len + 1)))
                rc = BERT_ENOMEM;
            else {
                memcpy(cont[c], L[c], len + 1);
                cont[c][0] = 'I';
            }
        }
    res->entities = bert_tags_are_iob(L, d->n_labels);
    bert_entity_counts ec = {0, 0, 0};
    size_t at = 0;
    for (size_t i = 0; rc == BERT_OK && i < n; i++) {
        const bert__example *e = &d->ex[i];
        size_t nw = (size_t)e->nwords, nh = (size_t)e->nhw;
        memcpy(fg + at, e->word_tag, nw * sizeof *fg);
        memcpy(fp + at, pr->wpred[i], nw * sizeof *fp);
        at += nw;
        if (!res->entities)
            continue;
        /* entities over the words bert-tag finds, each tagged by its first
         * token: the entities bert-tag prints (aggregation "first", the
         * trainer's token models' default), as exact spans */
        for (size_t w = 0; w < nh; w++) {
            int32_t g = e->word_tag[e->hw_word[w]];
            int more = w > 0 && e->hw_word[w - 1] == e->hw_word[w];
            tg[w] = more && cont[g] ? cont[g] : L[g];
            tp[w] = L[pr->hpred[i][w]];
        }
        bert_entity_counts_add(&ec, tg, tp, nh, NULL);
    }
    if (rc == BERT_OK)
        res->accuracy = bert_accuracy(fp, fg, words);
    for (size_t c = 0; cont && c < C; c++)
        free(cont[c]);
    free(cont);
    free(fg);
    free(fp);
    free(tg);
    free(tp);
    if (rc == BERT_OK && res->entities) {
        bert_entity_scores(&ec, &res->precision, &res->recall, &res->f1);
        res->score = res->f1;
        snprintf(res->text, sizeof res->text,
                 "dev loss %.4f entity P %.4f R %.4f F1 %.4f, token "
                 "accuracy %.4f (%zu sentences)",
                 res->loss, res->precision, res->recall, res->f1,
                 res->accuracy, n);
    } else if (rc == BERT_OK) {
        res->score = res->accuracy;
        snprintf(res->text, sizeof res->text,
                 "dev loss %.4f token accuracy %.4f (%zu sentences)",
                 res->loss, res->accuracy, n);
    }
    return rc;
}

/* Replaced-token detection (rtd.c) on text d: the generator's draws from
 * the seed alone, so every epoch is scored on the same replacements. */
static int evaluate_rtd(bert_trainer *t, const bert_dataset *d,
                        const bert_fit_params *p, bert_eval_result *res,
                        bert_error *err)
{
    size_t n = d->n, bs = p->eval_batch_size, lcap = 0;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    bert__rtd r = {0};
    float *logits = NULL;
    double loss = 0;
    size_t tokens = 0, right = 0;
    bert_entity_counts replaced = {0, 0, 0}; /* "replaced" as the one class */
    int rc = idx ? bert__length_order(d, idx) : BERT_ENOMEM;
    if (rc)
        bert__err(err, rc, "out of memory");
    for (size_t s = 0; rc == BERT_OK && s < n; s += bs) {
        size_t nb = n - s < bs ? n - s : bs;
        bert_train_batch b;
        if ((rc = bert__rtd_fill(&r, p->generator, d, idx + s, nb,
                                 p->mlm_probability, p->seed, &b, err)))
            break;
        size_t rows = nb * b.seq_len;
        if (rows * 2 > lcap) {
            float *nl = realloc(logits, rows * 2 * sizeof *nl);
            if (!nl) {
                rc = bert__err(err, BERT_ENOMEM, "out of memory");
                break;
            }
            logits = nl;
            lcap = rows * 2;
        }
        double bl;
        if ((rc = bert_trainer_predict(t, &b, logits, &bl, err)))
            break;
        size_t bt = 0;
        for (size_t j = 0; j < rows; j++) {
            if (b.labels[j] < 0)
                continue;
            int pred = logits[2 * j + 1] > logits[2 * j];
            bt++;
            right += pred == b.labels[j];
            replaced.n_true += b.labels[j] == 1;
            replaced.n_pred += pred;
            replaced.n_correct += pred && b.labels[j] == 1;
        }
        loss += bl * (double)bt;
        tokens += bt;
    }
    free(idx);
    free(logits);
    bert__rtd_free(&r);
    if (rc)
        return rc;
    memset(res, 0, sizeof *res);
    res->n = n;
    res->loss = tokens ? loss / (double)tokens : 0;
    res->accuracy = tokens ? (double)right / (double)tokens : 0;
    bert_entity_scores(&replaced, &res->precision, &res->recall, &res->f1);
    res->score = -res->loss;
    snprintf(res->text, sizeof res->text,
             "dev replaced-token loss %.4f accuracy %.4f, replaced P %.4f "
             "R %.4f F1 %.4f (%zu texts, %zu tokens)",
             res->loss, res->accuracy, res->precision, res->recall, res->f1,
             n, tokens);
    return BERT_OK;
}

/* ---- bert_evaluate ----------------------------------------------------- */

int bert_evaluate(bert_trainer *t, const bert_dataset *d,
                  const bert_fit_params *params, bert_eval_result *res,
                  bert_error *err)
{
    bert_fit_params p;
    if (!t || !d || !res)
        return bert__err(err, BERT_EINVAL, "bert_evaluate: NULL argument");
    int rc = BERT__PARAMS(p, params, bert_fit_default_params, err);
    if (rc)
        return rc;
    if (p.eval_batch_size < 1)
        return bert__err(err, BERT_EINVAL,
                         "bert_evaluate: eval_batch_size must be at least 1");
    if (p.generator)
        return (rc = bert__check_rtd(t, p.generator, d, "bert_evaluate", err))
                   ? rc
                   : evaluate_rtd(t, d, &p, res, err);
    if ((rc = bert__check_dataset(t, d, "bert_evaluate", err)))
        return rc;
    size_t n = d->n;
    preds pr = {NULL, NULL, NULL, 0};
    if ((d->task == BERT_TRAIN_SEQUENCE &&
         !(pr.pred = calloc(n + 1, sizeof *pr.pred))) ||
        (d->task == BERT_TRAIN_TOKEN &&
         (!(pr.wpred = calloc(n + 1, sizeof *pr.wpred)) ||
          !(pr.hpred = calloc(n + 1, sizeof *pr.hpred)))))
        rc = bert__err(err, BERT_ENOMEM, "out of memory");
    if (rc == BERT_OK)
        rc = predict_all(t, d, &p, &pr, err);
    if (rc == BERT_OK) {
        memset(res, 0, sizeof *res);
        res->n = n;
        res->loss = n ? pr.loss / (double)n : 0;
        if (d->task == BERT_TRAIN_MLM) {
            res->perplexity = bert_perplexity(res->loss);
            res->score = -res->loss;
            snprintf(res->text, sizeof res->text,
                     "dev mlm loss %.4f (ppl %.1f)", res->loss,
                     res->perplexity);
        } else {
            rc = d->task == BERT_TRAIN_SEQUENCE ? score_sequence(d, &pr, res)
                                                : score_token(d, &pr, res);
            if (rc)
                bert__err(err, rc, "out of memory");
        }
    }
    for (size_t i = 0; pr.wpred && i < n; i++)
        free(pr.wpred[i]);
    for (size_t i = 0; pr.hpred && i < n; i++)
        free(pr.hpred[i]);
    free(pr.wpred);
    free(pr.hpred);
    free(pr.pred);
    return rc;
}
