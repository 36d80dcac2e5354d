/* tests/test_train.c - the trainer: every backward kernel, in its double
 * instantiation, against finite differences, the float kernels against the
 * double ones, a whole-model gradient check for each task, a tiny model that
 * learns a tiny data set, determinism, and the trainer's forward against a
 * fixture's expected logits. */
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
#include "tests/trainutil.h"

static double g_worst_kernel = 0, g_worst_f32 = 0, g_worst_model = 0;

/* --- kernels in double precision against finite differences --------------
 * The double instantiation (bert__td_*) is the float kernels' code with
 * another scalar type, so its derivatives can be checked far below float
 * rounding.  loss = sum(out * R) in double; central differences with step
 * FD_H.  Gradient buffers start at random values G0 and the check uses
 * g - G0, so a backward that overwrites instead of accumulating fails. */

#define FD_H 1e-5
#define FD_FLOOR 1e-2
#define FD_TOL 1e-8

static void filld(double *x, size_t n, uint64_t seed, float sc)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tr_frand(&seed) * sc; /* float values: exact in both types */
}

/* fills g and g0 with the same random start values */
static void start(double *g, double *g0, size_t n, uint64_t seed)
{
    filld(g, n, seed, 1);
    memcpy(g0, g, n * sizeof *g);
}

static double dotd(const double *a, const double *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * r[i];
    return s;
}

/* |a - n| relative to |a| + |n|, but at least FD_FLOOR: the differences
 * carry an absolute rounding noise of ~eps * |loss| / FD_H ~ 1e-11 (losses
 * and gradients here are O(1)), which would swamp the relative error of a
 * gradient that happens to be ~1e-4. */
static double fd_relerr(double a, double n)
{
    return fabs(a - n) / fmax(fabs(a) + fabs(n), FD_FLOOR);
}

/* Checks g - g0 (g0 NULL: g) against central differences of loss in x,
 * scaled by sc; prints the worst relative error. */
static void check_fd(const char *what, double *x, size_t n, const double *g,
                     const double *g0, double sc, double (*loss)(void *),
                     void *ctx)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double old = x[i], xp = old + FD_H, xm = old - FD_H;
        x[i] = xp;
        double lp = loss(ctx);
        x[i] = xm;
        double lm = loss(ctx);
        x[i] = old;
        /* divide by the step actually taken (xp - xm is not exactly 2h) */
        double num = sc * (lp - lm) / (xp - xm);
        double ana = g[i] - (g0 ? g0[i] : 0);
        double e = fd_relerr(ana, num);
        if (e > worst)
            worst = e;
        if (e > FD_TOL)
            printf("\n  %s[%zu]: analytic %.15g numeric %.15g\n  ", what, i,
                   ana, num);
    }
    printf("%s %.1e ", what, worst);
    if (worst > g_worst_kernel)
        g_worst_kernel = worst;
    CU_ASSERT(worst <= FD_TOL);
}

typedef struct {
    size_t N, IC, OC;
    double *inp, *w, *b, *out, *R;
    void *rntm;
} mm_ctx;

static double mm_loss(void *v)
{
    mm_ctx *c = v;
    bert__td_matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->IC, c->OC,
                            c->rntm);
    return dotd(c->out, c->R, c->N * c->OC);
}

#include <blis.h>

static void test_matmul(void)
{
    rntm_t rn;
    bli_rntm_init(&rn);
    bli_rntm_set_num_threads(1, &rn);
    enum { N = 5, IC = 7, OC = 3 };
    double inp[N * IC], w[OC * IC], b[OC], out[N * OC], R[N * OC];
    filld(inp, N * IC, 1, 1);
    filld(w, OC * IC, 2, 1);
    filld(b, OC, 3, 1);
    filld(R, N * OC, 4, 1);
    for (int bias = 1; bias >= 0; bias--) {
        mm_ctx c = {N, IC, OC, inp, w, bias ? b : NULL, out, R, &rn};
        double dinp[N * IC], dw[OC * IC], db[OC];
        double dinp0[N * IC], dw0[OC * IC], db0[OC];
        start(dinp, dinp0, N * IC, 5);
        start(dw, dw0, OC * IC, 6);
        start(db, db0, OC, 7);
        bert__td_matmul_backward(dinp, dw, db, R, inp, w, N, IC, OC, &rn, 2);
        check_fd(bias ? "dinp" : "dinp(no bias)", inp, N * IC, dinp, dinp0,
                 1, mm_loss, &c);
        check_fd(bias ? "dw" : "dw(no bias)", w, OC * IC, dw, dw0, 1, mm_loss,
                 &c);
        if (bias)
            check_fd("dbias", b, OC, db, db0, 1, mm_loss, &c);
    }
}

typedef struct {
    size_t N, C;
    double *inp, *w, *b, *out, *mean, *rstd, *R;
} ln_ctx;

static double ln_loss(void *v)
{
    ln_ctx *c = v;
    bert__td_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b,
                               c->N, c->C, 1e-5, 1);
    return dotd(c->out, c->R, c->N * c->C);
}

static void test_layernorm(void)
{
    enum { N = 3, C = 5 };
    double inp[N * C], w[C], b[C], out[N * C], mean[N], rstd[N], R[N * C];
    filld(inp, N * C, 5, 2);
    filld(w, C, 6, 1);
    filld(b, C, 7, 1);
    filld(R, N * C, 8, 1);
    ln_ctx c = {N, C, inp, w, b, out, mean, rstd, R};
    ln_loss(&c);
    double dinp[N * C], dw[C], db[C], dinp0[N * C], dw0[C], db0[C];
    start(dinp, dinp0, N * C, 9);
    start(dw, dw0, C, 10);
    start(db, db0, C, 11);
    bert__td_layernorm_backward(dinp, dw, db, R, inp, w, mean, rstd, N, C, 2);
    check_fd("dinp", inp, N * C, dinp, dinp0, 1, ln_loss, &c);
    check_fd("dw", w, C, dw, dw0, 1, ln_loss, &c);
    check_fd("db", b, C, db, db0, 1, ln_loss, &c);
}

typedef struct {
    int act;
    double *inp, *out, *R;
    size_t n;
} act_ctx;

static double act_loss(void *v)
{
    act_ctx *c = v;
    bert__td_act_forward(c->act, c->out, c->inp, c->n, 1);
    return dotd(c->out, c->R, c->n);
}

