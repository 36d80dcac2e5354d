/* test_model.c - parity with Hugging Face on every fixture of
 * $SHARED_DIR/fixtures and $SHARED_DIR/fixtures-roberta-electra: ids from
 * the tokenizer, then logits, pooler_output and last_hidden_state (where
 * attention_mask == 1) within 1e-4 absolute, for the whole texts file as
 * one batch and one text at a time, with 1 and 2 threads.  Skips (77) when
 * the shared directory is absent. */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "libbert/safetensors.h"
#include "tests/testutil.h"

#define TOL 1e-4
/* Bounds of the reduced precisions (see check_precisions). */
#define BF16_BOUND_LOGITS 0.03
#define BF16_BOUND_HIDDEN 0.06
#define INT8_BOUND_LOGITS 0.1
#define INT8_BOUND_HIDDEN 0.2

static char fixtures_dir[4096];
static char *names[64];
static size_t n_names;

/* ---- helpers -------------------------------------------------------------- */

typedef struct expected {
    bert_st_file st;
    size_t B, S, H, C;
    int64_t *ids, *types, *mask;
    float *hidden, *pooler, *logits; /* NULL when absent */
    int token_logits;
} expected;

static float *get_f32(const bert_st_file *st, const char *name)
{
    const bert_st_tensor *t = bert__st_find(st, name);
    if (!t)
        return NULL;
    float *p = malloc(t->nelem * sizeof *p);
    bert__st_to_f32(t, p);
    return p;
}

static int64_t *get_i64(const bert_st_file *st, const char *name)
{
    const bert_st_tensor *t = bert__st_find(st, name);
    if (!t)
        return NULL;
    int64_t *p = malloc(t->nelem * sizeof *p);
    if (bert__st_to_i64(t, p) != BERT_OK) {
        free(p);
        return NULL;
    }
    return p;
}

static int load_expected(const char *dir, expected *e)
{
    char path[8400];
    bert_error err;
    memset(e, 0, sizeof *e);
    if (snprintf(path, sizeof path, "%s/expected.safetensors", dir) >= (int)sizeof path)
        return -1;
    if (bert__st_open(path, &e->st, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.text);
        return -1;
    }
    const bert_st_tensor *h = bert__st_find(&e->st, "last_hidden_state");
    if (!h || h->ndim != 3)
        return -1;
    e->B = h->shape[0];
    e->S = h->shape[1];
    e->H = h->shape[2];
    e->ids = get_i64(&e->st, "input_ids");
    e->types = get_i64(&e->st, "token_type_ids");
    e->mask = get_i64(&e->st, "attention_mask");
    e->hidden = get_f32(&e->st, "last_hidden_state");
    e->pooler = get_f32(&e->st, "pooler_output");
    e->logits = get_f32(&e->st, "logits");
    const bert_st_tensor *l = bert__st_find(&e->st, "logits");
    if (l) {
        e->token_logits = l->ndim == 3;
        e->C = l->shape[l->ndim - 1];
    }
    return e->ids && e->types && e->mask && e->hidden ? 0 : -1;
}

static void free_expected(expected *e)
{
    free(e->ids);
    free(e->types);
    free(e->mask);
    free(e->hidden);
    free(e->pooler);
    free(e->logits);
    bert__st_close(&e->st);
}

/* The expected inputs as the library takes them: ids and type ids (B x S,
 * int32) and each sequence's length (its attention_mask ones). */
static void inputs_of(const expected *e, int32_t **ids, int32_t **types,
                      size_t **lens)
{
    size_t BS = e->B * e->S;
    *ids = malloc(BS * sizeof **ids);
    *types = malloc(BS * sizeof **types);
    *lens = calloc(e->B, sizeof **lens);
    CU_ASSERT_FATAL(*ids && *types && *lens);
    for (size_t i = 0; i < BS; i++) {
        (*ids)[i] = (int32_t)e->ids[i];
        (*types)[i] = (int32_t)e->types[i];
        if (e->mask[i])
            (*lens)[i / e->S]++;
    }
}

/* ---- the check ------------------------------------------------------------ */

