/*
 * functions.c - the SQL functions of CREATE EXTENSION bert, and its GUCs.
 *
 *   bert_classify(model, input [, input_pair]) -> bert_label
 *   bert_scores(model, input)                  -> jsonb
 *   bert_classify_batch(model, inputs[])       -> SETOF bert_label
 *   bert_tag(model, input, aggregation)        -> SETOF bert_entity
 *   bert_tokenize(model, input)                -> int[]
 *
 * Every function is STRICT and PARALLEL SAFE (bert--0.1.0.sql); the model is
 * fetched from the per-backend cache (model_cache.c) on each call.
 */
#include "bert_pg.h"

#include <limits.h>
#include <string.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"

PG_MODULE_MAGIC;

#ifndef BERT_MODELDIR
#define BERT_MODELDIR "/usr/local/share/libbert/models"
#endif

int bert_pg_threads = 1;
int bert_pg_kernels = BERT_KERNELS_AUTO;
int bert_pg_precision = BERT_PRECISION_FP32;
char *bert_pg_pack_cache = NULL;

static const struct config_enum_entry kernels_options[] = {
    {"auto", BERT_KERNELS_AUTO, false},
    {"amx", BERT_KERNELS_AMX, false},
    {"avx512", BERT_KERNELS_AVX512, false},
    {"avx2", BERT_KERNELS_AVX2, false},
    {"blis", BERT_KERNELS_BLIS, false},
    {NULL, 0, false}};
static const struct config_enum_entry precision_options[] = {
    {"fp32", BERT_PRECISION_FP32, false},
    {"bf16", BERT_PRECISION_BF16, false},
    {"int8", BERT_PRECISION_INT8, false},
    {NULL, 0, false}};
char *bert_pg_model_dir = NULL;
int bert_pg_max_input_bytes = 1 << 20;
int bert_pg_batch_size = 32;
bool bert_pg_check_files = true;

void _PG_init(void);