static void test_activations(void)
{
    static const char *name[4] = {"gelu", "gelu_tanh", "relu", "tanh"};
    enum { n = 11 };
    for (int act = 0; act < 4; act++) {
        double inp[n], out[n], R[n], d[n], d0[n];
        filld(inp, n, 10 + (uint64_t)act, 3);
        for (int i = 0; i < n; i++) /* keep ReLU away from its kink */
            if (fabs(inp[i]) < 0.05)
                inp[i] = 0.3;
        filld(R, n, 20, 1);
        start(d, d0, n, 21);
        act_ctx c = {act, inp, out, R, n};
        bert__td_act_backward(act, d, R, inp, n, 2);
        check_fd(name[act], inp, n, d, d0, 1, act_loss, &c);
    }
}

typedef struct {
    double *out, *att, *scr, *qkv, *R;
    size_t *lens, B, N, H, NH;
    double p;
} at_ctx;

/* Q, K and V interleaved in one (N, 3H) array: rows 3H apart. */
static double at_loss(void *v)
{
    at_ctx *c = v;
    size_t H = c->H;
    bert__td_attention_forward(c->out, c->att, c->scr, c->qkv, c->qkv + H,
                               c->qkv + 2 * H, 3 * H, c->lens, c->B, H, c->NH,
                               c->p, 7, 99, 2, NULL);
    return dotd(c->out, c->R, c->N * H);
}

static void test_attention(void)
{
    /* two sequences of 5 and 3 tokens packed into 8 rows */
    enum { B = 2, N = 8, H = 6, NH = 2, H3 = 3 * H, NA = NH * (25 + 9) };
    size_t lens[B] = {5, 3};
    for (int withdrop = 0; withdrop < 2; withdrop++) {
        double qkv[N * H3], out[N * H], att[NA], scr[NA], R[N * H],
            dqkv[N * H3], dqkv0[N * H3], scr2[NA];
        filld(qkv, N * H3, 30, 1.5f);
        filld(R, N * H, 31, 1);
        start(dqkv, dqkv0, N * H3, 32);
        at_ctx c = {out, att, scr, qkv, R, lens, B, N, H, NH,
                    withdrop ? 0.3 : 0.0};
        at_loss(&c);
        bert__td_attention_backward(dqkv, dqkv + H, dqkv + 2 * H, scr2, R,
                                    qkv, qkv + H, qkv + 2 * H, H3, att, lens,
                                    B, H, NH, c.p, 7, 99, 2, NULL);
        check_fd(withdrop ? "dqkv(dropout)" : "dqkv", qkv, N * H3, dqkv,
                 dqkv0, 1, at_loss, &c);
    }
}

typedef struct {
    double *out, *wte, *wpe, *wtt, *R;
    int32_t *ids, *types, *pos;
} em_ctx;

enum { EB = 2, ET = 3, EH = 5, EV = 5 };

static double em_loss(void *v)
{
    em_ctx *c = v;
    bert__td_embed_forward(c->out, c->ids, c->types, c->pos, c->wte, c->wpe,
                           c->wtt, EB * ET, EH);
    return dotd(c->out, c->R, EB * ET * EH);
}

static void test_embeddings(void)
{
    double wte[EV * EH], wpe[ET * EH], wtt[2 * EH], out[EB * ET * EH],
        R[EB * ET * EH];
    /* repeated ids and positions: their gradients add up */
    int32_t ids[EB * ET] = {1, 4, 1, 0, 2, 1}, types[EB * ET] = {0, 0, 1,
                                                                 0, 1, 1};
    int32_t pos[EB * ET] = {0, 1, 2, 0, 1, 2};
    filld(wte, EV * EH, 40, 1);
    filld(wpe, ET * EH, 41, 1);
    filld(wtt, 2 * EH, 42, 1);
    filld(R, EB * ET * EH, 43, 1);
    /* with token types, then types NULL (= type 0) */
    for (int withtypes = 1; withtypes >= 0; withtypes--) {
        int32_t *ty = withtypes ? types : NULL;
        em_ctx c = {out, wte, wpe, wtt, R, ids, ty, pos};
        double dwte[EV * EH], dwpe[ET * EH], dwtt[2 * EH];
        double dwte0[EV * EH], dwpe0[ET * EH], dwtt0[2 * EH];
        start(dwte, dwte0, EV * EH, 44);
        start(dwpe, dwpe0, ET * EH, 45);
        start(dwtt, dwtt0, 2 * EH, 46);
        bert__td_embed_backward(dwte, dwpe, dwtt, R, ids, ty, pos, EB * ET,
                                EH);
        if (!withtypes)
            printf("| types NULL: ");
        check_fd("dwte", wte, EV * EH, dwte, dwte0, 1, em_loss, &c);
        check_fd("dwpe", wpe, ET * EH, dwpe, dwpe0, 1, em_loss, &c);
        check_fd("dwtt", wtt, 2 * EH, dwtt, dwtt0, 1, em_loss, &c);
    }
}

typedef struct {
    double *logits;
    int32_t *tg;
} ce_ctx;

enum { CN = 5, CC = 7 };

static double ce_loss(void *v)
{
    ce_ctx *c = v;
    return bert__td_crossentropy(NULL, c->logits, c->tg, CN, CC, 1.0, 2);
}

static void test_crossentropy(void)
{
    double logits[CN * CC], d[CN * CC];
    int32_t tg[CN] = {2, -100, 6, 0, 3}; /* row 1 is ignored */
    filld(logits, CN * CC, 50, 3);
    filld(d, CN * CC, 51, 1); /* dlogits is written, not accumulated */
    ce_ctx c = {logits, tg};
    const double scale = 0.25;
    bert__td_crossentropy(d, logits, tg, CN, CC, scale, 1);
    for (int j = 0; j < CC; j++)
        CU_ASSERT(d[CC + j] == 0.0);
    check_fd("dlogits", logits, CN * CC, d, NULL, scale, ce_loss, &c);
}

/* R-Drop's term: 3 pairs of rows (6 x CC logits), the middle pair masked
 * out; its value against the definition written out here, its gradient
 * against finite differences, and it adds to dlogits. */
typedef struct {
    double *logits;
    const int32_t *mask;
} kl_ctx;

static double kl_loss(void *v)
{
    kl_ctx *c = v;
    return bert__td_sym_kl(NULL, c->logits, c->mask, 3, CC, 1.0);
}

