/* weights.c - bind transformers' state_dict() names in a safetensors file to
 * the model's weight pointers, checking every shape against config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/arch.h"
#include "libbert/internal.h"
#include "libbert/model.h"

typedef struct slot {
    char name[192];
    const float **dst;
    int ndim;
    size_t d0, d1;
    int optional;
    const bert_st_tensor *t;
} slot;

typedef struct slots {
    slot *a;
    size_t n, cap;
    bert_weights *w;
    const char *strip; /* the prefix a bare *Model checkpoint lacks, or "" */
} slots;

/* Where tensor t goes in w (NULL: nowhere, e.g. an MLM head). */
static const float **dst_of(bert_weights *w, const bert_arch_tensor *t)
{
    bert_layer_w *y = &w->layers[t->layer];
    int b = t->bias;
    switch (t->role) {
    case BERT_R_WTE: return &w->word_emb;
    case BERT_R_WPE: return &w->pos_emb;
    case BERT_R_WTT: return &w->type_emb;
    case BERT_R_LNE: return b ? &w->emb_ln_b : &w->emb_ln_w;
    case BERT_R_EP: return b ? &w->emb_proj_b : &w->emb_proj_w;
    case BERT_R_Q: return b ? &y->q_b : &y->q_w;
    case BERT_R_K: return b ? &y->k_b : &y->k_w;
    case BERT_R_V: return b ? &y->v_b : &y->v_w;
    case BERT_R_AO: return b ? &y->o_b : &y->o_w;
    case BERT_R_LN1: return b ? &y->ln1_b : &y->ln1_w;
    case BERT_R_FC: return b ? &y->f1_b : &y->f1_w;
    case BERT_R_FC2: return b ? &y->f2_b : &y->f2_w;
    case BERT_R_LN2: return b ? &y->ln2_b : &y->ln2_w;
    case BERT_R_POOL:
    case BERT_R_HEAD: return b ? &w->pool_b : &w->pool_w;
    case BERT_R_CLS: return b ? &w->cls_b : &w->cls_w;
    default: return NULL;
    }
}

static int add(void *ctx, const bert_arch_tensor *t)
{
    slots *S = ctx;
    if (S->n == S->cap) /* the table grew past the count below */
        return -1;
    slot *s = &S->a[S->n++];
    size_t np = strlen(S->strip);
    const char *name = t->name;
    if (np && strncmp(name, S->strip, np) == 0)
        name += np;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dst = dst_of(S->w, t);
    s->d0 = t->d0;
    s->d1 = t->d1;
    s->ndim = t->d1 ? 2 : 1;
    s->optional = t->optional;
    s->t = NULL;
    return 0;
}

