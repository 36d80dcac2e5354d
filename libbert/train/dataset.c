/* dataset.c - a training or evaluation set read through the data readers
 * (readers.c) and tokenized into examples with their labels (contracts in
 * bert_train.h).  Examples are tokenized as they are read, so the first
 * problem of the file, whichever kind it is, is the one reported. */
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/train/dataset.h"
#include "libbert/train/trainer.h"

bert_dataset_params bert_dataset_default_params(void)
{
    bert_dataset_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.task = BERT_TRAIN_SEQUENCE;
    p.text_column = "text";
    p.label_column = "label";
    p.max_length = 128;
    return p;
}

/* ---- examples and labels ----------------------------------------------- */

static void example_free(bert__example *e)
{
    free(e->ids);
    free(e->types);
    free(e->labels);
    free(e->word_tag);
    free(e->first_tok);
    free(e->hw_first);
    free(e->hw_word);
}

/* Appends *e (its arrays now owned by d); on failure frees them. */
static int push(bert_dataset *d, bert__example *e, bert_error *err)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 1024;
        bert__example *nb = realloc(d->ex, nc * sizeof *nb);
        if (!nb) {
            example_free(e);
            return bert__err(err, BERT_ENOMEM, "out of memory");
        }
        d->ex = nb;
        d->cap = nc;
    }
    d->ex[d->n++] = *e;
    return BERT_OK;
}

static int label_find(const bert_dataset *d, const char *s)
{
    for (size_t i = 0; i < d->n_labels; i++)
        if (strcmp(d->labels[i], s) == 0)
            return (int)i;
    return -1;
}

/* The id of label s, added when the labels are not fixed: >= 0, -1 for a
 * label outside fixed ones, -2 when out of memory. */
static int label_add(bert_dataset *d, const char *s, int fixed)
{
    int k = label_find(d, s);
    if (k >= 0 || fixed)
        return k;
    if (d->n_labels == d->cap_labels) {
        size_t nc = d->cap_labels ? d->cap_labels * 2 : 16;
        char **nb = realloc(d->labels, nc * sizeof *nb);
        if (!nb)
            return -2;
        d->labels = nb;
        d->cap_labels = nc;
    }
    d->labels[d->n_labels] = strdup(s);
    return d->labels[d->n_labels] ? (int)d->n_labels++ : -2;
}

/* "O" first, then by bytes. */
static int cmp_names(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (strcmp(x, "O") == 0)
        return strcmp(y, "O") == 0 ? 0 : -1;
    if (strcmp(y, "O") == 0)
        return 1;
    return strcmp(x, y);
}

/* The labels collected in file order, sorted, and every id renumbered. */
static int sort_labels(bert_dataset *d, bert_error *err)
{
    size_t C = d->n_labels;
    if (C == 0) /* an empty file (d->labels NULL) */
        return BERT_OK;
    char **sorted = malloc((C + 1) * sizeof *sorted);
    int32_t *map = malloc((C + 1) * sizeof *map);
    if (!sorted || !map) {
        free(sorted);
        free(map);
        return bert__err(err, BERT_ENOMEM, "out of memory");
    }
    memcpy(sorted, d->labels, C * sizeof *sorted);
    qsort(sorted, C, sizeof *sorted, cmp_names);
    for (size_t i = 0; i < C; i++)
        for (size_t j = 0; j < C; j++)
            if (d->labels[i] == sorted[j])
                map[i] = (int32_t)j;
    for (size_t i = 0; i < d->n; i++) {
        bert__example *e = &d->ex[i];
        if (d->task == BERT_TRAIN_SEQUENCE)
            e->label = map[e->label];
        for (int32_t t = 0; e->labels && t < e->n; t++)
            if (e->labels[t] >= 0)
                e->labels[t] = map[e->labels[t]];
        for (int32_t w = 0; w < e->nwords; w++)
            e->word_tag[w] = map[e->word_tag[w]];
    }
    memcpy(d->labels, sorted, C * sizeof *sorted);
    free(sorted);
    free(map);
    return BERT_OK;
}

