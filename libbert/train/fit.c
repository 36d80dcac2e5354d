/* fit.c - the training loop (bert_fit in bert_train.h): epochs of padded
 * micro-batches (batch.c) through the trainer, evaluation after each epoch
 * (evaluate.c), the best model saved (modeldir.c), and the resume state that
 * lets a cut run continue with the very batches it would have seen. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "libbert/atomicfile.h"
#include "libbert/internal.h"
#include "libbert/train/dataset.h"

bert_fit_params bert_fit_default_params(void)
{
    bert_fit_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.epochs = 3;
    p.batch_size = 32;
    p.accum = 1;
    p.mlm_probability = 0.15;
    p.seed = 42;
    p.eval_batch_size = 64;
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int check_params(const bert_fit_params *p, bert_error *err)
{
    const char *why = NULL;
    if (!(p->epochs > 0))
        why = "epochs must be more than 0";
    else if (p->batch_size < 1 || p->accum < 1 || p->eval_batch_size < 1)
        why = "batch_size, accum and eval_batch_size must be at least 1";
    else if (!(p->mlm_probability > 0 && p->mlm_probability < 1))
        why = "mlm_probability must be between 0 and 1 (exclusive)";
    else if (p->out_dir && (!p->tokenizer || !p->tokenizer_dir))
        why = "out_dir needs tokenizer and tokenizer_dir";
    return why ? bert__err(err, BERT_EINVAL, "bert_fit: %s", why) : BERT_OK;
}

size_t bert_fit_total_steps(const bert_dataset *train,
                            const bert_fit_params *params)
{
    bert_fit_params p;
    if (!train || BERT__PARAMS(p, params, bert_fit_default_params, NULL) ||
        check_params(&p, NULL))
        return 0;
    size_t per_step = p.batch_size * p.accum;
    size_t per_epoch = (train->n + per_step - 1) / per_step;
    return (size_t)ceil(p.epochs * (double)per_epoch);
}

/* ---- resume state ------------------------------------------------------ */

int bert_fit_save_state(const bert_trainer *t, const char *dir,
                        const bert_fit_state *state, bert_error *err)
{
    if (!t || !dir || !state)
        return bert__err(err, BERT_EINVAL,
                         "bert_fit_save_state: NULL argument");
    char path[4096], tmp[4096];
    bert_error e2;
    if (mkdir(dir, 0755) && errno != EEXIST)
        return bert__err(err, BERT_EIO, "cannot create %s: %s", dir,
                         strerror(errno));
    snprintf(path, sizeof path, "%s/trainer_state.bin", dir);
    FILE *f = bert__file_create(path, tmp);
    if (!f)
        return bert__err(err, BERT_EIO, "cannot create %s: %s", path,
                         strerror(errno));
    fclose(f);
    if (bert_trainer_save_state(t, tmp, &e2)) {
        bert__file_discard(NULL, tmp);
        return bert__err(err, BERT_EIO, "cannot write %s: %s", path, e2.text);
    }
    if (bert__file_commit(NULL, tmp, path))
        return bert__err(err, BERT_EIO, "cannot write %s: %s", path,
                         strerror(errno));
    /* the epochs done, the best score (-inf: none) and how many examples
     * of the next epoch were already trained on */
    snprintf(path, sizeof path, "%s/trainer_progress.txt", dir);
    if (!(f = bert__file_create(path, tmp)) ||
        fprintf(f, "%zu %.17g %zu\n", state->epoch,
                state->has_best ? state->best : -INFINITY,
                state->offset) < 0 ||
        bert__file_commit(f, tmp, path))
        return bert__err(err, BERT_EIO, "cannot write %s: %s", path,
                         strerror(errno));
    return BERT_OK;
}

int bert_fit_load_state(bert_trainer *t, const char *dir,
                        bert_fit_state *state, bert_error *err)
{
    if (!t || !dir || !state)
        return bert__err(err, BERT_EINVAL,
                         "bert_fit_load_state: NULL argument");
    char path[4096];
    snprintf(path, sizeof path, "%s/trainer_state.bin", dir);
    int rc = bert_trainer_load_state(t, path, err);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/trainer_progress.txt", dir);
    bert_fit_state st = {0, 0, 0, 0};
    FILE *f = fopen(path, "r");
    if (!f || fscanf(f, "%zu %lf", &st.epoch, &st.best) != 2) {
        if (f)
            fclose(f);
        return bert__err(err, f ? BERT_EFORMAT : BERT_EMISSING,
                         "cannot read %s", path);
    }
    if (fscanf(f, "%zu", &st.offset) != 1) /* written before save_every */
        st.offset = 0;
    fclose(f);
    st.has_best = st.best > -INFINITY;
    *state = st;
    return BERT_OK;
}

