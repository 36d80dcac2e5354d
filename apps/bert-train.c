/*
 * bert-train - fine-tune or train a BERT or DistilBERT model from the
 * command line.
 * See --help and docs/training.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "apps/common.h"
#include "libbert/bert_metrics.h"
#include "libbert/bert_train.h"
#include "libbert/readall.h"

#define BERT_CFG_MAX_LABELS_APP 4096

/* Error exits from main use exit(), not return: what main holds stays
 * reachable from its frame, so LeakSanitizer does not report the memory a
 * one-shot tool leaves to the system (return from main released the
 * frame and made every early error a "leak"). */

/* ---- options ----------------------------------------------------------- */

enum { TASK_EMBED = 100 }; /* --task embeddings (not a bert_train_task) */

typedef struct {
    const char *init, *config, *vocab, *train, *dev, *out, *format;
    const char *text_col, *pair_col, *label_col, *labels;
    int task; /* bert_train_task */
    double epochs;
    long batch, accum, max_len, threads, log_every, dev_max, stop_epochs;
    double lr, warmup, wd, clip, mlm_prob, max_minutes, emb_lr, save_every;
    unsigned long long seed;
    int resume, save_state, all_subtokens, no_dropout, lowercase, quiet, sinpos;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: bert-train (--init DIR | --config FILE --vocab DIR) --task TASK\n"
"                  --train FILE [--dev FILE] --out DIR [options]\n"
"Fine-tunes (--init: a Hugging Face BERT, DistilBERT, RoBERTa or ELECTRA model\n"
"directory; RoBERTa and ELECTRA for the sequence and token tasks) or\n"
"trains from scratch (--config: a BERT or DistilBERT config.json; --vocab: a\n"
"directory with vocab.txt and tokenizer_config.json) a model, and writes a\n"
"complete Hugging Face model directory of the same architecture to --out\n"
"(the best dev checkpoint).  DistilBERT has no token types: the second text\n"
"of a pair is told apart by its [SEP] only.\n\n"
"Tasks and data (format from the file extension, or --format):\n"
"  sequence  CSV with a header: text[,text_pair],label  (.csv)\n"
"  token     CoNLL: token<TAB>tag per line, blank line between sentences\n"
"  embeddings  plain text: word2vec skip-gram (window 5, 5 negatives) over\n"
"            the WordPiece ids, --epochs passes, --lr default 0.025; the\n"
"            vectors become the word embeddings of a fresh model (--config)\n"
"            saved to --out, to be fine-tuned with --init\n"
"  mlm       plain text, one paragraph per line (15%% of tokens masked,\n"
"            80/10/10 [MASK]/random/kept); texts are packed into\n"
"            --max-length chunks\n\n"
"Options:\n"
"  --format csv|conll|text  the data format of --train and --dev (default:\n"
"                         from --train's extension: .csv, .conll, else text)\n"
"  --text-column NAME     CSV text column (default text)\n"
"  --pair-column NAME     CSV second-text column (default: none)\n"
"  --label-column NAME    CSV label column (default label)\n"
"  --labels A,B,...       label order (default: sorted; \"O\" first)\n"
"  --label-all-subtokens  token task: label every sub-token (B- becomes I-\n"
"                         after the first); default: first sub-token only\n"
"  --lowercase / --cased  override the vocabulary's do_lower_case\n"
"  --epochs N             (default 3; may be fractional)\n"
"  --batch-size N         examples per step (default 32)\n"
"  --accum N              gradient accumulation: micro-batches per step (1)\n"
"  --lr X                 peak learning rate (default 5e-5)\n"
"  --sinusoidal-positions before training, set the position embeddings to\n"
"                         the sinusoids of Vaswani et al. (std 0.05); helps\n"
"                         models whose encoder starts from scratch\n"
"  --embedding-lr-scale X the word embeddings learn at lr * X (default 1;\n"
"                         < 1 keeps pre-trained embeddings)\n"
"  --warmup X             warm-up: fraction of steps if < 1, else steps (0.1)\n"
"  --weight-decay X       AdamW decay, not on biases/LayerNorm (0.01)\n"
"  --max-grad-norm X      gradient clipping (1.0; 0 = off)\n"
"  --max-length N         tokens per example incl. [CLS]/[SEP] (128)\n"
"  --mlm-probability X    (0.15)\n"
"  --no-dropout           train without dropout\n"
"  --seed N               (42)   --threads N  (1)\n"
"  --max-minutes X        stop (evaluate, save) after X minutes of training\n"
"  --stop-after-epochs K  stop after K epochs (the learning-rate schedule\n"
"                         still spans --epochs): reproduces a cut run\n"
"  --dev-max N            evaluate on at most N dev examples\n"
"  --log-every N          also log every N steps (default: per epoch)\n"
"  --save-state           after every epoch, also write the resume state\n"
"                         (weights and AdamW moments, about 3x the model:\n"
"                         trainer_state.bin, trainer_progress.txt) into --out\n"
"  --save-every MIN       with --save-state, also write the resume state every\n"
"                         MIN minutes inside an epoch (long pre-training runs)\n"
"  --resume               continue from the state --save-state wrote in --out\n"
"                         (and keep saving it)\n"
"  -q, --quiet            no progress output\n"
"  --help, --version\n\n"
"Exit status: 0 success, 1 usage error, 2 bad input or training failure.\n"
"\nExamples:\n"
"  bert-train --init data/sentiment --task sequence --train train.csv \\\n"
"      --dev dev.csv --out my-sentiment --epochs 2\n"
"  bert-train --init data/ner --task token --train train.conll --dev dev.conll \\\n"
"      --out my-ner\n"
"  bert-train --config config.json --vocab my-vocab --task mlm --train text.txt \\\n"
"      --out my-base --save-state\n");
}

/* ---- data -------------------------------------------------------------- */

typedef struct {
    int32_t *ids, *types, *labels; /* labels: n entries (token/mlm), or 1 */
    int32_t n;
    int32_t label;                 /* sequence */
    /* token task, for word-level evaluation */
    int32_t nwords;
    int32_t *word_tag;             /* gold tag per word */
    int32_t *first_tok;            /* token index of each word's first piece,
                                      -1 when truncated away */
} example;

typedef struct {
    example *ex;
    size_t n, cap;
} dataset;

static int ds_push(dataset *d, example *e)
{
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 1024;
        example *nb = realloc(d->ex, nc * sizeof *nb);
        if (!nb)
            return -1;
        d->ex = nb;
        d->cap = nc;
    }
    d->ex[d->n++] = *e;
    return 0;
}

static void ds_free(dataset *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->ex[i].ids);
        free(d->ex[i].types);
        free(d->ex[i].labels);
        free(d->ex[i].word_tag);
        free(d->ex[i].first_tok);
    }
    free(d->ex);
    memset(d, 0, sizeof *d);
}

/* label set */
typedef struct {
    char **names;
    size_t n, cap;
    int fixed;
} labels_t;

static int label_find(const labels_t *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], s) == 0)
            return (int)i;
    return -1;
}

static int label_add(labels_t *l, const char *s)
{
    int k = label_find(l, s);
    if (k >= 0)
        return k;
    if (l->fixed)
        return -1;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        char **nb = realloc(l->names, nc * sizeof *nb);
        if (!nb)
            return -2;
        l->names = nb;
        l->cap = nc;
    }
    l->names[l->n] = strdup(s);
    return l->names[l->n] ? (int)l->n++ : -2;
}

/* ---- files ------------------------------------------------------------- */

static int read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    int rc = bert__read_all(f, 0, buf, len);
    fclose(f);
    return rc == BERT_OK ? 0 : -1;
}

/* ---- tokenization helpers --------------------------------------------- */

typedef struct {
    bert_tokenizer *tok;
    bert_encoding *enc;
    size_t max_len;
    int32_t cls, sep, pad, mask, unk;
} tk_t;

static int encode_pair(tk_t *k, const char *a, const char *b, example *e,
                       char *errbuf, size_t errlen)
{
    bert_encode_params p = bert_encode_default_params();
    p.max_length = k->max_len;
    bert_error err;
    if (bert_tokenizer_encode(k->tok, a, strlen(a), b, b ? strlen(b) : 0, &p,
                              k->enc, &err)) {
        snprintf(errbuf, errlen, "%s", err.text);
        return -1;
    }
    size_t n = k->enc->n;
    e->ids = malloc(n * sizeof(int32_t));
    e->types = malloc(n * sizeof(int32_t));
    if (!e->ids || !e->types)
        return -2;
    memcpy(e->ids, k->enc->ids, n * sizeof(int32_t));
    memcpy(e->types, k->enc->type_ids, n * sizeof(int32_t));
    e->n = (int32_t)n;
    return 0;
}

