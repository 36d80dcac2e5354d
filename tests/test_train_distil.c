/* tests/test_train_distil.c - the trainer on DistilBERT: a whole-model
 * gradient check (every task, with and without dropout), the training
 * forward rebuilt in transformers' order (where dropout goes, which
 * probability each head uses), type ids ignored, fixed sinusoidal
 * positions, a tiny model that learns a tiny task, determinism, the forward
 * on the distilbert-seq-uncased fixture against transformers' logits, and
 * fine-tune + save + reload through the inference API.  (The kernels
 * themselves are checked by tests/test_train.) */
#include <CUnit/Basic.h>
#include <jansson.h>
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

static double g_worst_model = 0, g_fixture_diff = -1, g_reload_diff = -1;

/* A tiny DistilBERT config.json with odd sizes (dim 9 = 3 heads of 3,
 * hidden_dim 7, vocab 13, 9 positions); `drop` for dropout and
 * attention_dropout, 1.5 * drop for seq_classif_dropout so that a mix-up
 * of the two would show. */
static const char *write_tiny_config(const char *name, const char *act,
                                     float drop, int sinusoidal)
{
    return tr_write_config(
        name,
        "{\"architectures\":[\"DistilBertForMaskedLM\"],"
        "\"model_type\":\"distilbert\",\"vocab_size\":13,\"dim\":9,"
        "\"n_layers\":2,\"n_heads\":3,\"hidden_dim\":7,"
        "\"activation\":\"%s\",\"max_position_embeddings\":9,"
        "\"dropout\":%g,\"attention_dropout\":%g,"
        "\"seq_classif_dropout\":%g,\"sinusoidal_pos_embds\":%s,"
        "\"initializer_range\":0.5,\"pad_token_id\":0}",
        act, drop, drop, 1.5 * drop, sinusoidal ? "true" : "false");
}

/* --- whole-model gradient check ----------------------------------------- */

static void no_token_types(const bert_trainer *t)
{
    CU_ASSERT_EQUAL(t->sizes[P_WTT], 0);
}

/* The gradient of every parameter with a non-zero one (and of every 7th of
 * the rest) against a fourth-order central difference
 * (f'(x) ~ [8(f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))] / 12h) of the same
 * forward with the same dropout masks.  This tiny model (weights ~0.5,
 * LayerNorm over 9 channels) is so curved that the plain two-point quotient
 * is off by 10% at h = 1e-2; a small h keeps the sequence head's ReLU kink
 * (pre_classifier) out of reach for this seed, and the FFN activations are
 * smooth ones (the ReLU kernel is checked in tests/test_train). */
static void model_gradcheck(bert_train_task task, const char *act, float drop)
{
    /* type ids are ignored by DistilBERT (even out-of-range ones) */
    static const int32_t types[10] = {0, 0, 0, 1, 7, 0, 0, 1, 0, 0};
    /* The numeric gradient comes from a float32 forward whose loss carries
     * noise of ~1e-6, i.e. ~3e-4 in a difference quotient at this step:
     * below |a|+|n| = 3e-2 the error is measured against 3e-2 (an absolute
     * tolerance of ~1e-3). */
    static const tr_fd fd = {1, 2.5e-3f, 3e-2, 3e-2};
    tr_model_gradcheck(write_tiny_config("grad", act, drop, 0), task, types,
                       0.0f, &fd, no_token_types, &g_worst_model);
}