/* ---- the three formats ------------------------------------------------- */

typedef struct {
    const char *path;
    const bert_tokenizer *tok;
    const bert_dataset_params *p;
    bert_encoding *enc;
    int fixed; /* labels given by the caller */
} loader;

/* Encodes text (and pair) with the special tokens into e's ids and types;
 * the error, if any, is the tokenizer's. */
static int encode(loader *L, const char *a, const char *b, bert__example *e,
                  bert_error *err)
{
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = L->p->max_length;
    int rc = bert_tokenizer_encode(L->tok, a, strlen(a), b, b ? strlen(b) : 0,
                                   &ep, L->enc, err);
    if (rc)
        return rc;
    size_t n = L->enc->n;
    e->ids = malloc(n * sizeof(int32_t));
    e->types = malloc(n * sizeof(int32_t));
    if (!e->ids || !e->types)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    memcpy(e->ids, L->enc->ids, n * sizeof(int32_t));
    memcpy(e->types, L->enc->type_ids, n * sizeof(int32_t));
    e->n = (int32_t)n;
    return BERT_OK;
}

static int csv_record(loader *L, bert_dataset *d, const bert_record *rec,
                      bert_error *err)
{
    bert__example e;
    memset(&e, 0, sizeof e);
    int lab = label_add(d, rec->label, L->fixed);
    if (lab == -2)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    if (lab < 0)
        return bert__err(err, BERT_EFORMAT,
                         "%s: record %ld: unknown label '%s'", L->path,
                         rec->line, rec->label);
    e.label = lab;
    bert_error ee;
    int rc = encode(L, rec->text, rec->pair, &e, &ee);
    if (rc) {
        example_free(&e);
        return bert__err(err, rc, "%s: record %ld: %s", L->path, rec->line,
                         ee.text);
    }
    return push(d, &e, err);
}

/* A word of bert-tag's with no token, part of CoNLL word w: scored "O" by
 * the evaluation. */
static void text_without_token(bert__example *e, size_t w)
{
    e->hw_first[e->nhw] = -1;
    e->hw_word[e->nhw++] = (int32_t)w;
}

/* Words [*done, upto) that have no token (cut by truncation, or empty to
 * the tokenizer) each become one such word; *done = upto. */
static void untokenized_words(bert__example *e, size_t *done, size_t upto)
{
    for (; *done < upto; (*done)++)
        if (e->first_tok[*done] < 0)
            text_without_token(e, *done);
}

/* After the last token of CoNLL word w (ending at byte pend): when its
 * text goes on past its tokens (cut by truncation inside its pieces, or
 * characters the tokenizer drops), one more such word.  bert-tag's entity
 * ends where the tokens do, inside the gold span; this word, continuing
 * w's entity in the gold tags, makes the evaluation count it as wrong, as
 * it is in bert-tag's output.  (The same for a word's start, below.)  A
 * word ends at the space before the next one; start[nw] is one past the
 * text's end. */
static void word_end(bert__example *e, const size_t *start, size_t w,
                     int64_t pend)
{
    if ((size_t)pend < start[w + 1] - 1)
        text_without_token(e, w);
}

/* The labels of a CoNLL sentence's tokens from its words' tags: each token
 * is mapped to its word through byte offsets into the joined text (len
 * bytes), whose words start at start[0..nw].  Also the words bert-tag
 * finds (hw_first, hw_word: arrays of e->n + 3 nw). */