void _PG_init(void)
{
    DefineCustomIntVariable(
        "bert.threads", "Threads each backend uses for one model run.",
        "Parallel query already runs one backend per worker; raise this "
        "for single-row calls on an otherwise idle machine.",
        &bert_pg_threads, 1, 1, 256, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomEnumVariable(
        "bert.kernels", "Matrix-product kernels of models loaded from now on.",
        "auto: libbert's AVX-512 or AVX2 kernels where the CPU has them, "
        "with the weights packed into each backend's memory; blis: BLIS's "
        "sgemm on the mapped weights, one copy shared by all backends.",
        &bert_pg_kernels, BERT_KERNELS_AUTO, kernels_options, PGC_SUSET, 0,
        NULL, NULL, NULL);
    DefineCustomEnumVariable(
        "bert.precision", "Precision of the weight products of models loaded "
        "from now on.",
        "fp32: exact (the default); int8: weights quantized at load, "
        "faster on CPUs with AVX512-VNNI or AVX-VNNI; bf16: half the "
        "memory, needs AVX512-BF16.  Results move slightly: see libbert's "
        "docs/precision.md.  A CPU that cannot run it fails the load.",
        &bert_pg_precision, BERT_PRECISION_FP32, precision_options, PGC_SUSET,
        0, NULL, NULL, NULL);
    DefineCustomStringVariable(
        "bert.pack_cache_dir",
        "Where packed weights are kept as files shared by all backends.",
        "Empty: the bert_pack_cache directory of the data directory "
        "(created on first use); 'none': each backend packs a private copy.",
        &bert_pg_pack_cache, "", PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomStringVariable(
        "bert.model_dir", "Directory holding the installed models.",
        "A model given by name ('sentiment', 'ner') is looked up as "
        "bert.model_dir/name.",
        &bert_pg_model_dir, BERT_MODELDIR, PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable(
        "bert.max_input_bytes", "Longest input text accepted, in bytes.",
        "Longer inputs are an error; texts longer than the model's maximum "
        "number of tokens are truncated to it.",
        &bert_pg_max_input_bytes, 1 << 20, 1, INT_MAX, PGC_USERSET, 0, NULL,
        NULL, NULL);
    DefineCustomIntVariable(
        "bert.batch_size", "Rows per model run in bert_classify_batch.", NULL,
        &bert_pg_batch_size, 32, 1, 4096, PGC_USERSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable(
        "bert.check_files",
        "Check before each call that a loaded model's files are unchanged.",
        "Off only to test the SIGBUS guard: a model truncated on disk is "
        "then read through its old mapping.",
        &bert_pg_check_files, true, PGC_SUSET, 0, NULL, NULL, NULL);
    MarkGUCPrefixReserved("bert");
    bert_pg_guard_install();
}

/* ---- helpers ------------------------------------------------------------- */

const char *bert_pg_text_utf8(const text *t, size_t *len, const char *fn)
{
    const char *s = VARDATA_ANY(t);
    int n = VARSIZE_ANY_EXHDR(t);
    if (GetDatabaseEncoding() != PG_UTF8) {
        /* the same pointer when nothing was converted (SQL_ASCII) */
        const char *u = pg_server_to_any(s, n, PG_UTF8);
        if (u != s) {
            s = u;
            n = (int)strlen(s);
        }
    }
    if (n > bert_pg_max_input_bytes)
        ereport(ERROR,
                (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                 errmsg("%s: input is %d bytes, longer than "
                        "bert.max_input_bytes (%d)",
                        fn, n, bert_pg_max_input_bytes),
                 errhint("Texts longer than the model's maximum number of "
                         "tokens are truncated to it anyway; shorten the "
                         "input, or raise bert.max_input_bytes.")));
    *len = (size_t)n;
    return s;
}

/* A text datum of UTF-8 s (labels, words), converted to the database
 * encoding if needed. */
static Datum utf8_text(const char *s)
{
    if (GetDatabaseEncoding() != PG_UTF8)
        s = pg_any_to_server(s, (int)strlen(s), PG_UTF8);
    return CStringGetTextDatum(s);
}

void bert_pg_fail(int rc, const char *msg, const char *fn)
{
    ereport(ERROR,
            (errcode(rc == BERT_EUTF8     ? ERRCODE_CHARACTER_NOT_IN_REPERTOIRE
                     : rc == BERT_ENOMEM  ? ERRCODE_OUT_OF_MEMORY
                     : rc == BERT_EINVAL  ? ERRCODE_INVALID_PARAMETER_VALUE
                                          : ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
             errmsg("%s: %s", fn, msg && msg[0] ? msg : bert_strerror(rc)),
             rc == BERT_EUTF8
                 ? errhint("The text is not valid UTF-8 (a SQL_ASCII "
                           "database?).")
                 : 0));
}

static const char *label_of(const bert_pg_model *pm, int id)
{
    const char *l = bert_model_label(pm->m, id);
    return l ? l : "";
}

/* The composite (label, score) of the function's result type. */
static Datum make_label(FunctionCallInfo fcinfo, const char *label,
                        float score)
{
    TupleDesc td;
    if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("function returning a record called in a "
                               "context that cannot accept it")));
    td = BlessTupleDesc(td);
    Datum v[2] = {utf8_text(label), Float4GetDatum(score)};
    bool nulls[2] = {false, false};
    return HeapTupleGetDatum(heap_form_tuple(td, v, nulls));
}

/* Classifies one text (and pair) into scores[n_labels] and *label. */
static void classify_one(bert_pg_model *pm, const char *t, size_t tl,
                         const char *p, size_t pl, float *scores, int *label,
                         const char *fn)
{
    bert_error err;
    bert_pg_guard_arm(pm);
    if (sigsetjmp(bert_pg_guard_jmp, 1) != 0)
        bert_pg_guard_fail(pm, fn);
    int rc = bert_classify_text(pm->s, t, tl, p, pl, scores, pm->n_labels,
                                label, &err);
    bert_pg_guard_leave();
    if (rc != BERT_OK)
        bert_pg_fail(rc, err.text, fn);
}

/* ---- bert_classify ------------------------------------------------------- */

PG_FUNCTION_INFO_V1(bert_classify_sql);
Datum bert_classify_sql(PG_FUNCTION_ARGS)
{
    const char *fn = "bert_classify";
    bert_pg_model *pm =
        bert_pg_model_get(PG_GETARG_TEXT_PP(0), BERT_TASK_SEQUENCE, fn);
    size_t tl, pl = 0;
    const char *t = bert_pg_text_utf8(PG_GETARG_TEXT_PP(1), &tl, fn);
    const char *p = NULL;
    if (PG_NARGS() > 2)
        p = bert_pg_text_utf8(PG_GETARG_TEXT_PP(2), &pl, fn);
    float *scores = palloc(pm->n_labels * sizeof *scores);
    int label;
    classify_one(pm, t, tl, p, pl, scores, &label, fn);
    PG_RETURN_DATUM(make_label(fcinfo, label_of(pm, label), scores[label]));
}

/* ---- bert_scores --------------------------------------------------------- */

PG_FUNCTION_INFO_V1(bert_scores_sql);
Datum bert_scores_sql(PG_FUNCTION_ARGS)
{
    const char *fn = "bert_scores";
    bert_pg_model *pm =
        bert_pg_model_get(PG_GETARG_TEXT_PP(0), BERT_TASK_SEQUENCE, fn);
    size_t tl;
    const char *t = bert_pg_text_utf8(PG_GETARG_TEXT_PP(1), &tl, fn);
    float *scores = palloc(pm->n_labels * sizeof *scores);
    int label;
    classify_one(pm, t, tl, NULL, 0, scores, &label, fn);
    StringInfoData b;
    initStringInfo(&b);
    appendStringInfoChar(&b, '{');
    for (size_t i = 0; i < pm->n_labels; i++) {
        if (i)
            appendStringInfoString(&b, ", ");
        const char *l = label_of(pm, (int)i);
        if (GetDatabaseEncoding() != PG_UTF8)
            l = pg_any_to_server(l, (int)strlen(l), PG_UTF8);
        escape_json(&b, l);
        appendStringInfo(&b, ": %.9g", (double)scores[i]);
    }
    appendStringInfoChar(&b, '}');
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data)));
}