static void test_grad_seq(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu", 0.0f); }
static void test_grad_seq_drop(void) { model_gradcheck(BERT_TRAIN_SEQUENCE, "gelu_new", 0.2f); }
static void test_grad_tok(void) { model_gradcheck(BERT_TRAIN_TOKEN, "gelu", 0.0f); }
static void test_grad_tok_drop(void) { model_gradcheck(BERT_TRAIN_TOKEN, "gelu_new", 0.1f); }
static void test_grad_mlm_drop(void) { model_gradcheck(BERT_TRAIN_MLM, "gelu", 0.1f); }

/* --- type ids, tensor names, sinusoidal positions ------------------------ */

static void test_type_ids_ignored(void)
{
    const char *cfg = write_tiny_config("types", "gelu", 0.0f, 0);
    bert_train_params p = bert_train_default_params();
    p.num_labels = 2;
    bert_trainer *t = NULL;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, cfg, &p, &t, &err), 0);
    int32_t ids[6] = {1, 5, 6, 1, 7, 0};
    int32_t types[6] = {0, 1, 1, 0, 3, 0};
    size_t lens[2] = {3, 2};
    bert_train_batch a = {2, 3, ids, NULL, lens, NULL};
    bert_train_batch b = {2, 3, ids, types, lens, NULL};
    float la[4], lb[4];
    CU_ASSERT_EQUAL(bert_trainer_predict(t, &a, la, NULL, &err), 0);
    CU_ASSERT_EQUAL(bert_trainer_predict(t, &b, lb, NULL, &err), 0);
    CU_ASSERT(memcmp(la, lb, sizeof la) == 0);
    /* transformers' names, BERT's are absent */
    float *x;
    size_t n;
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "distilbert.transformer.layer.1.attention.v_lin.weight", &x, &n, &err), 0);
    CU_ASSERT_EQUAL(n, 81);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "pre_classifier.bias", &x, &n, &err), 0);
    CU_ASSERT_EQUAL(n, 9);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "bert.embeddings.word_embeddings.weight", &x, &n, &err), BERT_EMISSING);
    bert_trainer_free(t);
    /* MLM head: vocab_transform / vocab_layer_norm / vocab_projector.bias;
     * vocab_projector.weight is the word embeddings (tied, not stored) */
    p.task = BERT_TRAIN_MLM;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, cfg, &p, &t, &err), 0);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "vocab_transform.weight", &x, &n, &err), 0);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "vocab_layer_norm.bias", &x, &n, &err), 0);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "vocab_projector.bias", &x, &n, &err), 0);
    CU_ASSERT_EQUAL(n, 13);
    CU_ASSERT_EQUAL(bert_trainer_tensor(t, "vocab_projector.weight", &x, &n, &err), BERT_EMISSING);
    bert_trainer_free(t);
}

/* Which dropout the heads use: the sequence head seq_classif_dropout, the
 * token head the encoder's dropout (DistilBertForTokenClassification).  With
 * only seq_classif_dropout set, a training-mode forward changes sequence
 * logits and leaves token logits bit for bit. */
static void test_head_dropout(void)
{
    const char *path = tr_write_config(
        "headdrop", "{\"model_type\":\"distilbert\",\"vocab_size\":13,\"dim\":9,"
                    "\"n_layers\":1,\"n_heads\":3,\"hidden_dim\":7,"
                    "\"max_position_embeddings\":9,\"dropout\":0,"
                    "\"attention_dropout\":0,\"seq_classif_dropout\":0.5}");
    CU_ASSERT_FATAL(path != NULL);
    int32_t ids[6] = {1, 5, 6, 1, 7, 0};
    size_t lens[2] = {3, 2};
    bert_train_batch b = {2, 3, ids, NULL, lens, NULL};
    for (int task = BERT_TRAIN_SEQUENCE; task <= BERT_TRAIN_TOKEN; task++) {
        bert_train_params p = bert_train_default_params();
        p.task = (bert_train_task)task;
        p.num_labels = 2;
        bert_trainer *t = NULL;
        bert_error err;
        CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, path, &p, &t, &err), 0);
        float ev[12], tr[12];
        size_t n = task == BERT_TRAIN_SEQUENCE ? 4 : 12;
        CU_ASSERT_EQUAL(bert__t_run(t, &b, 0, 0, 0.0f, ev, NULL, &err), 0);
        CU_ASSERT_EQUAL(bert__t_run(t, &b, 1, 0, 0.0f, tr, NULL, &err), 0);
        int same = memcmp(ev, tr, n * sizeof(float)) == 0;
        CU_ASSERT_EQUAL(same, task == BERT_TRAIN_TOKEN);
        bert_trainer_free(t);
    }
}

/* The training-mode forward, rebuilt from the kernels in the order of
 * modeling_distilbert.py: embeddings (no token types) -> LayerNorm ->
 * dropout; per layer q/k/v -> attention (dropout on the probabilities) ->
 * out_lin (NO dropout, unlike BERT) -> + x -> sa_layer_norm -> lin1 -> act
 * -> lin2 -> dropout -> + -> output_layer_norm; token head dropout(dropout)
 * -> classifier, on the packed real tokens.  Dropout masks are the
 * trainer's: stream (micro << 20 | layer << 4 | site), sites embeddings 0,
 * attention 1, FFN 3, head 4, over the packed rows. */
