/* config.c - config.json (BERT, DistilBERT, RoBERTa / XLM-RoBERTa, ELECTRA)
 * into a bert_cfg, via jansson. */
#include "libbert/config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/arch.h"
#include "libbert/internal.h"
#include "libbert/readall.h"

/* ---- typed getters -------------------------------------------------------- */

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Integer key in [lo, hi]; absent -> def.  Returns status. */
static int get_size(const json_t *root, const char *key, size_t def,
                    size_t lo, size_t hi, size_t *v, const char *label,
                    bert_error *err)
{
    const json_t *j = json_object_get(root, key);
    if (!j) {
        *v = def;
        return BERT_OK;
    }
    if (!json_is_integer(j))
        return bert__err(err, BERT_EFORMAT,
                         "%s: \"%s\" must be an integer, not %s", label, key,
                         json_kind(j));
    json_int_t x = json_integer_value(j);
    if (x < 0 || (unsigned long long)x < lo || (unsigned long long)x > hi)
        return bert__err(err, BERT_EFORMAT,
                         "%s: \"%s\" is %lld, outside the supported range "
                         "[%zu, %zu]",
                         label, key, (long long)x, lo, hi);
    *v = (size_t)x;
    return BERT_OK;
}

/* Number key (null allowed when nullable, giving def). */
static int get_real(const json_t *root, const char *key, double def,
                    int nullable, double *v, const char *label,
                    bert_error *err)
{
    const json_t *j = json_object_get(root, key);
    if (!j || (nullable && json_is_null(j))) {
        *v = def;
        return BERT_OK;
    }
    if (!json_is_number(j))
        return bert__err(err, BERT_EFORMAT,
                         "%s: \"%s\" must be a number, not %s", label, key,
                         json_kind(j));
    *v = json_number_value(j);
    return BERT_OK;
}

/* A dropout probability: a number in [0, 1] (torch.nn.Dropout refuses
 * anything else). */
static int get_prob(const json_t *root, const char *key, double def,
                    int nullable, double *v, const char *label,
                    bert_error *err)
{
    int rc = get_real(root, key, def, nullable, v, label, err);
    if (rc == BERT_OK && !(*v >= 0 && *v <= 1))
        return bert__err(err, BERT_EFORMAT,
                         "%s: \"%s\" %g is not a probability in [0, 1]",
                         label, key, *v);
    return rc;
}

/* String key; absent (or null when nullable) -> NULL. */
static int get_str(const json_t *root, const char *key, int nullable,
                   const char **v, const char *label, bert_error *err)
{
    const json_t *j = json_object_get(root, key);
    *v = NULL;
    if (!j || (nullable && json_is_null(j)))
        return BERT_OK;
    if (!json_is_string(j))
        return bert__err(err, BERT_EFORMAT,
                         "%s: \"%s\" must be a string, not %s", label, key,
                         json_kind(j));
    *v = json_string_value(j);
    return BERT_OK;
}

/* ---- pieces --------------------------------------------------------------- */