/* ---- bert_classify_batch ------------------------------------------------- */

PG_FUNCTION_INFO_V1(bert_classify_batch_sql);
Datum bert_classify_batch_sql(PG_FUNCTION_ARGS)
{
    const char *fn = "bert_classify_batch";
    bert_pg_model *pm =
        bert_pg_model_get(PG_GETARG_TEXT_PP(0), BERT_TASK_SEQUENCE, fn);
    ArrayType *arr = PG_GETARG_ARRAYTYPE_P(1);
    if (ARR_NDIM(arr) > 1)
        ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
                        errmsg("%s: inputs must be a one-dimensional array",
                               fn)));
    Datum *elems;
    bool *nulls;
    int n;
    deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls,
                      &n);
    const char **texts = palloc0(sizeof *texts * (n ? n : 1));
    size_t *lens = palloc0(sizeof *lens * (n ? n : 1));
    for (int i = 0; i < n; i++)
        if (!nulls[i])
            texts[i] = bert_pg_text_utf8(DatumGetTextPP(elems[i]), &lens[i],
                                         fn);
    int *labels = palloc(sizeof *labels * (n ? n : 1));
    float *scores = palloc(sizeof *scores * (n ? n : 1));
    bert_pg_classify_many(pm, texts, lens, (size_t)n, labels, scores, fn);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *rsi = (ReturnSetInfo *)fcinfo->resultinfo;
    for (int i = 0; i < n; i++) {
        Datum v[2];
        bool nl[2] = {true, true};
        if (labels[i] >= 0) {
            v[0] = utf8_text(label_of(pm, labels[i]));
            v[1] = Float4GetDatum(scores[i]);
            nl[0] = nl[1] = false;
        }
        tuplestore_putvalues(rsi->setResult, rsi->setDesc, v, nl);
    }
    return (Datum)0;
}

/* ---- bert_tag ------------------------------------------------------------ */

