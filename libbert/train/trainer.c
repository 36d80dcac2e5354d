/* libbert/train/trainer.c - BERT and DistilBERT training: parameters,
 * forward with cache, backward, AdamW, schedule, save/load.  See
 * <libbert/bert_train.h>. */
#include "libbert/train/trainer.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/arch.h"
#include "libbert/internal.h"
#include "libbert/safetensors.h"
#include "libbert/train/ops.h"

bert_train_params bert_train_default_params(void)
{
    bert_train_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.task = BERT_TRAIN_SEQUENCE;
    p.lr = 5e-5f;
    p.weight_decay = 0.01f;
    p.beta1 = 0.9f;
    p.beta2 = 0.999f;
    p.eps = 1e-8f;
    p.max_grad_norm = 1.0f;
    p.seed = 42;
    p.n_threads = 1;
    p.dropout = 1;
    p.embedding_lr_scale = 1.0f;
    p.layer_lr_decay = 1.0f;
    return p;
}

/* ---- parameters -------------------------------------------------------- */

static int has_decay(int i)
{
    switch (i) {
    case P_WTE: case P_WPE: case P_WTT: case P_QKVW: case P_AOW: case P_FCW:
    case P_FC2W: case P_POOLW: case P_CLSW: case P_MTW: case P_EPW:
        return 1;
    default:
        return 0;
    }
}

/* Layer-wise decay: a parameter's depth is 0 in the embeddings, l + 1 in
 * encoder layer l, L + 1 in the heads (pooler, classifier, MLM head); it
 * learns at lr * decay^(L + 1 - depth). */
static int is_layer_param(int i)
{
    return i >= P_QKVW && i <= P_LN2B;
}

static int is_embedding_param(int i)
{
    return i <= P_LNEB || i == P_EPW || i == P_EPB;
}

static void fill_sizes(bert_trainer *t)
{
    size_t V = t->V, H = t->H, L = t->L, I = t->I, C = t->C, E = t->E;
    size_t *s = t->sizes;
    memset(s, 0, sizeof t->sizes);
    s[P_WTE] = V * E;
    s[P_WPE] = t->P * E;
    s[P_WTT] = t->TV * E;
    s[P_LNEW] = s[P_LNEB] = E;
    if (E != H) {
        s[P_EPW] = H * E;
        s[P_EPB] = H;
    }
    s[P_QKVW] = L * 3 * H * H;
    s[P_QKVB] = L * 3 * H;
    s[P_AOW] = L * H * H;
    s[P_AOB] = s[P_LN1W] = s[P_LN1B] = L * H;
    s[P_FCW] = L * I * H;
    s[P_FCB] = L * I;
    s[P_FC2W] = L * H * I;
    s[P_FC2B] = s[P_LN2W] = s[P_LN2B] = L * H;
    if (t->task == BERT_TRAIN_SEQUENCE) {
        s[P_POOLW] = H * H;
        s[P_POOLB] = H;
    }
    if (t->task != BERT_TRAIN_MLM) {
        s[P_CLSW] = C * H;
        s[P_CLSB] = C;
    } else {
        s[P_MTW] = H * H;
        s[P_MTB] = s[P_MLNW] = s[P_MLNB] = H;
        s[P_MBIAS] = V;
    }
    t->nparams = 0;
    for (int i = 0; i < P_COUNT; i++)
        t->nparams += s[i];
}

static void bind_views(bert_trainer *t);

/* n floats on a 64-byte boundary (zeroed if zero), NULL when out of
 * memory.  layout() starts every activation a whole number of 16 floats
 * into its buffer (and so do the parameters where, as in every BERT shape,
 * their sizes are multiples of 16), so a 16-column C tile's rows are
 * whole cache lines; from malloc's 16-byte boundary each straddled two.
 * (MLM training, L4 H256 on the Zen 3 VM: about 0.95 of the time.) */
static float *alloc64(size_t n, int zero)
{
    void *p = NULL;
    if (n > ((size_t)-1) / sizeof(float) ||
        !(p = bert__big_alloc((n ? n : 1) * sizeof(float))))
        return NULL;
    if (zero)
        memset(p, 0, n * sizeof(float));
    return p;
}

static void point(float *base, const size_t *sizes, float **out)
{
    for (int i = 0; i < P_COUNT; i++) {
        out[i] = sizes[i] ? base : NULL;
        base += sizes[i];
    }
}

static int is_layernorm_weight(int i)
{
    return i == P_LNEW || i == P_LN1W || i == P_LN2W || i == P_MLNW;
}

/* DistilBERT's sinusoidal_pos_embds (create_sinusoidal_embeddings):
 * row p, column j = sin (j even) or cos (j odd) of
 * p / 10000^(2 floor(j/2) / H). */
static void sinusoidal_positions(float *x, size_t P, size_t H)
{
    for (size_t p = 0; p < P; p++)
        for (size_t j = 0; j < H; j++) {
            double a = (double)p / pow(10000.0, (double)(j / 2 * 2) / (double)H);
            x[p * H + j] = (float)(j % 2 ? cos(a) : sin(a));
        }
}

/* Fresh init of tensor i: N(0, range) for matrices/embeddings, 1 for
 * LayerNorm weights, 0 for biases (as transformers' _init_weights). */
static void init_tensor(bert_trainer *t, int i)
{
    float *x = t->pt[i];
    size_t n = t->sizes[i];
    if (!x)
        return;
    if (i == P_WPE && t->freeze_wpe) {
        sinusoidal_positions(x, t->P, t->H);
    } else if (is_layernorm_weight(i)) {
        for (size_t k = 0; k < n; k++)
            x[k] = 1.0f;
    } else if (has_decay(i)) {
        for (size_t k = 0; k < n; k++)
            x[k] = (float)(t->init_range *
                           bert__t_normal(t->p.seed, 0xabc0000ULL + (uint64_t)i, k));
        if (i == P_WTE && t->cfg.pad_token_id >= 0 &&
            (size_t)t->cfg.pad_token_id < t->V)
            memset(x + (size_t)t->cfg.pad_token_id * t->E, 0,
                   t->E * sizeof(float));
    } else {
        memset(x, 0, n * sizeof(float));
    }
}

/* ---- tensor names ------------------------------------------------------ */

/* Where each tensor of the architecture's table (libbert/arch.h) lives in
 * the parameter slots; calls fn(name, ptr, rows, cols, slot) for each
 * (cols 0 = 1-D). */
typedef int (*slice_fn)(void *ctx, const char *name, float *p, size_t rows,
                        size_t cols, int i);

typedef struct {
    const bert_trainer *t;
    float *const *pt;
    slice_fn fn;
    void *ctx;
} slices;