static const struct {
    const char *name;
    bert_family family;
    bert_task task;
} archs[] = {
    {"BertModel", BERT_FAMILY_BERT, BERT_TASK_BASE},
    {"BertForSequenceClassification", BERT_FAMILY_BERT, BERT_TASK_SEQUENCE},
    {"BertForTokenClassification", BERT_FAMILY_BERT, BERT_TASK_TOKEN},
    {"BertForMaskedLM", BERT_FAMILY_BERT, BERT_TASK_BASE},
    {"BertForPreTraining", BERT_FAMILY_BERT, BERT_TASK_BASE},
    {"DistilBertModel", BERT_FAMILY_DISTILBERT, BERT_TASK_BASE},
    {"DistilBertForSequenceClassification", BERT_FAMILY_DISTILBERT,
     BERT_TASK_SEQUENCE},
    {"DistilBertForTokenClassification", BERT_FAMILY_DISTILBERT,
     BERT_TASK_TOKEN},
    {"DistilBertForMaskedLM", BERT_FAMILY_DISTILBERT, BERT_TASK_BASE},
    {"RobertaModel", BERT_FAMILY_ROBERTA, BERT_TASK_BASE},
    {"RobertaForSequenceClassification", BERT_FAMILY_ROBERTA,
     BERT_TASK_SEQUENCE},
    {"RobertaForTokenClassification", BERT_FAMILY_ROBERTA, BERT_TASK_TOKEN},
    {"RobertaForMaskedLM", BERT_FAMILY_ROBERTA, BERT_TASK_BASE},
    {"XLMRobertaModel", BERT_FAMILY_ROBERTA, BERT_TASK_BASE},
    {"XLMRobertaForSequenceClassification", BERT_FAMILY_ROBERTA,
     BERT_TASK_SEQUENCE},
    {"XLMRobertaForTokenClassification", BERT_FAMILY_ROBERTA,
     BERT_TASK_TOKEN},
    {"XLMRobertaForMaskedLM", BERT_FAMILY_ROBERTA, BERT_TASK_BASE},
    {"ElectraModel", BERT_FAMILY_ELECTRA, BERT_TASK_BASE},
    {"ElectraForSequenceClassification", BERT_FAMILY_ELECTRA,
     BERT_TASK_SEQUENCE},
    {"ElectraForTokenClassification", BERT_FAMILY_ELECTRA, BERT_TASK_TOKEN},
    {"ElectraForPreTraining", BERT_FAMILY_ELECTRA, BERT_TASK_BASE},
    {"ElectraForMaskedLM", BERT_FAMILY_ELECTRA, BERT_TASK_BASE},
};

/* model_type values and their families. */
static const struct {
    const char *name;
    bert_family family;
} model_types[] = {
    {"bert", BERT_FAMILY_BERT},
    {"distilbert", BERT_FAMILY_DISTILBERT},
    {"roberta", BERT_FAMILY_ROBERTA},
    {"xlm-roberta", BERT_FAMILY_ROBERTA},
    {"electra", BERT_FAMILY_ELECTRA},
};

static const char *family_name(bert_family f)
{
    switch (f) {
    case BERT_FAMILY_BERT: return "bert";
    case BERT_FAMILY_DISTILBERT: return "distilbert";
    case BERT_FAMILY_ROBERTA: return "roberta";
    case BERT_FAMILY_ELECTRA: return "electra";
    }
    return "?";
}

const char *bert__act_name(bert_activation a)
{
    switch (a) {
    case BERT_ACT_GELU: return "gelu";
    case BERT_ACT_GELU_TANH: return "gelu_new";
    case BERT_ACT_RELU: return "relu";
    }
    return "?";
}

static int parse_act(const char *s, bert_activation *a)
{
    if (strcmp(s, "gelu") == 0)
        *a = BERT_ACT_GELU;
    else if (strcmp(s, "gelu_new") == 0 || strcmp(s, "gelu_pytorch_tanh") == 0)
        *a = BERT_ACT_GELU_TANH;
    else if (strcmp(s, "relu") == 0)
        *a = BERT_ACT_RELU;
    else
        return -1;
    return 0;
}