typedef struct maxdiff {
    double logits, pooler, hidden;
    double cls; /* logits and pooler of the run without hidden states (the
                   [CLS]-only last layer) */
} maxdiff;

static void upd(double *m, double d)
{
    if (!(d <= *m)) /* NaN propagates as a failure */
        *m = isnan(d) ? INFINITY : d;
}

/* Runs sequences [b0, b1), rep times over (rep * (b1 - b0) <= 512), as
 * one batch and compares.  Repeated, a batch has more rows than the
 * encoder takes in one block (encoder.c), so the blocks are checked too. */
static int run_compare(bert_session *s, const bert_model *m, const expected *e,
                       int32_t *ids, int32_t *types, const size_t *lens,
                       size_t b0, size_t b1, size_t rep, maxdiff *md)
{
    const bert_config *c = bert_model_config(m);
    size_t H = e->H, C = c->num_labels, T = 0, B = 0;
    bert_input in[512];
    for (size_t r = 0; r < rep; r++)
        for (size_t b = b0; b < b1 && B < 512; b++, B++) {
            in[B].ids = ids + b * e->S;
            in[B].type_ids = types + b * e->S;
            in[B].n = lens[b];
            T += lens[b];
        }
    float *hidden = malloc(T * H * sizeof(float));
    float *pooler = malloc(B * H * sizeof(float));
    size_t nlog = (e->token_logits ? T : B) * (C ? C : 1);
    float *logits = malloc(nlog * sizeof(float));
    bert_outputs out = {logits, pooler, hidden};
    bert_error err;
    int rc = bert_session_run(s, in, B, &out, &err);
    if (rc != BERT_OK) {
        fprintf(stderr, "run failed: %s: %s\n", bert_strerror(rc),
                err.text);
        free(hidden);
        free(pooler);
        free(logits);
        return -1;
    }
    size_t row = 0;
    for (size_t j = 0; j < B; j++) {
        size_t b = b0 + j % (b1 - b0);
        for (size_t t = 0; t < lens[b]; t++, row++) {
            const float *want = e->hidden + (b * e->S + t) * H;
            for (size_t i = 0; i < H; i++)
                upd(&md->hidden, fabs((double)hidden[row * H + i] - want[i]));
            if (e->logits && e->token_logits) {
                const float *wl = e->logits + (b * e->S + t) * e->C;
                for (size_t i = 0; i < C; i++)
                    upd(&md->logits, fabs((double)logits[row * C + i] - wl[i]));
            }
        }
        if (e->pooler)
            for (size_t i = 0; i < H; i++)
                upd(&md->pooler, fabs((double)pooler[j * H + i] -
                                      e->pooler[b * H + i]));
        if (e->logits && !e->token_logits)
            for (size_t i = 0; i < C; i++)
                upd(&md->logits, fabs((double)logits[j * C + i] -
                                      e->logits[b * e->C + i]));
    }
    /* Again without hidden states: sequence models then compute the last
     * layer for the [CLS] rows only. */
    if (!e->token_logits) {
        memset(pooler, 0xff, B * H * sizeof(float)); /* NaN if not written */
        memset(logits, 0xff, nlog * sizeof(float));
        bert_outputs cls_out = {logits, pooler, NULL};
        rc = bert_session_run(s, in, B, &cls_out, NULL);
        if (rc != BERT_OK)
            upd(&md->cls, INFINITY);
        for (size_t j = 0; rc == BERT_OK && j < B; j++) {
            size_t b = b0 + j % (b1 - b0);
            if (e->pooler)
                for (size_t i = 0; i < H; i++)
                    upd(&md->cls, fabs((double)pooler[j * H + i] -
                                       e->pooler[b * H + i]));
            if (e->logits)
                for (size_t i = 0; i < C; i++)
                    upd(&md->cls, fabs((double)logits[j * C + i] -
                                       e->logits[b * e->C + i]));
        }
    }
    free(hidden);
    free(pooler);
    free(logits);
    return 0;
}

/* Tokenizer check: texts.txt through the model's tokenizer gives the
 * expected ids and type ids. */
