/*
 * bert-tag - named-entity (token-classification) tagging with Hugging Face's
 * pipeline semantics: one text per stdin line (or per argument), entities
 * as JSON, CoNLL columns or inline [text](TYPE) marks.
 *
 * The work is done by the library's bert_tag_text (libbert/tagger.c); this
 * file is options and output formats.
 */
#include "apps/common.h"

#include <errno.h>
#include <getopt.h>
#include <libbert/bert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "bert-tag"

enum { FMT_JSON, FMT_CONLL, FMT_INLINE };

typedef struct tagger {
    const bert_model *m;
    bert_session *s;
    bert_tag_params params;
    bert_tag_result *res;
    int format;
    long long n_errors;
} tagger;

static void print_json(const tagger *t, const bert_tag_result *r)
{
    int none = t->params.aggregation == BERT_AGG_NONE;
    putchar('[');
    for (size_t i = 0; i < r->n; i++) {
        const bert_entity *e = &r->entities[i];
        fputs(i ? ",{" : "{", stdout);
        fputs(none ? "\"entity\":" : "\"entity_group\":", stdout);
        app_json_string(stdout, e->entity, strlen(e->entity));
        printf(",\"score\":%.9g", (double)e->score);
        if (none)
            printf(",\"index\":%d", (int)e->index);
        fputs(",\"word\":", stdout);
        app_json_string(stdout, e->word, strlen(e->word));
        printf(",\"start\":%lld,\"end\":%lld}", (long long)e->start,
               (long long)e->end);
    }
    fputs("]\n", stdout);
}

static void print_conll(const tagger *t, const bert_tag_result *r,
                        const char *text)
{
    for (size_t i = 0; i < r->n_words; i++) {
        const bert_tag_word *w = &r->words[i];
        const char *tag = bert_model_label(t->m, w->label);
        fwrite(text + w->byte_start, 1, (size_t)(w->byte_end - w->byte_start),
               stdout);
        printf("\t%s\n", tag ? tag : "");
    }
    putchar('\n');
}

static void print_inline(const bert_tag_result *r, const char *text,
                         size_t len)
{
    int64_t pos = 0;
    for (size_t i = 0; i < r->n; i++) {
        const bert_entity *e = &r->entities[i];
        if (e->byte_start < pos || e->byte_end <= e->byte_start)
            continue; /* overlapping or empty: leave the text as it is */
        fwrite(text + pos, 1, (size_t)(e->byte_start - pos), stdout);
        putchar('[');
        fwrite(text + e->byte_start, 1, (size_t)(e->byte_end - e->byte_start),
               stdout);
        printf("](%s)", e->entity);
        pos = e->byte_end;
    }
    fwrite(text + pos, 1, len - (size_t)pos, stdout);
    putchar('\n');
}

/* Tags one text; 0 on success, else prints the error and returns -1. */
static int tag_one(void *arg, const char *text, size_t len, const char *pair,
                   size_t plen, const char *where, long line)
{
    tagger *t = arg;
    bert_error err;
    int rc;
    if (!text) { /* a bad JSON Lines record: pair holds the reason */
        rc = BERT_EINVAL;
        snprintf(err.text, sizeof err.text, "%.*s", (int)plen, pair);
        text = "";
    } else if (pair) {
        rc = BERT_EINVAL;
        snprintf(err.text, sizeof err.text,
                 "a token-classification model takes no text_pair");
    } else {
        rc = bert_tag_text(t->s, text, len, &t->params, t->res, &err);
    }
    if (rc) {
        t->n_errors++;
        app_text_error(PROG, where, line, err.text);
        /* keep one output record per input */
        if (t->format == FMT_JSON) {
            fputs("{\"error\":", stdout);
            app_json_string(stdout, err.text, strlen(err.text));
            fputs("}\n", stdout);
        } else if (t->format == FMT_CONLL) {
            putchar('\n');
        } else {
            fwrite(text, 1, len, stdout);
            putchar('\n');
        }
        return -1;
    }
    if (t->format == FMT_JSON)
        print_json(t, t->res);
    else if (t->format == FMT_CONLL)
        print_conll(t, t->res, text);
    else
        print_inline(t->res, text, len);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTIONS] [TEXT...]\n"