static int slice_of(void *vctx, const bert_arch_tensor *x)
{
    static const int slot[][2] = {
        [BERT_R_WTE] = {P_WTE, P_WTE},     [BERT_R_WPE] = {P_WPE, P_WPE},
        [BERT_R_WTT] = {P_WTT, P_WTT},     [BERT_R_LNE] = {P_LNEW, P_LNEB},
        [BERT_R_EP] = {P_EPW, P_EPB},      [BERT_R_Q] = {P_QKVW, P_QKVB},
        [BERT_R_K] = {P_QKVW, P_QKVB},     [BERT_R_V] = {P_QKVW, P_QKVB},
        [BERT_R_AO] = {P_AOW, P_AOB},      [BERT_R_LN1] = {P_LN1W, P_LN1B},
        [BERT_R_FC] = {P_FCW, P_FCB},      [BERT_R_FC2] = {P_FC2W, P_FC2B},
        [BERT_R_LN2] = {P_LN2W, P_LN2B},   [BERT_R_POOL] = {P_POOLW, P_POOLB},
        [BERT_R_HEAD] = {P_POOLW, P_POOLB}, [BERT_R_CLS] = {P_CLSW, P_CLSB},
        [BERT_R_MT] = {P_MTW, P_MTB},      [BERT_R_MLN] = {P_MLNW, P_MLNB},
        [BERT_R_MBIAS] = {P_MBIAS, P_MBIAS}};
    const slices *S = vctx;
    int i = slot[x->role][x->bias];
    /* per-layer tensors are stacked [L, ...]; Q, K and V of a layer are
     * adjacent ([3H, H] and [3H]) */
    size_t n = x->d1 ? x->d0 * x->d1 : x->d0, at = 0;
    if (x->role >= BERT_R_Q && x->role <= BERT_R_V)
        at = (x->layer * 3 + (size_t)(x->role - BERT_R_Q)) * n;
    else if (x->role >= BERT_R_AO && x->role <= BERT_R_LN2)
        at = x->layer * n;
    return S->fn(S->ctx, x->name, S->pt[i] + at, x->d0, x->d1, i);
}

static int for_each_slice(const bert_trainer *t, float *const *pt, slice_fn fn,
                          void *ctx)
{
    const bert_arch *A = t->arch;
    int seq = t->task == BERT_TRAIN_SEQUENCE;
    bert_arch_shape shape = {t->V, t->P, t->sizes[P_WTT] ? t->TV : 0,
                             t->E, t->H, t->I, t->L,
                             t->sizes[P_CLSW] ? t->C : 0,
                             seq && !A->head, seq && A->head != NULL,
                             t->sizes[P_MTW] != 0};
    slices S = {t, pt, fn, ctx};
    return bert__arch_tensors(A, &shape, slice_of, &S);
}

/* ---- loading ----------------------------------------------------------- */

typedef struct {
    const bert_st_file *f;
    const bert_arch *arch;
    bert_error *err;
    const char *path;
    int fresh_head; /* a head tensor was not in the file */
} load_ctx;

static const bert_st_tensor *find_alias(const load_ctx *c, const char *name)
{
    const bert_arch *A = c->arch;
    const bert_st_tensor *x = bert__st_find(c->f, name);
    if (x)
        return x;
    size_t np = strlen(A->prefix);
    if (strncmp(name, A->prefix, np) == 0) /* *Model checkpoints: no prefix */
        return bert__st_find(c->f, name + np);
    if (A->mbias_alt && strcmp(name, A->mbias) == 0)
        return bert__st_find(c->f, A->mbias_alt);
    return NULL;
}

static int is_head(int i)
{
    return i >= P_POOLW && i <= P_MBIAS;
}

static int load_slice(void *vctx, const char *name, float *p, size_t rows,
                      size_t cols, int i)
{
    load_ctx *c = vctx;
    const bert_st_tensor *x = find_alias(c, name);
    int ok = x != NULL;
    if (ok) {
        if (cols == 0)
            ok = x->ndim == 1 && x->shape[0] == rows;
        else
            ok = x->ndim == 2 && x->shape[0] == rows && x->shape[1] == cols;
        if (!ok && !is_head(i))
            return bert__err(c->err, BERT_ESHAPE,
                             "%s: tensor %s has a shape that contradicts "
                             "config.json", c->path, name);
    }
    if (!ok) {
        if (is_head(i)) {
            c->fresh_head = 1;
            return 0; /* keep the fresh initialisation */
        }
        return bert__err(c->err, BERT_EMISSING, "%s: tensor %s is missing",
                         c->path, name);
    }
    bert__st_to_f32(x, p);
    return 0;
}

/* ---- create / free ----------------------------------------------------- */