static void token_labels(const loader *L, const bert_dataset *d,
                         bert__example *e, const char *text, size_t len,
                         const size_t *start, size_t nw)
{
    const bert_encoding *enc = L->enc;
    int bpe = bert_tokenizer_get_kind(L->tok) == BERT_TOKENIZER_BPE;
    int32_t unk = bert_tokenizer_special(L->tok, BERT_TOKEN_UNK);
    size_t w = 0, done = 0; /* words before `done` are in hw_* */
    size_t pw = SIZE_MAX;   /* the word of the previous token, */
    int64_t pend = 0;       /* and where its tokens end so far */
    e->nhw = 0;
    for (int32_t t = 0; t < e->n; t++) {
        e->labels[t] = -100;
        if (enc->special_mask[t])
            continue;
        int64_t b = enc->byte_offsets[2 * t];
        while (w + 1 < nw && (size_t)b >= start[w + 1])
            w++;
        if (w != pw) {
            if (pw != SIZE_MAX)
                word_end(e, start, pw, pend);
            untokenized_words(e, &done, w);
            if ((size_t)b > start[w]) /* see word_end */
                text_without_token(e, w);
            pw = w;
            pend = b;
        }
        if (enc->byte_offsets[2 * t + 1] > pend)
            pend = enc->byte_offsets[2 * t + 1];
        const char *tok = bert_tokenizer_token(L->tok, enc->ids[t]);
        if (!bert__tag_is_subword(tok ? tok : "", text, len,
                                  enc->offsets[2 * t], enc->offsets[2 * t + 1],
                                  b, bpe, enc->ids[t] == unk)) {
            e->hw_first[e->nhw] = t;
            e->hw_word[e->nhw++] = (int32_t)w;
        }
        if (e->first_tok[w] < 0) {
            e->first_tok[w] = t;
            e->labels[t] = e->word_tag[w];
        } else if (L->p->label_all_subtokens) {
            /* B-X continues as I-X where I-X is a label known by now */
            const char *tg = d->labels[e->word_tag[w]];
            int lab = e->word_tag[w];
            if (strncmp(tg, "B-", 2) == 0) {
                char buf[256];
                snprintf(buf, sizeof buf, "I-%s", tg + 2);
                int il = label_find(d, buf);
                if (il >= 0)
                    lab = il;
            }
            e->labels[t] = lab;
        }
    }
    if (pw != SIZE_MAX)
        word_end(e, start, pw, pend);
    untokenized_words(e, &done, nw); /* word w, if it has tokens, is in */
}

/* A CoNLL sentence: its words joined by spaces and encoded. */
static int conll_sentence(loader *L, bert_dataset *d, const bert_record *rec,
                          bert_error *err)
{
    size_t nw = rec->n_words, tl = 0;
    for (size_t i = 0; i < nw; i++)
        tl += strlen(rec->words[i]) + 1;
    char *text = malloc(tl + 1);
    size_t *start = malloc((nw + 1) * sizeof *start);
    bert__example e;
    memset(&e, 0, sizeof e);
    e.word_tag = malloc((nw + 1) * sizeof(int32_t));
    e.first_tok = malloc((nw + 1) * sizeof(int32_t));
    int rc = text && start && e.word_tag && e.first_tok
                 ? BERT_OK
                 : bert__err(err, BERT_ENOMEM, "out of memory");
    size_t p = 0;
    for (size_t i = 0; rc == BERT_OK && i < nw; i++) {
        start[i] = p;
        size_t l = strlen(rec->words[i]);
        memcpy(text + p, rec->words[i], l);
        p += l;
        text[p++] = ' ';
        int lab = label_add(d, rec->tags[i], L->fixed);
        if (lab == -2)
            rc = bert__err(err, BERT_ENOMEM, "out of memory");
        else if (lab < 0)
            rc = bert__err(err, BERT_EFORMAT, "%s:%ld: unknown tag '%s'",
                           L->path, rec->line, rec->tags[i]);
        else {
            e.word_tag[i] = lab;
            e.first_tok[i] = -1;
        }
    }
    if (rc == BERT_OK) {
        start[nw] = p;
        text[p ? p - 1 : 0] = 0;
        bert_error ee;
        if ((rc = encode(L, text, NULL, &e, &ee)) != BERT_OK)
            rc = bert__err(err, rc, "%s:%ld: %s", L->path, rec->line,
                           ee.text);
    }
    if (rc == BERT_OK) {
        e.nwords = (int32_t)nw;
        /* a word each per token, per CoNLL word without one, and per
         * CoNLL word whose start or end has no token */
        size_t nh = (size_t)e.n + 3 * nw + 1;
        e.labels = malloc(((size_t)e.n + 1) * sizeof(int32_t));
        e.hw_first = malloc(nh * sizeof(int32_t));
        e.hw_word = malloc(nh * sizeof(int32_t));
        if (!e.labels || !e.hw_first || !e.hw_word)
            rc = bert__err(err, BERT_ENOMEM, "out of memory");
        else
            token_labels(L, d, &e, text, start[nw] ? start[nw] - 1 : 0,
                         start, nw);
    }
    free(text);
    free(start);
    if (rc != BERT_OK) {
        example_free(&e);
        return rc;
    }
    return push(d, &e, err);
}

