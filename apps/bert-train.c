/*
 * bert-train - fine-tune or train a BERT or DistilBERT model from the
 * command line: options, messages and the progress bar around
 * <libbert/bert_train.h> (datasets, bert_fit, word2vec, model directories).
 * See --help and docs/training.md.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apps/common.h"
#include "libbert/bert_train.h"

/* Error exits use exit(), not return from main: what main holds stays
 * reachable from its frame, so LeakSanitizer does not report the memory a
 * one-shot tool leaves to the system. */

/* --task embeddings and rtd (not bert_train_tasks of their own) */
enum { TASK_EMBED = 100, TASK_RTD };

/* The options, most straight into the library's parameters. */
typedef struct {
    bert_dataset_params data;
    bert_fit_params fit;
    bert_train_params train;
    const char *init, *config, *vocab, *train_file, *dev, *out, *format;
    const char *labels, *task_name, *generator;
    int task; /* bert_train_task, TASK_EMBED or TASK_RTD */
    long log_every, threads;
    double lr, warmup;
    int resume, lowercase, quiet, sinpos;
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
"            --max-length chunks\n"
"  rtd       plain text, as mlm: ELECTRA's replaced-token detection.  The\n"
"            masked tokens are replaced by tokens drawn from --generator's\n"
"            predictions (a masked-LM model directory with its head; it is\n"
"            not trained, and should be weaker than the model trained: a\n"
"            smaller or earlier one), and the model (--init or --config)\n"
"            learns at every token whether it was replaced: a token\n"
"            classifier with the labels original and replaced, whose\n"
"            encoder is the one to fine-tune with --init later\n\n"
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
"  --epochs N             (default 3; may be fractional: the last epoch is\n"
"                         cut, and counts as done for a later --resume)\n"
"  --batch-size N         examples per step (default 32)\n"
"  --accum N              gradient accumulation: micro-batches per step (1)\n"
"  --lr X                 peak learning rate (default 5e-5)\n"
"  --sinusoidal-positions before training, set the position embeddings to\n"
"                         the sinusoids of Vaswani et al. (std 0.05); helps\n"
"                         models whose encoder starts from scratch\n"
"  --embedding-lr-scale X the word embeddings learn at lr * X (default 1;\n"
"                         < 1 keeps pre-trained embeddings)\n"
"  --layer-lr-decay X     layer-wise decay (ELECTRA's): the head learns at\n"
"                         lr, encoder layer l of L at lr * X^(L-l), the\n"
"                         embeddings at lr * X^(L+1) (default 1 = off)\n"
"  --rdrop X              R-Drop (sequence/token): each batch runs twice\n"
"                         under two dropout masks and X weighs their\n"
"                         symmetric KL against the cross-entropy (default\n"
"                         0 = off; 1 is typical); twice the time a step\n"
"  --warmup X             warm-up: fraction of steps if < 1, else steps (0.1)\n"
"  --weight-decay X       AdamW decay, not on biases/LayerNorm (0.01)\n"
"  --max-grad-norm X      gradient clipping (1.0; 0 = off)\n"
"  --max-length N         tokens per training example incl. [CLS]/[SEP]\n"
"                         (128); a classifier's dev texts are cut at the\n"
"                         model's positions instead, as bert-tag cuts them\n"
"  --mlm-probability X    (0.15)\n"
"  --generator DIR        rtd: the masked-LM model that draws replacements\n"
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
"      --out my-base --save-state\n"
"  bert-train --init data/base-en --generator my-small-mlm --task rtd \\\n"
"      --train text.txt --out my-discriminator --save-state\n");
}

/* Prints "bert-train: MESSAGE" and exits with status 2 (bad input). */
__attribute__((format(printf, 1, 2), noreturn))
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bert-train: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(EXIT_BADINPUT);
}

/* ---- options ----------------------------------------------------------- */

