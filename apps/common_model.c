/* common_model.c - the model helpers of common.h, apart from common.c so
 * that tools which do not link libbert (bert-vocab) can use the rest. */
#include "apps/common.h"

#include <errno.h>
#include <jansson.h>
#include <libbert/bert.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int app_kernels(const char *prog, bert_kernels *out)
{
    const char *v = getenv("BERT_KERNELS");
    int k = v && *v ? bert_kernels_from_name(v) : BERT_KERNELS_AUTO;
    *out = k < 0 ? BERT_KERNELS_AUTO : (bert_kernels)k;
    if (k >= 0)
        return 0;
    fprintf(stderr, "%s: BERT_KERNELS=%s: unknown kernels (auto, amx, avx512, "
            "avx2 or blis)\n", prog, v);
    return -1;
}

/* The tool's --precision (a tool loads one model; NULL: not given). */
static const char *precision_opt;

static int precision_of(const char *prog, const char *name, const char *what,
                        bert_precision *out)
{
    int p = name && *name ? bert_precision_from_name(name) : BERT_PRECISION_FP32;
    if (p < 0) {
        fprintf(stderr, "%s: %s%s: unknown precision (fp32, bf16 or int8)\n",
                prog, what, name);
        return -1;
    }
    *out = (bert_precision)p;
    return 0;
}

int app_set_precision(const char *prog, const char *name)
{
    bert_precision p;
    if (precision_of(prog, name, "--precision ", &p))
        return -1;
    precision_opt = name;
    return 0;
}

int app_precision(const char *prog, bert_precision *out)
{
    if (precision_opt)
        return precision_of(prog, precision_opt, "--precision ", out);
    return precision_of(prog, getenv("BERT_PRECISION"), "BERT_PRECISION=", out);
}

int app_option(const char *prog, int opt, const char *arg, int *threads,
               void (*usage)(FILE *))
{
    switch (opt) {
    case 't':
        return (*threads = app_parse_threads(prog, arg)) < 0 ? EXIT_USAGE
                                                             : -1;
    case 'R':
        return app_set_precision(prog, arg) ? EXIT_USAGE : -1;
    case 'h':
        usage(stdout);
        return EXIT_OK;
    case 'V':
        printf("%s (libbert) %s\n", prog, BERT_VERSION_STRING);
        return EXIT_OK;
    default:
        fprintf(stderr, "Try '%s --help'.\n", prog);
        return EXIT_USAGE;
    }
}

