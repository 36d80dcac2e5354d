/* test_windows.c - the long-text window paths of bert.h against windows run
 * by hand through bert_session_run:
 *  - bert_token_logits (BERT_LONG_WINDOWS): windows [CLS] chunk [SEP] whose
 *    chunks start at 0, W - stride, 2 (W - stride), ... as HF's
 *    return_overflowing_tokens + stride (the loop of tokenizers'
 *    Encoding::truncate), every token written exactly once, each from the
 *    window where it is farthest from an edge (ties: earlier), [CLS] from
 *    the first window and the final [SEP] from the last; nothing written past
 *    enc->n rows;
 *  - bert_classify_text_ex: the mean of the window logits, scores and label
 *    from that mean;
 *  - a text that fits (also exactly) gives the un-windowed result, one run;
 *    pairs are truncated; stride >= W and other misuse give the documented
 *    status.
 * Models: the bert-token-cased and bert-seq-uncased fixtures of
 * $SHARED_DIR/fixtures (skips with 77 when absent). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert.h"
#include "tests/testutil.h"

static int n_fail, n_check;
/* The detail of the library call that failed last. */
static bert_error werr;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        n_check++;                                                             \
        if (!(cond)) {                                                         \
            n_fail++;                                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* texts.txt lines joined into one long single text (TABs become spaces). */
static char *long_text(const char *fix, size_t *len)
{
    char path[4200];
    if (strlen(fix) > 4000)
        return NULL;
    snprintf(path, sizeof path, "%s/texts.txt", fix);
    char *t = tu_read_file(path, len);
    if (!t)
        return NULL;
    for (size_t i = 0; i < *len; i++)
        if (t[i] == '\t' || t[i] == '\n')
            t[i] = ' ';
    return t;
}

/* The longest prefix of at most `want` bytes ending on a character. */
static size_t cut(const char *t, size_t len, size_t want)
{
    size_t n = want < len ? want : len;
    while (n < len && n > 0 && (t[n] & 0xc0) == 0x80)
        n--;
    return n;
}

/* Max |a - b| over n floats (NaN counts as infinite). */
static double maxdiff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m))
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* HF's window starts for N content tokens, chunk W, overlap stride: the loop
 * of tokenizers' Encoding::truncate (step_by(W - stride), stop after the
 * window that reaches the end).  Returns the number of windows. */
static size_t hf_windows(size_t N, size_t W, size_t stride, size_t *start,
                         size_t *end, size_t cap)
{
    size_t nw = 0;
    for (size_t s = 0; s < N || (N == 0 && s == 0); s += W - stride) {
        size_t e = s + W < N ? s + W : N;
        if (nw < cap) {
            start[nw] = s;
            end[nw] = e;
        }
        nw++;
        if (e == N)
            break;
    }
    return nw;
}

/* Runs [CLS] ids[1+a .. 1+b) [SEP] alone; C floats per row into out. */
static int run_chunk(bert_session *s, const bert_encoding *enc, size_t a,
                     size_t b, float *out)
{
    size_t k = 0, n = b - a + 2;
    int32_t *ids = malloc(n * sizeof *ids), *types = calloc(n, sizeof *types);
    ids[k++] = enc->ids[0];
    for (size_t i = a; i < b; i++)
        ids[k++] = enc->ids[1 + i];
    ids[k++] = enc->ids[enc->n - 1];
    bert_input in = {ids, types, k};
    bert_outputs o = {out, NULL, NULL};
    int rc = bert_session_run(s, &in, 1, &o, &werr);
    free(ids);
    free(types);
    return rc;
}

#define MAXW 4096

/* ---- token classification ------------------------------------------------- */