"Tag named entities (or any token labels) with a BERT token-classification\n"
"model, one text per argument or per standard-input line, with Hugging Face's\n"
"token-classification pipeline semantics.\n"
"\n"
"  -m, --model DIR        model directory (default: the bundled NER model)\n"
"  -a, --aggregation none|simple|first|average|max\n"
"                         how tokens become entities: none = every token;\n"
"                         simple = B-/I- grouping (may split a word);\n"
"                         first/average/max = one tag per word first.\n"
"                         Default: what the model's config.json records\n"
"                         (aggregation_strategy), else first\n"
"  -f, --format json|conll|inline\n"
"                         json (default): a JSON array of entities per text\n"
"                         (entity_group or entity, score, word, start, end in\n"
"                         code points; index with none); conll: word<TAB>tag\n"
"                         per word, blank line after each text; inline: the\n"
"                         text with entities marked [text](TYPE)\n"
"  -i, --ignore LABEL     drop entities with this label or group; repeat or\n"
"                         give a comma-separated list (default O; an empty\n"
"                         LABEL keeps everything)\n"
"  -s, --stride N         tag texts longer than the model's maximum with\n"
"                         windows overlapping by N tokens (default: truncate)\n"
"  -t, --threads N        threads for the model (default 1)\n"
"      --precision P      fp32 (default, exact), bf16 or int8 (int8: faster\n"
"                         on any AVX2 CPU, most with VNNI; results move\n"
"                         slightly, see docs/precision.md)\n"
"  -J, --jsonl            read JSON Lines: {\"text\": ...} per line (texts may\n"
"                         hold TABs and newlines)\n"
"  -h, --help             this help\n"
"  -V, --version          version\n"
"\n"
"Lines end at '\\n' only.  Exit status: 0 success, 1 usage error, 2 bad model\n"
"or input (every line is still answered: an {\"error\":...} object in json).\n"
"\n"
"Examples:\n"
"  echo 'Angela Merkel visited Paris.' | " PROG "\n"
"  " PROG " --format inline 'Angela Merkel visited Paris.'\n"
"  " PROG " --aggregation first --format conll < sentences.txt\n"
"  " PROG " --model models/ner --stride 32 < long-documents.txt\n");
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"aggregation", required_argument, NULL, 'a'},
        {"format", required_argument, NULL, 'f'},
        {"ignore", required_argument, NULL, 'i'},
        {"stride", required_argument, NULL, 's'},
        {"threads", required_argument, NULL, 't'},
        {"precision", required_argument, NULL, 'R'},
        {"jsonl", no_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    static const char *const aggs[] = {"none", "simple", "first", "average",
                                       "max"};
    tagger T;
    memset(&T, 0, sizeof T);
    T.params = bert_tag_default_params();
    int agg = -1; /* --aggregation, else the model's, else first */
    const char *model_dir = NULL;
    const char **ignore = NULL;
    size_t n_ignore = 0;
    int ignore_given = 0, threads = 1, opt, jsonl = 0;
    char *end;
    while ((opt = getopt_long(argc, argv, "m:a:f:i:s:t:JhV", longopts, NULL)) !=
           -1) {
        switch (opt) {
        case 'm': model_dir = optarg; break;
        case 'a': {
            size_t k;
            for (k = 0; k < 5; k++)
                if (strcmp(optarg, aggs[k]) == 0)
                    break;
            if (k == 5) {
                fprintf(stderr, PROG ": --aggregation is none, simple, first, "
                        "average or max, not '%s'\n", optarg);
                return EXIT_USAGE;
            }
            agg = (int)k;
            break;
        }
        case 'f':
            if (strcmp(optarg, "json") == 0)
                T.format = FMT_JSON;
            else if (strcmp(optarg, "conll") == 0)
                T.format = FMT_CONLL;
            else if (strcmp(optarg, "inline") == 0)
                T.format = FMT_INLINE;
            else {
                fprintf(stderr, PROG ": --format is json, conll or inline, "
                        "not '%s'\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'i': {
            ignore_given = 1;
            for (char *tokp = strtok(optarg, ","); tokp;
                 tokp = strtok(NULL, ",")) {
                const char **ni = realloc(ignore, (n_ignore + 1) * sizeof *ni);
                if (!ni)
                    return EXIT_BADINPUT;
                ignore = ni;
                ignore[n_ignore++] = tokp;
            }
            break;
        }
        case 's':
            errno = 0;
            T.params.stride = strtol(optarg, &end, 10);
            if (!*optarg || *end || errno || T.params.stride < 0) {
                fprintf(stderr, PROG ": --stride needs a number >= 0, not "
                        "'%s'\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'J': jsonl = 1; break;
        default: {
            int st = app_option(PROG, opt, optarg, &threads, usage);
            if (st >= 0)
                return st;
        }
        }
    }
    if (ignore_given) {
        T.params.ignore_labels = ignore;
        T.params.n_ignore = n_ignore;
    }
    if (T.params.stride >= 0 && agg == BERT_AGG_NONE) {
        fprintf(stderr, PROG ": --stride needs an aggregation other than none "
                "(as in transformers)\n");
        return EXIT_USAGE;
    }

    bert_model *m = app_load_model(PROG, &model_dir, "ner", "NER",
                                   BERT_TASK_TOKEN);
    if (!m)
        return EXIT_BADINPUT;
    /* By default the aggregation the model was trained for, else first */
    if (agg < 0)
        agg = bert_model_default_aggregation(m);
    T.params.aggregation = (bert_aggregation)agg;
    if (T.params.stride >= 0 && agg == BERT_AGG_NONE) {
        fprintf(stderr, PROG ": --stride needs an aggregation other than none "
                "(the model's default aggregation is none; pass "
                "--aggregation)\n");
        bert_model_free(m);
        return EXIT_USAGE;
    }
    size_t maxlen = bert_model_max_length(m);
    if (T.params.stride >= 0 && (size_t)T.params.stride + 2 >= maxlen) {
        fprintf(stderr, PROG ": --stride %ld must be less than the model's "
                "maximum length minus 2 (%zu)\n", T.params.stride,
                maxlen > 2 ? maxlen - 2 : 0);
        bert_model_free(m);
        return EXIT_USAGE;
    }
    if (!(T.s = app_session(PROG, m, model_dir, threads))) {
        bert_model_free(m);
        return EXIT_BADINPUT;
    }
    T.m = m;
    T.res = bert_tag_result_create();
    if (!T.res) {
        fprintf(stderr, PROG ": out of memory\n");
        return EXIT_BADINPUT;
    }

    if (app_each_text(PROG, argc, argv, optind, jsonl, tag_one, &T))
        T.n_errors++;
    int status = app_exit_status(PROG, T.n_errors);
    bert_tag_result_free(T.res);
    bert_session_free(T.s);
    bert_model_free(m);
    free(ignore);
    return status;
}