static void test_sym_kl(void)
{
    double logits[6 * CC], d[6 * CC], d0[6 * CC];
    static const int32_t mask[3] = {1, -100, 0};
    filld(logits, 6 * CC, 52, 3);
    start(d, d0, 6 * CC, 53);
    kl_ctx c = {logits, mask};
    const double scale = 0.75;
    double v = bert__td_sym_kl(d, logits, mask, 3, CC, scale);
    double want = 0.0;
    for (int i = 0; i < 3; i += 2) { /* pairs 0 and 2 */
        double p[CC], q[CC], zp = 0, zq = 0, k = 0;
        for (int j = 0; j < CC; j++) {
            p[j] = exp(logits[i * CC + j]);
            q[j] = exp(logits[(3 + i) * CC + j]);
            zp += p[j];
            zq += q[j];
        }
        for (int j = 0; j < CC; j++) {
            p[j] /= zp;
            q[j] /= zq;
            k += 0.5 * (p[j] - q[j]) * log(p[j] / q[j]);
        }
        want += k;
    }
    printf("value %.1e ", fabs(v - want));
    CU_ASSERT(fabs(v - want) <= 1e-12 * fabs(want));
    CU_ASSERT(want > 0.1); /* the draw's rows do disagree */
    for (int j = 0; j < CC; j++) /* the masked pair is left alone */
        CU_ASSERT(d[CC + j] == d0[CC + j] && d[4 * CC + j] == d0[4 * CC + j]);
    check_fd("dlogits", logits, 6 * CC, d, d0, scale, kl_loss, &c);
    /* one pair (rows 0 and 1) of equal rows: no divergence, no gradient */
    memcpy(logits + CC, logits, CC * sizeof *logits);
    memset(d, 0, sizeof d);
    double z = bert__td_sym_kl(d, logits, NULL, 1, CC, 1.0);
    CU_ASSERT(fabs(z) < 1e-15);
    for (int j = 0; j < 2 * CC; j++)
        CU_ASSERT(fabs(d[j]) < 1e-15);
}

typedef struct {
    double *x, *y, *R;
    size_t n;
    double p;
} dr_ctx;

static double dr_loss(void *v)
{
    dr_ctx *c = v;
    memcpy(c->y, c->x, c->n * sizeof *c->y);
    bert__td_dropout(c->y, c->n, c->p, 1, 2, 2);
    return dotd(c->y, c->R, c->n);
}

static void test_dropout(void)
{
    /* backward is the same dropout applied to the gradient */
    enum { n = 13 };
    double x[n], y[n], R[n], d[n];
    filld(x, n, 60, 2);
    filld(R, n, 61, 1);
    memcpy(d, R, sizeof d);
    bert__td_dropout(d, n, 0.4, 1, 2, 2);
    dr_ctx c = {x, y, R, n, 0.4};
    check_fd("dx", x, n, d, NULL, 1, dr_loss, &c);
    /* the rate and the scale of kept elements */
    double ones[1000];
    for (int i = 0; i < 1000; i++)
        ones[i] = 1.0;
    bert__td_dropout(ones, 1000, 0.25, 1, 2, 2);
    int zeros = 0;
    for (int i = 0; i < 1000; i++) {
        if (ones[i] == 0.0)
            zeros++;
        else
            CU_ASSERT(ones[i] == 1.0 / 0.75);
    }
    CU_ASSERT(zeros > 200 && zeros < 300);
}

/* --- the float kernels against the double ones ----------------------------
 * Same inputs (float values), forward and backward in both precisions; the
 * difference is float rounding, measured as max |f - d| / max |d| over each
 * output (elementwise it is meaningless where a value cancels to ~0). */

#define F32_TOL 2e-6

static float *tof(const double *x, size_t n)
{
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)x[i];
    return f;
}

static double *rndd(size_t n, uint64_t seed, float sc)
{
    double *x = malloc(n * sizeof *x);
    filld(x, n, seed, sc);
    return x;
}

static void cmp32(const char *what, const float *f, const double *d, size_t n)
{
    double diff = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)f[i] - d[i]));
        mag = fmax(mag, fabs(d[i]));
    }
    double e = mag > 0 ? diff / mag : diff;
    printf("%s %.1e ", what, e);
    if (e > g_worst_f32)
        g_worst_f32 = e;
    CU_ASSERT(e <= F32_TOL);
}

