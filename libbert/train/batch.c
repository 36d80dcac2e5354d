/* batch.c - the order in which bert_fit visits a dataset and the padded
 * batches it feeds the trainer, MLM masking included (dataset.h).  Every
 * random choice is a hash of the seed and a position, never a generator's
 * state, so that an epoch can be entered at any example and continue as
 * if it had never been cut. */
#include <stdlib.h>
#include <string.h>

#include "libbert/train/dataset.h"

uint64_t bert__mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Fisher-Yates with the hash of (seed, i) as the i-th draw. */
static void shuffle(size_t *a, size_t n, uint64_t seed)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(bert__mix(seed ^ bert__mix(i)) % i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

typedef struct {
    int32_t n;
    size_t i;
} len_key;

static int cmp_len(const void *x, const void *y)
{
    const len_key *a = x, *b = y;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Sorts the example indexes a[0..n) by length, ties by index (a total
 * order: the same result from any sort).  keys: room for n. */
static void sort_by_length(const bert_dataset *d, size_t *a, size_t n,
                           len_key *keys)
{
    for (size_t k = 0; k < n; k++) {
        keys[k].n = d->ex[a[k]].n;
        keys[k].i = a[k];
    }
    qsort(keys, n, sizeof *keys, cmp_len);
    for (size_t k = 0; k < n; k++)
        a[k] = keys[k].i;
}

int bert__length_order(const bert_dataset *d, size_t *idx)
{
    len_key *keys = malloc((d->n + 1) * sizeof *keys);
    if (!keys)
        return BERT_ENOMEM;
    for (size_t i = 0; i < d->n; i++)
        idx[i] = i;
    sort_by_length(d, idx, d->n, keys);
    free(keys);
    return BERT_OK;
}

int bert__epoch_order(const bert_dataset *d, size_t bs, uint64_t seed,
                      size_t *ord)
{
    size_t n = d->n, win = bs * 50, nb = (n + bs - 1) / bs;
    size_t *bo = malloc((nb + 1) * sizeof *bo);
    size_t *tmp = malloc((n + 1) * sizeof *tmp);
    len_key *keys = malloc((win < n ? win : n + 1) * sizeof *keys);
    if (!bo || !tmp || !keys) {
        free(bo);
        free(tmp);
        free(keys);
        return BERT_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    shuffle(ord, n, seed);
    for (size_t s = 0; s < n; s += win)
        sort_by_length(d, ord + s, n - s < win ? n - s : win, keys);
    for (size_t i = 0; i < nb; i++)
        bo[i] = i;
    shuffle(bo, nb, seed ^ 0x55aa);
    size_t p = 0;
    for (size_t i = 0; i < nb; i++) {
        size_t s = bo[i] * bs, e = s + bs < n ? s + bs : n;
        for (size_t j = s; j < e; j++)
            tmp[p++] = ord[j];
    }
    memcpy(ord, tmp, n * sizeof *ord);
    free(bo);
    free(tmp);
    free(keys);
    return BERT_OK;
}

/* ---- padded batches ---------------------------------------------------- */

/* Room for need tokens: ids, types and labels share one block. */
static int batch_reserve(bert__padded *bb, size_t need)
{
    if (need <= bb->cap)
        return BERT_OK;
    int32_t *a = realloc(bb->ids, 3 * need * sizeof(int32_t));
    if (a)
        bb->ids = a;
    size_t *l = realloc(bb->lens, need * sizeof(size_t));
    if (l)
        bb->lens = l;
    if (!a || !l)
        return BERT_ENOMEM;
    bb->types = a + need;
    bb->labels = a + 2 * need;
    bb->cap = need;
    return BERT_OK;
}

/* Masks row r (token t of example ex) of an MLM batch: its label is the
 * original id when chosen. */
static void mlm_mask(bert__padded *bb, const bert_dataset *d, size_t r,
                     uint64_t ex, size_t t, size_t V, double mlm_prob,
                     uint64_t mseed)
{
    bb->labels[r] = -100;
    int32_t id = bb->ids[r];
    if (id == d->cls || id == d->sep || id == d->pad)
        return;
    uint64_t h = bert__mix(mseed ^ bert__mix((ex << 16) ^ t));
    double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
    if (u >= mlm_prob)
        return;
    bb->labels[r] = id;
    double u2 = u / mlm_prob;
    if (u2 < 0.8)
        bb->ids[r] = d->mask;
    else if (u2 < 0.9)
        bb->ids[r] = (int32_t)(bert__mix(h) % V);
}

int bert__padded_fill(bert__padded *bb, const bert_dataset *d,
                     const size_t *idx, size_t nb, size_t V, double mlm_prob,
                     uint64_t mseed, bert_train_batch *out)
{
    size_t T = 1;
    for (size_t i = 0; i < nb; i++)
        if ((size_t)d->ex[idx[i]].n > T)
            T = (size_t)d->ex[idx[i]].n;
    if (batch_reserve(bb, nb * T))
        return BERT_ENOMEM;
    for (size_t i = 0; i < nb; i++) {
        const bert__example *e = &d->ex[idx[i]];
        size_t n = (size_t)e->n;
        bb->lens[i] = n;
        for (size_t t = 0; t < T; t++) {
            size_t r = i * T + t;
            bb->ids[r] = t < n ? e->ids[t] : d->pad;
            bb->types[r] = (t < n && e->types) ? e->types[t] : 0;
            if (d->task == BERT_TRAIN_TOKEN)
                bb->labels[r] = t < n ? e->labels[t] : -100;
            else if (d->task == BERT_TRAIN_MLM) {
                bb->labels[r] = -100;
                if (t < n)
                    mlm_mask(bb, d, r, idx[i], t, V, mlm_prob, mseed);
            }
        }
        if (d->task == BERT_TRAIN_SEQUENCE)
            bb->labels[i] = e->label;
    }
    out->batch = nb;
    out->seq_len = T;
    out->ids = bb->ids;
    out->type_ids = bb->types;
    out->lengths = bb->lens;
    out->labels = bb->labels;
    return BERT_OK;
}

void bert__padded_free(bert__padded *bb)
{
    free(bb->ids); /* types and labels too */
    free(bb->lens);
    memset(bb, 0, sizeof *bb);
}
