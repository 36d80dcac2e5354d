/* test_badmodel.c - broken model directories give the right status and a
 * message naming the file and the problem, never a crash.  Each case is made
 * in a temp dir from the bert-seq-uncased fixture (unchanged files are
 * symlinked).  Also checks the positive paths that share the code: an
 * unmodified copy, an extra unused tensor, and F16 / BF16 weights converted
 * at load.  Skips (77) when $SHARED_DIR is absent. */
#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libbert/bert.h"
#include "libbert/safetensors.h"
#include "tests/testutil.h"

static char src[4096];  /* the fixture */
static char root[4096]; /* our temp dir */
static int n_case;

/* ---- helpers -------------------------------------------------------------- */

static void put(const char *dir, const char *name, const void *data,
                size_t len)
{
    char p[8300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
    FILE *f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static void drop(const char *dir, const char *name)
{
    char p[8300];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

/* A fresh case directory with every fixture file symlinked. */
static const char *mkcase(char *dir, size_t cap)
{
    snprintf(dir, cap, "%s/case%d", root, n_case++);
    mkdir(dir, 0700);
    DIR *d = opendir(src);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char a[8300], b[8300];
        snprintf(a, sizeof a, "%s/%s", src, de->d_name);
        snprintf(b, sizeof b, "%s/%s", dir, de->d_name);
        CU_ASSERT(symlink(a, b) == 0);
    }
    closedir(d);
    return dir;
}

/* config.json of the fixture, edited by json, then written to dir. */
static void config_edit(const char *dir, const char *key, json_t *val)
{
    char p[8300];
    snprintf(p, sizeof p, "%s/config.json", src);
    json_t *j = json_load_file(p, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    if (val)
        json_object_set_new(j, key, val);
    else
        json_object_del(j, key);
    char *s = json_dumps(j, JSON_INDENT(2));
    put(dir, "config.json", s, strlen(s));
    free(s);
    json_decref(j);
}

/* Rewrites model.safetensors with its header edited by fn (the data section
 * is copied unchanged). */
typedef void (*header_fn)(json_t *hdr);
static void st_edit(const char *dir, header_fn fn)
{
    char p[8300];
    size_t len;
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    unsigned char *b = (unsigned char *)tu_read_file(p, &len);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = (hl << 8) | b[i];
    json_t *h = json_loadb((char *)b + 8, (size_t)hl, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    fn(h);
    char *s = json_dumps(h, JSON_COMPACT);
    size_t nl = strlen(s), dl = len - 8 - (size_t)hl;
    unsigned char *o = malloc(8 + nl + dl);
    for (int i = 0; i < 8; i++)
        o[i] = (unsigned char)((uint64_t)nl >> (8 * i));
    memcpy(o + 8, s, nl);
    memcpy(o + 8 + nl, b + 8 + hl, dl);
    put(dir, "model.safetensors", o, 8 + nl + dl);
    free(o);
    free(s);
    json_decref(h);
    free(b);
}

/* Writes model.safetensors as raw bytes edited by fn(buf, len). */
static void st_raw(const char *dir, void (*fn)(unsigned char *, size_t *))
{
    char p[8300];
    size_t len;
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    unsigned char *b = (unsigned char *)tu_read_file(p, &len);
    fn(b, &len);
    put(dir, "model.safetensors", b, len);
    free(b);
}

/* Loads dir; checks status and that the message contains each needle. */
static void expect(const char *what, const char *dir, int load_tok,
                   int status, const char *needle1, const char *needle2)
{
    bert_model *m = (bert_model *)&m; /* must be reset to NULL on failure */
    bert_error err;
    memset(&err, 0, sizeof err);
    bert_model_params p = bert_model_default_params();
    p.load_tokenizer = load_tok;
    int rc = bert_model_load(dir, &p, &m, &err);
    int ok = rc == status && (status == BERT_OK || m == NULL) &&
             (!needle1 || strstr(err.text, needle1)) &&
             (!needle2 || strstr(err.text, needle2));
    printf("\n  %-34s %-18s %s", what, bert_strerror(rc),
           rc ? err.text : "(loaded)");
    if (!ok)
        printf("\n    FAILED: wanted %s with '%s' '%s'", bert_strerror(status),
               needle1 ? needle1 : "", needle2 ? needle2 : "");
    CU_ASSERT(ok);
    if (rc == BERT_OK)
        bert_model_free(m);
}

/* Cases that each change one key of the fixture's config.json. */
typedef struct config_case {
    const char *what, *key;
    json_t *val; /* the new value (stolen), NULL to delete the key */
    int status;
    const char *needle; /* in the message, with the file name */
} config_case;

static void config_cases(const config_case *c, size_t n, const char *file)
{
    char d[8200];
    for (size_t i = 0; i < n; i++) {
        mkcase(d, sizeof d);
        config_edit(d, c[i].key, c[i].val);
        expect(c[i].what, d, 0, c[i].status, file, c[i].needle);
    }
}

/* ---- header mutations ----------------------------------------------------- */

#define T_BIAS "bert.encoder.layer.1.output.dense.bias"
#define T_W "bert.encoder.layer.0.attention.self.query.weight"

static void h_overlap(json_t *h)
{
    json_t *a = json_object_get(json_object_get(h, T_BIAS), "data_offsets");
    json_t *b = json_object_get(json_object_get(h, T_W), "data_offsets");
    /* Point the bias into the middle of the query weight. */
    json_int_t s = json_integer_value(json_array_get(b, 0)) + 64;
    json_int_t n = json_integer_value(json_array_get(a, 1)) -
                   json_integer_value(json_array_get(a, 0));
    json_array_set_new(a, 0, json_integer(s));
    json_array_set_new(a, 1, json_integer(s + n));
}
static void h_outside(json_t *h)
{
    json_t *a = json_object_get(json_object_get(h, T_BIAS), "data_offsets");
    json_array_set_new(a, 0, json_integer(1000000000));
    json_array_set_new(a, 1, json_integer(1000000256));
}
static void h_missing(json_t *h) { json_object_del(h, T_BIAS); }
static void h_dtype_int(json_t *h)
{
    json_object_set_new(json_object_get(h, T_BIAS), "dtype",
                        json_string("I32"));
}
static void h_dtype_f16(json_t *h) /* size then contradicts offsets */
{
    json_object_set_new(json_object_get(h, T_BIAS), "dtype",
                        json_string("F16"));
}
static void h_dtype_unknown(json_t *h)
{
    json_object_set_new(json_object_get(h, T_BIAS), "dtype",
                        json_string("F8_E4M3"));
}
static void h_shape(json_t *h) /* same bytes, wrong shape */
{
    json_object_set_new(json_object_get(h, T_W), "shape",
                        json_pack("[i,i]", 32, 128));
}
static void h_shape_neg(json_t *h)
{
    json_object_set_new(json_object_get(h, T_W), "shape",
                        json_pack("[i,i]", -64, -64));
}
static void h_shape_overflow(json_t *h)
{
    json_object_set_new(json_object_get(h, T_W), "shape",
                        json_pack("[I,I,I]", (json_int_t)1 << 40,
                                  (json_int_t)1 << 40, (json_int_t)1 << 40));
}
static void h_not_object(json_t *h)
{
    json_object_set_new(h, T_BIAS, json_string("oops"));
}
static void h_extra_unused(json_t *h) /* shares no bytes: zero-size */
{
    json_object_set_new(h, "bert.embeddings.position_ids",
                        json_pack("{s:s,s:[i,i],s:[i,i]}", "dtype", "I64",
                                  "shape", 1, 0, "data_offsets", 0, 0));
}

static void r_len_past_eof(unsigned char *b, size_t *len)
{
    uint64_t v = (uint64_t)*len; /* header "longer" than the file */
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}
static void r_len_huge(unsigned char *b, size_t *len)
{
    memset(b, 0xff, 8);
    (void)len;
}
static void r_truncate(unsigned char *b, size_t *len)
{
    (void)b;
    *len -= 1000;
}
static void r_not_json(unsigned char *b, size_t *len)
{
    (void)len;
    b[8] = '[';
    b[9] = '!';
}
static void r_tiny(unsigned char *b, size_t *len)
{
    (void)b;
    *len = 5;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_files(void)
{
    char d[8200];
    expect("unmodified copy", mkcase(d, sizeof d), 1, BERT_OK, NULL, NULL);
    expect("no such directory", "/nonexistent/model", 0, BERT_EMISSING,
           "/nonexistent/model", "No such file or directory");
    mkcase(d, sizeof d);
    {
        char f[8300];
        snprintf(f, sizeof f, "%s/config.json", d);
        expect("not a directory", f, 0, BERT_EMISSING, f, "not a directory");
        /* a FIFO as config.json / tokenizer.json: refused, not waited on */
        static const char *const fifos[] = {"config.json", "tokenizer.json"};
        for (int i = 0; i < 2; i++) {
            mkcase(d, sizeof d);
            drop(d, fifos[i]);
            snprintf(f, sizeof f, "%s/%s", d, fifos[i]);
            CU_ASSERT_EQUAL_FATAL(mkfifo(f, 0600), 0);
            expect(i ? "tokenizer.json is a FIFO" : "config.json is a FIFO", d, 1,
                   BERT_EFORMAT, fifos[i], "not a regular file");
        }
    }
    mkcase(d, sizeof d);
    drop(d, "config.json");
    expect("missing config.json", d, 0, BERT_EMISSING, "config.json",
           "missing");
    mkcase(d, sizeof d);
    drop(d, "model.safetensors");
    expect("missing model.safetensors", d, 0, BERT_EMISSING,
           "model.safetensors", "missing");
    mkcase(d, sizeof d);
    drop(d, "model.safetensors");
    put(d, "pytorch_model.bin", "PK", 2);
    expect("pytorch_model.bin only", d, 0, BERT_EUNSUPPORTED,
           "pytorch_model.bin", "safetensors");
    mkcase(d, sizeof d);
    drop(d, "vocab.txt");
    drop(d, "tokenizer.json");
    bert_model *m = NULL;
    bert_error err;
    int rc = bert_model_load(d, NULL, &m, &err);
    printf("\n  %-34s %-18s %s", "missing vocab/tokenizer", bert_strerror(rc),
           err.text);
    CU_ASSERT(rc != BERT_OK && m == NULL && err.text[0]);
}

static void test_config(void)
{
    char d[8200];
    mkcase(d, sizeof d);
    put(d, "config.json", "{\"model_type\": \"bert\",", 22);
    expect("malformed config.json", d, 0, BERT_EFORMAT, "config.json",
           "invalid JSON");
    {
        char p[8300];
        size_t len;
        snprintf(p, sizeof p, "%s/config.json", src);
        char *b = tu_read_file(p, &len);
        mkcase(d, sizeof d);
        put(d, "config.json", b, len / 2);
        free(b);
        expect("truncated config.json", d, 0, BERT_EFORMAT, "config.json",
               "invalid JSON");
    }
    mkcase(d, sizeof d);
    put(d, "config.json", "", 0);
    expect("empty config.json", d, 0, BERT_EFORMAT, "config.json", NULL);
    mkcase(d, sizeof d);
    put(d, "config.json", "[1,2]", 5);
    expect("config.json not an object", d, 0, BERT_EFORMAT, "config.json",
           "object");
    config_case cc[] = {
        {"hidden_size is a string", "hidden_size", json_string("64"),
         BERT_EFORMAT, "hidden_size"},
        {"layer_norm_eps is a string", "layer_norm_eps", json_string("tiny"),
         BERT_EFORMAT, "layer_norm_eps"},
        {"id2label is an array", "id2label", json_pack("[s,s]", "a", "b"),
         BERT_EFORMAT, "id2label"},
        {"id2label with a gap", "id2label",
         json_pack("{s:s,s:s}", "0", "a", "7", "b"), BERT_EFORMAT,
         "id2label"},
        {"architectures is a string", "architectures",
         json_string("BertModel"), BERT_EFORMAT, "architectures"},
        {"absurd num_hidden_layers", "num_hidden_layers",
         json_integer(1000000000), BERT_EFORMAT, "num_hidden_layers"},
        {"negative num_hidden_layers", "num_hidden_layers", json_integer(-2),
         BERT_EFORMAT, "num_hidden_layers"},
        {"absurd hidden_size", "hidden_size",
         json_integer((json_int_t)1 << 40), BERT_EFORMAT, "hidden_size"},
        {"heads do not divide hidden", "num_attention_heads", json_integer(5),
         BERT_EFORMAT, "multiple"},
        {"position_embedding_type relative", "position_embedding_type",
         json_string("relative_key"), BERT_EUNSUPPORTED,
         "position_embedding_type"},
        {"unsupported architecture", "architectures",
         json_pack("[s]", "BertForQuestionAnswering"), BERT_EUNSUPPORTED,
         "BertForQuestionAnswering"},
        {"architecture of another family", "architectures",
         json_pack("[s]", "RobertaForSequenceClassification"), BERT_EFORMAT,
         "contradicts"},
        {"hidden_act swish", "hidden_act", json_string("swish"),
         BERT_EUNSUPPORTED, "swish"},
        {"unknown problem_type", "problem_type", json_string("ranking"),
         BERT_EFORMAT, "problem_type"},
    };
    config_cases(cc, sizeof cc / sizeof cc[0], "config.json");
    mkcase(d, sizeof d);
    config_edit(d, "model_type", json_string("albert"));
    config_edit(d, "architectures", NULL);
    {
        /* config_edit restarts from the fixture: do both edits at once. */
        char p[8300];
        snprintf(p, sizeof p, "%s/config.json", src);
        json_t *j = json_load_file(p, 0, NULL);
        json_object_set_new(j, "model_type", json_string("albert"));
        json_object_del(j, "architectures");
        char *s = json_dumps(j, 0);
        put(d, "config.json", s, strlen(s));
        free(s);
        json_decref(j);
    }
    expect("model_type albert", d, 0, BERT_EUNSUPPORTED, "config.json",
           "albert");
}

static void test_safetensors(void)
{
    char d[8200];
    struct {
        const char *what;
        header_fn fn;
        int status;
        const char *n2;
    } hc[] = {
        {"overlapping offsets", h_overlap, BERT_EFORMAT, "overlap"},
        {"offsets outside the file", h_outside, BERT_EFORMAT, "outside"},
        {"missing tensor", h_missing, BERT_EMISSING, T_BIAS},
        {"integer dtype for a weight", h_dtype_int, BERT_EUNSUPPORTED, "I32"},
        {"dtype contradicts offsets", h_dtype_f16, BERT_EFORMAT, T_BIAS},
        {"unknown dtype", h_dtype_unknown, BERT_EUNSUPPORTED, "F8_E4M3"},
        {"shape contradicts config", h_shape, BERT_ESHAPE, T_W},
        {"negative shape", h_shape_neg, BERT_EFORMAT, "shape"},
        {"shape product overflow", h_shape_overflow, BERT_EFORMAT,
         "overflow"},
        {"entry not an object", h_not_object, BERT_EFORMAT, T_BIAS},
        {"unused extra tensor (ignored)", h_extra_unused, BERT_OK, NULL},
    };
    for (size_t i = 0; i < sizeof hc / sizeof hc[0]; i++) {
        mkcase(d, sizeof d);
        st_edit(d, hc[i].fn);
        expect(hc[i].what, d, 0, hc[i].status,
               hc[i].status ? "model.safetensors" : NULL, hc[i].n2);
    }
    struct {
        const char *what;
        void (*fn)(unsigned char *, size_t *);
        const char *n2;
    } rc[] = {
        {"header length past EOF", r_len_past_eof, "past the end"},
        {"header length 2^64-1", r_len_huge, "100 MB"},
        {"truncated data section", r_truncate, "outside"},
        {"header not JSON", r_not_json, "JSON"},
        {"5-byte file", r_tiny, "too short"},
    };
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        mkcase(d, sizeof d);
        st_raw(d, rc[i].fn);
        expect(rc[i].what, d, 0, BERT_EFORMAT, "model.safetensors", rc[i].n2);
    }
    /* Config contradicting the weights. */
    config_case cc[] = {
        {"intermediate_size vs weights", "intermediate_size",
         json_integer(256), BERT_ESHAPE, "intermediate.dense.weight"},
        {"num_labels vs classifier", "id2label",
         json_pack("{s:s,s:s,s:s}", "0", "a", "1", "b", "2", "c"),
         BERT_ESHAPE, "classifier.weight"},
        {"vocab_size vs embeddings", "vocab_size", json_integer(1000),
         BERT_ESHAPE, "word_embeddings"},
    };
    config_cases(cc, sizeof cc / sizeof cc[0], "model.safetensors");
}

/* Writes the fixture's weights as F16 or BF16 and checks the model loads,
 * runs and stays close to the F32 model (half precision: loose bound). */
static void half_case(bert_dtype dt)
{
    char d[8200], p[8300];
    bert_st_file st;
    bert_error err;
    snprintf(p, sizeof p, "%s/model.safetensors", src);
    CU_ASSERT_EQUAL_FATAL(bert__st_open(p, &st, &err), BERT_OK);
    bert_st_wtensor *w = calloc(st.n_tensors, sizeof *w);
    void **bufs = calloc(st.n_tensors, sizeof *bufs);
    for (size_t i = 0; i < st.n_tensors; i++) {
        const bert_st_tensor *t = &st.tensors[i];
        float *f = malloc(t->nelem * sizeof *f);
        uint16_t *h = malloc(t->nelem * 2 + 1);
        bert__st_to_f32(t, f);
        for (size_t k = 0; k < t->nelem; k++) {
            uint32_t b;
            memcpy(&b, &f[k], 4);
            if (dt == BERT_DT_BF16) {
                h[k] = (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
            } else { /* F16 by truncation is fine for a load test */
                uint32_t s = (b >> 16) & 0x8000, e = (b >> 23) & 0xff,
                         mm = b & 0x7fffff;
                int ee = (int)e - 127 + 15;
                h[k] = ee <= 0 ? (uint16_t)s
                       : ee >= 31 ? (uint16_t)(s | 0x7c00)
                                  : (uint16_t)(s | (uint32_t)ee << 10 |
                                               mm >> 13);
            }
        }
        free(f);
        bufs[i] = h;
        w[i].name = t->name;
        w[i].dtype = dt;
        w[i].ndim = t->ndim;
        memcpy(w[i].shape, t->shape, sizeof w[i].shape);
        w[i].data = h;
    }
    mkcase(d, sizeof d);
    drop(d, "model.safetensors");
    snprintf(p, sizeof p, "%s/model.safetensors", d);
    CU_ASSERT_EQUAL(bert__st_write(p, w, st.n_tensors, &err), BERT_OK);
    for (size_t i = 0; i < st.n_tensors; i++)
        free(bufs[i]);
    free(bufs);
    free(w);
    bert__st_close(&st);

    bert_model *m32 = NULL, *m16 = NULL;
    bert_model_params mp = bert_model_default_params();
    mp.load_tokenizer = 0;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(src, &mp, &m32, &err), BERT_OK);
    int rc = bert_model_load(d, &mp, &m16, &err);
    printf("\n  %-34s %-18s %s", dt == BERT_DT_F16 ? "F16 weights" : "BF16 weights",
           bert_strerror(rc), rc ? err.text : "(loaded)");
    CU_ASSERT_EQUAL_FATAL(rc, BERT_OK);
    bert_session *s32, *s16;
    bert_session_create(m32, NULL, &s32, NULL);
    bert_session_create(m16, NULL, &s16, NULL);
    int32_t ids[] = {101, 7592, 2088, 999, 102};
    bert_input in = {ids, NULL, 5};
    float l32[2], l16[2];
    bert_outputs o32 = {l32, NULL, NULL}, o16 = {l16, NULL, NULL};
    CU_ASSERT_EQUAL(bert_session_run(s32, &in, 1, &o32, NULL), BERT_OK);
    CU_ASSERT_EQUAL(bert_session_run(s16, &in, 1, &o16, NULL), BERT_OK);
    double md = fmax(fabs(l32[0] - l16[0]), fabs(l32[1] - l16[1]));
    printf(" (logits differ from F32 by %.3g)", md);
    CU_ASSERT(md < 0.05);
    bert_session_free(s32);
    bert_session_free(s16);
    bert_model_free(m32);
    bert_model_free(m16);
}

static void test_half(void)
{
    half_case(BERT_DT_F16);
    half_case(BERT_DT_BF16);
}

/* Bad calls on a good model fail cleanly. */
static void test_bad_calls(void)
{
    bert_model *m = NULL;
    bert_error err;
    bert_model_params mp = bert_model_default_params();
    mp.load_tokenizer = 0;
    CU_ASSERT_EQUAL_FATAL(bert_model_load(src, &mp, &m, &err), BERT_OK);
    bert_session *s = NULL;
    bert_session_params sp = bert_session_default_params();
    sp.n_threads = 0;
    CU_ASSERT_EQUAL(bert_session_create(m, &sp, &s, &err), BERT_EINVAL);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_EQUAL_FATAL(bert_session_create(m, NULL, &s, &err), BERT_OK);
    int32_t ids[200] = {101, 40000, 102};
    float lg[2];
    bert_outputs o = {lg, NULL, NULL};
    bert_input in = {ids, NULL, 3};
    CU_ASSERT_EQUAL(bert_session_run(s, &in, 1, &o, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "vocabulary") != NULL);
    CU_ASSERT_EQUAL(err.status, BERT_EINVAL);
    ids[1] = 5;
    in.n = 200; /* > max length 128 */
    CU_ASSERT_EQUAL(bert_session_run(s, &in, 1, &o, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "200 tokens") != NULL);
    in.n = 0;
    CU_ASSERT_EQUAL(bert_session_run(s, &in, 1, &o, NULL), BERT_EINVAL);
    int32_t tt[3] = {0, 5, 0};
    bert_input in2 = {ids, tt, 3};
    CU_ASSERT_EQUAL(bert_session_run(s, &in2, 1, &o, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "type id 5") != NULL);
    CU_ASSERT_EQUAL(bert_classify_text(s, "x", 1, NULL, 0, lg, 2, NULL, &err),
                    BERT_EINVAL); /* no tokenizer loaded */
    CU_ASSERT(strstr(err.text, "tokenizer") != NULL);
    CU_ASSERT_EQUAL(bert_session_set_threads(s, 0, &err), BERT_EINVAL);
    CU_ASSERT(strstr(err.text, "n_threads") != NULL);
    bert_session_free(s);
    bert_model_free(m);
    bert_model_free(NULL);
    bert_session_free(NULL);
}

static int rm_cb(const char *p, const struct stat *sb, int flag,
                 struct FTW *ftwbuf)
{
    (void)sb;
    (void)flag;
    (void)ftwbuf;
    return remove(p);
}

int main(void)
{
    const char *shared = getenv("SHARED_DIR");
    if (!shared)
        shared = "../shared";
    snprintf(src, sizeof src, "%s/fixtures/bert-seq-uncased", shared);
    struct stat st;
    if (stat(src, &st) != 0) {
        printf("SKIP: %s not found (set SHARED_DIR)\n", src);
        return 77;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/libbert-badmodel-XXXXXX",
             tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("badmodel", NULL, NULL);
    CU_add_test(su, "files", test_files);
    CU_add_test(su, "config.json", test_config);
    CU_add_test(su, "model.safetensors", test_safetensors);
    CU_add_test(su, "F16/BF16 weights", test_half);
    CU_add_test(su, "bad calls", test_bad_calls);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    printf("\n");
    return fails ? 1 : 0;
}