/* Opens path with the library's reader for format; prints why not. */
static bert_reader *open_reader(const char *path, const opts_t *o,
                                bert_data_format format)
{
    bert_reader_params rp = bert_reader_default_params();
    rp.format = format;
    rp.text_column = o ? o->text_col : NULL;
    rp.pair_column = o ? o->pair_col : NULL;
    rp.label_column = o ? o->label_col : NULL;
    bert_reader *r;
    bert_error err;
    if (bert_reader_open(path, &rp, &r, &err)) {
        fprintf(stderr, "bert-train: %s\n", err.text);
        return NULL;
    }
    return r;
}

static int load_csv(const char *path, const opts_t *o, tk_t *k,
                    labels_t *labs, dataset *d)
{
    bert_reader *r = open_reader(path, o, BERT_DATA_CSV);
    if (!r)
        return EXIT_BADINPUT;
    bert_record rec;
    bert_error err;
    int rc = EXIT_OK, got;
    while (rc == EXIT_OK && (got = bert_reader_next(r, &rec, &err)) > 0) {
        example e;
        memset(&e, 0, sizeof e);
        int lab = label_add(labs, rec.label);
        if (lab < 0) {
            fprintf(stderr, "bert-train: %s: record %ld: unknown label '%s'\n",
                    path, rec.line, rec.label);
            rc = EXIT_BADINPUT;
            break;
        }
        e.label = lab;
        char eb[600];
        int er = encode_pair(k, rec.text, rec.pair, &e, eb, sizeof eb);
        if (er) {
            fprintf(stderr, "bert-train: %s: record %ld: %s\n", path, rec.line,
                    er == -2 ? "out of memory" : eb);
            rc = EXIT_BADINPUT;
            break;
        }
        if (ds_push(d, &e))
            rc = EXIT_BADINPUT;
    }
    if (rc == EXIT_OK && got < 0) {
        fprintf(stderr, "bert-train: %s\n", err.text);
        rc = EXIT_BADINPUT;
    }
    bert_reader_free(r);
    return rc;
}

/* CoNLL sentence -> example: words joined by spaces, encoded; each token is
 * mapped to its word through byte offsets. */
static int conll_sentence(tk_t *k, const opts_t *o, labels_t *labs,
                          const char *const *words, const char *const *tags,
                          size_t nw, dataset *d, const char *path, long line)
{
    size_t tl = 0;
    for (size_t i = 0; i < nw; i++)
        tl += strlen(words[i]) + 1;
    char *text = malloc(tl + 1);
    size_t *start = malloc((nw + 1) * sizeof *start);
    example e;
    memset(&e, 0, sizeof e);
    e.word_tag = malloc(nw * sizeof(int32_t));
    e.first_tok = malloc(nw * sizeof(int32_t));
    if (!text || !start || !e.word_tag || !e.first_tok) {
        free(text);
        free(start);
        free(e.word_tag);
        free(e.first_tok);
        return -2;
    }
    size_t p = 0;
    for (size_t i = 0; i < nw; i++) {
        start[i] = p;
        size_t l = strlen(words[i]);
        memcpy(text + p, words[i], l);
        p += l;
        text[p++] = ' ';
        int lab = label_add(labs, tags[i]);
        if (lab < 0) {
            fprintf(stderr, "bert-train: %s:%ld: unknown tag '%s'\n", path,
                    line, tags[i]);
            free(text);
            free(start);
            free(e.word_tag);
            free(e.first_tok);
            return -1;
        }
        e.word_tag[i] = lab;
        e.first_tok[i] = -1;
    }
    start[nw] = p;
    text[p ? p - 1 : 0] = 0;
    char eb[600];
    int er = encode_pair(k, text, NULL, &e, eb, sizeof eb);
    if (er) {
        fprintf(stderr, "bert-train: %s:%ld: %s\n", path, line, eb);
        free(text);
        free(start);
        free(e.word_tag);
        free(e.first_tok);
        free(e.ids);
        free(e.types);
        return -1;
    }
    e.nwords = (int32_t)nw;
    e.labels = malloc((size_t)e.n * sizeof(int32_t));
    if (!e.labels)
        return -2;
    size_t w = 0;
    for (int32_t t = 0; t < e.n; t++) {
        e.labels[t] = -100;
        if (k->enc->special_mask[t])
            continue;
        int64_t b = k->enc->byte_offsets[2 * t];
        while (w + 1 < nw && (size_t)b >= start[w + 1])
            w++;
        if (e.first_tok[w] < 0) {
            e.first_tok[w] = t;
            e.labels[t] = e.word_tag[w];
        } else if (o->all_subtokens) {
            const char *tg = labs->names[e.word_tag[w]];
            int lab = e.word_tag[w];
            if (strncmp(tg, "B-", 2) == 0) {
                char buf[256];
                snprintf(buf, sizeof buf, "I-%s", tg + 2);
                int il = label_find(labs, buf);
                if (il >= 0)
                    lab = il;
            }
            e.labels[t] = lab;
        }
    }
    free(text);
    free(start);
    return ds_push(d, &e) ? -2 : 0;
}

static int load_conll(const char *path, const opts_t *o, tk_t *k,
                      labels_t *labs, dataset *d)
{
    bert_reader *r = open_reader(path, o, BERT_DATA_CONLL);
    if (!r)
        return EXIT_BADINPUT;
    bert_record rec;
    bert_error err;
    int rc = EXIT_OK, got;
    while ((got = bert_reader_next(r, &rec, &err)) > 0)
        if (conll_sentence(k, o, labs, rec.words, rec.tags, rec.n_words, d,
                           path, rec.line)) {
            rc = EXIT_BADINPUT;
            break;
        }
    if (rc == EXIT_OK && got < 0) {
        fprintf(stderr, "bert-train: %s\n", err.text);
        rc = EXIT_BADINPUT;
    }
    bert_reader_free(r);
    return rc;
}

/* Plain text for MLM: every line tokenized without specials, the stream
 * packed into chunks of max_len - 2 tokens framed by [CLS] ... [SEP]. */
static int load_text(const char *path, tk_t *k, dataset *d)
{
    bert_reader *rd = open_reader(path, NULL, BERT_DATA_TEXT);
    if (!rd)
        return EXIT_BADINPUT;
    size_t chunk = k->max_len - 2;
    int32_t *cur = malloc(chunk * sizeof(int32_t));
    size_t nc = 0;
    bert_record rec;
    bert_error rerr;
    int got;
    bert_encode_params p = bert_encode_default_params();
    p.add_special_tokens = 0;
    int rc = EXIT_OK;
    while ((got = bert_reader_next(rd, &rec, &rerr)) > 0) {
        bert_error err;
        if (bert_tokenizer_encode(k->tok, rec.text, rec.text_len, NULL, 0, &p,
                                  k->enc, &err)) {
            fprintf(stderr, "bert-train: %s:%ld: %s (line skipped)\n", path,
                    rec.line, err.text);
            continue;
        }
        for (size_t i = 0; i < k->enc->n; i++) {
            cur[nc++] = k->enc->ids[i];
            if (nc == chunk) {
                example e;
                memset(&e, 0, sizeof e);
                e.n = (int32_t)(chunk + 2);
                e.ids = malloc((chunk + 2) * sizeof(int32_t));
                if (!e.ids) {
                    rc = EXIT_BADINPUT;
                    break;
                }
                e.ids[0] = k->cls;
                memcpy(e.ids + 1, cur, chunk * sizeof(int32_t));
                e.ids[chunk + 1] = k->sep;
                if (ds_push(d, &e)) {
                    rc = EXIT_BADINPUT;
                    break;
                }
                nc = 0;
            }
        }
        if (rc)
            break;
    }
    if (nc > 8 && !rc) { /* the tail */
        example e;
        memset(&e, 0, sizeof e);
        e.n = (int32_t)(nc + 2);
        e.ids = malloc((nc + 2) * sizeof(int32_t));
        if (e.ids) {
            e.ids[0] = k->cls;
            memcpy(e.ids + 1, cur, nc * sizeof(int32_t));
            e.ids[nc + 1] = k->sep;
            ds_push(d, &e);
        }
    }
    if (!rc && got < 0) {
        fprintf(stderr, "bert-train: %s\n", rerr.text);
        rc = EXIT_BADINPUT;
    }
    free(cur);
    bert_reader_free(rd);
    return rc;
}

/* ---- batching ---------------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void shuffle(size_t *a, size_t n, uint64_t seed)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(mix(seed ^ mix(i)) % i);
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

static const dataset *g_sort_ds;
static int cmp_len(const void *x, const void *y)
{
    const example *a = &g_sort_ds->ex[*(const size_t *)x];
    const example *b = &g_sort_ds->ex[*(const size_t *)y];
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* Epoch order: shuffled, then sorted by length inside windows of 50
 * batches (less padding), then the batches shuffled. */