int bert_trainer_create(const char *init_dir, const char *config_json,
                        const bert_train_params *params, bert_trainer **out,
                        bert_error *err)
{
    if (!out)
        return bert__err(err, BERT_EINVAL, "bert_trainer_create: out is NULL");
    *out = NULL;
    if ((init_dir == NULL) == (config_json == NULL))
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_create: give exactly one of init_dir "
                         "and config_json");
    bert_train_params p;
    if (BERT__PARAMS(p, params, bert_train_default_params, err))
        return BERT_EINVAL;
    if (!(p.layer_lr_decay > 0.0f && p.layer_lr_decay <= 1.0f))
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_create: layer_lr_decay %g is not in "
                         "(0, 1]", (double)p.layer_lr_decay);
    if (!(p.rdrop >= 0.0f && p.rdrop <= 1e6f))
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_create: rdrop %g is not a weight >= 0",
                         (double)p.rdrop);
    bert_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    t->p = p;
    t->task = t->p.task;
    if (t->task < BERT_TRAIN_SEQUENCE || t->task > BERT_TRAIN_MLM) {
        free(t);
        return bert__err(err, BERT_EINVAL, "bert_trainer_create: bad task");
    }
    if (t->task == BERT_TRAIN_MLM && p.rdrop > 0.0f) {
        free(t);
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_create: rdrop is for the sequence and "
                         "token tasks, not masked LM");
    }
    char path[4096];
    if (init_dir)
        snprintf(path, sizeof path, "%s/config.json", init_dir);
    else
        snprintf(path, sizeof path, "%s", config_json);
    int rc = bert__config_load(path, &t->cfg, err);
    if (rc) {
        free(t);
        return rc;
    }
    int roberta = t->cfg.pub.family == BERT_FAMILY_ROBERTA &&
                  strcmp(t->cfg.model_type, "roberta") == 0;
    int electra = t->cfg.pub.family == BERT_FAMILY_ELECTRA;
    if ((t->cfg.pub.family != BERT_FAMILY_BERT &&
         t->cfg.pub.family != BERT_FAMILY_DISTILBERT && !roberta &&
         !electra) ||
        ((roberta || electra) && t->task == BERT_TRAIN_MLM)) {
        /* XLM-RoBERTa (its names) and the MLM heads of RoBERTa (lm_head)
         * and ELECTRA (its generator) are not in the trainer */
        rc = bert__err(err, BERT_EUNSUPPORTED,
                       "%s: model_type \"%s\" cannot be trained%s; the "
                       "trainer fine-tunes BERT and DistilBERT models and "
                       "RoBERTa and ELECTRA sequence and token classifiers",
                       path, t->cfg.model_type,
                       roberta || electra ? " with the mlm task" : "");
        bert__config_free(&t->cfg);
        free(t);
        return rc;
    }
    const bert_config *c = &t->cfg.pub;
    t->init_range = t->cfg.init_range;
    t->qa_dropout = t->cfg.qa_dropout;
    t->arch = bert__arch_of(c->family);
    t->E = c->embedding_size ? c->embedding_size : c->hidden;
    t->cfg.pub.embedding_size = t->E; /* the forward reads it */
    /* BertFor*: classifier_dropout (default hidden_dropout_prob) for both
     * heads; DistilBertForSequenceClassification: seq_classif_dropout (which
     * config.c reads into classifier_dropout), ...ForTokenClassification:
     * the encoder's dropout. */
    t->head_dropout = c->is_distilbert && t->task == BERT_TRAIN_TOKEN
                          ? c->hidden_dropout
                          : c->classifier_dropout;
    /* transformers makes sinusoidal position embeddings and never trains
     * them (requires_grad = False) */
    t->freeze_wpe = c->is_distilbert && t->cfg.sinusoidal_pos;
    t->V = c->vocab_size;
    t->H = c->hidden;
    t->L = c->layers;
    t->NH = c->heads;
    t->I = c->intermediate;
    t->P = c->max_position;
    t->TV = c->type_vocab;
    t->act = c->act == BERT_ACT_GELU ? BERT_T_ACT_GELU
             : c->act == BERT_ACT_RELU ? BERT_T_ACT_RELU
                                       : BERT_T_ACT_GELU_TANH;
    /* labels */
    if (t->task != BERT_TRAIN_MLM) {
        size_t C = t->p.num_labels ? t->p.num_labels : c->num_labels;
        if (C == 0)
            C = 2;
        if (C > BERT_CFG_MAX_LABELS) {
            bert_trainer_free(t);
            return bert__err(err, BERT_EINVAL, "too many labels");
        }
        char **names = calloc(C, sizeof *names);
        if (!names) {
            bert_trainer_free(t);
            return bert__err(err, BERT_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < C; i++) {
            char buf[32];
            const char *s;
            if (t->p.labels && t->p.labels[i])
                s = t->p.labels[i];
            else if (t->cfg.labels && i < c->num_labels && C == c->num_labels)
                s = t->cfg.labels[i];
            else {
                snprintf(buf, sizeof buf, "LABEL_%zu", i);
                s = buf;
            }
            names[i] = strdup(s);
            if (!names[i]) {
                for (size_t k = 0; k < i; k++)
                    free(names[k]);
                free(names);
                bert_trainer_free(t);
                return bert__err(err, BERT_ENOMEM, "out of memory");
            }
        }
        if (t->cfg.labels)
            for (size_t i = 0; i < c->num_labels; i++)
                free(t->cfg.labels[i]);
        free(t->cfg.labels);
        t->cfg.labels = names;
        t->cfg.pub.num_labels = C;
        t->C = C;
    }
    t->cfg.pub.task = t->task == BERT_TRAIN_SEQUENCE ? BERT_TASK_SEQUENCE
                      : t->task == BERT_TRAIN_TOKEN  ? BERT_TASK_TOKEN
                                                     : BERT_TASK_BASE;
    /* A token model records how its labels become entities: the fit's
     * evaluation reads each word's tag from its first sub-token, so
     * bert-tag's default (config.json's aggregation_strategy) is "first"
     * and prints the entities the dev F1 counted. */
    if (t->task != BERT_TRAIN_TOKEN)
        t->cfg.aggregation = -1;
    else if (t->cfg.aggregation < 0)
        t->cfg.aggregation = BERT_AGG_FIRST;
    /* p = 1 would drop every activation (and scale the rest by 1/0) */
    const float pr[3] = {c->hidden_dropout, c->attention_dropout,
                         t->head_dropout};
    static const char *const nm[3] = {"hidden", "attention", "classifier"};
    for (int i = 0; i < 3 && t->p.dropout; i++)
        if (!(pr[i] < 1)) {
            rc = bert__err(err, BERT_EINVAL,
                           "%s: the %s dropout probability is %g: it would "
                           "drop every activation (use < 1, or train "
                           "without dropout)", path, nm[i], (double)pr[i]);
            bert_trainer_free(t);
            return rc;
        }
    fill_sizes(t);
    size_t n = t->nparams;
    t->params = alloc64(n, 0);
    t->grads = alloc64(n, 1);
    t->m = alloc64(n, 1);
    t->v = alloc64(n, 1);
    t->gemm = bert__gemm_ctx_create(t->p.n_threads < 1 ? 1 : t->p.n_threads,
                                    BERT_KERNELS_AUTO, NULL, 0);
    t->lw = calloc(t->L ? t->L : 1, sizeof *t->lw);
    t->lm = calloc(t->L ? t->L : 1, sizeof *t->lm);
    t->kl = calloc(t->L ? t->L : 1, sizeof *t->kl);
    if (!t->params || !t->grads || !t->m || !t->v || !t->gemm || !t->lw ||
        !t->lm || !t->kl) {
        bert_trainer_free(t);
        return bert__err(err, BERT_ENOMEM, "out of memory (%zu parameters)", n);
    }
    point(t->params, t->sizes, t->pt);
    bind_views(t); /* the parameters never move: once */
    point(t->grads, t->sizes, t->gt);
    for (int i = 0; i < P_COUNT; i++)
        init_tensor(t, i);
    if (init_dir) {
        bert_st_file f;
        snprintf(path, sizeof path, "%s/model.safetensors", init_dir);
        rc = bert__st_open(path, &f, err);
        if (rc) {
            bert_trainer_free(t);
            return rc;
        }
        load_ctx lc = {&f, t->arch, err, path, 0};
        rc = for_each_slice(t, t->pt, load_slice, &lc);
        t->fresh_head = lc.fresh_head;
        bert__st_close(&f);
        if (rc) {
            bert_trainer_free(t);
            return rc;
        }
    }
    *out = t;
    return BERT_OK;
}

void bert_trainer_free(bert_trainer *t)
{
    if (!t)
        return;
    bert__config_free(&t->cfg);
    free(t->params);
    free(t->grads);
    free(t->m);
    free(t->v);
    free(t->acts);
    free(t->ibuf);
    free(t->in);
    free(t->rd);
    free(t->lw);
    free(t->lm);
    free(t->kl);
    bert__gemm_ctx_free(t->gemm);
    free(t);
}

/* The getters take NULL (0, NULL), as the fallible calls return an error. */
size_t bert_trainer_steps(const bert_trainer *t) { return t ? t->steps : 0; }
const bert_config *bert_trainer_config(const bert_trainer *t)
{
    return t ? &t->cfg.pub : NULL;
}
const char *bert_trainer_label(const bert_trainer *t, size_t id)
{
    return (t && t->cfg.labels && id < t->C) ? t->cfg.labels[id] : NULL;
}

size_t bert_trainer_num_params(const bert_trainer *t)
{
    return t ? t->nparams : 0;
}

size_t bert_trainer_max_length(const bert_trainer *t,
                               const bert_tokenizer *tok)
{
    if (!t || !tok)
        return 0;
    /* as bert_model_load computes it from the directory
     * bert_trainer_save_model_dir writes: WordPiece's model_max_length is
     * written as the positions, BPE's tokenizer files are copied with
     * theirs.  P > pos_offset: bert__config_load checks it. */
    size_t n = t->P - t->cfg.pos_offset;
    if (bert_tokenizer_get_kind(tok) == BERT_TOKENIZER_BPE) {
        size_t ml = bert_tokenizer_model_max_length(tok);
        if (ml > 0 && ml < n)
            n = ml;
    }
    return n;
}

double bert_trainer_lr(const bert_trainer *t)
{
    if (!t)
        return 0;
    double s = (double)t->steps, w = (double)t->p.warmup_steps;
    double T = (double)t->p.total_steps;
    double f;
    if (s < w)
        f = s / (w > 1 ? w : 1);
    else if (t->p.total_steps == 0)
        f = 1.0;
    else {
        double r = T - w;
        f = (T - s) / (r > 1 ? r : 1);
        if (f < 0)
            f = 0;
    }
    return t->p.lr * f;
}