bert_model *app_load_model(const char *prog, const char **dir,
                           const char *name, const char *what,
                           bert_task task)
{
    static char defdir[8192]; /* *dir points here for the default model */
    if (!*dir) {
        bert_error derr;
        *dir = app_default_model(name, defdir, sizeof defdir, &derr);
        if (!*dir) {
            fprintf(stderr, "%s: no --model given and the default %s model "
                    "is missing (%s); pass --model DIR\n", prog, what,
                    derr.text);
            return NULL;
        }
    }
    bert_error err;
    bert_model *m;
    bert_model_params mp = bert_model_default_params();
    if (app_kernels(prog, &mp.kernels) || app_precision(prog, &mp.precision))
        return NULL;
    if (bert_model_load(*dir, &mp, &m, &err)) {
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

/* ---- JSON Lines input ---- */

int app_jsonl_parse(const char *line, size_t len, void **owner,
                    const char **text, size_t *tlen, const char **pair,
                    size_t *plen, char *msg, size_t msgcap)
{
    json_error_t je;
    json_t *j = json_loadb(line, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES,
                           &je);
    *owner = NULL;
    if (!j) {
        snprintf(msg, msgcap, "invalid JSON at column %d: %s", je.column,
                 je.text);
        return -1;
    }
    json_t *t = json_object_get(j, "text"), *p = json_object_get(j, "text_pair");
    if (!json_is_object(j) || !json_is_string(t)) {
        snprintf(msg, msgcap, "a JSON Lines record needs {\"text\": "
                 "\"...\"} (and optionally \"text_pair\")");
        json_decref(j);
        return -1;
    }
    if (p && !json_is_null(p) && !json_is_string(p)) {
        snprintf(msg, msgcap, "\"text_pair\" must be a string or null");
        json_decref(j);
        return -1;
    }
    *text = json_string_value(t);
    *tlen = json_string_length(t);
    *pair = json_is_string(p) && json_string_length(p) ? json_string_value(p)
                                                       : NULL;
    *plen = *pair ? json_string_length(p) : 0;
    *owner = j;
    return 0;
}

void app_jsonl_free(void *owner)
{
    json_decref(owner);
}

int app_each_text(const char *prog, int argc, char **argv, int first,
                  int jsonl, app_text_fn fn, void *ctx)
{
    if (first < argc) {
        for (int i = first; i < argc; i++) {
            char where[32];
            snprintf(where, sizeof where, "argument %d", i - first + 1);
            fn(ctx, argv[i], strlen(argv[i]), NULL, 0, where, 0);
        }
        return 0;
    }
    char *line = NULL;
    size_t cap = 0;
    long n, lineno = 0;
    while ((n = app_read_line(stdin, &line, &cap)) >= 0) {
        ++lineno;
        if (!jsonl) {
            fn(ctx, line, (size_t)n, NULL, 0, "<stdin>", lineno);
            continue;
        }
        void *own;
        const char *t, *p;
        size_t tl, pl;
        char msg[300];
        if (app_jsonl_parse(line, (size_t)n, &own, &t, &tl, &p, &pl, msg,
                            sizeof msg))
            fn(ctx, NULL, 0, msg, strlen(msg), "<stdin>", lineno);
        else
            fn(ctx, t, tl, p, pl, "<stdin>", lineno);
        app_jsonl_free(own);
    }
    free(line);
    if (n == -2) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    return 0;
}

/* ---- long texts ---------------------------------------------------------- */

int app_long_params(const char *prog, const bert_model *m, int truncate,
                    const char *stride, bert_window_params *w)
{
    *w = bert_window_default_params();
    w->max_length = bert_model_max_length(m);
    w->mode = truncate ? BERT_LONG_TRUNCATE : BERT_LONG_WINDOWS;
    /* a window holds max_length - 2 tokens besides [CLS] and [SEP]; the
     * next one starts max_length - 2 - stride tokens later */
    size_t W = w->max_length > 2 ? w->max_length - 2 : 1;
    if (!stride) {
        w->stride = W / 4;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(stride, &end, 10);
    if (errno || end == stride || *end || stride[0] == '-' || v >= W) {
        fprintf(stderr, "%s: --stride %s: need a number of tokens from 0 to "
                "%zu (windows of the model's %zu tokens hold %zu besides "
                "[CLS] and [SEP])\n", prog, stride, W - 1, w->max_length, W);
        return -1;
    }
    w->stride = v;
    return 0;
}

void app_long_summary(const char *prog, const char *where, const char *noun,
                      long long n_windowed, long long n_truncated,
                      const bert_window_params *w)
{
    if (n_windowed)
        fprintf(stderr, "%s: %s%lld %s(s) longer than the model's %zu tokens "
                "were classified over overlapping windows (stride %zu "
                "tokens; the mean of the windows' logits)\n", prog, where,
                n_windowed, noun, w->max_length, w->stride);
    if (n_truncated)
        fprintf(stderr, "%s: %swarning: %lld %s(s) longer than the model's "
                "%zu tokens were truncated (only their first %zu tokens were "
                "classified%s)\n", prog, where, n_truncated, noun,
                w->max_length, w->max_length,
                w->mode == BERT_LONG_TRUNCATE
                    ? "; without --truncate they go over windows"
                    : ": sentence pairs are always truncated");
}