static void epoch_order(const dataset *d, size_t bs, uint64_t seed, size_t *ord)
{
    size_t n = d->n;
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    shuffle(ord, n, seed);
    size_t win = bs * 50;
    g_sort_ds = d;
    for (size_t s = 0; s < n; s += win)
        qsort(ord + s, (n - s < win ? n - s : win), sizeof *ord, cmp_len);
    size_t nb = (n + bs - 1) / bs;
    size_t *bo = malloc(nb * sizeof *bo), *tmp = malloc(n * sizeof *tmp);
    if (!bo || !tmp) {
        free(bo);
        free(tmp);
        return;
    }
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
}

typedef struct {
    int32_t *ids, *types, *labels;
    size_t *lens;
    size_t cap;
} bbuf;

/* Fills a padded batch of examples idx[0..nb); MLM masks with a hash of
 * (seed, example, position) so that each epoch masks differently. */
static int make_batch(bbuf *bb, const dataset *d, const size_t *idx, size_t nb,
                      int task, const tk_t *k, size_t V, double mlm_prob,
                      uint64_t mseed, bert_train_batch *out)
{
    size_t T = 1;
    for (size_t i = 0; i < nb; i++)
        if ((size_t)d->ex[idx[i]].n > T)
            T = (size_t)d->ex[idx[i]].n;
    size_t need = nb * T;
    if (need > bb->cap) {
        int32_t *a = realloc(bb->ids, need * sizeof(int32_t));
        if (a)
            bb->ids = a;
        int32_t *b = realloc(bb->types, need * sizeof(int32_t));
        if (b)
            bb->types = b;
        int32_t *c = realloc(bb->labels, need * sizeof(int32_t));
        if (c)
            bb->labels = c;
        size_t *l = realloc(bb->lens, need * sizeof(size_t));
        if (l)
            bb->lens = l;
        if (!a || !b || !c || !l)
            return -1;
        bb->cap = need;
    }
    for (size_t i = 0; i < nb; i++) {
        const example *e = &d->ex[idx[i]];
        size_t n = (size_t)e->n;
        bb->lens[i] = n;
        for (size_t t = 0; t < T; t++) {
            size_t r = i * T + t;
            bb->ids[r] = t < n ? e->ids[t] : k->pad;
            bb->types[r] = (t < n && e->types) ? e->types[t] : 0;
            if (task == BERT_TRAIN_TOKEN)
                bb->labels[r] = t < n ? e->labels[t] : -100;
            else if (task == BERT_TRAIN_MLM) {
                bb->labels[r] = -100;
                int32_t id = bb->ids[r];
                if (t >= n || id == k->cls || id == k->sep || id == k->pad)
                    continue;
                uint64_t h = mix(mseed ^ mix(((uint64_t)idx[i] << 16) ^ t));
                double u = (double)(h >> 11) * (1.0 / 9007199254740992.0);
                if (u >= mlm_prob)
                    continue;
                bb->labels[r] = id;
                double u2 = u / mlm_prob;
                if (u2 < 0.8)
                    bb->ids[r] = k->mask;
                else if (u2 < 0.9)
                    bb->ids[r] = (int32_t)(mix(h) % V);
            }
        }
        if (task == BERT_TRAIN_SEQUENCE)
            bb->labels[i] = e->label;
    }
    out->batch = nb;
    out->seq_len = T;
    out->ids = bb->ids;
    out->type_ids = bb->types;
    out->lengths = bb->lens;
    out->labels = bb->labels;
    return 0;
}

/* ---- evaluation -------------------------------------------------------- */

typedef struct {
    double main;  /* the number that picks the best checkpoint (higher =
                     better) */
    char text[256];
} evalres;

static int evaluate(bert_trainer *t, const dataset *d, int task,
                    const labels_t *L, const tk_t *k, size_t bs, size_t V,
                    double mlm_prob, uint64_t seed, evalres *res)
{
    size_t n = d->n, C = L->n;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    bbuf bb = {0};
    float *logits = NULL;
    size_t lcap = 0;
    if (!idx)
        return -1;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    g_sort_ds = d;
    qsort(idx, n, sizeof *idx, cmp_len);
    int32_t *pred = NULL;
    if (task == BERT_TRAIN_SEQUENCE)
        pred = calloc(n + 1, sizeof *pred);
    int32_t **wpred = NULL;
    if (task == BERT_TRAIN_TOKEN)
        wpred = calloc(n + 1, sizeof *wpred);
    double tot_loss = 0;
    size_t tot_n = 0;
    for (size_t s = 0; s < n; s += bs) {
        size_t nb = n - s < bs ? n - s : bs;
        bert_train_batch b;
        if (make_batch(&bb, d, idx + s, nb, task, k, V, mlm_prob, seed, &b))
            return -1;
        size_t rows = task == BERT_TRAIN_SEQUENCE ? nb : nb * b.seq_len;
        if (task != BERT_TRAIN_MLM && rows * C > lcap) {
            lcap = rows * C;
            float *nl = realloc(logits, lcap * sizeof(float));
            if (!nl)
                return -1;
            logits = nl;
        }
        double loss;
        bert_error err;
        if (bert_trainer_predict(t, &b, logits, &loss, &err)) {
            fprintf(stderr, "bert-train: evaluation: %s\n", err.text);
            return -1;
        }
        tot_loss += loss * (double)nb;
        tot_n += nb;
        for (size_t i = 0; i < nb; i++) {
            const example *e = &d->ex[idx[s + i]];
            if (task == BERT_TRAIN_SEQUENCE) {
                const float *l = logits + i * C;
                int32_t best = 0;
                for (size_t c = 1; c < C; c++)
                    if (l[c] > l[best])
                        best = (int32_t)c;
                pred[idx[s + i]] = best;
            } else if (task == BERT_TRAIN_TOKEN) {
                int32_t *wp = malloc(((size_t)e->nwords + 1) * sizeof *wp);
                if (!wp)
                    return -1;
                int32_t o = label_find(L, "O");
                for (int32_t w = 0; w < e->nwords; w++) {
                    int32_t ft = e->first_tok[w];
                    if (ft < 0) {
                        wp[w] = o >= 0 ? o : 0;
                        continue;
                    }
                    const float *l = logits + (i * b.seq_len + (size_t)ft) * C;
                    int32_t best = 0;
                    for (size_t c = 1; c < C; c++)
                        if (l[c] > l[best])
                            best = (int32_t)c;
                    wp[w] = best;
                }
                wpred[idx[s + i]] = wp;
            }
        }
    }
    if (task == BERT_TRAIN_MLM) {
        double ml = tot_n ? tot_loss / (double)tot_n : 0;
        res->main = -ml;
        snprintf(res->text, sizeof res->text, "dev mlm loss %.4f (ppl %.1f)",
                 ml, bert_perplexity(ml));
    } else if (task == BERT_TRAIN_SEQUENCE) {
        int32_t *gold = malloc((n + 1) * sizeof *gold);
        if (!gold)
            return -1;
        for (size_t i = 0; i < n; i++)
            gold[i] = d->ex[i].label;
        double acc = bert_accuracy(pred, gold, n);
        double f1 = bert_macro_f1(pred, gold, n, C);
        free(gold);
        res->main = acc;
        snprintf(res->text, sizeof res->text,
                 "dev loss %.4f accuracy %.4f macro-F1 %.4f (%zu examples)",
                 tot_n ? tot_loss / (double)tot_n : 0, acc, f1, n);
    } else {
        /* word-level: every sentence's words in one row for the accuracy,
         * their tag names per sentence for the entities */
        size_t words = 0, maxw = 0;
        for (size_t i = 0; i < n; i++) {
            words += (size_t)d->ex[i].nwords;
            if ((size_t)d->ex[i].nwords > maxw)
                maxw = (size_t)d->ex[i].nwords;
        }
        int32_t *fg = malloc((words + 1) * sizeof *fg);
        int32_t *fp = malloc((words + 1) * sizeof *fp);
        const char **tg = malloc((maxw + 1) * sizeof *tg);
        const char **tp = malloc((maxw + 1) * sizeof *tp);
        if (!fg || !fp || !tg || !tp) {
            free(fg);
            free(fp);
            free(tg);
            free(tp);
            return -1;
        }
        int bio = bert_tags_are_iob((const char *const *)L->names, L->n);
        bert_entity_counts ec = {0, 0, 0};
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            const example *e = &d->ex[i];
            size_t nw = (size_t)e->nwords;
            memcpy(fg + at, e->word_tag, nw * sizeof *fg);
            memcpy(fp + at, wpred[i], nw * sizeof *fp);
            at += nw;
            if (!bio)
                continue;
            for (size_t w = 0; w < nw; w++) {
                tg[w] = L->names[e->word_tag[w]];
                tp[w] = L->names[wpred[i][w]];
            }
            bert_entity_counts_add(&ec, tg, tp, nw, NULL);
        }
        double acc = bert_accuracy(fp, fg, words);
        free(fg);
        free(fp);
        free(tg);
        free(tp);
        if (bio) {
            double P, R, F;
            bert_entity_scores(&ec, &P, &R, &F);
            res->main = F;
            snprintf(res->text, sizeof res->text,
                     "dev loss %.4f entity P %.4f R %.4f F1 %.4f, token "
                     "accuracy %.4f (%zu sentences)",
                     tot_n ? tot_loss / (double)tot_n : 0, P, R, F, acc, n);
        } else {
            res->main = acc;
            snprintf(res->text, sizeof res->text,
                     "dev loss %.4f token accuracy %.4f (%zu sentences)",
                     tot_n ? tot_loss / (double)tot_n : 0, acc, n);
        }
        for (size_t i = 0; i < n; i++)
            free(wpred[i]);
    }
    free(wpred);
    free(pred);
    free(idx);
    free(logits);
    free(bb.ids);
    free(bb.types);
    free(bb.labels);
    free(bb.lens);
    return 0;
}