static int check_tokens(const bert_model *m, const char *dir,
                        const expected *e, const size_t *lens)
{
    const bert_tokenizer *tok = bert_model_tokenizer(m);
    char path[8400];
    size_t len;
    if (snprintf(path, sizeof path, "%s/texts.txt", dir) >= (int)sizeof path)
        return -1;
    char *txt = tu_read_file(path, &len);
    if (!txt || !tok) {
        free(txt);
        return -1;
    }
    bert_encoding *enc = bert_encoding_create();
    bert_encode_params p = bert_encode_default_params();
    p.max_length = bert_model_max_length(m);
    size_t b = 0, bad = 0;
    char *line = txt, *end = txt + len;
    while (line < end && b < e->B) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            nl = end;
        char *tab = memchr(line, '\t', (size_t)(nl - line));
        const char *pair = NULL;
        size_t plen = 0, tlen = (size_t)(nl - line);
        if (tab) {
            pair = tab + 1;
            plen = (size_t)(nl - pair);
            tlen = (size_t)(tab - line);
        }
        bert_error err;
        int rc = bert_tokenizer_encode(tok, line, tlen, pair, plen, &p, enc,
                                       &err);
        int ok = rc == BERT_OK && enc->n == lens[b];
        for (size_t t = 0; ok && t < enc->n; t++)
            ok = enc->ids[t] == e->ids[b * e->S + t] &&
                 enc->type_ids[t] == e->types[b * e->S + t];
        if (!ok) {
            if (bad++ < 3)
                fprintf(stderr, "  line %zu: ids differ (rc %d, %zu vs %zu "
                        "tokens)\n",
                        b + 1, rc, rc == BERT_OK ? enc->n : 0, lens[b]);
        }
        b++;
        line = nl + 1;
    }
    bert_encoding_free(enc);
    free(txt);
    if (b != e->B) {
        fprintf(stderr, "  texts.txt has %zu lines, expected %zu\n", b, e->B);
        return -1;
    }
    return bad ? -1 : 0;
}

/* The reduced precisions (bert_precision) on every tier this CPU runs them
 * on, 1 and 2 threads, batched and one sequence at a time: the largest
 * differences from Hugging Face's float32 outputs, asserted against bounds
 * measured on these fixtures (docs/precision.md gives the figures; the
 * bounds are about twice the largest seen, so that a kernel or
 * quantization bug, which moves results by far more, fails). */
static const struct {
    bert_precision p;
    double logits, hidden; /* bounds; pooler and cls-only as logits */
} precisions[] = {{BERT_PRECISION_BF16, BF16_BOUND_LOGITS, BF16_BOUND_HIDDEN},
                  {BERT_PRECISION_INT8, INT8_BOUND_LOGITS, INT8_BOUND_HIDDEN}};

