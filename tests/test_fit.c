/* test_fit.c - the training pipeline of <libbert/bert_train.h> through the
 * public API only, on a tiny BERT (1 layer, hidden 8) and a 33-token
 * vocabulary written by the test:
 *  - datasets from CSV (pairs, sorted or fixed labels, max_examples), CoNLL
 *    (first and all sub-tokens) and text (packing, skipped lines reported);
 *  - bert_fit on a tiny CSV and a tiny CoNLL file learning them, the model
 *    directory it saves loading back for inference;
 *  - cancel through the progress callback (BERT_ECANCELED) and the run
 *    continued from its state, in process and through the state files,
 *    ending with the very weights of an uncut run;
 *  - evaluation, model directories, head alignment, sinusoidal positions,
 *    word2vec, and the bad arguments of each. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/bert_train.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/test_fit.XXXXXX";
static char vocab_dir[300], cfg_seq[300], cfg_tok[300], cfg_mlm[300];
static bert_tokenizer *tok;

static const char *const words[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "the", "good",
    "bad", "film", "movie", "song", "book", "was", "is", "very", "not",
    "john", "mary", "smith", "paris", "rome", "acme", "corp", "lives",
    "in", "works", "at", "and", "##s", ",", ".", "day"};
enum { V = sizeof words / sizeof words[0] };

/* DIR/name; a static buffer. */
static const char *path_of(const char *name)
{
    static char p[2][400];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static const char *put(const char *name, const char *text)
{
    const char *p = path_of(name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

static void write_config(char *out, const char *name, const char *arch)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"%s\"], \"model_type\": \"bert\", "
             "\"hidden_size\": 8, \"num_hidden_layers\": 1, "
             "\"num_attention_heads\": 2, \"intermediate_size\": 16, "
             "\"max_position_embeddings\": 32, \"vocab_size\": %d, "
             "\"type_vocab_size\": 2, \"hidden_act\": \"gelu\", "
             "\"hidden_dropout_prob\": 0.1, "
             "\"attention_probs_dropout_prob\": 0.1}\n",
             arch, (int)V);
    snprintf(out, 300, "%s", put(name, text));
}

static int setup(void)
{
    if (!mkdtemp(dir))
        return -1;
    snprintf(vocab_dir, sizeof vocab_dir, "%s/vocab", dir);
    char p[400];
    snprintf(p, sizeof p, "mkdir -p '%s'", vocab_dir);
    if (system(p))
        return -1;
    snprintf(p, sizeof p, "%s/vocab.txt", vocab_dir);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < V; i++)
        fprintf(f, "%s\n", words[i]);
    fclose(f);
    write_config(cfg_seq, "seq.json", "BertForSequenceClassification");
    write_config(cfg_tok, "tok.json", "BertForTokenClassification");
    write_config(cfg_mlm, "mlm.json", "BertForMaskedLM");
    bert_error err;
    return bert_tokenizer_load_for_training(vocab_dir, 1, &tok, &err);
}