/* ---- output directory --------------------------------------------------- */

static int copy_file(const char *from, const char *to)
{
    char *buf;
    size_t len;
    if (read_file(from, &buf, &len))
        return -1;
    char tmp[4096];
    FILE *f = app_create(to, tmp);
    if (!f) {
        free(buf);
        return -1;
    }
    int ok = fwrite(buf, 1, len, f) == len;
    free(buf);
    if (!ok) {
        app_discard(f, tmp);
        return -1;
    }
    return app_commit(f, tmp, to);
}

/* Hugging Face name of the word or position ("word", "position") embedding
 * matrix of t's architecture, in buf. */
static const char *embedding_name(const bert_trainer *t, const char *which,
                                  char buf[static 96])
{
    const bert_config *c = bert_trainer_config(t);
    snprintf(buf, 96, "%s.embeddings.%s_embeddings.weight",
             c->is_distilbert                  ? "distilbert"
             : c->family == BERT_FAMILY_ROBERTA ? "roberta"
             : c->family == BERT_FAMILY_ELECTRA ? "electra"
                                                : "bert",
             which);
    return buf;
}

/* app_write_tokenizer_config names BertTokenizer.  transformers' DistilBERT
 * directories name DistilBertTokenizer: the same WordPiece tokenizer, but
 * without token_type_ids among its outputs (DistilBERT's forward does not
 * take them, so a pipeline fed by BertTokenizer fails). */
static int set_distilbert_tokenizer_class(const char *out)
{
    static const char from[] = "\"tokenizer_class\": \"BertTokenizer\"";
    const size_t m = sizeof from - 1;
    char path[4096], *buf;
    size_t len;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", out);
    if (read_file(path, &buf, &len))
        return -1;
    char *at = NULL;
    for (size_t i = 0; !at && i + m <= len; i++)
        if (memcmp(buf + i, from, m) == 0)
            at = buf + i;
    char tmp[4096];
    FILE *f = at ? app_create(path, tmp) : NULL;
    if (!f) {
        free(buf);
        return -1;
    }
    size_t head = (size_t)(at - buf), tail = head + m;
    int ok = fwrite(buf, 1, head, f) == head &&
             fputs("\"tokenizer_class\": \"DistilBertTokenizer\"", f) >= 0 &&
             fwrite(buf + tail, 1, len - tail, f) == len - tail;
    free(buf);
    if (!ok) {
        app_discard(f, tmp);
        return -1;
    }
    return app_commit(f, tmp, path);
}

static int write_tokenizer_files(const char *vocab_dir, const char *out,
                                 int lowercase, const bert_config *cfg)
{
    char a[4096], b[4096];
    struct stat st;
    snprintf(a, sizeof a, "%s/merges.txt", vocab_dir);
    if (cfg->family == BERT_FAMILY_ROBERTA && stat(a, &st) == 0) {
        /* byte-level BPE: the files as they are (they are the tokenizer) */
        static const char *const files[] = {
            "vocab.json", "merges.txt", "tokenizer.json",
            "tokenizer_config.json", "special_tokens_map.json"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            snprintf(a, sizeof a, "%s/%s", vocab_dir, files[i]);
            snprintf(b, sizeof b, "%s/%s", out, files[i]);
            if (stat(a, &st) == 0 && strcmp(a, b) != 0 && copy_file(a, b))
                return -1;
        }
        return 0;
    }
    snprintf(a, sizeof a, "%s/vocab.txt", vocab_dir);
    snprintf(b, sizeof b, "%s/vocab.txt", out);
    if (strcmp(a, b) != 0 && copy_file(a, b))
        return -1;
    if (app_write_tokenizer_config(out, lowercase, cfg->max_position))
        return -1;
    if (cfg->is_distilbert && set_distilbert_tokenizer_class(out))
        return -1;
    snprintf(b, sizeof b, "%s/special_tokens_map.json", out);
    char tmp[4096];
    FILE *f = app_create(b, tmp);
    if (!f)
        return -1;
    fprintf(f, "{\n  \"cls_token\": \"[CLS]\",\n  \"mask_token\": \"[MASK]\",\n"
               "  \"pad_token\": \"[PAD]\",\n  \"sep_token\": \"[SEP]\",\n"
               "  \"unk_token\": \"[UNK]\"\n}\n");
    return app_commit(f, tmp, b);
}

/* --init's head was trained for its own id2label order.  When the labels
 * of this run are the same names in another order (--labels
 * positive,negative on a negative,positive head), the rows of
 * classifier.weight and classifier.bias are permuted to follow them: kept
 * as they were, every name would sit on the other label's row (dev
 * accuracy 0.18 instead of 0.82).  Other names (same count) keep the rows,
 * as transformers does, with a note.  Returns 0, or -1 after a message. */
static int remap_head(bert_trainer *t, const char *init, const labels_t *labs)
{
    bert_model_params mp = bert_model_default_params();
    mp.load_tokenizer = 0;
    bert_model *m;
    bert_error err;
    if (bert_model_load(init, &mp, &m, &err) != BERT_OK)
        return 0; /* the trainer loaded it; a base model has no head */
    size_t C = labs->n, oc = bert_model_config(m)->num_labels;
    int rc = 0;
    if (oc != C || C < 2 || bert_model_config(m)->task == BERT_TASK_BASE) {
        bert_model_free(m);
        return 0;
    }
    size_t *from = malloc(C * sizeof *from);
    int same = 1, perm = 1;
    for (size_t i = 0; from && i < C; i++) {
        from[i] = C;
        for (size_t j = 0; j < C; j++) {
            const char *l = bert_model_label(m, (int)j);
            if (l && strcmp(l, labs->names[i]) == 0)
                from[i] = j;
        }
        perm &= from[i] < C;
        same &= from[i] == i;
    }
    if (!from) {
        fprintf(stderr, "bert-train: out of memory\n");
        rc = -1;
    } else if (perm && !same) {
        float *w, *b;
        size_t nw, nb;
        if (bert_trainer_tensor(t, "classifier.weight", &w, &nw, &err) ||
            bert_trainer_tensor(t, "classifier.bias", &b, &nb, &err) ||
            nw % C || nb != C) {
            fprintf(stderr, "bert-train: --init %s: cannot reorder the "
                            "classifier to the labels' order\n", init);
            rc = -1;
        } else {
            size_t H = nw / C;
            float *cw = malloc(nw * sizeof *cw), cb[BERT_CFG_MAX_LABELS_APP];
            if (!cw || C > BERT_CFG_MAX_LABELS_APP) {
                fprintf(stderr, "bert-train: out of memory\n");
                rc = -1;
            } else {
                memcpy(cw, w, nw * sizeof *cw);
                memcpy(cb, b, C * sizeof *cb);
                for (size_t i = 0; i < C; i++) {
                    memcpy(w + i * H, cw + from[i] * H, H * sizeof *w);
                    b[i] = cb[from[i]];
                }
                fprintf(stderr, "bert-train: --init %s: classifier rows "
                                "reordered to the label order %s",
                        init, labs->names[0]);
                for (size_t i = 1; i < C; i++)
                    fprintf(stderr, ",%s", labs->names[i]);
                fputc('\n', stderr);
            }
            free(cw);
        }
    } else if (!perm) {
        fprintf(stderr, "bert-train: note: --init %s's head was trained for "
                        "other label names; its rows are kept in order\n",
                init);
    }
    free(from);
    bert_model_free(m);
    return rc;
}

/* Saves the model into out: bert_trainer_save writes into a fresh staging
 * directory inside out, then each file is fsynced and renamed over its
 * final name (a kill or a full disk during the save leaves the previous
 * model whole).  Then the tokenizer files, each written the same way.
 * Returns 0, or -1 after printing the reason. */