/* A chunk of packed text framed by [CLS] ... [SEP]. */
static int text_chunk(bert_dataset *d, const int32_t *ids, size_t n,
                      bert_error *err)
{
    bert__example e;
    memset(&e, 0, sizeof e);
    e.n = (int32_t)(n + 2);
    if (!(e.ids = malloc((n + 2) * sizeof(int32_t))))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    e.ids[0] = d->cls;
    memcpy(e.ids + 1, ids, n * sizeof(int32_t));
    e.ids[n + 1] = d->sep;
    return push(d, &e, err);
}

/* MLM text: the lines' tokens as one stream cut into chunks. */
typedef struct {
    int32_t *cur; /* the chunk being filled */
    size_t nc;
} packer;

static int text_line(loader *L, bert_dataset *d, packer *pk,
                     const bert_record *rec, bert_error *err)
{
    bert_encode_params ep = bert_encode_default_params();
    ep.add_special_tokens = 0;
    bert_error ee;
    if (bert_tokenizer_encode(L->tok, rec->text, rec->text_len, NULL, 0, &ep,
                              L->enc, &ee)) {
        if (L->p->warning) {
            char msg[sizeof ee.text + 4200];
            snprintf(msg, sizeof msg, "%s:%ld: %s (line skipped)", L->path,
                     rec->line, ee.text);
            L->p->warning(msg, L->p->warning_data);
        }
        return BERT_OK;
    }
    size_t chunk = L->p->max_length - 2;
    for (size_t i = 0; i < L->enc->n; i++) {
        pk->cur[pk->nc++] = L->enc->ids[i];
        if (pk->nc == chunk) {
            int rc = text_chunk(d, pk->cur, chunk, err);
            if (rc)
                return rc;
            pk->nc = 0;
        }
    }
    return BERT_OK;
}

/* Reads every record of r into d, in the task's way. */
static int read_all(loader *L, bert_dataset *d, bert_reader *r,
                    bert_error *err)
{
    packer pk = {NULL, 0};
    if (d->task == BERT_TRAIN_MLM &&
        !(pk.cur = malloc(L->p->max_length * sizeof(int32_t))))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    bert_record rec;
    int rc = BERT_OK, got;
    while (rc == BERT_OK && (got = bert_reader_next(r, &rec, err)) > 0)
        rc = d->task == BERT_TRAIN_SEQUENCE ? csv_record(L, d, &rec, err)
             : d->task == BERT_TRAIN_TOKEN  ? conll_sentence(L, d, &rec, err)
                                            : text_line(L, d, &pk, &rec, err);
    if (rc == BERT_OK && got < 0)
        rc = got;
    if (rc == BERT_OK && pk.nc > 8) /* the tail */
        rc = text_chunk(d, pk.cur, pk.nc, err);
    free(pk.cur);
    return rc;
}

/* ---- loading ----------------------------------------------------------- */