/* ---- the forward's view of the parameters ------------------------------ */

/* The encoder's forward (encoder.c) reads weights as a loaded model holds
 * them: t->ew, t->lw and t->lm point into the parameter slots (Q, K and V
 * are row blocks of the layer's stacked [3H, H]), set once at create since
 * the slots never move; the matrices are never packed, as they change
 * every step. */
static void bind_views(bert_trainer *t)
{
    size_t H = t->H, I = t->I;
    float **pt = t->pt;
    bert_weights *w = &t->ew;
    memset(w, 0, sizeof *w);
    w->word_emb = pt[P_WTE];
    w->pos_emb = pt[P_WPE];
    w->type_emb = pt[P_WTT];
    w->emb_ln_w = pt[P_LNEW];
    w->emb_ln_b = pt[P_LNEB];
    w->emb_proj_w = pt[P_EPW];
    w->emb_proj_b = pt[P_EPB];
    w->layers = t->lw;
    for (size_t l = 0; l < t->L; l++) {
        bert_layer_w *lw = &t->lw[l];
        const float *qw = pt[P_QKVW] + l * 3 * H * H;
        const float *qb = pt[P_QKVB] + l * 3 * H;
        lw->q_w = qw;
        lw->k_w = qw + H * H;
        lw->v_w = qw + 2 * H * H;
        lw->q_b = qb;
        lw->k_b = qb + H;
        lw->v_b = qb + 2 * H;
        lw->o_w = pt[P_AOW] + l * H * H;
        lw->o_b = pt[P_AOB] + l * H;
        lw->ln1_w = pt[P_LN1W] + l * H;
        lw->ln1_b = pt[P_LN1B] + l * H;
        lw->f1_w = pt[P_FCW] + l * I * H;
        lw->f1_b = pt[P_FCB] + l * I;
        lw->f2_w = pt[P_FC2W] + l * H * I;
        lw->f2_b = pt[P_FC2B] + l * H;
        lw->ln2_w = pt[P_LN2W] + l * H;
        lw->ln2_b = pt[P_LN2B] + l * H;
        bert_layer_mats *m = &t->lm[l];
        const float *ws[6] = {lw->q_w, lw->k_w, lw->v_w, lw->o_w, lw->f1_w,
                              lw->f2_w};
        bert_wmat *ms[6] = {&m->q, &m->k, &m->v, &m->o, &m->f1, &m->f2};
        const size_t n[6] = {H, H, H, H, I, H}, k[6] = {H, H, H, H, H, I};
        for (int j = 0; j < 6; j++)
            *ms[j] = (bert_wmat){ws[j], NULL, n[j], k[j], BERT_PRECISION_FP32};
    }
}

/* ---- activation layout ------------------------------------------------- */

/* Everything on the packed rows: N real tokens, no padding. */
typedef struct {
    float *emb, *emean, *erstd, *x0, *x0e, *dx0e; /* x0e, dx0e: (N,E) before
                                                     embeddings_project */
    float *qkv, *att, *attd, *atty, *r1, *m1, *s1, *x1, *fch, *fca, *r2,
        *m2, *s2, *x2; /* [L] stacked; qkv: Q, K, V (N,H) blocks */
    float *cls, *ppre, *pout, *hx, *logits;
    float *mx, *mtpre, *mta, *mln, *mm, *ms;
    float *tmp;
    float *dA, *dB, *dqkv, *datty, *dfch, *dfca, *ascr, *dlogits, *dh1, *dh2,
        *dh3;
} acts_t;

/* na: attention probabilities of one layer, NH * sum of n_b^2. */
static int layout(bert_trainer *t, size_t B, size_t N, size_t na, size_t M,
                  acts_t *a)
{
    size_t H = t->H, L = t->L, I = t->I, C = t->C;
    size_t hr = t->task == BERT_TRAIN_SEQUENCE ? B
                : t->task == BERT_TRAIN_TOKEN  ? N
                                               : M;
    size_t lc = t->task == BERT_TRAIN_MLM ? M * t->V : hr * C;
    size_t ad = t->cfg.pub.attention_dropout > 0 ? na : 0;
    struct {
        float **p;
        size_t n;
    } list[] = {
        {&a->emb, N * t->E}, {&a->emean, N}, {&a->erstd, N}, {&a->x0, N * H},
        {&a->x0e, t->sizes[P_EPW] ? N * t->E : 0},
        {&a->dx0e, t->sizes[P_EPW] ? N * t->E : 0},
        /* the dropped-out probabilities are not kept: backward draws the
         * mask again, so every layer's forward shares one buffer */
        {&a->qkv, L * N * 3 * H}, {&a->att, L * na}, {&a->attd, ad},
        {&a->atty, L * N * H},
        {&a->r1, L * N * H}, {&a->m1, L * N}, {&a->s1, L * N},
        {&a->x1, L * N * H}, {&a->fch, L * N * I}, {&a->fca, L * N * I},
        {&a->r2, L * N * H}, {&a->m2, L * N}, {&a->s2, L * N},
        {&a->x2, L * N * H},
        {&a->cls, B * H}, {&a->ppre, B * H}, {&a->pout, B * H},
        {&a->hx, hr * H}, {&a->logits, lc},
        {&a->mx, M * H}, {&a->mtpre, M * H}, {&a->mta, M * H},
        {&a->mln, M * H}, {&a->mm, M}, {&a->ms, M}, {&a->tmp, N * H},
        {&a->dA, N * H}, {&a->dB, N * H}, {&a->dqkv, N * 3 * H},
        {&a->datty, N * H}, {&a->dfch, N * I}, {&a->dfca, N * I},
        {&a->ascr, na}, {&a->dlogits, lc}, {&a->dh1, (hr > B ? hr : B) * H},
        {&a->dh2, (hr > B ? hr : B) * H}, {&a->dh3, (hr > B ? hr : B) * H},
    };
    size_t total = 0, cnt = sizeof list / sizeof list[0];
    for (size_t i = 0; i < cnt; i++)
        total += (list[i].n + 15) & ~(size_t)15;
    if (total > t->acts_cap) {
        /* (nothing in the old buffers is kept: every step lays them out
         * anew) */
        float *nb = alloc64(total, 0);
        if (!nb)
            return BERT_ENOMEM;
        free(t->acts);
        t->acts = nb;
        t->acts_cap = total;
    }
    float *p = t->acts;
    for (size_t i = 0; i < cnt; i++) {
        *list[i].p = list[i].n ? p : NULL;
        p += (list[i].n + 15) & ~(size_t)15;
    }
    return BERT_OK;
}

/* The batch's rows packed (padding dropped): ids, type ids, labels (-1
 * where none) and positions of N rows, and the sequences as bert_input.
 * Grown on demand in t->ibuf / t->in, which also hold the MLM rows and
 * their targets. */
