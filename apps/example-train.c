/* example-train.c - fine-tune a tiny BERT on a CSV file through the library
 * API, then load the result and classify with it:
 *
 *   ./example-train VOCAB_DIR TRAIN.CSV OUT_DIR
 *
 *  - the tokenizer of VOCAB_DIR (vocab.txt, tokenizer_config.json);
 *  - the examples of TRAIN.CSV (columns text,label; text_pair when the
 *    header has it) through bert_reader_open / bert_reader_next; the labels
 *    are the label column's values in order of first appearance;
 *  - a tiny BERT (1 layer, hidden 32) made from a config.json written into
 *    OUT_DIR, trained from scratch with bert_trainer_* (batches of 8 padded
 *    rows, 20 epochs, AdamW at 1e-2, no dropout) and saved there with the
 *    tokenizer files, a complete Hugging Face model directory;
 *  - that directory loaded with bert_model_load and the training texts
 *    classified with bert_classify_batch: prints the accuracy.
 * Builds against the installed library:
 *
 *   cc example-train.c $(pkg-config --cflags --libs libbert) \
 *      -o example-train -Wl,-rpath,$(pkg-config --variable=libdir libbert)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libbert/bert_train.h>

#define MAX_LEN 24
#define BATCH 8
#define EPOCHS 20

typedef struct example {
    char *text, *pair;
    int label;
} example;

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Copies dir_from/name to dir_to/name; a missing source is not an error
 * unless `need`. */
static int copy_file(const char *from_dir, const char *to_dir,
                     const char *name, int need)
{
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/%s", from_dir, name);
    snprintf(b, sizeof b, "%s/%s", to_dir, name);
    FILE *in = fopen(a, "rb"), *out;
    if (!in)
        return need ? -1 : 0;
    if (!(out = fopen(b, "wb"))) {
        fclose(in);
        return -1;
    }
    char buf[1 << 15];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    return fclose(out) == 0 ? 0 : -1;
}

/* Reads every example of path; the label names go to labels[*n_labels]. */
static int read_csv(const char *path, example **ex, size_t *n,
                    char ***labels, size_t *n_labels, int *has_pair)
{
    bert_reader_params rp = bert_reader_default_params();
    bert_reader *r;
    bert_error err;
    /* a pair column when the header names one: try, then without */
    rp.pair_column = "text_pair";
    *has_pair = 1;
    if (bert_reader_open(path, &rp, &r, &err) != BERT_OK) {
        rp.pair_column = NULL;
        *has_pair = 0;
        if (bert_reader_open(path, &rp, &r, &err) != BERT_OK) {
            fprintf(stderr, "%s\n", err.text);
            return -1;
        }
    }
    size_t cap = 0;
    bert_record rec;
    int rc;
    while ((rc = bert_reader_next(r, &rec, &err)) == 1) {
        size_t l = 0;
        while (l < *n_labels && strcmp((*labels)[l], rec.label) != 0)
            l++;
        if (l == *n_labels) {
            *labels = realloc(*labels, (l + 1) * sizeof **labels);
            (*labels)[(*n_labels)++] = dup_n(rec.label, strlen(rec.label));
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            *ex = realloc(*ex, cap * sizeof **ex);
        }
        (*ex)[*n].text = dup_n(rec.text, rec.text_len);
        (*ex)[*n].pair = rec.pair ? dup_n(rec.pair, rec.pair_len) : NULL;
        (*ex)[(*n)++].label = (int)l;
    }
    if (rc < 0)
        fprintf(stderr, "%s\n", err.text);
    bert_reader_free(r);
    return rc < 0 || *n == 0 || *n_labels < 2 ? -1 : 0;
}