static int teardown(void)
{
    bert_tokenizer_free(tok);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- data -------------------------------------------------------------------- */

/* 40 examples: the label is whether "good" or "bad" is in the text. */
static const char *seq_csv(void)
{
    static const char *const nouns[] = {"film", "movie", "song", "book",
                                        "day"};
    char text[8192] = "text,text_pair,label\n";
    for (int i = 0; i < 5; i++) {
        char row[512];
        snprintf(row, sizeof row,
                 "a good %s,\"very, very\",pos\nthe %s was good,a,pos\n"
                 "a bad %s,\"not, very\",neg\nthe %s was bad,a,neg\n"
                 "the good %s,the,pos\nthe bad %s,the,neg\n"
                 "%s is good,is,pos\n%s is bad,is,neg\n",
                 nouns[i], nouns[i], nouns[i], nouns[i], nouns[i], nouns[i],
                 nouns[i], nouns[i]);
        strcat(text, row);
    }
    return put("seq.csv", text);
}

static const char conll_text[] =
    "john\tB-PER\nsmith\tI-PER\nlives\tO\nin\tO\nparis\tB-LOC\n\n"
    "mary\tB-PER\nworks\tO\nat\tO\nacme\tB-ORG\ncorp\tI-ORG\n\n"
    "mary\tB-PER\nlives\tO\nin\tO\nrome\tB-LOC\n\n"
    "acme\tB-ORG\ncorp\tI-ORG\nis\tO\nin\tO\nrome\tB-LOC\n\n"
    "john\tB-PER\nworks\tO\nin\tO\nparis\tB-LOC\n\n"
    "the\tO\nfilm\tO\nwas\tO\ngood\tO\n\n"
    "johns\tB-PER\nlives\tO\nin\tO\nrome\tB-LOC\n\n";

static bert_dataset *load(const char *path, bert_train_task task,
                          const bert_dataset_params *base, int want)
{
    bert_dataset_params p = base ? *base : bert_dataset_default_params();
    p.task = task;
    p.max_length = 24;
    bert_dataset *d = NULL;
    bert_error err;
    int rc = bert_dataset_load(path, tok, &p, &d, &err);
    if (rc != want)
        printf("\n  bert_dataset_load(%s): %d %s\n", path, rc, err.text);
    CU_ASSERT_EQUAL(rc, want);
    CU_ASSERT((d != NULL) == (rc == BERT_OK));
    return d;
}

static void test_dataset_csv(void)
{
    bert_dataset_params p = bert_dataset_default_params();
    CU_ASSERT_EQUAL(p.size, sizeof p);
    CU_ASSERT_EQUAL(p.task, BERT_TRAIN_SEQUENCE);
    CU_ASSERT_EQUAL(p.max_length, 128);
    CU_ASSERT_STRING_EQUAL(p.text_column, "text");
    p.pair_column = "text_pair";
    bert_dataset *d = load(seq_csv(), BERT_TRAIN_SEQUENCE, &p, BERT_OK);
    if (!d)
        return;
    size_t n;
    const char *const *l = bert_dataset_labels(d, &n);
    CU_ASSERT_EQUAL(bert_dataset_count(d), 40);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(l[0], "neg"); /* sorted */
    CU_ASSERT_STRING_EQUAL(l[1], "pos");
    /* fixed labels in another order, and an unknown one */
    const char *fixed[] = {"pos", "neg"};
    p.labels = fixed;
    p.num_labels = 2;
    p.max_examples = 7;
    bert_dataset *f = load(path_of("seq.csv"), BERT_TRAIN_SEQUENCE, &p, BERT_OK);
    l = bert_dataset_labels(f, &n);
    CU_ASSERT_EQUAL(bert_dataset_count(f), 7);
    CU_ASSERT(n == 2 && strcmp(l[0], "pos") == 0);
    p.num_labels = 1;
    bert_error err;
    bert_dataset *bad = NULL;
    CU_ASSERT_EQUAL(bert_dataset_load(path_of("seq.csv"), tok, &p, &bad, &err),
                    BERT_EFORMAT);
    CU_ASSERT_PTR_NULL(bad);
    CU_ASSERT(strstr(err.text, "seq.csv: record 4: unknown label 'neg'") != NULL);
    bert_dataset_free(f);
    bert_dataset_free(d);
}

static void test_dataset_conll(void)
{
    const char *path = put("a.conll", conll_text);
    bert_dataset *d = load(path, BERT_TRAIN_TOKEN, NULL, BERT_OK);
    size_t n;
    const char *const *l = bert_dataset_labels(d, &n);
    CU_ASSERT_EQUAL(bert_dataset_count(d), 7);
    CU_ASSERT_EQUAL_FATAL(n, 6);
    CU_ASSERT_STRING_EQUAL(l[0], "O"); /* "O" first, then by bytes */
    CU_ASSERT_STRING_EQUAL(l[1], "B-LOC");
    CU_ASSERT_STRING_EQUAL(l[5], "I-PER");
    bert_dataset_params p = bert_dataset_default_params();
    p.label_all_subtokens = 1;
    bert_dataset *a = load(path, BERT_TRAIN_TOKEN, &p, BERT_OK);
    CU_ASSERT_EQUAL(bert_dataset_count(a), 7);
    bert_dataset_free(a);
    /* a tag outside fixed labels names its line */
    p.task = BERT_TRAIN_TOKEN;
    p.labels = l;
    p.num_labels = 3;
    bert_dataset *bad = NULL;
    bert_error err;
    CU_ASSERT_EQUAL(bert_dataset_load(path, tok, &p, &bad, &err), BERT_EFORMAT);
    CU_ASSERT(strstr(err.text, "a.conll:6: unknown tag 'B-PER'") != NULL);
    bert_dataset_free(d);
}

static int warnings;
static char last_warning[600];
static void on_warning(const char *msg, void *user)
{
    CU_ASSERT_PTR_EQUAL(user, &warnings);
    warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void test_dataset_text(void)
{
    /* 12 tokens a line; chunks of max_length - 2 = 22 */
    const char *path = put("a.txt", "the good film was very good and the bad "
                                    "song was very bad\n\xff bad line\n"
                                    "john lives in paris and mary works at "
                                    "acme corp in rome\n");
    bert_dataset_params p = bert_dataset_default_params();
    p.warning = on_warning;
    p.warning_data = &warnings;
    bert_dataset *d = load(path, BERT_TRAIN_MLM, &p, BERT_OK);
    CU_ASSERT_EQUAL(bert_dataset_count(d), 1); /* 22 + a tail of 2 (<= 8) */
    CU_ASSERT_EQUAL(warnings, 1);
    CU_ASSERT(strstr(last_warning, "a.txt:2: ") && strstr(last_warning, "(line skipped)"));
    size_t n = 9;
    CU_ASSERT_PTR_NULL(bert_dataset_labels(d, &n));
    CU_ASSERT_EQUAL(n, 0);
    bert_dataset_free(d);
    /* an empty file is an empty dataset */
    d = load(put("empty.txt", ""), BERT_TRAIN_MLM, NULL, BERT_OK);
    CU_ASSERT_EQUAL(bert_dataset_count(d), 0);
    bert_dataset_free(d);
}

static void test_dataset_errors(void)
{
    bert_dataset *d = (bert_dataset *)&d;
    bert_error err;
    bert_dataset_params p = bert_dataset_default_params();
    CU_ASSERT_EQUAL(bert_dataset_load(NULL, tok, NULL, &d, &err), BERT_EINVAL);
    CU_ASSERT_PTR_NULL(d);
    CU_ASSERT_EQUAL(bert_dataset_load("x", NULL, NULL, &d, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_dataset_load("x", tok, NULL, NULL, &err), BERT_EINVAL);
    p.max_length = 7;
    CU_ASSERT_EQUAL(bert_dataset_load("x", tok, &p, &d, &err), BERT_EINVAL);
    p = bert_dataset_default_params();
    p.task = (bert_train_task)9;
    CU_ASSERT_EQUAL(bert_dataset_load("x", tok, &p, &d, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_dataset_load(path_of("none.csv"), tok, NULL, &d, &err),
                    BERT_EIO);
    CU_ASSERT_EQUAL(bert_dataset_count(NULL), 0);
    CU_ASSERT_PTR_NULL(bert_dataset_labels(NULL, NULL));
    bert_dataset_free(NULL);
}

/* ---- fitting --------------------------------------------------------------- */

static bert_trainer *trainer(const char *cfg, bert_train_task task,
                             const bert_dataset *d, size_t total)
{
    bert_train_params p = bert_train_default_params();
    p.task = task;
    p.labels = bert_dataset_labels(d, &p.num_labels);
    p.lr = 1e-2f;
    p.total_steps = total;
    p.warmup_steps = total / 10;
    bert_trainer *t = NULL;
    bert_error err;
    int rc = bert_trainer_create(NULL, cfg, &p, &t, &err);
    if (rc)
        printf("\n  bert_trainer_create: %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    return t;
}

typedef struct {
    int steps, epochs, cancel_at; /* cancel at that STEP report (0: never) */
    double last_score;
} watch;

static int on_progress(const bert_fit_progress *p, void *user)
{
    watch *w = user;
    CU_ASSERT(p->epoch >= 1 && p->epoch <= p->epochs);
    CU_ASSERT(p->done <= p->todo);
    CU_ASSERT(p->step <= p->total_steps);
    if (p->event == BERT_FIT_STEP)
        return ++w->steps == w->cancel_at;
    if (p->event == BERT_FIT_EPOCH) {
        w->epochs++;
        if (p->eval)
            w->last_score = p->eval->score;
    }
    return 0;
}

static bert_fit_params fit_params(watch *w, size_t epochs, size_t bs)
{
    bert_fit_params fp = bert_fit_default_params();
    fp.epochs = (double)epochs;
    fp.batch_size = bs;
    fp.progress = on_progress;
    fp.progress_data = w;
    return fp;
}

static void test_fit_csv(void)
{
    bert_fit_params d = bert_fit_default_params();
    CU_ASSERT(d.size == sizeof d && d.epochs == 3 && d.batch_size == 32 &&
              d.accum == 1 && d.seed == 42 && d.eval_batch_size == 64);
    bert_dataset *tr = load(seq_csv(), BERT_TRAIN_SEQUENCE, NULL, BERT_OK);
    watch w = {0, 0, 0, 0};
    bert_fit_params fp = fit_params(&w, 20, 8);
    fp.out_dir = path_of("seq-model");
    fp.tokenizer = tok;
    fp.tokenizer_dir = vocab_dir;
    size_t total = bert_fit_total_steps(tr, &fp);
    CU_ASSERT_EQUAL(total, 100); /* 20 epochs of 5 batches */
    bert_trainer *t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, total);
    bert_fit_state st = {0, 0, 0, 0};
    bert_error err;
    int rc = bert_fit(t, tr, tr, &fp, &st, &err);
    if (rc)
        printf("\n  bert_fit: %s\n", err.text);
    CU_ASSERT_EQUAL(rc, BERT_OK);
    CU_ASSERT(w.steps == 100 && w.epochs == 20);
    CU_ASSERT(st.epoch == 20 && st.offset == 0 && st.has_best);
    CU_ASSERT_DOUBLE_EQUAL(st.best, 1.0, 1e-12); /* learned */
    CU_ASSERT_EQUAL(bert_trainer_steps(t), 100);
    bert_eval_result ev;
    CU_ASSERT_EQUAL(bert_evaluate(t, tr, NULL, &ev, &err), BERT_OK);
    CU_ASSERT(ev.n == 40 && ev.accuracy >= 0.99 && ev.macro_f1 >= 0.99 &&
              ev.score == ev.accuracy && ev.loss < 0.5);
    CU_ASSERT(strncmp(ev.text, "dev loss ", 9) == 0);
    /* the directory it saved is a model the inference side loads */
    bert_model *m;
    rc = bert_model_load(fp.out_dir, NULL, &m, &err);
    if (rc)
        printf("\n  bert_model_load: %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT_STRING_EQUAL(bert_model_label(m, 1), "pos");
    bert_model_free(m);
    /* a dataset of another task or labels does not fit */
    bert_dataset *mlm = load(put("b.txt", "a good film\n"), BERT_TRAIN_MLM,
                             NULL, BERT_OK);
    CU_ASSERT_EQUAL(bert_fit(t, mlm, NULL, NULL, NULL, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_evaluate(t, mlm, NULL, &ev, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_fit(NULL, tr, NULL, NULL, NULL, &err), BERT_EINVAL);
    fp.batch_size = 0;
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, NULL, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_fit_total_steps(tr, &fp), 0);
    fp = bert_fit_default_params();
    fp.size = 0; /* not from the defaults (docs/abi.md) */
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, NULL, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "bert_fit_default_params") != NULL);
    CU_ASSERT_EQUAL(bert_evaluate(t, tr, &fp, &ev, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_fit_total_steps(tr, &fp), 0);
    CU_ASSERT_EQUAL(bert_fit_total_steps(NULL, NULL), 0);
    bert_dataset_free(mlm);
    /* nothing to train on */
    bert_dataset_params hp = bert_dataset_default_params();
    hp.pair_column = "text_pair";
    hp.labels = bert_dataset_labels(tr, &hp.num_labels);
    bert_dataset *none = load(put("none.csv", "text,text_pair,label\n"),
                              BERT_TRAIN_SEQUENCE, &hp, BERT_OK);
    CU_ASSERT_EQUAL(bert_dataset_count(none), 0);
    CU_ASSERT_EQUAL(bert_fit(t, none, NULL, NULL, NULL, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "no training examples") != NULL);
    bert_dataset_free(none);
    /* examples longer than the model's positions (max_position_embeddings
     * 32): refused before any step, naming the example */
    bert_dataset_params lp = bert_dataset_default_params();
    lp.task = BERT_TRAIN_SEQUENCE;
    lp.max_length = 40;
    lp.labels = hp.labels;
    lp.num_labels = hp.num_labels;
    char longcsv[1200] = "text,label\n";
    for (int i = 0; i < 60; i++)
        strcat(longcsv, "good ");
    strcat(longcsv, ",pos\n");
    bert_dataset *lng = NULL;
    CU_ASSERT_EQUAL_FATAL(bert_dataset_load(put("long.csv", longcsv), tok, &lp,
                                            &lng, &err), BERT_OK);
    size_t steps0 = bert_trainer_steps(t);
    CU_ASSERT_EQUAL(bert_fit(t, lng, NULL, NULL, NULL, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "example 1 has 40 tokens") != NULL &&
              strstr(err.text, "max_position_embeddings 32") != NULL);
    CU_ASSERT_EQUAL(bert_trainer_steps(t), steps0);
    bert_dataset_free(lng);
    bert_trainer_free(t);
    bert_dataset_free(tr);
    /* a dropout probability of 1 would drop every activation */
    char bad[300];
    snprintf(bad, sizeof bad, "%s", cfg_seq);
    FILE *f = fopen(bad, "r");
    char text[1024] = "";
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *h = strstr(text, "\"hidden_dropout_prob\": 0.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    memcpy(h + strlen("\"hidden_dropout_prob\": "), "1.0", 3);
    const char *badcfg = put("drop1.json", text);
    bert_train_params tp = bert_train_default_params();
    tp.num_labels = 2;
    bert_trainer *t1 = NULL;
    CU_ASSERT_EQUAL(bert_trainer_create(NULL, badcfg, &tp, &t1, &err),
                    BERT_EINVAL);
    CU_ASSERT(t1 == NULL && strstr(err.text, "hidden dropout probability is 1") != NULL);
    tp.dropout = 0; /* without dropout it trains */
    CU_ASSERT_EQUAL(bert_trainer_create(NULL, badcfg, &tp, &t1, &err), BERT_OK);
    bert_trainer_free(t1);
}

static void test_fit_conll(void)
{
    bert_dataset *tr = load(put("b.conll", conll_text), BERT_TRAIN_TOKEN,
                            NULL, BERT_OK);
    watch w = {0, 0, 0, 0};
    bert_fit_params fp = fit_params(&w, 25, 2);
    fp.accum = 2;
    fp.epochs = 25.5; /* half a last epoch */
    size_t total = bert_fit_total_steps(tr, &fp);
    CU_ASSERT_EQUAL(total, 51); /* 25.5 x ceil(7 / 4) */
    bert_trainer *t = trainer(cfg_tok, BERT_TRAIN_TOKEN, tr, total);
    bert_error err;
    int rc = bert_fit(t, tr, tr, &fp, NULL, &err);
    if (rc)
        printf("\n  bert_fit: %s\n", err.text);
    CU_ASSERT_EQUAL(rc, BERT_OK);
    CU_ASSERT_EQUAL(w.epochs, 26);
    CU_ASSERT_EQUAL(bert_trainer_steps(t), 51); /* the last: 3 examples */
    bert_eval_result ev;
    CU_ASSERT_EQUAL(bert_evaluate(t, tr, NULL, &ev, &err), BERT_OK);
    CU_ASSERT(ev.entities && ev.n == 7);
    CU_ASSERT(ev.f1 > 0.5 && ev.score == ev.f1 && ev.accuracy > 0.8);
    CU_ASSERT(strstr(ev.text, "entity P ") != NULL);
    bert_trainer_free(t);
    bert_dataset_free(tr);
}

/* All of t's word embeddings and classifier: what the checks compare. */
static float *weights_of(bert_trainer *t, size_t *n)
{
    float *a, *b;
    size_t na, nb;
    bert_error err;
    CU_ASSERT_FATAL(bert_trainer_tensor(t, "bert.embeddings.word_embeddings.weight",
                                        &a, &na, &err) == BERT_OK &&
                    bert_trainer_tensor(t, "classifier.weight", &b, &nb, &err) ==
                        BERT_OK);
    float *w = malloc((na + nb) * sizeof *w);
    memcpy(w, a, na * sizeof *w);
    memcpy(w + na, b, nb * sizeof *w);
    *n = na + nb;
    return w;
}

static int cancel_at_epoch(const bert_fit_progress *p, void *user)
{
    return p->event == BERT_FIT_EPOCH;
}

static void test_cancel_and_resume(void)
{
    bert_dataset *tr = load(seq_csv(), BERT_TRAIN_SEQUENCE, NULL, BERT_OK);
    bert_error err;
    size_t n0, n1, n2;
    /* the uncut run: 3 epochs of 5 batches */
    watch w = {0, 0, 0, 0};
    bert_fit_params fp = fit_params(&w, 3, 8);
    bert_trainer *t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, 15);
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, NULL, &err), BERT_OK);
    float *want = weights_of(t, &n0);
    bert_trainer_free(t);
    /* canceled at step 7 (inside epoch 2), continued in process */
    watch c = {0, 0, 7, 0};
    fp.progress_data = &c;
    t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, 15);
    bert_fit_state st = {0, 0, 0, 0};
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, &st, &err), BERT_ECANCELED);
    CU_ASSERT(strstr(err.text, "canceled") != NULL);
    CU_ASSERT(st.epoch == 1 && st.offset == 16 && st.has_best);
    CU_ASSERT_EQUAL(bert_trainer_steps(t), 7);
    c.cancel_at = 0;
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, &st, &err), BERT_OK);
    CU_ASSERT(st.epoch == 3 && st.offset == 0);
    float *got = weights_of(t, &n1);
    CU_ASSERT(n1 == n0 && memcmp(got, want, n0 * sizeof *got) == 0);
    free(got);
    bert_trainer_free(t);
    /* canceled at step 4, the state saved, loaded into a fresh trainer */
    c.cancel_at = 4;
    c.steps = 0;
    t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, 15);
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, &st, &err), BERT_ECANCELED);
    CU_ASSERT_EQUAL(bert_fit_save_state(t, dir, &st, &err), BERT_OK);
    bert_trainer_free(t);
    t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, 15);
    bert_fit_state back = {9, 9, 9, 0};
    CU_ASSERT_EQUAL(bert_fit_load_state(t, dir, &back, &err), BERT_OK);
    CU_ASSERT(back.epoch == 0 && back.offset == 32 && !back.has_best);
    CU_ASSERT_EQUAL(bert_trainer_steps(t), 4);
    c.cancel_at = 0;
    CU_ASSERT_EQUAL(bert_fit(t, tr, NULL, &fp, &back, &err), BERT_OK);
    got = weights_of(t, &n2);
    CU_ASSERT(n2 == n0 && memcmp(got, want, n0 * sizeof *got) == 0);
    free(got);
    /* a cancel at the end of an epoch comes after its saves */
    fp.save_state = 1;
    fp.out_dir = path_of("cancel-epoch");
    fp.tokenizer = tok;
    fp.tokenizer_dir = vocab_dir;
    fp.epochs = 6;
    fp.progress = cancel_at_epoch;
    int rc = bert_fit(t, tr, NULL, &fp, &back, &err);
    if (rc != BERT_ECANCELED)
        printf("\n  bert_fit: %d %s\n", rc, err.text);
    CU_ASSERT_EQUAL(rc, BERT_ECANCELED);
    CU_ASSERT(back.epoch == 4 && back.offset == 0);
    back.epoch = 0;
    CU_ASSERT_EQUAL(bert_fit_load_state(t, fp.out_dir, &back, &err), BERT_OK);
    CU_ASSERT(back.epoch == 4 && back.has_best);
    /* errors */
    CU_ASSERT_EQUAL(bert_fit_load_state(t, path_of("nowhere"), &back, &err),
                    BERT_EMISSING);
    CU_ASSERT_EQUAL(bert_fit_save_state(t, path_of("no/such/dir"), &back, &err),
                    BERT_EIO);
    CU_ASSERT(strstr(err.text, "cannot create") != NULL);
    CU_ASSERT_EQUAL(bert_fit_save_state(NULL, dir, &back, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_fit_load_state(t, dir, NULL, &err), BERT_EINVAL);
    put("trainer_progress.txt", "x\n");
    CU_ASSERT_EQUAL(bert_fit_load_state(t, dir, &back, &err), BERT_EFORMAT);
    bert_trainer_free(t);
    free(want);
    bert_dataset_free(tr);
}

