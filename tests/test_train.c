/* tests/test_train.c - the trainer: every backward kernel against finite
 * differences (losses summed in double), a whole-model gradient check for
 * each task, a tiny model that learns a tiny data set, determinism, and the
 * trainer's forward against a fixture's expected logits. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/safetensors.h"
#include "libbert/train/ops.h"
#include "libbert/train/trainer.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void fill(float *x, size_t n, uint64_t seed, float sc)
{
    for (size_t i = 0; i < n; i++)
        x[i] = frand(&seed) * sc;
}

static double dot(const float *a, const float *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * r[i];
    return s;
}

/* relative error between analytic and numeric gradients, robust to tiny
 * values */
static double relerr(double a, double n)
{
    double d = fabs(a - n), m = fabs(a) + fabs(n);
    return m < 1e-3 ? d : d / m;
}

static double g_worst_kernel = 0, g_worst_model = 0;

/* --- kernel checks: loss = sum(out * R) ---------------------------------- */

#define EPS 1e-2f

static void check_grad(const char *what, float *x, size_t n, const float *g,
                       double (*loss)(void *), void *ctx, double tol)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        float old = x[i];
        x[i] = old + EPS;
        double lp = loss(ctx);
        x[i] = old - EPS;
        double lm = loss(ctx);
        x[i] = old;
        double num = (lp - lm) / (2.0 * EPS);
        double e = relerr(g[i], num);
        if (e > worst)
            worst = e;
        if (e > tol)
            printf("\n  %s[%zu]: analytic %.6g numeric %.6g\n", what, i, g[i],
                   num);
    }
    if (worst > g_worst_kernel)
        g_worst_kernel = worst;
    CU_ASSERT(worst <= tol);
}

typedef struct {
    size_t N, IC, OC;
    float *inp, *w, *b, *out, *R;
    void *rntm;
} mm_ctx;

static double mm_loss(void *v)
{
    mm_ctx *c = v;
    bert__t_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->IC, c->OC,
                           c->rntm);
    return dot(c->out, c->R, c->N * c->OC);
}

#include <blis.h>

static void test_matmul(void)
{
    rntm_t rn;
    bli_rntm_init(&rn);
    bli_rntm_set_num_threads(1, &rn);
    mm_ctx c = {5, 7, 3, NULL, NULL, NULL, NULL, NULL, &rn};
    c.inp = malloc(5 * 7 * 4);
    c.w = malloc(3 * 7 * 4);
    c.b = malloc(3 * 4);
    c.out = malloc(5 * 3 * 4);
    c.R = malloc(5 * 3 * 4);
    fill(c.inp, 35, 1, 1);
    fill(c.w, 21, 2, 1);
    fill(c.b, 3, 3, 1);
    fill(c.R, 15, 4, 1);
    float dinp[35] = {0}, dw[21] = {0}, db[3] = {0};
    bert__t_matmul_backward(dinp, dw, db, c.R, c.inp, c.w, 5, 7, 3, &rn, 2);
    check_grad("matmul.inp", c.inp, 35, dinp, mm_loss, &c, 1e-3);
    check_grad("matmul.w", c.w, 21, dw, mm_loss, &c, 1e-3);
    check_grad("matmul.b", c.b, 3, db, mm_loss, &c, 1e-3);
    free(c.inp); free(c.w); free(c.b); free(c.out); free(c.R);
}

typedef struct {
    size_t N, C;
    float *inp, *w, *b, *out, *mean, *rstd, *R;
} ln_ctx;

static double ln_loss(void *v)
{
    ln_ctx *c = v;
    bert__t_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b,
                              c->N, c->C, 1e-5f, 1);
    return dot(c->out, c->R, c->N * c->C);
}

static void test_layernorm(void)
{
    float inp[3 * 5], w[5], b[5], out[15], mean[3], rstd[3], R[15];
    fill(inp, 15, 5, 2);
    fill(w, 5, 6, 1);
    fill(b, 5, 7, 1);
    fill(R, 15, 8, 1);
    ln_ctx c = {3, 5, inp, w, b, out, mean, rstd, R};
    ln_loss(&c);
    float dinp[15] = {0}, dw[5] = {0}, db[5] = {0};
    bert__t_layernorm_backward(dinp, dw, db, R, inp, w, mean, rstd, 3, 5, 2);
    check_grad("layernorm.inp", inp, 15, dinp, ln_loss, &c, 2e-2);
    check_grad("layernorm.w", w, 5, dw, ln_loss, &c, 1e-3);
    check_grad("layernorm.b", b, 5, db, ln_loss, &c, 1e-3);
}