static void token_windows(bert_session *s, const bert_model *m,
                          const char *text, size_t len, size_t max_length,
                          size_t stride)
{
    const bert_config *c = bert_model_config(m);
    size_t C = c->num_labels;
    size_t ml = max_length ? max_length : bert_model_max_length(m);
    size_t W = ml - 2;
    bert_window_params p = bert_window_default_params();
    p.mode = BERT_LONG_WINDOWS;
    p.max_length = max_length;
    p.stride = stride;
    bert_encoding *enc = bert_encoding_create();
    size_t nw = 0;

    /* Size the buffer from the ERANGE answer. */
    float dummy[1];
    int rc = bert_token_logits(s, text, len, &p, enc, dummy, 0, &nw, &werr);
    CHECK(rc == BERT_ERANGE, "ml %zu stride %zu: too small a buffer gave %d",
          ml, stride, rc);
    size_t n = enc->n;
    CHECK(n > ml, "long text has only %zu tokens", n);
    /* whole text: as the untruncated tokenizer gives it */
    bert_encoding *whole = bert_encoding_create();
    bert_error err;
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = 0;
    rc = bert_tokenizer_encode(bert_model_tokenizer(m), text, len, NULL, 0,
                               &ep, whole, &err);
    CHECK(rc == BERT_OK && whole->n == n &&
              memcmp(whole->ids, enc->ids, n * sizeof *enc->ids) == 0,
          "enc is not the untruncated encoding (%zu vs %zu tokens)", n,
          whole->n);
    bert_encoding_free(whole);

    /* Sentinels after the n rows must survive; every row must be written. */
    size_t extra = 3 * C;
    float *got = malloc((n * C + extra) * sizeof *got);
    for (size_t i = 0; i < n * C + extra; i++)
        got[i] = NAN;
    rc = bert_token_logits(s, text, len, &p, enc, got, n * C + extra, &nw,
                           &werr);
    CHECK(rc == BERT_OK, "bert_token_logits: %d %s", rc,
          werr.text);
    if (rc != BERT_OK) {
        free(got);
        bert_encoding_free(enc);
        return;
    }
    size_t N = n - 2, ws[MAXW], we[MAXW];
    size_t hw = hf_windows(N, W, stride, ws, we, MAXW);
    CHECK(nw == hw && hw <= MAXW, "ml %zu stride %zu: %zu windows, HF makes %zu",
          ml, stride, nw, hw);
    for (size_t i = 0; i < extra; i++)
        CHECK(isnan(got[n * C + i]), "wrote past the %zu rows", n);
    size_t unwritten = 0;
    for (size_t i = 0; i < n * C; i++)
        unwritten += isnan(got[i]) != 0;
    CHECK(unwritten == 0, "%zu logits never written", unwritten);

    /* Expected: run every window by hand. */
    if (hw > MAXW) {
        free(got);
        bert_encoding_free(enc);
        return;
    }
    float *win = malloc(hw * ml * C * sizeof *win);
    for (size_t w = 0; w < hw && w < MAXW; w++) {
        CHECK(we[w] - ws[w] <= W && (w == 0 || ws[w] == ws[w - 1] + W - stride),
              "window %zu bad", w);
        rc = run_chunk(s, enc, ws[w], we[w], win + w * ml * C);
        CHECK(rc == BERT_OK, "window %zu run: %d", w, rc);
    }
    /* coverage: every content token is in some window; the windows overlap
     * by exactly `stride` tokens (the last one by at least that) */
    size_t *cover = calloc(N, sizeof *cover);
    for (size_t w = 0; w < hw; w++) {
        for (size_t i = ws[w]; i < we[w]; i++)
            cover[i]++;
        if (w + 1 < hw)
            CHECK(we[w] - ws[w + 1] == stride,
                  "windows %zu/%zu overlap by %zu, not %zu", w, w + 1,
                  we[w] - ws[w + 1], stride);
    }
    size_t uncovered = 0;
    for (size_t i = 0; i < N; i++)
        uncovered += cover[i] == 0;
    CHECK(uncovered == 0, "%zu tokens in no window", uncovered);
    free(cover);

    double md = maxdiff(got, win, C); /* [CLS]: first window */
    CHECK(md == 0, "[CLS] row differs from window 0 by %g", md);
    md = maxdiff(got + (n - 1) * C,
                 win + ((hw - 1) * ml + (we[hw - 1] - ws[hw - 1] + 1)) * C, C);
    CHECK(md == 0, "final [SEP] row differs from the last window by %g", md);
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < N; i++) {
        size_t best = 0, bestd = 0;
        int found = 0;
        for (size_t w = 0; w < hw; w++) {
            if (i < ws[w] || i >= we[w])
                continue;
            size_t d1 = i - ws[w], d2 = we[w] - 1 - i;
            size_t d = d1 < d2 ? d1 : d2;
            if (!found || d > bestd) {
                best = w;
                bestd = d;
                found = 1;
            }
        }
        md = maxdiff(got + (1 + i) * C,
                     win + (best * ml + 1 + i - ws[best]) * C, C);
        if (md != 0) {
            if (!bad)
                fprintf(stderr, "token %zu: differs by %g from window %zu\n",
                        i, md, best);
            bad++;
            if (md > worst)
                worst = md;
        }
    }
    CHECK(bad == 0,
          "ml %zu stride %zu: %zu of %zu token rows differ from their "
          "window's run (max %g)",
          ml, stride, bad, N, worst);
    printf("token windows: max_length %zu stride %zu: %zu tokens, %zu "
           "windows ok\n",
           ml, stride, n, hw);
    free(win);
    free(got);
    bert_encoding_free(enc);
}

