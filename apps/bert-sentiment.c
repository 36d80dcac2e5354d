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
        bert_classify_params p = bert_classify_default_params();
        rc = bert_classify_text_ex(c->s, text, len, pair, plen, &p, NULL,
                                   c->scores, c->C, &label, NULL, &err);
        if (rc)
            msg = err.text;
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
"  -t, --threads N    threads for the model (default 1)\n"
"      --precision P  fp32 (default, exact), bf16 or int8 (int8: faster where\n"
"                     the CPU has VNNI; results move slightly, see\n"
"                     docs/precision.md)\n"
"  -h, --help         this help\n"
"  -V, --version      version\n"
"\n"
"Lines end at '\\n' only.  Long texts are truncated to the model's maximum\n"
"length.  Probabilities: softmax (sigmoid for multi-label and one-label\n"
"models; the raw value for regression models), as Hugging Face's\n"
"text-classification pipeline.\n"
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
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    ctx C;
    memset(&C, 0, sizeof C);
    const char *model_dir = NULL;
    int threads = 1, opt;
    while ((opt = getopt_long(argc, argv, "m:jJt:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'm': model_dir = optarg; break;
        case 'j': C.json = 1; break;
        case 'J': C.jsonl = 1; break;
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
    int status = app_exit_status(PROG, C.n_errors);
    free(C.scores);
    bert_session_free(C.s);
    bert_model_free(C.m);
    return status;
}