static void check_precisions(const char *name, const char *dir,
                             const expected *e, int32_t *ids, int32_t *types,
                             const size_t *lens)
{
    static const bert_kernels tiers[] = {BERT_KERNELS_AMX, BERT_KERNELS_AVX512,
                                         BERT_KERNELS_AVX2};
    for (size_t pi = 0; pi < sizeof precisions / sizeof precisions[0]; pi++)
        for (size_t ti = 0; ti < 3; ti++) {
            bert_precision pr = precisions[pi].p;
            if (!bert_precision_supported(pr, tiers[ti])) {
                printf("\n  %s %s on tier %d: not supported on this CPU: "
                       "skipped", name, bert_precision_name(pr),
                       (int)tiers[ti]);
                continue;
            }
            bert_model_params mp = bert_model_default_params();
            mp.precision = pr;
            mp.kernels = tiers[ti];
            bert_model *m = NULL;
            bert_error err;
            CU_ASSERT_EQUAL_FATAL(bert_model_load(dir, &mp, &m, &err), BERT_OK);
            CU_ASSERT_EQUAL(bert_model_precision(m), pr);
            maxdiff md = {0, 0, 0, 0};
            char kname[48] = "?";
            for (int threads = 1; threads <= 2; threads++) {
                bert_session_params sp = bert_session_default_params();
                sp.n_threads = threads;
                sp.kernels = tiers[ti];
                bert_session *s = NULL;
                CU_ASSERT_EQUAL_FATAL(bert_session_create(m, &sp, &s, &err),
                                      BERT_OK);
                snprintf(kname, sizeof kname, "%s", bert_session_kernels(s, NULL));
                CU_ASSERT(run_compare(s, m, e, ids, types, lens, 0, e->B, 1,
                                      &md) == 0);
                for (size_t b = 0; b < e->B; b++)
                    CU_ASSERT(run_compare(s, m, e, ids, types, lens, b, b + 1, 1,
                                          &md) == 0);
                bert_session_free(s);
            }
            /* A tier that cannot run the precision is refused, naming it. */
            bert_session_params sp = bert_session_default_params();
            sp.kernels = BERT_KERNELS_BLIS;
            bert_session *s = NULL;
            CU_ASSERT_EQUAL(bert_session_create(m, &sp, &s, &err),
                            BERT_EUNSUPPORTED);
            CU_ASSERT(strstr(err.text, "fp32 only") != NULL);
            printf("\n  %s %s %s: largest difference logits %.3g pooler %.3g "
                   "hidden %.3g cls-only %.3g (bounds %.3g / %.3g)",
                   name, bert_precision_name(pr), kname, md.logits, md.pooler,
                   md.hidden, md.cls, precisions[pi].logits,
                   precisions[pi].hidden);
            CU_ASSERT(md.logits <= precisions[pi].logits);
            CU_ASSERT(md.pooler <= precisions[pi].logits);
            CU_ASSERT(md.cls <= precisions[pi].logits);
            CU_ASSERT(md.hidden <= precisions[pi].hidden);
            bert_model_free(m);
        }
}