static void test_float_vs_double(void)
{
    rntm_t rn;
    bli_rntm_init(&rn);
    bli_rntm_set_num_threads(2, &rn);
    /* float: libbert's product layer, as the trainer runs it */
    bert_gemm_ctx *gc = bert__gemm_ctx_create(2, BERT_KERNELS_AUTO, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gc);
    /* matmul 33x65 -> 17 with bias */
    {
        size_t N = 33, IC = 65, OC = 17;
        double *inp = rndd(N * IC, 70, 1), *w = rndd(OC * IC, 71, 1),
               *b = rndd(OC, 72, 1), *g = rndd(N * OC, 73, 1);
        double *out = calloc(N * OC, 8), *di = calloc(N * IC, 8),
               *dw = calloc(OC * IC, 8), *db = calloc(OC, 8);
        float *fi = tof(inp, N * IC), *fw = tof(w, OC * IC), *fb = tof(b, OC),
              *fg = tof(g, N * OC);
        float *fo = calloc(N * OC, 4), *fdi = calloc(N * IC, 4),
              *fdw = calloc(OC * IC, 4), *fdb = calloc(OC, 4);
        bert__td_matmul_forward(out, inp, w, b, N, IC, OC, &rn);
        bert__t_matmul_forward(fo, fi, fw, fb, N, IC, OC, gc);
        bert__td_matmul_backward(di, dw, db, g, inp, w, N, IC, OC, &rn, 2);
        bert__t_matmul_backward(fdi, fdw, fdb, fg, fi, fw, N, IC, OC, gc, 2);
        printf("\n  matmul: ");
        cmp32("out", fo, out, N * OC);
        cmp32("dinp", fdi, di, N * IC);
        cmp32("dw", fdw, dw, OC * IC);
        cmp32("dbias", fdb, db, OC);
        free(inp); free(w); free(b); free(g); free(out); free(di); free(dw);
        free(db); free(fi); free(fw); free(fb); free(fg); free(fo); free(fdi);
        free(fdw); free(fdb);
    }
    /* LayerNorm 7x65 */
    {
        size_t N = 7, C = 65;
        double *inp = rndd(N * C, 80, 2), *w = rndd(C, 81, 1),
               *b = rndd(C, 82, 1), *g = rndd(N * C, 83, 1);
        double *out = malloc(N * C * 8), *mean = malloc(N * 8),
               *rstd = malloc(N * 8), *di = calloc(N * C, 8),
               *dw = calloc(C, 8), *db = calloc(C, 8);
        float *fi = tof(inp, N * C), *fw = tof(w, C), *fb = tof(b, C),
              *fg = tof(g, N * C);
        float *fo = malloc(N * C * 4), *fm = malloc(N * 4),
              *fr = malloc(N * 4), *fdi = calloc(N * C, 4),
              *fdw = calloc(C, 4), *fdb = calloc(C, 4);
        bert__td_layernorm_forward(out, mean, rstd, inp, w, b, N, C, 1e-5, 2);
        bert__t_layernorm_forward(fo, fm, fr, fi, fw, fb, N, C, 1e-5f, 2);
        bert__td_layernorm_backward(di, dw, db, g, inp, w, mean, rstd, N, C, 2);
        bert__t_layernorm_backward(fdi, fdw, fdb, fg, fi, fw, fm, fr, N, C, 2);
        printf("\n  layernorm: ");
        cmp32("out", fo, out, N * C);
        cmp32("dinp", fdi, di, N * C);
        cmp32("dw", fdw, dw, C);
        cmp32("db", fdb, db, C);
        free(inp); free(w); free(b); free(g); free(out); free(mean);
        free(rstd); free(di); free(dw); free(db); free(fi); free(fw);
        free(fb); free(fg); free(fo); free(fm); free(fr); free(fdi);
        free(fdw); free(fdb);
    }
    /* activations over [-6, 6] */
    for (int act = 0; act < 4; act++) {
        size_t n = 1001;
        double *x = rndd(n, 90 + (uint64_t)act, 6), *g = rndd(n, 94, 1);
        double *y = malloc(n * 8), *d = calloc(n, 8);
        float *fx = tof(x, n), *fg = tof(g, n), *fy = malloc(n * 4),
              *fd = calloc(n, 4);
        bert__td_act_forward(act, y, x, n, 2);
        bert__t_act_forward(act, fy, fx, n, 2);
        bert__td_act_backward(act, d, g, x, n, 2);
        bert__t_act_backward(act, fd, fg, fx, n, 2);
        printf("\n  activation %d: ", act);
        cmp32("out", fy, y, n);
        cmp32("dinp", fd, d, n);
        free(x); free(g); free(y); free(d); free(fx); free(fg); free(fy);
        free(fd);
    }
    /* embeddings: sums of three terms, only rounding in the last bit */
    {
        double wte[EV * EH], wpe[ET * EH], wtt[2 * EH], out[EB * ET * EH],
            g[EB * ET * EH], dwte[EV * EH] = {0}, dwpe[ET * EH] = {0},
            dwtt[2 * EH] = {0};
        float fo[EB * ET * EH], fdwte[EV * EH] = {0}, fdwpe[ET * EH] = {0},
            fdwtt[2 * EH] = {0};
        int32_t ids[EB * ET] = {1, 4, 1, 0, 2, 1}, types[EB * ET] = {0, 1, 1,
                                                                     0, 1, 0};
        int32_t pos[EB * ET] = {0, 1, 2, 0, 1, 2};
        filld(wte, EV * EH, 100, 1);
        filld(wpe, ET * EH, 101, 1);
        filld(wtt, 2 * EH, 102, 1);
        filld(g, EB * ET * EH, 103, 1);
        float *fwte = tof(wte, EV * EH), *fwpe = tof(wpe, ET * EH),
              *fwtt = tof(wtt, 2 * EH), *fg = tof(g, EB * ET * EH);
        bert__td_embed_forward(out, ids, types, pos, wte, wpe, wtt, EB * ET,
                               EH);
        bert__t_embed_forward(fo, ids, types, pos, fwte, fwpe, fwtt, EB * ET,
                              EH);
        bert__td_embed_backward(dwte, dwpe, dwtt, g, ids, types, pos, EB * ET,
                                EH);
        bert__t_embed_backward(fdwte, fdwpe, fdwtt, fg, ids, types, pos,
                               EB * ET, EH);
        printf("\n  embeddings: ");
        cmp32("out", fo, out, EB * ET * EH);
        cmp32("dwte", fdwte, dwte, EV * EH);
        cmp32("dwpe", fdwpe, dwpe, ET * EH);
        cmp32("dwtt", fdwtt, dwtt, 2 * EH);
        free(fwte); free(fwpe); free(fwtt); free(fg);
    }
    /* attention: 3 sequences of 17, 9 and 1 tokens packed, H=24, 3 heads */
    for (int withdrop = 0; withdrop < 2; withdrop++) {
        size_t B = 3, H = 24, NH = 3, lens[3] = {17, 9, 1}, N = 27;
        size_t nq = N * 3 * H, no = N * H, na = NH * (17 * 17 + 9 * 9 + 1);
        double p = withdrop ? 0.1 : 0.0;
        double *qkv = rndd(nq, 110, 2), *g = rndd(no, 111, 1);
        double *out = malloc(no * 8), *att = malloc(na * 8),
               *scr = malloc(na * 8), *dq = calloc(nq, 8);
        float *fq = tof(qkv, nq), *fg = tof(g, no), *fo = malloc(no * 4),
              *fa = malloc(na * 4), *fs = malloc(na * 4), *fdq = calloc(nq, 4);
        bert__td_attention_forward(out, att, scr, qkv, qkv + H, qkv + 2 * H,
                                   3 * H, lens, B, H, NH, p, 3, 4, 2, NULL);
        bert__t_attention_forward(fo, fa, fs, fq, fq + H, fq + 2 * H, 3 * H,
                                  lens, B, H, NH, (float)p, 3, 4, 2, gc);
        bert__td_attention_backward(dq, dq + H, dq + 2 * H, scr, g, qkv,
                                    qkv + H, qkv + 2 * H, 3 * H, att, lens, B,
                                    H, NH, p, 3, 4, 2, NULL);
        bert__t_attention_backward(fdq, fdq + H, fdq + 2 * H, fs, fg, fq,
                                   fq + H, fq + 2 * H, 3 * H, fa, lens, B, H,
                                   NH, (float)p, 3, 4, 2, gc);
        printf("\n  attention%s: ", withdrop ? " (dropout)" : "");
        cmp32("out", fo, out, no);
        cmp32("att", fa, att, na);
        cmp32("dqkv", fdq, dq, nq);
        free(qkv); free(g); free(out); free(att); free(scr); free(dq);
        free(fq); free(fg); free(fo); free(fa); free(fs); free(fdq);
    }
    /* cross-entropy 9x31 with ignored rows */
    {
        size_t N = 9, C = 31;
        int32_t tg[9] = {3, -100, 30, 0, 7, -1, 12, 12, 5};
        double *l = rndd(N * C, 120, 4), *d = malloc(N * C * 8);
        float *fl = tof(l, N * C), *fd = malloc(N * C * 4);
        double loss = bert__td_crossentropy(d, l, tg, N, C, 0.5, 1);
        double floss = bert__t_crossentropy(fd, fl, tg, N, C, 0.5f, 2);
        printf("\n  cross-entropy: ");
        double le = fabs(floss - loss) / fabs(loss);
        printf("loss %.1e ", le);
        g_worst_f32 = fmax(g_worst_f32, le);
        CU_ASSERT(le <= F32_TOL);
        cmp32("dlogits", fd, d, N * C);
        free(l); free(d); free(fl); free(fd);
    }
    /* R-Drop's term, 4 pairs x 31 classes, one masked out */
    {
        size_t N = 4, C = 31;
        int32_t mk[4] = {0, 2, -100, 1};
        double *l = rndd(2 * N * C, 125, 4), *d = rndd(2 * N * C, 126, 1);
        float *fl = tof(l, 2 * N * C), *fd = tof(d, 2 * N * C);
        double v = bert__td_sym_kl(d, l, mk, N, C, 0.5);
        double fv = bert__t_sym_kl(fd, fl, mk, N, C, 0.5f);
        printf("\n  R-Drop KL: ");
        double le = fabs(fv - v) / fabs(v);
        printf("value %.1e ", le);
        g_worst_f32 = fmax(g_worst_f32, le);
        CU_ASSERT(le <= F32_TOL);
        cmp32("dlogits", fd, d, 2 * N * C);
        free(l); free(d); free(fl); free(fd);
    }
    /* dropout: same mask, scale 1/(1-p) in each precision */
    {
        size_t n = 1001;
        double *x = rndd(n, 130, 2);
        float *fx = tof(x, n);
        bert__td_dropout(x, n, 0.1, 5, 6, 2);
        bert__t_dropout(fx, n, 0.1f, 5, 6, 2);
        printf("\n  dropout: ");
        cmp32("out", fx, x, n);
        free(x); free(fx);
    }
    bert__gemm_ctx_free(gc);
}