static int pack(bert_trainer *t, const bert_train_batch *bt, size_t N,
                int32_t **ids, int32_t **types, int32_t **labels,
                int32_t **pos, int32_t **mrow, int32_t **mtgt)
{
    size_t B = bt->batch, T = bt->seq_len;
    if (6 * N > t->ibuf_cap) {
        int32_t *nb = realloc(t->ibuf, 6 * N * sizeof(int32_t));
        if (!nb)
            return BERT_ENOMEM;
        t->ibuf = nb;
        t->ibuf_cap = 6 * N;
    }
    if (B > t->in_cap) {
        bert_input *ni = realloc(t->in, B * sizeof *ni);
        if (!ni)
            return BERT_ENOMEM;
        t->in = ni;
        t->in_cap = B;
    }
    *ids = t->ibuf;
    *types = t->ibuf + N;
    *labels = t->ibuf + 2 * N;
    *pos = t->ibuf + 3 * N;
    *mrow = t->ibuf + 4 * N;
    *mtgt = t->ibuf + 5 * N;
    size_t r = 0;
    for (size_t b = 0; b < B; b++) {
        size_t n = bt->lengths[b];
        t->in[b] = (bert_input){*ids + r, *types + r, n};
        for (size_t i = 0; i < n; i++, r++) {
            (*ids)[r] = bt->ids[b * T + i];
            (*types)[r] = bt->type_ids && t->sizes[P_WTT]
                              ? bt->type_ids[b * T + i]
                              : 0;
            (*labels)[r] = bt->labels && t->task != BERT_TRAIN_SEQUENCE
                               ? bt->labels[b * T + i]
                               : -1;
        }
    }
    return BERT_OK;
}

/* ---- forward / backward ------------------------------------------------ */

/* R-Drop's batch: BT's rows, then the same rows again (row B + b = row b),
 * in t->rd, so that the one forward gives every example two dropout masks
 * (the masks are indexed by position in the packed batch). */
static int twice(bert_trainer *t, const bert_train_batch *bt,
                 bert_train_batch *out)
{
    size_t B = bt->batch;
    if (bt->seq_len > SIZE_MAX / 32 / B) /* the sizes below stay in range */
        return BERT_ENOMEM;
    size_t BT = B * bt->seq_len;
    size_t nlab = t->task == BERT_TRAIN_SEQUENCE ? B : BT;
    /* ids, types, labels, then the lengths (size_t, 8-aligned) */
    size_t ni = 2 * (2 * BT + nlab), nl = 2 * B;
    size_t bytes = ((ni * sizeof(int32_t) + 7) & ~(size_t)7) + nl * sizeof(size_t);
    if (bytes > t->rd_cap) {
        void *nb = realloc(t->rd, bytes);
        if (!nb)
            return BERT_ENOMEM;
        t->rd = nb;
        t->rd_cap = bytes;
    }
    int32_t *ids = t->rd, *types = ids + 2 * BT, *labels = types + 2 * BT;
    size_t *lens = (size_t *)((char *)t->rd + bytes - nl * sizeof(size_t));
    for (int k = 0; k < 2; k++) {
        memcpy(ids + k * BT, bt->ids, BT * sizeof *ids);
        if (bt->type_ids)
            memcpy(types + k * BT, bt->type_ids, BT * sizeof *types);
        if (bt->labels)
            memcpy(labels + k * nlab, bt->labels, nlab * sizeof *labels);
        memcpy(lens + k * B, bt->lengths, B * sizeof *lens);
    }
    *out = (bert_train_batch){2 * B, bt->seq_len, ids,
                              bt->type_ids ? types : NULL, lens,
                              bt->labels ? labels : NULL};
    return BERT_OK;
}