typedef struct {
    int act;
    float *inp, *out, *R;
    size_t n;
} act_ctx;

static double act_loss(void *v)
{
    act_ctx *c = v;
    bert__t_act_forward(c->act, c->out, c->inp, c->n, 1);
    return dot(c->out, c->R, c->n);
}

static void test_activations(void)
{
    for (int act = 0; act < 4; act++) {
        float inp[11], out[11], R[11], d[11] = {0};
        fill(inp, 11, 10 + (uint64_t)act, 3);
        for (int i = 0; i < 11; i++) /* keep ReLU away from its kink */
            if (fabsf(inp[i]) < 0.05f)
                inp[i] = 0.3f;
        fill(R, 11, 20, 1);
        act_ctx c = {act, inp, out, R, 11};
        bert__t_act_backward(act, d, R, inp, 11, 2);
        check_grad("activation", inp, 11, d, act_loss, &c, 2e-3);
    }
}

typedef struct {
    float *out, *att, *scr, *qkv, *R;
    size_t *lens, B, T, H, NH;
    float p;
} at_ctx;

static double at_loss(void *v)
{
    at_ctx *c = v;
    bert__t_attention_forward(c->out, c->att, c->scr, c->qkv, c->lens, c->B,
                              c->T, c->H, c->NH, c->p, 7, 99, 2);
    /* only real rows count */
    double s = 0;
    for (size_t b = 0; b < c->B; b++)
        for (size_t t = 0; t < c->lens[b]; t++)
            for (size_t h = 0; h < c->H; h++) {
                size_t i = (b * c->T + t) * c->H + h;
                s += (double)c->out[i] * c->R[i];
            }
    return s;
}

static void test_attention(void)
{
    for (int withdrop = 0; withdrop < 2; withdrop++) {
        size_t B = 2, T = 5, H = 6, NH = 2;
        size_t lens[2] = {5, 3};
        float qkv[2 * 5 * 18], out[2 * 5 * 6], att[2 * 2 * 25], scr[100],
            R[60], dqkv[180] = {0}, scr2[100];
        fill(qkv, 180, 30, 1.5f);
        fill(R, 60, 31, 1);
        for (size_t b = 0; b < B; b++) /* padded rows carry no gradient */
            for (size_t t = lens[b]; t < T; t++)
                memset(R + (b * T + t) * H, 0, H * sizeof(float));
        at_ctx c = {out, att, scr, qkv, R, lens, B, T, H, NH,
                    withdrop ? 0.3f : 0.0f};
        at_loss(&c);
        bert__t_attention_backward(dqkv, scr2, R, qkv, att, lens, B, T, H, NH,
                                   c.p, 7, 99, 2);
        /* keys/values of padded positions get no gradient */
        for (size_t t = 3; t < 5; t++)
            for (size_t h = 6; h < 18; h++)
                CU_ASSERT(dqkv[(1 * T + t) * 18 + h] == 0.0f);
        check_grad("attention.qkv", qkv, 180, dqkv, at_loss, &c, 2e-2);
    }
}

typedef struct {
    float *out, *wte, *wpe, *wtt, *R;
    int32_t *ids, *types;
} em_ctx;

static double em_loss(void *v)
{
    em_ctx *c = v;
    bert__t_embed_forward(c->out, c->ids, c->types, c->wte, c->wpe, c->wtt, 2,
                          3, 4);
    return dot(c->out, c->R, 24);
}

static void test_embeddings(void)
{
    float wte[5 * 4], wpe[3 * 4], wtt[2 * 4], out[24], R[24];
    int32_t ids[6] = {1, 4, 1, 0, 2, 3}, types[6] = {0, 0, 1, 0, 1, 1};
    fill(wte, 20, 40, 1);
    fill(wpe, 12, 41, 1);
    fill(wtt, 8, 42, 1);
    fill(R, 24, 43, 1);
    em_ctx c = {out, wte, wpe, wtt, R, ids, types};
    float dwte[20] = {0}, dwpe[12] = {0}, dwtt[8] = {0};
    bert__t_embed_backward(dwte, dwpe, dwtt, R, ids, types, 2, 3, 4);
    check_grad("embed.wte", wte, 20, dwte, em_loss, &c, 1e-3);
    check_grad("embed.wpe", wpe, 12, dwpe, em_loss, &c, 1e-3);
    check_grad("embed.wtt", wtt, 8, dwtt, em_loss, &c, 1e-3);
}