static int save_model(bert_trainer *t, const char *vocab_dir, const char *out,
                      int lowercase)
{
    static const char *const files[] = {"config.json", "model.safetensors"};
    char stage[4096], a[4200], b[4096];
    bert_error err;
    snprintf(stage, sizeof stage, "%s/.bert-train-save.%ld", out,
             (long)getpid());
    if (mkdir(stage, 0755) && errno != EEXIST) {
        fprintf(stderr, "bert-train: cannot create %s: %s\n", stage,
                strerror(errno));
        return -1;
    }
    int rc = bert_trainer_save(t, stage, &err);
    if (rc)
        fprintf(stderr, "bert-train: %s\n", err.text);
    for (size_t i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/%s", stage, files[i]);
        snprintf(b, sizeof b, "%s/%s", out, files[i]);
        if (!rc && app_commit(NULL, a, b)) {
            fprintf(stderr, "bert-train: cannot write %s: %s\n", b,
                    strerror(errno));
            rc = -1;
        }
        unlink(a);
    }
    rmdir(stage);
    if (rc)
        return -1;
    if (write_tokenizer_files(vocab_dir, out, lowercase,
                              bert_trainer_config(t))) {
        fprintf(stderr, "bert-train: cannot write the tokenizer files into "
                        "%s: %s\n", out, strerror(errno));
        return -1;
    }
    return 0;
}

/* Writes the resume state (trainer_state.bin, trainer_progress.txt) into
 * out, each file whole or not at all.  The progress file holds the epochs
 * done, the best dev score and how many examples of the next epoch were
 * already trained on (its order is a function of the seed and the epoch,
 * so a resumed run continues with the same batches).  Returns 0, or -1 after printing the
 * reason. */
