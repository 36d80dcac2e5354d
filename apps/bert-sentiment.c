/*
 * bert-sentiment - classify texts with a sequence-classification model
 * (by default the bundled sentiment model): label<TAB>probability<TAB>text
 * per text, or JSON lines with every label's probability.
 */
#include "apps/common.h"

#include <errno.h>
#include <getopt.h>
#include <libbert/bert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "bert-sentiment"

typedef struct ctx {
    bert_model *m;
    bert_session *s;
    size_t C;
    float *scores;
    int json, jsonl;
    long long n_errors;
    bert_classify_params params;   /* windows or truncation (--truncate) */
    long long n_windowed, n_truncated;
} ctx;

/* The start of a JSON line: {"text": ... and its "text_pair". */
static void json_input(const char *text, size_t len, const char *pair,
                       size_t plen)
{
    fputs("{\"text\":", stdout);
    app_json_string(stdout, text, len);
    if (pair) {
        fputs(",\"text_pair\":", stdout);
        app_json_string(stdout, pair, plen);
    }
}

static int classify(void *arg, const char *text, size_t len,
                    const char *pair, size_t plen, const char *where,
                    long line)
{
    ctx *c = arg;
    int label;
    const char *msg = NULL;
    char buf[600];
    bert_error err;
    bert_classify_result res;
    int rc = BERT_EUTF8;
    size_t v = text ? bert_utf8_valid(text, len) : 0;
    size_t pv = pair ? bert_utf8_valid(pair, plen) : 0;
    if (!text) { /* a bad JSON Lines record: pair holds the reason */
        snprintf(buf, sizeof buf, "%.*s", (int)plen, pair);
        msg = buf;
        rc = BERT_EINVAL;
        text = "";
        pair = NULL;
    } else if (v == len && pv == plen) {
        /* one text through the batched call, which says how it was cut */
        rc = bert_classify_batch(c->s, &text, &len, pair ? &pair : NULL,
                                 pair ? &plen : NULL, 1, &c->params, &res,
                                 NULL, c->scores, c->C, &err);
        if (rc == BERT_OK && res.status != BERT_OK) {
            rc = res.status;
            err = res.error;
        }
        if (rc) {
            msg = err.text;
        } else {
            label = res.label;
            c->n_windowed += res.n_windows > 1;
            c->n_truncated += res.n_overflow > 0;
        }
    } else if (v != len) {
        snprintf(buf, sizeof buf, "invalid UTF-8 at byte %zu", v);
        msg = buf;
    } else {
        snprintf(buf, sizeof buf, "invalid UTF-8 in text_pair at byte %zu",
                 pv);
        msg = buf;
    }
    if (rc) {
        c->n_errors++;
        if (!msg || !*msg)
            msg = bert_strerror(rc);
        app_text_error(PROG, where, line, msg);
        if (c->json) {
            json_input(text, len, pair, plen);
            fputs(",\"error\":", stdout);
            app_json_string(stdout, msg, strlen(msg));
            fputs("}\n", stdout);
        } else {
            fputs("\t\t", stdout);
            fwrite(text, 1, len, stdout);
            putchar('\n');
        }
        return -1;
    }
    const char *name = bert_model_label(c->m, label);
    if (c->json) {
        json_input(text, len, pair, plen);
        fputs(",\"label\":", stdout);
        app_json_string(stdout, name, strlen(name));
        if (res.n_windows > 1)
            printf(",\"windows\":%zu", res.n_windows);
        if (res.n_overflow)
            printf(",\"truncated_tokens\":%zu", res.n_overflow);
        printf(",\"score\":%.9g,\"scores\":{", (double)c->scores[label]);
        for (size_t i = 0; i < c->C; i++) {
            const char *l = bert_model_label(c->m, (int)i);
            if (i)
                putchar(',');
            app_json_string(stdout, l, strlen(l));
            printf(":%.9g", (double)c->scores[i]);
        }
        fputs("}}\n", stdout);
    } else {
        printf("%s\t%.9g\t", name, (double)c->scores[label]);
        fwrite(text, 1, len, stdout);
        putchar('\n');
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTIONS] [TEXT...]\n"
"Classify each TEXT, or each line of standard input, with a BERT\n"
"sequence-classification model (default: the bundled sentiment model).\n"
"Prints label<TAB>probability<TAB>text per text.\n"
"\n"
"  -m, --model DIR    model directory\n"
"  -j, --json         JSON lines: {\"text\",\"label\",\"score\",\"scores\":{label:p}}\n"
"  -J, --jsonl        read JSON Lines: {\"text\": ..., \"text_pair\": ...} per\n"
"                     line (texts may hold TABs and newlines; pairs)\n"
"      --truncate     classify only the first tokens of a long text (as many\n"
"                     as the model takes) instead of windows over all of it\n"
"      --stride N     tokens shared by consecutive windows (default: a\n"
"                     quarter of a window)\n"
"  -t, --threads N    threads for the model (default 1)\n"
"      --precision P  fp32 (default, exact), bf16 or int8 (int8: faster on\n"
"                     any AVX2 CPU, most with VNNI; results move\n"
"                     slightly, see docs/precision.md)\n"
"  -h, --help         this help\n"
"  -V, --version      version\n"
"\n"
"Lines end at '\\n' only.  A text longer than the model's maximum length is\n"
"classified over overlapping windows of that length (the mean of their\n"
"logits; JSON adds \"windows\"); a sentence pair is truncated (JSON adds\n"
"\"truncated_tokens\").  Standard error counts both at the end.\n"
"Probabilities: softmax (sigmoid for multi-label and one-label models; the\n"
"raw value for regression models), as Hugging Face's text-classification\n"
"pipeline.\n"
"Exit status: 0 success, 1 usage error, 2 bad model or input (a text that\n"
"cannot be classified still gets an output line, with an empty label).\n"
"\n"
"Examples:\n"
"  " PROG " 'What a wonderful film!' 'Dull and far too long.'\n"
"  " PROG " --json < reviews.txt\n"
"  " PROG " --model models/sst2 < reviews.txt | sort | cut -f1 | uniq -c\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"jsonl", no_argument, NULL, 'J'},
        {"threads", required_argument, NULL, 't'},
        {"precision", required_argument, NULL, 'R'},
        {"truncate", no_argument, NULL, 'T'},
        {"stride", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    ctx C;
    memset(&C, 0, sizeof C);
    const char *model_dir = NULL, *stride = NULL;
    int threads = 1, opt, truncate = 0;
    while ((opt = getopt_long(argc, argv, "m:jJt:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm': model_dir = optarg; break;
        case 'j': C.json = 1; break;
        case 'J': C.jsonl = 1; break;
        case 'T': truncate = 1; break;
        case 'S': stride = optarg; break;
        default: {
            int st = app_option(PROG, opt, optarg, &threads, usage);
            if (st >= 0)
                return st;
        }
        }
    }
    if (!(C.m = app_load_model(PROG, &model_dir, "sentiment", "sentiment",
                               BERT_TASK_SEQUENCE)))
        return EXIT_BADINPUT;
    C.params = bert_classify_default_params();
    if (app_long_params(PROG, C.m, truncate, stride, &C.params.window)) {
        bert_model_free(C.m);
        return EXIT_USAGE;
    }
    C.C = bert_model_config(C.m)->num_labels;
    C.scores = calloc(C.C, sizeof *C.scores);
    if (!C.scores) {
        fprintf(stderr, PROG ": %s: out of memory\n", model_dir);
        bert_model_free(C.m);
        return EXIT_BADINPUT;
    }
    if (!(C.s = app_session(PROG, C.m, model_dir, threads))) {
        free(C.scores);
        bert_model_free(C.m);
        return EXIT_BADINPUT;
    }
    if (app_each_text(PROG, argc, argv, optind, C.jsonl, classify, &C))
        C.n_errors++;
    app_long_summary(PROG, "", "text", C.n_windowed, C.n_truncated,
                     &C.params.window);
    int status = app_exit_status(PROG, C.n_errors);
    free(C.scores);
    bert_session_free(C.s);
    bert_model_free(C.m);
    return status;
}