/* A text that fits: windows mode = truncation mode = one direct run. */
static void token_fits(bert_session *s, const bert_model *m, const char *text,
                       size_t len)
{
    size_t C = bert_model_config(m)->num_labels;
    bert_encoding *enc = bert_encoding_create();
    bert_window_params p = bert_window_default_params();
    size_t cap = 4096 * C, nw = 99;
    float *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b),
          *d = malloc(cap * sizeof *d);
    int rc = bert_token_logits(s, text, len, &p, enc, a, cap, &nw, &werr);
    CHECK(rc == BERT_OK && nw == 1, "truncate mode: %d, %zu runs", rc, nw);
    size_t n = enc->n;
    bert_input in = {enc->ids, enc->type_ids, n};
    bert_outputs o = {d, NULL, NULL};
    CHECK(bert_session_run(s, &in, 1, &o, &werr) == BERT_OK, "direct run");
    CHECK(maxdiff(a, d, n * C) == 0, "truncate mode != direct run");
    /* windows whose max_length is exactly n, and larger */
    size_t mls[] = {n, n + 1, 0};
    for (size_t k = 0; k < 3; k++) {
        p.mode = BERT_LONG_WINDOWS;
        p.max_length = mls[k];
        p.stride = 1;
        nw = 99;
        rc = bert_token_logits(s, text, len, &p, enc, b, cap, &nw, &werr);
        CHECK(rc == BERT_OK && nw == 1 && enc->n == n,
              "fits in max_length %zu: status %d, %zu runs, %zu tokens",
              mls[k], rc, nw, enc->n);
        CHECK(maxdiff(b, d, n * C) == 0,
              "fits in max_length %zu: differs from the direct run", mls[k]);
    }
    /* one token too many: two windows */
    p.max_length = n - 1;
    p.stride = 0;
    rc = bert_token_logits(s, text, len, &p, enc, b, cap, &nw, &werr);
    CHECK(rc == BERT_OK && nw == 2, "max_length n-1: %d, %zu runs", rc, nw);
    free(a);
    free(b);
    free(d);
    bert_encoding_free(enc);
}

static void token_errors(bert_session *s, const bert_model *m,
                         const char *text, size_t len)
{
    size_t C = bert_model_config(m)->num_labels;
    size_t ml = bert_model_max_length(m);
    /* the fixture's config.json records no aggregation_strategy */
    CHECK(bert_model_aggregation(m) == -1 && bert_model_aggregation(NULL) == -1,
          "bert_model_aggregation: %d without the key", bert_model_aggregation(m));
    CHECK(bert_model_default_aggregation(m) == BERT_AGG_FIRST &&
              bert_model_default_aggregation(NULL) == BERT_AGG_FIRST,
          "bert_model_default_aggregation: %d without the key",
          (int)bert_model_default_aggregation(m));
    bert_encoding *enc = bert_encoding_create();
    size_t cap = 8192 * C;
    float *buf = malloc(cap * sizeof *buf);
    bert_window_params p = bert_window_default_params();
    p.mode = BERT_LONG_WINDOWS;
    size_t strides[] = {ml - 2, ml - 1, ml + 100};
    for (size_t k = 0; k < 3; k++) {
        p.stride = strides[k];
        int rc = bert_token_logits(s, text, len, &p, enc, buf, cap, NULL,
                                   &werr);
        CHECK(rc == BERT_EINVAL, "stride %zu >= W %zu: status %d", strides[k],
              ml - 2, rc);
        CHECK(*werr.text != '\0', "stride error without detail");
    }
    p.max_length = 12;
    p.stride = 9;
    size_t nw = 0;
    int rc = bert_token_logits(s, text, len, &p, enc, buf, cap, &nw, &werr);
    CHECK(rc == BERT_OK && nw == enc->n - 2 - 10 + 1,
          "stride W-1: status %d, %zu windows for %zu tokens", rc, nw, enc->n);
    p.max_length = 2;
    p.stride = 0;
    rc = bert_token_logits(s, text, len, &p, enc, buf, cap, NULL, &werr);
    CHECK(rc == BERT_EINVAL, "max_length 2 in window mode: status %d", rc);
    p = bert_window_default_params();
    rc = bert_token_logits(s, "caf\xc3", 4, &p, enc, buf, cap, NULL, &werr);
    CHECK(rc == BERT_EUTF8, "invalid UTF-8: status %d", rc);
    rc = bert_token_logits(s, NULL, 0, &p, enc, buf, cap, NULL, &werr);
    CHECK(rc == BERT_EINVAL, "NULL text: status %d", rc);
    rc = bert_token_logits(s, "a", 1, &p, NULL, buf, cap, NULL, &werr);
    CHECK(rc == BERT_EINVAL, "NULL enc: status %d", rc);
    float sc[16];
    rc = bert_classify_text_ex(s, "a", 1, NULL, 0, NULL, NULL, sc, 16, NULL,
                               NULL, &werr);
    CHECK(rc == BERT_EINVAL, "classify on a token model: status %d", rc);
    free(buf);
    bert_encoding_free(enc);
}

