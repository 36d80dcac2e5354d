/* common_model.c - the model helpers of common.h, apart from common.c so
 * that tools which do not link libbert (bert-vocab) can use the rest. */
#include "apps/common.h"

#include <libbert/bert.h>
#include <stdio.h>
#include <string.h>

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
    if (bert_model_load(*dir, NULL, &m, &err)) {
        /* the library's message names the file; say the directory once */
        size_t dl = strlen(*dir);
        if (strncmp(err.text, *dir, dl) == 0 && (err.text[dl] == ':' ||
                                                 err.text[dl] == '/'))
            fprintf(stderr, "%s: %s\n", prog, err.text);
        else
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
    bert_error err;
    bert_session *s;
    if (bert_session_create(m, &sp, &s, &err)) {
        fprintf(stderr, "%s: %s: %s\n", prog, dir, err.text);
        return NULL;
    }
    return s;
}