static int check_params(const bert_dataset_params *p, bert_error *err)
{
    if (p->task != BERT_TRAIN_SEQUENCE && p->task != BERT_TRAIN_TOKEN &&
        p->task != BERT_TRAIN_MLM)
        return bert__err(err, BERT_EINVAL, "bert_dataset_load: unknown task");
    if (p->max_length < 8)
        return bert__err(err, BERT_EINVAL,
                         "bert_dataset_load: max_length must be at least 8");
    if (p->labels)
        for (size_t i = 0; i < p->num_labels; i++)
            if (!p->labels[i])
                return bert__err(err, BERT_EINVAL,
                                 "bert_dataset_load: label %zu is NULL", i);
    return BERT_OK;
}

/* An empty dataset of the task with its special ids and fixed labels. */
static int dataset_new(const bert_tokenizer *tok, const bert_dataset_params *p,
                       bert_dataset **out, bert_error *err)
{
    bert_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    d->task = p->task;
    d->cls = bert_tokenizer_special(tok, BERT_TOKEN_CLS);
    d->sep = bert_tokenizer_special(tok, BERT_TOKEN_SEP);
    d->pad = bert_tokenizer_special(tok, BERT_TOKEN_PAD);
    d->mask = bert_tokenizer_special(tok, BERT_TOKEN_MASK);
    *out = d;
    /* [MASK] only where bert_fit masks (not for word2vec) */
    if (d->cls < 0 || d->sep < 0 || d->pad < 0)
        return bert__err(err, BERT_EINVAL,
                         "the vocabulary lacks [CLS], [SEP] or [PAD]");
    for (size_t i = 0; p->task != BERT_TRAIN_MLM && p->labels &&
                       i < p->num_labels; i++)
        if (label_add(d, p->labels[i], 0) == -2)
            return bert__err(err, BERT_ENOMEM, "out of memory");
    return BERT_OK;
}

int bert_dataset_load(const char *path, const bert_tokenizer *tok,
                      const bert_dataset_params *params, bert_dataset **out,
                      bert_error *err)
{
    bert_dataset_params p;
    if (out)
        *out = NULL;
    if (!path || !tok || !out)
        return bert__err(err, BERT_EINVAL, "bert_dataset_load: NULL argument");
    int rc = BERT__PARAMS(p, params, bert_dataset_default_params, err);
    if (rc || (rc = check_params(&p, err)))
        return rc;
    bert_dataset *d = NULL;
    bert_reader *r = NULL;
    loader L = {path, tok, &p, bert_encoding_create(), p.labels != NULL};
    rc = dataset_new(tok, &p, &d, err);
    if (rc == BERT_OK && !L.enc)
        rc = bert__err(err, BERT_ENOMEM, "out of memory");
    if (rc == BERT_OK) {
        bert_reader_params rp = bert_reader_default_params();
        rp.format = p.task == BERT_TRAIN_SEQUENCE ? BERT_DATA_CSV
                    : p.task == BERT_TRAIN_TOKEN  ? BERT_DATA_CONLL
                                                  : BERT_DATA_TEXT;
        rp.text_column = p.text_column;
        rp.pair_column = p.pair_column;
        rp.label_column = p.label_column;
        rc = bert_reader_open(path, &rp, &r, err);
    }
    if (rc == BERT_OK)
        rc = read_all(&L, d, r, err);
    if (rc == BERT_OK && !L.fixed && p.task != BERT_TRAIN_MLM)
        rc = sort_labels(d, err);
    bert_reader_free(r);
    bert_encoding_free(L.enc);
    if (rc != BERT_OK) {
        bert_dataset_free(d);
        return rc;
    }
    /* the rest was read for its errors only */
    while (p.max_examples && d->n > p.max_examples)
        example_free(&d->ex[--d->n]);
    *out = d;
    return BERT_OK;
}

void bert_dataset_free(bert_dataset *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        example_free(&d->ex[i]);
    for (size_t i = 0; i < d->n_labels; i++)
        free(d->labels[i]);
    free(d->labels);
    free(d->ex);
    free(d);
}

/* ---- access ------------------------------------------------------------ */

size_t bert_dataset_count(const bert_dataset *d)
{
    return d ? d->n : 0;
}

