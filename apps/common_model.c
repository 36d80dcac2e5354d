/* common_model.c - the model helpers of common.h, apart from common.c so
 * that tools which do not link libbert (bert-vocab) can use the rest. */
#include "apps/common.h"

#include <libbert/bert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_kernels(const char *prog, bert_kernels *out)
{
    static const struct {
        const char *name;
        bert_kernels k;
    } names[] = {{"auto", BERT_KERNELS_AUTO},
                 {"avx512", BERT_KERNELS_AVX512},
                 {"avx2", BERT_KERNELS_AVX2},
                 {"blis", BERT_KERNELS_BLIS}};
    const char *v = getenv("BERT_KERNELS");
    *out = BERT_KERNELS_AUTO;
    if (!v || !*v)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(v, names[i].name)) {
            *out = names[i].k;
            return 0;
        }
    fprintf(stderr, "%s: BERT_KERNELS=%s: unknown kernels (auto, avx512, "
            "avx2 or blis)\n", prog, v);
    return -1;
}

bert_model *app_load_model(const char *prog, const char **dir,
                           const char *name, const char *what,
                           bert_task task)
{
    static char defdir[8192]; /* *dir points here for the default model */
    if (!*dir) {
        *dir = app_default_model(name, defdir, sizeof defdir);
        if (!*dir) {
            fprintf(stderr, "%s: no --model given and the default %s model "
                    "is missing (looked in %s); pass --model DIR\n", prog,
                    what, defdir);
            return NULL;
        }
    }
    bert_error err;
    bert_model *m;
    bert_model_params mp = bert_model_default_params();
    if (app_kernels(prog, &mp.kernels))
        return NULL;
    if (bert_model_load(*dir, &mp, &m, &err)) {
        fprintf(stderr, "%s: %s: %s\n", prog, *dir, err.text);
        return NULL;
    }
    const bert_config *cfg = bert_model_config(m);
    if (cfg->task != task ||
        (task == BERT_TASK_SEQUENCE && cfg->num_labels == 0)) {
        fprintf(stderr, "%s: %s: not a %s model\n", prog, *dir,
                task == BERT_TASK_SEQUENCE ? "sequence-classification"
                                           : "token-classification");
        bert_model_free(m);
        return NULL;
    }
    return m;
}

bert_session *app_session(const char *prog, const bert_model *m,
                          const char *dir, int threads)
{
    bert_session_params sp = bert_session_default_params();
    sp.n_threads = threads;
    if (app_kernels(prog, &sp.kernels))
        return NULL;
    bert_error err;
    bert_session *s;
    if (bert_session_create(m, &sp, &s, &err)) {
        fprintf(stderr, "%s: %s: %s\n", prog, dir, err.text);
        return NULL;
    }
    return s;
}