static void check_fixture(const char *name)
{
    char dir[8400];
    snprintf(dir, sizeof dir, "%s/%s", fixtures_dir, name);
    bert_model *m = NULL;
    bert_error err;
    bert_model_params mp = bert_model_default_params();
#ifdef TEST_MODEL_NO_TOKENIZER /* only for bring-up without the tokenizer */
    mp.load_tokenizer = 0;
#endif
    int rc = bert_model_load(dir, &mp, &m, &err);
    if (rc != BERT_OK) {
        fprintf(stderr, "%s: load failed: %s\n", name, err.text);
        CU_FAIL("model load");
        return;
    }
    expected e;
    if (load_expected(dir, &e) != 0) {
        CU_FAIL("expected.safetensors");
        free_expected(&e);
        bert_model_free(m);
        return;
    }
    int32_t *ids, *types;
    size_t *lens;
    inputs_of(&e, &ids, &types, &lens);
#ifdef TEST_MODEL_NO_TOKENIZER
    int tok_ok = 1;
#else
    int tok_ok = check_tokens(m, dir, &e, lens) == 0;
#endif
    CU_ASSERT(tok_ok);
    size_t rows = 0;
    for (size_t b = 0; b < e.B; b++)
        rows += lens[b];
    size_t rep = rows ? 1100 / rows + 1 : 1;
    if (rep * e.B > 512)
        rep = 512 / e.B;

    /* Every kernel tier this CPU supports, on the model as loaded (weights
     * packed for libbert's kernels where the CPU has them; the blis tier
     * then reads the mapped originals), and libbert's kernels on a model
     * loaded unpacked (kernels = blis at load). */
    static const struct {
        bert_kernels load, run;
    } tiers[] = {{BERT_KERNELS_AUTO, BERT_KERNELS_AMX},
                 {BERT_KERNELS_AUTO, BERT_KERNELS_AVX512},
                 {BERT_KERNELS_AUTO, BERT_KERNELS_AVX2},
                 {BERT_KERNELS_AUTO, BERT_KERNELS_BLIS},
                 {BERT_KERNELS_BLIS, BERT_KERNELS_AUTO}};
    maxdiff all = {0, 0, 0, 0};
    for (size_t ti = 0; ti < sizeof tiers / sizeof tiers[0]; ti++) {
      if (!bert_kernels_supported(tiers[ti].run)) {
          printf("\n  %s: tier %d not supported on this CPU: skipped", name,
                 (int)tiers[ti].run);
          continue;
      }
      bert_model *mt = m;
      if (tiers[ti].load != BERT_KERNELS_AUTO) {
          bert_model_params mq = mp;
          mq.kernels = tiers[ti].load;
          rc = bert_model_load(dir, &mq, &mt, &err);
          CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
      }
      maxdiff tier = {0, 0, 0, 0};
      char kname[48] = "?";
      int packed = 0;
      for (int threads = 1; threads <= 2; threads++) {
        bert_session_params sp = bert_session_default_params();
        sp.n_threads = threads;
        sp.max_tokens = 256; /* forces the arena to grow once */
        sp.kernels = tiers[ti].run;
        bert_session *s = NULL;
        rc = bert_session_create(mt, &sp, &s, &err);
        CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
        snprintf(kname, sizeof kname, "%s", bert_session_kernels(s, &packed));
        maxdiff batched = {0, 0, 0, 0}, single = {0, 0, 0, 0};
        CU_ASSERT(run_compare(s, mt, &e, ids, types, lens, 0, e.B, 1,
                              &batched) == 0);
        for (size_t b = 0; b < e.B; b++)
            CU_ASSERT(run_compare(s, mt, &e, ids, types, lens, b, b + 1, 1,
                                  &single) == 0);
        /* the batch repeated to over 1,100 rows: several encoder blocks */
        CU_ASSERT(run_compare(s, mt, &e, ids, types, lens, 0, e.B, rep,
                              &batched) == 0);
        printf("\n  %s %s%s threads=%d batched (and %zu rows): logits %.3g "
               "pooler %.3g hidden %.3g cls-only %.3g; single: logits %.3g "
               "pooler %.3g hidden %.3g cls-only %.3g",
               name, kname, packed ? " packed" : "", threads, rep * rows,
               batched.logits,
               batched.pooler, batched.hidden, batched.cls, single.logits,
               single.pooler, single.hidden, single.cls);
        maxdiff *acc[2] = {&all, &tier};
        for (int a = 0; a < 2; a++) {
            upd(&acc[a]->logits, batched.logits);
            upd(&acc[a]->logits, single.logits);
            upd(&acc[a]->pooler, batched.pooler);
            upd(&acc[a]->pooler, single.pooler);
            upd(&acc[a]->hidden, batched.hidden);
            upd(&acc[a]->hidden, single.hidden);
            upd(&acc[a]->cls, batched.cls);
            upd(&acc[a]->cls, single.cls);
        }
        bert_session_free(s);
      }
      printf("\n  %s tier %s%s: largest difference logits %.3g pooler %.3g "
             "hidden %.3g cls-only %.3g",
             name, kname, packed ? " (packed weights)" : "", tier.logits,
             tier.pooler, tier.hidden, tier.cls);
      if (mt != m)
          bert_model_free(mt);
    }
    printf("\n  %s: largest difference logits %.3g pooler %.3g hidden %.3g "
           "cls-only %.3g (tokenizer ids %s)\n",
           name, all.logits, all.pooler, all.hidden, all.cls,
           tok_ok ? "match" : "DIFFER");
    CU_ASSERT(all.logits <= TOL);
    CU_ASSERT(all.pooler <= TOL);
    CU_ASSERT(all.hidden <= TOL);
    CU_ASSERT(all.cls <= TOL);
    check_precisions(name, dir, &e, ids, types, lens);
    if (e.logits)
        CU_ASSERT(bert_model_config(m)->num_labels == e.C);
    free(ids);
    free(types);
    free(lens);
    free_expected(&e);
    bert_model_free(m);
}

/* XLM-RoBERTa runs the RoBERTa modules under other names: roberta-seq with
 * model_type "xlm-roberta" and XLMRobertaForSequenceClassification gives
 * the same logits (the tokenizer is roberta-base's BPE, one libbert can
 * load; XLM-R's own Unigram tokenizer is refused by the tokenizer). */