static void shape_str(char *buf, size_t n, const bert_st_tensor *t)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%zu", d ? ", " : "",
                              t->shape[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

int bert__weights_bind(const bert_cfg *cfg, const bert_st_file *st,
                       const char *label, bert_weights *w, float **conv,
                       bert_error *err)
{
    const bert_config *c = &cfg->pub;
    size_t H = c->hidden, I = c->intermediate, L = c->layers;
    size_t C = c->num_labels, E = c->embedding_size;
    int distil = c->is_distilbert;
    int roberta = c->family == BERT_FAMILY_ROBERTA;
    int electra = c->family == BERT_FAMILY_ELECTRA;
    int rc = BERT_OK;
    slots S = {0};
    float *buf = NULL;

    memset(w, 0, sizeof *w);
    *conv = NULL;
    w->layers = calloc(L, sizeof *w->layers);
    S.cap = 16 * L + 16;
    S.a = calloc(S.cap, sizeof *S.a);
    if (!w->layers || !S.a) {
        rc = bert__err(err, BERT_ENOMEM, "%s: out of memory", label);
        goto out;
    }

    /* Names from the architecture's table (arch.h); encoder tensors carry
     * its prefix ("bert.", ...) in *For* and MLM files, none in a bare
     * BertModel: take whichever the file has. */
    const bert_arch *A = bert__arch_of(c->family);
    char probe[192];
    snprintf(probe, sizeof probe, "%s.word_embeddings.weight", A->emb);
    S.w = w;
    S.strip = bert__st_find(st, probe) ? "" : A->prefix;
    /* Pooler: required by BertForSequenceClassification, used by BertModel
     * and RobertaModel when the file has it, ignored by token models (and
     * RobertaFor*, built with add_pooling_layer=False); ELECTRA has none.
     * The sequence heads of the others have their own dense layer. */
    bert_arch_shape shape = {
        c->vocab_size, c->max_position, distil ? 0 : c->type_vocab,
        E, H, I, L, c->task != BERT_TASK_BASE ? C : 0,
        (c->family == BERT_FAMILY_BERT && c->task != BERT_TASK_TOKEN) ||
                (roberta && c->task == BERT_TASK_BASE)
            ? (c->task == BERT_TASK_BASE ? 2 : 1)
            : 0,
        c->task == BERT_TASK_SEQUENCE && (distil || roberta || electra), 0};
    if (bert__arch_tensors(A, &shape, add, &S)) {
        rc = bert__err(err, BERT_EINVAL, "%s: more tensors than slots (%zu)",
                       label, S.cap);
        goto out;
    }

    /* Pass 1: find, check dtype and shape, count what needs converting. */
    size_t nconv = 0;
    for (size_t i = 0; i < S.n; i++) {
        slot *s = &S.a[i];
        s->t = bert__st_find(st, s->name);
        if (!s->t) {
            if (s->optional)
                continue;
            rc = bert__err(err, BERT_EMISSING,
                           "%s: tensor '%s' is missing (needed by %s)", label,
                           s->name, cfg->architecture);
            goto out;
        }
        if (s->t->dtype != BERT_DT_F32 && s->t->dtype != BERT_DT_F16 &&
            s->t->dtype != BERT_DT_BF16) {
            rc = bert__err(err, BERT_EUNSUPPORTED,
                           "%s: tensor '%s' has dtype %s; weights must be F32, "
                           "F16 or BF16",
                           label, s->name, bert__st_dtype_name(s->t->dtype));
            goto out;
        }
        if (s->t->ndim != s->ndim || s->t->shape[0] != s->d0 ||
            (s->ndim == 2 && s->t->shape[1] != s->d1)) {
            char got[96], want[64];
            shape_str(got, sizeof got, s->t);
            if (s->ndim == 2)
                snprintf(want, sizeof want, "[%zu, %zu]", s->d0, s->d1);
            else
                snprintf(want, sizeof want, "[%zu]", s->d0);
            rc = bert__err(err, BERT_ESHAPE,
                           "%s: tensor '%s' has shape %s but config.json "
                           "implies %s",
                           label, s->name, got, want);
            goto out;
        }
        if (!bert__st_f32_direct(s->t))
            nconv += s->t->nelem;
    }
    if (nconv) {
        buf = malloc(nconv * sizeof *buf);
        if (!buf) {
            rc = bert__err(err, BERT_ENOMEM,
                           "%s: out of memory converting %zu weights to F32",
                           label, nconv);
            goto out;
        }
    }
    /* Pass 2: point or convert. */
    size_t at = 0;
    for (size_t i = 0; i < S.n; i++) {
        slot *s = &S.a[i];
        if (!s->t)
            continue;
        const float *d = bert__st_f32_direct(s->t);
        if (!d) {
            bert__st_to_f32(s->t, buf + at);
            d = buf + at;
            at += s->t->nelem;
        }
        *s->dst = d;
    }
    /* An optional pooler needs both halves. */
    if (!w->pool_w || !w->pool_b)
        w->pool_w = w->pool_b = NULL;
    *conv = buf;
    buf = NULL;

out:
    free(S.a);
    free(buf);
    if (rc != BERT_OK) {
        free(w->layers);
        memset(w, 0, sizeof *w);
    }
    return rc;
}