/* ---- sequence classification ---------------------------------------------- */

static void seq_windows(bert_session *s, const bert_model *m, const char *text,
                        size_t len, size_t max_length, size_t stride)
{
    size_t C = bert_model_config(m)->num_labels;
    size_t ml = max_length ? max_length : bert_model_max_length(m);
    size_t W = ml - 2;
    bert_classify_params p = bert_classify_default_params();
    p.window.mode = BERT_LONG_WINDOWS;
    p.window.max_length = max_length;
    p.window.stride = stride;
    float lg[16], sc[16], want_sc[16];
    int label = -1;
    size_t nw = 0;
    int rc = bert_classify_text_ex(s, text, len, NULL, 0, &p, lg, sc, 16,
                                   &label, &nw, &werr);
    CHECK(rc == BERT_OK, "classify windows: %d %s", rc,
          werr.text);

    bert_encoding *enc = bert_encoding_create();
    bert_error err;
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = 0;
    rc = bert_tokenizer_encode(bert_model_tokenizer(m), text, len, NULL, 0,
                               &ep, enc, &err);
    CHECK(rc == BERT_OK && enc->n > ml, "whole text: %d, %zu tokens", rc,
          enc->n);
    size_t N = enc->n - 2, ws[MAXW], we[MAXW];
    size_t hw = hf_windows(N, W, stride, ws, we, MAXW);
    CHECK(nw == hw, "ml %zu stride %zu: %zu windows, HF makes %zu", ml, stride,
          nw, hw);
    /* mean of the window logits, summed in window order in float */
    float acc[16] = {0}, one[16];
    for (size_t w = 0; w < hw && w < MAXW; w++) {
        CHECK(run_chunk(s, enc, ws[w], we[w], one) == BERT_OK, "window %zu",
              w);
        for (size_t i = 0; i < C; i++)
            acc[i] += one[i];
    }
    for (size_t i = 0; i < C; i++)
        acc[i] /= (float)hw;
    double md = maxdiff(lg, acc, C);
    CHECK(md <= 1e-6, "ml %zu stride %zu: logits differ from the mean of the "
                      "windows by %g",
          ml, stride, md);
    bert_apply_function(m, BERT_FUNC_DEFAULT, lg, want_sc);
    CHECK(maxdiff(sc, want_sc, C) == 0, "scores are not f(mean logits)");
    int best = 0;
    for (size_t i = 1; i < C; i++)
        if (acc[i] > acc[best])
            best = (int)i;
    CHECK(label == best, "label %d, arg-max of the mean %d", label, best);
    printf("sequence windows: max_length %zu stride %zu: %zu tokens, %zu "
           "windows, max diff %g\n",
           ml, stride, enc->n, hw, md);
    bert_encoding_free(enc);
}