int bert__t_run(bert_trainer *t, const bert_train_batch *bt, int train,
                int backward, float weight, float *logits_out, double *loss_out,
                bert_error *err)
{
    if (!bt || !bt->ids || !bt->lengths || bt->batch == 0 || bt->seq_len == 0)
        return bert__err(err, BERT_EINVAL, "empty or incomplete batch");
    /* R-Drop doubles a training batch; its logits_out is the first pass's
     * (bert_trainer_create refuses rdrop for masked LM) */
    int rdrop = train && t->p.rdrop > 0.0f;
    bert_train_batch two;
    if (rdrop) {
        if (twice(t, bt, &two))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        bt = &two;
    }
    size_t B = bt->batch, T = bt->seq_len, Bout = rdrop ? B / 2 : B;
    size_t H = t->H, L = t->L, NH = t->NH, I = t->I, C = t->C, V = t->V;
    int nth = t->p.n_threads < 1 ? 1 : t->p.n_threads;
    if (T + t->cfg.pos_offset > t->P)
        return bert__err(err, BERT_EINVAL,
                         "sequence length %zu exceeds max_position_embeddings %zu%s",
                         T, t->P, t->cfg.pos_offset ? " minus padding_idx + 1" : "");
    size_t N = 0, na = 0;
    for (size_t b = 0; b < B; b++) {
        size_t n = bt->lengths[b];
        if (n < 1 || n > T)
            return bert__err(err, BERT_EINVAL, "row %zu: length %zu not in 1..%zu",
                             b, n, T);
        N += n;
        na += NH * n * n;
    }
    for (size_t i = 0; i < B * T; i++) {
        if (bt->ids[i] < 0 || (size_t)bt->ids[i] >= V)
            return bert__err(err, BERT_EINVAL, "token id %d out of range",
                             (int)bt->ids[i]);
        /* DistilBERT has no token types: its type ids are ignored, as
         * transformers' DistilBERT does not even take them */
        if (bt->type_ids && t->sizes[P_WTT] &&
            (bt->type_ids[i] < 0 || (size_t)bt->type_ids[i] >= t->TV))
            return bert__err(err, BERT_EINVAL, "type id %d out of range",
                             (int)bt->type_ids[i]);
    }
    if ((backward || loss_out) && !bt->labels)
        return bert__err(err, BERT_EINVAL, "batch without labels");
    size_t nlab = t->task == BERT_TRAIN_SEQUENCE ? B : B * T;
    if (bt->labels) {
        for (size_t i = 0; i < nlab; i++) {
            int32_t y = bt->labels[i];
            size_t lim = t->task == BERT_TRAIN_MLM ? V : C;
            if (y >= 0 && (size_t)y >= lim)
                return bert__err(err, BERT_EINVAL, "label %d out of range", (int)y);
            if (t->task == BERT_TRAIN_SEQUENCE && y < 0)
                return bert__err(err, BERT_EINVAL, "negative sequence label");
        }
    }
    int32_t *ids, *types, *labels, *pos, *mrow, *mtgt;
    if (pack(t, bt, N, &ids, &types, &labels, &pos, &mrow, &mtgt))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    /* labels on padding are not read: the packed rows are the real ones */
    size_t M = 0;
    if (t->task == BERT_TRAIN_MLM)
        for (size_t i = 0; i < N; i++)
            M += labels[i] >= 0;
    acts_t a;
    if (layout(t, B, N, na, M, &a))
        return bert__err(err, BERT_ENOMEM, "out of memory for activations");
    const bert_config *cf = &t->cfg.pub;
    float eps = cf->layer_norm_eps;
    int drop = train && t->p.dropout;
    float ph = drop ? cf->hidden_dropout : 0.0f;
    float pa = drop ? cf->attention_dropout : 0.0f;
    float pao = t->arch->ao_dropout ? ph : 0.0f;
    float pc = drop ? t->head_dropout : 0.0f;
    uint64_t seed = t->p.seed, mi = t->micro;
    void *rn = t->gemm;
    float **pt = t->pt, **gt = t->gt;
    size_t E = t->E;

    /* the encoder: the inference forward, keeping what backward reads */
    size_t maxn = 0;
    for (size_t b = 0; b < B; b++)
        maxn = bt->lengths[b] > maxn ? bt->lengths[b] : maxn;
    bert__enc enc = {&t->cfg, &t->ew, t->lm, t->gemm, nth,
                     NULL,    NULL,   NULL,  NULL,    NULL,
                     a.tmp,   NULL,   NULL,  maxn,    NULL,
                     0,       0};
    float *x0e = pt[P_EPW] ? a.x0e : a.x0;
    bert__keep kp = {a.emb, a.emean, a.erstd, x0e, a.x0, pos, t->kl,
                     ph,    pa,      pao,     seed, mi};
    for (size_t l = 0; l < L; l++) {
        float *qkv = a.qkv + l * N * 3 * H;
        t->kl[l] = (bert__keep_layer){
            qkv, qkv + N * H, qkv + 2 * N * H, a.att + l * na,
            a.attd, a.atty + l * N * H,
            a.r1 + l * N * H, a.m1 + l * N, a.s1 + l * N, a.x1 + l * N * H,
            a.fch + l * N * I, a.fca + l * N * I, a.r2 + l * N * H,
            a.m2 + l * N, a.s2 + l * N, a.x2 + l * N * H};
    }
    bert__encode(&enc, t->in, B, N, 0, &kp);
    const float *x = L ? a.x2 + (L - 1) * N * H : a.x0;

    /* heads (sequence: [CLS] -> pooler dense + tanh for BERT, pre_classifier
     * + ReLU for DistilBERT -> dropout -> classifier) */
    double loss = 0.0;
    size_t nvalid = 0;
    if (t->task == BERT_TRAIN_SEQUENCE) {
        for (size_t b = 0; b < B; b++)
            memcpy(a.cls + b * H, x + (t->in[b].ids - ids) * H,
                   H * sizeof(float));
        if (t->arch->head_in_dropout)
            bert__t_dropout(a.cls, B * H, pc, seed,
                            bert__t_stream(mi, 0, BERT_T_SITE_HEAD_IN), nth);
        bert__t_matmul_forward(a.ppre, a.cls, pt[P_POOLW], pt[P_POOLB], B, H,
                               H, rn);
        bert__t_act_forward(t->arch->pool_act, a.pout, a.ppre, B * H, nth);
        memcpy(a.hx, a.pout, B * H * sizeof(float));
        bert__t_dropout(a.hx, B * H, pc, seed,
                        bert__t_stream(mi, 0, BERT_T_SITE_HEAD), nth);
        bert__t_matmul_forward(a.logits, a.hx, pt[P_CLSW], pt[P_CLSB], B, H, C,
                               rn);
        if (logits_out)
            memcpy(logits_out, a.logits, Bout * C * sizeof(float));
        nvalid = B;
        if (bt->labels)
            loss = bert__t_crossentropy(backward ? a.dlogits : NULL, a.logits,
                                        bt->labels, B, C,
                                        weight / (float)B, nth);
        if (bt->labels && rdrop)
            loss += t->p.rdrop *
                    bert__t_sym_kl(backward ? a.dlogits : NULL, a.logits, NULL,
                                   B / 2, C, weight * t->p.rdrop / (float)B);
    } else if (t->task == BERT_TRAIN_TOKEN) {
        memcpy(a.hx, x, N * H * sizeof(float));
        bert__t_dropout(a.hx, N * H, pc, seed,
                        bert__t_stream(mi, 0, BERT_T_SITE_HEAD), nth);
        bert__t_matmul_forward(a.logits, a.hx, pt[P_CLSW], pt[P_CLSB], N, H, C,
                               rn);
        if (logits_out) /* back to the batch's padded rows */
            for (size_t b = 0; b < Bout; b++) {
                size_t n = bt->lengths[b], r = (size_t)(t->in[b].ids - ids);
                memcpy(logits_out + b * T * C, a.logits + r * C,
                       n * C * sizeof(float));
                memset(logits_out + (b * T + n) * C, 0,
                       (T - n) * C * sizeof(float));
            }
        if (bt->labels) {
            for (size_t i = 0; i < N; i++)
                nvalid += labels[i] >= 0;
            loss = bert__t_crossentropy(
                backward ? a.dlogits : NULL, a.logits, labels, N, C,
                nvalid ? weight / (float)nvalid : 0.0f, nth);
            /* the second pass's rows are the first's, N / 2 further on */
            if (rdrop && nvalid)
                loss += t->p.rdrop *
                        bert__t_sym_kl(backward ? a.dlogits : NULL, a.logits,
                                       labels, N / 2, C,
                                       weight * t->p.rdrop / (float)nvalid);
        }
    } else if (M > 0) {
        size_t k = 0;
        for (size_t i = 0; i < N; i++)
            if (labels[i] >= 0) {
                mrow[k] = (int32_t)i;
                mtgt[k] = labels[i];
                memcpy(a.mx + k * H, x + i * H, H * sizeof(float));
                k++;
            }
        bert__t_matmul_forward(a.mtpre, a.mx, pt[P_MTW], pt[P_MTB], M, H, H, rn);
        bert__t_act_forward(t->act, a.mta, a.mtpre, M * H, nth);
        bert__t_layernorm_forward(a.mln, a.mm, a.ms, a.mta, pt[P_MLNW],
                                  pt[P_MLNB], M, H, eps, nth);
        bert__t_matmul_forward(a.logits, a.mln, pt[P_WTE], pt[P_MBIAS], M, H, V,
                               rn);
        nvalid = M;
        if (logits_out) /* the scored positions' rows, in batch order */
            memcpy(logits_out, a.logits, M * V * sizeof(float));
        loss = bert__t_crossentropy(backward ? a.dlogits : NULL, a.logits, mtgt,
                                    M, V, weight / (float)M, nth);
    }
    if (loss_out)
        *loss_out = nvalid ? loss / (double)nvalid : 0.0;
    if (!backward) {
        if (train)
            t->micro++;
        return BERT_OK;
    }

    /* ---- backward ---- */
    float *dA = a.dA, *dB = a.dB;
    memset(dA, 0, N * H * sizeof(float));
    if (t->task == BERT_TRAIN_SEQUENCE) {
        memset(a.dh1, 0, B * H * sizeof(float));
        bert__t_matmul_backward(a.dh1, gt[P_CLSW], gt[P_CLSB], a.dlogits, a.hx,
                                pt[P_CLSW], B, H, C, rn, nth);
        bert__t_dropout(a.dh1, B * H, pc, seed,
                        bert__t_stream(mi, 0, BERT_T_SITE_HEAD), nth);
        memset(a.dh2, 0, B * H * sizeof(float));
        bert__t_act_backward(t->arch->pool_act, a.dh2, a.dh1, a.ppre, B * H,
                             nth);
        memset(a.dh3, 0, B * H * sizeof(float));
        bert__t_matmul_backward(a.dh3, gt[P_POOLW], gt[P_POOLB], a.dh2, a.cls,
                                pt[P_POOLW], B, H, H, rn, nth);
        if (t->arch->head_in_dropout)
            bert__t_dropout(a.dh3, B * H, pc, seed,
                            bert__t_stream(mi, 0, BERT_T_SITE_HEAD_IN), nth);
        for (size_t b = 0; b < B; b++)
            memcpy(dA + (t->in[b].ids - ids) * H, a.dh3 + b * H,
                   H * sizeof(float));
    } else if (t->task == BERT_TRAIN_TOKEN) {
        bert__t_matmul_backward(dA, gt[P_CLSW], gt[P_CLSB], a.dlogits, a.hx,
                                pt[P_CLSW], N, H, C, rn, nth);
        bert__t_dropout(dA, N * H, pc, seed,
                        bert__t_stream(mi, 0, BERT_T_SITE_HEAD), nth);
    } else if (M > 0) {
        memset(a.dh1, 0, M * H * sizeof(float));
        bert__t_matmul_backward(a.dh1, gt[P_WTE], gt[P_MBIAS], a.dlogits, a.mln,
                                pt[P_WTE], M, H, V, rn, nth);
        memset(a.dh2, 0, M * H * sizeof(float));
        bert__t_layernorm_backward(a.dh2, gt[P_MLNW], gt[P_MLNB], a.dh1, a.mta,
                                   pt[P_MLNW], a.mm, a.ms, M, H, nth);
        memset(a.dh3, 0, M * H * sizeof(float));
        bert__t_act_backward(t->act, a.dh3, a.dh2, a.mtpre, M * H, nth);
        memset(a.dh1, 0, M * H * sizeof(float));
        bert__t_matmul_backward(a.dh1, gt[P_MTW], gt[P_MTB], a.dh3, a.mx,
                                pt[P_MTW], M, H, H, rn, nth);
        for (size_t k = 0; k < M; k++)
            memcpy(dA + (size_t)mrow[k] * H, a.dh1 + k * H, H * sizeof(float));
    }
    for (size_t l = L; l-- > 0;) {
        const float *xin = l ? a.x2 + (l - 1) * N * H : a.x0;
        const bert__keep_layer *K = &t->kl[l];
        /* LN2 */
        memset(dB, 0, N * H * sizeof(float));
        bert__t_layernorm_backward(dB, gt[P_LN2W] + l * H, gt[P_LN2B] + l * H,
                                   dA, K->r2, pt[P_LN2W] + l * H, K->mean2,
                                   K->rstd2, N, H, nth);
        memcpy(dA, dB, N * H * sizeof(float)); /* residual: d x1 */
        bert__t_dropout(dB, N * H, ph, seed,
                        bert__t_stream(mi, l, BERT_T_SITE_FFN), nth);
        memset(a.dfca, 0, N * I * sizeof(float));
        bert__t_matmul_backward(a.dfca, gt[P_FC2W] + l * H * I,
                                gt[P_FC2B] + l * H, dB, K->fca,
                                pt[P_FC2W] + l * H * I, N, I, H, rn, nth);
        memset(a.dfch, 0, N * I * sizeof(float));
        bert__t_act_backward(t->act, a.dfch, a.dfca, K->fch, N * I, nth);
        bert__t_matmul_backward(dA, gt[P_FCW] + l * I * H, gt[P_FCB] + l * I,
                                a.dfch, K->x1, pt[P_FCW] + l * I * H, N, H, I,
                                rn, nth);
        /* LN1 */
        memset(dB, 0, N * H * sizeof(float));
        bert__t_layernorm_backward(dB, gt[P_LN1W] + l * H, gt[P_LN1B] + l * H,
                                   dA, K->r1, pt[P_LN1W] + l * H, K->mean1,
                                   K->rstd1, N, H, nth);
        memcpy(dA, dB, N * H * sizeof(float)); /* residual: d xin */
        bert__t_dropout(dB, N * H, pao, seed,
                        bert__t_stream(mi, l, BERT_T_SITE_AO), nth);
        memset(a.datty, 0, N * H * sizeof(float));
        bert__t_matmul_backward(a.datty, gt[P_AOW] + l * H * H,
                                gt[P_AOB] + l * H, dB, K->ctx,
                                pt[P_AOW] + l * H * H, N, H, H, rn, nth);
        memset(a.dqkv, 0, N * 3 * H * sizeof(float));
        float *dq = a.dqkv, *dk = dq + N * H, *dv = dk + N * H;
        bert__t_attention_backward(dq, dk, dv, a.ascr, a.datty, K->q, K->k,
                                   K->v, H, K->probs, bt->lengths, B, H, NH,
                                   pa, seed,
                                   bert__t_stream(mi, l, BERT_T_SITE_ATT), nth,
                                   rn);
        /* Q, K and V: row blocks of the layer's [3H, H] */
        for (size_t j = 0; j < 3; j++)
            bert__t_matmul_backward(dA, gt[P_QKVW] + (l * 3 + j) * H * H,
                                    gt[P_QKVB] + (l * 3 + j) * H,
                                    a.dqkv + j * N * H, xin,
                                    pt[P_QKVW] + (l * 3 + j) * H * H, N, H, H,
                                    rn, nth);
    }
    float *dx0e = dA;
    if (pt[P_EPW]) {
        dx0e = a.dx0e;
        memset(dx0e, 0, N * E * sizeof(float));
        bert__t_matmul_backward(dx0e, gt[P_EPW], gt[P_EPB], dA, x0e,
                                pt[P_EPW], N, E, H, rn, nth);
    }
    bert__t_dropout(dx0e, N * E, ph, seed,
                    bert__t_stream(mi, 0, BERT_T_SITE_EMB), nth);
    memset(dB, 0, N * E * sizeof(float));
    bert__t_layernorm_backward(dB, gt[P_LNEW], gt[P_LNEB], dx0e, a.emb,
                               pt[P_LNEW], a.emean, a.erstd, N, E, nth);
    bert__t_embed_backward(gt[P_WTE], gt[P_WPE], gt[P_WTT], dB, ids,
                           gt[P_WTT] ? types : NULL, pos, N, E);
    if (train)
        t->micro++;
    return BERT_OK;
}