static int cancel_w2v(size_t done, size_t total, void *user)
{
    CU_ASSERT(done <= total);
    return ++*(int *)user == 3;
}

/* 20 lines of 12 words packed into 30 chunks of 8 tokens (max_length 10),
 * written to `name`. */
static bert_dataset *text_dataset(const char *name)
{
    bert_dataset_params dp = bert_dataset_default_params();
    dp.max_length = 10;
    dp.task = BERT_TRAIN_MLM;
    char text[4096] = "";
    for (int i = 0; i < 20; i++)
        strcat(text, "the good film was very good and the bad song was bad\n");
    bert_dataset *d = NULL;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_dataset_load(put(name, text), tok, &dp, &d,
                                            &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_dataset_count(d), 30); /* 240 tokens / 8 */
    return d;
}

/* Replaced-token detection with a generator that always draws "day" (its
 * output bias): a text without "day" has then exactly the masked positions
 * replaced, so a discriminator that learns "day" means replaced scores
 * accuracy 1 only if every label is right, over exactly the text's tokens
 * ([CLS] and [SEP] not scored). */
static void test_replaced_token_detection(void)
{
    bert_dataset *d = text_dataset("rtd.txt");
    bert_error err;
    bert_trainer *g = trainer(cfg_mlm, BERT_TRAIN_MLM, d, 10);
    float *bias;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(g, "cls.predictions.bias", &bias,
                                              &n, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(n, V);
    bias[V - 1] = 100.0f; /* "day" */
    static const char *const labels[] = {"original", "replaced"};
    bert_train_params tp = bert_train_default_params();
    tp.task = BERT_TRAIN_TOKEN;
    tp.num_labels = 2;
    tp.labels = labels;
    tp.lr = 1e-2f;
    tp.total_steps = 160;
    tp.warmup_steps = 16;
    bert_trainer *t = NULL;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, cfg_tok, &tp, &t, &err),
                          BERT_OK);
    watch w = {0, 0, 0, 0};
    bert_fit_params fp = fit_params(&w, 40, 8);
    fp.generator = g;
    CU_ASSERT_EQUAL(bert_fit_total_steps(d, &fp), 160);
    int rc = bert_fit(t, d, d, &fp, NULL, &err);
    if (rc)
        printf("\n  bert_fit: %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    CU_ASSERT(w.steps == 160 && w.epochs == 40);
    bert_eval_result ev;
    CU_ASSERT_EQUAL_FATAL(bert_evaluate(t, d, &fp, &ev, &err), BERT_OK);
    if (ev.accuracy < 1.0)
        printf("\n  %s\n", ev.text);
    CU_ASSERT_DOUBLE_EQUAL(ev.accuracy, 1.0, 1e-12);
    CU_ASSERT(ev.precision == 1.0 && ev.recall == 1.0 && ev.f1 == 1.0);
    CU_ASSERT(ev.score == -ev.loss && ev.loss < 0.1 && ev.n == 30);
    CU_ASSERT(strstr(ev.text, "(30 texts, 240 tokens)") != NULL);
    /* what does not fit: a generator that is not a masked LM, a
     * discriminator that is not a 2-label token classifier, data that is
     * not text */
    fp.generator = t;
    CU_ASSERT_EQUAL(bert_fit(t, d, NULL, &fp, NULL, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "not a masked-LM") != NULL);
    fp.generator = g;
    CU_ASSERT_EQUAL(bert_fit(g, d, NULL, &fp, NULL, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "2 labels") != NULL);
    bert_dataset *csv = load(put("rtd.csv", "text,label\na good film,pos\n"),
                             BERT_TRAIN_SEQUENCE, NULL, BERT_OK);
    CU_ASSERT_EQUAL(bert_evaluate(t, csv, &fp, &ev, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "reads text") != NULL);
    bert_dataset_free(csv);
    bert_trainer_free(t);
    bert_trainer_free(g);
    bert_dataset_free(d);
}