/* ---- the loop ---------------------------------------------------------- */

/* One call of bert_fit. */
typedef struct {
    bert_trainer *t;
    const bert_dataset *tr, *dev;
    bert_fit_params p;
    bert_fit_state *st;
    size_t V, *ord;
    bert__padded bb;
    bert__rtd rtd;        /* with a generator */
    double t0, last_save;
    bert_fit_progress pg; /* what the callback sees; running totals */
    double eloss;         /* the epoch's summed micro-batch losses */
    size_t en;            /* and their number */
} fit_run;

/* Reports pg as event ev; BERT_ECANCELED when the callback says so. */
static int report(fit_run *r, bert_fit_event ev, bert_error *err)
{
    r->pg.event = ev;
    r->pg.seconds = now() - r->t0;
    if (r->p.progress && r->p.progress(&r->pg, r->p.progress_data))
        return bert__err(err, BERT_ECANCELED,
                         "canceled by the progress callback");
    return BERT_OK;
}

/* One optimizer step: accum micro-batches from ord[*s..todo). */
static int step(fit_run *r, uint64_t eseed, size_t *s, size_t todo,
                bert_error *err)
{
    bert_fit_progress *pg = &r->pg;
    for (size_t a = 0; a < r->p.accum && *s < todo; a++) {
        size_t nb = todo - *s < r->p.batch_size ? todo - *s : r->p.batch_size;
        bert_train_batch b;
        double loss;
        int rc;
        if (r->p.generator) {
            if ((rc = bert__rtd_fill(&r->rtd, r->p.generator, r->tr,
                                     r->ord + *s, nb, r->p.mlm_probability,
                                     eseed, &b, err)))
                return rc;
        } else if (bert__padded_fill(&r->bb, r->tr, r->ord + *s, nb, r->V,
                                    r->p.mlm_probability, eseed, &b))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        rc = bert_trainer_accumulate(r->t, &b, 1.0f / (float)r->p.accum,
                                     &loss, err);
        if (rc)
            return rc;
        r->eloss += loss;
        r->en++;
        pg->loss = r->en == 1 ? loss : 0.98 * pg->loss + 0.02 * loss;
        *s += nb;
        pg->done += nb;
        pg->examples += nb;
    }
    bert_error e2;
    if (bert_trainer_update(r->t, &pg->grad_norm, &e2))
        return bert__err(err, e2.status, "step %zu: %s",
                         bert_trainer_steps(r->t), e2.text);
    return BERT_OK;
}

/* The end of epoch ep, started at te: evaluation, the report, the saves.
 * s < todo: the epoch was cut at s. */
static int epoch_end(fit_run *r, size_t ep, double te, size_t s, size_t todo,
                     bert_error *err)
{
    bert_eval_result ev;
    double score;
    int rc;
    if (r->dev && r->dev->n) {
        bert_error e2;
        if ((rc = bert_evaluate(r->t, r->dev, &r->p, &ev, &e2)))
            return bert__err(err, rc, "evaluation: %s", e2.text);
        score = ev.score;
    } else {
        score = -r->eloss / (double)(r->en ? r->en : 1);
    }
    bert_fit_progress *pg = &r->pg;
    pg->loss = r->eloss / (double)(r->en ? r->en : 1);
    pg->eval = r->dev && r->dev->n ? &ev : NULL;
    pg->improved = score > (r->st->has_best ? r->st->best : -INFINITY);
    pg->epoch_seconds = now() - te;
    int cancel = report(r, BERT_FIT_EPOCH, err);
    pg->eval = NULL;
    if (pg->improved) {
        r->st->best = score;
        r->st->has_best = 1;
        if (r->p.out_dir &&
            (rc = bert_trainer_save_model_dir(r->t, r->p.tokenizer,
                                              r->p.tokenizer_dir,
                                              r->p.out_dir, err)))
            return rc;
    }
    /* a run cut by time_limit resumes inside the epoch it left */
    r->st->epoch = s < todo ? ep : ep + 1;
    r->st->offset = s < todo ? s : 0;
    if (r->p.out_dir && r->p.save_state &&
        (rc = bert_fit_save_state(r->t, r->p.out_dir, r->st, err)))
        return rc;
    return cancel;
}

