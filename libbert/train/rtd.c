/* rtd.c - ELECTRA's replaced-token detection (Clark et al., 2020) as a
 * pre-training objective for bert_fit: a generator, a masked-LM trainer
 * that only runs forward here (its weights stay as given: ELECTRA's
 * "two-stage" variant, with an already trained generator), fills the masked
 * positions of an MLM batch with tokens drawn from its predictions; the
 * discriminator, the trainer being fitted (a token classifier with the
 * labels original / replaced), learns at every real token whether it is
 * the text's own.  It learns from all tokens where masked LM learns from
 * 15%, which is why ELECTRA needs fewer pre-training tokens.  Every random
 * choice is a hash of the seed and the position, as in batch.c, so that a
 * cut epoch resumes exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/train/dataset.h"

/* A token drawn from softmax(l) (V entries) by u in [0,1): the inverse of
 * the cumulative distribution, summed in double.  l is overwritten. */
static int32_t draw(float *l, size_t V, double u)
{
    float mx = l[0];
    for (size_t c = 1; c < V; c++)
        mx = l[c] > mx ? l[c] : mx;
    double sum = 0;
    for (size_t c = 0; c < V; c++) {
        l[c] = expf(l[c] - mx);
        sum += l[c];
    }
    double target = u * sum, acc = 0;
    for (size_t c = 0; c < V; c++) {
        acc += l[c];
        if (acc > target)
            return (int32_t)c;
    }
    return (int32_t)(V - 1); /* u * sum rounded past the last sum */
}

int bert__rtd_fill(bert__rtd *r, bert_trainer *g, const bert_dataset *d,
                   const size_t *idx, size_t nb, double mlm_prob,
                   uint64_t mseed, bert_train_batch *out, bert_error *err)
{
    size_t V = bert_trainer_config(g)->vocab_size;
    bert_train_batch mb;
    if (bert__padded_fill(&r->mb, d, idx, nb, V, mlm_prob, mseed, &mb))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    size_t T = mb.seq_len, m = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t t = 0; t < mb.lengths[i]; t++)
            m += mb.labels[i * T + t] >= 0;
    if (nb * T > r->cap) {
        int32_t *a = realloc(r->ids, 2 * nb * T * sizeof *a);
        if (!a)
            return bert__err(err, BERT_ENOMEM, "out of memory");
        r->ids = a;
        r->labels = a + nb * T;
        r->cap = nb * T;
    }
    if (m * V > r->lcap) {
        float *l = realloc(r->logits, m * V * sizeof *l);
        if (!l)
            return bert__err(err, BERT_ENOMEM, "out of memory");
        r->logits = l;
        r->lcap = m * V;
    }
    int rc;
    if (m && (rc = bert_trainer_predict(g, &mb, r->logits, NULL, err)))
        return rc;
    size_t k = 0; /* the generator's row of the next masked position */
    for (size_t i = 0; i < nb; i++)
        for (size_t t = 0; t < T; t++) {
            size_t j = i * T + t;
            int32_t orig = mb.labels[j] >= 0 ? mb.labels[j] : mb.ids[j];
            r->ids[j] = orig;
            r->labels[j] = -100;
            if (t >= mb.lengths[i] || orig == d->cls || orig == d->sep ||
                orig == d->pad)
                continue;
            r->labels[j] = 0;
            if (mb.labels[j] < 0)
                continue;
            uint64_t h = bert__mix(mseed ^ 0x72746400ULL ^
                                   bert__mix((idx[i] << 16) ^ t));
            double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
            r->ids[j] = draw(r->logits + k++ * V, V, u);
            r->labels[j] = r->ids[j] != orig;
        }
    *out = mb;
    out->ids = r->ids;
    out->labels = r->labels;
    return BERT_OK;
}

void bert__rtd_free(bert__rtd *r)
{
    bert__padded_free(&r->mb);
    free(r->ids); /* labels too */
    free(r->logits);
    memset(r, 0, sizeof *r);
}