static void test_training_forward_order(void)
{
    const char *cfg = write_tiny_config("order", "gelu", 0.3f, 0);
    bert_train_params p = bert_train_default_params();
    p.task = BERT_TRAIN_TOKEN;
    p.num_labels = 3;
    p.seed = 11;
    bert_trainer *t = NULL;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, cfg, &p, &t, &err), 0);
    enum { B = 2, T = 5, H = 9, NH = 3, I = 7, C = 3, N = B * T };
    int32_t ids[N] = {2, 5, 7, 11, 3, 2, 9, 4, 0, 0};
    size_t lens[B] = {5, 3};
    bert_train_batch bt = {B, T, ids, NULL, lens, NULL};
    float got[N * C];
    uint64_t mi = t->micro, seed = p.seed;
    CU_ASSERT_EQUAL_FATAL(bert__t_run(t, &bt, 1, 0, 0.0f, got, NULL, &err), 0);

    bert_gemm_ctx *rn = bert__gemm_ctx_create(1, BERT_KERNELS_AUTO, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rn);
    float ph = 0.3f, pa = 0.3f, eps = 1e-12f;
    /* the real tokens packed: R rows, masks indexed over them */
    enum { R = 8, NA = NH * (25 + 9) };
    int32_t pids[R] = {2, 5, 7, 11, 3, 2, 9, 4}, pos[R] = {0, 1, 2, 3, 4,
                                                           0, 1, 2};
    static float x[R * H], y[R * H], qkv[R * 3 * H], att[NA], scr[NA],
        r[R * H], h1[R * I], h2[R * I], m[R], sd[R], want[R * C];
    float **pt = t->pt;
#define STREAM(L, SITE) ((mi << 20) | ((uint64_t)(L) << 4) | (SITE))
    bert__t_embed_forward(y, pids, NULL, pos, pt[P_WTE], pt[P_WPE], NULL, R,
                          H);
    bert__t_layernorm_forward(x, m, sd, y, pt[P_LNEW], pt[P_LNEB], R, H, eps, 1);
    bert__t_dropout(x, R * H, ph, seed, STREAM(0, 0), 1);
    for (size_t l = 0; l < 2; l++) {
        bert__t_matmul_forward(qkv, x, pt[P_QKVW] + l * 3 * H * H,
                               pt[P_QKVB] + l * 3 * H, R, H, 3 * H, rn);
        bert__t_attention_forward(y, att, scr, qkv, qkv + H, qkv + 2 * H,
                                  3 * H, lens, B, H, NH, pa, seed,
                                  STREAM(l, 1), 1, rn);
        bert__t_matmul_forward(r, y, pt[P_AOW] + l * H * H, pt[P_AOB] + l * H,
                               R, H, H, rn);
        for (size_t i = 0; i < R * H; i++)
            r[i] += x[i];
        bert__t_layernorm_forward(x, m, sd, r, pt[P_LN1W] + l * H,
                                  pt[P_LN1B] + l * H, R, H, eps, 1);
        bert__t_matmul_forward(h1, x, pt[P_FCW] + l * I * H, pt[P_FCB] + l * I,
                               R, H, I, rn);
        bert__t_act_forward(BERT_T_ACT_GELU, h2, h1, R * I, 1);
        bert__t_matmul_forward(r, h2, pt[P_FC2W] + l * H * I,
                               pt[P_FC2B] + l * H, R, I, H, rn);
        bert__t_dropout(r, R * H, ph, seed, STREAM(l, 3), 1);
        for (size_t i = 0; i < R * H; i++)
            r[i] += x[i];
        bert__t_layernorm_forward(x, m, sd, r, pt[P_LN2W] + l * H,
                                  pt[P_LN2B] + l * H, R, H, eps, 1);
    }
    bert__t_dropout(x, R * H, ph, seed, STREAM(0, 4), 1);
    bert__t_matmul_forward(want, x, pt[P_CLSW], pt[P_CLSB], R, H, C, rn);
