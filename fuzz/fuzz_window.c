/* fuzz_window.c - libFuzzer target for the window pipelines with pairs
 * (bert_classify_text_ex, bert_token_logits): the first 4 bytes choose
 * max_length (0-255; 1 and 2 overflowed run_window), stride, the mode and
 * whether a pair follows; the rest is the text, split at the first 0xff
 * byte into text and pair.  Any input must give BERT_OK with finite scores
 * or an error with a message, never a crash.  Models: $FUZZ_MODEL (default
 * data/sentiment) and $FUZZ_TOKEN_MODEL (default data/ner), loaded once. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert.h"

static bert_model *load(const char *env, const char *def, bert_session **s)
{
    const char *dir = getenv(env);
    bert_model *m;
    bert_error err;
    if (bert_model_load(dir && *dir ? dir : def, NULL, &m, &err) ||
        bert_session_create(m, NULL, s, &err))
        abort(); /* the harness is broken, not the library */
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bert_model *sm, *tm;
    static bert_session *ss, *ts;
    static bert_encoding *enc;
    if (!sm) {
        sm = load("FUZZ_MODEL", "data/sentiment", &ss);
        tm = load("FUZZ_TOKEN_MODEL", "data/ner", &ts);
        enc = bert_encoding_create();
    }
    if (size < 4)
        return 0;
    bert_classify_params p = bert_classify_default_params();
    p.window.max_length = data[0];
    p.window.stride = data[1];
    p.window.mode = data[2] & 1 ? BERT_LONG_WINDOWS : BERT_LONG_TRUNCATE;
    int with_pair = data[2] & 2;
    const char *text = (const char *)data + 4, *pair = NULL;
    size_t len = size - 4, plen = 0;
    const uint8_t *cut = memchr(text, 0xff, len);
    if (cut && with_pair) {
        pair = (const char *)cut + 1;
        plen = len - (size_t)(pair - text);
        len = (size_t)((const char *)cut - text);
    }
    /* exact-size copies: no read past the caller's bytes */
    char *t = malloc(len ? len : 1), *q = malloc(plen ? plen : 1);
    memcpy(t, text, len);
    if (pair)
        memcpy(q, pair, plen);
    float logits[16], scores[16];
    int label;
    size_t nw;
    bert_error err;
    err.text[0] = '\0';
    int rc = bert_classify_text_ex(ss, t, len, pair ? q : NULL, plen, &p,
                                   logits, scores, 16, &label, &nw, &err);
    if (rc == BERT_OK) {
        for (size_t i = 0; i < bert_model_config(sm)->num_labels; i++)
            if (!isfinite(scores[i]))
                abort();
    } else if (!err.text[0] || err.status != rc) {
        abort();
    }
    /* token logits in the same mode (no pair) */
    size_t C = bert_model_config(tm)->num_labels, cap = 4096 * C;
    float *tl = malloc(cap * sizeof *tl);
    err.text[0] = '\0';
    rc = bert_token_logits(ts, t, len, &p.window, enc, tl, cap, &nw, &err);
    if (rc != BERT_OK && (!err.text[0] || err.status != rc))
        abort();
    free(tl);
    free(t);
    free(q);
    return 0;
}