static int parse_labels(const json_t *root, bert_cfg *cfg, const char *label,
                        bert_error *err)
{
    const json_t *j = json_object_get(root, "id2label");
    size_t n;
    int rc;

    if (j && !json_is_null(j)) {
        if (!json_is_object(j))
            return bert__err(err, BERT_EFORMAT,
                             "%s: \"id2label\" must be an object, not %s",
                             label, json_kind(j));
        n = json_object_size(j);
        if (n == 0 || n > BERT_CFG_MAX_LABELS)
            return bert__err(err, BERT_EFORMAT,
                             "%s: \"id2label\" has %zu entries (need 1..%d)",
                             label, n, BERT_CFG_MAX_LABELS);
    } else {
        rc = get_size(root, "num_labels", 2, 1, BERT_CFG_MAX_LABELS, &n, label,
                      err);
        if (rc)
            return rc;
        j = NULL;
    }
    cfg->labels = calloc(n, sizeof *cfg->labels);
    if (!cfg->labels)
        return bert__err(err, BERT_ENOMEM, "%s: out of memory", label);
    cfg->pub.num_labels = n;
    if (!j) {
        for (size_t i = 0; i < n; i++) {
            char buf[32];
            snprintf(buf, sizeof buf, "LABEL_%zu", i);
            if (!(cfg->labels[i] = strdup(buf)))
                return bert__err(err, BERT_ENOMEM, "%s: out of memory", label);
        }
        return BERT_OK;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)j, key, val)
    {
        char *end;
        errno = 0;
        long id = strtol(key, &end, 10);
        if (!*key || *end || errno || id < 0 || (size_t)id >= n)
            return bert__err(err, BERT_EFORMAT,
                             "%s: id2label key \"%.40s\" is not an id in "
                             "0..%zu",
                             label, key, n - 1);
        if (!json_is_string(val))
            return bert__err(err, BERT_EFORMAT,
                             "%s: id2label[\"%s\"] must be a string, not %s",
                             label, key, json_kind(val));
        if (cfg->labels[id])
            return bert__err(err, BERT_EFORMAT,
                             "%s: id2label gives id %ld twice", label, id);
        if (!(cfg->labels[id] = strdup(json_string_value(val))))
            return bert__err(err, BERT_ENOMEM, "%s: out of memory", label);
    }
    return BERT_OK;
}

/* ---- main entry ----------------------------------------------------------- */

