/* head.c - a fine-tuned classifier kept on its label names when a trainer
 * made from it orders the labels another way (bert_trainer_align_head in
 * bert_train.h).  Kept as they were, the rows of classifier.weight and
 * classifier.bias would each sit on the other name: --labels
 * positive,negative on a negative,positive head gave dev accuracy 0.18
 * instead of 0.82. */
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/bert_train.h"

/* from[i]: the row of init's head that holds t's label i (C: none). */
static void match_rows(const bert_trainer *t, const bert_model *m, size_t C,
                       size_t *from)
{
    for (size_t i = 0; i < C; i++) {
        from[i] = C;
        for (size_t j = 0; j < C; j++) {
            const char *l = bert_model_label(m, (int)j);
            if (l && strcmp(l, bert_trainer_label(t, i)) == 0)
                from[i] = j;
        }
    }
}

/* Rows i of the classifier (weight [C][H], bias [C]) become rows from[i]. */
static int permute_rows(bert_trainer *t, const size_t *from, size_t C,
                        const char *init_dir, bert_error *err)
{
    float *w, *b;
    size_t nw, nb;
    if (bert_trainer_tensor(t, "classifier.weight", &w, &nw, NULL) ||
        bert_trainer_tensor(t, "classifier.bias", &b, &nb, NULL) || nw % C ||
        nb != C)
        return bert__err(err, BERT_EUNSUPPORTED,
                         "%s: cannot reorder the classifier to the labels' "
                         "order", init_dir);
    size_t H = nw / C;
    float *cw = malloc((nw + C) * sizeof *cw);
    if (!cw)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    memcpy(cw, w, nw * sizeof *cw);
    memcpy(cw + nw, b, C * sizeof *cw);
    for (size_t i = 0; i < C; i++) {
        memcpy(w + i * H, cw + from[i] * H, H * sizeof *w);
        b[i] = cw[nw + from[i]];
    }
    free(cw);
    return BERT_OK;
}

int bert_trainer_align_head(bert_trainer *t, const char *init_dir,
                            bert_head_match *match, bert_error *err)
{
    bert_head_match dummy;
    if (!match)
        match = &dummy;
    *match = BERT_HEAD_KEPT;
    if (!t || !init_dir)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_align_head: NULL argument");
    if (bert_trainer_config(t)->task == BERT_TASK_BASE) /* MLM */
        return BERT_OK;
    bert_model_params mp = bert_model_default_params();
    mp.load_tokenizer = 0;
    bert_model *m;
    if (bert_model_load(init_dir, &mp, &m, NULL) != BERT_OK)
        return BERT_OK; /* the trainer loaded it; a base model has no head */
    size_t C = bert_trainer_config(t)->num_labels;
    const bert_config *mc = bert_model_config(m);
    if (mc->num_labels != C || C < 2 || mc->task == BERT_TASK_BASE) {
        bert_model_free(m);
        return BERT_OK;
    }
    size_t *from = malloc(C * sizeof *from);
    int rc = from ? BERT_OK : bert__err(err, BERT_ENOMEM, "out of memory");
    int perm = 1, same = 1;
    if (rc == BERT_OK) {
        match_rows(t, m, C, from);
        for (size_t i = 0; i < C; i++) {
            perm &= from[i] < C;
            same &= from[i] == i;
        }
    }
    if (rc == BERT_OK && perm && !same &&
        (rc = permute_rows(t, from, C, init_dir, err)) == BERT_OK)
        *match = BERT_HEAD_REORDERED;
    else if (rc == BERT_OK && !perm)
        *match = BERT_HEAD_OTHER_NAMES;
    free(from);
    bert_model_free(m);
    return rc;
}