int bert_trainer_accumulate(bert_trainer *t, const bert_train_batch *batch,
                            float weight, double *loss, bert_error *err)
{
    if (!t)
        return bert__err(err, BERT_EINVAL, "trainer is NULL");
    return bert__t_run(t, batch, 1, 1, weight, NULL, loss, err);
}

int bert_trainer_predict(bert_trainer *t, const bert_train_batch *batch,
                         float *logits, double *loss, bert_error *err)
{
    if (!t)
        return bert__err(err, BERT_EINVAL, "trainer is NULL");
    if (loss && !batch->labels)
        loss = NULL;
    return bert__t_run(t, batch, 0, 0, 0.0f, logits, loss, err);
}

int bert_trainer_update(bert_trainer *t, double *grad_norm, bert_error *err)
{
    if (!t)
        return bert__err(err, BERT_EINVAL, "trainer is NULL");
    if (t->freeze_wpe) /* not a trainable parameter: no part in the norm */
        memset(t->gt[P_WPE], 0, t->sizes[P_WPE] * sizeof(float));
    double ss = 0.0;
    for (size_t i = 0; i < t->nparams; i++)
        ss += (double)t->grads[i] * t->grads[i];
    double norm = sqrt(ss);
    if (grad_norm)
        *grad_norm = norm;
    float clip = 1.0f;
    if (t->p.max_grad_norm > 0 && norm > t->p.max_grad_norm)
        clip = (float)(t->p.max_grad_norm / (norm + 1e-6));
    if (!isfinite(norm))
        return bert__err(err, BERT_EINVAL,
                         "gradient is not finite (learning rate too high?)");
    float lr0 = (float)bert_trainer_lr(t);
    size_t step = t->steps + 1;
    float b1 = t->p.beta1, b2 = t->p.beta2;
    float bc1 = 1.0f - powf(b1, (float)step), bc2 = 1.0f - powf(b2, (float)step);
    float sbc2 = sqrtf(bc2);
    int nth = t->p.n_threads < 1 ? 1 : t->p.n_threads;
    for (int k = 0; k < P_COUNT; k++) {
        float *p = t->pt[k], *g = t->gt[k];
        if (!p || (k == P_WPE && t->freeze_wpe))
            continue;
        size_t off = (size_t)(p - t->params), n = t->sizes[k];
        float *m = t->m + off, *v = t->v + off;
        float wd = has_decay(k) ? t->p.weight_decay : 0.0f;
        float eps = t->p.eps;
        float lr = k == P_WTE ? lr0 * t->p.embedding_lr_scale : lr0;
        /* the layer kinds hold L layers one after the other: a slice each */
        int layer = is_layer_param(k) && t->L > 0;
        size_t parts = layer ? t->L : 1;
        float d = t->p.layer_lr_decay;
        if (is_embedding_param(k))
            lr *= powf(d, (float)(t->L + 1));
        for (size_t l = 0; l < parts; l++) {
            size_t i0 = l * (n / parts), i1 = i0 + n / parts;
            float lrl = layer ? lr * powf(d, (float)(t->L - l)) : lr;
#pragma omp parallel for schedule(static) num_threads(nth)
            for (size_t i = i0; i < i1; i++) {
                float gi = g[i] * clip;
                p[i] -= lrl * wd * p[i];
                m[i] = b1 * m[i] + (1.0f - b1) * gi;
                v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
                p[i] -= (lrl / bc1) * m[i] / (sqrtf(v[i]) / sbc2 + eps);
                g[i] = 0.0f;
            }
        }
    }
    t->steps = step;
    return BERT_OK;
}

