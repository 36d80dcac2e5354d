/* libbert/train/dataset.h - the dataset's internals and the padded batches
 * made from it (dataset.c, batch.c), shared by the fitting loop (fit.c),
 * the evaluation (evaluate.c) and word2vec (w2v.c). */
#ifndef LIBBERT_TRAIN_DATASET_H
#define LIBBERT_TRAIN_DATASET_H

#include <stdint.h>

#include "libbert/bert_train.h"

/* One example: its token ids (with the special tokens) and what is scored. */
typedef struct bert__example {
    int32_t *ids, *types; /* [n]; types NULL for MLM (all 0) */
    int32_t *labels;      /* token task: [n], -100 where not scored */
    int32_t n;
    int32_t label;        /* sequence task */
    /* token task, for word-level evaluation */
    int32_t nwords;
    int32_t *word_tag;    /* gold tag per word */
    int32_t *first_tok;   /* token index of each word's first piece, -1 when
                             truncated away */
    /* token task: the words as bert-tag's aggregation finds them
     * (bert__tag_is_subword: "U.S." is four of them, one CoNLL word), for
     * entity scores that count what bert-tag prints.  hw_first: the first
     * token of each, -1 for a CoNLL word truncated away (one each) and for
     * the start or end of a CoNLL word that no token reaches (a word cut
     * by truncation); hw_word: the CoNLL word it is part of. */
    int32_t nhw;
    int32_t *hw_first, *hw_word;
} bert__example;

struct bert_dataset {
    bert_train_task task;
    bert__example *ex;
    size_t n, cap;
    char **labels;        /* names in id order (owned) */
    size_t n_labels, cap_labels;
    int32_t cls, sep, pad, mask; /* the tokenizer's special ids */
};

/* BERT_OK when t can run d: a dataset of its task with its number of
 * labels; else BERT_EINVAL with a message that starts with `what`. */
int bert__check_dataset(const bert_trainer *t, const bert_dataset *d,
                        const char *what, bert_error *err);

/* BERT_OK when t (a token classifier of 2 labels: original, replaced) can
 * learn replaced-token detection on d (text) from generator g (masked LM,
 * the same vocabulary); else BERT_EINVAL, the message starting with
 * `what`. */
int bert__check_rtd(const bert_trainer *t, const bert_trainer *g,
                    const bert_dataset *d, const char *what,
                    bert_error *err);

/* splitmix64's finaliser: the hash behind every random choice of the
 * loop (order, masks, word2vec), so that runs repeat bit for bit. */
uint64_t bert__mix(uint64_t z);

/* ord[0..d->n): the order of an epoch for batches of bs (bert_fit's
 * contract).  Returns BERT_OK or BERT_ENOMEM. */
int bert__epoch_order(const bert_dataset *d, size_t bs, uint64_t seed,
                      size_t *ord);

/* idx[0..d->n): the examples sorted by length (ties by index), the
 * evaluation order.  Returns BERT_OK or BERT_ENOMEM. */
int bert__length_order(const bert_dataset *d, size_t *idx);

/* The padded batch's storage, grown on demand; zero-initialise, release
 * with bert__padded_free. */
typedef struct bert__padded {
    int32_t *ids, *types, *labels; /* one block: types, labels after ids */
    size_t *lens;
    size_t cap;
} bert__padded;

/* Fills *out with examples idx[0..nb) of d padded to the longest.  MLM:
 * each real token other than [CLS], [SEP] and [PAD] is masked with
 * probability mlm_prob (then 80% [MASK], 10% a random id below V, 10%
 * kept) by a hash of (mseed, example, position), so each epoch masks
 * differently.  Returns BERT_OK or BERT_ENOMEM. */
int bert__padded_fill(bert__padded *bb, const bert_dataset *d,
                     const size_t *idx, size_t nb, size_t V, double mlm_prob,
                     uint64_t mseed, bert_train_batch *out);
void bert__padded_free(bert__padded *bb);

/* Replaced-token detection's batches (rtd.c): the generator's masked batch,
 * its predictions and the discriminator's batch, grown on demand;
 * zero-initialise, release with bert__rtd_free. */
typedef struct bert__rtd {
    bert__padded mb;         /* the generator's input */
    float *logits;           /* its predictions at the masked positions */
    size_t lcap;
    int32_t *ids, *labels;   /* the discriminator's (one block) */
    size_t cap;
} bert__rtd;

/* Fills *out with examples idx[0..nb) of d (text) for the discriminator:
 * masked as bert__padded_fill masks them (mlm_prob, mseed), each masked
 * position replaced by a token drawn from generator g's prediction there
 * (g runs forward only; the draw is a hash of mseed, the example and the
 * position), labelled 1 where the drawn token differs from the text's, 0
 * at every other real token, -100 at [CLS], [SEP] and padding.  Returns
 * BERT_OK, BERT_ENOMEM or g's error. */
int bert__rtd_fill(bert__rtd *r, bert_trainer *g, const bert_dataset *d,
                   const size_t *idx, size_t nb, double mlm_prob,
                   uint64_t mseed, bert_train_batch *out, bert_error *err);
void bert__rtd_free(bert__rtd *r);

#endif
