/* w2v.c - initial embeddings for a model trained from scratch (bert_train.h):
 * word vectors from word2vec's skip-gram with negative sampling over the
 * WordPiece ids of a text, the cheap pre-training where masked-LM
 * pre-training is out of reach (docs/training.md), and sinusoidal
 * position embeddings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/train/dataset.h"

bert_word2vec_params bert_word2vec_default_params(void)
{
    bert_word2vec_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.epochs = 1;
    p.window = 5;
    p.negatives = 5;
    p.lr = 0.025;
    p.seed = 42;
    p.std = 0.05;
    return p;
}

/* The Hugging Face name of t's word or position ("word", "position")
 * embedding matrix, in buf. */
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

int bert_trainer_init_sinusoidal_positions(bert_trainer *t, bert_error *err)
{
    if (!t)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_init_sinusoidal_positions: NULL "
                         "argument");
    float *pe;
    size_t pn, H = bert_trainer_config(t)->embedding_size; /* width */
    char name[96];
    int rc = bert_trainer_tensor(t, embedding_name(t, "position", name), &pe,
                                 &pn, err);
    if (rc)
        return rc;
    /* amplitude 0.0707: a standard deviation of 0.05 */
    for (size_t r = 0; r < pn / H; r++)
        for (size_t i = 0; i < H; i += 2) {
            double a = (double)r / pow(10000.0, (double)i / (double)H);
            pe[r * H + i] = (float)(0.0707 * sin(a));
            if (i + 1 < H)
                pe[r * H + i + 1] = (float)(0.0707 * cos(a));
        }
    return BERT_OK;
}

/* ---- skip-gram with negative sampling ---------------------------------- */

enum { TABLE = 1 << 23 }; /* the unigram^0.75 table's entries */

/* What one run of SGNS holds. */
typedef struct {
    const bert_dataset *d;
    const bert_word2vec_params *p;
    size_t V, H;
    float *in, *out;   /* [V][H]: input vectors (the result), output ones */
    float *neu;        /* [H]: the input vector's accumulated update */
    int64_t *cnt;      /* [V]: token counts */
    int32_t *table;    /* [TABLE]: ids drawn as negatives */
    int32_t *sent;     /* the example's kept ids */
    size_t scap;
    int64_t total;     /* tokens counted */
    uint64_t r;        /* the random stream (hash chain) */
} sgns;

static int is_special(const bert_dataset *d, int32_t id)
{
    return id == d->cls || id == d->sep || id == d->pad;
}

/* Counts the tokens and fills the negative-sampling table; BERT_EINVAL for
 * an id beyond the vocabulary. */
static int count_tokens(sgns *g, bert_error *err)
{
    const bert_dataset *d = g->d;
    for (size_t i = 0; i < d->n; i++)
        for (int32_t t = 0; t < d->ex[i].n; t++) {
            int32_t id = d->ex[i].ids[t];
            if (is_special(d, id))
                continue;
            if (id < 0 || (size_t)id >= g->V)
                return bert__err(err, BERT_EINVAL,
                                 "bert_trainer_init_word2vec: token id %d "
                                 "is beyond the model's %zu", (int)id, g->V);
            g->cnt[id]++;
            g->total++;
        }
    double zsum = 0;
    for (size_t v = 0; v < g->V; v++)
        zsum += pow((double)g->cnt[v], 0.75);
    size_t v = 0;
    double acc = pow((double)g->cnt[0], 0.75) / zsum;
    for (size_t i = 0; i < TABLE; i++) {
        g->table[i] = (int32_t)v;
        if ((double)(i + 1) / TABLE > acc && v + 1 < g->V) {
            v++;
            acc += pow((double)g->cnt[v], 0.75) / zsum;
        }
    }
    return BERT_OK;
}

/* One (centre, context) pair: the context's input vector l1 against the
 * centre's output vector and `negatives` sampled ones. */
static void train_pair(sgns *g, int32_t centre, float *l1, double alpha)
{
    size_t H = g->H;
    memset(g->neu, 0, H * sizeof *g->neu);
    for (size_t dn = 0; dn <= g->p->negatives; dn++) {
        int32_t target;
        float label;
        if (dn == 0) {
            target = centre;
            label = 1;
        } else {
            g->r = bert__mix(g->r);
            target = g->table[(g->r >> 20) % TABLE];
            if (target == centre)
                continue;
            label = 0;
        }
        float *l2 = g->out + (size_t)target * H;
        float f = 0;
        for (size_t h = 0; h < H; h++)
            f += l1[h] * l2[h];
        float sg = f > 6 ? 1.0f : f < -6 ? 0.0f : 1.0f / (1.0f + expf(-f));
        float gr = (label - sg) * (float)alpha;
        for (size_t h = 0; h < H; h++) {
            g->neu[h] += gr * l2[h];
            l2[h] += gr * l1[h];
        }
    }
    for (size_t h = 0; h < H; h++)
        l1[h] += g->neu[h];
}

/* One example: its ids subsampled into sent, then every pair of a window
 * (shrunk at random).  *done counts the tokens seen. */