/* ---- saving ------------------------------------------------------------ */

typedef struct {
    bert_st_wtensor *w;
    size_t n;
} save_ctx;

static int save_slice(void *vctx, const char *name, float *p, size_t rows,
                      size_t cols, int i)
{
    save_ctx *c = vctx;
    bert_st_wtensor *w = &c->w[c->n];
    memset(w, 0, sizeof *w);
    w->name = strdup(name);
    if (!w->name)
        return BERT_ENOMEM;
    w->dtype = BERT_DT_F32;
    w->ndim = cols ? 2 : 1;
    w->shape[0] = rows;
    w->shape[1] = cols;
    w->data = p;
    c->n++;
    return 0;
}

static int count_slice(void *vctx, const char *name, float *p, size_t rows,
                       size_t cols, int i)
{
    (*(size_t *)vctx)++;
    return 0;
}

static int cmp_wt(const void *a, const void *b)
{
    return strcmp(((const bert_st_wtensor *)a)->name,
                  ((const bert_st_wtensor *)b)->name);
}

int bert_trainer_save(const bert_trainer *t, const char *dir, bert_error *err)
{
    if (!t || !dir)
        return bert__err(err, BERT_EINVAL, "bert_trainer_save: NULL argument");
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = bert__config_write(
        &t->cfg, t->arch->arch[t->task - BERT_TRAIN_SEQUENCE], path, err);
    if (rc)
        return rc;
    size_t n = 0;
    for_each_slice(t, t->pt, count_slice, &n);
    save_ctx c = {calloc(n, sizeof(bert_st_wtensor)), 0};
    if (!c.w)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    rc = for_each_slice(t, t->pt, save_slice, &c);
    if (!rc) {
        qsort(c.w, c.n, sizeof *c.w, cmp_wt);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        rc = bert__st_write(path, c.w, c.n, err);
    } else {
        rc = bert__err(err, BERT_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < c.n; i++)
        free((void *)c.w[i].name);
    free(c.w);
    return rc;
}

/* ---- optimizer state ---------------------------------------------------- */

#define STATE_MAGIC 0x5452424cu /* "LBRT" */

int bert_trainer_save_state(const bert_trainer *t, const char *path,
                            bert_error *err)
{
    if (!t || !path)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_save_state: NULL argument");
    FILE *f = fopen(path, "wb");
    if (!f)
        return bert__err(err, BERT_EIO, "%s: %s", path, strerror(errno));
    uint64_t hdr[4] = {STATE_MAGIC, t->nparams, t->steps, t->micro};
    int ok = fwrite(hdr, sizeof hdr, 1, f) == 1 &&
             fwrite(t->params, sizeof(float), t->nparams, f) == t->nparams &&
             fwrite(t->m, sizeof(float), t->nparams, f) == t->nparams &&
             fwrite(t->v, sizeof(float), t->nparams, f) == t->nparams;
    if (fclose(f) != 0)
        ok = 0;
    return ok ? BERT_OK
              : bert__err(err, BERT_EIO, "%s: write failed", path);
}

int bert_trainer_load_state(bert_trainer *t, const char *path, bert_error *err)
{
    if (!t || !path)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_load_state: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return bert__err(err, BERT_EMISSING, "%s: %s", path, strerror(errno));
    uint64_t hdr[4];
    if (fread(hdr, sizeof hdr, 1, f) != 1 || hdr[0] != STATE_MAGIC) {
        fclose(f);
        return bert__err(err, BERT_EFORMAT, "%s: not a libbert trainer state",
                         path);
    }
    /* 2^40 steps would take millennia: a larger count is a damaged file */
    if (hdr[2] > ((uint64_t)1 << 40) || hdr[3] > ((uint64_t)1 << 44)) {
        fclose(f);
        return bert__err(err, BERT_EFORMAT,
                         "%s: implausible step count %llu", path,
                         (unsigned long long)hdr[2]);
    }
    if (hdr[1] != t->nparams) {
        fclose(f);
        return bert__err(err, BERT_ESHAPE,
                         "%s: %llu parameters, the model has %zu", path,
                         (unsigned long long)hdr[1], t->nparams);
    }
    int ok = fread(t->params, sizeof(float), t->nparams, f) == t->nparams &&
             fread(t->m, sizeof(float), t->nparams, f) == t->nparams &&
             fread(t->v, sizeof(float), t->nparams, f) == t->nparams;
    fclose(f);
    if (!ok)
        return bert__err(err, BERT_EFORMAT, "%s: truncated", path);
    t->steps = (size_t)hdr[2];
    t->micro = hdr[3];
    memset(t->grads, 0, t->nparams * sizeof(float));
    return BERT_OK;
}

/* ---- tensor access ------------------------------------------------------- */

typedef struct {
    const char *name;
    float *p;
    size_t n;
} find_ctx;

static int find_slice(void *vctx, const char *name, float *p, size_t rows,
                      size_t cols, int i)
{
    find_ctx *c = vctx;
    if (strcmp(name, c->name) == 0) {
        c->p = p;
        c->n = rows * (cols ? cols : 1);
        return 1;
    }
    return 0;
}

int bert_trainer_tensor(bert_trainer *t, const char *name, float **data,
                        size_t *n, bert_error *err)
{
    if (!t || !name || !data || !n)
        return bert__err(err, BERT_EINVAL, "bert_trainer_tensor: NULL argument");
    find_ctx c = {name, NULL, 0};
    for_each_slice(t, t->pt, find_slice, &c);
    if (!c.p)
        return bert__err(err, BERT_EMISSING, "no tensor named %s", name);
    *data = c.p;
    *n = c.n;
    return BERT_OK;
}