const char *const *bert_dataset_labels(const bert_dataset *d,
                                       size_t *n_labels)
{
    if (n_labels)
        *n_labels = d ? d->n_labels : 0;
    return d && d->n_labels ? (const char *const *)d->labels : NULL;
}

static int fits(const bert_trainer *t, const bert_dataset *d,
                const char *what, bert_error *err);

int bert__check_dataset(const bert_trainer *t, const bert_dataset *d,
                        const char *what, bert_error *err)
{
    const bert_config *c = bert_trainer_config(t);
    bert_train_task task = c->task == BERT_TASK_SEQUENCE ? BERT_TRAIN_SEQUENCE
                           : c->task == BERT_TASK_TOKEN  ? BERT_TRAIN_TOKEN
                                                         : BERT_TRAIN_MLM;
    if (d->task != task)
        return bert__err(err, BERT_EINVAL,
                         "%s: the dataset is not of the trainer's task", what);
    if (task == BERT_TRAIN_MLM && d->mask < 0)
        return bert__err(err, BERT_EINVAL,
                         "%s: the vocabulary lacks [MASK]", what);
    if (task != BERT_TRAIN_MLM && d->n_labels != c->num_labels)
        return bert__err(err, BERT_EINVAL,
                         "%s: the dataset has %zu labels, the trainer %zu",
                         what, d->n_labels, c->num_labels);
    return fits(t, d, what, err);
}

int bert__check_rtd(const bert_trainer *t, const bert_trainer *g,
                    const bert_dataset *d, const char *what, bert_error *err)
{
    const bert_config *c = bert_trainer_config(t);
    if (bert_trainer_config(g)->task != BERT_TASK_BASE)
        return bert__err(err, BERT_EINVAL,
                         "%s: the generator is not a masked-LM trainer", what);
    if (g->fresh_head)
        return bert__err(err, BERT_EINVAL,
                         "%s: the generator is not a masked-LM model (its "
                         "directory lacks the masked-LM head: it would draw "
                         "at random)", what);
    if (c->task != BERT_TASK_TOKEN || c->num_labels != 2)
        return bert__err(err, BERT_EINVAL,
                         "%s: replaced-token detection trains a token "
                         "classifier of 2 labels (original, replaced)", what);
    if (g->V != t->V)
        return bert__err(err, BERT_EINVAL,
                         "%s: the generator's vocabulary has %zu tokens, the "
                         "discriminator's %zu", what, g->V, t->V);
    if (d->task != BERT_TRAIN_MLM)
        return bert__err(err, BERT_EINVAL,
                         "%s: replaced-token detection reads text (an MLM "
                         "dataset)", what);
    if (d->mask < 0)
        return bert__err(err, BERT_EINVAL,
                         "%s: the vocabulary lacks [MASK]", what);
    int rc = fits(g, d, what, err);
    return rc ? rc : fits(t, d, what, err);
}

/* BERT_OK when every example of d fits t: its positions (RoBERTa's start
 * after padding_idx) and its vocabulary (a larger tokenizer's ids would
 * index past the word embeddings). */
static int fits(const bert_trainer *t, const bert_dataset *d,
                const char *what, bert_error *err)
{
    for (size_t i = 0; i < d->n; i++) {
        const bert__example *e = &d->ex[i];
        if ((size_t)e->n + t->cfg.pos_offset > t->P)
            return bert__err(err, BERT_EINVAL,
                             "%s: example %zu has %d tokens, more than the "
                             "%zu that max_position_embeddings %zu allows "
                             "(a shorter max_length)", what, i + 1, (int)e->n,
                             t->P - t->cfg.pos_offset, t->P);
        for (int32_t k = 0; k < e->n; k++)
            if (e->ids[k] < 0 || (size_t)e->ids[k] >= t->V)
                return bert__err(err, BERT_EINVAL,
                                 "%s: example %zu has token id %d; the model's "
                                 "vocabulary has %zu (is the tokenizer the "
                                 "model's?)", what, i + 1, (int)e->ids[k],
                                 t->V);
    }
    return BERT_OK;
}