static void seq_fits_and_errors(bert_session *s, const bert_model *m,
                                const char *longt, size_t longlen)
{
    size_t C = bert_model_config(m)->num_labels;
    size_t ml = bert_model_max_length(m);
    const char *t = "The quick brown fox jumps over the lazy dog.";
    size_t tl = strlen(t);
    float a[16], b[16], sa[16], sb[16], d[16];
    int la = -1, lb = -1;
    size_t nw = 99;
    bert_classify_params p = bert_classify_default_params();
    int rc = bert_classify_text_ex(s, t, tl, NULL, 0, &p, a, sa, 16, &la, &nw,
                                   &werr);
    CHECK(rc == BERT_OK && nw == 1, "truncate: %d, %zu runs", rc, nw);
    bert_encoding *enc = bert_encoding_create();
    bert_error err;
    rc = bert_tokenizer_encode(bert_model_tokenizer(m), t, tl, NULL, 0, NULL,
                               enc, &err);
    bert_input in = {enc->ids, enc->type_ids, enc->n};
    bert_outputs o = {d, NULL, NULL};
    CHECK(bert_session_run(s, &in, 1, &o, &werr) == BERT_OK, "direct run");
    CHECK(maxdiff(a, d, C) == 0, "classify (truncate) != direct run");
    size_t n = enc->n;
    size_t mls[] = {0, n, n + 3};
    for (size_t k = 0; k < 3; k++) {
        p.window.mode = BERT_LONG_WINDOWS;
        p.window.max_length = mls[k];
        p.window.stride = 2;
        rc = bert_classify_text_ex(s, t, tl, NULL, 0, &p, b, sb, 16, &lb, &nw,
                                   &werr);
        CHECK(rc == BERT_OK && nw == 1 && lb == la &&
                  maxdiff(a, b, C) == 0 && maxdiff(sa, sb, C) == 0,
              "fits in max_length %zu: status %d, %zu runs, differs by %g",
              mls[k], rc, nw, maxdiff(a, b, C));
    }
    p.window.max_length = n - 1;
    p.window.stride = 0;
    rc = bert_classify_text_ex(s, t, tl, NULL, 0, &p, b, NULL, 16, NULL, &nw,
                               &werr);
    CHECK(rc == BERT_OK && nw == 2, "one token over: %d, %zu runs", rc, nw);

    /* A pair is truncated even in window mode. */
    p = bert_classify_default_params();
    rc = bert_classify_text_ex(s, longt, longlen, t, tl, &p, a, NULL, 16, NULL,
                               &nw, &werr);
    CHECK(rc == BERT_OK && nw == 1, "pair truncate: %d", rc);
    p.window.mode = BERT_LONG_WINDOWS;
    p.window.stride = 8;
    rc = bert_classify_text_ex(s, longt, longlen, t, tl, &p, b, NULL, 16, NULL,
                               &nw, &werr);
    CHECK(rc == BERT_OK && nw == 1 && maxdiff(a, b, C) == 0,
          "pair in window mode: %d, %zu runs, differs by %g", rc, nw,
          maxdiff(a, b, C));
    /* A long single text in truncate mode: one run of the first ml tokens. */
    p = bert_classify_default_params();
    rc = bert_classify_text_ex(s, longt, longlen, NULL, 0, &p, a, NULL, 16,
                               NULL, &nw, &werr);
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = ml;
    bert_tokenizer_encode(bert_model_tokenizer(m), longt, longlen, NULL, 0, &ep,
                          enc, &err);
    in.ids = enc->ids;
    in.type_ids = enc->type_ids;
    in.n = enc->n;
    CHECK(enc->n == ml && bert_session_run(s, &in, 1, &o, &werr) == BERT_OK,
          "truncated run");
    CHECK(rc == BERT_OK && nw == 1 && maxdiff(a, d, C) == 0,
          "long text, truncate mode: %d, %zu runs", rc, nw);

    /* misuse */
    p.window.mode = BERT_LONG_WINDOWS;
    size_t strides[] = {ml - 2, ml, 100000};
    for (size_t k = 0; k < 3; k++) {
        p.window.stride = strides[k];
        rc = bert_classify_text_ex(s, longt, longlen, NULL, 0, &p, a, NULL, 16,
                                   NULL, NULL, &werr);
        CHECK(rc == BERT_EINVAL, "classify stride %zu: status %d", strides[k],
              rc);
    }
    p.window.stride = 0;
    p.window.max_length = 2;
    rc = bert_classify_text_ex(s, t, tl, NULL, 0, &p, a, NULL, 16, NULL, NULL,
                               &werr);
    CHECK(rc == BERT_EINVAL, "max_length 2: status %d", rc);
    /* max_length 1 and 2 in truncate mode, alone and with a pair: the
     * windows of 1 - 2 tokens used to wrap and overflow the scratch */
    for (size_t k = 1; k <= 2; k++) {
        p = bert_classify_default_params();
        p.window.max_length = k;
        rc = bert_classify_text_ex(s, longt, longlen, NULL, 0, &p, a, NULL, 16,
                                   NULL, NULL, &werr);
        CHECK(rc == BERT_EINVAL, "truncate max_length %zu: status %d", k, rc);
        rc = bert_classify_text_ex(s, t, tl, t, tl, &p, a, NULL, 16, NULL,
                                   NULL, &werr);
        CHECK(rc == BERT_EINVAL, "pair max_length %zu: status %d", k, rc);
    }
    p = bert_classify_default_params();
    p.window.max_length = 3;
    rc = bert_classify_text_ex(s, t, tl, t, tl, &p, a, NULL, 16, NULL, NULL,
                               &werr);
    CHECK(rc == BERT_OK, "pair max_length 3: status %d", rc);
    rc = bert_classify_text_ex(s, t, tl, NULL, 0, NULL, a, NULL, C - 1, NULL,
                               NULL, &werr);
    CHECK(rc == BERT_ERANGE, "n < C: status %d", rc);
    rc = bert_classify_text_ex(s, "\xff", 1, NULL, 0, NULL, a, NULL, 16, NULL,
                               NULL, &werr);
    CHECK(rc == BERT_EUTF8, "invalid UTF-8: status %d", rc);
    rc = bert_token_logits(s, t, tl, NULL, enc, a, 16, NULL, &werr);
    CHECK(rc == BERT_EINVAL, "token logits on a sequence model: status %d", rc);
    bert_encoding_free(enc);
}