#undef STREAM
    /* got is the batch's padded rows: the real ones, then zeros */
    double worst = 0;
    for (size_t b = 0, o = 0; b < B; o += lens[b++])
        for (size_t i = 0; i < T * C; i++) {
            double w = i < lens[b] * C ? want[o * C + i] : 0.0;
            worst = fmax(worst, fabs((double)got[b * T * C + i] - w));
        }
    CU_ASSERT(worst < 1e-5);
    if (worst >= 1e-5)
        printf("\n  training forward differs from the rebuilt one by %.3g\n",
               worst);
    bert__gemm_ctx_free(rn);
    bert_trainer_free(t);
}

/* sinusoidal_pos_embds: transformers fills the position embeddings with
 * sinusoids and never trains them. */
static void test_sinusoidal_frozen(void)
{
    const char *cfg = write_tiny_config("sin", "gelu", 0.1f, 1);
    bert_train_params p = bert_train_default_params();
    p.num_labels = 2;
    p.lr = 1e-2f;
    bert_trainer *t = NULL;
    bert_error err;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_create(NULL, cfg, &p, &t, &err), 0);
    float *pe, *we;
    size_t pn, wn;
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "distilbert.embeddings.position_embeddings.weight", &pe, &pn, &err), 0);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_tensor(t, "distilbert.embeddings.word_embeddings.weight", &we, &wn, &err), 0);
    CU_ASSERT_EQUAL_FATAL(pn, 9 * 9);
    double worst = 0;
    for (size_t r = 0; r < 9; r++)
        for (size_t j = 0; j < 9; j++) {
            double a = (double)r / pow(10000.0, 2.0 * (double)(j / 2) / 9.0);
            worst = fmax(worst, fabs(pe[r * 9 + j] - (j % 2 ? cos(a) : sin(a))));
        }
    CU_ASSERT(worst < 1e-6);
    float *pe0 = malloc(pn * sizeof *pe0), *we0 = malloc(wn * sizeof *we0);
    memcpy(pe0, pe, pn * sizeof *pe0);
    memcpy(we0, we, wn * sizeof *we0);
    int32_t ids[6] = {1, 5, 6, 1, 7, 0}, lab[2] = {0, 1};
    size_t lens[2] = {3, 2};
    bert_train_batch b = {2, 3, ids, NULL, lens, lab};
    CU_ASSERT_EQUAL(bert_trainer_accumulate(t, &b, 1.0f, NULL, &err), 0);
    CU_ASSERT_EQUAL(bert_trainer_update(t, NULL, &err), 0);
    CU_ASSERT(memcmp(pe, pe0, pn * sizeof *pe0) == 0);
    CU_ASSERT(memcmp(we, we0, wn * sizeof *we0) != 0);
    /* and the saved config keeps the flag */
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/sin", tr_tmp);
    mkdir(dir, 0755);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save(t, dir, &err), 0);
    snprintf(path, sizeof path, "%s/config.json", dir);
    bert_cfg c;
    CU_ASSERT_EQUAL_FATAL(bert__config_load(path, &c, &err), 0);
    CU_ASSERT(c.sinusoidal_pos == 1);
    bert__config_free(&c);
    free(pe0);
    free(we0);
    bert_trainer_free(t);
}

/* --- a tiny task --------------------------------------------------------- */

/* The tiny task (trainutil.h) with dropout and token types (ignored). */
static void test_learns_tiny(void)
{
    int acc = tr_train_tiny(write_tiny_config("tiny", "gelu", 0.1f, 0), 1, 1,
                            1, NULL, NULL);
    printf("\n  tiny DistilBERT after 150 steps: %d%% correct\n", acc);
    CU_ASSERT_EQUAL(acc, 100);
}

static void test_deterministic(void)
{
    tr_check_deterministic(write_tiny_config("tiny", "gelu", 0.1f, 0), 1);
}

/* --- fixture ------------------------------------------------------------- */

#define FIXTURE "distilbert-seq-uncased"

/* Sorted tensor names of a safetensors file, one per line (metadata key
 * excluded), for comparing two files' name sets. */