static void test_xlm_roberta(void)
{
    char src[4200], path[4400], dst[4400];
    char tmp[] = "/tmp/test_model_xlmr.XXXXXX";
    snprintf(src, sizeof src, "%s/fixtures-roberta-electra/roberta-seq",
             fixtures_dir);
    char *abs = realpath(src, NULL);
    if (!abs)
        return; /* fixture absent: nothing to check */
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmp));
    static const char *const files[] = {"model.safetensors", "vocab.json",
                                        "merges.txt", "tokenizer.json",
                                        "tokenizer_config.json"};
    const size_t nf = sizeof files / sizeof files[0];
    for (size_t i = 0; i < nf; i++) {
        snprintf(path, sizeof path, "%s/%s", abs, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmp, files[i]);
        CU_ASSERT(symlink(path, dst) == 0);
    }
    snprintf(path, sizeof path, "%s/config.json", abs);
    json_t *cfg = json_load_file(path, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cfg);
    json_object_set_new(cfg, "model_type", json_string("xlm-roberta"));
    json_object_set_new(
        cfg, "architectures",
        json_pack("[s]", "XLMRobertaForSequenceClassification"));
    snprintf(dst, sizeof dst, "%s/config.json", tmp);
    CU_ASSERT(json_dump_file(cfg, dst, 0) == 0);
    json_decref(cfg);

    bert_model *m = NULL;
    bert_error err;
    int rc = bert_model_load(tmp, NULL, &m, &err);
    if (rc)
        fprintf(stderr, "xlm-roberta: %s\n", err.text);
    CU_ASSERT_EQUAL(rc, BERT_OK);
    expected e;
    if (m && load_expected(abs, &e) == 0) {
        int32_t *ids, *types;
        size_t *lens;
        inputs_of(&e, &ids, &types, &lens);
        CU_ASSERT_EQUAL(bert_model_config(m)->family, BERT_FAMILY_ROBERTA);
        bert_session *s = NULL;
        CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
        maxdiff md = {0, 0, 0, 0};
        CU_ASSERT(run_compare(s, m, &e, ids, types, lens, 0, e.B, 1, &md) ==
                  0);
        printf("\n  xlm-roberta (roberta-seq renamed): logits %.3g hidden "
               "%.3g\n",
               md.logits, md.hidden);
        CU_ASSERT(md.logits <= TOL);
        CU_ASSERT(md.hidden <= TOL);
        bert_session_free(s);
        free(ids);
        free(types);
        free(lens);
    } else {
        CU_FAIL("xlm-roberta expected outputs");
    }
    if (m)
        free_expected(&e);
    bert_model_free(m);
    for (size_t i = 0; i < nf; i++) {
        snprintf(dst, sizeof dst, "%s/%s", tmp, files[i]);
        unlink(dst);
    }
    snprintf(dst, sizeof dst, "%s/config.json", tmp);
    unlink(dst);
    rmdir(tmp);
    free(abs);
}

static void test_all_fixtures(void)
{
    CU_ASSERT(n_names > 0);
    for (size_t i = 0; i < n_names; i++)
        check_fixture(names[i]);
}

/* Logits of a few texts through model dir loaded with params mp. */
static int cache_logits(const char *dir, const bert_model_params *mp,
                        float *out, size_t *bytes, int *shared)
{
    bert_model *m = NULL;
    bert_session *s = NULL;
    bert_error err;
    if (bert_model_load(dir, mp, &m, &err) != BERT_OK) {
        printf("\n  load: %s", err.text);
        return -1;
    }
    *bytes = bert_model_packed_bytes(m, shared);
    int rc = bert_session_create(m, NULL, &s, &err);
    static const char *texts[] = {"a gorgeous film", "", "not bad at all, "
                                  "really not bad at all"};
    for (size_t i = 0; rc == BERT_OK && i < 3; i++) {
        int label;
        rc = bert_classify_text(s, texts[i], strlen(texts[i]), NULL, 0,
                                out + 2 * i, 2, &label, &err);
    }
    bert_session_free(s);
    bert_model_free(m);
    return rc;
}

/* The pack cache: the first load writes the file and maps it, a second
 * maps it, results equal the private packing bit for bit; a damaged file
 * is replaced, an unusable directory falls back to private memory. */
