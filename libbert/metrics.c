/* metrics.c - accuracy, macro-F1, perplexity and seqeval entity scores
 * (bert_metrics.h).  The entity reader is conlleval's, as seqeval ports it:
 * end_of_chunk / start_of_chunk over consecutive (prefix, type) pairs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "libbert/bert_metrics.h"
#include "libbert/internal.h"

double bert_accuracy(const int32_t *pred, const int32_t *gold, size_t n)
{
    if (!n || !pred || !gold)
        return 0;
    size_t correct = 0;
    for (size_t i = 0; i < n; i++)
        correct += pred[i] == gold[i];
    return (double)correct / (double)n;
}

double bert_macro_f1(const int32_t *pred, const int32_t *gold, size_t n,
                     size_t n_classes)
{
    if (!n_classes || (n && (!pred || !gold)))
        return 0;
    double f1sum = 0;
    for (size_t c = 0; c < n_classes; c++) {
        size_t tp = 0, fp = 0, fn = 0;
        for (size_t i = 0; i < n; i++) {
            int p = pred[i] == (int32_t)c, g = gold[i] == (int32_t)c;
            tp += p && g;
            fp += p && !g;
            fn += !p && g;
        }
        f1sum += tp ? 2.0 * tp / (2.0 * tp + fp + fn) : 0.0;
    }
    return f1sum / (double)n_classes;
}

double bert_perplexity(double mean_loss) { return exp(mean_loss); }

/* ---- entities ----------------------------------------------------------- */

/* "O" -> ('O', ""); "B-PER" -> ('B', "PER"); anything else -> ('B', tag). */
static void tag_split(const char *t, char *prefix, const char **type)
{
    if (strcmp(t, "O") == 0) {
        *prefix = 'O';
        *type = "";
    } else if (t[0] && t[1] == '-') {
        *prefix = t[0];
        *type = t + 2;
    } else {
        *prefix = 'B';
        *type = t;
    }
}

/* Did the entity that holds the previous tag (pp, pt) end before (p, t)? */
static int end_chunk(char pp, const char *pt, char p, const char *t)
{
    if (pp == 'E' || pp == 'S')
        return 1;
    if ((pp == 'B' || pp == 'I') && (p == 'B' || p == 'S' || p == 'O'))
        return 1;
    /* conlleval's '.' prefix (a sentence boundary) never ends a type */
    return pp != 'O' && pp != '.' && strcmp(pt, t) != 0;
}

/* Does an entity start at (p, t), after (pp, pt)? */
static int start_chunk(char pp, const char *pt, char p, const char *t)
{
    if (p == 'B' || p == 'S')
        return 1;
    if ((pp == 'E' || pp == 'S' || pp == 'O') && (p == 'E' || p == 'I'))
        return 1;
    return p != 'O' && p != '.' && strcmp(pt, t) != 0;
}

/* Reads the entities of one tag sequence in order, without allocating: the
 * state after tag i-1 is all it needs.  Entities come out with
 * non-decreasing starts. */
typedef struct {
    const char *const *tags;
    size_t n, i, begin;
    char pp;
    const char *pt;
} chunk_reader;

typedef struct {
    size_t b, e; /* [b, e] inclusive */
    const char *type;
} chunk;

static void reader_init(chunk_reader *r, const char *const *tags, size_t n)
{
    r->tags = tags;
    r->n = n;
    r->i = 0;
    r->begin = 0;
    r->pp = 'O';
    r->pt = "";
}

/* 1 and the next entity in *c, or 0 at the end.  The end of the sentence
 * reads as one more "O", which closes an open entity. */
static int reader_next(chunk_reader *r, chunk *c)
{
    while (r->i <= r->n) {
        size_t i = r->i++;
        char p = 'O';
        const char *t = "";
        if (i < r->n)
            tag_split(r->tags[i], &p, &t);
        int ended = end_chunk(r->pp, r->pt, p, t);
        if (ended) {
            c->b = r->begin;
            c->e = i - 1;
            c->type = r->pt;
        }
        if (start_chunk(r->pp, r->pt, p, t))
            r->begin = i;
        r->pp = p;
        r->pt = t;
        if (ended)
            return 1;
    }
    return 0;
}

int bert_entity_counts_add(bert_entity_counts *c, const char *const *gold,
                           const char *const *pred, size_t n, bert_error *err)
{
    const char *bad = !c ? "counts" : (n && !gold) ? "gold" : (n && !pred) ? "pred" : NULL;
    for (size_t i = 0; !bad && i < n; i++)
        if (!gold[i] || !pred[i])
            bad = !gold[i] ? "a gold tag" : "a predicted tag";
    if (bad)
        return bert__err(err, BERT_EINVAL, "bert_entity_counts_add: %s is NULL",
                         bad);
    bert_entity_counts add = {0, 0, 0};
    chunk_reader g, p, from;
    chunk cg, cp;
    reader_init(&p, pred, n);
    while (reader_next(&p, &cp))
        add.n_pred++;
    /* A gold entity is found when a predicted one has its span and type.
     * Both come in order of their start, so the search for the next gold
     * entity resumes at the first predicted entity that starts no earlier
     * than this one. */
    reader_init(&g, gold, n);
    reader_init(&from, pred, n);
    while (reader_next(&g, &cg)) {
        add.n_true++;
        chunk_reader q = from;
        for (;;) {
            if (!reader_next(&q, &cp))
                break;
            if (cp.b < cg.b) {
                from = q; /* starts before every later gold entity too */
                continue;
            }
            if (cp.b > cg.b)
                break;
            if (cp.e == cg.e && strcmp(cp.type, cg.type) == 0) {
                add.n_correct++;
                break;
            }
        }
    }
    c->n_true += add.n_true;
    c->n_pred += add.n_pred;
    c->n_correct += add.n_correct;
    return BERT_OK;
}

void bert_entity_scores(const bert_entity_counts *c, double *precision,
                        double *recall, double *f1)
{
    double P = 0, R = 0, F = 0;
    if (c) {
        P = c->n_pred ? (double)c->n_correct / (double)c->n_pred : 0;
        R = c->n_true ? (double)c->n_correct / (double)c->n_true : 0;
        F = P + R > 0 ? 2 * P * R / (P + R) : 0;
    }
    if (precision)
        *precision = P;
    if (recall)
        *recall = R;
    if (f1)
        *f1 = F;
}

int bert_tags_are_iob(const char *const *labels, size_t n)
{
    if (!n || !labels)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = labels[i];
        if (!s)
            return 0;
        if (strcmp(s, "O") && !((s[0] == 'B' || s[0] == 'I') && s[1] == '-'))
            return 0;
    }
    return 1;
}