static int parse_root(const json_t *root, bert_cfg *cfg, const char *label,
                      bert_error *err)
{
    bert_config *c = &cfg->pub;
    const char *mt, *s;
    int rc;

    if (!json_is_object(root))
        return bert__err(err, BERT_EFORMAT,
                         "%s: top level must be a JSON object, not %s", label,
                         json_kind(root));

    /* model_type and architecture. */
    if ((rc = get_str(root, "model_type", 0, &mt, label, err)))
        return rc;
    const json_t *ja = json_object_get(root, "architectures");
    const char *arch = NULL;
    if (ja && !json_is_null(ja)) {
        if (!json_is_array(ja) || json_array_size(ja) == 0 ||
            !json_is_string(json_array_get(ja, 0)))
            return bert__err(err, BERT_EFORMAT,
                             "%s: \"architectures\" must be a non-empty array "
                             "of strings",
                             label);
        arch = json_string_value(json_array_get(ja, 0));
    }
    int family = -1;
    c->task = BERT_TASK_BASE;
    if (arch) {
        size_t i;
        for (i = 0; i < sizeof archs / sizeof archs[0]; i++)
            if (strcmp(arch, archs[i].name) == 0)
                break;
        if (i == sizeof archs / sizeof archs[0])
            return bert__err(err, BERT_EUNSUPPORTED,
                             "%s: architecture \"%.60s\" is not supported; "
                             "libbert runs the Model, "
                             "ForSequenceClassification and "
                             "ForTokenClassification architectures of "
                             "Bert, DistilBert, Roberta, XLMRoberta and "
                             "Electra",
                             label, arch);
        family = (int)archs[i].family;
        c->task = archs[i].task;
        snprintf(cfg->architecture, sizeof cfg->architecture, "%s", arch);
    }
    if (mt) {
        size_t i;
        for (i = 0; i < sizeof model_types / sizeof model_types[0]; i++)
            if (strcmp(mt, model_types[i].name) == 0)
                break;
        if (i == sizeof model_types / sizeof model_types[0])
            return bert__err(err, BERT_EUNSUPPORTED,
                             "%s: model_type \"%.40s\" is not supported; "
                             "libbert runs model_type \"bert\", "
                             "\"distilbert\", \"roberta\", \"xlm-roberta\" "
                             "and \"electra\" encoders",
                             label, mt);
        if (family >= 0 && family != (int)model_types[i].family)
            return bert__err(err, BERT_EFORMAT,
                             "%s: architecture \"%s\" contradicts model_type "
                             "\"%s\"",
                             label, arch, mt);
        family = (int)model_types[i].family;
    }
    if (family < 0)
        return bert__err(err, BERT_EFORMAT,
                         "%s: neither \"model_type\" nor \"architectures\" "
                         "says what model this is (expected model_type "
                         "\"bert\", \"distilbert\", \"roberta\", "
                         "\"xlm-roberta\" or \"electra\")",
                         label);
    int distil = family == BERT_FAMILY_DISTILBERT;
    int electra = family == BERT_FAMILY_ELECTRA;
    c->family = (bert_family)family;
    c->is_distilbert = distil;
    snprintf(cfg->model_type, sizeof cfg->model_type, "%s",
             mt ? mt : family_name(c->family));
    if (!arch) {
        static const char *const base[] = {"BertModel", "DistilBertModel",
                                           "RobertaModel", "ElectraModel"};
        snprintf(cfg->architecture, sizeof cfg->architecture, "%s",
                 mt && strcmp(mt, "xlm-roberta") == 0 ? "XLMRobertaModel"
                                                      : base[family]);
    }

    /* Sizes (transformers' defaults when absent). */
    const char *k_h = distil ? "dim" : "hidden_size";
    const char *k_l = distil ? "n_layers" : "num_hidden_layers";
    const char *k_nh = distil ? "n_heads" : "num_attention_heads";
    const char *k_i = distil ? "hidden_dim" : "intermediate_size";
    const char *k_act = distil ? "activation" : "hidden_act";
    /* ElectraConfig's defaults are those of electra-small */
    if ((rc = get_size(root, "vocab_size",
                       c->family == BERT_FAMILY_ROBERTA ? 50265 : 30522, 1,
                       BERT_CFG_MAX_VOCAB, &c->vocab_size, label, err)) ||
        (rc = get_size(root, k_h, electra ? 256 : 768, 1, BERT_CFG_MAX_HIDDEN,
                       &c->hidden, label, err)) ||
        (rc = get_size(root, k_l, distil ? 6 : 12, 1, BERT_CFG_MAX_LAYERS,
                       &c->layers, label, err)) ||
        (rc = get_size(root, k_nh, electra ? 4 : 12, 1, BERT_CFG_MAX_HIDDEN,
                       &c->heads, label, err)) ||
        (rc = get_size(root, k_i, electra ? 1024 : 3072, 1,
                       BERT_CFG_MAX_INTERMEDIATE, &c->intermediate, label,
                       err)) ||
        (rc = get_size(root, "max_position_embeddings", 512, 1,
                       BERT_CFG_MAX_POSITION, &c->max_position, label, err)))
        return rc;
    c->embedding_size = c->hidden;
    if (electra) {
        if ((rc = get_size(root, "embedding_size", 128, 1, BERT_CFG_MAX_HIDDEN,
                           &c->embedding_size, label, err)))
            return rc;
        /* the embeddings are computed in a hidden-wide buffer */
        if (c->embedding_size > c->hidden)
            return bert__err(err, BERT_EUNSUPPORTED,
                             "%s: embedding_size %zu larger than hidden_size "
                             "%zu is not supported",
                             label, c->embedding_size, c->hidden);
    }
    if (c->hidden % c->heads != 0)
        return bert__err(err, BERT_EFORMAT,
                         "%s: %s %zu is not a multiple of %s %zu", label, k_h,
                         c->hidden, k_nh, c->heads);
    if (distil) {
        c->type_vocab = 0;
    } else if ((rc = get_size(root, "type_vocab_size", 2, 1, BERT_CFG_MAX_TYPES,
                              &c->type_vocab, label, err))) {
        return rc;
    }

    if ((rc = get_str(root, k_act, 0, &s, label, err)))
        return rc;
    c->act = BERT_ACT_GELU;
    if (s && parse_act(s, &c->act))
        return bert__err(err, BERT_EUNSUPPORTED,
                         "%s: %s \"%.40s\" is not supported (use gelu, "
                         "gelu_new, gelu_pytorch_tanh or relu)",
                         label, k_act, s);

    double d;
    if (distil) {
        c->layer_norm_eps = 1e-12f; /* hard-coded in modeling_distilbert.py */
        if ((rc = get_prob(root, "dropout", 0.1, 0, &d, label, err)))
            return rc;
        c->hidden_dropout = (float)d;
        if ((rc = get_prob(root, "attention_dropout", 0.1, 0, &d, label, err)))
            return rc;
        c->attention_dropout = (float)d;
        if ((rc = get_prob(root, "seq_classif_dropout", 0.2, 0, &d, label,
                           err)))
            return rc;
        c->classifier_dropout = (float)d;
        const json_t *sp = json_object_get(root, "sinusoidal_pos_embds");
        if (sp && !json_is_boolean(sp))
            return bert__err(err, BERT_EFORMAT,
                             "%s: \"sinusoidal_pos_embds\" must be a boolean",
                             label);
        cfg->sinusoidal_pos = sp && json_is_true(sp);
    } else {
        if ((rc = get_str(root, "position_embedding_type", 1, &s, label, err)))
            return rc;
        if (s && strcmp(s, "absolute") != 0)
            return bert__err(err, BERT_EUNSUPPORTED,
                             "%s: position_embedding_type \"%.40s\" is not "
                             "supported; libbert implements \"absolute\" "
                             "position embeddings only",
                             label, s);
        if ((rc = get_real(root, "layer_norm_eps", 1e-12, 0, &d, label, err)))
            return rc;
        if (!(d > 0 && d < 1) || !((float)d > 0.0f))
            return bert__err(err, BERT_EFORMAT,
                             "%s: \"layer_norm_eps\" %g must be in (0, 1) "
                             "and representable as a float",
                             label, d);
        c->layer_norm_eps = (float)d;
        if ((rc = get_prob(root, "hidden_dropout_prob", 0.1, 0, &d, label,
                           err)))
            return rc;
        c->hidden_dropout = (float)d;
        if ((rc = get_prob(root, "attention_probs_dropout_prob", 0.1, 0, &d,
                           label, err)))
            return rc;
        c->attention_dropout = (float)d;
        if ((rc = get_prob(root, "classifier_dropout", c->hidden_dropout, 1,
                           &d, label, err)))
            return rc;
        c->classifier_dropout = (float)d;
    }

    /* problem_type */
    if ((rc = get_str(root, "problem_type", 1, &s, label, err)))
        return rc;
    c->problem = BERT_PROBLEM_DEFAULT;
    if (s) {
        if (strcmp(s, "single_label_classification") == 0)
            c->problem = BERT_PROBLEM_SINGLE_LABEL;
        else if (strcmp(s, "multi_label_classification") == 0)
            c->problem = BERT_PROBLEM_MULTI_LABEL;
        else if (strcmp(s, "regression") == 0)
            c->problem = BERT_PROBLEM_REGRESSION;
        else
            return bert__err(err, BERT_EFORMAT,
                             "%s: unknown problem_type \"%.40s\"", label, s);
    }

    /* RoBERTa's position ids count from pad_token_id (padding_idx) */
    int from_pad = bert__arch_of(c->family)->pos_from_pad;
    cfg->pad_token_id = from_pad ? 1 : -1;
    const json_t *jp = json_object_get(root, "pad_token_id");
    if (jp && !json_is_null(jp)) {
        size_t p;
        if ((rc = get_size(root, "pad_token_id", 0, 0, c->vocab_size - 1, &p,
                           label, err)))
            return rc;
        cfg->pad_token_id = (int)p;
    }
    /* ... and run from pad + 1 to max_position - 1: at least one */
    cfg->pos_offset = from_pad ? (size_t)cfg->pad_token_id + 1 : 0;
    if (from_pad && cfg->pos_offset >= c->max_position)
        return bert__err(err, BERT_EFORMAT,
                         "%s: max_position_embeddings %zu leaves no position "
                         "after padding_idx %d", label, c->max_position,
                         cfg->pad_token_id);

    if (c->task != BERT_TASK_BASE) {
        if ((rc = parse_labels(root, cfg, label, err)))
            return rc;
    } else {
        c->num_labels = 0;
    }
    return BERT_OK;
}

