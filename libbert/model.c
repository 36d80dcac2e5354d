/* model.c - bert_model_load / bert_model_free and the model accessors. */
#ifdef HAVE_CONFIG_H
/* autoconf's, from the include path: "config.h" would be libbert/config.h
 * beside this file, and BERT_INSTALLED_MODELDIR would fall back to the
 * default prefix's directory whatever --prefix said */
#include <config.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libbert/internal.h"
#include "libbert/model.h"

bert_model_params bert_model_default_params(void)
{
    bert_model_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.load_tokenizer = 1;
    p.kernels = BERT_KERNELS_AUTO;
    p.n_threads = 1;
    return p;
}

int bert__progress_add(bert__progress *p, size_t n)
{
    p->done += n;
    if (p->fn && p->fn(p->done, p->total, p->data))
        return BERT_ECANCELED;
    return BERT_OK;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int bert_model_load(const char *dir, const bert_model_params *params,
                    bert_model **out, bert_error *err)
{
    bert_model_params p;
    bert_model *m = NULL;
    char path[4096];
    int rc;
    bert__progress pr = {NULL, NULL, 0, 0};

    if (out)
        *out = NULL;
    if (BERT__PARAMS(p, params, bert_model_default_params, err))
        return BERT_EINVAL;
    if (!dir || !out)
        return bert__err(err, BERT_EINVAL,
                         "bert_model_load: dir and out must not be NULL");
    if (strlen(dir) > sizeof path - 64)
        return bert__err(err, BERT_EINVAL, "%.64s...: path too long", dir);
    struct stat st;
    if (stat(dir, &st) != 0)
        return bert__err(err, errno == ENOENT ? BERT_EMISSING : BERT_EIO,
                         "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return bert__err(err, BERT_EMISSING,
                         "%s: not a directory (expected a Hugging Face model "
                         "directory with config.json and model.safetensors)",
                         dir);

    m = calloc(1, sizeof *m);
    if (!m)
        return bert__err(err, BERT_ENOMEM, "%s: out of memory", dir);

    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((rc = bert__config_load(path, &m->cfg, err)) != BERT_OK) {
        if (rc == BERT_EMISSING)
            bert__err(err, rc,
                      "%s: missing; a Hugging Face model directory needs "
                      "config.json (save_pretrained writes it)",
                      path);
        goto fail;
    }

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!exists(path)) {
        char alt[4200];
        snprintf(alt, sizeof alt, "%s/pytorch_model.bin", dir);
        if (exists(alt)) {
            rc = bert__err(err, BERT_EUNSUPPORTED,
                           "%s: only pytorch_model.bin found; libbert reads "
                           "model.safetensors: convert it with transformers "
                           "(model.save_pretrained(dir, "
                           "safe_serialization=True))",
                           dir);
            goto fail;
        }
        snprintf(alt, sizeof alt, "%s/model.safetensors.index.json", dir);
        if (exists(alt)) {
            rc = bert__err(err, BERT_EUNSUPPORTED,
                           "%s: sharded checkpoint (model.safetensors.index."
                           "json) is not supported; save it as one "
                           "model.safetensors (max_shard_size large enough)",
                           dir);
            goto fail;
        }
        rc = bert__err(err, BERT_EMISSING,
                       "%s: missing; the model directory needs its weights "
                       "as model.safetensors",
                       path);
        goto fail;
    }
    if ((rc = bert__st_open(path, &m->st, err)) != BERT_OK)
        goto fail;
    /* first a step without a measure: the tensors' sizes are known once
     * they are bound, the packed matrices' once the kernels are chosen */
    pr.fn = p.progress;
    pr.data = p.progress_data;
    if ((rc = bert__progress_add(&pr, 0)) != BERT_OK)
        goto canceled;
    if ((rc = bert__weights_bind(&m->cfg, &m->st, path, &m->w, &m->conv,
                                 err)) != BERT_OK)
        goto fail;
    pr.done = pr.total = m->st.size;
    /* pool_w is a pooler for BERT and RobertaModel only (DistilBERT's
     * pre_classifier and the RoBERTa/ELECTRA heads' dense reuse it) */
    m->has_pooler_out =
        m->w.pool_w != NULL &&
        (m->cfg.pub.family == BERT_FAMILY_BERT ||
         (m->cfg.pub.family == BERT_FAMILY_ROBERTA &&
          m->cfg.pub.task == BERT_TASK_BASE));
    char why[160];
    if (!bert__kernels_supported(p.kernels, why, sizeof why)) {
        rc = bert__err(err, BERT_EUNSUPPORTED, "%s: kernels \"%s\": %s", dir,
                       bert__kernels_name(p.kernels), why);
        goto fail;
    }
    if (!bert__precision_supported(p.precision, p.kernels, why, sizeof why)) {
        rc = bert__err(err, BERT_EUNSUPPORTED,
                       "%s: precision \"%s\" with kernels \"%s\": %s", dir,
                       bert__precision_name(p.precision),
                       bert__kernels_name(p.kernels), why);
        goto fail;
    }

    /* RoBERTa's positions start after padding_idx (bert_cfg.pos_offset) */
    m->max_len = m->cfg.pub.max_position - m->cfg.pos_offset;
    if (p.load_tokenizer) {
        if ((rc = bert_tokenizer_load(dir, &m->tok, err)) != BERT_OK)
            goto fail;
        size_t tv = bert_tokenizer_vocab_size(m->tok);
        if (tv > m->cfg.pub.vocab_size) {
            rc = bert__err(err, BERT_EFORMAT,
                           "%s: the tokenizer has %zu tokens but config.json "
                           "says vocab_size %zu: tokenizer and model do not "
                           "match",
                           dir, tv, m->cfg.pub.vocab_size);
            goto fail;
        }
        size_t ml = bert_tokenizer_model_max_length(m->tok);
        if (ml > 0 && ml < m->max_len)
            m->max_len = ml;
    }
    /* last, the long part: everything that can fail on the files has */
    rc = bert__mats_build(m, p.kernels, p.precision,
                          p.n_threads < 1 ? 1 : p.n_threads, p.pack_cache_dir,
                          path, &pr);
    if (rc == BERT_ECANCELED)
        goto canceled;
    if (rc != BERT_OK) {
        rc = bert__err(err, BERT_ENOMEM,
                       "%s: out of memory packing the weights", dir);
        goto fail;
    }
    *out = m;
    return BERT_OK;

canceled:
    rc = bert__err(err, BERT_ECANCELED, "%s: loading canceled after %zu of "
                   "%zu bytes", dir, pr.done, pr.total);

fail:
    if (err)
        err->status = rc;
    bert_model_free(m);
    return rc;
}