static int save_resume_state(bert_trainer *t, const char *out, size_t epoch,
                             size_t offset, double best)
{
    char path[4096], tmp[4096];
    bert_error err;
    snprintf(path, sizeof path, "%s/trainer_state.bin", out);
    FILE *f = app_create(path, tmp);
    if (!f) {
        fprintf(stderr, "bert-train: cannot create %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    fclose(f);
    if (bert_trainer_save_state(t, tmp, &err)) {
        fprintf(stderr, "bert-train: cannot write %s: %s\n", path, err.text);
        app_discard(NULL, tmp);
        return -1;
    }
    if (app_commit(NULL, tmp, path)) {
        fprintf(stderr, "bert-train: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/trainer_progress.txt", out);
    if (!(f = app_create(path, tmp)) ||
        fprintf(f, "%zu %.17g %zu\n", epoch, best, offset) < 0 ||
        app_commit(f, tmp, path)) {
        fprintf(stderr, "bert-train: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    return 0;
}


/* ---- word-embedding pre-training (skip-gram, negative sampling) --------- */

/* word2vec's skip-gram with negative sampling over the WordPiece ids of the
 * packed text (specials skipped): window up to `window` (random shrink),
 * `neg` negatives from the unigram^0.75 table, frequent-token subsampling
 * with threshold 1e-4, learning rate decaying linearly from lr0.
 * Deterministic (one thread, hash-based random numbers).  Writes the input
 * vectors [V][H] to out. */
static int train_sgns(const dataset *d, const tk_t *k, size_t V, size_t H,
                      double epochs, long window, long neg, double lr0,
                      uint64_t seed, float *out, int quiet)
{
    int64_t *cnt = calloc(V, sizeof *cnt);
    float *syn1 = calloc(V * H, sizeof *syn1);
    float *neu = malloc(H * sizeof *neu);
    int32_t *sent = NULL;
    size_t scap = 0;
    enum { TABLE = 1 << 23 };
    int32_t *table = malloc(TABLE * sizeof *table);
    if (!cnt || !syn1 || !neu || !table)
        return -1;
    int64_t total = 0;
    for (size_t i = 0; i < d->n; i++)
        for (int32_t t = 0; t < d->ex[i].n; t++) {
            int32_t id = d->ex[i].ids[t];
            if (id == k->cls || id == k->sep || id == k->pad)
                continue;
            cnt[id]++;
            total++;
        }
    double zsum = 0;
    for (size_t v = 0; v < V; v++)
        zsum += pow((double)cnt[v], 0.75);
    {
        size_t v = 0;
        double acc = V ? pow((double)cnt[0], 0.75) / zsum : 0;
        for (size_t i = 0; i < TABLE; i++) {
            table[i] = (int32_t)v;
            if ((double)(i + 1) / TABLE > acc && v + 1 < V) {
                v++;
                acc += pow((double)cnt[v], 0.75) / zsum;
            }
        }
    }
    uint64_t r = seed ^ 0x5eed;
    for (size_t i = 0; i < V * H; i++) {
        r = mix(r);
        out[i] = (float)(((double)(r >> 11) / 9007199254740992.0 - 0.5) / (double)H);
    }
    double sample = 1e-4;
    int64_t todo = (int64_t)(epochs * (double)total), done = 0;
    int last_pct = -1;
    for (double ep = 0; ep < epochs && done < todo; ep += 1) {
        for (size_t i = 0; i < d->n && done < todo; i++) {
            const example *e = &d->ex[i];
            size_t ns = 0;
            if ((size_t)e->n > scap) {
                scap = (size_t)e->n * 2;
                sent = realloc(sent, scap * sizeof *sent);
                if (!sent)
                    return -1;
            }
            for (int32_t t = 0; t < e->n; t++) {
                int32_t id = e->ids[t];
                if (id == k->cls || id == k->sep || id == k->pad)
                    continue;
                done++;
                double f = (double)cnt[id] / (double)total;
                double keep = (sqrt(f / sample) + 1) * sample / f;
                r = mix(r);
                if (keep < (double)(r >> 11) / 9007199254740992.0)
                    continue;
                sent[ns++] = id;
            }
            double alpha = lr0 * (1.0 - (double)done / (double)(todo + 1));
            if (alpha < lr0 * 1e-4)
                alpha = lr0 * 1e-4;
            for (size_t pos = 0; pos < ns; pos++) {
                r = mix(r);
                long b = (long)(r % (uint64_t)window);
                long lo = (long)pos - (window - b), hi = (long)pos + (window - b);
                for (long c = lo; c <= hi; c++) {
                    if (c < 0 || c >= (long)ns || c == (long)pos)
                        continue;
                    float *l1 = out + (size_t)sent[c] * H;
                    memset(neu, 0, H * sizeof *neu);
                    for (long dn = 0; dn <= neg; dn++) {
                        int32_t target;
                        float label;
                        if (dn == 0) {
                            target = sent[pos];
                            label = 1;
                        } else {
                            r = mix(r);
                            target = table[(r >> 20) % TABLE];
                            if (target == sent[pos])
                                continue;
                            label = 0;
                        }
                        float *l2 = syn1 + (size_t)target * H;
                        float f = 0;
                        for (size_t h = 0; h < H; h++)
                            f += l1[h] * l2[h];
                        float sg = f > 6 ? 1.0f : f < -6 ? 0.0f : 1.0f / (1.0f + expf(-f));
                        float g = (label - sg) * (float)alpha;
                        for (size_t h = 0; h < H; h++) {
                            neu[h] += g * l2[h];
                            l2[h] += g * l1[h];
                        }
                    }
                    for (size_t h = 0; h < H; h++)
                        l1[h] += neu[h];
                }
            }
            int pct = (int)(100.0 * (double)done / (double)(todo ? todo : 1));
            if (!quiet && pct / 10 != last_pct / 10) {
                fprintf(stderr, "embeddings: %d%% (%lld tokens)\n", pct,
                        (long long)done);
                last_pct = pct;
            }
        }
    }
    free(cnt);
    free(syn1);
    free(neu);
    free(sent);
    free(table);
    return 0;
}

/* ---- main -------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_num(const char *s, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (*s == 0 || *e || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (strcmp(x, "O") == 0)
        return strcmp(y, "O") == 0 ? 0 : -1;
    if (strcmp(y, "O") == 0)
        return 1;
    return strcmp(x, y);
}

static void remap_labels(dataset *d, const int32_t *map, int task)
{
    for (size_t i = 0; i < d->n; i++) {
        example *e = &d->ex[i];
        if (task == BERT_TRAIN_SEQUENCE)
            e->label = map[e->label];
        if (task == BERT_TRAIN_TOKEN) {
            for (int32_t t = 0; t < e->n; t++)
                if (e->labels[t] >= 0)
                    e->labels[t] = map[e->labels[t]];
            for (int32_t w = 0; w < e->nwords; w++)
                e->word_tag[w] = map[e->word_tag[w]];
        }
    }
}

int main(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof o);
    o.text_col = "text";
    o.label_col = "label";
    o.epochs = 3;
    o.batch = 32;
    o.accum = 1;
    o.max_len = 128;
    o.threads = 1;
    o.lr = 5e-5;
    o.warmup = 0.1;
    o.wd = 0.01;
    o.clip = 1.0;
    o.mlm_prob = 0.15;
    o.seed = 42;
    o.lowercase = -1;
    o.emb_lr = 1.0;
    o.task = 0;
    enum { O_INIT = 256, O_CONFIG, O_VOCAB, O_TASK, O_TRAIN, O_DEV, O_OUT,
           O_FORMAT, O_TEXTC, O_PAIRC, O_LABC, O_LABELS, O_ALLSUB, O_LOWER,
           O_CASED, O_EPOCHS, O_BS, O_ACCUM, O_LR, O_WARM, O_WD, O_CLIP,
           O_MAXLEN, O_MLMP, O_NODROP, O_SEED, O_THREADS, O_MAXMIN, O_SAVEEVERY, O_DEVMAX,
           O_LOGEVERY, O_RESUME, O_HELP, O_VERSION, O_EMBLR, O_SINPOS, O_STOPEP,
           O_SAVESTATE };
    static const struct option lo[] = {
        {"init", 1, 0, O_INIT}, {"config", 1, 0, O_CONFIG},
        {"vocab", 1, 0, O_VOCAB}, {"task", 1, 0, O_TASK},
        {"train", 1, 0, O_TRAIN}, {"dev", 1, 0, O_DEV}, {"out", 1, 0, O_OUT},
        {"format", 1, 0, O_FORMAT}, {"text-column", 1, 0, O_TEXTC},
        {"pair-column", 1, 0, O_PAIRC}, {"label-column", 1, 0, O_LABC},
        {"labels", 1, 0, O_LABELS}, {"label-all-subtokens", 0, 0, O_ALLSUB},
        {"lowercase", 0, 0, O_LOWER}, {"cased", 0, 0, O_CASED},
        {"epochs", 1, 0, O_EPOCHS}, {"batch-size", 1, 0, O_BS},
        {"accum", 1, 0, O_ACCUM}, {"lr", 1, 0, O_LR}, {"warmup", 1, 0, O_WARM},
        {"weight-decay", 1, 0, O_WD}, {"max-grad-norm", 1, 0, O_CLIP},
        {"max-length", 1, 0, O_MAXLEN}, {"mlm-probability", 1, 0, O_MLMP},
        {"no-dropout", 0, 0, O_NODROP}, {"seed", 1, 0, O_SEED},
        {"threads", 1, 0, O_THREADS}, {"max-minutes", 1, 0, O_MAXMIN}, {"save-every", 1, 0, O_SAVEEVERY},
        {"dev-max", 1, 0, O_DEVMAX}, {"log-every", 1, 0, O_LOGEVERY},
        {"resume", 0, 0, O_RESUME}, {"save-state", 0, 0, O_SAVESTATE}, {"embedding-lr-scale", 1, 0, O_EMBLR},
        {"sinusoidal-positions", 0, 0, O_SINPOS},
        {"stop-after-epochs", 1, 0, O_STOPEP}, {"quiet", 0, 0, 'q'},
        {"help", 0, 0, O_HELP}, {"version", 0, 0, O_VERSION}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "q", lo, NULL)) != -1) {
        double v = 0;
        int num = (c >= O_EPOCHS && c <= O_LOGEVERY && c != O_NODROP) ||
                  c == O_EMBLR || c == O_STOPEP;
        if (num && parse_num(optarg, &v)) {
            fprintf(stderr, "bert-train: bad number '%s'\n", optarg);
            return EXIT_USAGE;
        }
        switch (c) {
        case O_INIT: o.init = optarg; break;
        case O_CONFIG: o.config = optarg; break;
        case O_VOCAB: o.vocab = optarg; break;
        case O_TASK:
            o.task = !strcmp(optarg, "sequence") ? BERT_TRAIN_SEQUENCE
                     : !strcmp(optarg, "token") ? BERT_TRAIN_TOKEN
                     : !strcmp(optarg, "mlm")   ? BERT_TRAIN_MLM
                     : !strcmp(optarg, "embeddings") ? TASK_EMBED
                                                : -1;
            break;
        case O_TRAIN: o.train = optarg; break;
        case O_DEV: o.dev = optarg; break;
        case O_OUT: o.out = optarg; break;
        case O_FORMAT: o.format = optarg; break;
        case O_TEXTC: o.text_col = optarg; break;
        case O_PAIRC: o.pair_col = optarg; break;
        case O_LABC: o.label_col = optarg; break;
        case O_LABELS: o.labels = optarg; break;
        case O_ALLSUB: o.all_subtokens = 1; break;
        case O_LOWER: o.lowercase = 1; break;
        case O_CASED: o.lowercase = 0; break;
        case O_EPOCHS: o.epochs = v; break;
        case O_BS: o.batch = (long)v; break;
        case O_ACCUM: o.accum = (long)v; break;
        case O_LR: o.lr = v; break;
        case O_WARM: o.warmup = v; break;
        case O_WD: o.wd = v; break;
        case O_CLIP: o.clip = v; break;
        case O_MAXLEN: o.max_len = (long)v; break;
        case O_MLMP: o.mlm_prob = v; break;
        case O_NODROP: o.no_dropout = 1; break;
        case O_SEED: o.seed = (unsigned long long)v; break;
        case O_THREADS:
            if ((o.threads = app_parse_threads("bert-train", optarg)) < 0)
                return EXIT_USAGE;
            break;
        case O_MAXMIN: o.max_minutes = v; break;
        case O_SAVEEVERY: o.save_every = v; break;
        case O_DEVMAX: o.dev_max = (long)v; break;
        case O_LOGEVERY: o.log_every = (long)v; break;
        case O_RESUME: o.resume = o.save_state = 1; break;
        case O_SAVESTATE: o.save_state = 1; break;
        case O_EMBLR: o.emb_lr = v; break;
        case O_SINPOS: o.sinpos = 1; break;
        case O_STOPEP: o.stop_epochs = (long)v; break;
        case 'q': o.quiet = 1; break;
        case O_HELP: usage(stdout); return EXIT_OK;
        case O_VERSION:
            printf("bert-train (libbert) %s\n", BERT_VERSION_STRING);
            return EXIT_OK;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    const char *why = NULL;
    if (optind < argc)
        why = "unexpected argument";
    else if (o.task <= 0)
        why = "--task sequence|token|mlm|embeddings is required";
    else if (!o.init == !o.config)
        why = "give exactly one of --init DIR and --config FILE";
    else if (o.config && !o.vocab)
        why = "--config needs --vocab DIR";
    else if (!o.train || !o.out)
        why = "--train FILE and --out DIR are required";
    else if (o.batch < 1)
        why = "--batch-size must be at least 1";
    else if (o.accum < 1)
        why = "--accum must be at least 1";
    else if (o.max_len < 8)
        why = "--max-length must be at least 8";
    else if (o.epochs <= 0)
        why = "--epochs must be more than 0";
    else if (o.lr <= 0)
        why = "--lr must be more than 0";
    else if (o.mlm_prob <= 0 || o.mlm_prob >= 1)
        why = "--mlm-probability must be between 0 and 1 (exclusive)";
    if (why) {
        fprintf(stderr, "bert-train: %s\n", why);
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *fmt = o.format;
    if (!fmt) {
        const char *dot = strrchr(o.train, '.');
        fmt = (dot && !strcmp(dot, ".csv"))     ? "csv"
              : (dot && !strcmp(dot, ".conll")) ? "conll"
                                                : "text";
    }
    if ((o.task == BERT_TRAIN_SEQUENCE && strcmp(fmt, "csv")) ||
        (o.task == BERT_TRAIN_TOKEN && strcmp(fmt, "conll")) ||
        ((o.task == BERT_TRAIN_MLM || o.task == TASK_EMBED) && strcmp(fmt, "text"))) {
        fprintf(stderr, "bert-train: task and data format disagree (%s); use "
                        "CSV for sequence, CoNLL for token, text for mlm "
                        "(--format)\n", fmt);
        return EXIT_USAGE;
    }
    const char *vocab_dir = o.vocab ? o.vocab : o.init;
    /* --out now, so that a bad path fails before any training */
    {
        struct stat st;
        char probe[4096], tmp[4096];
        FILE *f = NULL;
        if (mkdir(o.out, 0755) && errno != EEXIST) {
            fprintf(stderr, "bert-train: cannot create --out %s: %s\n", o.out,
                    strerror(errno));
            exit(EXIT_BADINPUT);
        }
        if (stat(o.out, &st) || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "bert-train: --out %s is not a directory\n", o.out);
            exit(EXIT_BADINPUT);
        }
        snprintf(probe, sizeof probe, "%s/.bert-train-probe", o.out);
        if (!(f = app_create(probe, tmp))) {
            fprintf(stderr, "bert-train: cannot write into --out %s: %s\n",
                    o.out, strerror(errno));
            exit(EXIT_BADINPUT);
        }
        app_discard(f, tmp);
    }

    /* tokenizer */
    bert_error err;
    tk_t k;
    memset(&k, 0, sizeof k);
    {
        bert_tokenizer *t0;
        if (bert_tokenizer_load(vocab_dir, &t0, &err)) {
            fprintf(stderr, "bert-train: %s\n", err.text);
            exit(EXIT_BADINPUT);
        }
        if (bert_tokenizer_get_kind(t0) == BERT_TOKENIZER_BPE) {
            /* RoBERTa: the tokenizer as it is (no lowercasing to choose);
             * the word-level tasks only (mlm and embeddings pack or count
             * WordPiece ids, and RoBERTa's lm_head is not in the trainer) */
            if (o.task == BERT_TRAIN_MLM || o.task == TASK_EMBED) {
                fprintf(stderr, "bert-train: %s: byte-level BPE (RoBERTa) "
                                "models can be fine-tuned for the sequence "
                                "and token tasks only\n",
                        vocab_dir);
                bert_tokenizer_free(t0);
                exit(EXIT_BADINPUT);
            }
            o.lowercase = 0;
            k.tok = t0;
        } else {
            int lower = o.lowercase >= 0 ? o.lowercase : bert_tokenizer_lowercase(t0);
            bert_tokenizer_free(t0);
            o.lowercase = lower;
            char vp[4096];
            snprintf(vp, sizeof vp, "%s/vocab.txt", vocab_dir);
            if (bert_tokenizer_load_vocab(vp, lower, -1, 1, &k.tok, &err)) {
                fprintf(stderr, "bert-train: %s\n", err.text);
                exit(EXIT_BADINPUT);
            }
        }
    }
    k.enc = bert_encoding_create();
    k.max_len = (size_t)o.max_len;
    k.cls = bert_tokenizer_special(k.tok, BERT_TOKEN_CLS);
    k.sep = bert_tokenizer_special(k.tok, BERT_TOKEN_SEP);
    k.pad = bert_tokenizer_special(k.tok, BERT_TOKEN_PAD);
    k.mask = bert_tokenizer_special(k.tok, BERT_TOKEN_MASK);
    if (k.cls < 0 || k.sep < 0 || k.pad < 0 || (o.task == BERT_TRAIN_MLM && k.mask < 0)) {
        fprintf(stderr, "bert-train: the vocabulary lacks [CLS], [SEP], [PAD] "
                        "or [MASK]\n");
        exit(EXIT_BADINPUT);
    }
    /* labels */
    labels_t labs;
    memset(&labs, 0, sizeof labs);
    if (o.labels) {
        char *s = strdup(o.labels), *save = NULL;
        for (char *p = strtok_r(s, ",", &save); p; p = strtok_r(NULL, ",", &save))
            label_add(&labs, p);
        free(s);
        labs.fixed = 1;
    }
    dataset tr = {0}, dv = {0};
    double t0 = now();
    int rc;
    if (o.task == BERT_TRAIN_SEQUENCE)
        rc = load_csv(o.train, &o, &k, &labs, &tr);
    else if (o.task == BERT_TRAIN_TOKEN)
        rc = load_conll(o.train, &o, &k, &labs, &tr);
    else
        rc = load_text(o.train, &k, &tr);
    if (rc)
        exit(rc);
    if (tr.n == 0) {
        fprintf(stderr, "bert-train: %s: no examples\n", o.train);
        exit(EXIT_BADINPUT);
    }
    if (o.task != BERT_TRAIN_MLM && o.task != TASK_EMBED && !o.labels) {
        /* sorted label order ("O" first), fixed before the dev set */
        char **sorted = malloc(labs.n * sizeof *sorted);
        int32_t *map = malloc(labs.n * sizeof *map);
        if (!sorted || !map)
            exit(EXIT_BADINPUT);
        memcpy(sorted, labs.names, labs.n * sizeof *sorted);
        qsort(sorted, labs.n, sizeof *sorted, cmp_names);
        for (size_t i = 0; i < labs.n; i++)
            for (size_t j = 0; j < labs.n; j++)
                if (labs.names[i] == sorted[j])
                    map[i] = (int32_t)j;
        remap_labels(&tr, map, o.task);
        memcpy(labs.names, sorted, labs.n * sizeof *sorted);
        free(sorted);
        free(map);
    }
    labs.fixed = 1;
    if ((o.task == BERT_TRAIN_SEQUENCE || o.task == BERT_TRAIN_TOKEN) &&
        labs.n < 2) {
        fprintf(stderr, "bert-train: %s: every example has the label \"%s\"; "
                        "a classifier needs at least two labels\n",
                o.train, labs.n ? labs.names[0] : "");
        exit(EXIT_BADINPUT);
    }
    if (o.dev) {
        if (o.task == BERT_TRAIN_SEQUENCE)
            rc = load_csv(o.dev, &o, &k, &labs, &dv);
        else if (o.task == BERT_TRAIN_TOKEN)
            rc = load_conll(o.dev, &o, &k, &labs, &dv);
        else
            rc = load_text(o.dev, &k, &dv);
        if (rc)
            exit(rc);
        if (o.dev_max > 0 && dv.n > (size_t)o.dev_max)
            dv.n = (size_t)o.dev_max; /* (the rest leaks until exit) */
    }
    if (!o.quiet)
        fprintf(stderr, "bert-train: %zu training and %zu dev examples "
                        "(tokenized in %.1f s)\n", tr.n, dv.n, now() - t0);

    /* trainer */
    size_t per_step = (size_t)(o.batch * o.accum);
    size_t steps_per_epoch = (tr.n + per_step - 1) / per_step;
    size_t total = (size_t)ceil(o.epochs * (double)steps_per_epoch);
    bert_train_params p = bert_train_default_params();
    p.task = o.task == TASK_EMBED ? BERT_TRAIN_MLM : (bert_train_task)o.task;
    p.num_labels = labs.n;
    p.labels = (const char *const *)labs.names;
    p.lr = (float)o.lr;
    p.weight_decay = (float)o.wd;
    p.max_grad_norm = (float)o.clip;
    p.warmup_steps = o.warmup < 1 ? (size_t)(o.warmup * (double)total) : (size_t)o.warmup;
    p.total_steps = total;
    p.seed = o.seed;
    p.n_threads = (int)o.threads;
    p.dropout = !o.no_dropout;
    p.embedding_lr_scale = (float)o.emb_lr;
    bert_trainer *t;
    if (bert_trainer_create(o.init, o.config, &p, &t, &err)) {
        fprintf(stderr, "bert-train: %s\n", err.text);
        exit(EXIT_BADINPUT);
    }
    if (o.init && (o.task == BERT_TRAIN_SEQUENCE || o.task == BERT_TRAIN_TOKEN) &&
        remap_head(t, o.init, &labs))
        exit(EXIT_BADINPUT);
    size_t V = bert_trainer_config(t)->vocab_size;
    if (p.dropout) {
        const bert_config *bc = bert_trainer_config(t);
        const float pr[3] = {bc->hidden_dropout, bc->attention_dropout,
                             bc->classifier_dropout};
        static const char *const nm[3] = {"hidden", "attention",
                                          "classifier"};
        for (int i = 0; i < 3; i++)
            if (!(pr[i] < 1)) {
                fprintf(stderr, "bert-train: the %s dropout probability is "
                                "%g: it would drop every activation (use "
                                "< 1, or --no-dropout)\n",
                        nm[i], (double)pr[i]);
                exit(EXIT_BADINPUT);
            }
    }
    if (bert_tokenizer_vocab_size(k.tok) > V) {
        fprintf(stderr, "bert-train: the vocabulary has %zu tokens, the model "
                        "%zu\n", bert_tokenizer_vocab_size(k.tok), V);
        exit(EXIT_BADINPUT);
    }
    /* RoBERTa's positions start after padding_idx (1): 2 fewer tokens */
    size_t max_tokens = bert_trainer_config(t)->max_position;
    if (bert_trainer_config(t)->family == BERT_FAMILY_ROBERTA)
        max_tokens = max_tokens > 2 ? max_tokens - 2 : 0;
    if ((size_t)o.max_len > max_tokens) {
        fprintf(stderr, "bert-train: --max-length %ld exceeds the %zu tokens "
                        "the model's max_position_embeddings %zu allow\n",
                o.max_len, max_tokens, bert_trainer_config(t)->max_position);
        return EXIT_USAGE;
    }
    if (o.sinpos && !o.resume) {
        float *pe;
        size_t pn;
        char name[96];
        size_t H = bert_trainer_config(t)->embedding_size; /* width */
        if (bert_trainer_tensor(t, embedding_name(t, "position", name),
                                &pe, &pn, &err)) {
            fprintf(stderr, "bert-train: %s\n", err.text);
            exit(EXIT_BADINPUT);
        }
        for (size_t r = 0; r < pn / H; r++)
            for (size_t i = 0; i < H; i += 2) {
                double a = (double)r / pow(10000.0, (double)i / (double)H);
                pe[r * H + i] = (float)(0.0707 * sin(a));
                if (i + 1 < H)
                    pe[r * H + i + 1] = (float)(0.0707 * cos(a));
            }
    }
    if (o.task == TASK_EMBED) {
        /* word vectors into the word embeddings, scaled to a standard
         * deviation of 0.05; the rest stays freshly initialised */
        float *we;
        size_t wn;
        char name[96];
        size_t H = bert_trainer_config(t)->hidden;
        if (bert_trainer_tensor(t, embedding_name(t, "word", name),
                                &we, &wn, &err)) {
            fprintf(stderr, "bert-train: %s\n", err.text);
            exit(EXIT_BADINPUT);
        }
        float *vec = malloc(V * H * sizeof *vec);
        double lr0 = o.lr == 5e-5 ? 0.025 : o.lr;
        if (!vec || train_sgns(&tr, &k, V, H, o.epochs, 5, 5, lr0, o.seed, vec,
                               o.quiet)) {
            fprintf(stderr, "bert-train: out of memory\n");
            exit(EXIT_BADINPUT);
        }
        double ss = 0;
        for (size_t i = 0; i < V * H; i++)
            ss += (double)vec[i] * vec[i];
        double sd = sqrt(ss / (double)(V * H));
        for (size_t i = 0; i < V * H; i++)
            we[i] = (float)(vec[i] * (0.05 / (sd > 0 ? sd : 1)));
        memset(we + (size_t)k.pad * H, 0, H * sizeof(float));
        free(vec);
        if (save_model(t, vocab_dir, o.out, o.lowercase))
            exit(EXIT_BADINPUT);
        if (!o.quiet)
            fprintf(stderr, "bert-train: word embeddings trained in %.0f s; "
                            "model in %s\n", now() - t0, o.out);
        bert_trainer_free(t);
        return EXIT_OK;
    }
    char path[4096];
    double best = -INFINITY;
    size_t start_epoch = 0, start_offset = 0;
    if (o.resume) {
        snprintf(path, sizeof path, "%s/trainer_state.bin", o.out);
        if (bert_trainer_load_state(t, path, &err)) {
            fprintf(stderr, "bert-train: --resume: %s\n", err.text);
            exit(EXIT_BADINPUT);
        }
        snprintf(path, sizeof path, "%s/trainer_progress.txt", o.out);
        FILE *f = fopen(path, "r");
        if (!f || fscanf(f, "%zu %lf", &start_epoch, &best) != 2) {
            fprintf(stderr, "bert-train: --resume: cannot read %s\n", path);
            exit(EXIT_BADINPUT);
        }
        if (fscanf(f, "%zu", &start_offset) != 1) /* written before --save-every */
            start_offset = 0;
        fclose(f);
        if (!o.quiet)
            fprintf(stderr, "bert-train: resuming after epoch %zu (+%zu "
                            "examples), step %zu\n",
                    start_epoch, start_offset, bert_trainer_steps(t));
    }
    if (!o.quiet)
        fprintf(stderr, "bert-train: %zu parameters, %zu steps of %zu "
                        "examples (%zu warm-up), %ld thread(s)\n",
                bert_trainer_num_params(t), total, per_step, p.warmup_steps,
                o.threads);
    size_t *ord = malloc(tr.n * sizeof *ord);
    bbuf bb = {0};
    int tty = isatty(2) && !o.quiet;
    double tstart = now();
    size_t n_epochs = (size_t)ceil(o.epochs);
    if (o.stop_epochs > 0 && (size_t)o.stop_epochs < n_epochs)
        n_epochs = (size_t)o.stop_epochs;
    int stop = 0;
    size_t seen_total = 0;
    double last_save = now();
    for (size_t ep = start_epoch; ep < n_epochs && !stop; ep++) {
        uint64_t eseed = mix(o.seed ^ mix(ep + 1));
        epoch_order(&tr, (size_t)o.batch, eseed, ord);
        size_t todo = tr.n;
        if (o.epochs < (double)(ep + 1)) /* fractional last epoch */
            todo = (size_t)((o.epochs - (double)ep) * (double)tr.n);
        double eloss = 0, ema = 0;
        size_t en = 0, seen = 0;
        double te = now();
        size_t s0 = ep == start_epoch ? start_offset : 0;
        if (s0 > todo)
            s0 = todo;
        size_t s;
        for (s = s0; s < todo && !stop;) {
            for (long a = 0; a < o.accum && s < todo; a++) {
                size_t nb = todo - s < (size_t)o.batch ? todo - s : (size_t)o.batch;
                bert_train_batch b;
                if (make_batch(&bb, &tr, ord + s, nb, o.task, &k, V, o.mlm_prob,
                               eseed, &b)) {
                    fprintf(stderr, "bert-train: out of memory\n");
                    exit(EXIT_BADINPUT);
                }
                double loss;
                if (bert_trainer_accumulate(t, &b, 1.0f / (float)o.accum, &loss,
                                            &err)) {
                    fprintf(stderr, "bert-train: %s\n", err.text);
                    exit(EXIT_BADINPUT);
                }
                eloss += loss;
                en++;
                ema = en == 1 ? loss : 0.98 * ema + 0.02 * loss;
                s += nb;
                seen += nb;
                seen_total += nb;
            }
            double gn;
            if (bert_trainer_update(t, &gn, &err)) {
                fprintf(stderr, "bert-train: step %zu: %s\n",
                        bert_trainer_steps(t), err.text);
                exit(EXIT_BADINPUT);
            }
            double el = now() - te, rate = (double)seen / (el > 0 ? el : 1e-9);
            size_t step = bert_trainer_steps(t);
            if (tty && (step % 5 == 0 || s >= todo)) {
                double eta = (double)(todo - s) / (rate > 0 ? rate : 1);
                int w = 30, fill = (int)((double)w * (double)s / (double)todo);
                fprintf(stderr, "\repoch %zu/%zu [%.*s%*s] %3.0f%% loss %.4f "
                                "%.0f ex/s ETA %02d:%02d  ",
                        ep + 1, n_epochs, fill, "##############################",
                        w - fill, "", 100.0 * (double)s / (double)todo, ema, rate,
                        (int)(eta / 60), (int)eta % 60);
            }
            if (!tty && !o.quiet && o.log_every > 0 && step % (size_t)o.log_every == 0)
                fprintf(stderr, "step %zu epoch %zu loss %.4f lr %.3g gnorm %.3f "
                                "%.0f ex/s elapsed %.0f s\n",
                        step, ep + 1, ema, bert_trainer_lr(t), gn, rate,
                        now() - tstart);
            if (o.save_state && o.save_every > 0 && s < todo &&
                now() - last_save > o.save_every * 60) {
                if (save_resume_state(t, o.out, ep, s, best))
                    exit(EXIT_BADINPUT);
                last_save = now();
            }
            if (o.max_minutes > 0 && now() - tstart > o.max_minutes * 60) {
                stop = 1;
                if (!o.quiet)
                    fprintf(stderr, "%sbert-train: --max-minutes reached at step "
                                    "%zu\n", tty ? "\n" : "", step);
            }
        }
        if (tty)
            fputc('\n', stderr);
        evalres r = {0, ""};
        if (dv.n) {
            if (evaluate(t, &dv, o.task, &labs, &k, 64, V, o.mlm_prob, o.seed, &r)) {
                fprintf(stderr, "bert-train: evaluation failed\n");
                exit(EXIT_BADINPUT);
            }
        } else {
            r.main = -eloss / (double)(en ? en : 1);
            snprintf(r.text, sizeof r.text, "(no dev set)");
        }
        int improved = r.main > best;
        if (!o.quiet)
            fprintf(stderr, "epoch %zu: train loss %.4f, %s, %.0f s%s\n", ep + 1,
                    eloss / (double)(en ? en : 1), r.text, now() - te,
                    improved ? " (best, saved)" : "");
        if (improved) {
            best = r.main;
            if (save_model(t, vocab_dir, o.out, o.lowercase))
                exit(EXIT_BADINPUT);
        }
        /* A run cut by --max-minutes resumes inside the epoch it left. */
        if (o.save_state && (s < todo ? save_resume_state(t, o.out, ep, s, best)
                                      : save_resume_state(t, o.out, ep + 1, 0, best)))
            exit(EXIT_BADINPUT);
    }
    /* Without a dev set the "best" epoch is the one of lowest train loss
     * (kept as its negative, so that larger is better everywhere). */
    if (!o.quiet)
        fprintf(stderr, "bert-train: done in %.0f s (%zu examples, %zu steps); "
                        "%s %.4f; model in %s\n",
                now() - tstart, seen_total, bert_trainer_steps(t),
                dv.n ? "best dev" : "lowest train loss", dv.n ? best : -best,
                o.out);
    free(ord);
    free(bb.ids);
    free(bb.types);
    free(bb.labels);
    free(bb.lens);
    bert_trainer_free(t);
    ds_free(&tr);
    ds_free(&dv);
    for (size_t i = 0; i < labs.n; i++)
        free(labs.names[i]);
    free(labs.names);
    bert_encoding_free(k.enc);
    bert_tokenizer_free(k.tok);
    return EXIT_OK;
}