static int train_example(sgns *g, const bert__example *e, int64_t *done,
                         int64_t todo)
{
    double sample = 1e-4, lr0 = g->p->lr;
    size_t ns = 0;
    if ((size_t)e->n > g->scap) {
        g->scap = (size_t)e->n * 2;
        int32_t *s = realloc(g->sent, g->scap * sizeof *s);
        if (!s)
            return BERT_ENOMEM;
        g->sent = s;
    }
    for (int32_t t = 0; t < e->n; t++) {
        int32_t id = e->ids[t];
        if (is_special(g->d, id))
            continue;
        (*done)++;
        double f = (double)g->cnt[id] / (double)g->total;
        double keep = (sqrt(f / sample) + 1) * sample / f;
        g->r = bert__mix(g->r);
        if (keep < (double)(g->r >> 11) / 9007199254740992.0)
            continue;
        g->sent[ns++] = id;
    }
    double alpha = lr0 * (1.0 - (double)*done / (double)(todo + 1));
    if (alpha < lr0 * 1e-4)
        alpha = lr0 * 1e-4;
    long window = (long)g->p->window;
    for (size_t pos = 0; pos < ns; pos++) {
        g->r = bert__mix(g->r);
        long b = (long)(g->r % (uint64_t)window);
        long lo = (long)pos - (window - b), hi = (long)pos + (window - b);
        for (long c = lo; c <= hi; c++)
            if (c >= 0 && c < (long)ns && c != (long)pos)
                train_pair(g, g->sent[pos], g->in + (size_t)g->sent[c] * g->H,
                           alpha);
    }
    return BERT_OK;
}

/* The passes over the data; the input vectors end in g->in. */
static int train_sgns(sgns *g, bert_error *err)
{
    const bert_word2vec_params *p = g->p;
    int rc = count_tokens(g, err);
    if (rc)
        return rc;
    g->r = p->seed ^ 0x5eed;
    for (size_t i = 0; i < g->V * g->H; i++) {
        g->r = bert__mix(g->r);
        g->in[i] = (float)(((double)(g->r >> 11) / 9007199254740992.0 - 0.5) /
                           (double)g->H);
    }
    int64_t todo = (int64_t)(p->epochs * (double)g->total), done = 0;
    for (double ep = 0; ep < p->epochs && done < todo; ep += 1)
        for (size_t i = 0; i < g->d->n && done < todo; i++) {
            if (train_example(g, &g->d->ex[i], &done, todo))
                return bert__err(err, BERT_ENOMEM, "out of memory");
            if (p->progress && p->progress((size_t)done, (size_t)todo,
                                           p->progress_data))
                return bert__err(err, BERT_ECANCELED,
                                 "canceled by the progress callback");
        }
    return BERT_OK;
}

int bert_trainer_init_word2vec(bert_trainer *t, const bert_dataset *text,
                               const bert_word2vec_params *params,
                               bert_error *err)
{
    bert_word2vec_params p;
    if (!t || !text)
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_init_word2vec: NULL argument");
    int rc = BERT__PARAMS(p, params, bert_word2vec_default_params, err);
    if (rc)
        return rc;
    if (text->task != BERT_TRAIN_MLM || p.window < 1 || !(p.epochs > 0) ||
        !(p.lr > 0) || !(p.std > 0))
        return bert__err(err, BERT_EINVAL,
                         "bert_trainer_init_word2vec: an MLM dataset, window "
                         ">= 1, epochs, lr and std > 0");
    float *we;
    size_t wn;
    char name[96];
    sgns g;
    memset(&g, 0, sizeof g);
    g.d = text;
    g.p = &p;
    g.V = bert_trainer_config(t)->vocab_size;
    g.H = bert_trainer_config(t)->embedding_size;
    if ((rc = bert_trainer_tensor(t, embedding_name(t, "word", name), &we, &wn,
                                  err)))
        return rc;
    if (wn != g.V * g.H)
        return bert__err(err, BERT_EINVAL, "%s: %zu values, not %zu x %zu",
                         name, wn, g.V, g.H);
    g.in = malloc(g.V * g.H * sizeof *g.in);
    g.out = calloc(g.V * g.H, sizeof *g.out);
    g.neu = malloc(g.H * sizeof *g.neu);
    g.cnt = calloc(g.V, sizeof *g.cnt);
    g.table = malloc(TABLE * sizeof *g.table);
    rc = g.in && g.out && g.neu && g.cnt && g.table
             ? train_sgns(&g, err)
             : bert__err(err, BERT_ENOMEM, "out of memory");
    if (rc == BERT_OK) {
        /* scaled to p.std; the [PAD] row zero */
        double ss = 0;
        for (size_t i = 0; i < g.V * g.H; i++)
            ss += (double)g.in[i] * g.in[i];
        double sd = sqrt(ss / (double)(g.V * g.H));
        for (size_t i = 0; i < g.V * g.H; i++)
            we[i] = (float)(g.in[i] * (p.std / (sd > 0 ? sd : 1)));
        if (text->pad >= 0 && (size_t)text->pad < g.V)
            memset(we + (size_t)text->pad * g.H, 0, g.H * sizeof(float));
    }
    free(g.in);
    free(g.out);
    free(g.neu);
    free(g.cnt);
    free(g.table);
    free(g.sent);
    return rc;
}