/* bert_tag_text under the SIGBUS guard. */
static int tag_one(bert_pg_model *pm, const char *t, size_t tl,
                   const bert_tag_params *params, bert_error *err,
                   const char *fn)
{
    bert_pg_guard_arm(pm);
    if (sigsetjmp(bert_pg_guard_jmp, 1) != 0)
        bert_pg_guard_fail(pm, fn);
    int rc = bert_tag_text(pm->s, t, tl, params, pm->tag, err);
    bert_pg_guard_leave();
    return rc;
}

PG_FUNCTION_INFO_V1(bert_tag_sql);
Datum bert_tag_sql(PG_FUNCTION_ARGS)
{
    static const char *const aggs[] = {"none", "simple", "first", "average",
                                       "max", "default"};
    const char *fn = "bert_tag";
    bert_pg_model *pm =
        bert_pg_model_get(PG_GETARG_TEXT_PP(0), BERT_TASK_TOKEN, fn);
    size_t tl;
    const char *t = bert_pg_text_utf8(PG_GETARG_TEXT_PP(1), &tl, fn);
    char *agg = text_to_cstring(PG_GETARG_TEXT_PP(2));
    bert_tag_params params = bert_tag_default_params();
    int k = 0;
    while (k < 6 && pg_strcasecmp(agg, aggs[k]) != 0)
        k++;
    if (k == 6)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                 errmsg("%s: unknown aggregation \"%s\"", fn, agg),
                 errhint("Use none, simple, first, average or max (Hugging "
                         "Face's aggregation_strategy), or default (the "
                         "model's, else first).")));
    /* default: as bert-tag, what the model's config.json records, else
     * first (whole words) */
    if (k == 5)
        k = bert_model_default_aggregation(pm->m);
    params.aggregation = (bert_aggregation)k;

    bert_error err;
    memset(&err, 0, sizeof err);
    int rc = tag_one(pm, t, tl, &params, &err, fn);
    if (rc != BERT_OK)
        bert_pg_fail(rc, err.text, fn);

    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *rsi = (ReturnSetInfo *)fcinfo->resultinfo;
    for (size_t i = 0; i < pm->tag->n; i++) {
        const bert_entity *e = &pm->tag->entities[i];
        Datum v[5] = {utf8_text(e->entity), Float4GetDatum(e->score),
                      utf8_text(e->word),
                      Int32GetDatum((int32)e->start),
                      Int32GetDatum((int32)e->end)};
        bool nl[5] = {false, false, false, false, false};
        tuplestore_putvalues(rsi->setResult, rsi->setDesc, v, nl);
    }
    return (Datum)0;
}

/* ---- bert_tokenize ------------------------------------------------------- */

PG_FUNCTION_INFO_V1(bert_tokenize_sql);
Datum bert_tokenize_sql(PG_FUNCTION_ARGS)
{
    const char *fn = "bert_tokenize";
    /* any kind of model: the tokenizer is all it needs */
    bert_pg_model *pm = bert_pg_model_get(PG_GETARG_TEXT_PP(0), BERT_PG_ANY_TASK, fn);
    size_t tl;
    const char *t = bert_pg_text_utf8(PG_GETARG_TEXT_PP(1), &tl, fn);
    /* untruncated, as bert-tokenize: the model itself sees at most the
     * first bert_model_max_length tokens ([SEP] kept) */
    bert_encode_params ep = bert_encode_default_params();
    bert_error err;
    memset(&err, 0, sizeof err);
    int rc = bert_tokenizer_encode(bert_model_tokenizer(pm->m), t, tl, NULL,
                                   0, &ep, pm->enc, &err);
    if (rc != BERT_OK)
        bert_pg_fail(rc, err.text, fn);
    Datum *d = palloc(sizeof *d * (pm->enc->n ? pm->enc->n : 1));
    for (size_t i = 0; i < pm->enc->n; i++)
        d[i] = Int32GetDatum(pm->enc->ids[i]);
    PG_RETURN_ARRAYTYPE_P(construct_array(d, (int)pm->enc->n, INT4OID, 4,
                                          true, TYPALIGN_INT));
}