static int open_model(const char *dir, bert_model **m, bert_session **s)
{
    bert_error err;
    if (bert_model_load(dir, NULL, m, &err) != BERT_OK) {
        fprintf(stderr, "%s: %s\n", dir, err.text);
        return -1;
    }
    if (bert_session_create(*m, NULL, s, &err) != BERT_OK) {
        fprintf(stderr, "%s: %s\n", dir, err.text);
        bert_model_free(*m);
        return -1;
    }
    return 0;
}

int main(void)
{
    const char *shared = getenv("SHARED_DIR");
    char tokd[4096], seqd[4096];
    snprintf(tokd, sizeof tokd, "%s/fixtures/bert-token-cased",
             shared ? shared : "../shared");
    snprintf(seqd, sizeof seqd, "%s/fixtures/bert-seq-uncased",
             shared ? shared : "../shared");
    size_t len;
    char *text = long_text(tokd, &len);
    if (!text) {
        printf("SKIP: %s/texts.txt not found (set SHARED_DIR)\n", tokd);
        return 77;
    }
    bert_model *m;
    bert_session *s;
    if (open_model(tokd, &m, &s))
        return 1;
    /* A few thousand tokens are plenty; keep the test fast.  Cuts fall on
     * character boundaries. */
    size_t tl = cut(text, len, 6000), sl = cut(text, len, 1500);
    token_windows(s, m, text, tl, 0, 0);
    token_windows(s, m, text, tl, 0, 16);
    token_windows(s, m, text, sl, 0, 61); /* W - 1: step 1 */
    token_windows(s, m, text, sl, 16, 5);
    token_windows(s, m, text, sl, 17, 4);
    token_windows(s, m, text, sl, 3, 0); /* one token per window */
    token_fits(s, m, "The quick brown fox jumps over the lazy dog.", 44);
    token_errors(s, m, text, sl);
    bert_session_free(s);
    bert_model_free(m);

    if (open_model(seqd, &m, &s))
        return 1;
    seq_windows(s, m, text, tl, 0, 0);
    seq_windows(s, m, text, tl, 0, 32);
    seq_windows(s, m, text, sl, 16, 5);
    seq_windows(s, m, text, sl, 20, 17);
    seq_fits_and_errors(s, m, text, tl);
    bert_session_free(s);
    bert_model_free(m);
    free(text);
    printf("%d checks, %d failed\n", n_check, n_fail);
    return n_fail ? 1 : 0;
}