/* Epoch ep (from 0) from the state's offset on. */
static int epoch(fit_run *r, size_t ep, int *stop, bert_error *err)
{
    size_t n = r->tr->n;
    uint64_t eseed = bert__mix(r->p.seed ^ bert__mix(ep + 1));
    if (bert__epoch_order(r->tr, r->p.batch_size, eseed, r->ord))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    size_t todo = n;
    if (r->p.epochs < (double)(ep + 1)) /* a fractional last epoch */
        todo = (size_t)((r->p.epochs - (double)ep) * (double)n);
    size_t s = r->st->offset < todo ? r->st->offset : todo;
    bert_fit_progress *pg = &r->pg;
    double te = now();
    pg->epoch = ep + 1;
    pg->todo = todo;
    pg->done = s;
    pg->loss = 0;
    r->eloss = 0;
    r->en = 0;
    size_t seen0 = s;
    int rc = BERT_OK;
    while (rc == BERT_OK && s < todo && !*stop) {
        if ((rc = step(r, eseed, &s, todo, err)))
            break;
        r->st->offset = s;
        pg->step = bert_trainer_steps(r->t);
        pg->lr = bert_trainer_lr(r->t);
        pg->epoch_seconds = now() - te;
        pg->rate = (double)(s - seen0) /
                   (pg->epoch_seconds > 0 ? pg->epoch_seconds : 1e-9);
        if ((rc = report(r, BERT_FIT_STEP, err)))
            break;
        if (r->p.out_dir && r->p.save_state && r->p.save_every > 0 &&
            s < todo && now() - r->last_save > r->p.save_every) {
            if ((rc = bert_fit_save_state(r->t, r->p.out_dir, r->st, err)))
                break;
            r->last_save = now();
        }
        if (r->p.time_limit > 0 && now() - r->t0 > r->p.time_limit) {
            *stop = 1;
            rc = report(r, BERT_FIT_STOPPED, err);
        }
    }
    if (rc)
        return rc;
    return epoch_end(r, ep, te, s, todo, err);
}

int bert_fit(bert_trainer *t, const bert_dataset *train,
             const bert_dataset *dev, const bert_fit_params *params,
             bert_fit_state *state, bert_error *err)
{
    fit_run r;
    memset(&r, 0, sizeof r);
    bert_fit_state fresh = {0, 0, 0, 0};
    if (!t || !train)
        return bert__err(err, BERT_EINVAL, "bert_fit: NULL argument");
    int rc = BERT__PARAMS(r.p, params, bert_fit_default_params, err);
    if (rc || (rc = check_params(&r.p, err)))
        return rc;
    if (r.p.generator
            ? (rc = bert__check_rtd(t, r.p.generator, train, "bert_fit: train",
                                    err)) ||
                  (dev && (rc = bert__check_rtd(t, r.p.generator, dev,
                                                "bert_fit: dev", err)))
            : (rc = bert__check_dataset(t, train, "bert_fit: train", err)) ||
                  (dev && (rc = bert__check_dataset(t, dev, "bert_fit: dev",
                                                    err))))
        return rc;
    if (train->n == 0)
        return bert__err(err, BERT_EINVAL, "bert_fit: no training examples");
    if (r.p.tokenizer && bert_tokenizer_vocab_size(r.p.tokenizer) >
                             bert_trainer_config(t)->vocab_size)
        return bert__err(err, BERT_EINVAL,
                         "bert_fit: the vocabulary has %zu tokens, the model "
                         "%zu", bert_tokenizer_vocab_size(r.p.tokenizer),
                         bert_trainer_config(t)->vocab_size);
    r.t = t;
    r.tr = train;
    r.dev = dev;
    r.st = state ? state : &fresh;
    r.V = bert_trainer_config(t)->vocab_size;
    if (!(r.ord = malloc((train->n + 1) * sizeof *r.ord)))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    size_t n_epochs = (size_t)ceil(r.p.epochs);
    if (r.p.stop_after_epochs > 0 && r.p.stop_after_epochs < n_epochs)
        n_epochs = r.p.stop_after_epochs;
    r.pg.epochs = n_epochs;
    r.pg.total_steps = bert_fit_total_steps(train, &r.p);
    r.t0 = r.last_save = now();
    int stop = 0;
    for (size_t ep = r.st->epoch; rc == BERT_OK && ep < n_epochs && !stop;
         ep++)
        rc = epoch(&r, ep, &stop, err);
    free(r.ord);
    bert__padded_free(&r.bb);
    bert__rtd_free(&r.rtd);
    return rc;
}