/* Trains on ex[0..n) and saves the model into out. */
static int train(const bert_tokenizer *tok, const char *out,
                 const example *ex, size_t n, char **labels, size_t n_labels)
{
    char config[4096];
    snprintf(config, sizeof config, "%s/config.json", out);
    FILE *f = fopen(config, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"architectures\": [\"BertForSequenceClassification\"], "
            "\"model_type\": \"bert\", \"hidden_size\": 32, "
            "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
            "\"intermediate_size\": 64, \"max_position_embeddings\": 64, "
            "\"vocab_size\": %zu, \"type_vocab_size\": 2, "
            "\"hidden_act\": \"gelu\"}\n", bert_tokenizer_vocab_size(tok));
    if (fclose(f) != 0)
        return -1;
    size_t steps = EPOCHS * ((n + BATCH - 1) / BATCH);
    bert_train_params tp = bert_train_default_params();
    tp.task = BERT_TRAIN_SEQUENCE;
    tp.num_labels = n_labels;
    tp.labels = (const char *const *)labels;
    tp.lr = 1e-2f;
    tp.dropout = 0;
    tp.total_steps = steps;
    tp.warmup_steps = steps / 10;
    bert_trainer *t;
    bert_error err;
    if (bert_trainer_create(NULL, config, &tp, &t, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return -1;
    }
    bert_encoding *enc = bert_encoding_create();
    int32_t ids[BATCH * MAX_LEN], types[BATCH * MAX_LEN], y[BATCH];
    size_t lengths[BATCH];
    int32_t pad = bert_tokenizer_special(tok, BERT_TOKEN_PAD);
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = MAX_LEN;
    int rc = enc ? BERT_OK : BERT_ENOMEM;
    for (int epoch = 1; epoch <= EPOCHS && rc == BERT_OK; epoch++) {
        double sum = 0;
        for (size_t b0 = 0; b0 < n && rc == BERT_OK; b0 += BATCH) {
            size_t nb = n - b0 < BATCH ? n - b0 : BATCH;
            for (size_t k = 0; k < nb && rc == BERT_OK; k++) {
                const example *e = &ex[b0 + k];
                rc = bert_tokenizer_encode(tok, e->text, strlen(e->text),
                                           e->pair,
                                           e->pair ? strlen(e->pair) : 0, &ep,
                                           enc, &err);
                for (size_t j = 0; j < MAX_LEN && rc == BERT_OK; j++) {
                    ids[k * MAX_LEN + j] = j < enc->n ? enc->ids[j] : pad;
                    types[k * MAX_LEN + j] = j < enc->n ? enc->type_ids[j] : 0;
                }
                lengths[k] = enc->n;
                y[k] = e->label;
            }
            bert_train_batch tb = {nb, MAX_LEN, ids, types, lengths, y};
            double loss = 0;
            if (rc == BERT_OK)
                rc = bert_trainer_accumulate(t, &tb, 1.0f, &loss, &err);
            if (rc == BERT_OK)
                rc = bert_trainer_update(t, NULL, &err);
            sum += loss * (double)nb;
        }
        if (rc == BERT_OK && (epoch == 1 || epoch == EPOCHS))
            fprintf(stderr, "epoch %d: training loss %.4f\n", epoch,
                    sum / (double)n);
    }
    if (rc == BERT_OK)
        rc = bert_trainer_save(t, out, &err);
    if (rc != BERT_OK)
        fprintf(stderr, "%s\n", enc ? err.text : "out of memory");
    bert_encoding_free(enc);
    bert_trainer_free(t);
    return rc == BERT_OK ? 0 : -1;
}

/* Loads out and classifies the examples with it; prints the accuracy. */
static int evaluate(const char *out, const example *ex, size_t n)
{
    bert_model *m;
    bert_session *s;
    bert_error err;
    if (bert_model_load(out, NULL, &m, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return -1;
    }
    if (bert_session_create(m, NULL, &s, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        bert_model_free(m);
        return -1;
    }
    const char **texts = malloc(n * sizeof *texts);
    const char **pairs = malloc(n * sizeof *pairs);
    bert_classify_result *res = malloc(n * sizeof *res);
    int rc = texts && pairs && res ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        texts[i] = ex[i].text;
        pairs[i] = ex[i].pair;
    }
    size_t right = 0;
    if (rc == 0 && bert_classify_batch(s, texts, NULL, pairs, NULL, n, NULL,
                                       res, NULL, NULL, 0, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        rc = -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        right += res[i].status == BERT_OK && res[i].label == ex[i].label;
    if (rc == 0)
        printf("accuracy %.4f (%zu of %zu)\n", (double)right / (double)n,
               right, n);
    free(texts);
    free(pairs);
    free(res);
    bert_session_free(s);
    bert_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s VOCAB_DIR TRAIN.CSV OUT_DIR\n", argv[0]);
        return 1;
    }
    const char *vocab = argv[1], *csv = argv[2], *out = argv[3];
    bert_tokenizer *tok;
    bert_error err;
    if (bert_tokenizer_load(vocab, &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 2;
    }
    example *ex = NULL;
    char **labels = NULL;
    size_t n = 0, n_labels = 0;
    int has_pair, status = 0;
    if (read_csv(csv, &ex, &n, &labels, &n_labels, &has_pair) != 0) {
        fprintf(stderr, "%s: need examples of at least 2 labels\n", csv);
        status = 2;
    } else if (train(tok, out, ex, n, labels, n_labels) != 0 ||
               copy_file(vocab, out, "vocab.txt", 1) != 0 ||
               copy_file(vocab, out, "tokenizer_config.json", 0) != 0 ||
               copy_file(vocab, out, "special_tokens_map.json", 0) != 0 ||
               evaluate(out, ex, n) != 0) {
        status = 2;
    }
    for (size_t i = 0; i < n; i++) {
        free(ex[i].text);
        free(ex[i].pair);
    }
    for (size_t l = 0; l < n_labels; l++)
        free(labels[l]);
    free(ex);
    free(labels);
    bert_tokenizer_free(tok);
    return status;
}