/* initializer_range and qa_dropout: only the trainer uses them, so a
 * strange value falls back to the default instead of refusing the model. */
static void training_keys(const json_t *root, bert_cfg *cfg)
{
    const json_t *v = json_object_get(root, "initializer_range");
    double r = v && json_is_number(v) ? json_number_value(v) : 0.02;
    v = json_object_get(root, "qa_dropout");
    double qa = v && json_is_number(v) ? json_number_value(v) : 0.1;
    cfg->init_range = (float)(r > 0 && r < 10 ? r : 0.02);
    cfg->qa_dropout = (float)(qa >= 0 && qa < 1 ? qa : 0.1);
}

static const char *const aggregations[] = {"none", "simple", "first",
                                           "average", "max"};

/* libbert's own key, so a bad value is an error, not a default. */
static int aggregation_key(const json_t *root, bert_cfg *cfg,
                           const char *label, bert_error *err)
{
    const json_t *v = json_object_get(root, "aggregation_strategy");
    cfg->aggregation = -1;
    if (!v || json_is_null(v))
        return BERT_OK;
    for (int i = 0; json_is_string(v) && i < 5; i++)
        if (strcmp(json_string_value(v), aggregations[i]) == 0) {
            cfg->aggregation = i;
            return BERT_OK;
        }
    return bert__err(err, BERT_EFORMAT,
                     "%s: \"aggregation_strategy\" must be \"none\", "
                     "\"simple\", \"first\", \"average\" or \"max\"",
                     label);
}