#define F(field) offsetof(opts_t, field)
static const app_optdef defs[] = {
    {"quiet", APP_SET, F(quiet)}, /* first: -q */
    {"init", APP_STR, F(init)}, {"config", APP_STR, F(config)},
    {"vocab", APP_STR, F(vocab)}, {"task", APP_STR, F(task_name)},
    {"generator", APP_STR, F(generator)},
    {"train", APP_STR, F(train_file)}, {"dev", APP_STR, F(dev)},
    {"out", APP_STR, F(out)}, {"format", APP_STR, F(format)},
    {"text-column", APP_STR, F(data.text_column)},
    {"pair-column", APP_STR, F(data.pair_column)},
    {"label-column", APP_STR, F(data.label_column)},
    {"labels", APP_STR, F(labels)},
    {"label-all-subtokens", APP_SET, F(data.label_all_subtokens)},
    {"lowercase", APP_SET, F(lowercase)}, {"cased", APP_CLR, F(lowercase)},
    {"epochs", APP_DBL, F(fit.epochs)}, {"batch-size", APP_SZ, F(fit.batch_size)},
    {"accum", APP_SZ, F(fit.accum)}, {"lr", APP_DBL, F(lr)},
    {"warmup", APP_DBL, F(warmup)},
    {"weight-decay", APP_FLT, F(train.weight_decay)},
    {"max-grad-norm", APP_FLT, F(train.max_grad_norm)},
    {"max-length", APP_SZ, F(data.max_length)},
    {"mlm-probability", APP_DBL, F(fit.mlm_probability)},
    {"no-dropout", APP_CLR, F(train.dropout)}, {"seed", APP_U64, F(fit.seed)},
    {"threads", APP_THR, F(threads)}, {"max-minutes", APP_MIN, F(fit.time_limit)},
    {"save-every", APP_MIN, F(fit.save_every)},
    {"dev-max", APP_SZ, F(data.max_examples)},
    {"log-every", APP_LNG, F(log_every)}, {"resume", APP_SET, F(resume)},
    {"save-state", APP_SET, F(fit.save_state)},
    {"embedding-lr-scale", APP_FLT, F(train.embedding_lr_scale)},
    {"layer-lr-decay", APP_FLT, F(train.layer_lr_decay)},
    {"rdrop", APP_FLT, F(train.rdrop)},
    {"sinusoidal-positions", APP_SET, F(sinpos)},
    {"stop-after-epochs", APP_SZ, F(fit.stop_after_epochs)}};