static void test_pack_cache(void)
{
    char dir[8400], tmpl[] = "/tmp/test_model_cache.XXXXXX";
    snprintf(dir, sizeof dir, "%s/fixtures/bert-seq-uncased", fixtures_dir);
    if (!bert_kernels_supported(BERT_KERNELS_AVX2)) {
        printf("\n  no packing kernels on this CPU: skipped");
        return;
    }
    char *cdir = mkdtemp(tmpl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cdir);
    bert_model_params mp = bert_model_default_params();
    float ref[6], got[6];
    size_t bytes, bytes0;
    int shared;
    CU_ASSERT_EQUAL_FATAL(cache_logits(dir, &mp, ref, &bytes0, &shared), 0);
    CU_ASSERT(bytes0 > 0);
    CU_ASSERT_EQUAL(shared, 0);
    mp.pack_cache_dir = cdir;
    for (int round = 0; round < 2; round++) { /* writes, then maps */
        memset(got, 0, sizeof got);
        CU_ASSERT_EQUAL(cache_logits(dir, &mp, got, &bytes, &shared), 0);
        CU_ASSERT_EQUAL(shared, 1);
        CU_ASSERT_EQUAL(bytes, bytes0);
        CU_ASSERT(memcmp(got, ref, sizeof ref) == 0);
    }
    /* Exactly one cache file; truncate it: the next load replaces it. */
    char cmd[9000], file[9000] = "";
    DIR *d = opendir(cdir);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".lbpack")) {
            n++;
            snprintf(file, sizeof file, "%s/%s", cdir, de->d_name);
        }
    if (d)
        closedir(d);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL_FATAL(truncate(file, 5000), 0);
    CU_ASSERT_EQUAL(cache_logits(dir, &mp, got, &bytes, &shared), 0);
    CU_ASSERT_EQUAL(shared, 1);
    CU_ASSERT(memcmp(got, ref, sizeof ref) == 0);
    struct stat st;
    CU_ASSERT(stat(file, &st) == 0 && (size_t)st.st_size > bytes0);
    /* A directory that cannot be used: private packing, same results. */
    mp.pack_cache_dir = "/proc/no/such/dir";
    CU_ASSERT_EQUAL(cache_logits(dir, &mp, got, &bytes, &shared), 0);
    CU_ASSERT_EQUAL(shared, 0);
    CU_ASSERT(memcmp(got, ref, sizeof ref) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cdir);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *shared = getenv("SHARED_DIR");
    if (!shared)
        shared = "../shared";
    /* names are "folder/fixture": the RoBERTa and ELECTRA fixtures live in
     * a folder of their own */
    static const char *const folders[] = {"fixtures",
                                          "fixtures-roberta-electra"};
    snprintf(fixtures_dir, sizeof fixtures_dir, "%s", shared);
    for (int f = 0; f < 2; f++) {
        char fd[4200];
        snprintf(fd, sizeof fd, "%s/%s", shared, folders[f]);
        DIR *d = opendir(fd);
        if (!d) {
            if (f)
                continue;
            printf("SKIP: %s not found (set SHARED_DIR)\n", fd);
            return 77;
        }
        struct dirent *de;
        while ((de = readdir(d)) && n_names < 64) {
            char p[4600];
            struct stat st;
            if (de->d_name[0] == '.')
                continue;
            snprintf(p, sizeof p, "%s/%s/expected.safetensors", fd,
                     de->d_name);
            if (stat(p, &st) == 0) {
                snprintf(p, sizeof p, "%s/%s", folders[f], de->d_name);
                names[n_names++] = strdup(p);
            }
        }
        closedir(d);
    }
    qsort(names, n_names, sizeof *names, cmp);

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("model", NULL, NULL);
    CU_add_test(su, "fixtures parity", test_all_fixtures);
    CU_add_test(su, "pack cache", test_pack_cache);
    CU_add_test(su, "xlm-roberta", test_xlm_roberta);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    for (size_t i = 0; i < n_names; i++)
        free(names[i]);
    return fails ? 1 : 0;
}