/* --- whole model --------------------------------------------------------- */

/* A tiny BERT config.json (hidden 6 = 2 heads of 3, intermediate 7, vocab
 * 13, 9 positions); `drop` for both dropouts. */
static const char *write_tiny_config(const char *name, const char *act,
                                     float drop)
{
    return tr_write_config(
        name,
        "{\"architectures\":[\"BertForMaskedLM\"],\"model_type\":\"bert\","
        "\"vocab_size\":13,\"hidden_size\":6,\"num_hidden_layers\":2,"
        "\"num_attention_heads\":2,\"intermediate_size\":7,"
        "\"hidden_act\":\"%s\",\"max_position_embeddings\":9,"
        "\"type_vocab_size\":2,\"layer_norm_eps\":1e-5,"
        "\"hidden_dropout_prob\":%g,\"attention_probs_dropout_prob\":%g,"
        "\"initializer_range\":0.5,\"pad_token_id\":0}",
        act, drop, drop);
}

/* Fourth-order central differences at h = 1e-2 (second-order ones miss by
 * up to 16% on output-dense gradients under attention dropout: truncation
 * error, gone at h = 1e-3); below |a| + |n| = 1e-3 the error is absolute. */
static void model_gradcheck(bert_train_task task, const char *act, float drop)
{
    static const int32_t types[10] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 0};
    static const tr_fd fd = {1, 1e-2f, 1e-3, 1.0};
    /* ReLU: a step of 5e-3 crosses fewer kinks (one pre-activation of
     * this draw is 8e-4 from zero), so that most parameters stay checked
     * (84%); those whose steps cross one are skipped (trainutil.h) */
    static const tr_fd fd_relu = {1, 5e-3f, 1e-3, 1.0};
    tr_model_gradcheck(write_tiny_config("grad", act, drop), task, types, 0.0f,
                       strcmp(act, "relu") == 0 ? &fd_relu : &fd, NULL,
                       &g_worst_model);
}

/* R-Drop: the doubled batch's loss, KL term included, under dropout (with
 * none the two passes agree and the term is 0) */
static void rdrop_gradcheck(bert_train_task task, float drop)
{
    static const int32_t types[10] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 0};
    static const tr_fd fd = {1, 1e-2f, 1e-3, 1.0};
    tr_model_gradcheck(write_tiny_config("grad", "gelu", drop), task, types,
                       2.0f, &fd, NULL, &g_worst_model);
}

static void test_model_grad_seq_rdrop(void) { rdrop_gradcheck(BERT_TRAIN_SEQUENCE, 0.2f); }
static void test_model_grad_tok_rdrop(void) { rdrop_gradcheck(BERT_TRAIN_TOKEN, 0.1f); }