int bert__config_parse(const char *json, size_t len, const char *label,
                       bert_cfg *cfg, bert_error *err)
{
    json_error_t jerr;
    memset(cfg, 0, sizeof *cfg);
    if (!label)
        label = "config.json";
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return bert__err(err, BERT_EFORMAT,
                         "%s: invalid JSON at line %d column %d: %s", label,
                         jerr.line, jerr.column, jerr.text);
    int rc = parse_root(root, cfg, label, err);
    if (rc == BERT_OK)
        training_keys(root, cfg);
    if (rc == BERT_OK)
        rc = aggregation_key(root, cfg, label, err);
    json_decref(root);
    if (rc != BERT_OK)
        bert__config_free(cfg);
    return rc;
}

int bert__config_load(const char *path, bert_cfg *cfg, bert_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    int odd;
    FILE *f = bert__fopen_regular(path, &odd);
    if (!f) {
        int e = errno;
        if (odd)
            return bert__err(err, BERT_EFORMAT, "%s: not a regular file",
                             path);
        return bert__err(err, e == ENOENT ? BERT_EMISSING : BERT_EIO,
                         "%s: cannot open: %s", path, strerror(e));
    }
    char *buf;
    size_t n;
    int rc = bert__read_all(f, 16u << 20, &buf, &n);
    fclose(f);
    if (rc == BERT_ETOOLONG)
        return bert__err(err, rc, "%s: larger than 16 MB, not a config.json",
                         path);
    if (rc == BERT_ENOMEM)
        return bert__err(err, rc, "%s: out of memory", path);
    if (rc)
        return bert__err(err, rc, "%s: read error", path);
    rc = bert__config_parse(buf, n, path, cfg, err);
    free(buf);
    return rc;
}

void bert__config_free(bert_cfg *cfg)
{
    if (!cfg)
        return;
    if (cfg->labels) {
        for (size_t i = 0; i < cfg->pub.num_labels; i++)
            free(cfg->labels[i]);
        free(cfg->labels);
    }
    memset(cfg, 0, sizeof *cfg);
}

/* ---- writing ------------------------------------------------------------ */

/* A float as the shortest decimal that reads back as that float (so 0.1f
 * is written 0.1, as transformers writes its Python floats). */
static json_t *jreal(float f)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", (double)f);
    return json_real(strtod(buf, NULL));
}