static void test_mlm_and_word2vec(void)
{
    bert_dataset *d = text_dataset("c.txt");
    bert_error err;
    bert_trainer *t = trainer(cfg_mlm, BERT_TRAIN_MLM, d, 10);
    bert_word2vec_params wp = bert_word2vec_default_params();
    CU_ASSERT(wp.size == sizeof wp && wp.window == 5 && wp.negatives == 5 &&
              wp.epochs == 1 && wp.lr == 0.025 && wp.std == 0.05);
    int calls = 0;
    wp.progress = cancel_w2v;
    wp.progress_data = &calls;
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(t, d, &wp, &err), BERT_ECANCELED);
    wp.progress = NULL;
    wp.epochs = 3;
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(t, d, &wp, &err), BERT_OK);
    float *we;
    size_t n;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "bert.embeddings.word_embeddings.weight",
                                              &we, &n, &err), BERT_OK);
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)we[i] * we[i];
    CU_ASSERT_DOUBLE_EQUAL(sqrt(ss / (double)n), 0.05, 0.01); /* pad row 0 */
    for (size_t i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(we[i], 0.0f);
    CU_ASSERT_EQUAL(bert_trainer_init_sinusoidal_positions(t, &err), BERT_OK);
    float *pe;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "bert.embeddings.position_embeddings.weight",
                                              &pe, &n, &err), BERT_OK);
    CU_ASSERT_EQUAL(n, 32 * 8);
    CU_ASSERT_DOUBLE_EQUAL(pe[3 * 8], 0.0707 * sin(3.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(pe[3 * 8 + 1], 0.0707 * cos(3.0), 1e-6);
    /* MLM fitting and evaluation */
    watch w = {0, 0, 0, 0};
    bert_fit_params fp = fit_params(&w, 1, 8);
    CU_ASSERT_EQUAL(bert_fit(t, d, d, &fp, NULL, &err), BERT_OK);
    bert_eval_result ev;
    CU_ASSERT_EQUAL(bert_evaluate(t, d, &fp, &ev, &err), BERT_OK);
    CU_ASSERT(ev.loss > 0 && ev.score == -ev.loss &&
              fabs(ev.perplexity - exp(ev.loss)) < 1e-6 * ev.perplexity);
    CU_ASSERT(strncmp(ev.text, "dev mlm loss", 12) == 0);
    /* not an MLM dataset, bad params */
    bert_dataset *s = load(seq_csv(), BERT_TRAIN_SEQUENCE, NULL, BERT_OK);
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(t, s, NULL, &err), BERT_EINVAL);
    wp.window = 0;
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(t, d, &wp, &err), BERT_EINVAL);
    wp = bert_word2vec_default_params();
    wp.size = sizeof wp + 8; /* headers newer than the library */
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(t, d, &wp, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "newer headers") != NULL);
    CU_ASSERT_EQUAL(bert_trainer_init_word2vec(NULL, d, NULL, &err), BERT_EINVAL);
    CU_ASSERT_EQUAL(bert_trainer_init_sinusoidal_positions(NULL, &err),
                    BERT_EINVAL);
    bert_dataset_free(s);
    bert_trainer_free(t);
    bert_dataset_free(d);
}