static void test_model_grad_seq(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu", 0.0f); }
static void test_model_grad_seq_drop(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu_new", 0.2f); }
static void test_model_grad_tok(void) { model_gradcheck(BERT_TRAIN_TOKEN, "relu", 0.1f); }
static void test_model_grad_mlm(void) { model_gradcheck(BERT_TRAIN_MLM, "gelu", 0.1f); }

/* RoBERTa: positions from pad_token_id + 1 (here 2), one token type, the
 * sequence head's extra dropout before its dense layer. */
static void roberta_gradcheck(bert_train_task task, float drop)
{
    static const int32_t types[10] = {0};
    /* fourth-order differences: second-order ones miss by 7% on one
     * small output-dense gradient of this draw (truncation error) */
    static const tr_fd fd = {1, 1e-2f, 1e-3, 1.0};
    const char *cfg = tr_write_config(
        "grad-roberta",
        "{\"architectures\":[\"RobertaForSequenceClassification\"],"
        "\"model_type\":\"roberta\",\"vocab_size\":13,\"hidden_size\":6,"
        "\"num_hidden_layers\":2,\"num_attention_heads\":2,"
        "\"intermediate_size\":7,\"hidden_act\":\"gelu\","
        "\"max_position_embeddings\":9,\"type_vocab_size\":1,"
        "\"layer_norm_eps\":1e-5,\"hidden_dropout_prob\":%g,"
        "\"attention_probs_dropout_prob\":%g,\"initializer_range\":0.5,"
        "\"pad_token_id\":1}",
        drop, drop);
    tr_model_gradcheck(cfg, task, types, 0.0f, &fd, NULL, &g_worst_model);
}

/* ELECTRA: embeddings of width E = 4 projected to H = 6 by
 * embeddings_project; the sequence head's dense + exact GELU. */
static void electra_gradcheck(bert_train_task task, float drop)
{
    static const int32_t types[10] = {0, 0, 0, 1, 1, 0, 0, 1, 0, 0};
    static const tr_fd fd = {1, 1e-2f, 1e-3, 1.0};
    const char *cfg = tr_write_config(
        "grad-electra",
        "{\"architectures\":[\"ElectraForSequenceClassification\"],"
        "\"model_type\":\"electra\",\"vocab_size\":13,\"embedding_size\":4,"
        "\"hidden_size\":6,\"num_hidden_layers\":2,\"num_attention_heads\":2,"
        "\"intermediate_size\":7,\"hidden_act\":\"gelu\","
        "\"max_position_embeddings\":9,\"type_vocab_size\":2,"
        "\"layer_norm_eps\":1e-5,\"hidden_dropout_prob\":%g,"
        "\"attention_probs_dropout_prob\":%g,\"initializer_range\":0.5,"
        "\"pad_token_id\":0}",
        drop, drop);
    tr_model_gradcheck(cfg, task, types, 0.0f, &fd, NULL, &g_worst_model);
}

static void test_model_grad_electra_seq(void) { electra_gradcheck(BERT_TRAIN_SEQUENCE, 0.2f); }
static void test_model_grad_electra_tok(void) { electra_gradcheck(BERT_TRAIN_TOKEN, 0.1f); }

static void test_model_grad_roberta_seq(void) { roberta_gradcheck(BERT_TRAIN_SEQUENCE, 0.2f); }
static void test_model_grad_roberta_tok(void) { roberta_gradcheck(BERT_TRAIN_TOKEN, 0.1f); }

/* The tiny task (trainutil.h) without dropout or token types. */
static void test_learns_tiny(void)
{
    int acc = tr_train_tiny(write_tiny_config("tiny", "gelu", 0.0f), 0, 1, 1,
                            NULL, NULL);
    CU_ASSERT_EQUAL(acc, 100);
}

static void test_deterministic(void)
{
    tr_check_deterministic(write_tiny_config("tiny", "gelu", 0.0f), 0);
}

/* Layer-wise learning-rate decay: one AdamW step from the same weights and
 * gradient moves every parameter by lr_scale times the step without decay
 * (both of AdamW's terms are linear in lr), lr_scale being d^(L - l) in
 * layer l, d^(L + 1) in the embeddings and 1 in the heads. */
static void layer_lr_decay(size_t layers)
{
    const char *cfg = tr_write_config(
        "lrd",
        "{\"architectures\":[\"BertForMaskedLM\"],\"model_type\":\"bert\","
        "\"vocab_size\":13,\"hidden_size\":6,\"num_hidden_layers\":%zu,"
        "\"num_attention_heads\":2,\"intermediate_size\":7,"
        "\"hidden_act\":\"gelu\",\"max_position_embeddings\":9,"
        "\"type_vocab_size\":2,\"layer_norm_eps\":1e-5,"
        "\"initializer_range\":0.5,\"pad_token_id\":0}",
        layers);
    bert_train_params p = bert_train_default_params();
    p.num_labels = 3;
    p.lr = 1e-2f;
    p.seed = 5;
    p.dropout = 0;
    static const int32_t ids[10] = {2, 5, 7, 3, 1, 2, 9, 4, 0, 0};
    static const size_t lens[2] = {5, 3};
    static const int32_t labels[2] = {1, 2};
    bert_train_batch b = {2, 5, ids, NULL, lens, labels};
    float d = 0.5f;
    bert_trainer *t[2];
    float *before = NULL;
    for (int i = 0; i < 2; i++) {
        p.layer_lr_decay = i ? d : 1.0f;
        t[i] = tr_trainer_create(NULL, cfg, &p);
        if (!i) {
            before = malloc(t[0]->nparams * sizeof *before);
            CU_ASSERT_FATAL(before != NULL);
            memcpy(before, t[0]->params, t[0]->nparams * sizeof *before);
        }
        CU_ASSERT_EQUAL_FATAL(t[i]->nparams, t[0]->nparams);
        CU_ASSERT(memcmp(before, t[i]->params,
                         t[0]->nparams * sizeof *before) == 0);
        bert_error err;
        CU_ASSERT_EQUAL_FATAL(bert_trainer_accumulate(t[i], &b, 1.0f, NULL, &err), 0);
        CU_ASSERT_EQUAL_FATAL(bert_trainer_update(t[i], NULL, &err), 0);
    }
    size_t L = t[0]->L, checked = 0, bad = 0;
    for (int k = 0; k < P_COUNT; k++) {
        if (!t[0]->pt[k])
            continue;
        size_t off = (size_t)(t[0]->pt[k] - t[0]->params), n = t[0]->sizes[k];
        int layer = k >= P_QKVW && k <= P_LN2B;
        int emb = k <= P_LNEB || k == P_EPW || k == P_EPB;
        for (size_t i = 0; i < n; i++) {
            double s = emb ? pow(d, (double)(L + 1))
                     : layer ? pow(d, (double)(L - i / (n / L))) : 1.0;
            double d1 = (double)t[0]->params[off + i] - before[off + i];
            double d2 = (double)t[1]->params[off + i] - before[off + i];
            /* float32 weights near 1 (LayerNorm) round a step of 1e-2 to
             * about 1e-7 */
            if (fabs(d2 - s * d1) > 1e-3 * fabs(d1) + 2e-7)
                bad++;
            checked += d1 != 0.0;
        }
    }
    CU_ASSERT(checked > 50 * layers);
    CU_ASSERT_EQUAL(bad, 0);
    if (bad)
        printf("\n  %zu of the parameters moved by the wrong amount\n", bad);
    free(before);
    for (int i = 0; i < 2; i++)
        bert_trainer_free(t[i]);
    /* out of range: refused */
    for (int i = 0; i < 3; i++) {
        static const float badd[3] = {0.0f, 1.5f, -0.5f};
        bert_trainer *x = NULL;
        bert_error err;
        p.layer_lr_decay = badd[i];
        CU_ASSERT_EQUAL(bert_trainer_create(NULL, cfg, &p, &x, &err), BERT_EINVAL);
        CU_ASSERT(x == NULL);
    }
}

static void test_layer_lr_decay(void)
{
    layer_lr_decay(1); /* the one layer learns at lr * d */
    layer_lr_decay(3);
}

/* R-Drop without dropout: both passes are the same forward, so the loss,
 * the gradient and the logits are those of the plain step (the KL term is
 * 0 and the two cross-entropies' mean is the one); with dropout the loss
 * differs.  Masked LM and bad weights are refused. */
static void test_rdrop(void)
{
    static const int32_t ids[10] = {2, 5, 7, 3, 1, 2, 9, 4, 0, 0};
    static const size_t lens[2] = {5, 3};
    static const int32_t seq[2] = {1, 2};
    static const int32_t tok[10] = {-100, 1, 2, 0, -100, -100, 2, 1, -100, -100};
    for (int task = BERT_TRAIN_SEQUENCE; task <= BERT_TRAIN_TOKEN; task++) {
        const char *cfg = write_tiny_config("rdrop", "gelu", 0.1f);
        bert_train_params p = bert_train_default_params();
        p.task = (bert_train_task)task;
        p.num_labels = 3;
        p.seed = 5;
        bert_train_batch b = {2, 5, ids, NULL, lens,
                              task == BERT_TRAIN_SEQUENCE ? seq : tok};
        size_t nl = task == BERT_TRAIN_SEQUENCE ? 2 * 3 : 10 * 3;
        bert_trainer *t[2];
        double loss[2];
        float logits[2][30 + 1];
        for (int i = 0; i < 2; i++) {
            p.dropout = 0;
            p.rdrop = i ? 1.0f : 0.0f;
            t[i] = tr_trainer_create(NULL, cfg, &p);
            logits[i][nl] = 12345.0f; /* a guard after the batch's rows */
            bert_error err;
            CU_ASSERT_EQUAL_FATAL(bert__t_run(t[i], &b, 1, 1, 1.0f, logits[i],
                                              &loss[i], &err), 0);
            CU_ASSERT(logits[i][nl] == 12345.0f);
        }
        /* float sums in another order: differences relative to the
         * largest gradient */
        double worst = 0, gmax = 0;
        for (size_t k = 0; k < t[0]->nparams; k++)
            gmax = fmax(gmax, fabs(t[0]->grads[k]));
        for (size_t k = 0; k < t[0]->nparams; k++)
            worst = fmax(worst, fabs(t[1]->grads[k] - t[0]->grads[k]) / gmax);
        printf("\n  %s, no dropout: loss %.9g and %.9g, gradients %.1e ",
               task == BERT_TRAIN_SEQUENCE ? "sequence" : "token", loss[0],
               loss[1], worst);
        CU_ASSERT(fabs(loss[1] - loss[0]) <= 1e-6 * loss[0]);
        CU_ASSERT(gmax > 1e-3 && worst <= 1e-5);
        for (size_t k = 0; k < nl; k++)
            CU_ASSERT(fabs(logits[1][k] - logits[0][k]) <= 1e-5);
        /* with dropout the two passes differ, and the KL term adds */
        bert_trainer_free(t[1]);
        p.dropout = 1;
        p.rdrop = 1.0f;
        t[1] = tr_trainer_create(NULL, cfg, &p);
        bert_error err;
        double l2;
        CU_ASSERT_EQUAL(bert_trainer_accumulate(t[1], &b, 1.0f, &l2, &err), 0);
        CU_ASSERT(isfinite(l2) && fabs(l2 - loss[0]) > 1e-6);
        /* evaluation is one pass, as without R-Drop */
        float ev[2][30];
        CU_ASSERT_EQUAL(bert_trainer_predict(t[0], &b, ev[0], NULL, &err), 0);
        CU_ASSERT_EQUAL(bert_trainer_predict(t[1], &b, ev[1], NULL, &err), 0);
        for (size_t k = 0; k < nl; k++)
            CU_ASSERT(ev[0][k] == ev[1][k]);
        for (int i = 0; i < 2; i++)
            bert_trainer_free(t[i]);
    }
    static const float bad[3] = {-1.0f, NAN, INFINITY};
    const char *cfg = write_tiny_config("rdrop", "gelu", 0.1f);
    for (int i = 0; i < 4; i++) {
        bert_train_params p = bert_train_default_params();
        p.num_labels = 3;
        if (i < 3)
            p.rdrop = bad[i];
        else {
            p.task = BERT_TRAIN_MLM;
            p.rdrop = 0.5f;
        }
        bert_trainer *x = NULL;
        bert_error err;
        CU_ASSERT_EQUAL(bert_trainer_create(NULL, cfg, &p, &x, &err), BERT_EINVAL);
        CU_ASSERT(x == NULL);
    }
}

/* --- fixture -------------------------------------------------------------- */

static void test_fixture_forward(void)
{
    tr_fixture fx;
    if (!tr_fixture_load(&fx, "bert-seq-uncased"))
        return;
    size_t B = fx.B, C = fx.C;
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_SEQUENCE;
    bert_trainer *t = tr_trainer_create(fx.dir, NULL, &p);
    bert_error err;
    float *got = malloc(B * C * 4);
    double worst = tr_fixture_predict(t, &fx, got);
    printf("\n  trainer forward vs expected logits: max |diff| %.3g over %zu "
           "texts\n", worst, B);
    CU_ASSERT(worst <= 1e-4);
    /* save and reload through the trainer: identical logits */
    char out[512];
    snprintf(out, sizeof out, "%s/saved", tr_tmp);
    mkdir(out, 0755);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save(t, out, &err), 0);
    bert_trainer *t2 = tr_trainer_create(out, NULL, &p);
    float *got2 = malloc(B * C * 4);
    tr_fixture_predict(t2, &fx, got2);
    CU_ASSERT(memcmp(got, got2, B * C * 4) == 0);
    bert_trainer_free(t2);
    free(got2);

    /* fine-tune a few steps (weights move), save, reload through the
     * inference API: same logits as the trainer's own forward */
    int32_t *lab = calloc(B, sizeof *lab);
    for (size_t b = 0; b < B; b++)
        lab[b] = (int32_t)(b % 2);
    tr_fixture_finetune(t, &fx, lab, got);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save(t, out, &err), 0);
    double worst2 =
        tr_reload_by_inference(&fx, out, BERT_TRAIN_SEQUENCE, 0, C, got);
    printf("  fine-tuned, saved, reloaded by bert_model_load: max |diff| %.3g\n",
           worst2);
    CU_ASSERT(worst2 <= 1e-5);
    free(lab);
    free(got);
    bert_trainer_free(t);
    tr_fixture_free(&fx);
}