typedef struct {
    float *logits;
    int32_t *tg;
} ce_ctx;

static double ce_loss(void *v)
{
    ce_ctx *c = v;
    return bert__t_crossentropy(NULL, c->logits, c->tg, 4, 3, 1.0f);
}

static void test_crossentropy(void)
{
    float logits[12], d[12];
    int32_t tg[4] = {2, -100, 0, 1};
    fill(logits, 12, 50, 3);
    ce_ctx c = {logits, tg};
    bert__t_crossentropy(d, logits, tg, 4, 3, 1.0f);
    for (int j = 0; j < 3; j++)
        CU_ASSERT(d[3 + j] == 0.0f);
    check_grad("crossentropy", logits, 12, d, ce_loss, &c, 1e-3);
}

static void test_dropout(void)
{
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = 1.0f;
    bert__t_dropout(x, 1000, 0.25f, 1, 2, 2);
    int zeros = 0;
    for (int i = 0; i < 1000; i++) {
        if (x[i] == 0.0f)
            zeros++;
        else
            CU_ASSERT(fabsf(x[i] - 1.0f / 0.75f) < 1e-6f);
    }
    CU_ASSERT(zeros > 200 && zeros < 300);
}

/* --- whole model --------------------------------------------------------- */

static char g_tmp[256];

static const char *write_tiny_config(const char *name, const char *act,
                                     float drop)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.json", g_tmp, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fprintf(f,
            "{\"architectures\":[\"BertForMaskedLM\"],\"model_type\":\"bert\","
            "\"vocab_size\":13,\"hidden_size\":6,\"num_hidden_layers\":2,"
            "\"num_attention_heads\":2,\"intermediate_size\":7,"
            "\"hidden_act\":\"%s\",\"max_position_embeddings\":9,"
            "\"type_vocab_size\":2,\"layer_norm_eps\":1e-5,"
            "\"hidden_dropout_prob\":%g,\"attention_probs_dropout_prob\":%g,"
            "\"initializer_range\":0.5,\"pad_token_id\":0}",
            act, drop, drop);
    fclose(f);
    return path;
}