/* ---- model directories ------------------------------------------------------- */

static void test_model_dir_and_head(void)
{
    bert_dataset *tr = load(seq_csv(), BERT_TRAIN_SEQUENCE, NULL, BERT_OK);
    bert_trainer *t = trainer(cfg_seq, BERT_TRAIN_SEQUENCE, tr, 10);
    bert_error err;
    const char *out = path_of("head-model"); /* created */
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save_model_dir(t, tok, vocab_dir, out, &err),
                          BERT_OK);
    static const char *const files[] = {"config.json", "model.safetensors",
                                        "vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    for (size_t i = 0; i < 5; i++) {
        char p[500];
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        CU_ASSERT(access(p, R_OK) == 0);
    }
    char p[500];
    size_t len;
    snprintf(p, sizeof p, "%s/tokenizer_config.json", out);
    char *cfg = tu_read_file(p, &len);
    CU_ASSERT(cfg && strstr(cfg, "\"do_lower_case\": true") &&
              strstr(cfg, "\"model_max_length\": 32") &&
              strstr(cfg, "\"tokenizer_class\": \"BertTokenizer\""));
    free(cfg);
    float *w0, *b0;
    size_t nw, nb;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "classifier.weight", &w0, &nw, &err), 0);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "classifier.bias", &b0, &nb, &err), 0);
    /* the same names in the other order: rows follow them */
    static const char *const orders[3][2] = {
        {"pos", "neg"}, {"neg", "pos"}, {"x", "y"}};
    static const bert_head_match want[3] = {
        BERT_HEAD_REORDERED, BERT_HEAD_KEPT, BERT_HEAD_OTHER_NAMES};
    for (int k = 0; k < 3; k++) {
        bert_train_params tp = bert_train_default_params();
        tp.num_labels = 2;
        tp.labels = orders[k];
        bert_trainer *u;
        CU_ASSERT_EQUAL_FATAL(bert_trainer_create(out, NULL, &tp, &u, &err), 0);
        bert_head_match hm = (bert_head_match)-1;
        CU_ASSERT_EQUAL(bert_trainer_align_head(u, out, &hm, &err), BERT_OK);
        CU_ASSERT_EQUAL(hm, want[k]);
        float *w, *b;
        bert_trainer_tensor(u, "classifier.weight", &w, &nw, &err);
        bert_trainer_tensor(u, "classifier.bias", &b, &nb, &err);
        int swap = k == 0;
        CU_ASSERT(memcmp(w, w0 + (swap ? 8 : 0), 8 * sizeof *w) == 0);
        CU_ASSERT(b[0] == b0[swap ? 1 : 0] && b[1] == b0[swap ? 0 : 1]);
        bert_trainer_free(u);
    }
    bert_head_match hm;
    CU_ASSERT_EQUAL(bert_trainer_align_head(t, path_of("nowhere"), &hm, &err), BERT_OK);
    CU_ASSERT_EQUAL(hm, BERT_HEAD_KEPT);
    CU_ASSERT_EQUAL(bert_trainer_align_head(NULL, out, &hm, &err), BERT_EINVAL);
    /* errors name the file */
    CU_ASSERT_EQUAL(bert_trainer_save_model_dir(t, tok, path_of("nowhere"),
                                                path_of("m2"), &err), BERT_EIO);
    CU_ASSERT(strstr(err.text, "tokenizer files") != NULL);
    CU_ASSERT_EQUAL(bert_trainer_save_model_dir(t, tok, vocab_dir,
                                                path_of("no/such/dir"), &err),
                    BERT_EIO);
    CU_ASSERT_EQUAL(bert_trainer_save_model_dir(t, NULL, vocab_dir, out, &err),
                    BERT_EINVAL);
    bert_trainer_free(t);
    bert_dataset_free(tr);
}