static char *tensor_names(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint64_t n = 0;
    char *hdr = NULL, *out = NULL;
    if (fread(&n, 8, 1, f) == 1 && n < (1u << 24) && (hdr = malloc(n + 1)) &&
        fread(hdr, 1, n, f) == n) {
        json_error_t je;
        json_t *o = json_loadb(hdr, n, 0, &je);
        size_t k = o ? json_object_size(o) : 0;
        const char **names = calloc(k + 1, sizeof *names);
        size_t m = 0, len = 1;
        const char *key;
        json_t *v;
        json_object_foreach(o, key, v)
            if (strcmp(key, "__metadata__") != 0) {
                names[m++] = key;
                len += strlen(key) + 1;
            }
        for (size_t i = 1; i < m; i++) /* insertion sort: few names */
            for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
                const char *x = names[j];
                names[j] = names[j - 1];
                names[j - 1] = x;
            }
        out = calloc(len, 1);
        for (size_t i = 0; out && i < m; i++) {
            strcat(out, names[i]);
            strcat(out, "\n");
        }
        free(names);
        json_decref(o);
    }
    free(hdr);
    fclose(f);
    return out;
}

/* The trainer's forward (eval mode) equals transformers' logits. */
static void test_fixture_forward(void)
{
    tr_fixture fx;
    if (!tr_fixture_load(&fx, FIXTURE))
        return;
    bert_train_params p = bert_train_default_params();
    bert_trainer *t = tr_trainer_create(fx.dir, NULL, &p);
    CU_ASSERT_EQUAL(t->C, fx.C);
    CU_ASSERT_STRING_EQUAL(bert_trainer_label(t, 1), "POSITIVE");
    float *got = malloc(fx.B * fx.C * sizeof *got);
    double worst = tr_fixture_predict(t, &fx, got);
    g_fixture_diff = worst;
    printf("\n  trainer forward vs transformers' logits: max |diff| %.3g over "
           "%zu texts\n", worst, fx.B);
    CU_ASSERT(worst <= 1e-4);
    free(got);
    bert_trainer_free(t);
    tr_fixture_free(&fx);
}

/* Fine-tune the fixture (sequence head, then a fresh token head), save,
 * and reload: the files are transformers' (tensor names, config), the
 * trainer reloads them bit for bit and bert_model_load + bert_session_run
 * give the trainer's logits. */
