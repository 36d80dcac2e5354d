/* tests/trainutil.c - what the trainer tests share; see trainutil.h. */
#include "tests/trainutil.h"

#include <CUnit/Basic.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libbert/safetensors.h"
#include "libbert/train/ops.h"

char tr_tmp[256];

float tr_frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

double tr_relerr(double a, double n, double small, double small_denom)
{
    double d = fabs(a - n), m = fabs(a) + fabs(n);
    return d / (m < small ? small_denom : m);
}

int tr_run(const char *suite, const tr_test *tests, void (*summary)(void))
{
    snprintf(tr_tmp, sizeof tr_tmp, "/tmp/test_%s.XXXXXX", suite);
    if (!mkdtemp(tr_tmp))
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite(suite, NULL, NULL);
    for (const tr_test *t = tests; t->name; t++)
        CU_add_test(s, t->name, t->fn);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    if (summary)
        summary();
    CU_cleanup_registry();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tr_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tr_tmp);
    return fails ? 1 : 0;
}

const char *tr_write_config(const char *name, const char *fmt, ...)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.json", tr_tmp, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    return path;
}

bert_trainer *tr_trainer_create(const char *dir, const char *cfg,
                                const bert_train_params *p)
{
    bert_trainer *t = NULL;
    bert_error err;
    int rc = bert_trainer_create(dir, cfg, p, &t, &err);
    if (rc)
        printf("\n  %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return t;
}

/* --- whole-model gradient check ------------------------------------------ */

/* ReLU's kink: a difference quotient across it is no derivative.  The
 * signs of every layer's pre-activations (the kept fch of the last
 * forward, R rows) go into or are compared with sg; returns 1 when a sign
 * differs. */
static int relu_signs(const bert_trainer *t, size_t R, unsigned char *sg,
                      int store)
{
    int flip = 0;
    for (size_t l = 0, k = 0; l < t->L; l++)
        for (size_t i = 0; i < R * t->I; i++, k++) {
            unsigned char on = t->kl[l].fch[i] > 0.0f;
            if (store)
                sg[k] = on;
            else if (sg[k] != on)
                flip = 1;
        }
    return flip;
}

void tr_model_gradcheck(const char *cfg, bert_train_task task,
                        const int32_t *types, float rdrop, const tr_fd *fd,
                        void (*inspect)(const bert_trainer *),
                        double *worst_so_far)
{
    bert_train_params p = bert_train_default_params();
    p.task = task;
    p.num_labels = 3;
    p.seed = 5;
    p.rdrop = rdrop;
    bert_trainer *t = tr_trainer_create(NULL, cfg, &p);
    bert_error err;
    if (inspect)
        inspect(t);
    /* perturb LayerNorm/bias so that every tensor has generic values */
    for (size_t i = 0; i < t->nparams; i++)
        t->params[i] += 0.1f * (float)sin((double)i * 1.7);
    size_t B = 2, T = 5;
    int32_t ids[10] = {2, 5, 7, 11, 3, 2, 9, 4, 0, 0};
    int32_t ty[10];
    memcpy(ty, types, sizeof ty);
    size_t lens[2] = {5, 3};
    int32_t lab_seq[2] = {2, 0};
    int32_t lab_tok[10] = {-100, 1, 2, 0, -100, -100, 2, 1, -100, -100};
    int32_t lab_mlm[10] = {-100, 4, -100, 12, -100, -100, 1, 9, -100, -100};
    bert_train_batch bt = {B, T, ids, ty, lens,
                           task == BERT_TRAIN_SEQUENCE ? lab_seq
                           : task == BERT_TRAIN_TOKEN  ? lab_tok
                                                       : lab_mlm};
    uint64_t micro = t->micro;
    double loss;
    int rc = bert__t_run(t, &bt, 1, 1, 1.0f, NULL, &loss, &err);
    if (rc)
        printf("\n  %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* with ReLU, parameters whose perturbed forwards cross a kink are
     * skipped, and counted */
    int relu = t->act == BERT_T_ACT_RELU;
    size_t R = lens[0] + lens[1], skipped = 0;
    unsigned char *sg = malloc(t->L * R * t->I + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sg);
    if (relu)
        relu_signs(t, R, sg, 1);
    double worst = 0;
    size_t checked = 0;
    const float h = fd->h;
    for (size_t i = 0; i < t->nparams; i++) {
        if (t->grads[i] == 0.0f && (i % 7) != 0)
            continue; /* many zero rows (unused embeddings); sample them */
        float old = t->params[i];
        double num;
        if (fd->fourth_order) {
            static const float at[4] = {2, 1, -1, -2};
            double l[4];
            int flip = 0;
            for (int k = 0; k < 4; k++) {
                t->params[i] = old + at[k] * h;
                t->micro = micro; /* the same dropout masks */
                bert__t_run(t, &bt, 1, 0, 1.0f, NULL, &l[k], &err);
                flip |= relu && relu_signs(t, R, sg, 0);
            }
            if (flip) {
                t->params[i] = old;
                skipped++;
                continue;
            }
            num = (8.0 * (l[1] - l[2]) - (l[0] - l[3])) / (12.0 * h);
        } else {
            double lp, lm;
            t->params[i] = old + h;
            t->micro = micro;
            bert__t_run(t, &bt, 1, 0, 1.0f, NULL, &lp, &err);
            int flip = relu && relu_signs(t, R, sg, 0);
            t->params[i] = old - h;
            t->micro = micro;
            bert__t_run(t, &bt, 1, 0, 1.0f, NULL, &lm, &err);
            flip |= relu && relu_signs(t, R, sg, 0);
            if (flip) {
                t->params[i] = old;
                skipped++;
                continue;
            }
            num = (lp - lm) / (2.0 * h);
        }
        t->params[i] = old;
        double e = tr_relerr(t->grads[i], num, fd->small, fd->small_denom);
        if (e > worst)
            worst = e;
        if (e > 3e-2)
            printf("\n  param %zu: analytic %.6g numeric %.6g\n", i,
                   t->grads[i], num);
        checked++;
    }
    if (worst > *worst_so_far)
        *worst_so_far = worst;
    if (skipped)
        printf("(%zu of %zu parameters skipped: a ReLU kink within the "
               "step) ", skipped, skipped + checked);
    CU_ASSERT(worst < 3e-2);
    CU_ASSERT(checked > 100);
    CU_ASSERT(skipped * 4 < checked); /* most still checked */
    free(sg);
    bert_trainer_free(t);
}

/* --- a tiny task ---------------------------------------------------------- */

int tr_train_tiny(const char *cfg, int with_types, uint64_t seed, int threads,
                  float **weights_out, size_t *n_out)
{
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_SEQUENCE;
    p.num_labels = 2;
    p.seed = seed;
    p.lr = 3e-2f;
    p.weight_decay = 0.0f;
    p.n_threads = threads;
    p.total_steps = 150;
    p.warmup_steps = 10;
    bert_trainer *t = NULL;
    bert_error err;
    if (bert_trainer_create(NULL, cfg, &p, &t, &err))
        return -1;
    enum { NB = 16, T = 6 };
    int32_t ids[NB * T], types[NB * T], lab[NB];
    size_t lens[NB];
    uint64_t s = 77;
    for (int b = 0; b < NB; b++) {
        lens[b] = 3 + (size_t)(b % 4);
        int has = b % 2;
        ids[b * T] = 1;
        types[b * T] = 0;
        for (int k = 1; k < T; k++) {
            int v;
            do
                v = 4 + (int)((tr_frand(&s) + 1.0f) * 4.5f);
            while (v > 12);
            ids[b * T + k] = (size_t)k < lens[b] ? v : 0;
            types[b * T + k] = k > 2;
        }
        if (has)
            ids[b * T + 1 + (b / 2) % (lens[b] - 1)] = 3;
        lab[b] = has;
    }
    bert_train_batch bt = {NB, T, ids, with_types ? types : NULL, lens, lab};
    for (int step = 0; step < 150; step++) {
        if (bert_trainer_accumulate(t, &bt, 1.0f, NULL, &err) ||
            bert_trainer_update(t, NULL, &err)) {
            bert_trainer_free(t);
            return -1;
        }
    }
    float logits[NB * 2];
    double loss;
    bert_trainer_predict(t, &bt, logits, &loss, &err);
    int correct = 0;
    for (int b = 0; b < NB; b++)
        correct += (logits[2 * b + 1] > logits[2 * b]) == lab[b];
    if (weights_out) {
        *n_out = t->nparams;
        *weights_out = malloc(t->nparams * sizeof(float));
        memcpy(*weights_out, t->params, t->nparams * sizeof(float));
    }
    bert_trainer_free(t);
    return correct * 100 / NB;
}

void tr_check_deterministic(const char *cfg, int with_types)
{
    for (int th = 1; th <= 2; th++) {
        float *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        tr_train_tiny(cfg, with_types, 3, th, &a, &na);
        tr_train_tiny(cfg, with_types, 3, th, &b, &nb);
        CU_ASSERT_FATAL(a && b && na == nb);
        CU_ASSERT(memcmp(a, b, na * sizeof(float)) == 0);
        free(a);
        free(b);
    }
}

/* --- fixture -------------------------------------------------------------- */

void tr_fixture_free(tr_fixture *fx)
{
    free(fx->ids);
    free(fx->types);
    free(fx->lens);
    free(fx->expected);
}

int tr_fixture_load(tr_fixture *fx, const char *name)
{
    memset(fx, 0, sizeof *fx);
    const char *sd = getenv("SHARED_DIR");
    char path[1200];
    snprintf(fx->dir, sizeof fx->dir, "%s/fixtures/%s",
             sd ? sd : "../shared", name);
    snprintf(path, sizeof path, "%s/expected.safetensors", fx->dir);
    if (access(path, R_OK) != 0) {
        printf("\n  SKIPPED: %s not found (set SHARED_DIR to the shared "
               "directory that holds fixtures/)\n", path);
        return 0;
    }
    bert_st_file f;
    bert_error err;
    if (bert__st_open(path, &f, &err)) {
        CU_FAIL("cannot open expected.safetensors");
        return 0;
    }
    const bert_st_tensor *ti = bert__st_find(&f, "input_ids");
    const bert_st_tensor *tt = bert__st_find(&f, "token_type_ids");
    const bert_st_tensor *tm = bert__st_find(&f, "attention_mask");
    const bert_st_tensor *tl = bert__st_find(&f, "logits");
    if (!ti || !tt || !tm || !tl) {
        CU_FAIL("expected.safetensors lacks a tensor");
        bert__st_close(&f);
        return 0;
    }
    size_t B = ti->shape[0], T = ti->shape[1], C = tl->shape[1];
    int64_t *ids = malloc(B * T * 8), *ty = malloc(B * T * 8),
            *am = malloc(B * T * 8);
    fx->B = B;
    fx->T = T;
    fx->C = C;
    fx->ids = malloc(B * T * sizeof(int32_t));
    fx->types = malloc(B * T * sizeof(int32_t));
    fx->lens = malloc(B * sizeof(size_t));
    fx->expected = malloc(B * C * sizeof(float));
    bert__st_to_i64(ti, ids);
    bert__st_to_i64(tt, ty);
    bert__st_to_i64(tm, am);
    bert__st_to_f32(tl, fx->expected);
    for (size_t b = 0; b < B; b++) {
        fx->lens[b] = 0;
        for (size_t k = 0; k < T; k++) {
            fx->ids[b * T + k] = (int32_t)ids[b * T + k];
            fx->types[b * T + k] = (int32_t)ty[b * T + k];
            fx->lens[b] += am[b * T + k] != 0;
        }
    }
    free(ids);
    free(ty);
    free(am);
    bert__st_close(&f);
    return 1;
}

double tr_fixture_predict(bert_trainer *t, const tr_fixture *fx, float *got)
{
    bert_train_batch bt = {fx->B, fx->T, fx->ids, fx->types, fx->lens, NULL};
    bert_error err;
    int rc = bert_trainer_predict(t, &bt, got, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double worst = 0;
    for (size_t i = 0; i < fx->B * fx->C; i++)
        worst = fmax(worst, fabs((double)got[i] - fx->expected[i]));
    return worst;
}

void tr_fixture_finetune(bert_trainer *t, const tr_fixture *fx,
                         int32_t *labels, float *got)
{
    bert_train_batch bt = {fx->B, fx->T, fx->ids, fx->types, fx->lens,
                           labels};
    bert_error err;
    for (int step = 0; step < 3; step++) {
        CU_ASSERT_EQUAL(bert_trainer_accumulate(t, &bt, 1.0f, NULL, &err), 0);
        CU_ASSERT_EQUAL(bert_trainer_update(t, NULL, &err), 0);
    }
    bt.labels = NULL;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_predict(t, &bt, got, NULL, &err), 0);
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int ok = a && b;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0)
        ok = fwrite(buf, 1, n, b) == n;
    if (a)
        fclose(a);
    if (b && fclose(b) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

double tr_reload_by_inference(const tr_fixture *fx, const char *out,
                              bert_train_task task, int is_distilbert,
                              size_t C, const float *got)
{
    /* the fixture's tokenizer files (WordPiece or byte-level BPE) */
    static const char *tokfiles[] = {"vocab.txt", "vocab.json", "merges.txt",
                                     "tokenizer_config.json"};
    char a[1400], b[1400];
    int copied = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(a, sizeof a, "%s/%s", fx->dir, tokfiles[i]);
        snprintf(b, sizeof b, "%s/%s", out, tokfiles[i]);
        if (access(a, R_OK) != 0)
            continue;
        CU_ASSERT_EQUAL(copy_file(a, b), 0);
        copied++;
    }
    CU_ASSERT(copied >= 2);
    bert_model *m = NULL;
    bert_error err;
    int rc = bert_model_load(out, NULL, &m, &err);
    if (rc)
        printf("\n  %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const bert_config *mc = bert_model_config(m);
    CU_ASSERT_EQUAL(!!mc->is_distilbert, !!is_distilbert);
    CU_ASSERT_EQUAL(mc->task, task == BERT_TRAIN_TOKEN ? BERT_TASK_TOKEN
                                                       : BERT_TASK_SEQUENCE);
    bert_session *ses = NULL;
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &ses, &err), 0);
    size_t T = fx->T;
    double worst = 0;
    float *inf = malloc(T * C * sizeof *inf);
    for (size_t r = 0; r < fx->B; r++) {
        bert_input in = {fx->ids + r * T, fx->types + r * T, fx->lens[r]};
        bert_outputs o = {inf, NULL, NULL};
        CU_ASSERT_EQUAL(bert_session_run(ses, &in, 1, &o, &err), 0);
        size_t n = task == BERT_TRAIN_TOKEN ? fx->lens[r] : 1;
        const float *want = got + (task == BERT_TRAIN_TOKEN ? r * T : r) * C;
        for (size_t i = 0; i < n * C; i++)
            worst = fmax(worst, fabs((double)inf[i] - want[i]));
    }
    free(inf);
    bert_session_free(ses);
    bert_model_free(m);
    return worst;
}
