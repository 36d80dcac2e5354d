/*
 * apps/bert-tokenize.c - tokenizes stdin, one text per line.
 *
 *   bert-tokenize --model DIR [--max-length N] [--format ids|tokens|json]
 *
 * Only '\n' ends a line; a TAB separates a sentence pair (text before the
 * first TAB, the rest is the pair; an empty rest means no pair).  One output
 * line per input line.  A line with invalid UTF-8 is reported on stderr
 * (line number and byte offset) and gives an empty output line, so output
 * stays aligned with input; the exit status is then 2.
 * Exit status: 0 ok, 1 usage, 2 bad input or model files.
 */
#include "apps/common.h"

#include <libbert/bert_tokenizer.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum fmt { FMT_IDS, FMT_TOKENS, FMT_JSON };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bert-tokenize --model DIR [--max-length N] [--format ids|tokens|json]\n"
            "                     [--jsonl]\n"
            "Reads one text per line on stdin (TAB separates a sentence pair; with --jsonl\n"
            "a JSON object {\"text\": ..., \"text_pair\": ...} per line, whose texts may\n"
            "hold TABs and newlines) and writes one line per input line, with the model\n"
            "directory's tokenizer (WordPiece, or RoBERTa's byte-level BPE):\n"
            "  ids     token ids separated by spaces ([CLS] and [SEP], or <s> and </s>,\n"
            "          included; default)\n"
            "  tokens  token strings separated by spaces\n"
            "  json    {\"ids\",\"tokens\",\"type_ids\",\"offsets\",\"byte_offsets\",\"word_ids\"}\n"
            "          (offsets in code points into the input line)\n"
            "--max-length N truncates (longest_first, counting the special tokens); no\n"
            "truncation by default.  Invalid UTF-8 on a line: message on stderr, empty output line,\n"
            "exit status 2 at the end.\n"
            "Exit status: 0 ok, 1 usage, 2 bad input or model files.\n"
            "\nExamples:\n"
            "  echo 'Hello, world!' | bert-tokenize --model data/sentiment\n"
            "  printf 'A question?\\tAn answer.\\n' | bert-tokenize --model DIR "
            "--format tokens\n"
            "  bert-tokenize --model DIR --max-length 128 --format json "
            "< texts.txt > tokens.jsonl\n");
}