/* Fills *o from argv; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.data = bert_dataset_default_params(),
                  .fit = bert_fit_default_params(),
                  .train = bert_train_default_params(), .threads = 1,
                  .lr = 5e-5, .warmup = 0.1, .lowercase = -1};
    int rc = app_options("bert-train", argc, argv, defs,
                         sizeof defs / sizeof defs[0], o, usage);
    if (rc >= 0)
        return rc;
    o->fit.save_state |= o->resume; /* --resume keeps saving the state */
    if (o->task_name)
        o->task = !strcmp(o->task_name, "sequence")     ? BERT_TRAIN_SEQUENCE
                  : !strcmp(o->task_name, "token")      ? BERT_TRAIN_TOKEN
                  : !strcmp(o->task_name, "mlm")        ? BERT_TRAIN_MLM
                  : !strcmp(o->task_name, "embeddings") ? TASK_EMBED
                  : !strcmp(o->task_name, "rtd")        ? TASK_RTD
                                                        : -1;
    const struct {
        int bad;
        const char *why;
    } checks[] = {
        {optind < argc, "unexpected argument"},
        {o->task <= 0, "--task sequence|token|mlm|embeddings|rtd is required"},
        {(o->task == TASK_RTD) != !!o->generator,
         "--task rtd and --generator DIR go together"},
        {!o->init == !o->config, "give exactly one of --init DIR and --config FILE"},
        {o->config && !o->vocab, "--config needs --vocab DIR"},
        {!o->train_file || !o->out, "--train FILE and --out DIR are required"},
        {o->fit.batch_size < 1, "--batch-size must be at least 1"},
        {o->fit.accum < 1, "--accum must be at least 1"},
        {o->data.max_length < 8, "--max-length must be at least 8"},
        {o->fit.epochs <= 0, "--epochs must be more than 0"},
        {o->lr <= 0, "--lr must be more than 0"},
        {o->fit.mlm_probability <= 0 || o->fit.mlm_probability >= 1,
         "--mlm-probability must be between 0 and 1 (exclusive)"}};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].bad) {
            fprintf(stderr, "bert-train: %s\n", checks[i].why);
            usage(stderr);
            return EXIT_USAGE;
        }
    const char *fmt = o->format, *dot = strrchr(o->train_file, '.');
    if (!fmt)
        fmt = (dot && !strcmp(dot, ".csv"))     ? "csv"
              : (dot && !strcmp(dot, ".conll")) ? "conll"
                                                : "text";
    if (strcmp(fmt, o->task == BERT_TRAIN_SEQUENCE ? "csv"
                    : o->task == BERT_TRAIN_TOKEN  ? "conll"
                                                   : "text")) {
        fprintf(stderr, "bert-train: task and data format disagree (%s); use "
                        "CSV for sequence, CoNLL for token, text for mlm "
                        "(--format)\n", fmt);
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- progress ---------------------------------------------------------- */

typedef struct {
    const opts_t *o;
    int tty;         /* a bar on stderr */
    size_t examples; /* trained on so far */
    int last_pct;    /* word2vec */
} ui_t;

static int on_fit(const bert_fit_progress *p, void *user)
{
    ui_t *u = user;
    u->examples = p->examples;
    if (u->o->quiet)
        return 0;
    if (p->event == BERT_FIT_STEP && u->tty &&
        (p->step % 5 == 0 || p->done >= p->todo)) {
        double eta = (double)(p->todo - p->done) / (p->rate > 0 ? p->rate : 1);
        int w = 30, fill = (int)((double)w * (double)p->done / (double)p->todo);
        fprintf(stderr, "\repoch %zu/%zu [%.*s%*s] %3.0f%% loss %.4f %.0f ex/s "
                        "ETA %02d:%02d  ", p->epoch, p->epochs, fill,
                "##############################", w - fill, "",
                100.0 * (double)p->done / (double)p->todo, p->loss, p->rate,
                (int)(eta / 60), (int)eta % 60);
    } else if (p->event == BERT_FIT_STEP && !u->tty && u->o->log_every > 0 &&
               p->step % (size_t)u->o->log_every == 0) {
        fprintf(stderr, "step %zu epoch %zu loss %.4f lr %.3g gnorm %.3f %.0f "
                        "ex/s elapsed %.0f s\n", p->step, p->epoch, p->loss,
                p->lr, p->grad_norm, p->rate, p->seconds);
    } else if (p->event == BERT_FIT_STOPPED) {
        fprintf(stderr, "%sbert-train: --max-minutes reached at step %zu\n",
                u->tty ? "\n" : "", p->step);
    } else if (p->event == BERT_FIT_EPOCH) {
        fprintf(stderr, "%sepoch %zu: train loss %.4f, %s, %.0f s%s\n",
                u->tty ? "\n" : "", p->epoch, p->loss,
                p->eval ? p->eval->text : "(no dev set)", p->epoch_seconds,
                p->improved ? " (best, saved)" : "");
    }
    return 0;
}

static int on_word2vec(size_t done, size_t total, void *user)
{
    ui_t *u = user;
    int pct = (int)(100.0 * (double)done / (double)(total ? total : 1));
    if (!u->o->quiet && pct / 10 != u->last_pct / 10) {
        fprintf(stderr, "embeddings: %d%% (%zu tokens)\n", pct, done);
        u->last_pct = pct;
    }
    return 0;
}

static void on_warning(const char *message, void *user)
{
    fprintf(stderr, "bert-train: %s\n", message);
}

/* ---- setup ------------------------------------------------------------- */

/* The labels of --labels A,B,... into o->data (kept in *buf). */
static void split_labels(opts_t *o, char **buf)
{
    const char **v;
    char *save = NULL;
    if (!o->labels)
        return;
    if (!(*buf = strdup(o->labels)) || !(v = calloc(strlen(o->labels) + 1, sizeof *v)))
        fail("out of memory");
    for (char *p = strtok_r(*buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
        v[o->data.num_labels++] = p;
    o->data.labels = v;
}

/* --init's classifier rows follow the labels' order when they are the same
 * names (bert_trainer_align_head); says what it did. */
static void align_head(const opts_t *o, bert_trainer *t,
                       const char *const *labels, size_t nl)
{
    bert_head_match hm;
    bert_error err;
    if (bert_trainer_align_head(t, o->init, &hm, &err))
        fail("--init %s", err.text);
    if (hm == BERT_HEAD_REORDERED) {
        fprintf(stderr, "bert-train: --init %s: classifier rows reordered to "
                        "the label order %s", o->init, labels[0]);
        for (size_t i = 1; i < nl; i++)
            fprintf(stderr, ",%s", labels[i]);
        fputc('\n', stderr);
    } else if (hm == BERT_HEAD_OTHER_NAMES) {
        fprintf(stderr, "bert-train: note: --init %s's head was trained for "
                        "other label names; its rows are kept in order\n",
                o->init);
    }
}

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *vocab_dir = o.vocab ? o.vocab : o.init;
    int classify = o.task == BERT_TRAIN_SEQUENCE || o.task == BERT_TRAIN_TOKEN;
    ui_t ui = {&o, isatty(2) && !o.quiet, 0, -1};
    bert_error err;
    bert_tokenizer *tok;
    if (app_out_dir("bert-train", "--out", o.out)) /* before any training */
        exit(EXIT_BADINPUT);
    if (bert_tokenizer_load_for_training(vocab_dir, o.lowercase, &tok, &err))
        fail("%s", err.text);
    /* RoBERTa: the word-level tasks only (mlm and embeddings pack or count
     * WordPiece ids, and RoBERTa's lm_head is not in the trainer) */
    if (bert_tokenizer_get_kind(tok) == BERT_TOKENIZER_BPE && !classify)
        fail("%s: byte-level BPE (RoBERTa) models can be fine-tuned for the "
             "sequence and token tasks only", vocab_dir);
    if ((o.task == BERT_TRAIN_MLM || o.task == TASK_RTD) &&
        bert_tokenizer_special(tok, BERT_TOKEN_MASK) < 0)
        fail("the vocabulary lacks [CLS], [SEP], [PAD] or [MASK]");

    /* data */
    char *lbuf = NULL;
    bert_dataset *tr, *dv = NULL;
    o.data.task = o.task == TASK_EMBED || o.task == TASK_RTD
                      ? BERT_TRAIN_MLM
                      : (bert_train_task)o.task;
    o.data.warning = on_warning;
    size_t dev_max = o.data.max_examples, nl;
    o.data.max_examples = 0;
    split_labels(&o, &lbuf);
    double t0 = app_now();
    if (bert_dataset_load(o.train_file, tok, &o.data, &tr, &err))
        fail("%s", err.text);
    if (bert_dataset_count(tr) == 0)
        fail("%s: no examples", o.train_file);
    double t_train = app_now() - t0;
    const char *const *labels = bert_dataset_labels(tr, &nl);
    if (classify && nl < 2)
        fail("%s: every example has the label \"%s\"; a classifier needs at "
             "least two labels", o.train_file, nl ? labels[0] : "");
    free((void *)o.data.labels);
    o.data.labels = labels; /* the dev set's are the training set's */
    o.data.num_labels = nl;

    /* trainer */
    bert_fit_params *fp = &o.fit;
    bert_train_params *p = &o.train;
    fp->out_dir = o.out;
    fp->tokenizer = tok;
    fp->tokenizer_dir = vocab_dir;
    fp->progress = on_fit;
    fp->progress_data = &ui;
    size_t total = bert_fit_total_steps(tr, fp);
    p->task = o.data.task;
    p->num_labels = nl;
    p->labels = labels;
    bert_trainer *gen = NULL;
    if (o.task == TASK_RTD) { /* the discriminator: original or replaced */
        static const char *const rtd_labels[] = {"original", "replaced"};
        p->task = BERT_TRAIN_TOKEN;
        p->num_labels = 2;
        p->labels = rtd_labels;
        bert_train_params gp = *p;
        gp.task = BERT_TRAIN_MLM;
        gp.num_labels = 0;
        gp.labels = NULL;
        if (bert_trainer_create(o.generator, NULL, &gp, &gen, &err))
            fail("--generator %s", err.text);
        fp->generator = gen;
    }
    p->lr = (float)o.lr;
    p->warmup_steps = o.warmup < 1 ? (size_t)(o.warmup * (double)total) : (size_t)o.warmup;
    p->total_steps = total;
    p->seed = fp->seed;
    p->n_threads = (int)o.threads;
    bert_trainer *t;
    if (bert_trainer_create(o.init, o.config, p, &t, &err))
        fail("%s", err.text);
    if (o.init && classify)
        align_head(&o, t, labels, nl);
    /* The dev set of a classifier is cut where the written model's tools
     * cut it (bert-tag; bert-classify's first window), not at
     * --max-length: its figures describe what they print.  MLM and RTD dev
     * texts are chunks like the training ones. */
    o.data.max_examples = dev_max;
    if (classify)
        o.data.max_length = bert_trainer_max_length(t, tok);
    double t1 = app_now();
    if (o.dev && bert_dataset_load(o.dev, tok, &o.data, &dv, &err))
        fail("%s", err.text);
    size_t n_dev = bert_dataset_count(dv);
    if (!o.quiet)
        fprintf(stderr, "bert-train: %zu training and %zu dev examples "
                        "(tokenized in %.1f s)\n", bert_dataset_count(tr),
                n_dev, t_train + app_now() - t1);
    if (o.sinpos && !o.resume && bert_trainer_init_sinusoidal_positions(t, &err))
        fail("%s", err.text);
    if (o.task == TASK_EMBED) {
        bert_word2vec_params wp = bert_word2vec_default_params();
        wp.epochs = fp->epochs;
        wp.lr = o.lr == 5e-5 ? 0.025 : o.lr;
        wp.seed = fp->seed;
        wp.progress = on_word2vec;
        wp.progress_data = &ui;
        if (bert_trainer_init_word2vec(t, tr, &wp, &err) ||
            bert_trainer_save_model_dir(t, tok, vocab_dir, o.out, &err))
            fail("%s", err.text);
        if (!o.quiet)
            fprintf(stderr, "bert-train: word embeddings trained in %.0f s; "
                            "model in %s\n", app_now() - t0, o.out);
        exit(EXIT_OK);
    }

    /* training */
    bert_fit_state st = {0, 0, 0, 0};
    if (o.resume && bert_fit_load_state(t, o.out, &st, &err))
        fail("--resume: %s", err.text);
    if (o.resume && !o.quiet)
        fprintf(stderr, "bert-train: resuming after epoch %zu (+%zu "
                        "examples), step %zu\n", st.epoch, st.offset,
                bert_trainer_steps(t));
    if (!o.quiet)
        fprintf(stderr, "bert-train: %zu parameters, %zu steps of %zu "
                        "examples (%zu warm-up), %ld thread(s)\n",
                bert_trainer_num_params(t), total, fp->batch_size * fp->accum,
                p->warmup_steps, o.threads);
    double tstart = app_now();
    if (bert_fit(t, tr, dv, fp, &st, &err))
        fail("%s", err.text);
    /* without a dev set the "best" epoch is the one of lowest train loss
     * (kept as its negative, so that larger is better everywhere) */
    double best = st.has_best ? st.best : -INFINITY;
    if (!o.quiet)
        fprintf(stderr, "bert-train: done in %.0f s (%zu examples, %zu "
                        "steps); %s %.4f; model in %s\n", app_now() - tstart,
                ui.examples, bert_trainer_steps(t),
                n_dev ? "best dev" : "lowest train loss", n_dev ? best : -best,
                o.out);
    bert_trainer_free(t);
    bert_trainer_free(gen);
    bert_dataset_free(tr);
    bert_dataset_free(dv);
    bert_tokenizer_free(tok);
    free(lbuf);
    return EXIT_OK;
}