static void finetune_save_reload(bert_train_task task)
{
    tr_fixture fx;
    if (!tr_fixture_load(&fx, FIXTURE))
        return;
    size_t B = fx.B, T = fx.T, N = B * T;
    bert_train_params p = bert_train_default_params();
    p.task = task;
    p.lr = 1e-3f;
    static const char *const tags[] = {"O", "B-X", "I-X"};
    if (task == BERT_TRAIN_TOKEN) {
        p.num_labels = 3;
        p.labels = tags;
    }
    bert_trainer *t = tr_trainer_create(fx.dir, NULL, &p);
    bert_error err;
    size_t C = t->C, rows = task == BERT_TRAIN_TOKEN ? N : B;
    int32_t *lab = malloc(N * sizeof *lab);
    for (size_t i = 0; i < N; i++)
        lab[i] = task == BERT_TRAIN_TOKEN
                     ? (i % T < fx.lens[i / T] && i % T ? (int32_t)(i % 3) : -100)
                     : (int32_t)(i % 2);
    bert_train_batch bt = {B, T, fx.ids, fx.types, fx.lens, NULL};
    float *before = malloc(rows * C * sizeof *before);
    float *got = malloc(rows * C * sizeof *got);
    bert_trainer_predict(t, &bt, before, NULL, &err);
    tr_fixture_finetune(t, &fx, lab, got);
    CU_ASSERT(memcmp(before, got, rows * C * sizeof *got) != 0); /* moved */

    char out[512], a[1400], b[1400];
    snprintf(out, sizeof out, "%s/saved-%d", tr_tmp, (int)task);
    mkdir(out, 0755);
    CU_ASSERT_EQUAL_FATAL(bert_trainer_save(t, out, &err), 0);

    /* transformers' tensor names: the fixture's exactly (sequence), or the
     * fixture's with the token head's (no pre_classifier) */
    snprintf(a, sizeof a, "%s/model.safetensors", fx.dir);
    snprintf(b, sizeof b, "%s/model.safetensors", out);
    char *na = tensor_names(a), *nb = tensor_names(b);
    CU_ASSERT_FATAL(na && nb);
    if (task == BERT_TRAIN_SEQUENCE) {
        CU_ASSERT_STRING_EQUAL(na, nb);
    } else {
        CU_ASSERT(strstr(nb, "pre_classifier") == NULL);
        CU_ASSERT(strstr(nb, "classifier.weight\n") != NULL);
        CU_ASSERT(strstr(nb, "distilbert.transformer.layer.1.ffn.lin2.bias\n") != NULL);
    }
    free(na);
    free(nb);

    /* config.json: a DistilBERT config of the right architecture */
    snprintf(a, sizeof a, "%s/config.json", out);
    json_error_t je;
    json_t *cj = json_load_file(a, 0, &je);
    CU_ASSERT_FATAL(cj != NULL);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cj, "model_type")), "distilbert");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(json_object_get(cj, "architectures"), 0)),
                           task == BERT_TRAIN_TOKEN ? "DistilBertForTokenClassification"
                                                    : "DistilBertForSequenceClassification");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(cj, "dim")), 64);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(cj, "n_layers")), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(cj, "n_heads")), 4);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(cj, "hidden_dim")), 128);
    CU_ASSERT(fabs(json_real_value(json_object_get(cj, "seq_classif_dropout")) - 0.2) < 1e-9);
    CU_ASSERT(json_object_get(cj, "hidden_size") == NULL);
    CU_ASSERT(json_object_get(cj, "type_vocab_size") == NULL);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(cj, "id2label"), "1")),
                           task == BERT_TRAIN_TOKEN ? "B-X" : "POSITIVE");
    json_decref(cj);

    /* the trainer reloads it bit for bit */
    bert_trainer *t2 = tr_trainer_create(out, NULL, &p);
    CU_ASSERT_EQUAL(t2->nparams, t->nparams);
    CU_ASSERT(memcmp(t2->params, t->params, t->nparams * sizeof(float)) == 0);
    bert_trainer_free(t2);

    /* the inference API loads it (with the fixture's tokenizer files) and
     * computes the trainer's logits */
    double worst = tr_reload_by_inference(&fx, out, task, 1, C, got);
    if (worst > g_reload_diff)
        g_reload_diff = worst;
    printf("\n  %s: fine-tuned 3 steps, saved, reloaded by bert_model_load: "
           "max |diff| %.3g\n", task == BERT_TRAIN_TOKEN ? "token" : "sequence",
           worst);
    CU_ASSERT(worst <= 1e-5);
    free(lab);
    free(before);
    free(got);
    bert_trainer_free(t);
    tr_fixture_free(&fx);
}

static void test_finetune_seq(void) { finetune_save_reload(BERT_TRAIN_SEQUENCE); }
static void test_finetune_tok(void) { finetune_save_reload(BERT_TRAIN_TOKEN); }

static void summary(void)
{
    printf("worst relative gradient error (whole model) %.3g; fixture forward "
           "max |diff| %.3g; reload max |diff| %.3g (-1: fixture absent)\n",
           g_worst_model, g_fixture_diff, g_reload_diff);
}

int main(void)
{
    static const tr_test tests[] = {
        {"model gradient: sequence", test_grad_seq},
        {"model gradient: sequence+dropout", test_grad_seq_drop},
        {"model gradient: token", test_grad_tok},
        {"model gradient: token+dropout", test_grad_tok_drop},
        {"model gradient: mlm+dropout", test_grad_mlm_drop},
        {"type ids ignored, tensor names", test_type_ids_ignored},
        {"head dropout probabilities", test_head_dropout},
        {"training forward in transformers' order",
         test_training_forward_order},
        {"sinusoidal positions stay fixed", test_sinusoidal_frozen},
        {"tiny model learns", test_learns_tiny},
        {"deterministic", test_deterministic},
        {"fixture forward", test_fixture_forward},
        {"fixture fine-tune, save, reload: sequence", test_finetune_seq},
        {"fixture fine-tune, save, reload: token", test_finetune_tok},
        {NULL, NULL}};
    return tr_run("train_distil", tests, summary);
}