static void write_encoding(FILE *o, const bert_tokenizer *t, const bert_encoding *e, enum fmt f)
{
    size_t n = e->n;
    if (f == FMT_IDS) {
        for (size_t i = 0; i < n; i++)
            fprintf(o, i ? " %d" : "%d", (int)e->ids[i]);
    } else if (f == FMT_TOKENS) {
        for (size_t i = 0; i < n; i++) {
            const char *tok = bert_tokenizer_token(t, e->ids[i]);
            fprintf(o, i ? " %s" : "%s", tok ? tok : "[?]");
        }
    } else {
        fputs("{\"ids\":[", o);
        for (size_t i = 0; i < n; i++)
            fprintf(o, i ? ",%d" : "%d", (int)e->ids[i]);
        fputs("],\"tokens\":[", o);
        for (size_t i = 0; i < n; i++) {
            const char *tok = bert_tokenizer_token(t, e->ids[i]);
            if (i)
                putc(',', o);
            tok = tok ? tok : "";
            app_json_string(o, tok, strlen(tok));
        }
        fputs("],\"type_ids\":[", o);
        for (size_t i = 0; i < n; i++)
            fprintf(o, i ? ",%d" : "%d", (int)e->type_ids[i]);
        fputs("],\"offsets\":[", o);
        for (size_t i = 0; i < n; i++)
            fprintf(o, i ? ",[%lld,%lld]" : "[%lld,%lld]", (long long)e->offsets[2 * i],
                    (long long)e->offsets[2 * i + 1]);
        fputs("],\"byte_offsets\":[", o);
        for (size_t i = 0; i < n; i++)
            fprintf(o, i ? ",[%lld,%lld]" : "[%lld,%lld]", (long long)e->byte_offsets[2 * i],
                    (long long)e->byte_offsets[2 * i + 1]);
        fputs("],\"word_ids\":[", o);
        for (size_t i = 0; i < n; i++) {
            if (i)
                putc(',', o);
            if (e->word_ids[i] < 0)
                fputs("null", o);
            else
                fprintf(o, "%d", (int)e->word_ids[i]);
        }
        fputs("]}", o);
    }
    putc('\n', o);
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    enum fmt f = FMT_IDS;
    size_t max_length = 0;
    int jsonl = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return EXIT_OK;
        }
        if (!strcmp(a, "--version")) {
            printf("bert-tokenize (libbert) %s\n", BERT_VERSION_STRING);
            return EXIT_OK;
        }
        if (!strcmp(a, "--jsonl")) {
            jsonl = 1;
            continue;
        }
        if (!strcmp(a, "--model") || !strcmp(a, "--max-length") || !strcmp(a, "--format")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bert-tokenize: %s needs a value\n", a);
                usage(stderr);
                return EXIT_USAGE;
            }
            val = argv[++i];
        } else if (!strncmp(a, "--model=", 8) || !strncmp(a, "--max-length=", 13) ||
                   !strncmp(a, "--format=", 9)) {
            val = strchr(a, '=') + 1;
        } else {
            fprintf(stderr, "bert-tokenize: unknown argument '%s'\n", a);
            usage(stderr);
            return EXIT_USAGE;
        }
        if (!strncmp(a, "--model", 7)) {
            model = val;
        } else if (!strncmp(a, "--max-length", 12)) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || end == val || *end || val[0] == '-' || v == 0 || v > 1000000000ULL) {
                fprintf(stderr, "bert-tokenize: --max-length wants a positive integer, got '%s'\n",
                        val);
                return EXIT_USAGE;
            }
            max_length = (size_t)v;
        } else {
            if (!strcmp(val, "ids"))
                f = FMT_IDS;
            else if (!strcmp(val, "tokens"))
                f = FMT_TOKENS;
            else if (!strcmp(val, "json"))
                f = FMT_JSON;
            else {
                fprintf(stderr, "bert-tokenize: --format must be ids, tokens or json, not '%s'\n",
                        val);
                return EXIT_USAGE;
            }
        }
    }
    if (!model) {
        fprintf(stderr, "bert-tokenize: --model DIR is required\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    bert_tokenizer *t;
    bert_error err;
    if (bert_tokenizer_load(model, &t, &err) != BERT_OK) {
        fprintf(stderr, "bert-tokenize: %s\n", err.text);
        return EXIT_BADINPUT;
    }
    bert_encoding *e = bert_encoding_create();
    if (!e) {
        fprintf(stderr, "bert-tokenize: out of memory\n");
        bert_tokenizer_free(t);
        return EXIT_BADINPUT;
    }
    bert_encode_params prm = bert_encode_default_params();
    prm.max_length = max_length;
    char *buf = NULL;
    size_t cap = 0;
    long len;
    unsigned long long lineno = 0, n_bad = 0;
    int status = EXIT_OK;
    while ((len = app_read_line(stdin, &buf, &cap)) >= 0) {
        lineno++;
        const char *text = buf, *pair;
        size_t tlen, plen;
        void *own = NULL;
        if (jsonl) {
            char msg[300];
            if (app_jsonl_parse(buf, (size_t)len, &own, &text, &tlen, &pair, &plen, msg,
                                sizeof msg)) {
                fprintf(stderr, "bert-tokenize: line %llu: %s\n", lineno, msg);
                n_bad++;
                putchar('\n');
                continue;
            }
        } else {
            char *tab = memchr(buf, '\t', (size_t)len);
            tlen = tab ? (size_t)(tab - buf) : (size_t)len;
            pair = tab ? tab + 1 : NULL;
            plen = tab ? (size_t)len - tlen - 1 : 0;
        }
        int rc = bert_tokenizer_encode(t, text, tlen, pair, plen, &prm, e, &err);
        app_jsonl_free(own);
        if (rc != BERT_OK) {
            long long off = err.byte_offset;
            if (err.status == BERT_EUTF8 && pair && !jsonl && strstr(err.text, "pair"))
                off += (long long)tlen + 1; /* offset within the line */
            if (err.status == BERT_EUTF8)
                fprintf(stderr, "bert-tokenize: line %llu: invalid UTF-8 at byte %lld\n", lineno,
                        off);
            else
                fprintf(stderr, "bert-tokenize: line %llu: %s\n", lineno, err.text);
            n_bad++;
            putchar('\n');
            continue;
        }
        write_encoding(stdout, t, e, f);
    }
    if (len == -2) {
        fprintf(stderr, "bert-tokenize: out of memory reading line %llu\n", lineno + 1);
        status = EXIT_BADINPUT;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "bert-tokenize: write error\n");
        status = EXIT_BADINPUT;
    }
    if (n_bad) {
        fprintf(stderr, "bert-tokenize: %llu line(s) could not be tokenized\n", n_bad);
        status = EXIT_BADINPUT;
    }
    free(buf);
    bert_encoding_free(e);
    bert_tokenizer_free(t);
    return status;
}