/* A sequence-classification fixture of ../fixtures-roberta-electra: the
 * trainer's forward equals the expected logits; a few fine-tuning steps,
 * saved into tmp/saved-NAME, reload through bert_model_load with the same
 * logits.  Then the MLM task on it is refused with a message (with
 * mlm_refused; else not tried).  Skipped when the fixture is absent. */
static void check_seq_fixture(const char *name, int mlm_refused)
{
    tr_fixture fx;
    char dir[256];
    snprintf(dir, sizeof dir, "../fixtures-roberta-electra/%s", name);
    if (!tr_fixture_load(&fx, dir))
        return;
    size_t B = fx.B, C = fx.C;
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_SEQUENCE;
    bert_trainer *t = tr_trainer_create(fx.dir, NULL, &p);
    bert_error err;
    float *got = malloc(B * C * 4);
    double worst = tr_fixture_predict(t, &fx, got);
    printf("\n  %s: trainer forward vs expected logits: max |diff| "
           "%.3g over %zu texts\n", name, worst, B);
    CU_ASSERT(worst <= 1e-4);
    /* the length bert-train cuts dev texts at is the one the tools use */
    bert_model *m = NULL;
    bert_tokenizer *tok = NULL;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(fx.dir, NULL, &m, &err), BERT_OK);
    CU_ASSERT_EQUAL_FATAL(
        bert_tokenizer_load_for_training(fx.dir, -1, &tok, &err), BERT_OK);
    CU_ASSERT_EQUAL(bert_trainer_max_length(t, tok), bert_model_max_length(m));
    printf("  %s: max length %zu\n", name, bert_trainer_max_length(t, tok));
    bert_tokenizer_free(tok);
    bert_model_free(m);
    int32_t *lab = calloc(B, sizeof *lab);
    for (size_t b = 0; b < B; b++)
        lab[b] = (int32_t)(b % 2);
    tr_fixture_finetune(t, &fx, lab, got);
    char out[512];
    snprintf(out, sizeof out, "%s/saved-%s", tr_tmp, name);
    mkdir(out, 0755);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save(t, out, &err), 0);
    double worst2 =
        tr_reload_by_inference(&fx, out, BERT_TRAIN_SEQUENCE, 0, C, got);
    printf("  %s fine-tuned, saved, reloaded by bert_model_load: max "
           "|diff| %.3g\n", name, worst2);
    CU_ASSERT(worst2 <= 1e-5);
    free(lab);
    free(got);
    bert_trainer_free(t);
    if (mlm_refused) {
        bert_trainer *t2 = NULL;
        p.task = BERT_TRAIN_MLM;
        CU_ASSERT_EQUAL(bert_trainer_create(fx.dir, NULL, &p, &t2, &err),
                        BERT_EUNSUPPORTED);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "mlm"));
    }
    tr_fixture_free(&fx);
}