void bert_model_free(bert_model *m)
{
    if (!m)
        return;
    bert_tokenizer_free(m->tok);
    bert__mats_free(&m->mats);
    free(m->w.layers);
    free(m->conv);
    bert__st_close(&m->st);
    bert__config_free(&m->cfg);
    free(m);
}

int bert__model_task(const bert_model *m, bert_task task, bert_error *err)
{
    if (m->cfg.pub.task == task)
        return BERT_OK;
    return bert__err(err, BERT_EINVAL, "%s is not a %s model",
                     m->cfg.architecture,
                     task == BERT_TASK_TOKEN ? "token-classification"
                                             : "sequence-classification");
}

const bert_config *bert_model_config(const bert_model *m)
{
    return m ? &m->cfg.pub : NULL;
}

const char *bert_model_label(const bert_model *m, int id)
{
    if (!m || !m->cfg.labels || id < 0 || (size_t)id >= m->cfg.pub.num_labels)
        return NULL;
    return m->cfg.labels[id];
}

const bert_tokenizer *bert_model_tokenizer(const bert_model *m)
{
    return m ? m->tok : NULL;
}

size_t bert_model_max_length(const bert_model *m)
{
    return m ? m->max_len : 0;
}

int bert_model_aggregation(const bert_model *m)
{
    return m ? m->cfg.aggregation : -1;
}

bert_aggregation bert_model_default_aggregation(const bert_model *m)
{
    int a = bert_model_aggregation(m);
    return a >= 0 ? (bert_aggregation)a : BERT_AGG_FIRST;
}

bert_precision bert_model_precision(const bert_model *m)
{
    return m ? m->mats.prec : BERT_PRECISION_FP32;
}

size_t bert_model_packed_bytes(const bert_model *m, int *shared)
{
    if (shared)
        *shared = m && m->mats.map != NULL;
    return m ? m->mats.packed_bytes : 0;
}

int bert_model_has_pooler(const bert_model *m)
{
    return m ? m->has_pooler_out : 0;
}

/* ---- installed default models ------------------------------------------- */

#ifndef BERT_INSTALLED_MODELDIR
#define BERT_INSTALLED_MODELDIR "/usr/local/share/libbert/models"
#endif

int bert_default_model_dir(const char *name, char *buf, size_t cap,
                           bert_error *err)
{
    if (!name || !buf || !*name || strchr(name, '/'))
        return bert__err(err, BERT_EINVAL,
                         "bert_default_model_dir: %s", !name || !*name
                             ? "no model name"
                             : !buf ? "buf is NULL"
                                    : "a model name has no '/'");
    /* $LIBBERT_MODELDIR; the models beside the running program
     * (BINDIR/../share/libbert/models: an installed tree works from any
     * prefix, even moved); the directory configure was given */
    char rel[4200] = "", exe[4096];
    if (realpath("/proc/self/exe", exe)) {
        char *sl = strrchr(exe, '/');
        if (sl) {
            *sl = '\0';
            snprintf(rel, sizeof rel, "%s/../share/libbert/models", exe);
        }
    }
    const char *env = getenv("LIBBERT_MODELDIR"), *dirs[3];
    size_t nd = 0;
    if (env && *env)
        dirs[nd++] = env;
    if (*rel && strlen(rel) < sizeof rel - 1)
        dirs[nd++] = rel;
    dirs[nd++] = BERT_INSTALLED_MODELDIR;
    char tried[3 * 4300] = "";
    size_t k = 0;
    for (size_t i = 0; i < nd; i++) {
        int n = snprintf(buf, cap, "%s/%s", dirs[i], name);
        if (n < 0 || (size_t)n >= cap)
            return bert__err(err, BERT_ERANGE,
                             "bert_default_model_dir: %s/%s needs %d bytes, "
                             "buf holds %zu", dirs[i], name, n + 1, cap);
        char probe[4400];
        struct stat st;
        if ((size_t)snprintf(probe, sizeof probe, "%s/config.json", buf) <
                sizeof probe &&
            stat(probe, &st) == 0 && S_ISREG(st.st_mode))
            return BERT_OK;
        int w = snprintf(tried + k, sizeof tried - k, "%s%s", i ? " or " : "",
                         buf);
        if (w > 0 && (size_t)w < sizeof tried - k)
            k += (size_t)w;
    }
    return bert__err(err, BERT_EMISSING,
                     "no default model \"%s\": no config.json in %s (make "
                     "install puts them there, LIBBERT_MODELDIR names another "
                     "place)", name, tried);
}
