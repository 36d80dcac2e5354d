/* example-train.c - fine-tune a tiny BERT on a CSV file through the library
 * API, then load the result and classify with it:
 *
 *   ./example-train VOCAB_DIR TRAIN.CSV OUT_DIR
 *
 *  - the tokenizer of VOCAB_DIR (vocab.txt, tokenizer_config.json);
 *  - the examples of TRAIN.CSV (columns text,label; text_pair when the
 *    header has it), tokenized by bert_dataset_load; the labels sorted;
 *  - a tiny BERT (1 layer, hidden 32) made from a config.json written into
 *    OUT_DIR, trained from scratch by bert_fit (batches of 8, 20 epochs,
 *    AdamW at 1e-2, no dropout), which saves it there with the tokenizer
 *    files, a complete Hugging Face model directory;
 *  - that directory loaded with bert_model_load and the training texts,
 *    read again with bert_reader_next, classified with
 *    bert_classify_text: prints the accuracy.
 * Builds against the installed library:
 *
 *   cc example-train.c $(pkg-config --cflags --libs libbert) \
 *      -o example-train -Wl,-rpath,$(pkg-config --variable=libdir libbert)
 */
#include <stdio.h>
#include <string.h>

#include <libbert/bert_train.h>

/* The examples of path; tries a text_pair column first. */
static bert_dataset *read_csv(const char *path, const bert_tokenizer *tok,
                              const char **pair_column)
{
    bert_dataset_params p = bert_dataset_default_params();
    bert_dataset *d;
    bert_error err;
    p.max_length = 24;
    p.pair_column = *pair_column = "text_pair";
    if (bert_dataset_load(path, tok, &p, &d, &err) == BERT_OK)
        return d;
    p.pair_column = *pair_column = NULL;
    if (bert_dataset_load(path, tok, &p, &d, &err) == BERT_OK)
        return d;
    fprintf(stderr, "%s\n", err.text);
    return NULL;
}

static int report(const bert_fit_progress *p, void *user)
{
    (void)user;
    if (p->event == BERT_FIT_EPOCH && (p->epoch == 1 || p->epoch == p->epochs))
        fprintf(stderr, "epoch %zu: training loss %.4f\n", p->epoch, p->loss);
    return 0; /* nonzero would cancel */
}

/* Trains a tiny BERT on d and saves it with tok's files into out. */
static int train(const bert_tokenizer *tok, const char *vocab,
                 const bert_dataset *d, const char *out)
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
    bert_fit_params fp = bert_fit_default_params();
    fp.epochs = 20;
    fp.batch_size = 8;
    fp.out_dir = out;
    fp.tokenizer = tok;
    fp.tokenizer_dir = vocab;
    fp.progress = report;
    bert_train_params tp = bert_train_default_params();
    tp.task = BERT_TRAIN_SEQUENCE;
    tp.labels = bert_dataset_labels(d, &tp.num_labels);
    tp.lr = 1e-2f;
    tp.dropout = 0;
    tp.total_steps = bert_fit_total_steps(d, &fp);
    tp.warmup_steps = tp.total_steps / 10;
    bert_trainer *t;
    bert_error err;
    int rc = bert_trainer_create(NULL, config, &tp, &t, &err);
    if (rc == BERT_OK)
        rc = bert_fit(t, d, NULL, &fp, NULL, &err);
    if (rc != BERT_OK)
        fprintf(stderr, "%s\n", err.text);
    bert_trainer_free(t);
    return rc == BERT_OK ? 0 : -1;
}

/* Loads out and classifies the examples of csv with it; prints the
 * accuracy. */
static int evaluate(const char *out, const char *csv, const char *pair)
{
    bert_model *m = NULL;
    bert_session *s = NULL;
    bert_reader *r = NULL;
    bert_error err;
    bert_reader_params rp = bert_reader_default_params();
    rp.pair_column = pair;
    int rc = bert_model_load(out, NULL, &m, &err);
    if (rc == BERT_OK)
        rc = bert_session_create(m, NULL, &s, &err);
    if (rc == BERT_OK)
        rc = bert_reader_open(csv, &rp, &r, &err);
    size_t n = 0, right = 0;
    bert_record rec;
    float probs[256];
    int label;
    while (rc == BERT_OK && (rc = bert_reader_next(r, &rec, &err)) == 1) {
        if ((rc = bert_classify_text(s, rec.text, rec.text_len, rec.pair,
                                     rec.pair_len, probs, 256, &label, &err)))
            break;
        n++;
        right += strcmp(bert_model_label(m, label), rec.label) == 0;
    }
    if (rc == 0 && n > 0)
        printf("accuracy %.4f (%zu of %zu)\n", (double)right / (double)n,
               right, n);
    else
        fprintf(stderr, "%s\n", rc ? err.text : "no examples");
    bert_reader_free(r);
    bert_session_free(s);
    bert_model_free(m);
    return rc == 0 && n > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s VOCAB_DIR TRAIN.CSV OUT_DIR\n", argv[0]);
        return 1;
    }
    const char *vocab = argv[1], *csv = argv[2], *out = argv[3], *pair;
    bert_tokenizer *tok;
    bert_error err;
    if (bert_tokenizer_load_for_training(vocab, -1, &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 2;
    }
    bert_dataset *d = read_csv(csv, tok, &pair);
    size_t n_labels = 0;
    bert_dataset_labels(d, &n_labels);
    int status = 0;
    if (!d || n_labels < 2) {
        fprintf(stderr, "%s: need examples of at least 2 labels\n", csv);
        status = 2;
    } else if (train(tok, vocab, d, out) != 0 || evaluate(out, csv, pair) != 0) {
        status = 2;
    }
    bert_dataset_free(d);
    bert_tokenizer_free(tok);
    return status;
}