/* RoBERTa: positions from padding_idx + 1, classifier.dense / out_proj;
 * its MLM task is refused. */
static void test_fixture_roberta(void)
{
    check_seq_fixture("roberta-seq", 1);
}

/* RoBERTa's positions start after padding_idx: a config whose pad_token_id
 * leaves none is refused by bert__config_load, for the trainer as for
 * bert_model_load (the trainer used to compute max_position - (pad + 1)
 * and underflow). */
static void test_roberta_no_positions(void)
{
    static const char fmt[] =
        "{\"architectures\":[\"RobertaForSequenceClassification\"],"
        "\"model_type\":\"roberta\",\"vocab_size\":40,\"hidden_size\":6,"
        "\"num_hidden_layers\":1,\"num_attention_heads\":2,"
        "\"intermediate_size\":7,\"hidden_act\":\"gelu\","
        "\"max_position_embeddings\":9,\"type_vocab_size\":1,"
        "\"pad_token_id\":%d}";
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_SEQUENCE;
    bert_trainer *t = NULL;
    bert_error err;
    CU_ASSERT_EQUAL(bert_trainer_create(NULL,
                                        tr_write_config("roberta-nopos", fmt, 8),
                                        &p, &t, &err),
                    BERT_EFORMAT);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "max_position_embeddings 9 leaves "
                                            "no position after padding_idx 8"));
    /* pad 7: one position (8) is left, and the trainer takes one token */
    CU_ASSERT_EQUAL_FATAL(
        bert_trainer_create(NULL, tr_write_config("roberta-onepos", fmt, 7),
                            &p, &t, &err),
        BERT_OK);
    bert_trainer_free(t);
}

/* ELECTRA: embedding_size 32 != hidden 64, so the trainer's
 * embeddings_project is exercised. */
static void test_fixture_electra(void)
{
    check_seq_fixture("electra-seq", 0);
}

static void summary(void)
{
    printf("worst relative error: kernels (double, finite differences) "
           "%.3g, float kernels vs double %.3g, whole model %.3g\n",
           g_worst_kernel, g_worst_f32, g_worst_model);
}

int main(void)
{
    static const tr_test tests[] = {
        {"matmul backward", test_matmul},
        {"layernorm backward", test_layernorm},
        {"activations backward", test_activations},
        {"attention backward", test_attention},
        {"embeddings backward", test_embeddings},
        {"cross-entropy backward", test_crossentropy},
        {"R-Drop KL backward", test_sym_kl},
        {"dropout backward", test_dropout},
        {"float kernels vs double", test_float_vs_double},
        {"model gradient: sequence", test_model_grad_seq},
        {"model gradient: sequence+dropout", test_model_grad_seq_drop},
        {"model gradient: token", test_model_grad_tok},
        {"model gradient: mlm", test_model_grad_mlm},
        {"model gradient: sequence+dropout, R-Drop", test_model_grad_seq_rdrop},
        {"model gradient: token+dropout, R-Drop", test_model_grad_tok_rdrop},
        {"tiny model learns", test_learns_tiny},
        {"deterministic", test_deterministic},
        {"layer-wise learning-rate decay", test_layer_lr_decay},
        {"R-Drop: the plain step without dropout, refusals", test_rdrop},
        {"fixture forward", test_fixture_forward},
        {"model gradient: roberta sequence+dropout", test_model_grad_roberta_seq},
        {"model gradient: roberta token", test_model_grad_roberta_tok},
        {"fixture forward: roberta", test_fixture_roberta},
        {"roberta: pad_token_id leaving no position refused", test_roberta_no_positions},
        {"model gradient: electra sequence+dropout", test_model_grad_electra_seq},
        {"model gradient: electra token", test_model_grad_electra_tok},
        {"fixture forward: electra", test_fixture_electra},
        {NULL, NULL}};
    return tr_run("train", tests, summary);
}