#define SET(k, v) json_object_set_new(o, k, v)
#define INT(v) json_integer((json_int_t)(v))

int bert__config_write(const bert_cfg *cfg, const char *architecture,
                       const char *path, bert_error *err)
{
    const bert_config *c = &cfg->pub;
    json_t *o = json_object(), *ar = json_array();
    if (!o || !ar) {
        json_decref(o);
        json_decref(ar);
        return bert__err(err, BERT_ENOMEM, "out of memory");
    }
    const char *act = bert__act_name(c->act);
    json_array_append_new(ar, json_string(architecture));
    SET("architectures", ar);
    SET("initializer_range", jreal(cfg->init_range));
    SET("max_position_embeddings", INT(c->max_position));
    SET("model_type", json_string(cfg->model_type));
    SET("pad_token_id", INT(cfg->pad_token_id >= 0 ? cfg->pad_token_id : 0));
    SET("torch_dtype", json_string("float32"));
    SET("transformers_version", json_string("4.46.3"));
    SET("vocab_size", INT(c->vocab_size));
    if (c->is_distilbert) {
        /* DistilBertConfig's own names; LayerNorm eps is fixed (1e-12) */
        SET("activation", json_string(act));
        SET("attention_dropout", jreal(c->attention_dropout));
        SET("dim", INT(c->hidden));
        SET("dropout", jreal(c->hidden_dropout));
        SET("hidden_dim", INT(c->intermediate));
        SET("n_heads", INT(c->heads));
        SET("n_layers", INT(c->layers));
        SET("qa_dropout", jreal(cfg->qa_dropout));
        SET("seq_classif_dropout", jreal(c->classifier_dropout));
        SET("sinusoidal_pos_embds", json_boolean(cfg->sinusoidal_pos));
    } else {
        SET("attention_probs_dropout_prob", jreal(c->attention_dropout));
        SET("classifier_dropout", json_null());
        SET("hidden_act", json_string(act));
        SET("hidden_dropout_prob", jreal(c->hidden_dropout));
        SET("hidden_size", INT(c->hidden));
        if (c->family == BERT_FAMILY_ELECTRA)
            SET("embedding_size", INT(c->embedding_size));
        SET("intermediate_size", INT(c->intermediate));
        SET("layer_norm_eps", jreal(c->layer_norm_eps));
        SET("num_attention_heads", INT(c->heads));
        SET("num_hidden_layers", INT(c->layers));
        SET("position_embedding_type", json_string("absolute"));
        SET("type_vocab_size", INT(c->type_vocab));
        SET("use_cache", json_true());
    }
    if (c->task != BERT_TASK_BASE) {
        json_t *i2l = json_object(), *l2i = json_object();
        for (size_t i = 0; i < c->num_labels; i++) {
            char k[32];
            snprintf(k, sizeof k, "%zu", i);
            json_object_set_new(i2l, k, json_string(cfg->labels[i]));
            json_object_set_new(l2i, cfg->labels[i], INT(i));
        }
        SET("id2label", i2l);
        SET("label2id", l2i);
        SET("num_labels", INT(c->num_labels));
        if (c->task == BERT_TASK_SEQUENCE)
            SET("problem_type", json_string("single_label_classification"));
    }
    if (cfg->aggregation >= 0 && cfg->aggregation < 5)
        SET("aggregation_strategy",
            json_string(aggregations[cfg->aggregation]));
    int rc = json_dump_file(o, path, JSON_INDENT(2) | JSON_SORT_KEYS |
                                         JSON_REAL_PRECISION(9));
    json_decref(o);
    if (rc)
        return bert__err(err, BERT_EIO, "%s: cannot write: %s", path,
                         strerror(errno));
    /* json_dump_file writes no final newline: add one as transformers does */
    FILE *f = fopen(path, "a");
    if (!f || fputc('\n', f) == EOF || fclose(f) != 0)
        return bert__err(err, BERT_EIO, "%s: cannot write: %s", path,
                         strerror(errno));
    return BERT_OK;
}