static void model_gradcheck(bert_train_task task, const char *act, float drop)
{
    const char *cfg = write_tiny_config("grad", act, drop);
    bert_train_params p = bert_train_default_params();
    p.task = task;
    p.num_labels = 3;
    p.seed = 5;
    bert_trainer *t = NULL;
    bert_error err;
    int rc = bert_trainer_create(NULL, cfg, &p, &t, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    /* perturb LayerNorm/bias so that every tensor has generic values */
    for (size_t i = 0; i < t->nparams; i++)
        t->params[i] += 0.1f * (float)sin((double)i * 1.7);
    size_t B = 2, T = 5;
    int32_t ids[10] = {2, 5, 7, 11, 3, 2, 9, 4, 0, 0};
    int32_t types[10] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 0};
    size_t lens[2] = {5, 3};
    int32_t lab_seq[2] = {2, 0};
    int32_t lab_tok[10] = {-100, 1, 2, 0, -100, -100, 2, 1, -100, -100};
    int32_t lab_mlm[10] = {-100, 4, -100, 12, -100, -100, 1, 9, -100, -100};
    bert_train_batch bt = {B, T, ids, types, lens,
                           task == BERT_TRAIN_SEQUENCE ? lab_seq
                           : task == BERT_TRAIN_TOKEN  ? lab_tok
                                                       : lab_mlm};
    uint64_t micro = t->micro;
    double loss;
    rc = bert__t_run(t, &bt, 1, 1, 1.0f, NULL, &loss, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double worst = 0;
    size_t checked = 0;
    for (size_t i = 0; i < t->nparams; i += 1) {
        if (t->grads[i] == 0.0f && (i % 7) != 0)
            continue; /* many zero rows (unused embeddings); sample them */
        float old = t->params[i];
        const float h = 1e-2f;
        double lp, lm;
        t->params[i] = old + h;
        t->micro = micro;
        bert__t_run(t, &bt, 1, 0, 1.0f, NULL, &lp, &err);
        t->params[i] = old - h;
        t->micro = micro;
        bert__t_run(t, &bt, 1, 0, 1.0f, NULL, &lm, &err);
        t->params[i] = old;
        double num = (lp - lm) / (2.0 * h);
        double e = relerr(t->grads[i], num);
        if (e > worst)
            worst = e;
        if (e > 3e-2)
            printf("\n  param %zu: analytic %.6g numeric %.6g\n", i,
                   t->grads[i], num);
        checked++;
    }
    if (worst > g_worst_model)
        g_worst_model = worst;
    CU_ASSERT(worst < 3e-2);
    CU_ASSERT(checked > 100);
    bert_trainer_free(t);
}

static void test_model_grad_seq(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu", 0.0f); }
static void test_model_grad_seq_drop(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu_new", 0.2f); }
static void test_model_grad_tok(void) { model_gradcheck(BERT_TRAIN_TOKEN, "relu", 0.1f); }
static void test_model_grad_mlm(void) { model_gradcheck(BERT_TRAIN_MLM, "gelu", 0.1f); }

/* A tiny task: label = whether token 3 occurs in the sequence. */
static int train_tiny(uint64_t seed, int threads, float **weights_out,
                      size_t *n_out)
{
    const char *cfg = write_tiny_config("tiny", "gelu", 0.0f);
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
    int32_t ids[NB * T], lab[NB];
    size_t lens[NB];
    uint64_t s = 77;
    for (int b = 0; b < NB; b++) {
        lens[b] = 3 + (size_t)(b % 4);
        int has = b % 2;
        ids[b * T] = 1;
        for (int k = 1; k < T; k++) {
            int v;
            do
                v = 4 + (int)((frand(&s) + 1.0f) * 4.5f);
            while (v > 12);
            ids[b * T + k] = (size_t)k < lens[b] ? v : 0;
        }
        if (has)
            ids[b * T + 1 + (b / 2) % (lens[b] - 1)] = 3;
        lab[b] = has;
    }
    bert_train_batch bt = {NB, T, ids, NULL, lens, lab};
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

static void test_learns_tiny(void)
{
    int acc = train_tiny(1, 1, NULL, NULL);
    CU_ASSERT_EQUAL(acc, 100);
}

static void test_deterministic(void)
{
    for (int th = 1; th <= 2; th++) {
        float *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        train_tiny(3, th, &a, &na);
        train_tiny(3, th, &b, &nb);
        CU_ASSERT_FATAL(a && b && na == nb);
        CU_ASSERT(memcmp(a, b, na * sizeof(float)) == 0);
        free(a);
        free(b);
    }
}

/* --- fixture -------------------------------------------------------------- */

static void test_fixture_forward(void)
{
    const char *sd = getenv("SHARED_DIR");
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/fixtures/bert-seq-uncased",
             sd ? sd : "../shared");
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    if (access(path, R_OK) != 0) {
        printf("\n  skipped: %s not found\n", path);
        return;
    }
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_SEQUENCE;
    bert_trainer *t = NULL;
    bert_error err;
    int rc = bert_trainer_create(dir, NULL, &p, &t, &err);
    if (rc)
        printf("\n  %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    bert_st_file f;
    rc = bert__st_open(path, &f, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const bert_st_tensor *ti = bert__st_find(&f, "input_ids");
    const bert_st_tensor *tt = bert__st_find(&f, "token_type_ids");
    const bert_st_tensor *tm = bert__st_find(&f, "attention_mask");
    const bert_st_tensor *tl = bert__st_find(&f, "logits");
    CU_ASSERT_FATAL(ti && tt && tm && tl);
    size_t B = ti->shape[0], T = ti->shape[1], C = tl->shape[1];
    int64_t *ids = malloc(B * T * 8), *ty = malloc(B * T * 8),
            *am = malloc(B * T * 8);
    float *exp = malloc(B * C * 4), *got = malloc(B * C * 4);
    int32_t *ids32 = malloc(B * T * 4), *ty32 = malloc(B * T * 4);
    size_t *lens = malloc(B * sizeof(size_t));
    bert__st_to_i64(ti, ids);
    bert__st_to_i64(tt, ty);
    bert__st_to_i64(tm, am);
    bert__st_to_f32(tl, exp);
    for (size_t b = 0; b < B; b++) {
        lens[b] = 0;
        for (size_t k = 0; k < T; k++) {
            ids32[b * T + k] = (int32_t)ids[b * T + k];
            ty32[b * T + k] = (int32_t)ty[b * T + k];
            lens[b] += am[b * T + k] != 0;
        }
    }
    bert_train_batch bt = {B, T, ids32, ty32, lens, NULL};
    rc = bert_trainer_predict(t, &bt, got, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double worst = 0;
    for (size_t i = 0; i < B * C; i++)
        worst = fmax(worst, fabs((double)got[i] - exp[i]));
    printf("\n  trainer forward vs expected logits: max |diff| %.3g over %zu "
           "texts\n", worst, B);
    CU_ASSERT(worst <= 1e-4);
    /* save and reload through the trainer: identical logits */
    char out[512];
    snprintf(out, sizeof out, "%s/saved", g_tmp);
    mkdir(out, 0755);
    rc = bert_trainer_save(t, out, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    bert_trainer *t2 = NULL;
    rc = bert_trainer_create(out, NULL, &p, &t2, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    float *got2 = malloc(B * C * 4);
    bert_trainer_predict(t2, &bt, got2, NULL, &err);
    CU_ASSERT(memcmp(got, got2, B * C * 4) == 0);
    bert_trainer_free(t2);
    free(got2);

    /* fine-tune a few steps (weights move), save, reload through the
     * inference API: same logits as the trainer's own forward */
    int32_t *lab = calloc(B, sizeof *lab);
    for (size_t b = 0; b < B; b++)
        lab[b] = (int32_t)(b % 2);
    bt.labels = lab;
    for (int step = 0; step < 3; step++) {
        CU_ASSERT_EQUAL(bert_trainer_accumulate(t, &bt, 1.0f, NULL, &err), 0);
        CU_ASSERT_EQUAL(bert_trainer_update(t, NULL, &err), 0);
    }
    bt.labels = NULL;
    rc = bert_trainer_predict(t, &bt, got, NULL, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = bert_trainer_save(t, out, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    static const char *tokfiles[] = {"vocab.txt", "tokenizer_config.json"};
    for (int i = 0; i < 2; i++) {
        char a[1400], b2[1400], cmd[3000];
        snprintf(a, sizeof a, "%s/%s", dir, tokfiles[i]);
        snprintf(b2, sizeof b2, "%s/%s", out, tokfiles[i]);
        snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a, b2);
        CU_ASSERT_EQUAL(system(cmd), 0);
    }
    bert_model *m = NULL;
    rc = bert_model_load(out, NULL, &m, &err);
    if (rc)
        printf("\n  %s\n", err.text);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    bert_session *ses = NULL;
    rc = bert_session_create(m, NULL, &ses, &err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double worst2 = 0;
    float inf[64];
    for (size_t b = 0; b < B && C <= 64; b++) {
        bert_input in = {ids32 + b * T, ty32 + b * T, lens[b]};
        bert_outputs o = {inf, NULL, NULL};
        rc = bert_session_run(ses, &in, 1, &o);
        CU_ASSERT_EQUAL(rc, 0);
        for (size_t c = 0; c < C; c++)
            worst2 = fmax(worst2, fabs((double)inf[c] - got[b * C + c]));
    }
    printf("  fine-tuned, saved, reloaded by bert_model_load: max |diff| %.3g\n",
           worst2);
    CU_ASSERT(worst2 <= 1e-5);
    bert_session_free(ses);
    bert_model_free(m);
    free(lab);
    bert__st_close(&f);
    free(ids); free(ty); free(am); free(exp); free(got); free(ids32);
    free(ty32); free(lens);
    bert_trainer_free(t);
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/test_train.XXXXXX");
    if (!mkdtemp(g_tmp))
        return 1;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite s = CU_add_suite("train", NULL, NULL);
    CU_add_test(s, "matmul backward", test_matmul);
    CU_add_test(s, "layernorm backward", test_layernorm);
    CU_add_test(s, "activations backward", test_activations);
    CU_add_test(s, "attention backward", test_attention);
    CU_add_test(s, "embeddings backward", test_embeddings);
    CU_add_test(s, "cross-entropy backward", test_crossentropy);
    CU_add_test(s, "dropout", test_dropout);
    CU_add_test(s, "model gradient: sequence", test_model_grad_seq);
    CU_add_test(s, "model gradient: sequence+dropout", test_model_grad_seq_drop);
    CU_add_test(s, "model gradient: token", test_model_grad_tok);
    CU_add_test(s, "model gradient: mlm", test_model_grad_mlm);
    CU_add_test(s, "tiny model learns", test_learns_tiny);
    CU_add_test(s, "deterministic", test_deterministic);
    CU_add_test(s, "fixture forward", test_fixture_forward);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    printf("worst relative gradient error: kernels %.3g, whole model %.3g\n",
           g_worst_kernel, g_worst_model);
    CU_cleanup_registry();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmp);
    return fails ? 1 : 0;
}