static void test_tokenizer_files(void)
{
    bert_error err;
    CU_ASSERT_EQUAL(bert_write_tokenizer_config(dir, 0, 77, &err), BERT_OK);
    size_t len;
    char *cfg = tu_read_file(path_of("tokenizer_config.json"), &len);
    CU_ASSERT(cfg && strstr(cfg, "\"do_lower_case\": false,") &&
              strstr(cfg, "\"model_max_length\": 77,"));
    free(cfg);
    CU_ASSERT_EQUAL(bert_write_tokenizer_config(path_of("no/dir"), 0, 7, &err),
                    BERT_EIO);
    CU_ASSERT(strstr(err.text, "no/dir/tokenizer_config.json: ") != NULL);
    CU_ASSERT_EQUAL(bert_write_tokenizer_config(NULL, 0, 7, &err), BERT_EINVAL);
    /* the training tokenizer: do_lower_case as asked, else the directory's */
    bert_tokenizer *t;
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load_for_training(vocab_dir, 0, &t, &err), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(t), 0);
    bert_tokenizer_free(t);
    CU_ASSERT_EQUAL_FATAL(bert_tokenizer_load_for_training(vocab_dir, -1, &t, &err), 0);
    CU_ASSERT_EQUAL(bert_tokenizer_lowercase(t), 1); /* HF's default */
    bert_tokenizer_free(t);
    t = (bert_tokenizer *)&t;
    CU_ASSERT_EQUAL(bert_tokenizer_load_for_training(path_of("nowhere"), 1, &t, &err),
                    BERT_EMISSING);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_EQUAL(bert_tokenizer_load_for_training(NULL, 1, &t, &err), BERT_EINVAL);
}

int main(int argc, char **argv)
{
    static const tu_test tests[] = {
        {"dataset_csv", test_dataset_csv},
        {"dataset_conll", test_dataset_conll},
        {"dataset_text", test_dataset_text},
        {"dataset_errors", test_dataset_errors},
        {"fit_csv", test_fit_csv},
        {"fit_conll", test_fit_conll},
        {"cancel_and_resume", test_cancel_and_resume},
        {"mlm_and_word2vec", test_mlm_and_word2vec},
        {"replaced_token_detection", test_replaced_token_detection},
        {"model_dir_and_head", test_model_dir_and_head},
        {"tokenizer_files", test_tokenizer_files},
    };
    return tu_run_suite("fit", setup, teardown, tests,
                        sizeof tests / sizeof tests[0], argc, argv);
}
